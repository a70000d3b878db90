// Op "Deferred": a node whose conversion into kiln ops waits until what it needs is known.
//
// A frontend that cannot convert a node yet (an ONNX Slice whose starts are a fed input, a Resize
// whose scales are computed at run time, an op that needs a dim a dynamic batch leaves unknown)
// records it as a Deferred node instead of refusing the model, and registers an expander that
// converts it once its inputs' types, and the values it needs, are known. The compilers expand
// such nodes for the plan's feed shapes and known values (compiler/deferred_expansion.h: a value
// fed at run time makes the cpu backend specialize on it, as for a fed Reshape target); the
// reference executor expands it on every run with every input's value.
//
// Attributes:
//   expander      the registered expander's name (e.g. "onnx")
//   source_node   what the expander converts, in its own words (ONNX: the NodeProto, text form)
//   version       the expander's version of it (ONNX: the model's opset)
//   output_dtypes, output_ranks, output_dims
//                 the output types the frontend declared (dims -1 where unknown; output_dims
//                 holds every output's dims in turn); an expansion must agree with them.
// Inputs may have any dtypes. The node has no gradient (differentiate the expanded graph).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

// What a Deferred node becomes: `graph` holds a Placeholder named DeferredInputName(i) for each
// input i of the node (its type), then the nodes that compute the outputs; `outputs[i]` is what
// output i of the node is.
struct DeferredExpansion {
  Graph graph;
  std::vector<TensorRef> outputs;
};

// The name of input i's Placeholder in an expansion ("input_<i>").
std::string DeferredInputName(int i);

// Converts `node` for inputs of `types`; `values[i]` is input i's value when known (else null).
// An expansion that needs a value or dim it was not given fails with kUnimplemented; one given
// values it cannot take fails with another code.
using DeferredExpander =
    std::function<Result<DeferredExpansion>(const Node& node, const std::vector<TensorType>& types,
                                            const std::vector<const Tensor*>& values)>;

// Registers (or replaces) the expander called `name`. Thread-safe.
void RegisterDeferredExpander(const std::string& name, DeferredExpander expander);

// Expands a Deferred node with its registered expander and checks the result against the
// declared output types. kUnimplemented when what it needs is not known (or the expander is not
// registered in this program: the frontend that made the node is not linked).
Result<DeferredExpansion> ExpandDeferred(const Node& node, const std::vector<TensorType>& types,
                                         const std::vector<const Tensor*>& values);

// The output types a Deferred node declares.
Result<std::vector<TensorType>> DeclaredDeferredTypes(const Node& node);

// Adds a Deferred node (see above); its outputs have `output_types`.
std::vector<Value> Deferred(GraphBuilder& g, const std::string& expander,
                            const std::string& source_node, int64_t version,
                            const std::vector<Value>& inputs,
                            const std::vector<TensorType>& output_types,
                            SourceLocation loc = SourceLocation::current());

}  // namespace kiln
