// kiln_example: the foundation's end-to-end path. Builds the digits CNN with the C++ API, saves it
// (binary and text), loads it back, checks the round trip, and runs the loaded graph on real digit
// images with the reference session. The weights are the seeded initial ones (training arrives with
// the training support), so the predictions are not meant to be right yet.
//
// usage: kiln_example [OUT_DIR] [DIGITS_CSV_GZ]
#include <cstdio>
#include <string>

#include "ir/io/npy.h"
#include "ir/serialize.h"
#include "models/digits_cnn.h"
#include "models/digits_data.h"
#include "runtime/session.h"

using namespace kiln;

namespace {
int Fail(const Error& e) {
  std::fprintf(stderr, "kiln_example: error: %s\n", e.message().c_str());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  std::string out = argc > 1 ? argv[1] : "out";
  std::string data = argc > 2 ? argv[2] : "data/digits.csv.gz";

  GraphBuilder g;
  models::BuildDigitsCnn(g);
  Result<Graph> graph = g.Build();
  if (!graph.ok()) return Fail(graph.error());
  std::string path = out + "/digits_cnn.kgraph";
  if (Status s = SaveGraph(*graph, path); !s.ok()) return Fail(s.error());
  if (Status s = SaveGraph(*graph, out + "/digits_cnn.kgraph.txt"); !s.ok()) return Fail(s.error());
  std::printf("built the digits CNN: %zu nodes, saved to %s (and .kgraph.txt)\n",
              graph->nodes().size(), path.c_str());

  Result<Graph> loaded = LoadGraph(path);
  if (!loaded.ok()) return Fail(loaded.error());
  std::printf("loaded it back: %s\n",
              *loaded == *graph ? "identical to the built graph" : "DIFFERENT");
  if (!(*loaded == *graph)) return 1;

  Result<models::Digits> digits = models::LoadDigits(data);
  if (!digits.ok()) return Fail(digits.error());
  models::Digits batch = models::SliceDigits(*digits, 0, 16);
  if (Status s = WriteNpy(out + "/digits_images.npy", batch.images); !s.ok())
    return Fail(s.error());

  Session session(std::move(*loaded));
  Result<std::vector<Tensor>> probs = session.Run({{"images", batch.images}}, {"probabilities"});
  if (!probs.ok()) return Fail(probs.error());
  const Tensor& p = (*probs)[0];
  std::printf("ran it on %lld digit images (reference backend, untrained seeded weights):\n",
              static_cast<long long>(p.shape()[0]));
  int correct = 0;
  for (int64_t n = 0; n < p.shape()[0]; ++n) {
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (p.GetDouble(n * 10 + c) > p.GetDouble(n * 10 + best)) best = c;
    double sum = 0;
    for (int c = 0; c < 10; ++c) sum += p.GetDouble(n * 10 + c);
    correct += best == batch.labels.GetInt(n);
    std::printf("  image %2lld: label %lld, predicted %d (p=%.3f, probabilities sum to %.4f)\n",
                static_cast<long long>(n), static_cast<long long>(batch.labels.GetInt(n)), best,
                p.GetDouble(n * 10 + best), sum);
  }
  std::printf("untrained accuracy on these images: %d/%lld (chance is about 1/10)\n", correct,
              static_cast<long long>(p.shape()[0]));
  return 0;
}
