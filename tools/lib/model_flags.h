// The model a command works on, as its flags ask: kiln run, compile and bench load MODEL (.kgraph,
// .kgraph.txt or .onnx) and, with --inference, take the graph as it evaluates (passes/freeze.h
// ForInference: every BatchNorm and Dropout in inference mode, the variables still variables), so
// that a training graph's inference can run, be timed or be compiled without freezing a
// checkpoint into it.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "tools/flags.h"

namespace kiln::cli {

void DeclareModelFlags(Flags& flags);
Result<Graph> LoadModelAsFlagsSay(const Flags& flags, const std::string& path);

}  // namespace kiln::cli
