// The op registry: every op's schema (inputs, outputs, attributes, dtype constraints) and its type
// and shape inference, declared once in ir/ops/<family>.cc.
//
// The verifier checks a node against its OpDef generically (arity, dtypes, attribute presence and
// kinds, unknown attributes), then calls the op's InferFn to compute output types. The same InferFn
// runs again at execution time with concrete input shapes and values, so it must accept unknown
// (-1) dims and produce the most precise shapes it can.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "ir/attr.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/precision.h"
#include "ir/status.h"

namespace kiln {

// Dtype sets for constraints.
const std::vector<DType>& FloatTypes();
const std::vector<DType>& IntegerTypes();
const std::vector<DType>& NumericTypes();
const std::vector<DType>& IndexTypes();  // i32, i64
const std::vector<DType>& BoolTypes();

struct InputSpec {
  std::string name;
  std::string type_var;   // inputs naming the same variable share a dtype; "": any, each its own
  bool variadic = false;  // only the last input may be variadic (one or more tensors)
  bool optional = false;  // only last inputs may be optional (absent: fewer inputs)
};

struct AttrSpec {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // nullopt: required
};

class InferContext {
 public:
  InferContext(const Node& node, const AttrMap& attrs, std::vector<TensorType> inputs,
               std::vector<const Tensor*> input_values)
      : node_(node), attrs_(attrs), inputs_(std::move(inputs)), values_(std::move(input_values)) {}

  const Node& node() const { return node_; }
  // Attributes with the schema's defaults filled in.
  const AttrMap& attrs() const { return attrs_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const TensorType& input(int i) const { return inputs_[i]; }
  const Shape& shape(int i) const { return inputs_[i].shape; }
  DType dtype(int i) const { return inputs_[i].dtype; }
  // The input's value when it is known (a Constant producer at build time; always at run time).
  const Tensor* value(int i) const {
    return i < static_cast<int>(values_.size()) ? values_[i] : nullptr;
  }

  void AddOutput(DType dtype, Shape shape) { outputs_.push_back({dtype, std::move(shape)}); }
  std::vector<TensorType>& outputs() { return outputs_; }

  // An error naming this node: "<node>: <parts...>".
  template <typename... Args>
  Error Fail(const Args&... parts) const {
    return node_.MakeNodeError(ErrorCode::kInvalidArgument, parts...);
  }

 private:
  const Node& node_;
  const AttrMap& attrs_;
  std::vector<TensorType> inputs_;
  std::vector<const Tensor*> values_;
  std::vector<TensorType> outputs_;
};

using InferFn = std::function<Status(InferContext&)>;

// The values of a node's outputs where its attributes and its inputs' types alone decide them,
// whatever the inputs hold (Constant: its value; Shape: its input's dims, once they are known);
// no values (an empty vector) where they do not. Compilers take them as known before anything is
// fed (compiler/static_types.h).
using StaticValueFn = std::function<Result<std::vector<Tensor>>(const InferContext&)>;

// What a gradient function sees: the forward node, its inputs and outputs as builder Values, and
// the gradient flowing into each output. It builds the gradient of each input with ordinary op
// functions (nodes it creates are named under "gradients/<node>" and attributed to the forward
// node's source line) and reports them with SetInputGrad; inputs left unset get no gradient.
class GradContext {
 public:
  GradContext(GraphBuilder& g, const Node& node, const AttrMap& attrs, std::vector<Value> inputs,
              std::vector<Value> outputs, std::vector<Value> output_grads)
      : g_(g),
        node_(node),
        attrs_(attrs),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        grads_(std::move(output_grads)),
        input_grads_(inputs_.size()) {}

  GraphBuilder& builder() { return g_; }
  const Node& node() const { return node_; }
  const AttrMap& attrs() const { return attrs_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Value& input(int i) const { return inputs_[i]; }
  const Value& output(int i) const { return outputs_[i]; }
  // The gradient flowing into output i; invalid when none flows (see grad_or_zeros).
  const Value& grad(int i) const { return grads_[i]; }
  // The gradient into output i, or zeros of its type when none flows.
  Value grad_or_zeros(int i);
  void SetInputGrad(int i, Value grad) { input_grads_[i] = grad; }
  const std::vector<Value>& input_grads() const { return input_grads_; }

 private:
  GraphBuilder& g_;
  const Node& node_;
  const AttrMap& attrs_;
  std::vector<Value> inputs_, outputs_, grads_, input_grads_;
};

using GradFn = std::function<Status(GradContext&)>;

// What a node computes, for its FLOP count (ir/graph_stats.h): its attributes, the shape of each
// input (null when unknown) and of output 0. Unknown (-1) dims count as 1.
struct FlopsContext {
  const Node& node;
  const std::function<const Shape*(int)>& input_shape;
  const Shape& output;
};
// FLOPs of one node; one multiply-add counts two.
using FlopsFn = std::function<double(const FlopsContext&)>;

struct OpDef {
  std::string name;
  std::string family;  // math, linalg, nn, array, reduce, state, control
  std::vector<InputSpec> inputs;
  std::map<std::string, std::vector<DType>> type_constraints;
  std::vector<std::string> outputs;  // names; a variadic op's count comes from InferFn
  bool variadic_outputs = false;
  std::vector<AttrSpec> attrs;
  InferFn infer;
  StaticValueFn static_value;     // null: its values depend on its inputs' values
  bool stateful = false;          // reads or writes state (variables, RNG): never folded or merged
  bool gives_containers = false;  // may output a seq or optional (ir/dtype.h); others never do
  // Talks to the other ranks of a data-parallel run (ir/ops/collective.h): every rank must run
  // it in the same order, and plans start it as early as its inputs allow.
  bool collective = false;
  GradFn grad;                      // how to differentiate it (see passes/autodiff.h)
  bool not_differentiable = false;  // explicitly has no gradient (comparisons, ArgMax, Shape, ...)
  // Its default list in mixed precision (ir/precision.h), or explicitly none (no_precision_list:
  // state, constants, casts, logic and integer work, and math left to float32): one of the two.
  std::optional<PrecisionList> precision;
  bool no_precision_list = false;
  FlopsFn flops;  // its FLOP count (NoFlops() for data movement and state)
  // The plugin that registered it (runtime/plugins.h); "" for kiln's own ops.
  std::string plugin;

  const AttrSpec* FindAttr(const std::string& name) const;
  // The node's attributes with defaults filled in.
  AttrMap WithDefaults(const AttrMap& attrs) const;
};

// Fluent construction of an OpDef: OpDefBuilder("Relu", "math").Input("x", "T")...Build().
class OpDefBuilder {
 public:
  OpDefBuilder(std::string name, std::string family);
  OpDefBuilder& Input(std::string name, std::string type_var);
  OpDefBuilder& VariadicInput(std::string name, std::string type_var);
  // An input a node may leave out; only inputs after it may follow, each optional too.
  OpDefBuilder& OptionalInput(std::string name, std::string type_var);
  OpDefBuilder& Output(std::string name);
  OpDefBuilder& VariadicOutput(std::string name);
  OpDefBuilder& Types(std::string type_var, std::vector<DType> allowed);
  OpDefBuilder& Attr(std::string name, AttrType type, AttrValue default_value);
  OpDefBuilder& RequiredAttr(std::string name, AttrType type);
  OpDefBuilder& Infer(InferFn fn);
  OpDefBuilder& StaticValue(StaticValueFn fn);
  OpDefBuilder& Stateful();
  // The op may output sequences and optionals (its kernel makes them, or passes them through).
  OpDefBuilder& GivesContainers();
  // The op is a collective (OpDef::collective); it is stateful too (never folded or merged).
  OpDefBuilder& Collective();
  OpDefBuilder& Grad(GradFn fn);
  OpDefBuilder& NotDifferentiable();
  OpDefBuilder& Precision(PrecisionList list);
  OpDefBuilder& NoPrecisionList();
  OpDefBuilder& Flops(FlopsFn fn);
  OpDef Build() { return std::move(def_); }

 private:
  OpDef def_;
};

class OpRegistry {
 public:
  // The registry of every op: kiln's own (filled on first use) and those plugins added.
  static const OpRegistry& Global();
  // Thread-safe, also while a plugin registers ops; the result stays valid (ops are never
  // removed).
  const OpDef* Find(const std::string& op) const;
  // All ops, sorted by name.
  std::vector<const OpDef*> All() const;
  void Register(OpDef def);

  // Adds a plugin's ops (each `def.plugin` naming the plugin) to the global registry, all or
  // none, after checking that their names are free and that each says everything a kiln op says:
  // its inference, its gradient or NotDifferentiable(), its precision list or NoPrecisionList(),
  // its FLOP count.
  static Status RegisterPluginOps(std::vector<OpDef> defs);

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, OpDef> ops_;
};

// Common FLOP counts: none (data movement, state); `k` per element of output 0 (elementwise
// math); `k` per element of input `i` (reductions, normalizations).
FlopsFn NoFlops();
FlopsFn FlopsPerOutputElement(double k = 1);
FlopsFn FlopsPerInputElement(int i, double k = 1);
// One per window position per element of output 0, the window's size the product of the ints
// attribute "kernel" (pooling).
FlopsFn FlopsPerWindowElement();
// The elements of `shape`, unknown dims counted as 1.
double KnownElements(const Shape& shape);

// Common inference functions.
// Output 0 has the type of input `i`.
InferFn SameAsInput(int i);
// Output 0 is the numpy broadcast of all inputs, with the dtype of input 0 (or `dtype` if given).
InferFn BroadcastInputs(std::optional<DType> dtype = std::nullopt);

}  // namespace kiln
