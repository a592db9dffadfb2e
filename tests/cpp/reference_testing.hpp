// Float64 references of the value tests, as plain linear algebra: the product of two matrices and
// RMSNorm with its gradients, each written from its mathematical definition. Eigen
// (Debian's libeigen3-dev) computes them in one translation unit, reference_testing.cpp, built
// once into the jax_aiter_test_reference library; this header does not include Eigen, so the tests
// that use it do not compile Eigen again, and nothing under include/ ever sees it.
//
// A kernel's own arithmetic order (its tiles, folds, splits, roundings) belongs to its host twin;
// a reference knows none of it. What a test reads from a twin or a handler is compared here with
// its own tolerance, usually scaled by the sums of |terms| these functions also return.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jax_aiter::reference {

// A dense, row-major float64 matrix.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;

  Matrix() = default;
  Matrix(int64_t r, int64_t c, double fill = 0.0)
      : rows(r), cols(c), v(static_cast<size_t>(r * c), fill) {}
  double& operator()(int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; }
  double operator()(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
  bool empty() const { return v.empty(); }
};

// The [rows, cols] matrix of at(r, c): how a test reads its own buffers, in their layout.
template <typename At>
Matrix tabulate(int64_t rows, int64_t cols, At&& at) {
  Matrix m(rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) m(r, c) = at(r, c);
  }
  return m;
}

// value = a b^T for a [M, K] and b [N, K] (both K-contiguous, as every GEMM here stores its
// weight), and magnitude = |a| |b|^T: the sum of |terms| behind each element, by which a test
// scales the error of a float32 accumulation (an element can be 0 while its terms are not).
struct Product {
  Matrix value, magnitude;
};
Product matmul_nt(const Matrix& a, const Matrix& b);

// RMSNorm over each row of x [rows, n]: y = x r g, r = (mean_j x_j^2 + eps)^-1/2, g [n].
Matrix rms_norm(const Matrix& x, const std::vector<double>& gamma, double eps);

// Its gradients for dy [rows, n]. With y_j = x_j r g_j, dr/dx_k = -r^3 x_k / n, so
//   dx_k     = r g_k dy_k - (r^3 x_k / n) sum_j dy_j g_j x_j
//   dgamma_j = sum over rows of dy_j x_j r
struct RmsNormGrad {
  Matrix dx;
  std::vector<double> dgamma;
};
RmsNormGrad rms_norm_grad(const Matrix& dy, const Matrix& x, const std::vector<double>& gamma,
                          double eps);

}  // namespace jax_aiter::reference
