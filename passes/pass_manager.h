// The pass manager: every pass by its kebab-case name, the default pipeline, and running a list of
// passes on a graph (what `kiln opt` does).
//
// RunPasses verifies the graph before the first pass and after every pass, always (it is cheap,
// and it fills the output types the next pass reads); a pass that leaves an invalid graph is a
// kiln bug, reported as kInternal naming the pass. With a dump directory (PassOptions::dump_dir,
// by default $KILN_DUMP_DIR) it writes the graph's text form there before the first pass
// (00-input.kgraph.txt) and after each one (NN-<pass>.kgraph.txt, NN from 01), so any change can
// be traced. With $KILN_DEBUG >= 1 it prints one line per pass to stderr: whether it changed
// the graph and the node count. Every name is checked before any pass runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/precision.h"
#include "passes/constant_fold.h"
#include "passes/pass.h"

namespace kiln {

struct PassOptions {
  // Computes constant-fold's values; without one, constant-fold fails with a clear error.
  ConstantEvaluator evaluate;
  // Where to dump the graph after each pass; empty: $KILN_DUMP_DIR, or no dumps when unset.
  std::string dump_dir;
  // What mixed-precision computes in, and its list changes (default: bf16, the default lists).
  PrecisionPolicy precision = {.compute = bf16};
};

struct PassInfo {
  std::string name;
  std::string summary;  // one line, for kiln opt --help
  // The graph computes the same values, bit for bit, after the pass (mixed-precision: not).
  bool exact = true;
};

// Every pass, in a fixed order.
const std::vector<PassInfo>& AvailablePasses();
// "cse, dce, ...": the names of AvailablePasses(), for messages.
std::string AvailablePassNames();
// The passes `kiln opt` runs by default, in order.
const std::vector<std::string>& DefaultPipeline();

// A new pass by name; kNotFound listing the available passes for an unknown name.
Result<std::unique_ptr<Pass>> CreatePass(const std::string& name, const PassOptions& options = {});

struct PassRun {
  std::string pass;
  bool changed = false;
  size_t nodes = 0;  // after the pass
};

// Runs the named passes in order (see above); on success returns what each one did.
Result<std::vector<PassRun>> RunPasses(Graph& graph, const std::vector<std::string>& names,
                                       const PassOptions& options = {});
// The same with passes already made (tests use it to run passes the registry does not know).
Result<std::vector<PassRun>> RunPassList(Graph& graph,
                                         const std::vector<std::unique_ptr<Pass>>& passes,
                                         const PassOptions& options = {});

}  // namespace kiln
