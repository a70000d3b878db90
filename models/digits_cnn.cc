#include "models/digits_cnn.h"

#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"

namespace kiln::models {

DigitsCnn BuildDigitsCnn(GraphBuilder& g, int64_t seed, bool training) {
  DigitsCnn m;
  m.images = g.Placeholder("images", f32, {-1, 1, 8, 8});
  Value h = nn::Conv2D(g.Scope("conv1"), m.images, 16, 3, {.padding = 1, .seed = seed});
  h = Relu(nn::BatchNorm(g.Scope("bn1"), h, {.training = training}));
  h = MaxPool2D(h, {.kernel = {2, 2}});
  h = Relu(nn::Conv2D(g.Scope("conv2"), h, 32, 3, {.padding = 1, .seed = seed + 1}));
  h = MaxPool2D(h, {.kernel = {2, 2}});
  m.logits = nn::Dense(g.Scope("fc"), Flatten(h), 10, {.seed = seed + 2}).Named("logits");
  m.probabilities = Softmax(m.logits).Named("probabilities");
  g.Output("logits", m.logits);
  g.Output("probabilities", m.probabilities);
  return m;
}

DigitsCnn BuildDigitsTraining(GraphBuilder& g, int64_t seed) {
  DigitsCnn m = BuildDigitsCnn(g, seed, /*training=*/true);
  m.labels = g.Placeholder("labels", i64, {-1});
  m.loss = SoftmaxCrossEntropy(m.logits, m.labels).Named("loss");
  m.accuracy = Mean(Cast(Equal(ArgMax(m.logits, 1, false), m.labels), f32)).Named("accuracy");
  g.Output("loss", m.loss);
  g.Output("accuracy", m.accuracy);
  return m;
}

}  // namespace kiln::models
