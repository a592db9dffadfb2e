// aiter.grouped_gemm and aiter.grouped_gemm_wgrad through their FFI handlers on the Host backend
// (no XLA, no GPU): forward, dgrad (transpose_w), wgrad and the fp8 block-scale forward against a
// float64 reference computed here from the group sizes (clamped by the op's rule), outputs
// poisoned first and the workspace filled with garbage (the schedule must not depend on it);
// every row tile; bad inputs and attributes through the decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gemm_ffi_testing.hpp"
#include "jax_aiter/ffi/grouped_gemm.hpp"
#include "jax_aiter/host_twins/grouped_gemm.hpp"
#include "jax_aiter/ops/grouped_gemm.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_grouped_gemm_cpu, ops::GroupedGemm, ja::runtime::Host);
JAX_AITER_DEFINE_HANDLER(test_grouped_wgrad_cpu, ops::GroupedGemmWgrad, ja::runtime::Host);

namespace {

using ja::gemm_testing::Fails;
using ja::gemm_testing::Mismatches;

// [first, end) rows of each group: sizes clamped at 0, each group cut at M.
std::vector<std::pair<int64_t, int64_t>> spans(const std::vector<int32_t>& sizes, int64_t m) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t row = 0;
  for (int32_t s : sizes) {
    const int64_t take = std::min<int64_t>(std::max<int32_t>(s, 0), m - row);
    out.push_back({row, row + take});
    row += take;
  }
  return out;
}

Array group_sizes(const std::vector<int32_t>& sizes) {
  Array a(DType::kI32, {static_cast<int64_t>(sizes.size())});
  std::memcpy(a.data(), sizes.data(), sizes.size() * 4);
  return a;
}

double u_of(DType t) {
  return t == DType::kF32 ? 0x1.0p-24 : t == DType::kF16 ? 0x1.0p-11 : 0x1.0p-8;
}

// One forward or dgrad call: x [M, depth], w [G, N, K], out [M, cols].
struct RowsCall {
  int64_t m, n, k;
  std::vector<int32_t> sizes;
  bool transpose_w;
  DType in, out_type;
  Array x, w, gs, out, workspace;

  int64_t cols() const { return transpose_w ? k : n; }
  int64_t depth() const { return transpose_w ? n : k; }

  static int64_t workspace_size(int64_t m, int64_t g) {
    ops::GroupedGemmParams p;
    p.x = ops::Tensor::over(nullptr, DType::kBF16, {m, 1});
    p.w = ops::Tensor::over(nullptr, DType::kBF16, {g, 1, 1});
    return ops::GroupedGemm::workspace_bytes(p);
  }

  RowsCall(int64_t m_, int64_t n_, int64_t k_, std::vector<int32_t> sizes_, bool transpose,
           DType in_, DType out_, uint64_t seed)
      : m(m_),
        n(n_),
        k(k_),
        sizes(std::move(sizes_)),
        transpose_w(transpose),
        in(in_),
        out_type(out_),
        x(in_, {m_, transpose ? n_ : k_}),
        w(in_, {static_cast<int64_t>(sizes.size()), n_, k_}),
        gs(group_sizes(sizes)),
        out(out_, {m_, transpose ? k_ : n_}),
        workspace(DType::kU8, {workspace_size(m_, static_cast<int64_t>(sizes.size()))}) {
    fake::Rng rng(seed);
    fake::fill(x, rng, -1, 1);
    fake::fill(w, rng, -1, 1);
    out.poison();
    std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);
  }

  fake::CallResult call(std::string_view tier = "auto") {
    fake::CallFrame f;
    fake::add_arg(f, x);
    fake::add_arg(f, w);
    fake::add_arg(f, gs);
    fake::add_absent(f);
    fake::add_absent(f);
    fake::add_ret(f, out);
    fake::add_ret(f, workspace);
    if (transpose_w) f.attr("transpose_w", true);
    f.string_attr("tier", std::string(tier));
    return fake::call(test_grouped_gemm_cpu, f);
  }

  // |out - ref| <= u_out |ref| + 16 u_f32 sqrt(depth) scale; exact zeros past the groups.
  ::testing::AssertionResult check() const {
    Mismatches bad;
    std::vector<int64_t> group_of(m, -1);
    const auto s = spans(sizes, m);
    for (size_t g = 0; g < s.size(); ++g) {
      for (int64_t r = s[g].first; r < s[g].second; ++r) group_of[r] = static_cast<int64_t>(g);
    }
    const int64_t d = depth(), c_count = cols();
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < c_count; ++c) {
        double ref = 0, scale = 0;
        if (group_of[r] >= 0) {
          for (int64_t j = 0; j < d; ++j) {
            const int64_t wi =
                transpose_w ? (group_of[r] * n + j) * k + c : (group_of[r] * n + c) * k + j;
            const double t = x.at(r * d + j) * w.at(wi);
            ref += t;
            scale += std::abs(t);
          }
        }
        const double bound =
            u_of(out_type) * std::abs(ref) + 16 * 0x1.0p-24 * std::sqrt(double(d)) * scale;
        bad.expect_near(r, c, out.at(r * c_count + c), ref, bound);
      }
    }
    return bad.result(m * c_count);
  }
};

TEST(GroupedGemmHandler, ForwardAndDgradEveryTile) {
  struct Case {
    int64_t m, n, k;
    std::vector<int32_t> sizes;
  };
  const std::vector<Case> cases = {
      {300, 64, 128, {300}},                // G = 1, t128
      {300, 129, 67, {100, 0, 150, 20}},    // t64, odd N and K, sum < M
      {257, 100, 130, {0, 100, 0, 57, 0}},  // t16, empty first and last groups
      {200, 64, 64, {-5, 150, 100, 30}},    // negative size, a group past M, one left without rows
      {70, 48, 40, {0, 0, 0}},              // every group empty: all zeros
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    for (bool transpose : {false, true}) {
      for (auto [in, out] : {std::pair{DType::kBF16, DType::kBF16}, {DType::kF16, DType::kF32}}) {
        RowsCall call(c.m, c.n, c.k, c.sizes, transpose, in, out, seed++);
        const fake::CallResult r = call.call();
        ASSERT_TRUE(r.ok()) << r.message;
        EXPECT_TRUE(call.check()) << c.m << "x" << c.n << "x" << c.k << " G=" << c.sizes.size()
                                  << (transpose ? " dgrad " : " forward ") << ja::name(in);
      }
    }
  }
}

// The schedule is rebuilt every call from group_sizes: new sizes through the same buffers.
TEST(GroupedGemmHandler, NewSizesEveryCall) {
  RowsCall c(256, 64, 64, {128, 128}, false, DType::kBF16, DType::kF32, 7);
  ASSERT_TRUE(c.call().ok());
  EXPECT_TRUE(c.check());
  for (const std::vector<int32_t>& sizes : {std::vector<int32_t>{0, 256}, {10, 5}, {256, 0}}) {
    c.sizes = sizes;
    std::memcpy(c.gs.data(), sizes.data(), 8);
    c.out.poison();
    ASSERT_TRUE(c.call().ok());
    EXPECT_TRUE(c.check()) << sizes[0] << "," << sizes[1];
  }
}

// ---- wgrad -------------------------------------------------------------------------------------

struct WgradCall {
  int64_t m, n, k;
  std::vector<int32_t> sizes;
  DType in, out_type;
  Array dy, x, gs, dw, workspace;

  WgradCall(int64_t m_, int64_t n_, int64_t k_, std::vector<int32_t> sizes_, DType in_, DType out_,
            uint64_t seed)
      : m(m_),
        n(n_),
        k(k_),
        sizes(std::move(sizes_)),
        in(in_),
        out_type(out_),
        dy(in_, {m_, n_}),
        x(in_, {m_, k_}),
        gs(group_sizes(sizes)),
        dw(out_, {static_cast<int64_t>(sizes.size()), n_, k_}),
        workspace(DType::kU8,
                  {ops::grouped_schedule_bytes(static_cast<int64_t>(sizes.size()), 0)}) {
    fake::Rng rng(seed);
    fake::fill(dy, rng, -1, 1);
    fake::fill(x, rng, -1, 1);
    dw.poison();
    std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);
  }

  fake::CallResult call() {
    fake::CallFrame f;
    fake::add_arg(f, dy);
    fake::add_arg(f, x);
    fake::add_arg(f, gs);
    fake::add_ret(f, dw);
    fake::add_ret(f, workspace);
    f.string_attr("tier", "auto");
    return fake::call(test_grouped_wgrad_cpu, f);
  }

  ::testing::AssertionResult check() const {
    Mismatches bad;
    const auto s = spans(sizes, m);
    for (size_t g = 0; g < s.size(); ++g) {
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < k; ++c) {
          double ref = 0, scale = 0;
          for (int64_t row = s[g].first; row < s[g].second; ++row) {
            const double t = dy.at(row * n + r) * x.at(row * k + c);
            ref += t;
            scale += std::abs(t);
          }
          const double rows = double(s[g].second - s[g].first);
          const double bound =
              u_of(out_type) * std::abs(ref) + 16 * 0x1.0p-24 * std::sqrt(rows) * scale;
          bad.expect_near(static_cast<int64_t>(g) * n + r, c,
                          dw.at((static_cast<int64_t>(g) * n + r) * k + c), ref, bound);
        }
      }
    }
    return bad.result(static_cast<int64_t>(s.size()) * n * k);
  }
};

TEST(GroupedGemmHandler, WgradEmptyGroupsAreZeros) {
  uint64_t seed = 50;
  for (const auto& [m, n, k, sizes] :
       {std::tuple<int64_t, int64_t, int64_t, std::vector<int32_t>>{300, 64, 128, {300}},
        {300, 130, 67, {100, 0, 150, 20}},
        {200, 200, 64, {-5, 150, 100, 30}},
        {50, 16, 24, {0, 0}}}) {
    for (auto [in, out] : {std::pair{DType::kBF16, DType::kBF16}, {DType::kF16, DType::kF32}}) {
      WgradCall c(m, n, k, sizes, in, out, seed++);
      const fake::CallResult r = c.call();
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_TRUE(c.check()) << m << "x" << n << "x" << k << " G=" << sizes.size();
    }
  }
}

// ---- fp8 ---------------------------------------------------------------------------------------

TEST(GroupedGemmHandler, Fp8ForwardBothFormats) {
  for (DType fp8 : {DType::kF8E4M3FN, DType::kF8E4M3FNUZ}) {
    for (const auto& [m, n, k, sizes] :
         {std::tuple<int64_t, int64_t, int64_t, std::vector<int32_t>>{300, 256, 256, {300}},
          {257, 200, 384, {0, 100, 0, 57, 50}}}) {
      const int64_t g = static_cast<int64_t>(sizes.size()), kb = k / 128, nb = (n + 127) / 128;
      Array x(fp8, {m, k}), w(fp8, {g, n, k}), xs(DType::kF32, {m, kb}),
          ws(DType::kF32, {g, nb, kb}), gs = group_sizes(sizes), out(DType::kBF16, {m, n}),
                                        workspace(DType::kU8, {RowsCall::workspace_size(m, g)});
      fake::Rng rng(static_cast<uint64_t>(m + n + k));
      const ja::MiniFloat& f = *ja::format_of(fp8);
      for (Array* a : {&x, &w}) {
        for (auto& b : a->bytes) b = static_cast<unsigned char>(ja::encode(f, rng.uniform(-3, 3)));
      }
      fake::fill(xs, rng, 1e-2, 1);
      fake::fill(ws, rng, 1e-2, 1);
      out.poison();
      std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);
      fake::CallFrame frame;
      for (Array* a : {&x, &w, &gs, &xs, &ws}) fake::add_arg(frame, *a);
      fake::add_ret(frame, out);
      fake::add_ret(frame, workspace);
      const fake::CallResult r = fake::call(test_grouped_gemm_cpu, frame);
      ASSERT_TRUE(r.ok()) << r.message;
      Mismatches bad;
      const auto s = spans(sizes, m);
      for (int64_t row = 0; row < m; ++row) {
        int64_t grp = -1;
        for (size_t i = 0; i < s.size(); ++i) {
          if (row >= s[i].first && row < s[i].second) grp = static_cast<int64_t>(i);
        }
        for (int64_t c = 0; c < n; ++c) {
          double ref = 0, scale = 0;
          for (int64_t b = 0; grp >= 0 && b < kb; ++b) {
            double part = 0, mag = 0;
            for (int64_t kk = b * 128; kk < (b + 1) * 128; ++kk) {
              const double t = ja::decode(f, x.bytes[row * k + kk]) *
                               ja::decode(f, w.bytes[(grp * n + c) * k + kk]);
              part += t;
              mag += std::abs(t);
            }
            const double sc = xs.at(row * kb + b) * ws.at((grp * nb + c / 128) * kb + b);
            ref += part * sc;
            scale += mag * sc;
          }
          bad.expect_near(row, c, out.at(row * n + c), ref,
                          0x1.0p-8 * std::abs(ref) + 0x1.0p-16 * scale);
        }
      }
      EXPECT_TRUE(bad.result(m * n)) << ja::name(fp8) << " " << m << "x" << n << "x" << k;
    }
  }
}

// ---- errors ------------------------------------------------------------------------------------

TEST(GroupedGemmHandler, BadCallsAreNamed) {
  RowsCall c(64, 32, 32, {32, 32}, false, DType::kBF16, DType::kBF16, 3);
  {
    Array small(DType::kU8, {8});
    fake::CallFrame f;
    for (Array* a : {&c.x, &c.w, &c.gs}) fake::add_arg(f, *a);
    fake::add_absent(f);
    fake::add_absent(f);
    fake::add_ret(f, c.out);
    fake::add_ret(f, small);
    EXPECT_TRUE(Fails(fake::call(test_grouped_gemm_cpu, f),
                      {"aiter.grouped_gemm: operand workspace: expected u8[>= ", "got u8[8]"}));
  }
  {
    fake::CallFrame f;
    for (Array* a : {&c.x, &c.w, &c.gs}) fake::add_arg(f, *a);
    fake::add_absent(f);
    fake::add_absent(f);
    fake::add_ret(f, c.out);
    fake::add_ret(f, c.workspace);
    f.attr("transpose", true);
    EXPECT_TRUE(Fails(fake::call(test_grouped_gemm_cpu, f),
                      {"aiter.grouped_gemm: unknown attribute 'transpose'", "transpose_w"}));
    f.remove_attr("transpose");
    f.attr("transpose_w", int64_t{1});
    EXPECT_TRUE(Fails(fake::call(test_grouped_gemm_cpu, f),
                      {"aiter.grouped_gemm: attribute transpose_w: expected bool (PRED)"}));
  }
  {
    Array bad_gs(DType::kF32, {2});
    fake::CallFrame f;
    for (Array* a : {&c.x, &c.w, &bad_gs}) fake::add_arg(f, *a);
    fake::add_absent(f);
    fake::add_absent(f);
    fake::add_ret(f, c.out);
    fake::add_ret(f, c.workspace);
    EXPECT_TRUE(Fails(fake::call(test_grouped_gemm_cpu, f),
                      {"aiter.grouped_gemm: operand group_sizes: expected i32[2] (G from w), got "
                       "f32[2]"}));
  }
  {
    fake::CallFrame f;
    for (Array* a : {&c.x, &c.w, &c.gs}) fake::add_arg(f, *a);
    fake::add_ret(f, c.out);
    fake::add_ret(f, c.workspace);
    EXPECT_TRUE(Fails(fake::call(test_grouped_gemm_cpu, f),
                      {"aiter.grouped_gemm: expected 5 operands (x, w, group_sizes, x_scale, "
                       "w_scale), got 3"}));
  }
  WgradCall w(64, 32, 32, {32, 32}, DType::kBF16, DType::kF32, 4);
  {
    Array bad_dw(DType::kF32, {2, 32, 31});
    fake::CallFrame f;
    for (Array* a : {&w.dy, &w.x, &w.gs}) fake::add_arg(f, *a);
    fake::add_ret(f, bad_dw);
    fake::add_ret(f, w.workspace);
    EXPECT_TRUE(Fails(fake::call(test_grouped_wgrad_cpu, f),
                      {"aiter.grouped_gemm_wgrad: operand dw: expected bf16, f16 or f32[2,32,32]",
                       "got f32[2,32,31]"}));
  }
}

}  // namespace
