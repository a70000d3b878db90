// A small command-line parser for kiln's subcommands: positional arguments, `--name VALUE` or
// `--name=VALUE` options (single or repeated), and boolean switches. Unknown options, missing
// values and wrong positional counts are usage errors (exit code 2).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/status.h"

namespace kiln::cli {

class Flags {
 public:
  // Declares options before Parse.
  Flags& Option(const std::string& name);                           // --name VALUE (last one wins)
  Flags& Repeated(const std::string& name);                         // --name VALUE, may repeat
  Flags& Switch(const std::string& name);                           // --name
  Flags& Alias(const std::string& alias, const std::string& name);  // e.g. -o for --out
  Flags& Positional(int min, int max);

  // Fails with kInvalidArgument (a usage error) on anything undeclared or malformed.
  Status Parse(const std::vector<std::string>& args);

  bool help() const { return help_; }
  // True when the option was given a value, or the switch was given.
  bool Has(const std::string& name) const;
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& GetAll(const std::string& name) const;
  bool On(const std::string& name) const { return switches_on_.count(name) > 0; }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::set<std::string> options_, repeated_, switches_;
  std::map<std::string, std::string> aliases_;
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> switches_on_;
  std::vector<std::string> positional_;
  int min_positional_ = 0, max_positional_ = 0;
  bool help_ = false;
};

// Splits "NAME=VALUE"; fails if there is no '=' or either side is empty.
Result<std::pair<std::string, std::string>> SplitNameValue(const std::string& flag,
                                                           const std::string& text);

}  // namespace kiln::cli
