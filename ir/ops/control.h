// Op family "control": If and While, whose branches and bodies are graphs held in graph
// attributes, as TensorFlow's functional If/While (tf.cond, tf.while_loop) and ONNX's If/Loop.
//
// A body graph's inputs (Graph::inputs, Placeholders) are its arguments in order, its outputs
// (Graph::outputs) its results in order. It sees nothing of the graph around it: every value it
// needs comes in as an argument (Cond and WhileLoop refuse a value built outside the body).
//
//   If(cond, x...) -> y...      cond is a bool of one element; runs then_branch(x...) when it is
//                               true, else else_branch(x...). The branches take x's types and give
//                               results of the same dtypes and ranks; a dim where they differ is
//                               unknown (-1) until run time.
//   While(v...) -> v..., s...   while cond(v...) (a bool of one element) holds and fewer than
//                               max_iterations iterations ran (-1: no limit), v = body(v...). The
//                               body keeps the loop variables' dtypes and ranks; a dim it changes
//                               is unknown until run time. With scan_outputs = S the body gives S
//                               more results after the loop variables, and the While S more
//                               outputs after theirs: each such result of every iteration stacked
//                               along a new axis 0 (ONNX Loop's scan outputs, TensorFlow's
//                               TensorArray), row t written by iteration t, so a loop that records
//                               a value per iteration copies each value once. scan_rows = -1:
//                               as many rows as iterations ran (dim 0 unknown until run time);
//                               scan_rows >= 0: exactly that many rows (a static shape; rows no
//                               iteration wrote are zero, an iteration past the last row fails).
//                               A result must keep its dtype and shape from row to row.
//
// Gradients (the body differentiation comes from passes/autodiff.h):
//   If's is an If over its branches' gradients, each recomputing its branch's forward values.
//   While's runs the loop again, recording on entry to every iteration each loop variable the body
//   changes as one more scan output (memory grows with the trip count, each value copied once),
//   then a reverse While that walks the record backwards through the body's gradient, giving
//   iteration t row t of each float scan output's gradient (TensorFlow's approach, with the
//   forward loop recomputed instead of rewritten). Loop variables the body changes need shapes
//   that are known and that it keeps; those it passes through (weights) are not recorded.
// Variables inside bodies are not supported yet: pass weights in as arguments.
// Execution: both ops run through their reference kernels, which run each body as a plan of its
// own; on the cpu backend that plan is compiled once per shape and reused on every iteration
// (runtime/reference/kernel.h, RunState::bodies), elsewhere it is interpreted. The record of a loop
// without max_iterations has as many rows as the loop ran, known only at run time, so a training
// plan holding one runs on the reference executor for now.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace kiln {

// A body built by `fn` from arguments of `types` (Placeholders "arg_<i>"); its results become the
// outputs "result_<i>".
using BodyFn = std::function<std::vector<Value>(const std::vector<Value>& args)>;
Result<std::shared_ptr<const Graph>> BuildBody(const std::vector<TensorType>& types,
                                               const BodyFn& fn);

// tf.cond: then_branch(inputs) if pred else else_branch(inputs).
std::vector<Value> Cond(Value pred, const std::vector<Value>& inputs, const BodyFn& then_branch,
                        const BodyFn& else_branch, SourceLocation loc = SourceLocation::current());
// tf.while_loop: while cond(vars) and (max_iterations < 0 or fewer ran): vars = body(vars).
std::vector<Value> WhileLoop(const std::vector<Value>& loop_vars,
                             const std::function<Value(const std::vector<Value>&)>& cond,
                             const BodyFn& body, int64_t max_iterations = -1,
                             SourceLocation loc = SourceLocation::current());

// The ops from graphs already built.
std::vector<Value> If(Value cond, const std::vector<Value>& inputs,
                      std::shared_ptr<const Graph> then_branch,
                      std::shared_ptr<const Graph> else_branch,
                      SourceLocation loc = SourceLocation::current());
// The scan outputs of a While (see above): how many of the body's results are stacked, and how
// many rows each gets (-1: one per iteration run).
struct WhileScans {
  int outputs = 0;
  int64_t rows = -1;
};
// `recomputes`: the While node whose loop this one runs again, carrying more variables after the
// same ones and stacking more scan outputs after the same ones (a gradient's record): its first
// outputs are that node's loop variables, its first scan outputs that node's scan outputs, and
// simplify (passes/simplify.h) lets that node's readers read them instead, so the loop runs once.
std::vector<Value> While(const std::vector<Value>& loop_vars, std::shared_ptr<const Graph> cond,
                         std::shared_ptr<const Graph> body, int64_t max_iterations = -1,
                         SourceLocation loc = SourceLocation::current(),
                         const std::string& recomputes = "", WhileScans scans = {});

// `body`'s nodes added to `g` (named afresh), its arguments bound to `args`; its results.
Result<std::vector<Value>> CallBody(GraphBuilder& g, const Graph& body,
                                    const std::vector<Value>& args);

// The types of `body`'s results for arguments of `args`' types (which must fit the body's
// Placeholders: the same dtype and rank, equal dims where both are known).
Result<std::vector<TensorType>> InferBodyResults(const Graph& body,
                                                 const std::vector<TensorType>& args);

// How a body is differentiated, for If's gradient. Given a body and which of its arguments to
// differentiate, it returns a graph whose arguments are the body's, then one gradient per result
// of a float dtype (in order), and whose results are the gradients of the chosen arguments (in
// order). passes/autodiff.cc installs it (the IR cannot call passes/).
using BodyGradientFn = std::function<Result<std::shared_ptr<const Graph>>(
    const Graph& body, const std::vector<bool>& wrt)>;
void SetBodyGradientFn(BodyGradientFn fn);

}  // namespace kiln
