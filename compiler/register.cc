// Registers the JIT as the cpu backend's compiler when a program starts (see kiln_jit in
// compiler/CMakeLists.txt).
#include "compiler/cpu_compiler.h"

namespace {
const bool registered = (kiln::compiler::RegisterCpuCompiler(), true);
}  // namespace
