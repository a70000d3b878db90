// kiln_digits: the data and model ends of the digits main job (scripts/main_job.sh).
//
//   kiln_digits prepare OUT_DIR DATA.csv.gz
//       writes OUT_DIR/digits_train.kgraph (the CNN in training mode, with "loss" and "accuracy")
//       and the seeded split as .npy: OUT_DIR/{train,test}_{images,labels}.npy (20% held out),
//       plus OUT_DIR/test_batch_images.npy: the first kDeployBatch test images, one batch of the
//       shape the main job compiles the deployed module for
//   kiln_digits evaluate MODEL IMAGES.npy LABELS.npy [fp32|bf16|fp16]
//       runs MODEL's "logits" on the images (in that precision: SessionOptions::precision) and
//       prints "test accuracy: 0.NNNN"
#include <algorithm>
#include <cstdio>
#include <string>

#include "ir/io/npy.h"
#include "ir/random.h"
#include "ir/serialize.h"
#include "models/digits_cnn.h"
#include "models/digits_data.h"
#include "runtime/session.h"

using namespace kiln;

namespace {

constexpr uint64_t kSplitSeed = 20261122;
constexpr int64_t kDeployBatch = 64;

int Fail(const Error& e) {
  std::fprintf(stderr, "kiln_digits: error: %s\n", e.message().c_str());
  return 1;
}

// Rows of `d` listed in `rows`.
models::Digits Pick(const models::Digits& d, const std::vector<int64_t>& rows) {
  models::Digits out{Tensor(f32, {static_cast<int64_t>(rows.size()), 1, 8, 8}),
                     Tensor(i64, {static_cast<int64_t>(rows.size())})};
  for (size_t i = 0; i < rows.size(); ++i) {
    models::Digits one = models::SliceDigits(d, rows[i], rows[i] + 1);
    std::copy(one.images.data<float>(), one.images.data<float>() + 64,
              out.images.data<float>() + i * 64);
    out.labels.data<int64_t>()[i] = one.labels.data<int64_t>()[0];
  }
  return out;
}

int Prepare(const std::string& out, const std::string& data) {
  GraphBuilder g;
  models::BuildDigitsTraining(g);
  Result<Graph> graph = g.Build();
  if (!graph.ok()) return Fail(graph.error());
  if (Status s = SaveGraph(*graph, out + "/digits_train.kgraph"); !s.ok()) return Fail(s.error());
  Result<models::Digits> digits = models::LoadDigits(data);
  if (!digits.ok()) return Fail(digits.error());
  int64_t n = digits->labels.num_elements();
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[RandomBits(kSplitSeed, 0, i) % (i + 1)]);
  int64_t test_count = n / 5;
  models::Digits test = Pick(*digits, {order.begin(), order.begin() + test_count});
  models::Digits train = Pick(*digits, {order.begin() + test_count, order.end()});
  models::Digits batch = models::SliceDigits(test, 0, std::min(kDeployBatch, test_count));
  for (auto& [name, tensor] :
       std::vector<std::pair<std::string, Tensor>>{{"train_images", train.images},
                                                   {"train_labels", train.labels},
                                                   {"test_images", test.images},
                                                   {"test_labels", test.labels},
                                                   {"test_batch_images", batch.images}})
    if (Status s = WriteNpy(out + "/" + name + ".npy", tensor); !s.ok()) return Fail(s.error());
  std::printf(
      "wrote %s/digits_train.kgraph and the split: %lld training, %lld test images (seed %llu)\n",
      out.c_str(), static_cast<long long>(n - test_count), static_cast<long long>(test_count),
      static_cast<unsigned long long>(kSplitSeed));
  return 0;
}

int Evaluate(const std::string& model, const std::string& images_path,
             const std::string& labels_path, const std::string& precision) {
  Result<DType> compute = ParsePrecision(precision);
  if (!compute.ok()) return Fail(compute.error());
  Result<Graph> graph = LoadGraph(model);
  if (!graph.ok()) return Fail(graph.error());
  Result<Tensor> images = ReadNpy(images_path);
  if (!images.ok()) return Fail(images.error());
  Result<Tensor> labels = ReadNpy(labels_path);
  if (!labels.ok()) return Fail(labels.error());
  SessionOptions options;
  options.precision.compute = *compute;
  Session session(std::move(*graph), options);
  Result<std::vector<Tensor>> logits = session.Run({{"images", *images}}, {"logits"});
  if (!logits.ok()) return Fail(logits.error());
  const Tensor& l = (*logits)[0];
  int64_t n = l.shape()[0], classes = l.shape()[1], correct = 0;
  if (labels->num_elements() != n)
    return Fail(MakeError(ErrorCode::kInvalidArgument, n, " images but ", labels->num_elements(),
                          " labels"));
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (l.GetDouble(i * classes + c) > l.GetDouble(i * classes + best)) best = c;
    correct += best == labels->GetInt(i);
  }
  std::printf("test accuracy: %.4f\n", static_cast<double>(correct) / static_cast<double>(n));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "prepare" && argc == 4) return Prepare(argv[2], argv[3]);
  if (mode == "evaluate" && (argc == 5 || argc == 6))
    return Evaluate(argv[2], argv[3], argv[4], argc == 6 ? argv[5] : "fp32");
  std::fprintf(stderr,
               "usage: kiln_digits prepare OUT_DIR DATA.csv.gz\n"
               "       kiln_digits evaluate MODEL IMAGES.npy LABELS.npy [fp32|bf16|fp16]\n");
  return 2;
}
