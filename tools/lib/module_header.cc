#include "tools/lib/module_header.h"

#include <cstdio>
#include <set>
#include <sstream>

namespace kiln {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char Upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

std::vector<std::string> Parts(const std::string& name) {
  std::vector<std::string> parts(1);
  for (char c : name) {
    if (IsAsciiLetter(c) || IsAsciiDigit(c))
      parts.back() += Lower(c);
    else if (!parts.back().empty())
      parts.emplace_back();
  }
  if (parts.back().empty()) parts.pop_back();
  if (parts.empty()) parts.push_back("tensor");
  if (IsAsciiDigit(parts[0][0])) parts.insert(parts.begin(), "t");
  return parts;
}

CppName Join(const std::vector<std::string>& parts) {
  CppName n;
  for (const std::string& p : parts) {
    n.snake += (n.snake.empty() ? "" : "_") + p;
    n.camel += Upper(p[0]) + p.substr(1);
  }
  return n;
}

// C++20 keywords and alternative tokens.
const std::set<std::string>& Keywords() {
  static const std::set<std::string> keywords = [] {
    std::istringstream in(
        "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t "
        "char16_t char32_t class compl concept const consteval constexpr constinit const_cast "
        "continue co_await co_return co_yield decltype default delete do double dynamic_cast else "
        "enum explicit export extern false float for friend goto if inline int long mutable "
        "namespace new noexcept not not_eq nullptr operator or or_eq private protected public "
        "register reinterpret_cast requires return short signed sizeof static static_assert "
        "static_cast struct switch template this thread_local throw true try typedef typeid "
        "typename union unsigned using virtual void volatile wchar_t while xor xor_eq");
    std::set<std::string> s;
    for (std::string w; in >> w;) s.insert(w);
    return s;
  }();
  return keywords;
}

// A C++ string literal holding `text`: quotes, backslashes and bytes outside printable ASCII are
// escaped (three-digit octal), so it is also safe inside a // comment.
std::string Literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

struct TypeSpelling {
  const char* enumerator;
  const char* element;
};

Result<TypeSpelling> SpellingOf(DType t) {
  switch (t) {
    case DType::kF32:
      return TypeSpelling{"kF32", "float"};
    case DType::kF64:
      return TypeSpelling{"kF64", "double"};
    case DType::kF16:
      return TypeSpelling{"kF16", "uint16_t"};
    case DType::kBF16:
      return TypeSpelling{"kBF16", "uint16_t"};
    case DType::kI8:
      return TypeSpelling{"kI8", "int8_t"};
    case DType::kU8:
      return TypeSpelling{"kU8", "uint8_t"};
    case DType::kI32:
      return TypeSpelling{"kI32", "int32_t"};
    case DType::kI64:
      return TypeSpelling{"kI64", "int64_t"};
    case DType::kBool:
      return TypeSpelling{"kBool", "bool"};
    case DType::kI16:
      return TypeSpelling{"kI16", "int16_t"};
    case DType::kU16:
      return TypeSpelling{"kU16", "uint16_t"};
    case DType::kU32:
      return TypeSpelling{"kU32", "uint32_t"};
    case DType::kU64:
      return TypeSpelling{"kU64", "uint64_t"};
    case DType::kSeq:
    case DType::kOptional:
    case DType::kInvalid:
      break;
  }
  return MakeError(ErrorCode::kInvalidArgument, "invalid dtype");
}

// One input or output as the header sees it.
struct Slot {
  const ModuleTensorSpec* spec;
  CppName name;
  TypeSpelling type;
  bool input;
  int index;  // in inputs_ or outputs_
};

std::string Dims(const Shape& shape) {
  std::string out;
  for (int d = 0; d < shape.rank(); ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
  return out;
}

std::string SpecsFunction(const char* name, const std::vector<Slot>& slots, bool input) {
  std::ostringstream os;
  os << "  static std::vector<kiln::ModuleTensorSpec> " << name << "() {\n    return {";
  const char* separator = "";
  for (const Slot& s : slots) {
    if (s.input != input) continue;
    os << separator << "\n        {" << Literal(s.spec->name)
       << ", {kiln::DType::" << s.type.enumerator << ", kiln::Shape{" << Dims(s.spec->type.shape)
       << "}}}";
    separator = ",";
  }
  os << "};\n  }\n";
  return os.str();
}

// The part of the class that does not depend on the signature: loading, checking, running.
constexpr const char* kClassBody = R"(
  // Runs the module on the inputs' current contents; on success the outputs hold its results.
  kiln::Status Run() {
    std::vector<std::pair<std::string, kiln::Tensor>> feeds;
    for (size_t i = 0; i < inputs_.size(); ++i)
      feeds.emplace_back(module_->inputs()[i].name, inputs_[i]);
    kiln::Result<std::vector<kiln::Tensor>> out = module_->Run(feeds);
    if (!out.ok()) return out.error();
    for (size_t i = 0; i < outputs_.size(); ++i)
      if (outputs_[i].byte_size() > 0)
        std::memcpy(outputs_[i].raw_data(), (*out)[i].raw_data(), outputs_[i].byte_size());
    return kiln::OkStatus();
  }

  // The module itself: its manifest, variables and checkpoints.
  kiln::Module& module() { return *module_; }
  const kiln::Module& module() const { return *module_; }

 private:
  explicit CLASS(std::unique_ptr<kiln::Module> module) : module_(std::move(module)) {}

  static std::string Describe(const std::vector<kiln::ModuleTensorSpec>& specs) {
    std::string out;
    for (const kiln::ModuleTensorSpec& s : specs)
      out += (out.empty() ? "" : ", ") + s.name + " " + s.type.ToString();
    return out.empty() ? "none" : out;
  }

  // Checks the module's signature against this header's and allocates the buffers.
  kiln::Status Bind(const std::string& path) {
    const std::vector<kiln::ModuleTensorSpec>* have[] = {&module_->inputs(), &module_->outputs()};
    const std::vector<kiln::ModuleTensorSpec> want[] = {InputSpecs(), OutputSpecs()};
    std::vector<kiln::Tensor>* buffers[] = {&inputs_, &outputs_};
    for (int k = 0; k < 2; ++k) {
      bool same = have[k]->size() == want[k].size();
      for (size_t i = 0; same && i < want[k].size(); ++i)
        same = (*have[k])[i].name == want[k][i].name && (*have[k])[i].type == want[k][i].type;
      if (!same)
        return kiln::MakeError(kiln::ErrorCode::kFailedPrecondition, path, ": the module's ",
                               k == 0 ? "inputs (" : "outputs (", Describe(*have[k]),
                               ") are not those CLASS was generated for (", Describe(want[k]),
                               "); regenerate the header with the module");
      for (const kiln::ModuleTensorSpec& s : want[k])
        buffers[k]->emplace_back(s.type.dtype, s.type.shape);
    }
    return kiln::OkStatus();
  }

)";

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

CppName CppNameFor(const std::string& name) { return Join(Parts(name)); }

std::vector<CppName> CppNamesFor(const std::vector<std::string>& names) {
  std::set<std::string> snakes, camels;
  std::vector<CppName> out;
  for (const std::string& name : names) {
    std::vector<std::string> parts = Parts(name);
    CppName n = Join(parts);
    for (int k = 2; snakes.count(n.snake) || camels.count(n.camel); ++k) {
      std::vector<std::string> suffixed = parts;
      suffixed.push_back(std::to_string(k));
      n = Join(suffixed);
    }
    snakes.insert(n.snake);
    camels.insert(n.camel);
    out.push_back(std::move(n));
  }
  return out;
}

Status CheckCppClassName(const std::string& name) {
  auto bad = [&name](const std::string& why) {
    return MakeError(ErrorCode::kInvalidArgument, "class name '", name, "' ", why);
  };
  if (name.empty()) return bad("is empty");
  size_t start = 0;
  while (true) {
    size_t end = name.find("::", start);
    std::string part = name.substr(start, end == std::string::npos ? end : end - start);
    if (part.empty() || IsAsciiDigit(part[0]))
      return bad("is not a C++ identifier (optionally qualified: ns::Name)");
    for (char c : part)
      if (!IsAsciiLetter(c) && !IsAsciiDigit(c) && c != '_')
        return bad("is not a C++ identifier (optionally qualified: ns::Name)");
    if (Keywords().count(part)) return bad("uses the C++ keyword '" + part + "'");
    if (part.find("__") != std::string::npos ||
        (part[0] == '_' && part.size() > 1 && part[1] >= 'A' && part[1] <= 'Z'))
      return bad("uses the reserved identifier '" + part + "'");
    if (end == std::string::npos) return OkStatus();
    start = end + 2;
  }
}

Result<std::string> ModuleHeader(const ModuleFile& module, const std::string& class_name) {
  KILN_RETURN_IF_ERROR(CheckCppClassName(class_name));
  std::vector<std::string> namespaces;
  std::string cls = class_name;
  for (size_t at; (at = cls.find("::")) != std::string::npos; cls = cls.substr(at + 2))
    namespaces.push_back(cls.substr(0, at));

  std::vector<std::string> names;
  std::vector<Slot> slots;
  for (bool input : {true, false}) {
    const std::vector<ModuleTensorSpec>& specs = input ? module.inputs : module.outputs;
    for (size_t i = 0; i < specs.size(); ++i) {
      const ModuleTensorSpec& s = specs[i];
      const char* kind = input ? "input" : "output";
      if (!s.type.shape.IsFullyKnown())
        return MakeError(ErrorCode::kInvalidArgument, kind, " '", s.name, "' is ",
                         s.type.ToString(), ": a module's shapes must be fully known");
      Result<TypeSpelling> type = SpellingOf(s.type.dtype);
      if (!type.ok()) return type.error().WithContext(std::string(kind) + " '" + s.name + "'");
      names.push_back(s.name);
      slots.push_back({&s, {}, *type, input, static_cast<int>(i)});
    }
  }
  std::vector<CppName> cpp = CppNamesFor(names);
  for (size_t i = 0; i < slots.size(); ++i) slots[i].name = cpp[i];

  std::ostringstream os;
  os << "// Generated by `kiln compile --header` from "
     << (module.source.empty() ? "an unnamed model" : Literal(module.source)) << " (module build "
     << Literal(module.build_id) << ").\n"
     << "// Do not edit: regenerate it when the module's signature changes.\n//\n"
     << "// " << cls << " runs the compiled module with the runtime library alone (kiln_runtime):\n"
     << "//   kiln::Result<" << cls << "> m = " << cls << "::Load(\"model.kmod\");\n"
     << "//   fill m->NAME_data() for each input; kiln::Status s = m->Run(); read the outputs.\n"
     << "// Load refuses a module whose signature (names, dtypes, shapes) is not this header's.\n"
     << "// Buffers live as long as the object; Run overwrites the outputs; one caller at a time.\n"
     << "// f16 and bf16 elements are uint16_t bit patterns.\n"
     << "#pragma once\n\n"
     << "#include <array>\n#include <cstdint>\n#include <cstring>\n#include <memory>\n"
     << "#include <string>\n#include <utility>\n#include <vector>\n\n"
     << "#include \"ir/status.h\"\n#include \"ir/tensor.h\"\n"
     << "#include \"runtime/module/module.h\"\n\n";
  for (const std::string& ns : namespaces) os << "namespace " << ns << " {\n";
  if (!namespaces.empty()) os << "\n";
  os << "class " << cls << " {\n public:\n";
  for (const Slot& s : slots) {
    const Shape& shape = s.spec->type.shape;
    os << "  // " << (s.input ? "Input " : "Output ") << s.index << ": " << Literal(s.spec->name)
       << ", " << s.spec->type.ToString() << ".\n"
       << "  static constexpr std::array<int64_t, " << shape.rank() << "> k" << s.name.camel
       << "Shape = {" << Dims(shape) << "};\n"
       << "  static constexpr int64_t k" << s.name.camel << "Size = " << shape.NumElements()
       << ";  // elements\n";
  }
  os << "\n  static kiln::Result<" << cls << "> Load(const std::string& path,\n"
     << "      const kiln::ModuleOptions& options = {}) {\n"
     << "    kiln::Result<std::unique_ptr<kiln::Module>> module = kiln::Module::Load(path, "
        "options);\n"
     << "    if (!module.ok()) return module.error();\n"
     << "    " << cls << " loaded(std::move(*module));\n"
     << "    if (kiln::Status s = loaded.Bind(path); !s.ok()) return s.error();\n"
     << "    return kiln::Result<" << cls << ">(std::move(loaded));\n  }\n\n";
  for (const Slot& s : slots) {
    const std::string vector = s.input ? "inputs_" : "outputs_";
    const std::string getter =
        vector + "[" + std::to_string(s.index) + "].data<" + s.type.element + ">(); }\n";
    if (s.input)
      os << "  " << s.type.element << "* " << s.name.snake << "_data() { return " << getter;
    os << "  const " << s.type.element << "* " << s.name.snake << "_data() const { return "
       << getter;
  }
  os << ReplaceAll(kClassBody, "CLASS", cls) << SpecsFunction("InputSpecs", slots, true)
     << SpecsFunction("OutputSpecs", slots, false) << "\n  std::unique_ptr<kiln::Module> module_;\n"
     << "  std::vector<kiln::Tensor> inputs_, outputs_;  // one per input/output, in order\n"
     << "};\n";
  if (!namespaces.empty()) os << "\n";
  for (auto it = namespaces.rbegin(); it != namespaces.rend(); ++it)
    os << "}  // namespace " << *it << "\n";
  return os.str();
}

}  // namespace kiln
