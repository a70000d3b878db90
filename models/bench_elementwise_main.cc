// kiln_bench_elementwise: how close a fused elementwise kernel comes to the memory bandwidth.
//
//   kiln_bench_elementwise [--elements N] [--iters K] [--threads T]
//
// Runs y = relu(a * b + c) * 0.5 + a (three f32 inputs of N elements, one output: 16 bytes per
// element) compiled by kiln, which fuses it into one generated kernel; the Session fetches only
// y's first element (a one-element Slice of y), so that the full copy-out of a fetch is not what
// is timed. Then the same sizes through a plain
// OpenMP triad loop x = y * z + w compiled into this program: the bandwidth the machine gives a
// streaming loop. Prints the median time and GB/s of each and their ratio. A benchmark, not a
// test: it asserts nothing (scripts/bench_elementwise.sh adds PyTorch's number).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "runtime/session.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int64_t ArgOr(int argc, char** argv, const char* flag, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  const int64_t n = ArgOr(argc, argv, "--elements", int64_t{1} << 25);
  const int iters = static_cast<int>(ArgOr(argc, argv, "--iters", 20));
  const int threads = static_cast<int>(ArgOr(argc, argv, "--threads", 2));
  if (n < 1 || iters < 1 || threads < 1) {
    std::fprintf(stderr,
                 "usage: kiln_bench_elementwise [--elements N] [--iters K] [--threads T]\n");
    return 2;
  }
  const double bytes = 16.0 * static_cast<double>(n);

  GraphBuilder g;
  Value a = g.Placeholder("a", f32, {n});
  Value b = g.Placeholder("b", f32, {n});
  Value c = g.Placeholder("c", f32, {n});
  Value y = Add(Mul(Relu(Add(Mul(a, b), c)), g.Scalar(0.5)), a).Named("y");
  g.Output("y0", Slice(y, {0}, {1}));
  Result<Graph> graph = g.Build();
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", graph.error().ToString().c_str());
    return 1;
  }
  std::vector<float> init(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) init[i] = static_cast<float>(i % 1000) / 500.0f - 1.0f;
  const Tensor av = Tensor::FromVector<float>(Shape{n}, init);
  const Tensor bv = Tensor::FromVector<float>(Shape{n}, init);
  const Tensor cv = Tensor::FromVector<float>(Shape{n}, init);
  Session session(*graph, SessionOptions{.backend = "cpu", .threads = threads});
  const FeedList feeds = {{"a", av}, {"b", bv}, {"c", cv}};
  std::vector<double> kiln_ms;
  for (int i = 0; i <= iters; ++i) {  // the first run compiles
    const auto start = Clock::now();
    Result<std::vector<Tensor>> out = session.Run(feeds, {"y0"});
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.error().ToString().c_str());
      return 1;
    }
    if (i > 0)
      kiln_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }

  std::vector<float> x(static_cast<size_t>(n)), yv(init), z(init), w(init);
  std::vector<double> triad_ms;
  for (int i = 0; i <= iters; ++i) {
    const auto start = Clock::now();
    float* xp = x.data();
    const float *yp = yv.data(), *zp = z.data(), *wp = w.data();
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t k = 0; k < n; ++k) xp[k] = yp[k] * zp[k] + wp[k];
    if (i > 0)
      triad_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }

  const double kiln = Median(kiln_ms), triad = Median(triad_ms);
  std::printf("elements: %lld (%.0f MB moved per run), threads: %d, median of %d runs\n",
              static_cast<long long>(n), bytes / 1e6, threads, iters);
  std::printf("kiln fused kernel: %.3f ms  %.1f GB/s\n", kiln, bytes / kiln / 1e6);
  std::printf("OpenMP triad:      %.3f ms  %.1f GB/s\n", triad, bytes / triad / 1e6);
  std::printf("kiln / triad bandwidth: %.2f\n", triad / kiln);
  return 0;
}
