#include "tests/testing/differential.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/cpu/plan_compiler.h"
#include "runtime/cuda/device.h"

namespace kiln::testing {

bool CloseForDType(const Tensor& expected, const Tensor& actual, std::string* why) {
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    *why = "type " + std::string(DTypeName(actual.dtype())) + actual.shape().ToString() +
           ", expected " + std::string(DTypeName(expected.dtype())) + expected.shape().ToString();
    return false;
  }
  const DType t = expected.dtype();
  const double rtol = t == f32 ? 1e-4 : t == f64 ? 1e-10 : 1e-2;
  const double atol = t == f32 ? 1e-5 : t == f64 ? 1e-12 : 1e-3;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    bool ok;
    if (IsFloat(t)) {
      double e = expected.GetDouble(i), a = actual.GetDouble(i);
      ok = (std::isnan(e) && std::isnan(a)) || e == a ||
           std::abs(e - a) <= atol + rtol * std::abs(e);
    } else {
      ok = expected.GetInt(i) == actual.GetInt(i);
    }
    if (!ok) {
      *why = "element " + std::to_string(i) + ": " + std::to_string(actual.GetDouble(i)) +
             ", expected " + std::to_string(expected.GetDouble(i));
      return false;
    }
  }
  return true;
}

std::vector<std::string> CompiledBackends() {
  if (!GetPlanCompiler()) return {};
  // "cuda" too where this machine has a GPU and its driver (the GPU bundle's machines).
  static const bool has_gpu = cuda::OpenDevice("cuda", 1).ok();
  if (has_gpu) return {"cpu", "cuda-sim", "cuda"};
  return {"cpu", "cuda-sim"};
}

void CheckCompiledMatchesReference(const Graph& graph, const FeedList& feeds,
                                   const std::vector<TensorName>& fetches,
                                   const std::vector<Tensor>& expected) {
  for (const std::string& backend : CompiledBackends()) {
    Session session(graph, SessionOptions{.backend = backend});
    Result<std::vector<Tensor>> out = session.Run(feeds, fetches);
    INFO("compiled (" << backend << " backend): " << out.status().ToString());
    REQUIRE(out.ok());
    REQUIRE(out->size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string why;
      INFO("fetch '" << fetches[i].str() << "' on the " << backend << " backend vs reference");
      bool close = CloseForDType(expected[i], (*out)[i], &why);
      INFO(why);
      CHECK(close);
    }
  }
}

void CheckTrainingMatchesReference(const Graph& graph, const FeedList& feeds,
                                   const TensorName& loss, const TensorName& train, int steps) {
  for (const std::string& backend : CompiledBackends()) {
    Session reference(graph, SessionOptions{.backend = "reference"});
    Session compiled(graph, SessionOptions{.backend = backend});
    for (int step = 0; step < steps; ++step) {
      auto r = reference.Run(feeds, {loss}, {train});
      auto c = compiled.Run(feeds, {loss}, {train});
      INFO(backend << " backend, step " << step << ": " << c.status().ToString());
      REQUIRE(r.ok());
      REQUIRE(c.ok());
      CHECK((*c)[0].GetDouble(0) == Approx((*r)[0].GetDouble(0)).epsilon(1e-4));
    }
  }
}

}  // namespace kiln::testing
