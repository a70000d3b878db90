// The initial value of a Variable from its attributes (initializer kind, parameters, seed).
// Deterministic: the same attributes give the same bits on every backend and machine.
#pragma once

#include "ir/attr.h"
#include "ir/tensor.h"

namespace kiln {

// `attrs` must carry the Variable schema's defaults (OpDef::WithDefaults).
Result<Tensor> MakeInitialValue(const AttrMap& attrs);

}  // namespace kiln
