// Shi et al. 2016 models: the convolutional networks (AlexNet-S, ResNet-50, AlexNet-R, ResNet-56).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "models/shi2016.h"

namespace kiln::models {
namespace {

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

// Hands out consecutive seeds so that every layer gets its own.
class Seeds {
 public:
  explicit Seeds(int64_t first) : next_(first) {}
  int64_t Next() { return next_++; }

 private:
  int64_t next_;
};

// conv (no bias) -> training-mode BatchNorm [-> relu].
Value ConvBn(const Scope& scope, Value x, int64_t filters, int64_t kernel, int64_t stride,
             Seeds& seeds, bool relu = true) {
  Value h = nn::Conv2D(
      scope.Sub("conv"), x, filters, kernel,
      {.stride = stride, .padding = kernel / 2, .use_bias = false, .seed = seeds.Next()});
  h = nn::BatchNorm(scope.Sub("bn"), h, {.training = true});
  return relu ? Relu(h) : h;
}

Value Conv(const Scope& scope, Value x, int64_t filters, int64_t kernel, int64_t stride,
           int64_t padding, Seeds& seeds) {
  return nn::Conv2D(scope, x, filters, kernel,
                    {.stride = stride, .padding = padding, .seed = seeds.Next()});
}

Pool2DOptions Pool3x3Stride2(int64_t pad = 0) {
  return {.kernel = {3, 3}, .strides = {2, 2}, .pads = {pad, pad, pad, pad}};
}

// torchvision's Bottleneck (ResNet v1.5: the stride is on the 3x3 conv). The shortcut is a
// 1x1 conv + BN projection when the shape changes.
Value Bottleneck(const Scope& scope, Value x, int64_t width, int64_t stride, Seeds& seeds) {
  if (!x.valid()) return x;  // the builder has recorded the error
  int64_t out = 4 * width;
  Value h = ConvBn(scope.Sub("a"), x, width, 1, 1, seeds);
  h = ConvBn(scope.Sub("b"), h, width, 3, stride, seeds);
  h = ConvBn(scope.Sub("c"), h, out, 1, 1, seeds, /*relu=*/false);
  Value shortcut = x;
  if (stride != 1 || x.shape()[1] != out) {
    shortcut = ConvBn(scope.Sub("proj"), x, out, 1, stride, seeds, /*relu=*/false);
  }
  return Relu(h + shortcut);
}

// He et al.'s CIFAR basic block with the parameter-free shortcut (option A): when the shape
// changes, the input is subsampled by 2 and zero-padded with filters / 4 channels on each side.
Value BasicBlockA(const Scope& scope, Value x, int64_t filters, int64_t stride, Seeds& seeds) {
  if (!x.valid()) return x;  // the builder has recorded the error
  Value h = ConvBn(scope.Sub("a"), x, filters, 3, stride, seeds);
  h = ConvBn(scope.Sub("b"), h, filters, 3, 1, seeds, /*relu=*/false);
  Value shortcut = x;
  if (stride != 1 || x.shape()[1] != filters) {
    int64_t pad = (filters - x.shape()[1]) / 2;
    shortcut = Slice(x, {0, 0}, {kToEnd, kToEnd}, {2, 3}, {stride, stride});
    shortcut = Pad(shortcut, {0, pad, 0, 0, 0, pad, 0, 0});
  }
  return Relu(h + shortcut);
}

}  // namespace

Shi2016Model BuildAlexNetS(GraphBuilder& g, int64_t seed) {
  ModelSpec spec = *Shi2016Spec("alexnet-s");
  std::vector<Value> in = internal::MakeInputs(g, spec);
  Seeds seeds(seed);
  // 224 -> conv 11/4 pad 2: 55 -> pool: 27 -> conv 5 pad 2: 27 -> pool: 13 -> 3 x conv 3 pad 1: 13
  // -> pool: 6, so fc6 sees 256 * 6 * 6 = 9216 features (as the original AlexNet).
  Value h = Relu(Conv(g.Scope("conv1"), in[0], 96, 11, 4, 2, seeds));
  h = MaxPool2D(h, Pool3x3Stride2());
  h = Relu(Conv(g.Scope("conv2"), h, 256, 5, 1, 2, seeds));
  h = MaxPool2D(h, Pool3x3Stride2());
  h = Relu(Conv(g.Scope("conv3"), h, 384, 3, 1, 1, seeds));
  h = Relu(Conv(g.Scope("conv4"), h, 384, 3, 1, 1, seeds));
  h = Relu(Conv(g.Scope("conv5"), h, 256, 3, 1, 1, seeds));
  h = Flatten(MaxPool2D(h, Pool3x3Stride2()));
  h = Relu(nn::Dense(g.Scope("fc6"), h, 4096, {.seed = seeds.Next()}));
  h = Relu(nn::Dense(g.Scope("fc7"), h, 4096, {.seed = seeds.Next()}));
  Value logits = nn::Dense(g.Scope("fc8"), h, spec.num_classes, {.seed = seeds.Next()});
  return internal::FinishClassifier(g, spec, in, logits, in[1]);
}

Shi2016Model BuildResNet50(GraphBuilder& g, int64_t seed) {
  ModelSpec spec = *Shi2016Spec("resnet-50");
  std::vector<Value> in = internal::MakeInputs(g, spec);
  Seeds seeds(seed);
  Value h = ConvBn(g.Scope("conv1"), in[0], 64, 7, 2, seeds);  // 112x112
  h = MaxPool2D(h, Pool3x3Stride2(/*pad=*/1));                 // 56x56
  const int64_t blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    int64_t width = int64_t{64} << stage;
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      Scope scope = g.Scope("stage" + std::to_string(stage + 1) + "/block" + std::to_string(b + 1));
      h = Bottleneck(scope, h, width, (b == 0 && stage > 0) ? 2 : 1, seeds);
    }
  }
  h = Flatten(GlobalAvgPool(h));  // [N, 2048]
  Value logits = nn::Dense(g.Scope("fc"), h, spec.num_classes, {.seed = seeds.Next()});
  return internal::FinishClassifier(g, spec, in, logits, in[1]);
}

Shi2016Model BuildAlexNetR(GraphBuilder& g, int64_t seed) {
  ModelSpec spec = *Shi2016Spec("alexnet-r");
  std::vector<Value> in = internal::MakeInputs(g, spec);
  Seeds seeds(seed);
  // 32 -> conv 5 pad 2: 32 -> pool 3/2 (floor): 15 -> conv: 15 -> pool: 7 -> conv: 7 -> pool: 3,
  // so the classifier sees 64 * 3 * 3 = 576 features.
  Value h = Conv(g.Scope("conv1"), in[0], 32, 5, 1, 2, seeds);
  h = Relu(MaxPool2D(h, Pool3x3Stride2()));
  h = Relu(Conv(g.Scope("conv2"), h, 32, 5, 1, 2, seeds));
  h = AvgPool2D(h, Pool3x3Stride2());
  h = Relu(Conv(g.Scope("conv3"), h, 64, 5, 1, 2, seeds));
  h = Flatten(AvgPool2D(h, Pool3x3Stride2()));
  Value logits = nn::Dense(g.Scope("fc"), h, spec.num_classes, {.seed = seeds.Next()});
  return internal::FinishClassifier(g, spec, in, logits, in[1]);
}

Shi2016Model BuildResNet56(GraphBuilder& g, int64_t seed) {
  constexpr int64_t kBlocksPerStage = 9;  // depth 6n + 2 = 56
  ModelSpec spec = *Shi2016Spec("resnet-56");
  std::vector<Value> in = internal::MakeInputs(g, spec);
  Seeds seeds(seed);
  Value h = ConvBn(g.Scope("conv1"), in[0], 16, 3, 1, seeds);
  for (int stage = 0; stage < 3; ++stage) {
    int64_t filters = int64_t{16} << stage;
    for (int64_t b = 0; b < kBlocksPerStage; ++b) {
      Scope scope = g.Scope("stage" + std::to_string(stage + 1) + "/block" + std::to_string(b + 1));
      h = BasicBlockA(scope, h, filters, (b == 0 && stage > 0) ? 2 : 1, seeds);
    }
  }
  h = Flatten(GlobalAvgPool(h));  // [N, 64]
  Value logits = nn::Dense(g.Scope("fc"), h, spec.num_classes, {.seed = seeds.Next()});
  return internal::FinishClassifier(g, spec, in, logits, in[1]);
}

}  // namespace kiln::models
