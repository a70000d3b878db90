// ONNX Einsum (explicit "ij,jk->ik" or implicit "ij,jk" equations), composed of kiln ops: every
// operand's dims are transposed into one order of all subscripts (the output's first, then the
// summed ones in order of appearance) and unsqueezed to that full rank, the operands are
// multiplied (broadcasting) and the summed subscripts reduced. Exact for any number of operands,
// at the cost of materializing the full product (no contraction into MatMul yet). An ellipsis
// ("...") stands for the operand's leading dims, aligned from the right across operands (they
// broadcast, as numpy's); in an implicit equation they lead the output. A subscript repeated
// within one operand takes that operand's diagonal (a Gather of the flattened pair of dims, whose
// length must be known at import).
#include <algorithm>
#include <string>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {
namespace {

bool IsSubscript(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The diagonal of x over its dims p < q (of equal length, known): x with dim q removed and dim
// p's subscript moved last, as `term` says it (updated in place).
Result<Value> Diagonal(const OnnxNode& n, Value x, std::string& term, size_t p, size_t q) {
  const int64_t d = x.shape()[static_cast<int>(p)], e = x.shape()[static_cast<int>(q)];
  if (d < 0 || e < 0) return n.NotKnownYet("a diagonal needs its dims known");
  if (d != e)
    return n.Fail("subscript '", std::string(1, term[p]),
                  "' takes a diagonal over dims of lengths ", d, " and ", e);
  std::vector<int64_t> perm;
  std::string rest;
  for (size_t i = 0; i < term.size(); ++i)
    if (i != p && i != q) {
      perm.push_back(static_cast<int64_t>(i));
      rest += term[i];
    }
  perm.push_back(static_cast<int64_t>(p));
  perm.push_back(static_cast<int64_t>(q));
  std::vector<int64_t> flat(perm.size() - 1, 0);
  flat.back() = d * d;
  KILN_ASSIGN_OR_RETURN(Tensor at, NewTensor(n, i64, Shape{d}));
  for (int64_t i = 0; i < d; ++i) at.data<int64_t>()[i] = i * (d + 1);
  Value diagonal = Gather(Reshape(Transpose(x, perm), flat), n.g().Constant(at),
                          static_cast<int64_t>(perm.size()) - 2);
  term = rest + term[p];
  return diagonal;
}

Status ConvertEinsum(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(std::string equation, n.String("equation", ""));
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const std::string given_lhs = equation.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (size_t i = 0; i < given_lhs.size(); ++i) {
    const char c = given_lhs[i];
    if (c == ',') {
      terms.emplace_back();
    } else if (IsSubscript(c)) {
      terms.back() += c;
    } else if (given_lhs.compare(i, 3, "...") == 0 && terms.back().find('.') == std::string::npos) {
      terms.back() += '.';  // one ellipsis, expanded below
      i += 2;
    } else {
      return n.Fail("equation '", equation, "': unexpected character '", std::string(1, c), "'");
    }
  }
  if (static_cast<int>(terms.size()) != n.num_inputs())
    return n.Fail("equation '", equation, "' has ", terms.size(), " operands but the node has ",
                  n.num_inputs(), " inputs");
  // Each ellipsis becomes subscripts no operand uses: the last ones of a shared run, as its
  // operand has dims left over.
  std::string spare;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (equation.find(c) == std::string::npos) spare += c;
  for (char c = 'a'; c <= 'z'; ++c)
    if (equation.find(c) == std::string::npos) spare += c;
  std::vector<Value> inputs;
  size_t ellipsis = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(static_cast<int>(k)));
    inputs.push_back(x);
    if (terms[k].find('.') != std::string::npos) {
      const int64_t covered = x.rank() - static_cast<int64_t>(terms[k].size() - 1);
      if (covered < 0)
        return n.Fail("operand ", k, " has rank ", x.rank(), " but its subscripts are '", terms[k],
                      "'");
      ellipsis = std::max(ellipsis, static_cast<size_t>(covered));
    }
  }
  if (ellipsis > spare.size())
    return n.Unsupported("an ellipsis of ", ellipsis, " dims (", spare.size(), " letters left)");
  const std::string run = spare.substr(0, ellipsis);
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t dot = terms[k].find('.');
    if (dot == std::string::npos) continue;
    const size_t covered = static_cast<size_t>(inputs[k].rank()) - (terms[k].size() - 1);
    terms[k] = terms[k].substr(0, dot) + run.substr(ellipsis - covered) + terms[k].substr(dot + 1);
  }
  std::string lhs;
  for (const std::string& term : terms) lhs += term + ",";
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
    const size_t dots = output.find("...");
    if (dots != std::string::npos) output.replace(dots, 3, run);
    for (char c : output)
      if (!IsSubscript(c) || lhs.find(c) == std::string::npos ||
          std::count(output.begin(), output.end(), c) > 1)
        return n.Fail("equation '", equation, "': output subscript '", std::string(1, c),
                      "' is repeated or not in an operand");
  } else {  // implicit: the ellipsis, then the subscripts that appear once, in alphabetical order
    for (char c : lhs)
      if (IsSubscript(c) && run.find(c) == std::string::npos &&
          std::count(lhs.begin(), lhs.end(), c) == 1)
        output += c;
    std::sort(output.begin(), output.end());
    output = run + output;
  }
  // The order of all subscripts: the output's, then the summed ones as they first appear.
  std::string order = output;
  for (char c : lhs)
    if (IsSubscript(c) && order.find(c) == std::string::npos) order += c;
  Value product;
  for (size_t k = 0; k < terms.size(); ++k) {
    Value x = inputs[k];
    std::string& term = terms[k];
    if (static_cast<int>(term.size()) != x.rank())
      return n.Fail("operand ", k, " has rank ", x.rank(), " but its subscripts are '", term, "'");
    for (size_t p = 0; p < term.size(); ++p) {
      const size_t q = term.find(term[p], p + 1);
      if (q == std::string::npos) continue;
      KILN_ASSIGN_OR_RETURN(x, Diagonal(n, x, term, p, q));
      p = static_cast<size_t>(-1);  // the term changed: look again from its start
    }
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
