#include "compiler/fusion.h"

#include <set>

namespace kiln::compiler {
namespace {

std::string Quote(const Node& node) { return node.op + " '" + node.name + "'"; }

// The graph with every cluster seen as one node, walked backwards from nodes to their producers.
class CondensedGraph {
 public:
  CondensedGraph(const RunPlan& plan, const FusionPlan& fusion) : plan_(plan), fusion_(fusion) {
    for (const Node* node : plan.nodes) nodes_[node->name] = node;
  }

  // Producers of `node` inside the plan (fed tensors have none), data inputs first, distinct.
  std::vector<const Node*> Producers(const Node& node) const {
    std::vector<const Node*> producers;
    auto add = [&](const std::string& name) {
      auto it = nodes_.find(name);
      if (it == nodes_.end()) return;
      for (const Node* p : producers)
        if (p == it->second) return;
      producers.push_back(it->second);
    };
    for (const TensorRef& in : node.inputs)
      if (!plan_.feeds.count(in)) add(in.node);
    for (const std::string& c : node.control_inputs) add(c);
    return producers;
  }

  // Whether any of `starts` reaches cluster `target` backwards, a cluster counting as one node
  // (reaching any member reaches all of its producers).
  const Node* FirstReaching(const std::vector<const Node*>& starts, int target) const {
    for (const Node* start : starts) {
      std::set<std::string> seen;
      std::set<int> seen_clusters;
      std::vector<const Node*> stack = {start};
      while (!stack.empty()) {
        const Node* n = stack.back();
        stack.pop_back();
        if (!seen.insert(n->name).second) continue;
        auto c = fusion_.cluster_of.find(n->name);
        if (c != fusion_.cluster_of.end()) {
          if (c->second == target) return start;
          if (!seen_clusters.insert(c->second).second) continue;
          for (const Node* member : fusion_.clusters[c->second].nodes)
            for (const Node* p : Producers(*member)) stack.push_back(p);
          continue;
        }
        for (const Node* p : Producers(*n)) stack.push_back(p);
      }
    }
    return nullptr;
  }

 private:
  const RunPlan& plan_;
  const FusionPlan& fusion_;
  std::map<std::string, const Node*> nodes_;
};

}  // namespace

FusionPlan FuseElementwise(const RunPlan& plan, const StaticInfo& info,
                           const std::function<bool(const Node&)>& fusible) {
  FusionPlan result;
  CondensedGraph graph(plan, result);
  for (const Node* node : plan.nodes) {
    if (!fusible(*node)) continue;
    std::vector<const Node*> producers = graph.Producers(*node);
    const Shape& shape = info.types.at(TensorRef{node->name, 0}).shape;
    std::string why_alone;
    int chosen = -1;
    for (const Node* p : producers) {
      auto c = result.cluster_of.find(p->name);
      if (c == result.cluster_of.end()) {
        why_alone += "; producer " + Quote(*p) + " is not elementwise";
        continue;
      }
      const Cluster& cluster = result.clusters[c->second];
      if (cluster.shape != shape) {
        why_alone += "; producer " + Quote(*p) + "'s cluster iterates over " +
                     cluster.shape.ToString() + ", this node over " + shape.ToString();
        continue;
      }
      // Joining is safe unless another producer outside the cluster depends on the cluster.
      std::vector<const Node*> outside;
      for (const Node* q : producers) {
        auto qc = result.cluster_of.find(q->name);
        if (qc == result.cluster_of.end() || qc->second != c->second) outside.push_back(q);
      }
      if (const Node* cycle = graph.FirstReaching(outside, c->second)) {
        why_alone += "; joining producer " + Quote(*p) + "'s cluster would make a cycle through " +
                     Quote(*cycle);
        continue;
      }
      chosen = c->second;
      result.decisions.push_back("fused " + Quote(*node) + " into cluster " +
                                 std::to_string(chosen) + " with its producer " + Quote(*p));
      break;
    }
    if (chosen < 0) {
      chosen = static_cast<int>(result.clusters.size());
      result.clusters.push_back(Cluster{shape, {}});
      result.decisions.push_back("cluster " + std::to_string(chosen) + " starts at " +
                                 Quote(*node) + " " + shape.ToString() +
                                 (why_alone.empty() ? std::string(": no producer in the plan")
                                                    : ": " + why_alone.substr(2)));
    }
    result.clusters[chosen].nodes.push_back(node);
    result.cluster_of[node->name] = chosen;
  }
  return result;
}

}  // namespace kiln::compiler
