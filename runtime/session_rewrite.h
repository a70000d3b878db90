// The graph rewrites a Session applies once, before it plans anything: mixed precision
// (SessionOptions::precision) and numerics checks (SessionOptions::check_numerics). They are graph
// passes, which live above the runtime (passes/), so the runtime only declares this hook and the
// passes library registers it at start-up: programs get it by linking kiln_session_passes (as
// they get the JIT by linking kiln_jit). A Session asked for a rewrite that nobody registered
// fails with a clear error instead of silently running float32.
#pragma once

#include "ir/graph.h"
#include "ir/precision.h"

namespace kiln {

// Rewrites `graph` in place; it must stay valid (the Session verifies it again).
using SessionGraphRewrite = Status (*)(Graph& graph, const PrecisionPolicy& precision,
                                       bool check_numerics);

void RegisterSessionGraphRewrite(SessionGraphRewrite rewrite);
// nullptr when no program part registered one.
SessionGraphRewrite RegisteredSessionGraphRewrite();

}  // namespace kiln
