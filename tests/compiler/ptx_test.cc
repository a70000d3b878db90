// Every kernel the JIT tests run also lowers for the GPU: launches with constant sizes, PTX that
// ptxas accepts for sm_80 and sm_90 (the generator stays target-neutral; ptxas checks skipped, with
// a warning, where it is not installed) and a host translation for the simulated device.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/codegen/emit_mlir.h"
#include "compiler/cubin.h"
#include "compiler/mlir/gpu_kernels.h"
#include "tests/compiler/codegen_cases.h"
#include "tests/testing/temp_path.h"

namespace kiln::compiler {
namespace {

std::string Ptxas() {
  const char* env = std::getenv("KILN_PTXAS");
  std::string path = env && *env ? env : "/usr/local/cuda/bin/ptxas";
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

// Runs ptxas on `ptx` for `sm`; returns "" on success, else its output.
std::string RunPtxas(const std::string& ptxas, const std::string& ptx, int sm) {
  std::string base = kiln::testing::TempPath("kernels_sm" + std::to_string(sm));
  std::ofstream(base + ".ptx", std::ios::binary) << ptx;
  std::string cmd = ptxas + " -arch=sm_" + std::to_string(sm) + " " + base + ".ptx -o " + base +
                    ".cubin > " + base + ".log 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc == 0) return "";
  std::ifstream log(base + ".log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  return "ptxas exit " + std::to_string(WEXITSTATUS(rc)) + ": " + text.substr(0, 4000);
}

// Library steps as generated kernels: convolutions (groups, dilation, padding, the whole epilogue,
// bf16) and their gradients, pooling (max and both averages, 16-bit) and its gradients, batch norm
// (training, inference, gradient), sums (f32, f64), gathers, concat/split (1-8 bytes) and
// cross-entropy with its gradient (narrow and wide rows).
std::vector<KernelSpec> LibrarySpecs() {
  std::vector<KernelSpec> specs;
  Conv2DKernelParams conv;
  conv.x = {2, 4, 7, 6};
  conv.y = {2, 6, 4, 3};
  conv.window = {3, 2};
  conv.strides = {2, 2};
  conv.dilations = {1, 2};
  conv.pads = {1, 0};
  conv.groups = 2;
  specs.push_back(KernelSpec::Raw("conv", 2 * 6 * 4 * 3, EmitConv2DKernel("conv", conv)));
  conv.dtype = DType::kBF16;
  conv.bias = conv.residual = conv.relu = true;
  specs.push_back(KernelSpec::Raw("conv_bf16_epilogue", 2 * 6 * 4 * 3,
                                  EmitConv2DKernel("conv_bf16_epilogue", conv)));
  Conv2DGradKernelParams grad;
  grad.conv = conv;
  grad.ignored_inputs = {{DType::kBF16, 2 * 4 * 7 * 6}};
  specs.push_back(KernelSpec::Raw("conv_dx", 2 * 4 * 7 * 6, EmitConv2DGradKernel("conv_dx", grad)));
  grad.filter = true;
  specs.push_back(KernelSpec::Raw("conv_dw", 6 * 2 * 3 * 2, EmitConv2DGradKernel("conv_dw", grad)));
  Pool2DKernelParams pool;
  pool.planes = 6, pool.height = 5, pool.width = 5, pool.out_height = 3, pool.out_width = 3;
  pool.window = {3, 3}, pool.strides = {2, 2}, pool.pads = {1, 1, 1, 1};
  specs.push_back(KernelSpec::Raw("max_pool", 54, EmitPool2DKernel("max_pool", pool)));
  pool.max = false;
  pool.dtype = DType::kF16;
  specs.push_back(KernelSpec::Raw("avg_pool_f16", 54, EmitPool2DKernel("avg_pool_f16", pool)));
  pool.include_pad = true;
  pool.dtype = DType::kBF16;
  specs.push_back(
      KernelSpec::Raw("avg_pool_pad_bf16", 54, EmitPool2DKernel("avg_pool_pad_bf16", pool)));
  for (bool max : {true, false}) {
    Pool2DGradKernelParams pool_grad;
    pool_grad.pool = pool;
    pool_grad.pool.max = max;
    const std::string grad_name = max ? "max_pool_grad" : "avg_pool_grad";
    specs.push_back(KernelSpec::Raw(grad_name, 150, EmitPool2DGradKernel(grad_name, pool_grad)));
  }
  BatchNormKernelParams bn;
  bn.batch = 2, bn.channels = 3, bn.spatial = 40;  // 80 elements a channel: one block each
  for (int mode = 0; mode < 3; ++mode) {
    bn.training = mode != 1;
    bn.grad = mode == 2;
    const std::string bn_name = mode == 0 ? "bn_train" : mode == 1 ? "bn_infer" : "bn_grad";
    specs.push_back(KernelSpec::Raw(bn_name, 240, EmitBatchNormKernel(bn_name, bn)));
  }
  ReduceSumKernelParams sum;
  sum.sizes = {3, 4, 5};
  sum.reduced = {true, false, true};
  sum.scale = 1.0 / 15;
  specs.push_back(KernelSpec::Raw("mean", 4, EmitReduceSumKernel("mean", sum)));
  sum.dtype = DType::kF64;
  specs.push_back(KernelSpec::Raw("sum_f64", 4, EmitReduceSumKernel("sum_f64", sum)));
  GatherKernelParams gather;
  gather.dtype = DType::kBF16;
  gather.index_dtype = DType::kI32;
  gather.outer = 2, gather.axis_size = 5, gather.inner = 3, gather.indices = 4;
  specs.push_back(KernelSpec::Raw("gather_bf16", 24, EmitGatherKernel("gather_bf16", gather)));
  ConcatKernelParams concat;
  concat.dtype = DType::kI8;
  concat.outer = 3;
  concat.blocks = {2, 5, 1};
  specs.push_back(KernelSpec::Raw("concat_i8", 24, EmitConcatKernel("concat_i8", concat)));
  concat.dtype = DType::kI64;
  concat.concat = false;
  concat.ignored_inputs = {{DType::kF32, 6}};
  specs.push_back(KernelSpec::Raw("split_i64", 24, EmitConcatKernel("split_i64", concat)));
  CrossEntropyKernelParams xent;
  for (int64_t classes : {10, 300})  // a thread per row; a block per row (and for the mean)
    for (bool grad : {false, true}) {
      xent.rows = classes == 10 ? 6 : 40;
      xent.classes = classes;
      xent.grad = grad;
      xent.label_dtype = grad ? DType::kI32 : DType::kI64;
      const std::string name = std::string(grad ? "xent_grad" : "xent") + std::to_string(classes);
      specs.push_back(KernelSpec::Raw(name, xent.rows, EmitCrossEntropyKernel(name, xent)));
    }
  return specs;
}

std::vector<KernelSpec> AllTestedSpecs() {
  std::vector<KernelSpec> specs = testing::GoldenSpecs();
  for (KernelSpec& spec : LibrarySpecs()) specs.push_back(std::move(spec));
  for (KernelSpec& spec : testing::RowReductionSpecs()) {
    specs.push_back(spec);
    // The same over 300 columns: one block per row, folded with gpu.all_reduce.
    const int64_t cols = spec.shape[1];
    spec.name += "_wide";
    spec.shape = Shape{spec.shape[0], 300};
    for (KernelSpec::Operand& in : spec.inputs)
      if (in.shape.rank() > 0 && in.shape[in.shape.rank() - 1] == cols) {
        in.shape.mutable_dims().back() = 300;
      }
    specs.push_back(spec);
  }
  std::vector<testing::OpCase> cases = testing::AllOpCases();
  for (size_t i = 0; i < cases.size(); ++i)
    specs.push_back(testing::OneOpSpec("k" + std::to_string(i), cases[i], Shape{3, 4, 5},
                                       testing::CaseShapes(cases[i])));
  testing::OpCase add{"Add", {DType::kF32, DType::kF32}, DType::kF32, {}};
  specs.push_back(testing::OneOpSpec("rank0", add, Shape{}, {Shape{}, Shape{}}));
  specs.push_back(
      testing::OneOpSpec("nchw", add, Shape{2, 3, 4, 5}, {Shape{2, 3, 4, 5}, Shape{3, 1, 1}}));
  return specs;
}

std::map<std::string, int64_t> RowsOf(const std::vector<KernelSpec>& specs) {
  std::map<std::string, int64_t> rows;
  for (const KernelSpec& spec : specs) rows[spec.name] = spec.shape.rank() ? spec.shape.dim(0) : 1;
  return rows;
}

TEST_CASE("PTX: every tested kernel lowers to PTX that ptxas accepts (sm_80, sm_90)", "[ptx]") {
  std::vector<KernelSpec> specs = AllTestedSpecs();
  Result<std::string> text = EmitKernelModule(specs);
  REQUIRE(text.ok());
  Result<GpuKernels> gpu = LowerKernelsForGpu(*text, RowsOf(specs), {{80, 90}, true});
  INFO((gpu.ok() ? "" : gpu.error().ToString()));
  REQUIRE(gpu.ok());
  REQUIRE(gpu->kernels.size() == specs.size());
  for (const DeviceKernel& kernel : gpu->kernels)
    for (const KernelLaunch& launch : kernel.launches) {
      INFO(kernel.name << " -> " << launch.function);
      CHECK(launch.block[0] * launch.block[1] * launch.block[2] <= kThreadsPerBlock);
      CHECK(gpu->host_translation.find("func.func @" + std::string(kSimulatedFunctionPrefix) +
                                       launch.function + "(") != std::string::npos);
    }
  for (const DeviceKernel& kernel : gpu->kernels) {
    if (kernel.name != "row_softmax_wide" && kernel.name != "row_min_bf16_wide") continue;
    INFO(kernel.name);
    REQUIRE(kernel.launches.size() == 1);
    CHECK(kernel.launches[0].grid[0] == (kernel.name == "row_softmax_wide" ? 5 : 3));
    CHECK(kernel.launches[0].block[0] == kThreadsPerBlock);
  }
  for (const DeviceKernel& kernel : gpu->kernels) {
    if (kernel.name != "xent300") continue;
    // A block per row of 300 classes, then one block folding the 40 row losses.
    REQUIRE(kernel.launches.size() == 2);
    CHECK(kernel.launches[0].grid[0] == 40);
    CHECK(kernel.launches[0].block[0] == kThreadsPerBlock);
    CHECK(kernel.launches[1].grid[0] == 1);
    CHECK(kernel.launches[1].block[0] == 64);
  }
  std::string ptxas = Ptxas();
  for (int sm : {80, 90}) {
    const std::string* ptx = &gpu->ptx[sm];
    CHECK(ptx->find(".target sm_" + std::to_string(sm)) != std::string::npos);
    CHECK(ptx->find(".visible .entry add_broadcast_kernel(") != std::string::npos);
    CHECK(ptx->find(".visible .entry rank0_kernel(") != std::string::npos);
    CHECK(ptx->find(".visible .entry row_softmax_kernel(") != std::string::npos);
    CHECK(ptx->find(".visible .entry conv_bf16_epilogue_kernel(") != std::string::npos);
    CHECK(ptx->find(".visible .entry bn_grad_kernel(") != std::string::npos);
    CHECK(ptx->find(".visible .entry xent300_kernel(") != std::string::npos);
    // Wide f32 rows reduce across the block (warp shuffles, then shared memory).
    CHECK(ptx->find(".visible .entry row_softmax_wide_kernel(") != std::string::npos);
    CHECK(ptx->find("shfl.sync") != std::string::npos);
    if (ptxas.empty()) {
      WARN(
          "SKIPPED: ptxas not found (/usr/local/cuda/bin/ptxas or $KILN_PTXAS); PTX not validated");
      continue;
    }
    std::string err = RunPtxas(ptxas, *ptx, sm);
    INFO(err);
    CHECK(err.empty());
  }
  // nvJitLink assembles the same PTX into cubins (what modules carry beside it).
  for (int sm : {80, 90}) {
    Result<std::string> cubin = AssembleCubin(gpu->ptx[sm], sm);
    if (!cubin.ok() && cubin.error().code() == ErrorCode::kFailedPrecondition) {
      WARN("SKIPPED: " << cubin.error().message());
      break;
    }
    INFO(cubin.status().ToString());
    REQUIRE(cubin.ok());
    CHECK(cubin->rfind("\x7f"
                       "ELF",
                       0) == 0);
    CHECK(cubin->find("row_softmax_kernel") != std::string::npos);
  }
}

// The PTX of entry `name` (up to the next entry).
std::string EntryText(const std::string& ptx, const std::string& name) {
  const size_t begin = ptx.find(".entry " + name + "(");
  if (begin == std::string::npos) return "";
  return ptx.substr(begin, ptx.find(".entry ", begin + 1) - begin);
}

TEST_CASE("PTX: a contiguous elementwise kernel takes four elements a thread, in 128-bit accesses",
          "[ptx]") {
  // x * y + 1 over 4000 f32 (contiguous: vector width 4); the same over 4002 (not a multiple of
  // 4) and with y broadcast along rows (strided reads): one element a thread, scalar accesses.
  std::vector<KernelSpec> specs;
  for (const auto& [name, shape, y] : std::vector<std::tuple<std::string, Shape, Shape>>{
           {"wide", Shape{4000}, Shape{4000}},
           {"odd", Shape{4002}, Shape{4002}},
           {"broadcast", Shape{40, 100}, Shape{40, 1}}}) {
    KernelSpec spec;
    spec.name = name;
    spec.shape = shape;
    spec.inputs = {{DType::kF32, shape}, {DType::kF32, y}, {DType::kF32, Shape{}}};
    spec.ops = {{"Mul", {0, 1}, {}, DType::kF32, "mul"}, {"Add", {3, 2}, {}, DType::kF32, "add"}};
    spec.outputs = {4};
    specs.push_back(spec);
  }
  Result<std::string> text = EmitKernelModule(specs);
  REQUIRE(text.ok());
  Result<GpuKernels> gpu = LowerKernelsForGpu(*text, RowsOf(specs), {{90}, true});
  INFO((gpu.ok() ? "" : gpu.error().ToString()));
  REQUIRE(gpu.ok());
  std::map<std::string, int64_t> threads;
  for (const DeviceKernel& kernel : gpu->kernels) {
    REQUIRE(kernel.launches.size() == 1);
    const KernelLaunch& l = kernel.launches[0];
    threads[kernel.name] = l.grid[0] * l.block[0];
  }
  CHECK(threads["wide"] == 1024);  // 1000 groups of 4, rounded up to whole blocks of 256
  CHECK(threads["odd"] == 4096);
  const std::string wide = EntryText(gpu->ptx[90], "wide_kernel");
  CHECK(wide.find("ld.global.v4.f32") != std::string::npos);
  CHECK(wide.find("st.global.v4.f32") != std::string::npos);
  for (const char* name : {"odd_kernel", "broadcast_kernel"}) {
    const std::string entry = EntryText(gpu->ptx[90], name);
    INFO(name);
    CHECK(!entry.empty());
    CHECK(entry.find(".v4.") == std::string::npos);
  }
}

TEST_CASE("cubin: PTX that does not assemble gives nvJitLink's log", "[ptx]") {
  Result<std::string> cubin = AssembleCubin(".version 7.0\n.target sm_80\n.entry f( {\n", 80);
  REQUIRE_FALSE(cubin.ok());
  if (cubin.error().code() == ErrorCode::kFailedPrecondition) {
    WARN("SKIPPED: " << cubin.error().message());
    return;
  }
  CHECK(cubin.error().code() == ErrorCode::kInternal);
  CHECK_THAT(cubin.error().message(), Catch::Contains("sm_80"));
}

TEST_CASE("PTX: bad input gives errors, not crashes", "[ptx]") {
  Result<GpuKernels> bad = LowerKernelsForGpu("func.func @f( {", {}, {{80}, true});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code() == ErrorCode::kInvalidArgument);
  CHECK(bad.error().message().find("invalid MLIR module") != std::string::npos);
  Result<GpuKernels> sm = LowerKernelsForGpu("module {}", {}, {{77}, true});
  REQUIRE_FALSE(sm.ok());
  CHECK(sm.error().message().find("sm_77") != std::string::npos);
  Result<GpuKernels> empty = LowerKernelsForGpu("module {}", {}, {{80}, true});
  CHECK(empty.ok());
  // A kernel whose row count the caller did not give.
  Result<GpuKernels> no_rows = LowerKernelsForGpu(
      "func.func @k(%b: i64, %e: i64, %x: memref<4xf32>) { return }", {}, {{}, true});
  REQUIRE_FALSE(no_rows.ok());
  CHECK(no_rows.error().message().find("'k' has no row count") != std::string::npos);
}

}  // namespace
}  // namespace kiln::compiler
