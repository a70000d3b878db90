#include "tools/lib/gradient_check.h"

#include <algorithm>
#include <cmath>

#include "ir/ops/reduce.h"
#include "passes/autodiff.h"
#include "passes/promote_f64.h"

namespace kiln {

Result<std::vector<GradCheckResult>> CheckGradients(const Graph& graph, const std::string& of,
                                                    const std::vector<std::string>& wrt,
                                                    const FeedList& feeds,
                                                    const GradCheckOptions& options) {
  KILN_ASSIGN_OR_RETURN(Graph promoted, PromoteFloatsToF64(graph));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<GraphBuilder> g,
                        GraphBuilder::FromGraph(std::move(promoted)));
  KILN_ASSIGN_OR_RETURN(Value y, g->Find(of));
  if (!IsFloat(y.dtype()))
    return MakeError(ErrorCode::kInvalidArgument, "'", of, "' has dtype ", DTypeName(y.dtype()),
                     "; only float tensors have gradients");
  if (y.rank() != 0) {
    if (!options.sum_of)
      return MakeError(ErrorCode::kInvalidArgument, "'", of, "' has shape ", y.shape().ToString(),
                       ", not a scalar; differentiate its sum instead (--grad-of-sum)");
    y = Sum(y);
  }
  std::vector<Value> xs;
  for (const std::string& name : wrt) {
    KILN_ASSIGN_OR_RETURN(Value x, g->Find(name));
    if (!IsFloat(x.dtype()))
      return MakeError(ErrorCode::kInvalidArgument, "cannot differentiate with respect to '", name,
                       "': it has dtype ", DTypeName(x.dtype()));
    xs.push_back(x);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value> dxs, Gradients({y}, xs));
  std::vector<TensorName> fetches = {y};
  for (const Value& v : dxs) fetches.emplace_back(v);
  for (const Value& v : xs) fetches.emplace_back(v);
  KILN_ASSIGN_OR_RETURN(Graph built, g->Build());
  Session session(std::move(built));

  FeedList f64_feeds;
  for (const auto& [name, t] : feeds)
    f64_feeds.emplace_back(name, IsFloat(t.dtype()) ? t.CastTo(f64) : t);
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> base, session.Run(f64_feeds, fetches));

  std::vector<GradCheckResult> results;
  for (size_t k = 0; k < xs.size(); ++k) {
    GradCheckResult r;
    r.wrt = wrt[k];
    r.type = xs[k].type();
    r.symbolic = base[1 + k];
    const Tensor& x0 = base[1 + xs.size() + k];
    r.numeric = Tensor(f64, x0.shape());
    int64_t n = x0.num_elements();
    int64_t stride = std::max<int64_t>(1, n / std::max<int64_t>(1, options.max_elements));
    for (int64_t i = 0; i < n; i += stride) {
      double values[2];
      for (int side = 0; side < 2; ++side) {
        Tensor x = x0.Clone();
        x.SetDouble(i, x0.GetDouble(i) + (side ? -options.step : options.step));
        FeedList perturbed;
        for (const auto& feed : f64_feeds)
          if (feed.first.str() != xs[k].name() && feed.first.str() != wrt[k])
            perturbed.push_back(feed);
        perturbed.emplace_back(xs[k], x);
        KILN_ASSIGN_OR_RETURN(std::vector<Tensor> out, session.Run(perturbed, {y}));
        values[side] = out[0].GetDouble(0);
      }
      double numeric = (values[0] - values[1]) / (2 * options.step);
      double symbolic = r.symbolic.GetDouble(i);
      r.numeric.SetDouble(i, numeric);
      double abs_error = std::abs(symbolic - numeric);
      if (std::isnan(symbolic) != std::isnan(numeric)) abs_error = INFINITY;
      r.max_abs_error = std::max(r.max_abs_error, abs_error);
      r.max_rel_error = std::max(r.max_rel_error, abs_error / std::max(1.0, std::abs(numeric)));
      ++r.checked;
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace kiln
