// Op family "determinant" (a part of "linalg"): Det and its gradient.
//
// Det(x [..., M, M]) -> [...]: the determinant of each square matrix of the stack (computed by LU
// factorization with partial pivoting in float64, then rounded to x's dtype). Floats.
//
// DetGrad(x [..., M, M], ddet [...]) -> dx [..., M, M]: the gradient of Det at x given the
// gradient `ddet` of its output: ddet times the cofactor matrix of each x (the transposed
// adjugate), which is det(x) * inverse(x)^T where x is invertible and is computed from the
// minors where it is not (a singular matrix still gets its exact gradient). Floats; not
// differentiable.
#pragma once

#include "ir/builder.h"

namespace kiln {

Value Det(At x);
Value DetGrad(At x, Value ddet);

}  // namespace kiln
