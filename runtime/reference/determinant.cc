// The reference kernels of Det and DetGrad (ir/ops/determinant.h), in float64.
#include "ir/ops/determinant.h"

#include <cmath>
#include <utility>
#include <vector>

#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

using Matrix = std::vector<double>;  // m x m, row-major

// Factors `a` in place into LU with partial pivoting; returns the determinant (0 when a pivot
// is exactly zero). `permutation` (when given) receives the row order.
double LuDeterminant(Matrix& a, int64_t m, std::vector<int64_t>* permutation = nullptr) {
  std::vector<int64_t> rows(m);
  for (int64_t i = 0; i < m; ++i) rows[i] = i;
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::abs(a[i * m + k]) > std::abs(a[pivot * m + k])) pivot = i;
    if (a[pivot * m + k] == 0) return 0;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
      std::swap(rows[k], rows[pivot]);
      det = -det;
    }
    det *= a[k * m + k];
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] /= a[k * m + k];
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  if (permutation != nullptr) *permutation = std::move(rows);
  return det;
}

Matrix MatrixAt(const Tensor& x, int64_t index, int64_t m) {
  Matrix a(m * m);
  for (int64_t i = 0; i < m * m; ++i) a[i] = x.GetDouble(index * m * m + i);
  return a;
}

// The cofactor matrix of `x` (m x m): det * inverse^T when the LU factorization has no zero
// pivot, else each entry from its minor.
Matrix Cofactors(const Matrix& x, int64_t m) {
  Matrix c(m * m);
  if (m == 1) {
    c[0] = 1;
    return c;
  }
  Matrix lu = x;
  std::vector<int64_t> rows;
  const double det = LuDeterminant(lu, m, &rows);
  if (det != 0) {
    // Column j of the inverse solves LU z = P e_j; cofactor (j, i) = det * inverse (i, j).
    Matrix z(m);
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t i = 0; i < m; ++i) z[i] = rows[i] == j ? 1 : 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < i; ++k) z[i] -= lu[i * m + k] * z[k];
      for (int64_t i = m - 1; i >= 0; --i) {
        for (int64_t k = i + 1; k < m; ++k) z[i] -= lu[i * m + k] * z[k];
        z[i] /= lu[i * m + i];
      }
      for (int64_t i = 0; i < m; ++i) c[j * m + i] = det * z[i];
    }
    return c;
  }
  Matrix minor((m - 1) * (m - 1));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t s = 0; s < m; ++s) {
      int64_t at = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j)
          if (i != r && j != s) minor[at++] = x[i * m + j];
      c[r * m + s] = ((r + s) % 2 ? -1 : 1) * LuDeterminant(minor, m - 1);
    }
  return c;
}

int64_t Order(const Tensor& x) { return x.shape()[x.rank() - 1]; }

Status DetKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t m = Order(x);
  Tensor& y = ctx.output(0);
  for (int64_t b = 0; b < y.num_elements(); ++b) {
    Matrix a = MatrixAt(x, b, m);
    y.SetDouble(b, LuDeterminant(a, m));
  }
  return OkStatus();
}

Status DetGradKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ddet = ctx.input(1);
  const int64_t m = Order(x);
  Tensor& dx = ctx.output(0);
  for (int64_t b = 0; b < ddet.num_elements(); ++b) {
    const Matrix c = Cofactors(MatrixAt(x, b, m), m);
    const double g = ddet.GetDouble(b);
    for (int64_t i = 0; i < m * m; ++i) dx.SetDouble(b * m * m + i, g * c[i]);
  }
  return OkStatus();
}

}  // namespace

void RegisterDeterminantKernels(KernelRegistry& r) {
  r.Register("Det", DetKernel);
  r.Register("DetGrad", DetGradKernel);
}

}  // namespace kiln::reference
