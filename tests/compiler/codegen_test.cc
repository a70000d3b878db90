// The MLIR text EmitKernelModule writes: golden files for small fused kernels, the canonical
// (collapsed, broadcast-aware) iteration spaces, and errors for specs it cannot emit.
// KILN_UPDATE_GOLDEN=1 rewrites the golden files from the current output.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compiler/codegen/emit_mlir.h"
#include "tests/compiler/codegen_cases.h"

namespace kiln::compiler {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string EmitOne(const KernelSpec& spec) {
  Result<std::string> text = EmitKernelModule({spec});
  INFO((text.ok() ? "" : text.error().ToString()));
  REQUIRE(text.ok());
  return *text;
}

std::string EmitError(const KernelSpec& spec) {
  Result<std::string> text = EmitKernelModule({spec});
  REQUIRE_FALSE(text.ok());
  return text.error().ToString();
}

TEST_CASE("codegen: golden MLIR of small fused kernels", "[codegen]") {
  for (const KernelSpec& spec : testing::GoldenSpecs()) {
    std::string path = std::string(KILN_TEST_DATA_DIR) + "/golden/codegen/" + spec.name + ".mlir";
    std::string text = EmitOne(spec);
    if (std::getenv("KILN_UPDATE_GOLDEN")) std::ofstream(path, std::ios::binary) << text;
    INFO(path << "\n" << text);
    CHECK(text == ReadFile(path));
  }
}

TEST_CASE("codegen: iteration spaces are collapsed around broadcast dimensions", "[codegen]") {
  testing::OpCase add{"Add", {DType::kF32, DType::kF32}, DType::kF32, {}};
  // Same shapes: one dimension of all elements.
  std::string flat = EmitOne(testing::OneOpSpec("k", add, Shape{64, 16, 8, 8},
                                                {Shape{64, 16, 8, 8}, Shape{64, 16, 8, 8}}));
  CHECK(flat.find("canonical [65536]") != std::string::npos);
  CHECK(flat.find("%in0: memref<65536xf32>") != std::string::npos);
  // Rows scale to the merged dimension.
  CHECK(flat.find("%scale = arith.constant 1024 : index") != std::string::npos);
  // A per-channel input of an NCHW tensor: [N, C, H*W], the input only spans C.
  std::string nchw =
      EmitOne(testing::OneOpSpec("k", add, Shape{2, 3, 4, 5}, {Shape{2, 3, 4, 5}, Shape{3, 1, 1}}));
  CHECK(nchw.find("canonical [2, 3, 20]") != std::string::npos);
  CHECK(nchw.find("%in1: memref<3xf32>") != std::string::npos);
  CHECK(nchw.find("affine_map<(d0, d1, d2) -> (d1)>") != std::string::npos);
  // A scalar input is a rank-0 memref; a rank-0 kernel iterates over one element.
  std::string scalar = EmitOne(testing::OneOpSpec("k", add, Shape{}, {Shape{}, Shape{}}));
  CHECK(scalar.find("canonical [1]") != std::string::npos);
  std::string bcast = EmitOne(testing::OneOpSpec("k", add, Shape{7}, {Shape{7}, Shape{}}));
  CHECK(bcast.find("%in1: memref<f32>") != std::string::npos);
  // Leading size-1 dimensions: rows [0, 1) cover the whole space.
  std::string ones = EmitOne(testing::OneOpSpec("k", add, Shape{1, 6}, {Shape{1, 6}, Shape{6}}));
  CHECK(ones.find("%scale = arith.constant 6 : index") != std::string::npos);
  // No elements: an empty body.
  std::string empty = EmitOne(testing::OneOpSpec("k", add, Shape{0, 3}, {Shape{0, 3}, Shape{3}}));
  CHECK(empty.find("linalg.generic") == std::string::npos);
}

TEST_CASE("codegen: every op case emits, CanEmit agrees", "[codegen]") {
  for (const testing::OpCase& c : testing::AllOpCases()) {
    CAPTURE(c.Label());
    CHECK(CanEmit(c.op, c.args, c.result));
    Result<std::string> text =
        EmitKernelModule({testing::OneOpSpec("k", c, Shape{3, 4, 5}, testing::CaseShapes(c))});
    INFO((text.ok() ? "" : text.error().ToString()));
    CHECK(text.ok());
  }
  CHECK_FALSE(CanEmit("MatMul", {DType::kF32, DType::kF32}, DType::kF32));
  CHECK_FALSE(CanEmit("Exp", {DType::kI32}, DType::kI32));
  CHECK_FALSE(CanEmit("Add", {DType::kF32, DType::kI32}, DType::kF32));
  CHECK_FALSE(CanEmit("Add", {DType::kBool, DType::kBool}, DType::kBool));
  CHECK_FALSE(CanEmit("Less", {DType::kF32, DType::kF32}, DType::kF32));
  CHECK_FALSE(CanEmit("Select", {DType::kI8, DType::kF32, DType::kF32}, DType::kF32));
  CHECK_FALSE(CanEmit("Relu", {DType::kF32, DType::kF32}, DType::kF32));
  CHECK(CanEmit("Cast", {DType::kBF16}, DType::kU8));
  CHECK_FALSE(CanEmit("Add", {DType::kU16, DType::kU16}, DType::kU16));
  CHECK_FALSE(CanEmit("Cast", {DType::kF32}, DType::kU64));
  CHECK(CanEmit("Constant", {}, DType::kF16));
}

TEST_CASE("codegen: specs it cannot emit give errors naming kernel, op, node and dtypes",
          "[codegen]") {
  testing::OpCase exp{"Exp", {DType::kI32}, DType::kI32, {}};
  std::string e = EmitError(testing::OneOpSpec("kern", exp, Shape{4}, {Shape{4}}));
  CHECK(e.find("unimplemented") != std::string::npos);
  CHECK(e.find("kernel 'kern'") != std::string::npos);
  CHECK(e.find("'Exp'") != std::string::npos);
  CHECK(e.find("node 'node_kern'") != std::string::npos);
  CHECK(e.find("i32") != std::string::npos);

  testing::OpCase matmul{"MatMul", {DType::kF32, DType::kF32}, DType::kF32, {}};
  e = EmitError(testing::OneOpSpec("k", matmul, Shape{4}, {Shape{4}, Shape{4}}));
  CHECK(e.find("'MatMul' is not supported") != std::string::npos);

  testing::OpCase add{"Add", {DType::kF32, DType::kF32}, DType::kF32, {}};
  CHECK(EmitError(testing::OneOpSpec("k", add, Shape{4, 3}, {Shape{4, 3}, Shape{2}}))
            .find("does not broadcast") != std::string::npos);
  CHECK(EmitError(testing::OneOpSpec("k", add, Shape{-1, 3}, {Shape{4, 3}, Shape{3}}))
            .find("not fully known") != std::string::npos);
  CHECK(EmitError(testing::OneOpSpec("1k", add, Shape{3}, {Shape{3}, Shape{3}}))
            .find("not an identifier") != std::string::npos);
  KernelSpec bad_arg = testing::OneOpSpec("k", add, Shape{3}, {Shape{3}, Shape{3}});
  bad_arg.ops[0].args[1] = 2;  // its own result
  CHECK(EmitError(bad_arg).find("not defined before it") != std::string::npos);
  KernelSpec bad_out = testing::OneOpSpec("k", add, Shape{3}, {Shape{3}, Shape{3}});
  bad_out.outputs = {9};
  CHECK(EmitError(bad_out).find("does not exist") != std::string::npos);
  KernelSpec no_out = bad_out;
  no_out.outputs.clear();
  CHECK(EmitError(no_out).find("no outputs") != std::string::npos);

  testing::OpCase gelu{"Gelu", {DType::kF32}, DType::kF32, testing::Attrs({{"approximate", "x"}})};
  CHECK(EmitError(testing::OneOpSpec("k", gelu, Shape{3}, {Shape{3}}))
            .find("'approximate' must be") != std::string::npos);
  testing::OpCase clip{"Clip", {DType::kF32}, DType::kF32, {}};
  CHECK(EmitError(testing::OneOpSpec("k", clip, Shape{3}, {Shape{3}})).find("min") !=
        std::string::npos);

  KernelSpec a = testing::OneOpSpec("same", add, Shape{3}, {Shape{3}, Shape{3}});
  Result<std::string> twice = EmitKernelModule({a, a});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message().find("two kernels are named 'same'") != std::string::npos);
}

}  // namespace
}  // namespace kiln::compiler
