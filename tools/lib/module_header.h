// The typed C++ header `kiln compile --header OUT.h --class NAME` writes next to a module (like
// tfcompile's): a class NAME that loads the module with kiln::Module (runtime only), checks that
// its signature is the one the header was generated for, and exposes one typed, preallocated buffer
// per input and output with its static shape as constants:
//
//   static constexpr std::array<int64_t, 4> kImagesShape = {64, 1, 8, 8};
//   static constexpr int64_t kImagesSize = 4096;   // elements
//   float* images_data();  const float* logits_data() const;  kiln::Status Run();
//
// The generated header includes only runtime headers (ir/ and runtime/module/module.h).
//
// Names become C++ identifiers by one rule (CppNamesFor):
//   1. split the name at every character that is not an ASCII letter or digit, dropping empty
//      parts, and lowercase the parts ("conv1/Out:0" -> conv1, out, 0); no part: "tensor";
//   2. a first part that starts with a digit gets a part "t" before it ("0x" -> t, 0x);
//   3. snake = the parts joined by '_' (accessors: conv1_out_0_data()), camel = each part with its
//      first letter uppercased, concatenated (constants: kConv1Out0Shape);
//   4. inputs first, then outputs, in signature order: a name whose snake or camel form is already
//      taken gets a part "2" (then "3", ...) until both are free ("a:0" after "a_0" -> a_0_2).
// The result never starts with a digit, never holds "__" and is never a keyword once suffixed.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/module/module_file.h"

namespace kiln {

struct CppName {
  std::string snake;  // "conv1_out_0"
  std::string camel;  // "Conv1Out0"
};

// One name alone (rules 1-3).
CppName CppNameFor(const std::string& name);
// Every name, distinct from each other (rules 1-4).
std::vector<CppName> CppNamesFor(const std::vector<std::string>& names);

// `name` may be qualified by namespaces ("acme::vision::Digits"); each part must be an identifier
// that is not a C++ keyword nor reserved (a leading '_' then an uppercase letter, or "__").
Status CheckCppClassName(const std::string& name);

// The header's text for `module`. Fails on a bad class name, or a tensor whose shape is not fully
// known or whose dtype is invalid. Deterministic.
Result<std::string> ModuleHeader(const ModuleFile& module, const std::string& class_name);

}  // namespace kiln
