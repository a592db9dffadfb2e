// The host twins of our portable attention kernels (host_twins/attention.hpp), called through the
// HostTwins registry by symbol with argument structs packed here by hand (the ABI under test) and
// the grids of kernels/shared/attention.h, against a float64 reference written here with plain
// loops (its own mask, ALiBi, dropout RNG and offset clamping; softmax with max subtraction in
// double). Outputs are poisoned (NaN bits) and fenced by guard bytes first: an unwritten element,
// a short grid's missing rows and a write out of bounds all fail. Tolerances are
// |got - ref| <= atol + rtol |ref| per dtype: rtol the output's rounding, atol a small fraction of
// the largest reference value (float32 accumulation).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "jax_aiter/host_twins/attention.hpp"
#include "jax_aiter/host_twins/attention_math.hpp"
#include "jax_aiter/kernels/attention.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace {

namespace ja = jax_aiter;
namespace kn = jax_aiter::kernels;
namespace ka = jax_aiter::kernels::attention;
namespace am = jax_aiter::host_twins::attn_math;
using ja::DType;

// ---- independent conversions, inputs, buffers ---------------------------------------------------

uint16_t to_bf16(double v) {  // through float, then nearest even on the 16 dropped bits
  const uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(v));
  if (std::isnan(v)) return 0x7FC0;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
double from_bf16(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }
uint16_t to_f16(double v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); }
double from_f16(uint16_t b) { return static_cast<double>(std::bit_cast<_Float16>(b)); }

class Rng {  // splitmix64
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53);
  }

 private:
  uint64_t s_;
};

constexpr int64_t kGuard = 32;  // elements of guard bytes on each side of every buffer

int64_t elem_size(DType t) {
  return t == DType::kF32 || t == DType::kI32 ? 4 : t == DType::kU8 ? 1 : 2;
}

// A bf16 / f16 / f32 / u8 buffer of n elements between two guard zones (0xA5 bytes). Outputs start
// as all-ones bytes: NaN in every float type.
struct Buf {
  DType t = DType::kF32;
  int64_t n = 0;
  std::vector<unsigned char> bytes;

  Buf() = default;
  Buf(DType t_, int64_t n_)
      : t(t_), n(n_), bytes(static_cast<size_t>((n_ + 2 * kGuard) * elem_size(t_)), 0xA5) {
    poison();
  }
  int64_t es() const { return elem_size(t); }
  void* data() { return bytes.data() + kGuard * es(); }
  uint32_t raw(int64_t i) const {
    uint32_t r = 0;
    std::memcpy(&r, bytes.data() + (kGuard + i) * es(), static_cast<size_t>(es()));
    return r;
  }
  double get(int64_t i) const {
    const uint32_t r = raw(i);
    switch (t) {
      case DType::kBF16: return from_bf16(static_cast<uint16_t>(r));
      case DType::kF16: return from_f16(static_cast<uint16_t>(r));
      case DType::kF32: return std::bit_cast<float>(r);
      default: return r;
    }
  }
  double set(int64_t i, double v) {  // rounds to the type; returns the value stored
    uint32_t r = 0;
    switch (t) {
      case DType::kBF16: r = to_bf16(v); break;
      case DType::kF16: r = to_f16(v); break;
      case DType::kF32: r = std::bit_cast<uint32_t>(static_cast<float>(v)); break;
      default: r = static_cast<uint32_t>(v); break;
    }
    std::memcpy(bytes.data() + (kGuard + i) * es(), &r, static_cast<size_t>(es()));
    return get(i);
  }
  void poison() { std::fill(bytes.begin() + kGuard * es(), bytes.end() - kGuard * es(), 0xFF); }
  bool poisoned(int64_t i) const {
    return raw(i) == (es() == 4 ? 0xFFFFFFFFu : es() == 2 ? 0xFFFFu : 0xFFu);
  }
  bool guards_intact() const {
    const auto g = static_cast<size_t>(kGuard * es());
    for (size_t i = 0; i < g; ++i) {
      if (bytes[i] != 0xA5 || bytes[bytes.size() - 1 - i] != 0xA5) return false;
    }
    return true;
  }
};

// ---- comparison
// -----------------------------------------------------------------------------------

// Reference values: NaN means "must stay poisoned (unwritten)", kSkip "not checked here".
constexpr double kSkip = std::numeric_limits<double>::max();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Tol {
  double atol_of_max;  // atol = atol_of_max * max |ref| over the checked finite values
  double rtol;
};
// Rounding to the output dtype bounds the relative error (half an ulp: 2^-8 bf16, 2^-11 f16); the
// float32 arithmetic before it adds far less than the atol.
Tol tol_for(DType t) {
  if (t == DType::kBF16) return {0x1p-12, 0x1p-8};
  if (t == DType::kF16) return {0x1p-15, 0x1p-11};
  return {2e-6, 2e-6};
}

double g_worst = 0;  // the largest |got - ref| / (atol + rtol |ref|) seen (printed at the end)

// atol = tol.atol_of_max * max(mag, max |ref|): mag is the largest sum of |terms| behind an element
// (0 when the caller has none), so a tensor of (near) zeros still gets float32's error budget.
::testing::AssertionResult close(const Buf& got, const std::vector<double>& ref, Tol tol,
                                 const std::string& what, double mag = 0) {
  if (static_cast<int64_t>(ref.size()) != got.n) {
    return ::testing::AssertionFailure()
           << what << ": reference of " << ref.size() << " elements for a buffer of " << got.n;
  }
  double scale = mag;
  for (double r : ref) {
    if (r != kSkip && std::isfinite(r)) scale = std::max(scale, std::abs(r));
  }
  const double atol = tol.atol_of_max * scale + 1e-30;
  int64_t bad = 0, checked = 0;
  std::string first;
  for (int64_t i = 0; i < got.n; ++i) {
    const double r = ref[static_cast<size_t>(i)];
    if (r == kSkip) continue;
    ++checked;
    bool ok;
    const double g = got.get(i);
    if (std::isnan(r)) {
      ok = got.poisoned(i);
    } else if (std::isinf(r)) {
      ok = g == r;
    } else {
      const double bound = atol + tol.rtol * std::abs(r);
      ok = std::abs(g - r) <= bound;
      if (ok) g_worst = std::max(g_worst, std::abs(g - r) / bound);
    }
    if (!ok && bad++ == 0) {
      first = "element " + std::to_string(i) + ": got " + std::to_string(g) +
              (got.poisoned(i) ? " (unwritten)" : "") + ", want " +
              (std::isnan(r) ? std::string("unwritten") : std::to_string(r));
    }
  }
  if (!got.guards_intact()) return ::testing::AssertionFailure() << what << ": wrote out of bounds";
  if (bad) {
    return ::testing::AssertionFailure()
           << what << ": " << bad << " of " << checked << " elements wrong, first " << first
           << " (atol " << atol << ", rtol " << tol.rtol << ")";
  }
  if (checked == 0) return ::testing::AssertionFailure() << what << ": nothing checked";
  return ::testing::AssertionSuccess();
}

struct Ref;
::testing::AssertionResult close(const Buf& got, const Ref& ref, Tol tol, const std::string& what);

// ---- the dropout RNG, written again from its definition
// ------------------------------------------

// Philox4x32-10 as Random123 defines it: ten rounds, the key bumped between rounds.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

uint32_t threshold_of(double p) {  // min(floor(p 2^32), 2^32 - 1)
  const double t = std::floor(p * 4294967296.0);
  return t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<uint32_t>(t);
}

// The design's rule: counter (i, j / 4, h, b), word j % 4, kept when >= threshold.
bool keep_rule(const uint32_t key[2], int64_t b, int64_t h, int64_t i, int64_t j, uint32_t thr) {
  const auto w = philox({static_cast<uint32_t>(i), static_cast<uint32_t>(j / 4),
                         static_cast<uint32_t>(h), static_cast<uint32_t>(b)},
                        {key[0], key[1]});
  return w[static_cast<size_t>(j % 4)] >= thr;
}

// ---- problems
// ------------------------------------------------------------------------------------

struct Config {
  DType dtype = DType::kBF16;
  int64_t batch = 2, sq = 64, sk = 64;  // batch mode
  // Varlen mode when cu_q is non-empty: the raw offsets, the rows of q / k and the maxima.
  std::vector<int> cu_q, cu_k;
  int64_t total_q = 0, total_k = 0, max_q = 0, max_k = 0;
  int64_t hq = 2, hk = 2, d = 64, dv = 64;
  int left = -1, right = -1;
  bool bias = false;
  DType bias_dtype = DType::kF32;
  std::array<bool, 4> bias_full{true, true, true, true};  // which of [b, hq, sq, sk] are full
  int alibi = 0;                                          // 0 none, 1 [hq], 2 [b, hq]
  double dropout = 0;
  int64_t in_pad = 0;  // extra NaN elements per row of q, k, v, dout (must never be read)
  int kernel_dim = 0;  // run the kernels of this bucket (0: the smallest that fits)
  uint64_t seed = 1;

  std::string name() const {
    char s[400];
    std::snprintf(s, sizeof s,
                  "%s %s sq %lld sk %lld hq %lld hk %lld d %lld dv %lld window (%d, %d) bias %d "
                  "[%d%d%d%d] alibi %d dropout %.2f pad %lld",
                  dtype == DType::kBF16 ? "bf16" : "f16", cu_q.empty() ? "batch" : "varlen",
                  static_cast<long long>(cu_q.empty() ? sq : max_q),
                  static_cast<long long>(cu_q.empty() ? sk : max_k), static_cast<long long>(hq),
                  static_cast<long long>(hk), static_cast<long long>(d), static_cast<long long>(dv),
                  left, right, bias ? static_cast<int>(bias_dtype) : -1, bias_full[0], bias_full[1],
                  bias_full[2], bias_full[3], alibi, dropout, static_cast<long long>(in_pad));
    return s;
  }
};

// Varlen offsets from per-sequence lengths (q, k).
Config with_lengths(Config c, const std::vector<std::pair<int, int>>& lens) {
  c.cu_q = {0};
  c.cu_k = {0};
  c.max_q = c.max_k = 1;
  for (auto [lq, lk] : lens) {
    c.cu_q.push_back(c.cu_q.back() + lq);
    c.cu_k.push_back(c.cu_k.back() + lk);
    c.max_q = std::max<int64_t>(c.max_q, lq);
    c.max_k = std::max<int64_t>(c.max_k, lk);
  }
  c.total_q = c.cu_q.back();
  c.total_k = c.cu_k.back();
  return c;
}

// [b, s, h, dim] (batch) or [total, h, dim] (varlen) with `pad` extra elements per row.
struct Layout {
  int64_t batch_stride = 0, seq_stride = 0, head_stride = 0;
};

// The softmax of one query row in double: P over the sequence's keys (0 where masked), lse.
struct RowSoftmax {
  std::vector<double> p;
  double lse = kInf;
};

struct Problem {
  Config c;
  mutable std::vector<RowSoftmax> cache;  // softmax_row's, by (b, h, i)
  mutable std::vector<char> cached;
  void clear_cache() { cached.clear(); }
  bool varlen = false;
  int64_t nseq = 0, SQ = 0, SK = 0, rows_q = 0, rows_k = 0;
  int64_t LQ = 0;                       // the longest query sequence (SQ or more in varlen mode)
  std::vector<int64_t> q0, k0, lq, lk;  // each sequence's first row and length (our reading)
  Layout lq_in, lk_in, lv_in, ldo_in, lo, ldq, ldk, ldv;
  Buf q, k, v, dout, bias, alibi;
  int64_t bias_dims[4] = {1, 1, 1, 1};
  std::vector<double> qd, kd, vd, dod;  // the inputs as doubles (same layout)
  uint32_t key[2] = {0x9E3779B9u, 0x7F4A7C15u};
  float scale = 1;
  uint32_t threshold = 0;
  float dropout_scale = 1;
  int D = 64, bucket = 0;

  explicit Problem(const Config& cfg) : c(cfg) {
    varlen = !c.cu_q.empty();
    if (varlen) {
      nseq = static_cast<int64_t>(c.cu_q.size()) - 1;
      SQ = c.max_q, SK = c.max_k, rows_q = c.total_q, rows_k = c.total_k;
      // Offsets clamped into [0, total], end >= start. The maxima only size the grids: a longer
      // sequence is computed whole.
      for (int64_t b = 0; b < nseq; ++b) {
        auto seq = [&](const std::vector<int>& cu, int64_t total, int64_t& start, int64_t& len) {
          start = std::min<int64_t>(std::max<int64_t>(cu[static_cast<size_t>(b)], 0), total);
          const int64_t end =
              std::min<int64_t>(std::max<int64_t>(cu[static_cast<size_t>(b + 1)], start), total);
          len = end - start;
        };
        int64_t s0, l0, s1, l1;
        seq(c.cu_q, c.total_q, s0, l0);
        seq(c.cu_k, c.total_k, s1, l1);
        q0.push_back(s0), lq.push_back(l0), k0.push_back(s1), lk.push_back(l1);
      }
    } else {
      nseq = c.batch, SQ = c.sq, SK = c.sk, rows_q = c.batch * c.sq, rows_k = c.batch * c.sk;
      for (int64_t b = 0; b < nseq; ++b)
        q0.push_back(0), lq.push_back(SQ), k0.push_back(0), lk.push_back(SK);
    }
    LQ = std::max(SQ, lq.empty() ? 0 : *std::max_element(lq.begin(), lq.end()));
    auto layout = [&](int64_t heads, int64_t dim, int64_t pad, int64_t seqlen) {
      Layout l;
      l.head_stride = dim;
      l.seq_stride = heads * dim + pad;
      l.batch_stride = varlen ? 0 : seqlen * l.seq_stride;
      return l;
    };
    lq_in = layout(c.hq, c.d, c.in_pad, SQ);
    lk_in = layout(c.hk, c.d, c.in_pad, SK);
    lv_in = layout(c.hk, c.dv, c.in_pad, SK);
    ldo_in = layout(c.hq, c.dv, c.in_pad, SQ);
    lo = layout(c.hq, c.dv, 0, SQ);
    ldq = layout(c.hq, c.d, 0, SQ);
    ldk = layout(c.hk, c.d, 0, SK);
    ldv = layout(c.hk, c.dv, 0, SK);
    Rng rng(c.seed);
    auto input = [&](Buf& buf, std::vector<double>& dbl, int64_t rows, const Layout& l,
                     int64_t heads, int64_t dim, double lo_v, double hi_v) {
      buf = Buf(c.dtype, rows * l.seq_stride);  // padding elements stay NaN
      dbl.assign(static_cast<size_t>(buf.n), kNaN);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t e = 0; e < heads * dim; ++e) {
          const int64_t i = r * l.seq_stride + e;
          dbl[static_cast<size_t>(i)] = buf.set(i, rng.uniform(lo_v, hi_v));
        }
      }
    };
    input(q, qd, rows_q, lq_in, c.hq, c.d, -1, 1);
    input(k, kd, rows_k, lk_in, c.hk, c.d, -1, 1);
    input(v, vd, rows_k, lv_in, c.hk, c.dv, -1, 1);
    input(dout, dod, rows_q, ldo_in, c.hq, c.dv, -1, 1);
    if (c.bias) {
      const int64_t full[4] = {nseq, c.hq, SQ, SK};
      int64_t n = 1;
      for (int a = 0; a < 4; ++a)
        n *= bias_dims[a] = c.bias_full[static_cast<size_t>(a)] ? full[a] : 1;
      bias = Buf(c.bias_dtype, n);
      for (int64_t i = 0; i < n; ++i) bias.set(i, rng.uniform(-2, 2));
    }
    if (c.alibi) {
      alibi = Buf(DType::kF32, c.alibi == 2 ? nseq * c.hq : c.hq);
      for (int64_t i = 0; i < alibi.n; ++i) alibi.set(i, rng.uniform(0.01, 0.5));
    }
    scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
    if (c.dropout > 0) {
      threshold = threshold_of(static_cast<float>(c.dropout));
      dropout_scale = 1.f / (1.f - static_cast<float>(c.dropout));
    }
    D = c.kernel_dim                 ? c.kernel_dim
        : std::max(c.d, c.dv) <= 64  ? 64
        : std::max(c.d, c.dv) <= 128 ? 128
                                     : 256;
    bucket = D == 64 ? 0 : D == 128 ? 1 : 2;
  }

  // Element offsets of row (b, i) of head h (column 0).
  static int64_t at(const Layout& l, int64_t start, int64_t b, int64_t i, int64_t h) {
    return b * l.batch_stride + (start + i) * l.seq_stride + h * l.head_stride;
  }
  int64_t lse_at(int64_t b, int64_t h, int64_t i) const {
    return varlen ? h * rows_q + q0[static_cast<size_t>(b)] + i : (b * c.hq + h) * SQ + i;
  }
  int64_t dbias_at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return ((b * c.hq + h) * SQ + i) * SK + j;
  }
  // Past the bias's [SQ, SK] (a varlen sequence longer than its maximum), along a dimension it
  // has whole: no bias (0), as the kernels read it.
  double bias_value(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if ((bias_dims[2] > 1 && i >= SQ) || (bias_dims[3] > 1 && j >= SK)) return 0;
    const int64_t idx[4] = {bias_dims[0] > 1 ? b : 0, bias_dims[1] > 1 ? h : 0,
                            bias_dims[2] > 1 ? i : 0, bias_dims[3] > 1 ? j : 0};
    return bias.get(((idx[0] * bias_dims[1] + idx[1]) * bias_dims[2] + idx[2]) * bias_dims[3] +
                    idx[3]);
  }
  bool visible(int64_t b, int64_t i, int64_t j) const {  // the design's mask, bottom-right
    const int64_t sq = lq[static_cast<size_t>(b)], sk = lk[static_cast<size_t>(b)];
    return (c.left < 0 || j >= i + sk - sq - c.left) && (c.right < 0 || j <= i + sk - sq + c.right);
  }
  // The double score of (b, h, i, j), visible or not.
  double score(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t hk = h / (c.hq / c.hk);
    const int64_t qo = at(lq_in, q0[static_cast<size_t>(b)], b, i, h);
    const int64_t ko = at(lk_in, k0[static_cast<size_t>(b)], b, j, hk);
    double s = 0;
    for (int64_t e = 0; e < c.d; ++e) {
      s += qd[static_cast<size_t>(qo + e)] * kd[static_cast<size_t>(ko + e)];
    }
    s *= static_cast<double>(scale);
    if (c.bias) s += bias_value(b, h, i, j);
    if (c.alibi) {
      const double slope = alibi.get((c.alibi == 2 ? b * c.hq : 0) + h);
      const int64_t sq = lq[static_cast<size_t>(b)], sk = lk[static_cast<size_t>(b)];
      s -= slope * static_cast<double>(std::llabs(i + sk - sq - j));
    }
    return s;
  }
  double z(int64_t b, int64_t h, int64_t i, int64_t j) const {  // dropout's keep / (1 - p)
    if (c.dropout <= 0) return 1;
    return keep_rule(key, b, h, i, j, threshold)
               ? 1.0 / (1.0 - static_cast<double>(static_cast<float>(c.dropout)))
               : 0.0;
  }
  std::string tag() const { return c.dtype == DType::kBF16 ? "bf16" : "f16"; }
};

const RowSoftmax& softmax_row(const Problem& pr, int64_t b, int64_t h, int64_t i) {
  const auto slot = static_cast<size_t>((b * pr.c.hq + h) * pr.LQ + i);
  if (pr.cached.empty()) {
    pr.cache.resize(static_cast<size_t>(pr.nseq * pr.c.hq * pr.LQ));
    pr.cached.assign(pr.cache.size(), 0);
  }
  RowSoftmax& r = pr.cache[slot];
  if (pr.cached[slot]) return r;
  pr.cached[slot] = 1;
  const int64_t sk = pr.lk[static_cast<size_t>(b)];
  r.p.assign(static_cast<size_t>(sk), 0.0);
  std::vector<double> s(static_cast<size_t>(sk), -kInf);
  double m = -kInf;
  for (int64_t j = 0; j < sk; ++j) {
    if (!pr.visible(b, i, j)) continue;
    s[static_cast<size_t>(j)] = pr.score(b, h, i, j);
    m = std::max(m, s[static_cast<size_t>(j)]);
  }
  if (m == -kInf) return r;
  double l = 0;
  for (int64_t j = 0; j < sk; ++j) {
    if (s[static_cast<size_t>(j)] > -kInf)
      l += r.p[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - m);
  }
  for (double& x : r.p) x /= l;
  r.lse = m + std::log(l);
  return r;
}

// ---- twins, args and grids
// -------------------------------------------------------------------------

kn::Dim3 grid3(int64_t rows, int64_t tile, int64_t heads, int64_t batch) {
  return {static_cast<uint32_t>((rows + tile - 1) / tile), static_cast<uint32_t>(heads),
          static_cast<uint32_t>(batch)};
}

template <typename Args>
void launch(const std::string& symbol, const Args& args, kn::Dim3 grid, uint32_t threads) {
  const ja::runtime::HostTwin twin = ja::runtime::HostTwins::find(symbol);
  ASSERT_NE(twin, nullptr) << "no twin registered as " << symbol;
  kn::KernelArgs packed;
  packed.set(args);
  twin(packed, grid, {threads, 1, 1});
}

struct Grids {
  kn::Dim3 fwd, pre, dkdv, dq;
};
Grids full_grids(const Problem& p) {
  return {grid3(p.SQ, ka::kRowsQ[p.bucket], p.c.hq, p.nseq),
          grid3(p.SQ, ka::kPreRows, p.c.hq, p.nseq),
          grid3(p.SK, ka::kRowsK[p.bucket], p.c.hk, p.nseq),
          grid3(p.SQ, ka::kRowsQ[p.bucket], p.c.hq, p.nseq)};
}
// Whether a grid covers a row: block x owns the tiles x, x + G, x + 2 G, ... of its sequence, G
// the tiles of `span` rows (SQ, or SK for dkdv: the grid formula's width), so a full grid covers a
// varlen sequence longer than its maximum too, and a short one misses its missing blocks' tiles.
bool covers(kn::Dim3 g, int64_t tile, int64_t span, int64_t row, int64_t head, int64_t b) {
  const int64_t width = std::max<int64_t>((span + tile - 1) / tile, 1);
  return (row / tile) % width < g.x && head < g.y && b < g.z;
}

// The fields the forward and backward structs share, filled field by field.
template <typename Args>
void fill_common(Args& a, Problem& p) {
  a.q = p.q.data();
  a.k = p.k.data();
  a.v = p.v.data();
  a.bias = p.c.bias ? p.bias.data() : nullptr;
  a.alibi_slopes = p.c.alibi ? static_cast<const float*>(p.alibi.data()) : nullptr;
  a.cu_seqlens_q = p.varlen ? p.c.cu_q.data() : nullptr;
  a.cu_seqlens_k = p.varlen ? p.c.cu_k.data() : nullptr;
  a.rng_key = p.c.dropout > 0 ? p.key : nullptr;
  a.q_batch_stride = p.lq_in.batch_stride, a.q_seq_stride = p.lq_in.seq_stride;
  a.q_head_stride = p.lq_in.head_stride;
  a.k_batch_stride = p.lk_in.batch_stride, a.k_seq_stride = p.lk_in.seq_stride;
  a.k_head_stride = p.lk_in.head_stride;
  a.v_batch_stride = p.lv_in.batch_stride, a.v_seq_stride = p.lv_in.seq_stride;
  a.v_head_stride = p.lv_in.head_stride;
  if (p.c.bias) {  // [bb, bh, bq, bk], stride 0 along broadcast dims
    const int64_t* n = p.bias_dims;
    a.bias_col_stride = n[3] > 1 ? 1 : 0;
    a.bias_row_stride = n[2] > 1 ? n[3] : 0;
    a.bias_head_stride = n[1] > 1 ? n[2] * n[3] : 0;
    a.bias_batch_stride = n[0] > 1 ? n[1] * n[2] * n[3] : 0;
  }
  a.lse_batch_stride = p.varlen ? 0 : p.c.hq * p.SQ;
  a.lse_head_stride = p.varlen ? p.rows_q : p.SQ;
  a.batch = static_cast<int>(p.nseq);
  a.seqlen_q = static_cast<int>(p.SQ);
  a.seqlen_k = static_cast<int>(p.SK);
  a.total_q = static_cast<int>(p.rows_q);
  a.total_k = static_cast<int>(p.rows_k);
  a.heads_q = static_cast<int>(p.c.hq);
  a.heads_k = static_cast<int>(p.c.hk);
  a.head_dim = static_cast<int>(p.c.d);
  a.head_dim_v = static_cast<int>(p.c.dv);
  a.window_left = p.c.left;
  a.window_right = p.c.right;
  a.alibi_batch_stride = p.c.alibi == 2 ? static_cast<int>(p.c.hq) : 0;
  a.dropout_threshold = p.threshold;
  a.scale = p.scale;
  a.dropout_scale = p.dropout_scale;
  a.bias_dtype = !p.c.bias                        ? ka::kAttnF32
                 : p.c.bias_dtype == DType::kBF16 ? ka::kAttnBF16
                 : p.c.bias_dtype == DType::kF16  ? ka::kAttnF16
                                                  : ka::kAttnF32;
}

struct FwdRun {
  Buf out, lse;
};
FwdRun run_fwd(Problem& p, kn::Dim3 grid) {
  FwdRun r{Buf(p.c.dtype, p.rows_q * p.c.hq * p.c.dv), Buf(DType::kF32, p.c.hq * p.rows_q)};
  kn::AttnFwdArgs a{};
  fill_common(a, p);
  a.out = r.out.data();
  a.lse = static_cast<float*>(r.lse.data());
  a.o_batch_stride = p.lo.batch_stride, a.o_seq_stride = p.lo.seq_stride;
  a.o_head_stride = p.lo.head_stride;
  launch("jax_aiter_attn_fwd_" + p.tag() + "_d" + std::to_string(p.D), a, grid,
         static_cast<uint32_t>(ka::kThreads[p.bucket]));
  return r;
}

struct BwdRun {
  Buf delta, dq, dk, dv, dbias;
};
BwdRun run_bwd(Problem& p, FwdRun& f, const Grids& g) {
  BwdRun r{Buf(DType::kF32, p.c.hq * p.rows_q), Buf(p.c.dtype, p.rows_q * p.c.hq * p.c.d),
           Buf(p.c.dtype, p.rows_k * p.c.hk * p.c.d), Buf(p.c.dtype, p.rows_k * p.c.hk * p.c.dv),
           Buf(DType::kF32, p.c.bias ? p.nseq * p.c.hq * p.SQ * p.SK : 0)};
  kn::AttnBwdArgs a{};
  fill_common(a, p);
  a.out = f.out.data();
  a.dout = p.dout.data();
  a.lse = static_cast<const float*>(f.lse.data());
  a.delta = static_cast<float*>(r.delta.data());
  a.dq = r.dq.data();
  a.dk = r.dk.data();
  a.dv = r.dv.data();
  a.dbias = p.c.bias ? static_cast<float*>(r.dbias.data()) : nullptr;
  a.o_batch_stride = p.lo.batch_stride, a.o_seq_stride = p.lo.seq_stride;
  a.o_head_stride = p.lo.head_stride;
  a.do_batch_stride = p.ldo_in.batch_stride, a.do_seq_stride = p.ldo_in.seq_stride;
  a.do_head_stride = p.ldo_in.head_stride;
  a.dq_batch_stride = p.ldq.batch_stride, a.dq_seq_stride = p.ldq.seq_stride;
  a.dq_head_stride = p.ldq.head_stride;
  a.dk_batch_stride = p.ldk.batch_stride, a.dk_seq_stride = p.ldk.seq_stride;
  a.dk_head_stride = p.ldk.head_stride;
  a.dv_batch_stride = p.ldv.batch_stride, a.dv_seq_stride = p.ldv.seq_stride;
  a.dv_head_stride = p.ldv.head_stride;
  if (p.c.bias) {
    a.dbias_row_stride = p.SK;
    a.dbias_head_stride = p.SQ * p.SK;
    a.dbias_batch_stride = p.c.hq * p.SQ * p.SK;
  }
  const std::string d = "_d" + std::to_string(p.D);
  const auto threads = static_cast<uint32_t>(ka::kThreads[p.bucket]);
  launch("jax_aiter_attn_bwd_pre_" + p.tag(), a, g.pre, static_cast<uint32_t>(ka::kPreThreads));
  launch("jax_aiter_attn_bwd_dkdv_" + p.tag() + d, a, g.dkdv, threads);
  launch("jax_aiter_attn_bwd_dq_" + p.tag() + d, a, g.dq, threads);
  return r;
}

// ---- the float64 reference
// ------------------------------------------------------------------------

// A reference tensor, and `mag`: the largest sum of |terms| behind one of its elements (bounded
// with |q|, |k|, |v|, |dout| <= 1, the inputs' range), the scale of the float32 arithmetic's error:
// an element can be 0 while its terms are not.
struct Ref {
  std::vector<double> v;
  double mag = 0;
  void put(int64_t i, double value, double abs_sum) {
    v[static_cast<size_t>(i)] = value;
    mag = std::max(mag, abs_sum);
  }
};
Ref ref_of(int64_t n, double init) {
  return {std::vector<double>(static_cast<size_t>(n), init), 0};
}

struct RefFwd {
  Ref out, lse;
};
// Only sequence `b` and key head `hk` (their query heads) when set; the rest is then not checked.
struct Only {
  int64_t b = -1, hk = -1;
  bool skips(int64_t bb, int64_t kk) const { return (b >= 0 && bb != b) || (hk >= 0 && kk != hk); }
  bool any() const { return b >= 0 || hk >= 0; }
};

RefFwd ref_forward(const Problem& p, kn::Dim3 grid, Only only = {}) {
  const int64_t rows = ka::kRowsQ[p.bucket];
  const double init = only.any() ? kSkip : kNaN;
  RefFwd r{ref_of(p.rows_q * p.c.hq * p.c.dv, init), ref_of(p.c.hq * p.rows_q, init)};
  for (int64_t b = 0; b < p.nseq; ++b) {
    const int64_t q0 = p.q0[static_cast<size_t>(b)], k0 = p.k0[static_cast<size_t>(b)];
    for (int64_t h = 0; h < p.c.hq; ++h) {
      const int64_t hk = h / (p.c.hq / p.c.hk);
      if (only.skips(b, hk)) continue;
      for (int64_t i = 0; i < p.lq[static_cast<size_t>(b)]; ++i) {
        if (!covers(grid, rows, p.SQ, i, h, b)) continue;
        const RowSoftmax& sm = softmax_row(p, b, h, i);
        const int64_t oo = Problem::at(p.lo, q0, b, i, h);
        std::vector<double> acc(static_cast<size_t>(p.c.dv));
        double abs_sum = 0;  // sum of |P Z| (|v| <= 1)
        for (int64_t j = 0; j < static_cast<int64_t>(sm.p.size()); ++j) {
          const double w = sm.p[static_cast<size_t>(j)] * p.z(b, h, i, j);
          if (w == 0) continue;
          abs_sum += std::abs(w);
          const int64_t vo = Problem::at(p.lv_in, k0, b, j, hk);
          for (int64_t e = 0; e < p.c.dv; ++e)
            acc[static_cast<size_t>(e)] += w * p.vd[static_cast<size_t>(vo + e)];
        }
        for (int64_t e = 0; e < p.c.dv; ++e)
          r.out.put(oo + e, acc[static_cast<size_t>(e)], abs_sum);
        r.lse.put(p.lse_at(b, h, i), sm.lse, std::isinf(sm.lse) ? 0 : std::abs(sm.lse) + 1);
      }
    }
  }
  return r;
}

struct RefBwd {
  Ref delta, dq, dk, dv, dbias;
};
// The backward in double from the stored out (the forward's output, an input of the backward):
// delta = dout . out, P from the exact scores, dS = P (Z dP - delta).
RefBwd ref_backward(const Problem& p, const Buf& out, const Grids& g, Only only = {}) {
  const int64_t rq = ka::kRowsQ[p.bucket], rk = ka::kRowsK[p.bucket];
  const int64_t group = p.c.hq / p.c.hk, d = p.c.d, dv = p.c.dv;
  const double init = only.any() ? kSkip : kNaN;
  RefBwd r{ref_of(p.c.hq * p.rows_q, init), ref_of(p.rows_q * p.c.hq * d, init),
           ref_of(p.rows_k * p.c.hk * d, init), ref_of(p.rows_k * p.c.hk * dv, init),
           ref_of(p.c.bias ? p.nseq * p.c.hq * p.SQ * p.SK : 0, init)};
  auto at = [](std::vector<double>& x, int64_t i) -> double& { return x[static_cast<size_t>(i)]; };
  for (int64_t b = 0; b < p.nseq; ++b) {
    const int64_t sq = p.lq[static_cast<size_t>(b)], sk = p.lk[static_cast<size_t>(b)];
    const int64_t q0 = p.q0[static_cast<size_t>(b)], k0 = p.k0[static_cast<size_t>(b)];
    for (int64_t hk = 0; hk < p.c.hk; ++hk) {
      if (only.skips(b, hk)) continue;
      // dk, dv of the key head and the sums of |terms| behind them
      std::vector<double> dk(static_cast<size_t>(sk * d)), dvv(static_cast<size_t>(sk * dv)),
          dka(static_cast<size_t>(sk)), dva(dka.size());
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t i = 0; i < std::max(sq, p.c.bias ? p.SQ : 0); ++i) {
          std::vector<double> ds(static_cast<size_t>(sk)), dsa(ds.size());
          if (i < sq) {
            const int64_t oo = Problem::at(p.lo, q0, b, i, h);
            const int64_t dio = Problem::at(p.ldo_in, q0, b, i, h);
            double delta = 0, delta_abs = 0;
            for (int64_t e = 0; e < dv; ++e) {
              const double t = p.dod[static_cast<size_t>(dio + e)] * out.get(oo + e);
              delta += t;
              delta_abs += std::abs(t);
            }
            if (covers(g.pre, ka::kPreRows, p.SQ, i, h, b))
              r.delta.put(p.lse_at(b, h, i), delta, delta_abs);
            const RowSoftmax& sm = softmax_row(p, b, h, i);
            const int64_t qo = Problem::at(p.lq_in, q0, b, i, h);
            std::vector<double> dq(static_cast<size_t>(d));
            double dqa = 0;
            for (int64_t j = 0; j < sk; ++j) {
              const double pij = sm.p[static_cast<size_t>(j)];
              if (pij == 0) continue;
              const int64_t ko = Problem::at(p.lk_in, k0, b, j, hk);
              const int64_t vo = Problem::at(p.lv_in, k0, b, j, hk);
              double dp = 0, dp_abs = 0;
              for (int64_t e = 0; e < dv; ++e) {
                const double t =
                    p.dod[static_cast<size_t>(dio + e)] * p.vd[static_cast<size_t>(vo + e)];
                dp += t;
                dp_abs += std::abs(t);
              }
              const double zz = p.z(b, h, i, j);
              const double dsij = pij * (zz * dp - delta),
                           dsij_abs = pij * (zz * dp_abs + delta_abs);
              at(ds, j) = dsij;
              at(dsa, j) = dsij_abs;
              for (int64_t e = 0; e < d; ++e) {
                at(dq, e) += p.scale * dsij * p.kd[static_cast<size_t>(ko + e)];
                at(dk, j * d + e) += p.scale * dsij * p.qd[static_cast<size_t>(qo + e)];
              }
              for (int64_t e = 0; e < dv; ++e) {
                at(dvv, j * dv + e) += pij * zz * p.dod[static_cast<size_t>(dio + e)];
              }
              dqa += p.scale * dsij_abs;
              at(dka, j) += p.scale * dsij_abs;
              at(dva, j) += pij * zz;
            }
            if (covers(g.dq, rq, p.SQ, i, h, b)) {
              const int64_t dqo = Problem::at(p.ldq, q0, b, i, h);
              for (int64_t e = 0; e < d; ++e) r.dq.put(dqo + e, at(dq, e), dqa);
            }
          }
          // The dq kernel's rows, every column, within [SQ, SK] (a varlen sequence longer than its
          // maximum writes no dbias past it).
          if (p.c.bias && i < p.SQ && covers(g.dq, rq, p.SQ, i, h, b)) {
            for (int64_t j = 0; j < p.SK; ++j) {
              const bool in = j < sk && i < sq;
              r.dbias.put(p.dbias_at(b, h, i, j), in ? at(ds, j) : 0.0, in ? at(dsa, j) : 0.0);
            }
          }
        }
      }
      for (int64_t j = 0; j < sk; ++j) {
        if (!covers(g.dkdv, rk, p.SK, j, hk, b)) continue;
        const int64_t dko = Problem::at(p.ldk, k0, b, j, hk),
                      dvo = Problem::at(p.ldv, k0, b, j, hk);
        for (int64_t e = 0; e < d; ++e) r.dk.put(dko + e, at(dk, j * d + e), at(dka, j));
        for (int64_t e = 0; e < dv; ++e) r.dv.put(dvo + e, at(dvv, j * dv + e), at(dva, j));
      }
    }
  }
  return r;
}

::testing::AssertionResult close(const Buf& got, const Ref& ref, Tol tol, const std::string& what) {
  return close(got, ref.v, tol, what, ref.mag);
}

// The forward and the backward of one problem with full grids, every output checked.
::testing::AssertionResult check_problem(const Config& c, bool backward = true) {
  Problem p(c);
  const Grids g = full_grids(p);
  FwdRun f = run_fwd(p, g.fwd);
  const RefFwd rf = ref_forward(p, g.fwd);
  const Tol t16 = tol_for(c.dtype), t32 = tol_for(DType::kF32);
  if (auto r = close(f.out, rf.out, t16, "out"); !r) return r << "\n  " << c.name();
  if (auto r = close(f.lse, rf.lse, t32, "lse"); !r) return r << "\n  " << c.name();
  if (!backward) return ::testing::AssertionSuccess();
  BwdRun b = run_bwd(p, f, g);
  const RefBwd rb = ref_backward(p, f.out, g);
  if (auto r = close(b.delta, rb.delta, t32, "delta"); !r) return r << "\n  " << c.name();
  if (auto r = close(b.dq, rb.dq, t16, "dq"); !r) return r << "\n  " << c.name();
  if (auto r = close(b.dk, rb.dk, t16, "dk"); !r) return r << "\n  " << c.name();
  if (auto r = close(b.dv, rb.dv, t16, "dv"); !r) return r << "\n  " << c.name();
  // dbias is float32, but its float32 arithmetic (P, dP and their difference) is all it has.
  if (c.bias) {
    if (auto r = close(b.dbias, rb.dbias, {1e-5, 1e-5}, "dbias"); !r)
      return r << "\n  " << c.name();
  }
  return ::testing::AssertionSuccess();
}

constexpr DType kDtypes[] = {DType::kBF16, DType::kF16};

// ---- Philox and the dropout keep rule
// ---------------------------------------------------------------

// Random123's kat_vectors for philox4x32_10 (counter, key, output), as in
// DEShawResearch/random123 tests/kat_vectors.
struct Kat {
  std::array<uint32_t, 4> ctr;
  std::array<uint32_t, 2> key;
  std::array<uint32_t, 4> out;
};
constexpr Kat kKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(AttnPhilox, KnownAnswerVectors) {
  for (const Kat& k : kKats) {
    const ka::Philox4 got =
        ka::philox4x32_10(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    const auto mine = philox(k.ctr, k.key);
    for (size_t w = 0; w < 4; ++w) {
      EXPECT_EQ(got.v[w], k.out[w]) << "kernels' Philox, word " << w;
      EXPECT_EQ(mine[w], k.out[w]) << "the test's Philox, word " << w;
    }
  }
}

TEST(AttnDropout, KeepIsTheDesignsRule) {
  Rng rng(7);
  const uint32_t key[2] = {0xDEADBEEFu, 0x01234567u};
  int64_t kept = 0, n = 0;
  for (int t = 0; t < 200000; ++t) {
    const int64_t b = static_cast<int64_t>(rng.next() % 7),
                  h = static_cast<int64_t>(rng.next() % 40);
    const int64_t i = static_cast<int64_t>(rng.next() % 70000),
                  j = static_cast<int64_t>(rng.next() % 70000);
    const uint32_t thr = t % 3 == 0 ? threshold_of(0.3) : static_cast<uint32_t>(rng.next());
    const bool want = keep_rule(key, b, h, i, j, thr);
    ASSERT_EQ(ka::attn_dropout_keep(key, static_cast<int>(b), static_cast<int>(h), i, j, thr), want)
        << b << " " << h << " " << i << " " << j << " " << thr;
    if (t % 3 == 0) kept += want, ++n;
  }
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(n), 0.7, 0.01);
  // p = 0 keeps everything; the largest threshold keeps only an all-ones word.
  EXPECT_EQ(threshold_of(0.0), 0u);
  EXPECT_EQ(threshold_of(1.0), 0xFFFFFFFFu);
  EXPECT_EQ(threshold_of(0.5), 0x80000000u);
}

struct MaskRun {
  Buf keep;
};
MaskRun run_mask(const uint32_t key[2], int64_t b, int64_t h, int64_t sq, int64_t sk, uint32_t thr,
                 kn::Dim3 grid) {
  MaskRun r{Buf(DType::kU8, b * h * sq * sk)};
  kn::AttnDropoutMaskArgs a{};
  a.rng_key = key;
  a.keep = static_cast<unsigned char*>(r.keep.data());
  a.batch = static_cast<int>(b);
  a.heads = static_cast<int>(h);
  a.seqlen_q = static_cast<int>(sq);
  a.seqlen_k = static_cast<int>(sk);
  a.dropout_threshold = thr;
  launch("jax_aiter_attn_dropout_mask", a, grid, static_cast<uint32_t>(ka::kMaskThreads));
  return r;
}
kn::Dim3 mask_grid(int64_t b, int64_t h, int64_t sq, int64_t sk) {
  return {static_cast<uint32_t>((sk + 4 * ka::kMaskThreads - 1) / (4 * ka::kMaskThreads)),
          static_cast<uint32_t>(sq), static_cast<uint32_t>(b * h)};
}

TEST(AttnDropout, MaskTwinMatchesTheRuleAndKeepsOneMinusP) {
  const uint32_t key[2] = {0x12345678u, 0x9ABCDEF0u};
  struct Case {
    int64_t b, h, sq, sk;
    double p;
  };
  for (const Case& c : {Case{2, 3, 17, 1100, 0.3}, Case{1, 2, 256, 1000, 0.5},
                        Case{3, 1, 5, 7, 0.9}, Case{1, 1, 3, 515, 0.0}}) {
    const uint32_t thr = threshold_of(c.p);
    MaskRun r = run_mask(key, c.b, c.h, c.sq, c.sk, thr, mask_grid(c.b, c.h, c.sq, c.sk));
    std::vector<double> ref(static_cast<size_t>(r.keep.n));
    int64_t kept = 0;
    for (int64_t b = 0; b < c.b; ++b)
      for (int64_t h = 0; h < c.h; ++h)
        for (int64_t i = 0; i < c.sq; ++i)
          for (int64_t j = 0; j < c.sk; ++j) {
            const bool k = keep_rule(key, b, h, i, j, thr);
            ref[static_cast<size_t>(((b * c.h + h) * c.sq + i) * c.sk + j)] = k;
            kept += k;
          }
    EXPECT_TRUE(close(r.keep, ref, {0, 0}, "keep"));
    const double n = static_cast<double>(r.keep.n), rate = static_cast<double>(kept) / n;
    const double sigma = std::sqrt(c.p * (1 - c.p) / n);
    EXPECT_NEAR(rate, 1 - c.p, 5 * sigma + 1e-12) << "p " << c.p << " over " << n << " samples";
  }
  // A short grid leaves its missing blocks unwritten, along each axis.
  const int64_t b = 2, h = 2, sq = 9, sk = 1030;
  const uint32_t thr = threshold_of(0.25);
  const kn::Dim3 full = mask_grid(b, h, sq, sk);
  for (int axis = 0; axis < 3; ++axis) {
    kn::Dim3 g = full;
    (axis == 0 ? g.x : axis == 1 ? g.y : g.z) -= 1;
    MaskRun r = run_mask(key, b, h, sq, sk, thr, g);
    std::vector<double> ref(static_cast<size_t>(r.keep.n), kNaN);
    for (int64_t bh = 0; bh < b * h; ++bh)
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < sk; ++j) {
          if (j / (4 * ka::kMaskThreads) < g.x && i < g.y && bh < g.z) {
            ref[static_cast<size_t>((bh * sq + i) * sk + j)] =
                keep_rule(key, bh / h, bh % h, i, j, thr);
          }
        }
    EXPECT_TRUE(close(r.keep, ref, {0, 0}, "keep, short grid axis " + std::to_string(axis)));
  }
}

// ---- attention_math's building blocks
// ---------------------------------------------------------------

TEST(AttnMath, VisibleRangesAreAttnVisible) {
  for (int64_t sq : {1, 5, 17}) {
    for (int64_t sk : {1, 4, 23}) {
      for (int left : {-1, 0, 1, 3, 30}) {
        for (int right : {-1, 0, 2, 30}) {
          for (int64_t i = 0; i < sq; ++i) {
            const am::Range r = am::visible_keys(i, sq, sk, left, right);
            for (int64_t j = 0; j < sk; ++j) {
              ASSERT_EQ(j >= r.lo && j < r.hi, ka::attn_visible(i, j, sq, sk, left, right))
                  << sq << " " << sk << " " << left << " " << right << " " << i << " " << j;
              const am::Range q = am::visible_queries(j, sq, sk, left, right);
              ASSERT_EQ(i >= q.lo && i < q.hi, ka::attn_visible(i, j, sq, sk, left, right));
            }
            ASSERT_GE(r.lo, 0);
            ASSERT_LE(r.hi, sk);
          }
        }
      }
    }
  }
}

TEST(AttnMath, Conversions) {
  using am::Rounding;
  // bf16 of float bits: (input, nearest even, nearest away, toward zero).
  struct Case {
    uint32_t in;
    uint16_t rne, rna, rtz;
  };
  const Case cases[] = {
      {0x3F800000, 0x3F80, 0x3F80, 0x3F80},  // 1: exact
      {0x3F808000, 0x3F80, 0x3F81, 0x3F80},  // a tie below an even: even stays, away goes up
      {0x3F818000, 0x3F82, 0x3F82, 0x3F81},  // a tie below an odd: both go up
      {0x3F80C000, 0x3F81, 0x3F81, 0x3F80},  // above the tie
      {0x3F807FFF, 0x3F80, 0x3F80, 0x3F80},  // below the tie
      {0xBF808000, 0xBF80, 0xBF81, 0xBF80},  // negative: away from zero is more negative
      {0x7F7FFFFF, 0x7F80, 0x7F80, 0x7F7F},  // the largest float: overflows but toward zero
      {0xFF800000, 0xFF80, 0xFF80, 0xFF80},  // -inf
      {0x00000001, 0x0000, 0x0000, 0x0000},  // the smallest subnormal
  };
  for (const Case& c : cases) {
    const float x = std::bit_cast<float>(c.in);
    EXPECT_EQ(am::round_bf16(x, Rounding::kNearestEven), c.rne) << std::hex << c.in;
    EXPECT_EQ(am::round_bf16(x, Rounding::kNearestAway), c.rna) << std::hex << c.in;
    EXPECT_EQ(am::round_bf16(x, Rounding::kTowardZero), c.rtz) << std::hex << c.in;
  }
  for (Rounding r : {Rounding::kNearestEven, Rounding::kNearestAway, Rounding::kTowardZero}) {
    const uint16_t nan =
        am::round_bf16(std::bit_cast<float>(0x7F800001u), r);  // a NaN with a low payload
    EXPECT_TRUE(std::isnan(from_bf16(nan))) << static_cast<int>(r);
  }
  // f16: every code decodes as _Float16 does; floats round to nearest even as _Float16 does.
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = from_f16(static_cast<uint16_t>(h));
    const float got = am::f16_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << h;
    }
  }
  Rng rng(3);
  for (int t = 0; t < 100000; ++t) {
    const float x = static_cast<float>(rng.uniform(-70000, 70000) *
                                       std::pow(2.0, -static_cast<int>(rng.next() % 30)));
    ASSERT_EQ(am::round_f16(x), to_f16(x)) << x;
  }
}

// ---- the attention twins
// ------------------------------------------------------------------------------

TEST(AttnTwins, HeadDims) {
  const std::pair<int64_t, int64_t> dims[] = {{32, 32},   {40, 40},   {64, 64},   {96, 96},
                                              {128, 128}, {160, 160}, {192, 128}, {256, 256}};
  uint64_t seed = 100;
  for (DType t : kDtypes) {
    for (auto [d, dv] : dims) {
      for (bool causal : {false, true}) {
        Config c;
        c.dtype = t, c.batch = 1, c.sq = 66, c.sk = 97, c.hq = 4, c.hk = 2, c.d = d, c.dv = dv;
        c.right = causal ? 0 : -1;
        c.seed = seed++;
        EXPECT_TRUE(check_problem(c));
      }
    }
  }
}

TEST(AttnTwins, SequenceLengthsBothWays) {
  const std::pair<int64_t, int64_t> lens[] = {{100, 37}, {37, 100}, {1, 1},  {1, 129},
                                              {129, 1},  {64, 64},  {65, 63}};
  const std::pair<int, int> windows[] = {{-1, -1}, {-1, 0}, {8, 4}};
  uint64_t seed = 200;
  for (DType t : kDtypes) {
    for (auto [sq, sk] : lens) {
      for (auto [l, r] : windows) {
        Config c;
        c.dtype = t, c.batch = 2, c.sq = sq, c.sk = sk, c.hq = 2, c.hk = 2, c.d = 64, c.dv = 64;
        c.left = l, c.right = r, c.seed = seed++;
        EXPECT_TRUE(check_problem(c));
      }
    }
  }
}

TEST(AttnTwins, HeadGroups) {
  const std::pair<int64_t, int64_t> heads[] = {{3, 3}, {6, 2}, {4, 1}, {8, 2}};  // MHA, GQA, MQA
  uint64_t seed = 300;
  for (DType t : kDtypes) {
    for (auto [hq, hk] : heads) {
      for (bool causal : {false, true}) {
        Config c;
        c.dtype = t, c.batch = 2, c.sq = 90, c.sk = 75, c.hq = hq, c.hk = hk, c.d = 64, c.dv = 64;
        c.right = causal ? 0 : -1, c.seed = seed++;
        EXPECT_TRUE(check_problem(c));
      }
    }
  }
}

TEST(AttnTwins, Windows) {
  const std::pair<int, int> windows[] = {{16, -1}, {-1, 8}, {10, 5},  {0, 0},  {20, 0},
                                         {0, -1},  {-1, 0}, {200, 3}, {3, 200}};
  const std::pair<int64_t, int64_t> lens[] = {{96, 96}, {50, 130}, {130, 50}};
  uint64_t seed = 400;
  for (DType t : kDtypes) {
    for (auto [l, r] : windows) {
      for (auto [sq, sk] : lens) {
        Config c;
        c.dtype = t, c.batch = 1, c.sq = sq, c.sk = sk, c.hq = 4, c.hk = 2, c.d = 32, c.dv = 32;
        c.left = l, c.right = r, c.seed = seed++;
        EXPECT_TRUE(check_problem(c));
      }
    }
  }
}

TEST(AttnTwins, Bias) {
  struct Case {
    DType bias_dtype;
    std::array<bool, 4> full;
  };
  const Case cases[] = {
      {DType::kF32, {true, true, true, true}},     // [b, hq, sq, sk]
      {DType::kBF16, {false, true, true, true}},   // [1, hq, sq, sk]
      {DType::kF16, {true, false, false, true}},   // [b, 1, 1, sk]
      {DType::kF32, {false, false, true, true}},   // [1, 1, sq, sk]
      {DType::kBF16, {true, true, true, false}},   // [b, hq, sq, 1]
      {DType::kF32, {false, false, false, false}}  // [1, 1, 1, 1]
  };
  uint64_t seed = 500;
  for (DType t : kDtypes) {
    for (const Case& bc : cases) {
      for (bool causal : {false, true}) {
        Config c;
        c.dtype = t, c.batch = 2, c.sq = 67, c.sk = 80, c.hq = 4, c.hk = 2, c.d = 64, c.dv = 64;
        c.bias = true, c.bias_dtype = bc.bias_dtype, c.bias_full = bc.full;
        c.right = causal ? 0 : -1, c.seed = seed++;
        EXPECT_TRUE(check_problem(c));
      }
    }
  }
}

TEST(AttnTwins, Alibi) {
  uint64_t seed = 600;
  for (DType t : kDtypes) {
    for (int alibi : {1, 2}) {
      for (auto [sq, sk] : {std::pair<int64_t, int64_t>{70, 70}, {40, 90}, {90, 40}}) {
        for (bool causal : {false, true}) {
          Config c;
          c.dtype = t, c.batch = 2, c.sq = sq, c.sk = sk, c.hq = 4, c.hk = 1, c.d = 64, c.dv = 64;
          c.alibi = alibi, c.right = causal ? 0 : -1, c.seed = seed++;
          EXPECT_TRUE(check_problem(c));
        }
      }
    }
  }
}

TEST(AttnTwins, Dropout) {
  uint64_t seed = 700;
  for (DType t : kDtypes) {
    for (double p : {0.2, 0.5, 0.9}) {
      for (bool causal : {false, true}) {
        Config c;
        c.dtype = t, c.batch = 2, c.sq = 77, c.sk = 93, c.hq = 4, c.hk = 2, c.d = 64, c.dv = 64;
        c.dropout = p, c.right = causal ? 0 : -1, c.seed = seed++;
        EXPECT_TRUE(check_problem(c));
      }
    }
    // Everything at once: dropout, bias, ALiBi, a window, GQA, padded input rows.
    Config c;
    c.dtype = t, c.batch = 2, c.sq = 130, c.sk = 70, c.hq = 6, c.hk = 2, c.d = 96, c.dv = 96;
    c.dropout = 0.3, c.bias = true, c.bias_full = {false, true, true, true}, c.alibi = 2;
    c.left = 40, c.right = 5, c.in_pad = 8, c.seed = seed++;
    EXPECT_TRUE(check_problem(c));
  }
}

TEST(AttnTwins, StridedInputsAreReadByTheirStrides) {
  uint64_t seed = 750;
  for (DType t : kDtypes) {
    Config c;  // every row of q, k, v, dout has 24 NaN elements after it: reading one shows
    c.dtype = t, c.batch = 3, c.sq = 33, c.sk = 65, c.hq = 2, c.hk = 1, c.d = 40, c.dv = 40;
    c.in_pad = 24, c.right = 0, c.seed = seed++;
    EXPECT_TRUE(check_problem(c));
  }
}

TEST(AttnTwins, Varlen) {
  // Sequences of length 0, 1 and long ones, queries without keys, total_q > max_seqlen_q.
  const std::vector<std::pair<int, int>> lens = {{0, 5}, {1, 1},  {130, 150}, {37, 0},
                                                 {5, 3}, {1, 90}, {64, 64},   {90, 1}};
  uint64_t seed = 800;
  for (DType t : kDtypes) {
    for (bool causal : {false, true}) {
      Config c;
      c.dtype = t, c.hq = 4, c.hk = 2, c.d = 64, c.dv = 64, c.right = causal ? 0 : -1;
      c.seed = seed++;
      EXPECT_TRUE(check_problem(with_lengths(c, lens)));
    }
    Config c;  // with every feature
    c.dtype = t, c.hq = 6, c.hk = 3, c.d = 128, c.dv = 128, c.dropout = 0.25, c.bias = true;
    c.bias_dtype = t, c.alibi = 2, c.left = 30, c.right = 0, c.in_pad = 8, c.seed = seed++;
    EXPECT_TRUE(check_problem(with_lengths(c, lens)));
    c.d = 192, c.dv = 128, c.bias_full = {false, true, false, true}, c.alibi = 1;
    c.left = -1, c.right = -1, c.seed = seed++;
    EXPECT_TRUE(check_problem(with_lengths(c, lens)));
  }
}

TEST(AttnTwins, VarlenOffsetsAreClamped) {
  // cu_seqlens_q: a sequence longer than max_seqlen_q (computed whole), an end past total_q.
  // cu_seqlens_k: a negative start, an empty sequence, an end past total_k, a sequence longer than
  // max_seqlen_k (computed whole). The bias and dbias cover [max_q, max_k] only.
  for (DType t : kDtypes) {
    Config c;
    c.dtype = t, c.hq = 2, c.hk = 1, c.d = 64, c.dv = 64, c.right = 0, c.bias = true;
    c.cu_q = {0, 10, 30, 200};
    c.total_q = 40, c.max_q = 15;
    c.cu_k = {-5, 20, 20, 999};
    c.total_k = 50, c.max_k = 25;
    c.seed = 900 + static_cast<uint64_t>(t);
    EXPECT_TRUE(check_problem(c));
  }
  // Garbage offsets: values unspecified, but nothing is written out of bounds.
  Rng rng(11);
  for (int t = 0; t < 30; ++t) {
    Config c;
    c.hq = 2, c.hk = 2, c.d = 32, c.dv = 32, c.bias = true, c.total_q = 37, c.total_k = 29;
    c.max_q = 1 + static_cast<int64_t>(rng.next() % 40),
    c.max_k = 1 + static_cast<int64_t>(rng.next() % 40);
    for (int s = 0; s < 5; ++s) {
      c.cu_q.push_back(static_cast<int>(rng.next() % 120) - 40);
      c.cu_k.push_back(static_cast<int>(rng.next() % 120) - 40);
    }
    Problem p(c);
    const Grids g = full_grids(p);
    FwdRun f = run_fwd(p, g.fwd);
    BwdRun b = run_bwd(p, f, g);
    for (const Buf* buf : {&f.out, &f.lse, &b.delta, &b.dq, &b.dk, &b.dv, &b.dbias}) {
      EXPECT_TRUE(buf->guards_intact()) << "case " << t;
    }
  }
}

// Issue 23: max_seqlen below a sequence's length (traced offsets under jit, which nobody checks)
// left the rows past it unwritten and the keys past max_seqlen_k unseen. The maxima only size the
// grids: each block loops over its sequence's tiles x, x + grid.x, ..., so every row and key of
// every sequence is computed, with every feature (dropout's counter, ALiBi and the window at the
// rows and keys past the maxima; bias and dbias within their [max_q, max_k]).
TEST(AttnTwins, VarlenSequencesLongerThanMaxSeqlenAreComputedWhole) {
  const std::vector<std::pair<int, int>> lens = {{150, 90}, {40, 200}, {70, 9}, {1, 3}};
  uint64_t seed = 950;
  for (DType t : kDtypes) {
    for (int64_t max_len : {40, 64}) {
      Config c;
      c.dtype = t, c.hq = 4, c.hk = 2, c.d = 64, c.dv = 64, c.right = 0, c.left = 70;
      c.alibi = 2, c.dropout = 0.2, c.seed = seed++;
      c = with_lengths(c, lens);
      c.max_q = c.max_k = max_len;
      EXPECT_TRUE(check_problem(c));
    }
    Config c;  // d 128 and d 256 buckets (other tiles), with a bias over [max_q, max_k]
    c.dtype = t, c.hq = 2, c.hk = 1, c.d = 192, c.dv = 128, c.bias = true;
    c.bias_full = {false, true, true, true}, c.seed = seed++;
    c = with_lengths(c, {{130, 70}, {20, 140}});
    c.max_q = c.max_k = 50;
    EXPECT_TRUE(check_problem(c));
    c.d = 128, c.bias = false, c.seed = seed++;
    EXPECT_TRUE(check_problem(c));
  }
}

// Issue 23: a NaN ALiBi slope made every score of its (batch, head) NaN, which read as "no visible
// key" (out 0, lse +inf). NaN in gives NaN out: that (batch, head)'s out, lse and dq, and dk, dv
// of its key head, written as NaN; every other value as with a finite slope there, bit for bit.
TEST(AttnTwins, NanAlibiSlopeGivesNaN) {
  for (DType t : kDtypes) {
    for (bool varlen : {false, true}) {
      Config c;
      c.dtype = t, c.batch = 2, c.sq = 70, c.sk = 90, c.hq = 4, c.hk = 2, c.d = 64, c.dv = 64;
      c.alibi = 2, c.right = 0, c.seed = 970 + varlen;
      if (varlen) c = with_lengths(c, {{70, 90}, {65, 80}});
      Problem p(c);
      const Grids g = full_grids(p);
      FwdRun f0 = run_fwd(p, g.fwd);
      BwdRun b0 = run_bwd(p, f0, g);
      const int64_t nb = 1, nh = 2, nhk = 1;  // batch 1, query head 2 (key head 1)
      p.alibi.set(nb * c.hq + nh, kNaN);
      FwdRun f = run_fwd(p, g.fwd);
      BwdRun b = run_bwd(p, f, g);
      // Whether element e of a [rows, heads, dim] output lies in (batch nb, head hh).
      const auto in_nan = [&](int64_t heads, int64_t dim, int64_t hh, bool keys, int64_t e) {
        const int64_t row = e / (heads * dim), h = e / dim % heads;
        const auto s = static_cast<size_t>(nb);
        const int64_t start = varlen ? (keys ? p.k0[s] : p.q0[s]) : nb * (keys ? p.SK : p.SQ);
        const int64_t len = keys ? p.lk[s] : p.lq[s];
        return h == hh && row >= start && row < start + len;
      };
      const auto check = [&](const Buf& got, const Buf& finite, const std::string& what,
                             const std::function<bool(int64_t)>& nan_at) {
        int64_t nans = 0, bad = 0;
        for (int64_t e = 0; e < got.n; ++e) {
          if (nan_at(e)) {
            nans += std::isnan(got.get(e)) && !got.poisoned(e);
            bad += !(std::isnan(got.get(e)) && !got.poisoned(e));
          } else {
            bad += got.raw(e) != finite.raw(e);
          }
        }
        EXPECT_EQ(bad, 0) << what << (varlen ? " varlen" : " batch");
        EXPECT_GT(nans, 0) << what;
      };
      check(f.out, f0.out, "out", [&](int64_t e) { return in_nan(c.hq, c.dv, nh, false, e); });
      check(f.lse, f0.lse, "lse", [&](int64_t e) {
        const int64_t i0 = p.lse_at(nb, nh, 0);
        return e >= i0 && e < i0 + p.lq[static_cast<size_t>(nb)];
      });
      check(b.dq, b0.dq, "dq", [&](int64_t e) { return in_nan(c.hq, c.d, nh, false, e); });
      check(b.dk, b0.dk, "dk", [&](int64_t e) { return in_nan(c.hk, c.d, nhk, true, e); });
      check(b.dv, b0.dv, "dv", [&](int64_t e) { return in_nan(c.hk, c.dv, nhk, true, e); });
    }
  }
}

// ---- grids --------------------------------------------------------------------------------------

// The reference of a full grid with the rows a short grid does not cover marked unwritten.
void uncover_rows(const Problem& p, Ref& r, const Layout& l, bool keys, int64_t dim, kn::Dim3 g,
                  int64_t tile) {
  for (int64_t b = 0; b < p.nseq; ++b) {
    const auto s = static_cast<size_t>(b);
    for (int64_t h = 0; h < (keys ? p.c.hk : p.c.hq); ++h) {
      for (int64_t i = 0; i < (keys ? p.lk[s] : p.lq[s]); ++i) {
        if (covers(g, tile, keys ? p.SK : p.SQ, i, h, b)) continue;
        const int64_t o = Problem::at(l, keys ? p.k0[s] : p.q0[s], b, i, h);
        for (int64_t e = 0; e < dim; ++e) r.v[static_cast<size_t>(o + e)] = kNaN;
      }
    }
  }
}
void uncover_stats(const Problem& p, Ref& r, kn::Dim3 g, int64_t tile) {  // lse, delta
  for (int64_t b = 0; b < p.nseq; ++b)
    for (int64_t h = 0; h < p.c.hq; ++h)
      for (int64_t i = 0; i < p.lq[static_cast<size_t>(b)]; ++i)
        if (!covers(g, tile, p.SQ, i, h, b)) r.v[static_cast<size_t>(p.lse_at(b, h, i))] = kNaN;
}
void uncover_dbias(const Problem& p, Ref& r, kn::Dim3 g, int64_t tile) {
  for (int64_t b = 0; b < p.nseq; ++b)
    for (int64_t h = 0; h < p.c.hq; ++h)
      for (int64_t i = 0; i < p.SQ; ++i)
        if (!covers(g, tile, p.SQ, i, h, b))
          for (int64_t j = 0; j < p.SK; ++j)
            r.v[static_cast<size_t>(p.dbias_at(b, h, i, j))] = kNaN;
}

TEST(AttnTwins, ShortGridsLeaveTheirRowsUnwritten) {
  for (bool varlen : {false, true}) {
    Config c;
    c.hq = 4, c.hk = 2, c.d = 64, c.dv = 64, c.bias = true, c.right = 0, c.seed = 1000 + varlen;
    c.batch = 2, c.sq = 130, c.sk = 100;
    if (varlen) c = with_lengths(c, {{130, 100}, {70, 129}, {129, 65}});
    Problem p(c);
    const Grids full = full_grids(p);
    const int64_t rq = ka::kRowsQ[p.bucket], rk = ka::kRowsK[p.bucket];
    FwdRun fx = run_fwd(p, full.fwd);  // the backward reads a complete forward
    const RefFwd rf = ref_forward(p, full.fwd);
    const RefBwd rb = ref_backward(p, fx.out, full);
    for (int which = 0; which < 4; ++which) {  // fwd, pre, dkdv, dq
      for (int axis = 0; axis < 3; ++axis) {   // x, y, z
        Grids g = full;
        kn::Dim3& d = which == 0 ? g.fwd : which == 1 ? g.pre : which == 2 ? g.dkdv : g.dq;
        uint32_t& n = axis == 0 ? d.x : axis == 1 ? d.y : d.z;
        ASSERT_GE(n, 2u);
        n -= 1;
        const std::string what = "grid " + std::to_string(which) + " axis " + std::to_string(axis) +
                                 (varlen ? " varlen" : " batch");
        if (which == 0) {
          FwdRun f = run_fwd(p, g.fwd);
          RefFwd r = rf;
          uncover_rows(p, r.out, p.lo, false, c.dv, g.fwd, rq);
          uncover_stats(p, r.lse, g.fwd, rq);
          EXPECT_TRUE(close(f.out, r.out, tol_for(c.dtype), "out, " + what));
          EXPECT_TRUE(close(f.lse, r.lse, tol_for(DType::kF32), "lse, " + what));
          continue;
        }
        BwdRun b = run_bwd(p, fx, g);
        RefBwd r = rb;
        if (which == 1) {  // the pre pass alone: the others then read unwritten delta rows
          uncover_stats(p, r.delta, g.pre, ka::kPreRows);
          EXPECT_TRUE(close(b.delta, r.delta, tol_for(DType::kF32), "delta, " + what));
          continue;
        }
        uncover_rows(p, r.dq, p.ldq, false, c.d, g.dq, rq);
        uncover_dbias(p, r.dbias, g.dq, rq);
        uncover_rows(p, r.dk, p.ldk, true, c.d, g.dkdv, rk);
        uncover_rows(p, r.dv, p.ldv, true, c.dv, g.dkdv, rk);
        EXPECT_TRUE(close(b.dq, r.dq, tol_for(c.dtype), "dq, " + what));
        EXPECT_TRUE(close(b.dk, r.dk, tol_for(c.dtype), "dk, " + what));
        EXPECT_TRUE(close(b.dv, r.dv, tol_for(c.dtype), "dv, " + what));
        EXPECT_TRUE(close(b.dbias, r.dbias, {1e-5, 1e-5}, "dbias, " + what));
      }
    }
  }
}

TEST(AttnTwins, LargerBucketsGiveTheSameAndSmallerOnesNaN) {
  for (int dim : {128, 256}) {  // d = 64 problems on the d128 and d256 kernels
    Config c;
    c.dtype = DType::kF16, c.batch = 1, c.sq = 70, c.sk = 70, c.hq = 2, c.hk = 1, c.d = 64;
    c.dv = 64, c.right = 0, c.kernel_dim = dim;
    EXPECT_TRUE(check_problem(c));
  }
  // A d = 128 problem on the d64 kernels: a kernel cannot, so its twin writes NaN.
  Config c;
  c.batch = 1, c.sq = 70, c.sk = 70, c.hq = 2, c.hk = 1, c.d = 128, c.dv = 128, c.kernel_dim = 64;
  Problem p(c);
  const Grids g = full_grids(p);
  FwdRun f = run_fwd(p, g.fwd);
  BwdRun b = run_bwd(p, f, g);
  for (const Buf* buf : {&f.out, &f.lse, &b.dq, &b.dk, &b.dv}) {
    int64_t nan = 0;
    for (int64_t i = 0; i < buf->n; ++i) nan += std::isnan(buf->get(i)) && !buf->poisoned(i);
    EXPECT_EQ(nan, buf->n);
  }
}

// ---- GQA reduction
// ---------------------------------------------------------------------------------

TEST(AttnTwins, GqaReduce) {
  for (DType t : kDtypes) {
    for (auto [rows, hk, group, dim] :
         {std::array<int64_t, 4>{300, 2, 4, 128}, std::array<int64_t, 4>{7, 1, 8, 40},
          std::array<int64_t, 4>{129, 3, 2, 256}}) {
      Buf src(t, rows * hk * group * dim), dst(t, rows * hk * dim);
      Rng rng(static_cast<uint64_t>(rows + dim));
      for (int64_t i = 0; i < src.n; ++i) src.set(i, rng.uniform(-3, 3));
      kn::AttnGqaReduceArgs a{};
      a.src = src.data();
      a.dst = dst.data();
      a.rows = rows;
      a.heads_k = static_cast<int>(hk);
      a.group = static_cast<int>(group);
      a.dim = static_cast<int>(dim);
      const int64_t per = int64_t{ka::kReduceThreads} * 4;
      for (int64_t blocks : {(dst.n + per - 1) / per, (dst.n + per - 1) / per - 1}) {
        if (blocks < 1) continue;
        dst.poison();
        launch(std::string("jax_aiter_attn_gqa_reduce_") + (t == DType::kBF16 ? "bf16" : "f16"), a,
               {static_cast<uint32_t>(blocks), 1, 1}, static_cast<uint32_t>(ka::kReduceThreads));
        std::vector<double> ref(static_cast<size_t>(dst.n), kNaN);
        for (int64_t e = 0; e < std::min(dst.n, blocks * per); ++e) {
          const int64_t c = e % dim, h = (e / dim) % hk, r = e / (dim * hk);
          double s = 0;
          for (int64_t g = 0; g < group; ++g)
            s += src.get((r * hk * group + h * group + g) * dim + c);
          ref[static_cast<size_t>(e)] = s;
        }
        EXPECT_TRUE(
            close(dst, ref, tol_for(t), "gqa reduce, " + std::to_string(blocks) + " blocks"));
      }
    }
  }
}

// ---- the math API as AITER's twins use it
// ----------------------------------------------------------

// A View of a batch-mode Problem, as another twin would build it.
am::View view_of(Problem& p) {
  am::View v;
  v.dtype = p.c.dtype;
  v.q = {p.q.data(), p.lq_in.batch_stride, p.lq_in.seq_stride, p.lq_in.head_stride};
  v.k = {p.k.data(), p.lk_in.batch_stride, p.lk_in.seq_stride, p.lk_in.head_stride};
  v.v = {p.v.data(), p.lv_in.batch_stride, p.lv_in.seq_stride, p.lv_in.head_stride};
  v.batch = p.nseq, v.seqlen_q = p.SQ, v.seqlen_k = p.SK, v.total_q = p.rows_q,
  v.total_k = p.rows_k;
  v.heads_q = p.c.hq, v.heads_k = p.c.hk, v.head_dim = p.c.d, v.head_dim_v = p.c.dv;
  v.scale = p.scale, v.window_left = p.c.left, v.window_right = p.c.right;
  return v;
}

TEST(AttnMath, RoundingModesOfTheForward) {
  Config c;
  c.batch = 1, c.sq = 40, c.sk = 50, c.hq = 2, c.hk = 2, c.d = 64, c.dv = 64, c.right = 0;
  Problem p(c);
  const am::View v = view_of(p);
  const RefFwd rf = ref_forward(p, full_grids(p).fwd);
  std::vector<Buf> outs;
  for (am::Rounding r :
       {am::Rounding::kNearestEven, am::Rounding::kNearestAway, am::Rounding::kTowardZero}) {
    Buf out(DType::kBF16, p.rows_q * c.hq * c.dv);
    const am::Output o{out.data(), p.lo.batch_stride, p.lo.seq_stride, p.lo.head_stride};
    for (int64_t h = 0; h < c.hq; ++h) am::forward_rows(v, o, {}, 0, h, 0, c.sq, r);
    // Toward zero is off by up to one ulp (2^-7 relative), the nearest modes by half of one.
    EXPECT_TRUE(close(out, rf.out, {0x1p-12, r == am::Rounding::kTowardZero ? 0x1p-7 : 0x1p-8},
                      "rounding " + std::to_string(static_cast<int>(r))));
    outs.push_back(std::move(out));
  }
  int64_t differ = 0;
  for (int64_t i = 0; i < outs[0].n; ++i) {
    EXPECT_LE(std::abs(outs[2].get(i)), std::abs(outs[0].get(i)));  // truncation never grows
    EXPECT_LE(std::abs(outs[0].get(i)), std::abs(outs[1].get(i)));  // nor does even beat away
    differ += outs[2].raw(i) != outs[0].raw(i);
  }
  EXPECT_GT(differ, outs[0].n / 4);
}

TEST(AttnMath, SplitsAndFoldsAgreeWithTheWhole) {
  // dq accumulated key tile by key tile (AITER's dq accumulator), and dk/dv per query head folded
  // afterwards (AITER's GQA workspace), against dq_rows and dkdv_group_rows in one go.
  Config c;
  c.dtype = DType::kF16, c.batch = 1, c.sq = 100, c.sk = 90, c.hq = 4, c.hk = 2, c.d = 64;
  c.dv = 64, c.left = 50, c.right = 3;
  Problem p(c);
  const Grids g = full_grids(p);
  FwdRun f = run_fwd(p, g.fwd);
  BwdRun b = run_bwd(p, f, g);  // delta
  const am::View v = view_of(p);
  const am::BwdInputs in{
      {p.dout.data(), p.ldo_in.batch_stride, p.ldo_in.seq_stride, p.ldo_in.head_stride},
      {static_cast<const float*>(f.lse.data()), c.hq * p.SQ, p.SQ},
      {static_cast<const float*>(b.delta.data()), c.hq * p.SQ, p.SQ}};
  const int64_t d = c.d;
  for (int64_t h = 0; h < c.hq; ++h) {
    std::vector<float> whole(static_cast<size_t>(c.sq * d)), tiles(whole.size());
    am::dq_rows(v, in, 0, h, 0, c.sq, {whole.data(), d});
    for (int64_t j0 = 0; j0 < c.sk; j0 += 32) {  // key tiles, with dk/dv asked too (AITER's kernel)
      std::vector<float> dk(static_cast<size_t>(32 * d)), dv(dk.size());
      am::backward_tile(v, in, 0, h, 0, c.sq, j0, j0 + 32,
                        {{tiles.data(), d}, {dk.data(), d}, {dv.data(), d}, {}});
    }
    for (size_t i = 0; i < whole.size(); ++i) {
      ASSERT_NEAR(tiles[i], whole[i], 1e-5 * (1 + std::abs(whole[i]))) << h << " " << i;
    }
  }
  // Per query head into a [sk, hq, d] float workspace, folded to [sk, hk, d].
  const int64_t group = c.hq / c.hk;
  std::vector<float> per_head(static_cast<size_t>(c.sk * c.hq * d)), per_head_v(per_head.size());
  for (int64_t h = 0; h < c.hq; ++h) {
    am::dkdv_rows(v, in, 0, h, 0, c.sk, {per_head.data() + h * d, c.hq * d},
                  {per_head_v.data() + h * d, c.hq * d});
  }
  Buf folded(c.dtype, c.sk * c.hk * d), folded_v(c.dtype, folded.n);
  am::fold_heads(per_head.data(), DType::kF32, folded.data(), c.dtype, c.sk, c.hk, group, d, 0,
                 folded.n);
  am::fold_heads(per_head_v.data(), DType::kF32, folded_v.data(), c.dtype, c.sk, c.hk, group, d, 0,
                 folded_v.n);
  const RefBwd rb = ref_backward(p, f.out, g);
  EXPECT_TRUE(close(folded, rb.dk, tol_for(c.dtype), "folded dk"));
  EXPECT_TRUE(close(folded_v, rb.dv, tol_for(c.dtype), "folded dv"));
  EXPECT_TRUE(close(b.dk, rb.dk, tol_for(c.dtype), "dk"));
}

// ---- size and speed
// --------------------------------------------------------------------------------

TEST(AttnTwins, LargeProblemIsFastAndRight) {
  // b = 2, s = 512, hq = 8, hk = 2, d = 128: forward + backward through the twins, timed, then
  // checked against the reference on sequence 1, key head 1 (query heads 4..7; the float64
  // reference is slower than the twins).
  Config c;
  c.batch = 2, c.sq = 512, c.sk = 512, c.hq = 8, c.hk = 2, c.d = 128, c.dv = 128;
  Problem p(c);
  const Grids g = full_grids(p);
  const auto t0 = std::chrono::steady_clock::now();
  FwdRun f = run_fwd(p, g.fwd);
  const auto t1 = std::chrono::steady_clock::now();
  BwdRun b = run_bwd(p, f, g);
  const auto t2 = std::chrono::steady_clock::now();
  const double fwd_s = std::chrono::duration<double>(t1 - t0).count();
  const double bwd_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("[ timing ] b 2 s 512 hq 8 hk 2 d 128 bf16: forward %.3f s, backward %.3f s\n", fwd_s,
              bwd_s);
  const Only only{1, 1};
  const RefFwd rf = ref_forward(p, g.fwd, only);
  EXPECT_TRUE(close(f.out, rf.out, tol_for(c.dtype), "out"));
  EXPECT_TRUE(close(f.lse, rf.lse, tol_for(DType::kF32), "lse"));
  const RefBwd rb = ref_backward(p, f.out, g, only);
  EXPECT_TRUE(close(b.delta, rb.delta, tol_for(DType::kF32), "delta"));
  EXPECT_TRUE(close(b.dq, rb.dq, tol_for(c.dtype), "dq"));
  EXPECT_TRUE(close(b.dk, rb.dk, tol_for(c.dtype), "dk"));
  EXPECT_TRUE(close(b.dv, rb.dv, tol_for(c.dtype), "dv"));
}

// A tolerance that passes anything is no test: the same problem with the scale off by 1% (or one
// key's values changed) must fail.
TEST(AttnTwins, TolerancesCatchSmallErrors) {
  Config c;
  c.batch = 1, c.sq = 64, c.sk = 64, c.hq = 2, c.hk = 1, c.d = 64, c.dv = 64;
  for (DType t : kDtypes) {
    c.dtype = t;
    Problem p(c);
    const Grids g = full_grids(p);
    FwdRun f = run_fwd(p, g.fwd);
    p.scale *= 1.01f;  // the reference now computes another problem
    p.clear_cache();
    const RefFwd rf = ref_forward(p, g.fwd);
    EXPECT_FALSE(close(f.out, rf.out, tol_for(t), "out"));
    EXPECT_FALSE(close(f.lse, rf.lse, tol_for(DType::kF32), "lse"));
    p.scale /= 1.01f;
    p.clear_cache();
    BwdRun b = run_bwd(p, f, g);
    p.vd[static_cast<size_t>(Problem::at(p.lv_in, 0, 0, 5, 0) + 3)] += 0.5;  // one element of v
    const RefBwd rb = ref_backward(p, f.out, g);
    EXPECT_FALSE(close(b.dq, rb.dq, tol_for(t), "dq"));
    EXPECT_FALSE(close(b.dk, rb.dk, tol_for(t), "dk"));
  }
}

struct PrintWorst : ::testing::Environment {
  void TearDown() override {
    std::printf(
        "[ tolerance ] largest |got - ref| / (atol + rtol |ref|) over the passing checks: %.3f\n",
        g_worst);
  }
};
const auto* const kPrintWorst = ::testing::AddGlobalTestEnvironment(new PrintWorst);

}  // namespace
