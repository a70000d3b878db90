// Shi et al. 2016 models: the specs, the by-name entry points, the fully connected networks and
// the LSTM. The convolutional networks are in shi2016_cnn.cc.
#include "models/shi2016.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/state.h"
#include "models/lstm_cell.h"

namespace kiln::models {
namespace {

constexpr int64_t kLstmSteps = 32;
constexpr int64_t kLstmVocab = 10000;
constexpr int64_t kLstmHidden = 256;  // also the embedding size
constexpr int64_t kLstmLayers = 2;

ModelSpec ImageSpec(std::string name, std::string description, Shape x, int64_t classes) {
  return {std::move(name),
          std::move(description),
          {{"x", f32, std::move(x)}, {"labels", i64, {-1}}},
          classes};
}

const std::vector<ModelSpec>& Specs() {
  static const std::vector<ModelSpec> specs = {
      ImageSpec("fcn-s", "26752-2048-2048-2048-26752 sigmoid MLP", {-1, 26752}, 26752),
      ImageSpec("alexnet-s", "ImageNet AlexNet without LRN", {-1, 3, 224, 224}, 1000),
      ImageSpec("resnet-50", "ImageNet bottleneck ResNet-50", {-1, 3, 224, 224}, 1000),
      ImageSpec("fcn-r", "784-2048-4096-1024-10 sigmoid MLP", {-1, 784}, 10),
      ImageSpec("alexnet-r", "cuda-convnet 18% CIFAR-10 net", {-1, 3, 32, 32}, 10),
      ImageSpec("resnet-56", "CIFAR-10 ResNet-56", {-1, 3, 32, 32}, 10),
      {"lstm",
       "PTB LSTM: embedding 10000x256, 2 x LSTM 256, 32 steps",
       {{"tokens", i64, {-1, kLstmSteps}}, {"labels", i64, {-1, kLstmSteps}}},
       kLstmVocab},
  };
  return specs;
}

ModelSpec SpecOrDie(const std::string& name) { return *Shi2016Spec(name); }

// A sigmoid MLP: dense layers of `hidden` units with sigmoid, then a dense layer of the classes.
Shi2016Model BuildSigmoidMlp(GraphBuilder& g, const std::string& name,
                             const std::vector<int64_t>& hidden, int64_t seed) {
  ModelSpec spec = SpecOrDie(name);
  std::vector<Value> in = internal::MakeInputs(g, spec);
  Value h = in[0];
  for (size_t i = 0; i < hidden.size(); ++i) {
    h = Sigmoid(nn::Dense(g.Scope("fc" + std::to_string(i + 1)), h, hidden[i],
                          {.seed = seed + static_cast<int64_t>(i)}));
  }
  std::string out_scope = "fc" + std::to_string(hidden.size() + 1);
  Value logits = nn::Dense(g.Scope(out_scope), h, spec.num_classes,
                           {.seed = seed + static_cast<int64_t>(hidden.size())});
  return internal::FinishClassifier(g, std::move(spec), in, logits, in[1]);
}

}  // namespace

namespace internal {

std::vector<Value> MakeInputs(GraphBuilder& g, const ModelSpec& spec) {
  std::vector<Value> values;
  for (const ModelInput& in : spec.inputs)
    values.push_back(g.Placeholder(in.name, in.dtype, in.shape));
  return values;
}

Shi2016Model FinishClassifier(GraphBuilder& g, ModelSpec spec, std::vector<Value> inputs,
                              Value logits, Value labels) {
  Shi2016Model m;
  m.spec = std::move(spec);
  m.inputs = std::move(inputs);
  m.logits = logits.Named("logits");
  m.loss = SoftmaxCrossEntropy(m.logits, labels).Named("loss");
  g.Output("logits", m.logits);
  g.Output("loss", m.loss);
  return m;
}

}  // namespace internal

const std::vector<std::string>& Shi2016ModelNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const ModelSpec& s : Specs()) v.push_back(s.name);
    return v;
  }();
  return names;
}

Result<ModelSpec> Shi2016Spec(const std::string& name) {
  for (const ModelSpec& s : Specs()) {
    if (s.name == name) return s;
  }
  std::string known;
  for (const std::string& n : Shi2016ModelNames()) known += (known.empty() ? "" : ", ") + n;
  return MakeError(ErrorCode::kInvalidArgument, "unknown model '", name, "' (known: ", known, ")");
}

Shi2016Model BuildFcnS(GraphBuilder& g, int64_t seed) {
  return BuildSigmoidMlp(g, "fcn-s", {2048, 2048, 2048}, seed);
}

Shi2016Model BuildFcnR(GraphBuilder& g, int64_t seed) {
  return BuildSigmoidMlp(g, "fcn-r", {2048, 4096, 1024}, seed);
}

Shi2016Model BuildLstm(GraphBuilder& g, int64_t seed) {
  ModelSpec spec = SpecOrDie("lstm");
  std::vector<Value> in = internal::MakeInputs(g, spec);
  Value embedding = Variable(g, "embedding", f32, {kLstmVocab, kLstmHidden},
                             Initializer::Uniform(-0.1, 0.1, seed));
  Value embedded = Gather(embedding, in[0]);  // [N, T, H]
  std::vector<Value> steps;
  for (Value s : SplitEven(embedded, 1, kLstmSteps)) steps.push_back(Reshape(s, {-1, kLstmHidden}));
  for (int64_t layer = 0; layer < kLstmLayers; ++layer) {
    Scope scope = g.Scope("lstm" + std::to_string(layer + 1));
    int64_t layer_seed = seed + 1 + 2 * layer;
    Value wx = Variable(g, scope.Join("wx"), f32, {kLstmHidden, 4 * kLstmHidden},
                        Initializer::GlorotUniform(layer_seed));
    Value wh = Variable(g, scope.Join("wh"), f32, {kLstmHidden, 4 * kLstmHidden},
                        Initializer::GlorotUniform(layer_seed + 1));
    Value b = Variable(g, scope.Join("b"), f32, {4 * kLstmHidden}, Initializer::Zeros());
    auto entered = scope.Enter();
    Value h, c;
    for (Value& x : steps) {
      std::tie(h, c) = LstmStep(x, h, c, wx, wh, b);
      x = h;  // this layer's outputs are the next layer's inputs
    }
  }
  // [N, T*H] in (example, step) order -> [N*T, H], matching labels flattened to [N*T].
  Value outputs = Reshape(Concat(steps, 1), {-1, kLstmHidden});
  Value logits =
      nn::Dense(g.Scope("softmax"), outputs, kLstmVocab, {.seed = seed + 1 + 2 * kLstmLayers});
  Value labels = Reshape(in[1], {-1});
  return internal::FinishClassifier(g, std::move(spec), in, logits, labels);
}

Result<Shi2016Model> BuildShi2016(GraphBuilder& g, const std::string& name, int64_t seed) {
  using BuildFn = Shi2016Model (*)(GraphBuilder&, int64_t);
  static const std::vector<std::pair<std::string, BuildFn>> builders = {
      {"fcn-s", BuildFcnS}, {"alexnet-s", BuildAlexNetS}, {"resnet-50", BuildResNet50},
      {"fcn-r", BuildFcnR}, {"alexnet-r", BuildAlexNetR}, {"resnet-56", BuildResNet56},
      {"lstm", BuildLstm},
  };
  KILN_RETURN_IF_ERROR(Shi2016Spec(name).status());
  for (const auto& [n, fn] : builders) {
    if (n == name) return fn(g, seed);
  }
  return MakeError(ErrorCode::kInternal, "no builder for model '", name, "'");
}

Result<Graph> BuildShi2016Graph(const std::string& name, int64_t seed) {
  GraphBuilder g;
  KILN_RETURN_IF_ERROR(BuildShi2016(g, name, seed).status());
  return g.Build();
}

int64_t TrainableParameterCount(const Graph& graph) {
  int64_t count = 0;
  for (const Node& node : graph.nodes()) {
    if (node.op != "Variable") continue;
    Result<bool> trainable = node.attrs.GetBool("trainable");
    if (node.attrs.Has("trainable") && trainable.ok() && !*trainable) continue;
    Result<Shape> shape = node.attrs.GetShape("shape");
    if (shape.ok()) count += shape->NumElements();
  }
  return count;
}

}  // namespace kiln::models
