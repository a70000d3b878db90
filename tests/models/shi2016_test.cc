#include "models/shi2016.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ir/builder.h"

using namespace kiln;

namespace {

// Dense(in -> out) with bias: in * out + out parameters.
constexpr int64_t DenseParams(int64_t in, int64_t out) { return in * out + out; }
// Conv2D k x k, in -> out channels, with bias: out * in * k * k + out.
constexpr int64_t ConvParams(int64_t in, int64_t out, int64_t k) { return out * in * k * k + out; }

// Builds `name` and checks its inputs against its spec and its outputs.
Graph BuildChecked(const std::string& name) {
  GraphBuilder g;
  Result<models::Shi2016Model> m = models::BuildShi2016(g, name);
  REQUIRE(m.ok());
  CHECK(m->spec.name == name);
  REQUIRE(m->inputs.size() == m->spec.inputs.size());
  for (size_t i = 0; i < m->inputs.size(); ++i) {
    REQUIRE(m->inputs[i].valid());
    CHECK(m->inputs[i].node_name() == m->spec.inputs[i].name);
    CHECK(m->inputs[i].dtype() == m->spec.inputs[i].dtype);
    CHECK(m->inputs[i].shape() == m->spec.inputs[i].shape);
  }
  CHECK(m->spec.inputs.back().name == "labels");
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? std::string() : graph.error().message()));
  REQUIRE(graph.ok());
  REQUIRE(m->logits.valid());
  REQUIRE(m->loss.valid());
  CHECK(m->loss.shape().rank() == 0);
  CHECK(m->logits.shape() == Shape({-1, m->spec.num_classes}));
  return *std::move(graph);
}

}  // namespace

TEST_CASE("shi2016: the model names and specs", "[models]") {
  CHECK(models::Shi2016ModelNames() == std::vector<std::string>{"fcn-s", "alexnet-s", "resnet-50",
                                                                "fcn-r", "alexnet-r", "resnet-56",
                                                                "lstm"});
  Result<models::ModelSpec> lstm = models::Shi2016Spec("lstm");
  REQUIRE(lstm.ok());
  REQUIRE(lstm->inputs.size() == 2);
  CHECK(lstm->inputs[0].name == "tokens");
  CHECK(lstm->inputs[0].shape == Shape({-1, 32}));
  CHECK(lstm->inputs[1].shape == Shape({-1, 32}));
  Result<models::ModelSpec> bad = models::Shi2016Spec("vgg-16");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("unknown model 'vgg-16'") != std::string::npos);
  CHECK(bad.error().message().find("resnet-56") != std::string::npos);
  GraphBuilder g;
  CHECK_FALSE(models::BuildShi2016(g, "vgg-16").ok());
}

TEST_CASE("shi2016: fully connected nets build with the expected parameter counts", "[models]") {
  // FCN-S: 26752-2048-2048-2048-26752 = 117,997,696.
  CHECK(models::TrainableParameterCount(BuildChecked("fcn-s")) ==
        DenseParams(26752, 2048) + 2 * DenseParams(2048, 2048) + DenseParams(2048, 26752));
  CHECK(DenseParams(26752, 2048) + 2 * DenseParams(2048, 2048) + DenseParams(2048, 26752) ==
        117997696);
  // FCN-R: 784-2048-4096-1024-10 = 14,205,962.
  CHECK(models::TrainableParameterCount(BuildChecked("fcn-r")) == 14205962);
  CHECK(DenseParams(784, 2048) + DenseParams(2048, 4096) + DenseParams(4096, 1024) +
            DenseParams(1024, 10) ==
        14205962);
}

TEST_CASE("shi2016: AlexNets build with the expected parameter counts", "[models]") {
  // AlexNet-S: conv1 3->96 (11), conv2 96->256 (5), conv3 256->384, conv4 384->384, conv5 384->256
  // (3), fc6 256*6*6=9216 -> 4096, fc7 4096 -> 4096, fc8 4096 -> 1000: 62,378,344 (AlexNet's
  // well-known ~62.4M without groups).
  constexpr int64_t kAlexNetS = ConvParams(3, 96, 11) + ConvParams(96, 256, 5) +
                                ConvParams(256, 384, 3) + ConvParams(384, 384, 3) +
                                ConvParams(384, 256, 3) + DenseParams(9216, 4096) +
                                DenseParams(4096, 4096) + DenseParams(4096, 1000);
  static_assert(kAlexNetS == 62378344);
  CHECK(models::TrainableParameterCount(BuildChecked("alexnet-s")) == kAlexNetS);
  // AlexNet-R: conv 3->32, 32->32, 32->64 (5x5), fc 64*3*3=576 -> 10:
  // 2432 + 25632 + 51264 + 5770 = 85,098 (the paper's 0.09M).
  constexpr int64_t kAlexNetR =
      ConvParams(3, 32, 5) + ConvParams(32, 32, 5) + ConvParams(32, 64, 5) + DenseParams(576, 10);
  static_assert(kAlexNetR == 85098);
  CHECK(models::TrainableParameterCount(BuildChecked("alexnet-r")) == kAlexNetR);
}

TEST_CASE("shi2016: ResNets build with the expected parameter counts", "[models]") {
  // ResNet-50: torchvision's resnet50 count, 25,557,032 (convs without bias, BN gamma+beta,
  // projection shortcuts on the first block of each stage, fc 2048 -> 1000).
  Graph r50 = BuildChecked("resnet-50");
  CHECK(models::TrainableParameterCount(r50) == 25557032);
  // ResNet-56 with option-A (parameter-free) shortcuts: conv1 3*16*9 + BN 32 = 464; stage 1: 18
  // convs 16*16*9 + 18 BN 32 = 42,048; stage 2: 16*32*9 + 17 * 32*32*9 + 18 BN 64 = 162,432;
  // stage 3: 32*64*9 + 17 * 64*64*9 + 18 BN 128 = 647,424; fc 64*10+10 = 650. Total 853,018.
  constexpr int64_t kResNet56 = (3 * 16 * 9 + 32) + 18 * (16 * 16 * 9 + 32) +
                                (16 * 32 * 9 + 17 * 32 * 32 * 9 + 18 * 64) +
                                (32 * 64 * 9 + 17 * 64 * 64 * 9 + 18 * 128) + DenseParams(64, 10);
  static_assert(kResNet56 == 853018);
  Graph r56 = BuildChecked("resnet-56");
  CHECK(models::TrainableParameterCount(r56) == kResNet56);
  // Training-mode BatchNorm: the running statistics are non-trainable variables.
  int bn = 0;
  for (const Node& n : r56.nodes()) bn += n.op == "BatchNorm";
  CHECK(bn == 1 + 2 * 27);
}

TEST_CASE("shi2016: the LSTM builds with the expected parameter count", "[models]") {
  // Embedding 10000*256; per layer Wx, Wh 256x1024 and b 1024; softmax 256 -> 10000.
  constexpr int64_t kLstm = 10000 * 256 + 2 * (2 * 256 * 1024 + 1024) + DenseParams(256, 10000);
  static_assert(kLstm == 6180624);
  CHECK(models::TrainableParameterCount(BuildChecked("lstm")) == kLstm);
}
