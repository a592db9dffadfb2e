// The float64 references of reference_testing.hpp, with Eigen: the only translation unit of the
// tests that includes it.
#include "reference_testing.hpp"

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace jax_aiter::reference {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Col = Eigen::VectorXd;
using View = Eigen::Map<const Mat>;
using Out = Eigen::Map<Mat>;

constexpr double kInf = std::numeric_limits<double>::infinity();

View view(const Matrix& m) { return View(m.v.data(), m.rows, m.cols); }
Out view(Matrix& m) { return Out(m.v.data(), m.rows, m.cols); }
Eigen::Map<const Col> view(const std::vector<double>& v) {
  return Eigen::Map<const Col>(v.data(), static_cast<Eigen::Index>(v.size()));
}
std::vector<double> vec(const Col& c) { return std::vector<double>(c.data(), c.data() + c.size()); }

void expect(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("reference: ") + what);
}
void expect_shape(const Matrix& m, int64_t rows, int64_t cols, const char* what) {
  expect(m.rows == rows && m.cols == cols && static_cast<int64_t>(m.v.size()) == rows * cols, what);
}

}  // namespace

Product matmul_nt(const Matrix& a, const Matrix& b) {
  expect_shape(a, a.rows, a.cols, "matmul_nt: a's size");
  expect_shape(b, b.rows, a.cols, "matmul_nt: b [N, K] with a's K");
  Product p{Matrix(a.rows, b.rows), Matrix(a.rows, b.rows)};
  view(p.value).noalias() = view(a) * view(b).transpose();
  view(p.magnitude).noalias() = view(a).cwiseAbs() * view(b).cwiseAbs().transpose();
  return p;
}

namespace {
// r = (mean_j x_j^2 + eps)^-1/2 per row.
Col inverse_rms(const View& x, double eps) {
  const double n = static_cast<double>(x.cols());
  return ((x.rowwise().squaredNorm() / n).array() + eps).sqrt().inverse().matrix();
}
}  // namespace

Matrix rms_norm(const Matrix& x, const std::vector<double>& gamma, double eps) {
  expect_shape(x, x.rows, static_cast<int64_t>(gamma.size()), "rms_norm: x [rows, n], gamma [n]");
  Matrix y(x.rows, x.cols);
  view(y).noalias() = inverse_rms(view(x), eps).asDiagonal() * view(x) * view(gamma).asDiagonal();
  return y;
}

RmsNormGrad rms_norm_grad(const Matrix& dy, const Matrix& x, const std::vector<double>& gamma,
                          double eps) {
  const int64_t n = static_cast<int64_t>(gamma.size());
  expect_shape(x, x.rows, n, "rms_norm_grad: x [rows, n], gamma [n]");
  expect_shape(dy, x.rows, n, "rms_norm_grad: dy [rows, n]");
  const View X = view(x), dY = view(dy);
  const auto g = view(gamma);
  const Col r = inverse_rms(X, eps);
  const Col dot = dY.cwiseProduct(X) * g;  // sum_j dy_j g_j x_j
  const Col c = (r.array().cube() * dot.array() / static_cast<double>(n)).matrix();
  RmsNormGrad out{Matrix(x.rows, n), {}};
  view(out.dx).noalias() = r.asDiagonal() * dY * g.asDiagonal();
  view(out.dx).noalias() -= c.asDiagonal() * X;
  out.dgamma = vec(dY.cwiseProduct(X).transpose() * r);
  return out;
}

}  // namespace jax_aiter::reference
