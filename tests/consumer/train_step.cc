// Builds a small classifier with kiln's C++ API, its hidden layer through the plugin op "Cube"
// (cube_plugin.cc), trains it with Adam on a seeded toy problem (the label is whether the sum of
// the features is positive), and writes its frozen inference graph:
//   train_step PLUGIN.so OUT.kgraph
// Prints the first and last loss; exits 1 unless the loss fell.
#include <cmath>
#include <cstdio>
#include <map>

#include "ir/layers.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/serialize.h"
#include "passes/freeze.h"
#include "passes/optim.h"
#include "runtime/checkpoint.h"
#include "runtime/plugins.h"
#include "runtime/session.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: train_step PLUGIN.so OUT.kgraph\n");
    return 2;
  }
  if (kiln::Status s = kiln::LoadPlugin(argv[1]); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.error().ToString().c_str());
    return 1;
  }
  kiln::GraphBuilder g;
  kiln::Value x = g.Placeholder("x", kiln::f32, {-1, 4});
  kiln::Value labels = g.Placeholder("labels", kiln::i64, {-1});
  kiln::Value pre = kiln::nn::Dense(g.Scope("hidden"), x, 16);
  kiln::Value h = g.AddOp1("Cube", {pre}, {}, kiln::SourceLocation::current());
  kiln::Value logits = kiln::nn::Dense(g.Scope("out"), h, 2).Named("logits");
  g.Output("logits", logits);
  kiln::Value loss = kiln::SoftmaxCrossEntropy(logits, labels).Named("loss");
  kiln::Value train = kiln::optim::Adam({.lr = 0.05}).Minimize(loss);
  kiln::Result<kiln::Graph> graph = g.Build();
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", graph.error().ToString().c_str());
    return 1;
  }
  std::vector<float> xs(64 * 4);
  std::vector<int64_t> ys(64);
  for (int i = 0; i < 64; ++i) {
    float sum = 0;
    for (int j = 0; j < 4; ++j) sum += xs[i * 4 + j] = std::sin(i * 4.1f + j * 1.7f);
    ys[i] = sum > 0;
  }
  kiln::Session session(*graph);
  const kiln::FeedList feeds = {{"x", kiln::Tensor::FromVector<float>({64, 4}, xs)},
                                {"labels", kiln::Tensor::FromVector<int64_t>({64}, ys)}};
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    kiln::Result<std::vector<kiln::Tensor>> out = session.Run(feeds, {loss}, {train});
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.error().ToString().c_str());
      return 1;
    }
    last = out->at(0).ToDoubles()[0];
    if (step == 0) first = last;
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  const std::string checkpoint = std::string(argv[2]) + ".kckpt";
  kiln::Status saved = session.SaveCheckpoint(checkpoint);
  kiln::Result<std::map<std::string, kiln::Tensor>> values = kiln::ReadCheckpoint(checkpoint);
  if (!saved.ok() || !values.ok()) return 1;
  kiln::Result<kiln::Graph> frozen = kiln::Freeze(*graph, *values, {"logits"});
  if (!frozen.ok() || !kiln::SaveGraph(*frozen, argv[2]).ok()) return 1;
  return last < first * 0.5 ? 0 : 1;
}
