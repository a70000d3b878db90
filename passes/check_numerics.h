// check-numerics: every float value a run computes passes through a CheckNumerics node
// (ir/ops/state.h), so the first inf or NaN fails the run with an error that names the node that
// produced it, its op, where it was built, the element and how many values are not finite.
//
// Checked: every float output of every node except Constants (a constant -inf, e.g. an attention
// mask, is intended) and CheckNumerics nodes themselves; fed Placeholders and Variables are
// checked too. Every reader of a checked tensor, and every graph output naming it, reads the
// check's output instead, so nothing runs on an unchecked value and graph outputs keep their
// names. Checks are named "<node>/check_numerics" ("_<port>" for ports other than 0). Running it
// again changes nothing. SessionOptions::check_numerics and `kiln run --check-numerics` apply it
// after any other rewrite (after mixed precision, so 16-bit values are checked as computed).
#pragma once

#include "passes/pass.h"

namespace kiln {

class CheckNumericsPass : public Pass {
 public:
  std::string name() const override { return "check-numerics"; }
  Result<bool> Run(Graph& graph) override;
};

}  // namespace kiln
