#include "models/sequence_lstm.h"

#include "ir/layers.h"
#include "ir/ops/array.h"
#include "ir/ops/control.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/state.h"
#include "models/lstm_cell.h"

namespace kiln::models {
namespace {

struct LstmWeights {
  Value wx, wh, b;
};

LstmWeights MakeWeights(GraphBuilder& g, const SequenceLstmOptions& o) {
  return {
      Variable(g, "lstm/wx", f32, {o.features, 4 * o.hidden}, Initializer::GlorotUniform(o.seed)),
      Variable(g, "lstm/wh", f32, {o.hidden, 4 * o.hidden}, Initializer::GlorotUniform(o.seed + 1)),
      Variable(g, "lstm/b", f32, {4 * o.hidden}, Initializer::Zeros())};
}

// The last h of the unrolled recurrence.
Value Unrolled(GraphBuilder& g, const SequenceLstmOptions& o, Value x, const LstmWeights& w) {
  Value h, c;
  for (Value step : SplitEven(x, 1, o.steps)) {
    Value x_t = Reshape(step, {o.batch, o.features});
    std::tie(h, c) = LstmStep(x_t, h, c, w.wx, w.wh, w.b);
  }
  return h;
}

// The last h of the recurrence as a loop over the fed steps: (t, h, c, xs, wx, wh, b, T).
Value Looped(GraphBuilder& g, const SequenceLstmOptions& o, Value x, const LstmWeights& w) {
  Value xs = Transpose(x, {1, 0, 2});  // [T, batch, features]
  Value steps = Reshape(Slice(ShapeOf(x), {1}, {2}), {});
  Tensor zeros(f32, Shape{o.batch, o.hidden});
  std::vector<Value> out = WhileLoop(
      {g.Scalar(0, i64), g.Constant(zeros), g.Constant(zeros), xs, w.wx, w.wh, w.b, steps},
      [](const std::vector<Value>& v) { return Less(v[0], v[7]); },
      [](const std::vector<Value>& v) {
        auto [h, c] = LstmStep(Gather(v[3], v[0]), v[1], v[2], v[4], v[5], v[6]);
        return std::vector<Value>{v[0] + 1.0, h, c, v[3], v[4], v[5], v[6], v[7]};
      },
      o.steps);
  return out[1];
}

}  // namespace

const std::vector<std::string>& SequenceLstmNames() {
  static const std::vector<std::string> names = {"sequence-lstm-unrolled", "sequence-lstm-loop"};
  return names;
}

Result<Graph> BuildSequenceLstm(const std::string& name, const SequenceLstmOptions& o) {
  const bool loop = name == "sequence-lstm-loop";
  if (!loop && name != "sequence-lstm-unrolled")
    return MakeError(ErrorCode::kInvalidArgument, "unknown sequence LSTM '", name,
                     "' (sequence-lstm-unrolled or sequence-lstm-loop)");
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {o.batch, loop ? -1 : o.steps, o.features});
  Value labels = g.Placeholder("labels", i64, {o.batch});
  const LstmWeights w = MakeWeights(g, o);
  Value h = loop ? Looped(g, o, x, w) : Unrolled(g, o, x, w);
  Value logits = nn::Dense(g.Scope("fc"), h, o.classes, {.seed = o.seed + 2}).Named("logits");
  g.Output("logits", logits);
  g.Output("loss", SoftmaxCrossEntropy(logits, labels).Named("loss"));
  return g.Build();
}

}  // namespace kiln::models
