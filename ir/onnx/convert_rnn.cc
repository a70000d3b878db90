// ONNX RNN, GRU and LSTM, unrolled over time into kiln ops (MatMul, Split, activations), so that
// the imported model stays differentiable and its weights trainable. Forward, reverse and
// bidirectional; layout 0 and 1; initial states, biases, peepholes (LSTM), clip, input_forget
// (LSTM), linear_before_reset (GRU) and the activation functions ONNX lists with their
// activation_alpha / activation_beta. The sequence length (dim 0 of X, or 1 with layout = 1)
// must be known at import, at most 65536 steps over all directions; sequence_lens, if given, must
// be known and equal it for every batch entry (padded sequences are not supported).
#include <cmath>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"

namespace kiln::onnx_import {
namespace {

// The most cells an RNN is unrolled into (steps times directions): about 30 KB of graph each, so
// that a few bytes declaring a sequence of millions cannot make the import exhaust memory.
constexpr int64_t kMaxUnrolledSteps = 65536;

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Result<Value> Apply(const OnnxNode& n, const Activation& a, Value x) {
  const std::string& f = a.name;
  if (f == "Sigmoid") return Sigmoid(x);
  if (f == "Tanh") return Tanh(x);
  if (f == "Relu") return Relu(x);
  if (f == "LeakyRelu") return LeakyRelu(x, a.alpha);
  if (f == "Elu") return Elu(x, a.alpha);
  if (f == "Softsign") return x / (Abs(x) + 1.0);
  if (f == "Softplus") return Log(Exp(x) + 1.0);
  if (f == "Affine") return x * a.alpha + a.beta;
  if (f == "ScaledTanh") return Tanh(x * a.beta) * a.alpha;
  if (f == "HardSigmoid") return Clip(x * a.alpha + a.beta, 0.0, 1.0);
  if (f == "ThresholdedRelu")
    return Select(Greater(x, n.g().Scalar(a.alpha, x.dtype())), x, ZerosLike(x));
  return n.Unsupported("activation '", f, "' is not supported");
}

// Default alpha/beta of the activations that take them.
std::pair<double, double> Defaults(const std::string& f) {
  if (f == "LeakyRelu") return {0.01, 0};
  if (f == "Elu" || f == "ThresholdedRelu") return {1.0, 0};
  if (f == "HardSigmoid") return {0.2, 0.5};
  if (f == "Affine" || f == "ScaledTanh") return {1.0, 0};
  return {0, 0};
}

// The activations of every direction: `per_dir` functions per direction.
Result<std::vector<Activation>> ReadActivations(const OnnxNode& n, int per_dir, int dirs,
                                                const std::vector<std::string>& defaults) {
  const onnx::AttributeProto* attr = n.Attr("activations");
  std::vector<std::string> names;
  if (attr)
    for (const std::string& s : attr->strings()) names.push_back(s);
  if (names.empty())
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (static_cast<int>(names.size()) != per_dir * dirs)
    return n.Fail("activations must list ", per_dir * dirs, " functions, got ", names.size());
  KILN_ASSIGN_OR_RETURN(std::vector<double> alphas, n.Floats("activation_alpha"));
  KILN_ASSIGN_OR_RETURN(std::vector<double> betas, n.Floats("activation_beta"));
  std::vector<Activation> out;
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) {
    Activation a{name};
    std::tie(a.alpha, a.beta) = Defaults(name);
    bool takes_alpha = a.alpha != 0 || name == "Affine" || name == "ScaledTanh";
    bool takes_beta = name == "HardSigmoid" || name == "Affine" || name == "ScaledTanh";
    if (takes_alpha && ai < alphas.size()) a.alpha = alphas[ai++];
    if (takes_beta && bi < betas.size()) a.beta = betas[bi++];
    out.push_back(a);
  }
  return out;
}

struct Cell {
  std::string op;  // RNN, GRU, LSTM
  int gates = 1;
  int64_t hidden = 0;
  std::vector<Activation> act;  // this direction's
  double clip = 0;              // 0: none
  bool linear_before_reset = false, input_forget = false;
};

Value ClipGate(const Cell& c, Value v) { return c.clip > 0 ? Clip(v, -c.clip, c.clip) : v; }

// Runs one direction over the steps of xw ([seq, batch, gates * hidden], X @ W^T + biases of W);
// returns the per-step hidden states in time order and the final h (and c).
struct DirResult {
  std::vector<Value> ys;
  Value h, c;
};

Result<DirResult> RunDirection(const OnnxNode& n, const Cell& cell, Value xw, Value r, Value rb,
                               Value p, Value h, Value c, int64_t seq, bool reverse) {
  int64_t hs = cell.hidden;
  GraphBuilder& g = n.g();
  std::vector<Value> ys(seq);
  std::vector<int64_t> sizes(cell.gates, hs);
  for (int64_t k = 0; k < seq; ++k) {
    int64_t t = reverse ? seq - 1 - k : k;
    Value xt = Gather(xw, g.Constant(Tensor::Scalar<int64_t>(t)), 0);  // [batch, G*H]
    std::vector<Value> xg = Split(xt, 1, sizes);
    if (cell.op == "GRU") {
      // Gates z, r, h; R's h block is applied to (r * h) or, linear_before_reset, before r.
      std::vector<Value> rg = Split(r, 0, sizes);
      std::vector<Value> bg = rb.valid() ? Split(rb, 0, sizes) : std::vector<Value>();
      auto rec = [&](int i, Value state) {
        Value v = MatMul(state, rg[i], false, true);
        return bg.empty() ? v : v + bg[i];
      };
      KILN_ASSIGN_OR_RETURN(Value z, Apply(n, cell.act[0], ClipGate(cell, xg[0] + rec(0, h))));
      KILN_ASSIGN_OR_RETURN(Value rr, Apply(n, cell.act[0], ClipGate(cell, xg[1] + rec(1, h))));
      Value pre = cell.linear_before_reset ? xg[2] + rr * rec(2, h) : xg[2] + rec(2, rr * h);
      KILN_ASSIGN_OR_RETURN(Value hh, Apply(n, cell.act[1], ClipGate(cell, pre)));
      h = (1.0 - z) * hh + z * h;
    } else {
      Value rec = MatMul(h, r, false, true);
      if (rb.valid()) rec = rec + rb;
      std::vector<Value> rg = Split(rec, 1, sizes);
      if (cell.op == "RNN") {
        KILN_ASSIGN_OR_RETURN(h, Apply(n, cell.act[0], ClipGate(cell, xg[0] + rg[0])));
      } else {
        // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
        std::vector<Value> pp = p.valid() ? Split(p, 0, {hs, hs, hs}) : std::vector<Value>();
        Value pi = xg[0] + rg[0], pf = xg[2] + rg[2];
        if (!pp.empty()) {
          pi = pi + pp[0] * c;
          pf = pf + pp[2] * c;
        }
        KILN_ASSIGN_OR_RETURN(Value i, Apply(n, cell.act[0], ClipGate(cell, pi)));
        KILN_ASSIGN_OR_RETURN(Value f, Apply(n, cell.act[0], ClipGate(cell, pf)));
        if (cell.input_forget) f = 1.0 - i;
        KILN_ASSIGN_OR_RETURN(Value cc, Apply(n, cell.act[1], ClipGate(cell, xg[3] + rg[3])));
        c = f * c + i * cc;
        Value po = xg[1] + rg[1];
        if (!pp.empty()) po = po + pp[1] * c;
        KILN_ASSIGN_OR_RETURN(Value o, Apply(n, cell.act[0], ClipGate(cell, po)));
        KILN_ASSIGN_OR_RETURN(Value hc, Apply(n, cell.act[2], c));
        h = o * hc;
      }
    }
    ys[t] = h;
  }
  return DirResult{ys, h, c};
}

Status ConvertRecurrent(OnnxNode& n) {
  Cell cell;
  cell.op = n.op_type();
  cell.gates = cell.op == "LSTM" ? 4 : cell.op == "GRU" ? 3 : 1;
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value w, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value r, n.input(2));
  KILN_ASSIGN_OR_RETURN(cell.hidden, n.Int("hidden_size", 0));
  KILN_ASSIGN_OR_RETURN(std::string direction, n.String("direction", "forward"));
  KILN_ASSIGN_OR_RETURN(int64_t layout, n.Int("layout", 0));
  KILN_ASSIGN_OR_RETURN(cell.clip, n.Float("clip", 0.0));
  KILN_ASSIGN_OR_RETURN(int64_t lbr, n.Int("linear_before_reset", 0));
  KILN_ASSIGN_OR_RETURN(int64_t input_forget, n.Int("input_forget", 0));
  cell.linear_before_reset = lbr != 0;
  cell.input_forget = input_forget != 0;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return n.Fail("direction must be forward, reverse or bidirectional, got '", direction, "'");
  int dirs = direction == "bidirectional" ? 2 : 1;
  if (x.rank() != 3) return n.Fail("X must be 3-D, got ", x.shape().ToString());
  if (layout) x = Transpose(x, {1, 0, 2});
  int64_t seq = x.shape()[0];
  if (seq < 0) return n.NotKnownYet("needs the sequence length known at import");
  if (seq * dirs > kMaxUnrolledSteps)
    return n.Unsupported("unrolls one cell per time step: ", seq, " steps",
                         dirs == 2 ? " in each direction" : "", " are more than the ",
                         kMaxUnrolledSteps, " it builds");
  if (cell.hidden <= 0) {
    if (r.rank() != 3 || r.shape()[2] < 0) return n.Fail("hidden_size is required");
    cell.hidden = r.shape()[2];
  }
  if (n.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lens, n.ConstInts(4));
    for (int64_t l : lens)
      if (l != seq)
        return n.Unsupported("sequence_lens ", l, " differs from the sequence length ", seq,
                             " (padded sequences are not supported)");
  }
  std::vector<std::string> defaults =
      cell.op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : cell.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                         : std::vector<std::string>{"Tanh"};
  KILN_ASSIGN_OR_RETURN(std::vector<Activation> acts,
                        ReadActivations(n, static_cast<int>(defaults.size()), dirs, defaults));
  GraphBuilder& g = n.g();
  int64_t gh = cell.gates * cell.hidden;
  auto dir_slice = [&](Value v, int d) {
    return Gather(v, g.Constant(Tensor::Scalar<int64_t>(d)), 0);
  };
  std::vector<Value> ys, hs, cs;
  for (int d = 0; d < dirs; ++d) {
    cell.act.assign(acts.begin() + d * defaults.size(), acts.begin() + (d + 1) * defaults.size());
    Value wd = dir_slice(w, d), rd = dir_slice(r, d);
    Value xw = MatMul(x, wd, false, true);  // [seq, batch, G*H]
    Value rb;
    if (n.has_input(3)) {
      KILN_ASSIGN_OR_RETURN(Value b, n.input(3));
      std::vector<Value> wr = Split(dir_slice(b, d), 0, {gh, gh});
      xw = xw + wr[0];
      rb = wr[1];
    }
    Value h, c, p;
    // Zero initial states [batch, H]; an unknown batch follows X's run-time shape.
    int64_t batch = x.shape()[1];
    Value zeros_state;
    if (batch >= 0) {
      KILN_ASSIGN_OR_RETURN(Tensor zeros, NewTensor(n, x.dtype(), Shape{batch, cell.hidden}));
      zeros_state = g.Constant(zeros);
    } else {
      zeros_state = Sum(Reshape(ZerosLike(xw), {seq, -1, cell.gates, cell.hidden}), {0, 2});
    }
    if (n.has_input(5)) {
      KILN_ASSIGN_OR_RETURN(Value h0, n.input(5));
      h = layout ? dir_slice(Transpose(h0, {1, 0, 2}), d) : dir_slice(h0, d);
    } else {
      h = zeros_state;
    }
    if (cell.op == "LSTM") {
      if (n.has_input(6)) {
        KILN_ASSIGN_OR_RETURN(Value c0, n.input(6));
        c = layout ? dir_slice(Transpose(c0, {1, 0, 2}), d) : dir_slice(c0, d);
      } else {
        c = zeros_state;
      }
      if (n.has_input(7)) {
        KILN_ASSIGN_OR_RETURN(Value pv, n.input(7));
        p = dir_slice(pv, d);
      }
    }
    bool reverse = direction == "reverse" || d == 1;
    KILN_ASSIGN_OR_RETURN(DirResult res, RunDirection(n, cell, xw, rd, rb, p, h, c, seq, reverse));
    std::vector<Value> steps;
    for (Value y : res.ys) steps.push_back(Unsqueeze(y, {0}));
    ys.push_back(Unsqueeze(Concat(steps, 0), {1}));  // [seq, 1, batch, H]
    hs.push_back(Unsqueeze(res.h, {0}));
    if (res.c.valid()) cs.push_back(Unsqueeze(res.c, {0}));
  }
  Value y = dirs == 1 ? ys[0] : Concat(ys, 1);
  Value yh = dirs == 1 ? hs[0] : Concat(hs, 0);
  Value yc = cs.empty() ? Value() : dirs == 1 ? cs[0] : Concat(cs, 0);
  if (layout) {
    y = Transpose(y, {2, 0, 1, 3});
    yh = Transpose(yh, {1, 0, 2});
    if (yc.valid()) yc = Transpose(yc, {1, 0, 2});
  }
  n.SetOutput(0, y);
  n.SetOutput(1, yh);
  if (yc.valid()) n.SetOutput(2, yc);
  return OkStatus();
}

}  // namespace

void AddRnnConverters(ConverterTable& t) {
  t["RNN"] = ConvertRecurrent;
  t["GRU"] = ConvertRecurrent;
  t["LSTM"] = ConvertRecurrent;
}

}  // namespace kiln::onnx_import
