// Executable <-> ExecutableProto (proto/kiln.proto): how a compiled plan is written into a file.
// FromProto checks the structure it can check alone (kinds, library routines, dtypes, shapes,
// tensor names); a library step is written with its routine as a typed value (StepProto.Routine);
// cpu::Program::Load checks the rest (indices and offsets against the buffers and the arena).
#pragma once

#include "ir/status.h"
#include "proto/kiln.pb.h"
#include "runtime/executable.h"

namespace kiln {

proto::ExecutableProto ExecutableToProto(const Executable& exe);
Result<Executable> ExecutableFromProto(const proto::ExecutableProto& p);

}  // namespace kiln
