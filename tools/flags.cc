#include "tools/flags.h"

namespace kiln::cli {

Flags& Flags::Option(const std::string& name) {
  options_.insert(name);
  return *this;
}
Flags& Flags::Repeated(const std::string& name) {
  repeated_.insert(name);
  return *this;
}
Flags& Flags::Switch(const std::string& name) {
  switches_.insert(name);
  return *this;
}
Flags& Flags::Alias(const std::string& alias, const std::string& name) {
  aliases_[alias] = name;
  return *this;
}
Flags& Flags::Positional(int min, int max) {
  min_positional_ = min;
  max_positional_ = max;
  return *this;
}

Status Flags::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      return OkStatus();
    }
    if (aliases_.count(arg)) arg = "--" + aliases_[arg];
    if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
      std::string name = arg.substr(2), value;
      bool has_value = false;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      if (switches_.count(name)) {
        if (has_value) return MakeError(ErrorCode::kInvalidArgument, "--", name, " takes no value");
        switches_on_.insert(name);
        continue;
      }
      if (!options_.count(name) && !repeated_.count(name))
        return MakeError(ErrorCode::kInvalidArgument, "unknown option --", name);
      if (!has_value) {
        if (i + 1 >= args.size())
          return MakeError(ErrorCode::kInvalidArgument, "--", name, " needs a value");
        value = args[++i];
      }
      if (options_.count(name)) values_[name].clear();
      values_[name].push_back(value);
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-' && arg != "-")
      return MakeError(ErrorCode::kInvalidArgument, "unknown option ", arg);
    positional_.push_back(arg);
  }
  int n = static_cast<int>(positional_.size());
  if (n < min_positional_ || n > max_positional_) {
    if (min_positional_ == max_positional_)
      return MakeError(ErrorCode::kInvalidArgument, "expected ", min_positional_,
                       " argument(s), got ", n);
    return MakeError(ErrorCode::kInvalidArgument, "expected ", min_positional_, " to ",
                     max_positional_, " arguments, got ", n);
  }
  return OkStatus();
}

bool Flags::Has(const std::string& name) const {
  if (switches_.count(name)) return On(name);
  auto it = values_.find(name);
  return it != values_.end() && !it->second.empty();
}

std::string Flags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& Flags::GetAll(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = values_.find(name);
  return it == values_.end() ? kEmpty : it->second;
}

Result<std::pair<std::string, std::string>> SplitNameValue(const std::string& flag,
                                                           const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return MakeError(ErrorCode::kInvalidArgument, "--", flag, " expects NAME=VALUE, got '", text,
                     "'");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

}  // namespace kiln::cli
