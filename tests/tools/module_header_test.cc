// The typed C++ header of `kiln compile --header` (tools/lib/module_header.h), on signatures built
// by hand (no compiler needed): tensor names become distinct C++ identifiers by the documented
// rule, class names are checked, the class has one typed buffer and shape constant per tensor,
// includes runtime headers only, and compiles with the host's C++ compiler.
#include "tools/lib/module_header.h"

#include <catch2/catch.hpp>
#include <regex>
#include <sstream>

#include "ir/file_util.h"
#include "tests/testing/system_compiler.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

ModuleFile Signature() {
  ModuleFile m;
  m.source = "digits_infer.kgraph";
  m.build_id = "0123456789abcdef";
  m.inputs = {{"images", {f32, Shape{4, 1, 8, 8}}}, {"0 \"odd\"\nname", {i64, Shape{}}}};
  m.outputs = {{"logits", {f32, Shape{4, 10}}}, {"images", {boolean, Shape{2}}}};
  return m;
}

std::string Header(const ModuleFile& m, const std::string& class_name) {
  Result<std::string> header = ModuleHeader(m, class_name);
  INFO(header.status().ToString());
  REQUIRE(header.ok());
  return *header;
}

TEST_CASE("module header: names become distinct C++ identifiers", "[capi][header]") {
  auto name = [](const std::string& n) {
    CppName c = CppNameFor(n);
    return c.snake + " " + c.camel;
  };
  CHECK(name("images") == "images Images");
  CHECK(name("conv1/Out:0") == "conv1_out_0 Conv1Out0");
  CHECK(name("0x") == "t_0x T0x");
  CHECK(name("") == "tensor Tensor");
  CHECK(name("::") == "tensor Tensor");
  CHECK(name("__a__b__") == "a_b AB");
  CHECK(name("\xc3\xbc"
             "ber:1") == "ber_1 Ber1");   // non-ASCII bytes separate parts
  CHECK(name("class") == "class Class");  // always used with a prefix or suffix

  std::vector<CppName> names = CppNamesFor({"a_0", "a:0", "A/0", "x", "X", "a.2b", "a2b"});
  std::vector<std::string> got;
  for (const CppName& n : names) got.push_back(n.snake + " " + n.camel);
  CHECK(got == std::vector<std::string>{"a_0 A0", "a_0_2 A02", "a_0_3 A03", "x X", "x_2 X2",
                                        "a_2b A2b", "a2b_2 A2b2"});  // "a2b": A2b is taken
  const std::regex identifier("[A-Za-z][A-Za-z0-9_]*");
  for (const char* n : {"", "9", "_", "a__b", "x:0", "\n", "0_1"}) {
    CppName c = CppNameFor(n);
    INFO(n);
    CHECK(std::regex_match(c.snake, identifier));
    CHECK(std::regex_match(c.camel, identifier));
    CHECK(c.snake.find("__") == std::string::npos);
  }
}

TEST_CASE("module header: class names are checked", "[capi][header]") {
  for (const char* good : {"Digits", "acme::vision::Digits", "_digits", "D1"})
    CHECK(CheckCppClassName(good).ok());
  auto bad = [](const std::string& name, const std::string& why) {
    Status s = CheckCppClassName(name);
    INFO(name);
    REQUIRE(!s.ok());
    CHECK_THAT(s.error().message(), Catch::Contains("'" + name + "'") && Catch::Contains(why));
  };
  bad("", "is empty");
  for (const char* name : {"1x", "a-b", "ns::", "::X", "a:::b", "a b", "ns::9"})
    bad(name, "is not a C++ identifier");
  bad("class", "keyword 'class'");
  bad("ns::new::X", "keyword 'new'");
  bad("_Foo", "reserved identifier '_Foo'");
  bad("a__b", "reserved identifier 'a__b'");
}

TEST_CASE("module header: one typed buffer and shape constant per input and output",
          "[capi][header]") {
  const std::string h = Header(Signature(), "acme::Digits");
  CHECK(h == Header(Signature(), "acme::Digits"));  // deterministic
  for (const char* expected :
       {"from \"digits_infer.kgraph\" (module build \"0123456789abcdef\")",
        "#pragma once",
        "#include \"runtime/module/module.h\"",
        "namespace acme {\n",
        "class Digits {\n",
        "  // Input 0: \"images\", f32[4, 1, 8, 8].\n",
        "  static constexpr std::array<int64_t, 4> kImagesShape = {4, 1, 8, 8};\n",
        "  static constexpr int64_t kImagesSize = 256;  // elements\n",
        "  // Input 1: \"0 \\\"odd\\\"\\012name\", i64[].\n",
        "  static constexpr std::array<int64_t, 0> kT0OddNameShape = {};\n",
        "  static constexpr int64_t kT0OddNameSize = 1;",
        "  static constexpr std::array<int64_t, 2> kLogitsShape = {4, 10};\n",
        "  // Output 1: \"images\", bool[2].\n",
        "  static constexpr std::array<int64_t, 1> kImages2Shape = {2};\n",
        "static kiln::Result<Digits> Load(const std::string& path,",
        "  float* images_data() { return inputs_[0].data<float>(); }\n",
        "  const float* images_data() const { return inputs_[0].data<float>(); }\n",
        "  int64_t* t_0_odd_name_data() { return inputs_[1].data<int64_t>(); }\n",
        "  const float* logits_data() const { return outputs_[0].data<float>(); }\n",
        "  const bool* images_2_data() const { return outputs_[1].data<bool>(); }\n",
        "  kiln::Status Run() {",
        "are not those Digits was generated for",
        "        {\"0 \\\"odd\\\"\\012name\", {kiln::DType::kI64, kiln::Shape{}}}};",
        "        {\"logits\", {kiln::DType::kF32, kiln::Shape{4, 10}}},",
        "}  // namespace acme\n"}) {
    INFO(expected);
    CHECK_THAT(h, Catch::Contains(expected));
  }
  CHECK_THAT(h, !Catch::Contains("float* logits_data() {"));  // outputs are read-only
  // Runtime headers only (and the standard library).
  std::istringstream lines(h);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#include \"", 0) != 0) continue;
    INFO(line);
    CHECK((line.rfind("#include \"ir/", 0) == 0 || line.rfind("#include \"runtime/", 0) == 0));
  }
}

TEST_CASE("module header: what cannot become a header is refused", "[capi][header]") {
  ModuleFile m = Signature();
  CHECK_THAT(ModuleHeader(m, "9lives").error().message(), Catch::Contains("class name '9lives'"));
  m.inputs[0].type.shape = Shape{-1, 1, 8, 8};
  CHECK_THAT(
      ModuleHeader(m, "Digits").error().message(),
      Catch::Contains("input 'images' is f32[-1, 1, 8, 8]: a module's shapes must be fully"));
  m = Signature();
  m.outputs[0].type.dtype = DType::kInvalid;
  CHECK_THAT(ModuleHeader(m, "Digits").error().message(),
             Catch::Contains("output 'logits': invalid dtype"));
}

TEST_CASE("module header: the generated header compiles against the runtime", "[capi][header]") {
  ModuleFile m = Signature();
  m.inputs.push_back({"half", {bf16, Shape{3}}});
  m.outputs.clear();  // a class with no outputs compiles too
  const std::string h1 = Header(m, "acme::vision::Digits");
  const std::string h2 = Header(Signature(), "Plain");
  // Written next to the program below, which includes them.
  REQUIRE(WriteFileAtomically(testing::TempPath("digits_generated.h"), h1).ok());
  REQUIRE(WriteFileAtomically(testing::TempPath("plain_generated.h"), h2).ok());
  testing::SourceCheck check = testing::CheckCompiles("header_user.cc", R"(
#include "digits_generated.h"
#include "plain_generated.h"

static_assert(acme::vision::Digits::kImagesShape[3] == 8);
static_assert(acme::vision::Digits::kHalfSize == 3);
static_assert(Plain::kLogitsShape.size() == 2 && Plain::kT0OddNameShape.empty());

int main() {
  kiln::Result<acme::vision::Digits> digits = acme::vision::Digits::Load("digits.kmod");
  if (!digits.ok()) return 1;
  float* images = digits->images_data();
  images[0] = 1.0f;
  uint16_t* half = digits->half_data();
  half[0] = 0;
  kiln::Result<Plain> plain = Plain::Load("plain.kmod", {.threads = 1});
  if (!plain.ok() || !plain->Run().ok()) return 1;
  const float* logits = plain->logits_data();
  const bool* flags = plain->images_2_data();
  return digits->Run().ok() && logits[0] > 0 && flags[1] ? 0 : 1;
}
)");
  if (!check.compiler_found) {
    WARN("no C++ compiler (c++) on PATH: the compile check did not run");
    return;
  }
  INFO(check.diagnostics);
  CHECK(check.ok);
}

}  // namespace
}  // namespace kiln
