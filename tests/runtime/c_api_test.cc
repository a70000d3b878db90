// The C API (runtime/c_api/kiln_c.h) with the runtime alone: NULL handles and arguments, missing,
// damaged and foreign files, and wrong buffers give a status with a message, never a crash; a
// module built by hand (reference steps only, so no compiler is needed) runs through the C API
// exactly as through kiln::Module, and checkpoints its variable; the header compiles as C99.
// The round trip on compiled modules is tests/compiler/c_api_roundtrip_test.cc.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "ir/file_util.h"
#include "runtime/c_api/kiln_c.h"
#include "runtime/checkpoint.h"
#include "runtime/module/module.h"
#include "tests/testing/system_compiler.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

Node MakeNode(const std::string& name, const std::string& op, std::vector<TensorRef> inputs,
              TensorType type) {
  Node n;
  n.name = name;
  n.op = op;
  n.inputs = std::move(inputs);
  n.output_types = {std::move(type)};
  return n;
}

Step ReferenceStep(Node node, std::vector<int> inputs, std::vector<int> outputs) {
  Step s;
  s.kind = Step::Kind::kReference;
  s.callee = node.op;
  s.node = std::move(node);
  s.inputs = std::move(inputs);
  s.outputs = std::move(outputs);
  return s;
}

// inputs a f32[2, 3], b i64[4]; outputs "sum" = a + w (w: a variable f32[3], {1, 2, 3}), "b" = b.
ModuleFile HandBuiltModule() {
  using Kind = BufferDesc::Kind;
  const TensorType a{f32, Shape{2, 3}}, b{i64, Shape{4}}, w{f32, Shape{3}};
  ModuleFile m;
  m.source = "hand-built";
  m.inputs = {{"a", a}, {"b", b}};
  m.outputs = {{"sum", a}, {"b", b}};
  m.variables["w"] = Tensor::FromVector<float>(Shape{3}, {1, 2, 3});
  Executable& e = m.executable;
  e.arena_bytes = 128;
  e.feeds = {{"a", 0}, {"b", 0}};
  e.buffers = {{Kind::kFeed, a, 0, 0, "a:0"},
               {Kind::kFeed, b, 0, 1, "b:0"},
               {Kind::kArena, w, 0, -1, "w:0"},
               {Kind::kArena, a, 64, -1, "sum:0"}};
  Node variable = MakeNode("w", "Variable", {}, w);
  variable.attrs.Set("dtype", f32);
  variable.attrs.Set("shape", Shape{3});
  e.steps = {ReferenceStep(variable, {}, {2}),
             ReferenceStep(MakeNode("sum", "Add", {{"a", 0}, {"w", 0}}, a), {0, 2}, {3})};
  e.fetches = {3, 1};
  return m;
}

std::string WriteModule(const std::string& name, const ModuleFile& m) {
  const std::string path = testing::TempPath(name);
  REQUIRE(WriteModuleFile(path, m).ok());
  return path;
}

// Calls `f(&status)`, expects a failure with `code` whose message contains `text`; frees it.
template <typename F>
void CheckError(F&& f, kiln_code code, const std::string& text) {
  kiln_status* status = nullptr;
  f(&status);
  REQUIRE(status != nullptr);
  INFO(kiln_status_message(status));
  CHECK(kiln_status_code(status) == code);
  CHECK_THAT(kiln_status_message(status), Catch::Contains(text));
  kiln_status_free(status);
}

struct Loaded {
  kiln_module* m;
  explicit Loaded(const std::string& path) {
    kiln_status* status = nullptr;
    m = kiln_module_load(path.c_str(), 1, &status);
    INFO(kiln_status_message(status));
    REQUIRE(m != nullptr);
    CHECK(status == nullptr);
  }
  ~Loaded() { kiln_module_free(m); }
};

TEST_CASE("C API: NULL handles and arguments give errors, never crashes", "[capi]") {
  CHECK(std::string(kiln_status_message(nullptr)).empty());
  CHECK(kiln_status_code(nullptr) == KILN_OK);
  kiln_status_free(nullptr);
  kiln_module_free(nullptr);
  CHECK(kiln_module_load(nullptr, 0, nullptr) == nullptr);  // no status wanted: no crash either
  CheckError([](kiln_status** s) { CHECK(kiln_module_load(nullptr, 0, s) == nullptr); },
             KILN_INVALID_ARGUMENT, "kiln_module_load: path is NULL");
  CHECK(kiln_module_num_inputs(nullptr) == -1);
  CHECK(kiln_module_num_outputs(nullptr) == -1);
  CHECK(kiln_module_input_name(nullptr, 0) == nullptr);
  CHECK(kiln_module_output_name(nullptr, 0) == nullptr);
  CHECK(kiln_module_input_dtype(nullptr, 0) == KILN_DTYPE_INVALID);
  CHECK(kiln_module_output_dtype(nullptr, 0) == KILN_DTYPE_INVALID);
  CHECK(kiln_module_input_rank(nullptr, 0) == -1);
  CHECK(kiln_module_output_rank(nullptr, 0) == -1);
  CHECK(kiln_module_input_dim(nullptr, 0, 0) == -1);
  CHECK(kiln_module_output_dim(nullptr, 0, 0) == -1);
  CHECK(kiln_module_input_bytes(nullptr, 0) == -1);
  CHECK(kiln_module_output_bytes(nullptr, 0) == -1);
  CHECK(kiln_module_find_input(nullptr, "a") == -1);
  CHECK(kiln_module_find_output(nullptr, "a") == -1);
  CHECK(kiln_module_run(nullptr, nullptr, nullptr, nullptr) == KILN_INVALID_ARGUMENT);
  CheckError([](kiln_status** s) { kiln_module_run(nullptr, nullptr, nullptr, s); },
             KILN_INVALID_ARGUMENT, "kiln_module_run: module is NULL");
  CheckError(
      [](kiln_status** s) {
        kiln_module_run_checked(nullptr, nullptr, nullptr, nullptr, nullptr, s);
      },
      KILN_INVALID_ARGUMENT, "module is NULL");
  CheckError([](kiln_status** s) { kiln_module_save_checkpoint(nullptr, "x.kckpt", s); },
             KILN_INVALID_ARGUMENT, "kiln_module_save_checkpoint: module is NULL");
  CheckError([](kiln_status** s) { kiln_module_restore_checkpoint(nullptr, "x.kckpt", s); },
             KILN_INVALID_ARGUMENT, "kiln_module_restore_checkpoint: module is NULL");
  Loaded loaded(WriteModule("null_args.kmod", HandBuiltModule()));
  CheckError([&](kiln_status** s) { kiln_module_save_checkpoint(loaded.m, nullptr, s); },
             KILN_INVALID_ARGUMENT, "path is NULL");
  CheckError([&](kiln_status** s) { kiln_module_restore_checkpoint(loaded.m, nullptr, s); },
             KILN_INVALID_ARGUMENT, "path is NULL");
  CHECK(kiln_module_find_input(loaded.m, nullptr) == -1);
}

TEST_CASE("C API: a module loaded alone is rank 0 of 1, and data-parallel loads check arguments",
          "[capi][data_parallel]") {
  CHECK(kiln_module_rank(nullptr) == -1);
  CHECK(kiln_module_ranks(nullptr) == -1);
  Loaded loaded(WriteModule("alone.kmod", HandBuiltModule()));
  CHECK(kiln_module_rank(loaded.m) == 0);
  CHECK(kiln_module_ranks(loaded.m) == 1);
  CheckError([&](kiln_status** s) { kiln_module_set_share(loaded.m, 0.5, s); },
             KILN_FAILED_PRECONDITION, "not loaded as a rank of a data-parallel run");
  CheckError([&](kiln_status** s) { kiln_module_set_share(loaded.m, 0, s); }, KILN_INVALID_ARGUMENT,
             "a share is in (0, 1], got 0");
  CheckError([](kiln_status** s) { kiln_module_set_share(nullptr, 0.5, s); }, KILN_INVALID_ARGUMENT,
             "kiln_module_set_share: module is NULL");
  CheckError(
      [](kiln_status** s) {
        CHECK(kiln_module_load_distributed(nullptr, "", 0, 60, s) == nullptr);
      },
      KILN_INVALID_ARGUMENT, "kiln_module_load_distributed: path is NULL");
  // Checked before MPI is opened.
  CheckError(
      [](kiln_status** s) {
        CHECK(kiln_module_load_distributed("m.kmod", "", 0, 0, s) == nullptr);
      },
      KILN_INVALID_ARGUMENT, "timeout_seconds must be positive, got 0");
}

TEST_CASE("C API: dtypes mirror kiln's", "[capi]") {
  for (DType t : AllDTypes()) {
    kiln_dtype c = static_cast<kiln_dtype>(t);
    CHECK(kiln_dtype_name(c) == DTypeName(t));
    CHECK(kiln_dtype_size(c) == DTypeSize(t));
  }
  CHECK(kiln_dtype_name(KILN_DTYPE_INVALID) == nullptr);
  CHECK(kiln_dtype_size(KILN_DTYPE_INVALID) == -1);
  CHECK(kiln_dtype_name(static_cast<kiln_dtype>(14)) == nullptr);
  CHECK(kiln_dtype_size(static_cast<kiln_dtype>(14)) == -1);
}

TEST_CASE("C API: missing, damaged and foreign modules are refused, naming the file", "[capi]") {
  auto refused = [](const std::string& path, int threads, kiln_code code, const std::string& text) {
    CheckError(
        [&](kiln_status** s) { CHECK(kiln_module_load(path.c_str(), threads, s) == nullptr); },
        code, text);
  };
  const std::string missing = testing::TempPath("missing.kmod");
  kiln_status* status = nullptr;
  CHECK(kiln_module_load(missing.c_str(), 0, &status) == nullptr);
  REQUIRE(status != nullptr);
  CHECK(kiln_status_code(status) != KILN_OK);
  CHECK_THAT(kiln_status_message(status), Catch::Contains("missing.kmod"));
  kiln_status_free(status);
  const std::string garbage = testing::TempPath("garbage.kmod");
  REQUIRE(WriteFileAtomically(garbage, "this is not a module").ok());
  refused(garbage, 0, KILN_DATA_LOSS, "garbage.kmod");
  const std::string module = WriteModule("good.kmod", HandBuiltModule());
  std::string bytes = *ReadFileToString(module, kMaxModuleBytes);
  const std::string truncated = testing::TempPath("truncated.kmod");
  REQUIRE(WriteFileAtomically(truncated, bytes.substr(0, bytes.size() - 10)).ok());
  refused(truncated, 0, KILN_DATA_LOSS, "truncated.kmod");
  ModuleFile cuda = HandBuiltModule();
  cuda.target = "cuda";
  refused(WriteModule("cuda.kmod", cuda), 0, KILN_FAILED_PRECONDITION, "target 'cuda'");
  refused(module, -1, KILN_INVALID_ARGUMENT, "threads must be 0 (every core) or more, got -1");
  refused(testing::TempPath(""), 0, KILN_INVALID_ARGUMENT, "is not a regular file");
}

TEST_CASE("C API: a module's signature, by index and by name", "[capi]") {
  Loaded loaded(WriteModule("signature.kmod", HandBuiltModule()));
  const kiln_module* m = loaded.m;
  REQUIRE(kiln_module_num_inputs(m) == 2);
  REQUIRE(kiln_module_num_outputs(m) == 2);
  CHECK(kiln_module_input_name(m, 1) == std::string("b"));
  CHECK(kiln_module_output_name(m, 0) == std::string("sum"));
  CHECK(kiln_module_input_dtype(m, 1) == KILN_DTYPE_I64);
  CHECK(kiln_module_output_dtype(m, 0) == KILN_DTYPE_F32);
  CHECK(kiln_module_input_rank(m, 0) == 2);
  CHECK(kiln_module_output_rank(m, 1) == 1);
  CHECK(kiln_module_input_dim(m, 0, 1) == 3);
  CHECK(kiln_module_output_dim(m, 1, 0) == 4);
  CHECK(kiln_module_input_bytes(m, 0) == 24);
  CHECK(kiln_module_output_bytes(m, 1) == 32);
  CHECK(kiln_module_find_input(m, "b") == 1);
  CHECK(kiln_module_find_output(m, "b") == 1);
  CHECK(kiln_module_find_output(m, "sum:0") == -1);  // exact names only
  for (int bad : {-1, 2}) {
    CHECK(kiln_module_input_name(m, bad) == nullptr);
    CHECK(kiln_module_output_dtype(m, bad) == KILN_DTYPE_INVALID);
    CHECK(kiln_module_input_rank(m, bad) == -1);
    CHECK(kiln_module_output_dim(m, bad, 0) == -1);
    CHECK(kiln_module_input_bytes(m, bad) == -1);
  }
  CHECK(kiln_module_input_dim(m, 0, 2) == -1);
  CHECK(kiln_module_output_dim(m, 0, -1) == -1);
}

TEST_CASE("C API: a run gives exactly what kiln::Module gives, checkpoints round-trip", "[capi]") {
  const std::string path = WriteModule("run.kmod", HandBuiltModule());
  Loaded loaded(path);
  const std::vector<float> a = {0.5f, -1, 2, 3, 4.25f, 5};
  const std::vector<int64_t> b = {7, -8, 9, 1ll << 40};
  std::vector<float> sum(6);
  std::vector<int64_t> b_out(4);
  const void* inputs[] = {a.data(), b.data()};
  void* outputs[] = {sum.data(), b_out.data()};
  auto run = [&] {
    kiln_status* status = nullptr;
    int code = kiln_module_run(loaded.m, inputs, outputs, &status);
    INFO(kiln_status_message(status));
    REQUIRE(code == 0);
    CHECK(status == nullptr);
  };
  run();
  Result<std::unique_ptr<Module>> module = Module::Load(path);
  REQUIRE(module.ok());
  Result<std::vector<Tensor>> want = (*module)->Run(
      {{"a", Tensor::FromVector<float>(Shape{2, 3}, a)}, {"b", Tensor::FromVector(Shape{4}, b)}});
  REQUIRE(want.ok());
  CHECK((*want)[0].BitwiseEquals(Tensor::FromVector<float>(Shape{2, 3}, sum)));
  CHECK(b_out == b);
  CHECK(sum == std::vector<float>{1.5f, 1, 5, 4, 6.25f, 8});

  const std::string saved = testing::TempPath("run.kckpt"), other = testing::TempPath("w.kckpt");
  kiln_status* status = nullptr;
  REQUIRE(kiln_module_save_checkpoint(loaded.m, saved.c_str(), &status) == 0);
  REQUIRE(WriteCheckpoint(other, {{"w", Tensor::FromVector<float>(Shape{3}, {10, 20, 30})}}).ok());
  REQUIRE(kiln_module_restore_checkpoint(loaded.m, other.c_str(), &status) == 0);
  run();
  CHECK(sum == std::vector<float>{10.5f, 19, 32, 13, 24.25f, 35});
  REQUIRE(kiln_module_restore_checkpoint(loaded.m, saved.c_str(), nullptr) == 0);
  run();
  CHECK(sum == std::vector<float>{1.5f, 1, 5, 4, 6.25f, 8});

  const std::string wrong = testing::TempPath("wrong.kckpt");
  REQUIRE(WriteCheckpoint(wrong, {{"v", Tensor::Scalar<float>(1)}}).ok());
  CheckError([&](kiln_status** s) { kiln_module_restore_checkpoint(loaded.m, wrong.c_str(), s); },
             KILN_NOT_FOUND, "no value for variable");
  CheckError(
      [&](kiln_status** s) {
        kiln_module_restore_checkpoint(loaded.m, testing::TempPath("none.kckpt").c_str(), s);
      },
      KILN_NOT_FOUND, "none.kckpt");
  CheckError(
      [&](kiln_status** s) {
        kiln_module_save_checkpoint(loaded.m, testing::TempPath("no/such/dir/x.kckpt").c_str(), s);
      },
      KILN_INVALID_ARGUMENT, "x.kckpt");
}

TEST_CASE("C API: NULL or wrongly sized buffers are refused before the run", "[capi]") {
  Loaded loaded(WriteModule("buffers.kmod", HandBuiltModule()));
  std::vector<float> a(6, 1), sum(6, -1);
  std::vector<int64_t> b(4, 2), b_out(4, -1);
  const void* inputs[] = {a.data(), b.data()};
  const void* no_b[] = {a.data(), nullptr};
  void* outputs[] = {sum.data(), b_out.data()};
  void* no_sum[] = {nullptr, b_out.data()};
  auto run = [&](const void* const* in, void* const* out, const std::string& text) {
    CheckError([&](kiln_status** s) { kiln_module_run(loaded.m, in, out, s); },
               KILN_INVALID_ARGUMENT, text);
  };
  run(nullptr, outputs, "inputs is NULL but the module has 2 input(s)");
  run(inputs, nullptr, "outputs is NULL but the module has 2 output(s)");
  run(no_b, outputs, "the buffer of input 1 ('b', i64[4], 32 bytes) is NULL");
  run(inputs, no_sum, "the buffer of output 0 ('sum', f32[2, 3], 24 bytes) is NULL");
  CHECK(sum == std::vector<float>(6, -1));  // nothing ran

  auto checked = [&](std::vector<int64_t> in_bytes, std::vector<int64_t> out_bytes) {
    kiln_status* status = nullptr;
    int code = kiln_module_run_checked(loaded.m, inputs, in_bytes.data(), outputs, out_bytes.data(),
                                       &status);
    std::string message = kiln_status_message(status);
    kiln_status_free(status);
    return code == 0 ? std::string("ok") : message;
  };
  CHECK_THAT(checked({24, 16}, {24, 32}),
             Catch::Contains("the buffer of input 1 ('b', i64[4], 32 bytes) has 16 bytes"));
  CHECK_THAT(checked({24, 64}, {24, 32}), Catch::Contains("input 1 ('b', i64[4], 32 bytes)"));
  CHECK_THAT(checked({24, 32}, {20, 32}),
             Catch::Contains("the buffer of output 0 ('sum', f32[2, 3], 24 bytes) has 20 bytes"));
  CHECK(checked({24, 32}, {24, 40}) == "ok");  // an output buffer may be larger
  CHECK(sum == std::vector<float>{2, 3, 4, 2, 3, 4});
  kiln_status* status = nullptr;
  CHECK(kiln_module_run_checked(loaded.m, inputs, nullptr, outputs, nullptr, &status) == 0);
  CHECK(status == nullptr);
}

TEST_CASE("C API: the header is C99", "[capi]") {
  testing::SourceCheck check = testing::CheckCompiles("capi_user.c", R"(
#include <stdio.h>
#include "runtime/c_api/kiln_c.h"

int main(int argc, char** argv) {
  kiln_status* status = NULL;
  kiln_module* m = kiln_module_load(argc > 1 ? argv[1] : "m.kmod", 0, &status);
  if (!m) {
    fprintf(stderr, "%d: %s\n", (int)kiln_status_code(status), kiln_status_message(status));
    kiln_status_free(status);
    return 1;
  }
  printf("%s %s %lld\n", kiln_module_input_name(m, 0),
         kiln_dtype_name(kiln_module_input_dtype(m, 0)), (long long)kiln_module_input_dim(m, 0, 0));
  kiln_module_free(m);
  return 0;
}
)");
  if (!check.compiler_found) {
    WARN("no C compiler (cc) on PATH: the C99 check did not run");
    return;
  }
  INFO(check.diagnostics);
  CHECK(check.ok);
}

}  // namespace
}  // namespace kiln
