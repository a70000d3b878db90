#include "runtime/distributed/collective_order.h"

#include <algorithm>
#include <map>
#include <string>

#include "ir/ops/collective.h"

namespace kiln {

void StartCollectivesEarly(std::vector<const Node*>& order) {
  std::vector<const Node*> collectives, rest;
  for (const Node* node : order) (IsCollective(*node) ? collectives : rest).push_back(node);
  if (collectives.empty()) return;
  // Each goes after the last of its producers that is in the order (in the order they had, so
  // that every rank starts them in the same order).
  for (const Node* c : collectives) {
    std::map<std::string, size_t> position;
    for (size_t i = 0; i < rest.size(); ++i) position[rest[i]->name] = i;
    size_t after = 0;  // insert before index `after`
    auto depends_on = [&](const std::string& name) {
      auto it = position.find(name);
      if (it != position.end()) after = std::max(after, it->second + 1);
    };
    for (const TensorRef& in : c->inputs) depends_on(in.node);
    for (const std::string& dep : c->control_inputs) depends_on(dep);
    // After the collectives placed before it too (their order is kept).
    for (size_t i = after; i < rest.size(); ++i)
      if (IsCollective(*rest[i])) after = i + 1;
    rest.insert(rest.begin() + static_cast<std::ptrdiff_t>(after), c);
  }
  order = std::move(rest);
}

}  // namespace kiln
