#include "ir/op_registry.h"

#include <set>

#include "ir/ops/registration.h"

namespace kiln {

const std::vector<DType>& FloatTypes() {
  static const std::vector<DType> v = {f32, f64, f16, bf16};
  return v;
}
const std::vector<DType>& IntegerTypes() {
  static const std::vector<DType> v = {i8, u8, i16, u16, i32, u32, i64, u64};
  return v;
}
const std::vector<DType>& NumericTypes() {
  static const std::vector<DType> v = {f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64};
  return v;
}
const std::vector<DType>& IndexTypes() {
  static const std::vector<DType> v = {i32, i64};
  return v;
}
const std::vector<DType>& BoolTypes() {
  static const std::vector<DType> v = {boolean};
  return v;
}

const AttrSpec* OpDef::FindAttr(const std::string& attr) const {
  for (const AttrSpec& a : attrs)
    if (a.name == attr) return &a;
  return nullptr;
}

AttrMap OpDef::WithDefaults(const AttrMap& given) const {
  AttrMap out = given;
  for (const AttrSpec& a : attrs)
    if (a.default_value && !out.Has(a.name)) out.Set(a.name, *a.default_value);
  return out;
}

OpDefBuilder::OpDefBuilder(std::string name, std::string family) {
  def_.name = std::move(name);
  def_.family = std::move(family);
}
OpDefBuilder& OpDefBuilder::Input(std::string name, std::string type_var) {
  def_.inputs.push_back({std::move(name), std::move(type_var), false});
  return *this;
}
OpDefBuilder& OpDefBuilder::VariadicInput(std::string name, std::string type_var) {
  def_.inputs.push_back({std::move(name), std::move(type_var), true});
  return *this;
}
OpDefBuilder& OpDefBuilder::OptionalInput(std::string name, std::string type_var) {
  def_.inputs.push_back({std::move(name), std::move(type_var), false, true});
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string name) {
  def_.outputs.push_back(std::move(name));
  return *this;
}
OpDefBuilder& OpDefBuilder::VariadicOutput(std::string name) {
  def_.outputs.push_back(std::move(name));
  def_.variadic_outputs = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Types(std::string type_var, std::vector<DType> allowed) {
  def_.type_constraints[std::move(type_var)] = std::move(allowed);
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrType type, AttrValue default_value) {
  def_.attrs.push_back({std::move(name), type, std::move(default_value)});
  return *this;
}
OpDefBuilder& OpDefBuilder::RequiredAttr(std::string name, AttrType type) {
  def_.attrs.push_back({std::move(name), type, std::nullopt});
  return *this;
}
OpDefBuilder& OpDefBuilder::Infer(InferFn fn) {
  def_.infer = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::StaticValue(StaticValueFn fn) {
  def_.static_value = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::GivesContainers() {
  def_.gives_containers = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Collective() {
  def_.collective = true;
  def_.stateful = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Stateful() {
  def_.stateful = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::Grad(GradFn fn) {
  def_.grad = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::NotDifferentiable() {
  def_.not_differentiable = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::Precision(PrecisionList list) {
  def_.precision = list;
  return *this;
}

OpDefBuilder& OpDefBuilder::NoPrecisionList() {
  def_.no_precision_list = true;
  return *this;
}

OpDefBuilder& OpDefBuilder::Flops(FlopsFn fn) {
  def_.flops = std::move(fn);
  return *this;
}

double KnownElements(const Shape& shape) {
  double n = 1;
  for (int64_t d : shape.dims()) n *= d < 0 ? 1.0 : static_cast<double>(d);
  return n;
}

FlopsFn NoFlops() {
  return [](const FlopsContext&) { return 0.0; };
}

FlopsFn FlopsPerOutputElement(double k) {
  return [k](const FlopsContext& c) { return k * KnownElements(c.output); };
}

FlopsFn FlopsPerInputElement(int i, double k) {
  return [i, k](const FlopsContext& c) {
    const Shape* x = c.input_shape(i);
    return x ? k * KnownElements(*x) : 0.0;
  };
}

FlopsFn FlopsPerWindowElement() {
  return [](const FlopsContext& c) {
    const AttrValue* kernel = c.node.attrs.Find("kernel");
    double window = 1;
    if (kernel && kernel->type() == AttrType::kInts)
      for (int64_t d : kernel->get<std::vector<int64_t>>()) window *= static_cast<double>(d);
    return KnownElements(c.output) * window;
  };
}

Value GradContext::grad_or_zeros(int i) {
  if (grads_[i].valid()) return grads_[i];
  return g_.AddOp1("ZerosLike", {outputs_[i]}, {}, SourceLocation::current());
}

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterStateOps(*r);
    RegisterMathOps(*r);
    RegisterLinalgOps(*r);
    RegisterNnOps(*r);
    RegisterReduceOps(*r);
    RegisterArrayOps(*r);
    RegisterDeferredOps(*r);
    RegisterControlOps(*r);
    RegisterCollectiveOps(*r);
    return r;
  }();
  return *registry;
}

const OpDef* OpRegistry::Find(const std::string& op) const {
  std::shared_lock lock(mu_);
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<const OpDef*> OpRegistry::All() const {
  std::shared_lock lock(mu_);
  std::vector<const OpDef*> all;
  for (const auto& [name, def] : ops_) all.push_back(&def);
  return all;
}

void OpRegistry::Register(OpDef def) {
  KILN_CHECK(def.infer != nullptr);
  std::unique_lock lock(mu_);
  KILN_CHECK(ops_.count(def.name) == 0);
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

namespace {

Status CheckPluginOp(const OpDef& def) {
  auto refuse = [&](const std::string& why) {
    return MakeError(ErrorCode::kInvalidArgument, "plugin '", def.plugin, "': op '", def.name, "' ",
                     why);
  };
  if (def.plugin.empty()) return refuse("names no plugin");
  if (def.name.empty()) return refuse("has no name");
  if (!def.infer) return refuse("has no inference function (OpDefBuilder::Infer)");
  if (!def.grad && !def.not_differentiable)
    return refuse("has neither a gradient (Grad) nor NotDifferentiable()");
  if (def.grad && def.not_differentiable)
    return refuse("has a gradient and is marked NotDifferentiable()");
  if (!def.precision && !def.no_precision_list)
    return refuse("has neither a precision list (Precision) nor NoPrecisionList()");
  if (!def.flops) return refuse("has no FLOP count (Flops, or NoFlops())");
  return OkStatus();
}

}  // namespace

Status OpRegistry::RegisterPluginOps(std::vector<OpDef> defs) {
  for (const OpDef& def : defs) KILN_RETURN_IF_ERROR(CheckPluginOp(def));
  OpRegistry& r = const_cast<OpRegistry&>(Global());  // made non-const by Global()
  std::unique_lock lock(r.mu_);
  std::set<std::string> names;
  for (const OpDef& def : defs) {
    auto taken = r.ops_.find(def.name);
    if (taken != r.ops_.end() || !names.insert(def.name).second)
      return MakeError(ErrorCode::kAlreadyExists, "plugin '", def.plugin, "': op '", def.name,
                       "' is already an op",
                       taken == r.ops_.end() ? std::string(" of this plugin")
                       : taken->second.plugin.empty()
                           ? std::string(" of kiln")
                           : " of plugin '" + taken->second.plugin + "'");
  }
  for (OpDef& def : defs) {
    std::string name = def.name;
    r.ops_.emplace(std::move(name), std::move(def));
  }
  return OkStatus();
}

InferFn SameAsInput(int i) {
  return [i](InferContext& ctx) -> Status {
    ctx.AddOutput(ctx.dtype(i), ctx.shape(i));
    return OkStatus();
  };
}

InferFn BroadcastInputs(std::optional<DType> dtype) {
  return [dtype](InferContext& ctx) -> Status {
    Shape out = ctx.shape(0);
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      Result<Shape> b = BroadcastShapes(out, ctx.shape(i));
      if (!b.ok()) return ctx.Fail(b.error().message());
      out = *b;
    }
    ctx.AddOutput(dtype.value_or(ctx.dtype(0)), std::move(out));
    return OkStatus();
  };
}

}  // namespace kiln
