// The reference kernels of If and While (ir/ops/control.h): each branch or body runs as a plan of
// its own, reading and writing the run's variables: on the executor the run provides (a compiled
// backend's, which compiles each body once per shape and reuses it), else on a reference executor.
#include "ir/ops/control.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "runtime/reference/executor.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

// A body as a plan of its own, built once per kernel call and run once per iteration: its nodes
// in order, its fetches. A result that is one of the arguments (a loop variable the body passes
// through) is that argument, not fetched from the plan (no copy).
class BodyPlan {
 public:
  static Result<BodyPlan> Make(const Graph& body) {
    BodyPlan p;
    p.body_ = &body;
    KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, body.TopologicalOrder());
    std::map<std::string, int> arg_of;
    for (size_t i = 0; i < body.inputs().size(); ++i)
      arg_of[body.inputs()[i]] = static_cast<int>(i);
    for (const Node* node : order)
      if (!arg_of.count(node->name)) p.plan_.nodes.push_back(node);
    for (const GraphOutput& out : body.outputs()) {
      auto arg = arg_of.find(out.tensor.node);
      if (out.tensor.port == 0 && arg != arg_of.end()) {
        p.results_.push_back({-1, arg->second});
      } else {
        p.results_.push_back({static_cast<int>(p.plan_.fetches.size()), -1});
        p.plan_.fetches.push_back(out.tensor);
      }
    }
    return p;
  }

  // Gives each argument i with passes[i] a version that stays for every later Run (a loop's
  // invariants: the same bytes on every iteration), so that a compiled body keeps what it derives
  // from them (packed weights) instead of redoing it each iteration.
  void KeepArguments(const std::vector<bool>& passes) {
    for (size_t i = 0; i < passes.size() && i < body_->inputs().size(); ++i)
      if (passes[i])
        plan_.feed_versions[TensorRef{body_->inputs()[i], 0}] = VariableStore::NextVersion();
  }
  // Whether result i is argument i unchanged (a While body's loop invariant), for every argument.
  std::vector<bool> PassesThrough() const {
    std::vector<bool> passes;
    for (size_t i = 0; i < results_.size() && i < body_->inputs().size(); ++i)
      passes.push_back(results_[i].arg == static_cast<int>(i));
    return passes;
  }

  // The body's results for `args`.
  Result<std::vector<Tensor>> Run(const std::vector<Tensor>& args, KernelContext& ctx) {
    const std::vector<std::string>& inputs = body_->inputs();
    if (args.size() != inputs.size())
      return ctx.Fail("a body takes ", inputs.size(), " argument(s), given ", args.size());
    for (size_t i = 0; i < args.size(); ++i) plan_.feeds[TensorRef{inputs[i], 0}] = args[i];
    std::vector<Tensor> values;
    if (!plan_.fetches.empty()) {
      VariableStore none;
      VariableStore& variables = ctx.state().variables ? *ctx.state().variables : none;
      Executor* executor = ctx.state().bodies ? ctx.state().bodies(*body_) : nullptr;
      Result<std::vector<Tensor>> fetched =
          executor ? executor->Execute(plan_, variables)
                   : ReferenceExecutor(ctx.state().memory_limit).Execute(plan_, variables);
      if (!fetched.ok()) return fetched.error().WithContext(ctx.node().Describe());
      values = std::move(*fetched);
    }
    std::vector<Tensor> results;
    for (const Source& r : results_)
      results.push_back(r.fetch >= 0 ? std::move(values[r.fetch]) : args[r.arg]);
    return results;
  }

 private:
  struct Source {
    int fetch;  // its index among the fetches, or -1
    int arg;    // else the argument it is
  };
  const Graph* body_ = nullptr;
  RunPlan plan_;
  std::vector<Source> results_;
};

Result<bool> Condition(const Tensor& t, KernelContext& ctx) {
  if (t.dtype() != DType::kBool || t.num_elements() != 1)
    return ctx.Fail("the condition must be a bool of one element, got ", t.Summary(0));
  return t.GetInt(0) != 0;
}

Status IfKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool take_then, Condition(ctx.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> branch,
                        ctx.attrs().GetGraph(take_then ? "then_branch" : "else_branch"));
  std::vector<Tensor> args;
  for (int i = 1; i < ctx.num_inputs(); ++i) args.push_back(ctx.input(i));
  KILN_ASSIGN_OR_RETURN(BodyPlan plan, BodyPlan::Make(*branch));
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> results, plan.Run(args, ctx));
  for (size_t i = 0; i < results.size(); ++i)
    ctx.set_output(static_cast<int>(i), std::move(results[i]));
  return OkStatus();
}

// KILN_MAX_LOOP_ITERATIONS: a limit on every While's iterations, over which the loop is an error
// (for runs on untrusted models, such as the fuzz targets); unset: none but the op's own.
int64_t LoopIterationLimit() {
  static const int64_t limit = [] {
    const char* v = std::getenv("KILN_MAX_LOOP_ITERATIONS");
    return v && std::atoll(v) > 0 ? static_cast<int64_t>(std::atoll(v)) : int64_t{-1};
  }();
  return limit;
}

// A While's scan outputs as its iterations give their rows: written in place into outputs of
// scan_rows rows (the executor's preallocated ones where their shapes were known), or kept and
// stacked at the end when there is a row per iteration.
class ScanStacks {
 public:
  ScanStacks(KernelContext& ctx, int first_output, int64_t rows)
      : ctx_(ctx), first_(first_output), rows_(rows), kept_(ctx.num_outputs() - first_output) {}

  // Row `t` of scan output k is `row`.
  Status Add(int k, int64_t t, const Tensor& row) {
    Tensor& out = ctx_.output(first_ + k);
    const Tensor& first_row = rows_ >= 0 ? out : (kept_[k].empty() ? row : kept_[k][0]);
    if (rows_ >= 0 && t >= rows_)
      return ctx_.Fail("iteration ", t, " gives a row to scan output ", k, ", which has scan_rows ",
                       rows_, " rows");
    if (rows_ >= 0 && !out.valid()) {  // dims known only now
      std::vector<int64_t> dims = row.shape().dims();
      dims.insert(dims.begin(), rows_);
      KILN_ASSIGN_OR_RETURN(out, Tensor::Create(row.dtype(), Shape(dims)));
    }
    const bool fits = rows_ >= 0
                          ? row.dtype() == out.dtype() && RowShape(out.shape()) == row.shape()
                          : row.dtype() == first_row.dtype() && row.shape() == first_row.shape();
    if (!fits)
      return ctx_.Fail("iteration ", t, " gives scan output ", k, " a row ", row.Summary(0),
                       " where the rows before are ",
                       rows_ >= 0 ? TensorType{out.dtype(), RowShape(out.shape())}.ToString()
                                  : first_row.Summary(0));
    if (rows_ < 0) {
      kept_[k].push_back(row);
    } else if (row.byte_size() > 0) {
      std::memcpy(static_cast<uint8_t*>(out.raw_data()) + t * row.byte_size(), row.raw_data(),
                  static_cast<size_t>(row.byte_size()));
    }
    return OkStatus();
  }

  // The outputs after `iterations` iterations.
  Status Finish() {
    for (int k = 0; k < static_cast<int>(kept_.size()); ++k) {
      Tensor& out = ctx_.output(first_ + k);
      if (rows_ >= 0 && out.valid()) continue;
      // No row was given (rows from the declared type, its unknown dims 0), or one per iteration.
      std::vector<int64_t> dims =
          kept_[k].empty() ? ctx_.output_type(first_ + k).shape.dims() : kept_[k][0].shape().dims();
      if (kept_[k].empty()) {
        for (int64_t& d : dims) d = std::max<int64_t>(d, 0);
        if (rows_ >= 0) dims[0] = rows_;
      } else {
        dims.insert(dims.begin(), static_cast<int64_t>(kept_[k].size()));
      }
      const DType dtype =
          kept_[k].empty() ? ctx_.output_type(first_ + k).dtype : kept_[k][0].dtype();
      KILN_ASSIGN_OR_RETURN(out, Tensor::Create(dtype, Shape(dims)));
      uint8_t* at = static_cast<uint8_t*>(out.raw_data());
      for (const Tensor& row : kept_[k]) {
        if (row.byte_size() > 0)
          std::memcpy(at, row.raw_data(), static_cast<size_t>(row.byte_size()));
        at += row.byte_size();
      }
      kept_[k].clear();
    }
    return OkStatus();
  }

 private:
  static Shape RowShape(const Shape& stacked) {
    return Shape(std::vector<int64_t>(stacked.dims().begin() + 1, stacked.dims().end()));
  }

  KernelContext& ctx_;
  int first_;
  int64_t rows_;
  std::vector<std::vector<Tensor>> kept_;  // by scan output, while rows_ < 0
};

Status WhileKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond, ctx.attrs().GetGraph("cond"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, ctx.attrs().GetGraph("body"));
  KILN_ASSIGN_OR_RETURN(int64_t max_iterations, ctx.attrs().GetInt("max_iterations"));
  KILN_ASSIGN_OR_RETURN(int64_t scan_rows, ctx.attrs().GetInt("scan_rows"));
  std::vector<Tensor> vars;
  for (int i = 0; i < ctx.num_inputs(); ++i) vars.push_back(ctx.input(i));
  const size_t n = vars.size();
  if (ctx.num_outputs() < ctx.num_inputs())
    return ctx.Fail("has ", ctx.num_outputs(), " outputs for ", n, " loop variables");
  KILN_ASSIGN_OR_RETURN(BodyPlan cond_plan, BodyPlan::Make(*cond));
  KILN_ASSIGN_OR_RETURN(BodyPlan body_plan, BodyPlan::Make(*body));
  body_plan.KeepArguments(body_plan.PassesThrough());
  ScanStacks scans(ctx, ctx.num_inputs(), scan_rows);
  const int num_scans = ctx.num_outputs() - ctx.num_inputs();
  const int64_t limit = LoopIterationLimit();
  for (int64_t t = 0; max_iterations < 0 || t < max_iterations; ++t) {
    if (limit >= 0 && t >= limit)
      return ctx.Fail("ran ", limit, " iterations, the limit KILN_MAX_LOOP_ITERATIONS sets");
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> go, cond_plan.Run(vars, ctx));
    KILN_ASSIGN_OR_RETURN(bool again, Condition(go.at(0), ctx));
    if (!again) break;
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> next, body_plan.Run(vars, ctx));
    if (next.size() != n + static_cast<size_t>(num_scans))
      return ctx.Fail("its body gives ", next.size(), " results for ", n, " loop variables and ",
                      num_scans, " scan outputs");
    for (size_t i = 0; i < n; ++i)
      if (next[i].dtype() != vars[i].dtype() || next[i].rank() != vars[i].rank())
        return ctx.Fail("iteration ", t, " turned loop variable ", i, " from ", vars[i].Summary(0),
                        " into ", next[i].Summary(0));
    for (int k = 0; k < num_scans; ++k) KILN_RETURN_IF_ERROR(scans.Add(k, t, next[n + k]));
    next.resize(n);
    vars = std::move(next);
  }
  KILN_RETURN_IF_ERROR(scans.Finish());
  for (size_t i = 0; i < n; ++i) ctx.set_output(static_cast<int>(i), std::move(vars[i]));
  return OkStatus();
}

}  // namespace

void RegisterControlKernels(KernelRegistry& r) {
  r.Register("If", IfKernel);
  r.Register("While", WhileKernel);
}

}  // namespace kiln::reference
