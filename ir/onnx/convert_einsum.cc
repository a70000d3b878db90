// ONNX Einsum (explicit "ij,jk->ik" or implicit "ij,jk" equations), composed of kiln ops: every
// operand's dims are transposed into one order of all subscripts (the output's first, then the
// summed ones in order of appearance) and unsqueezed to that full rank, the operands are
// multiplied (broadcasting) and the summed subscripts reduced. Exact for any number of operands,
// at the cost of materializing the full product (no contraction into MatMul yet). Not supported:
// ellipsis ("...") and a subscript repeated within one operand (diagonals).
#include <algorithm>
#include <string>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {
namespace {

bool IsSubscript(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

Status ConvertEinsum(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(std::string equation, n.String("equation", ""));
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  if (equation.find("...") != std::string::npos)
    return n.Unsupported("Einsum with an ellipsis ('...') is not supported");
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') {
      terms.emplace_back();
    } else if (IsSubscript(c)) {
      terms.back() += c;
    } else {
      return n.Fail("equation '", equation, "': unexpected character '", std::string(1, c), "'");
    }
  }
  if (static_cast<int>(terms.size()) != n.num_inputs())
    return n.Fail("equation '", equation, "' has ", terms.size(), " operands but the node has ",
                  n.num_inputs(), " inputs");
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
    for (char c : output)
      if (!IsSubscript(c) || lhs.find(c) == std::string::npos ||
          std::count(output.begin(), output.end(), c) > 1)
        return n.Fail("equation '", equation, "': output subscript '", std::string(1, c),
                      "' is repeated or not in an operand");
  } else {  // implicit: the subscripts that appear once, in alphabetical order
    for (char c : lhs)
      if (IsSubscript(c) && std::count(lhs.begin(), lhs.end(), c) == 1) output += c;
    std::sort(output.begin(), output.end());
  }
  // The order of all subscripts: the output's, then the summed ones as they first appear.
  std::string order = output;
  for (char c : lhs)
    if (IsSubscript(c) && order.find(c) == std::string::npos) order += c;
  Value product;
  for (size_t k = 0; k < terms.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(static_cast<int>(k)));
    const std::string& term = terms[k];
    if (static_cast<int>(term.size()) != x.rank())
      return n.Fail("operand ", k, " has rank ", x.rank(), " but its subscripts are '", term, "'");
    for (char c : term)
      if (std::count(term.begin(), term.end(), c) > 1)
        return n.Unsupported("Einsum with a repeated subscript in one operand ('", term,
                             "', a diagonal) is not supported");
    // x's dims sorted by their place in `order`, then size-1 dims for the subscripts it lacks.
    std::vector<int64_t> perm(term.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::sort(perm.begin(), perm.end(),
              [&](int64_t a, int64_t b) { return order.find(term[a]) < order.find(term[b]); });
    Value aligned = perm.size() > 1 ? Transpose(x, perm) : x;
    std::vector<int64_t> missing;
    for (size_t i = 0; i < order.size(); ++i)
      if (term.find(order[i]) == std::string::npos) missing.push_back(static_cast<int64_t>(i));
    if (!missing.empty()) aligned = Unsqueeze(aligned, missing);
    product = product.valid() ? Mul(product, aligned) : aligned;
  }
  std::vector<int64_t> summed;
  for (size_t i = output.size(); i < order.size(); ++i) summed.push_back(static_cast<int64_t>(i));
  n.SetOutput(0, summed.empty() ? product : Sum(product, summed));
  return OkStatus();
}

}  // namespace

void AddEinsumConverter(ConverterTable& t) { t["Einsum"] = ConvertEinsum; }

}  // namespace kiln::onnx_import
