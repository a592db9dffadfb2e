// Host attention math (the semantics of /work/notes/attention-design.md and
// kernels/shared/attention.h) over a plain view of one problem: pointers, element strides, the
// sequence lengths (batch or varlen), scale, window, bias, ALiBi and dropout. The host twins of our
// portable kernels (host_twins/attention.hpp) and of AITER's ASM kernels call it with their own
// argument structs, grids, workspaces and rounding: everything here works on one sequence b, one
// head and a range of rows, and writes either the final outputs (forward, delta) or float32
// accumulators the caller owns (backward), so a caller decides what is summed where and how it is
// rounded.
//
// Numerics: scores, softmax, products and every accumulation a GPU tile makes are float32
// (dot products in eight interleaved partial sums, exp in float32); the cheap per-row sums (the
// softmax denominator, delta) are double, so their error stays below float32 rounding whatever the
// row length. The forward's softmax is online over chunks of 64 keys, as a GPU kernel's is, so
// memory stays bounded for any sequence length.
//
// Conventions (all counts and indices int64_t):
// - Rows i (queries) and j (keys) count from the sequence's start; a range [i0, i1) is clipped to
//   the sequence, so a caller may pass a tile that runs past its end.
// - Element offset of (b, row, head, c) in an operand: b * batch_stride + (start + row) *
//   seq_stride + head * head_stride + c, with start the sequence's first row (0 in batch mode, and
//   batch_stride 0 in varlen mode).
// - lse / delta (float32): b * batch_stride + head * head_stride + start + row.
// - A row with no visible key, or whose visible scores are all -inf: out 0, lse +inf, and no
//   gradient anywhere (exp(s - lse) = 0). A row with a NaN score (a NaN input, bias or ALiBi
//   slope): out and lse NaN, and so its gradients and those of every key it sees.
// - A sharded call (View::shard, kernels/shared/attention.h "Sharded calls"): rows, heads and
//   batches here are this call's; the mask, ALiBi and dropout see them as the whole call's
//   (Sequence::off, and the shard's b0, h0, r0 in the dropout counter).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/e4m3_values.hpp"
#include "jax_aiter/kernels/shared/attention.h"

namespace jax_aiter::host_twins::attn_math {

// ---- element conversions ----------------------------------------------------------------------

// How a float32 is rounded to bf16; the values are AITER's bf16_cvt codes. f16 is always rounded to
// nearest even (AITER's f16 kernels have no mode).
enum class Rounding : uint8_t { kNearestEven = 0, kNearestAway = 1, kTowardZero = 2 };

inline float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t em = h & 0x7fffu;
  if (em >= 0x7c00u) return std::bit_cast<float>(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
  if (em >= 0x0400u) return std::bit_cast<float>(sign | ((em + 0x1c000u) << 13));  // rebias 15->127
  const float sub = static_cast<float>(em) * 0x1p-24f;                             // subnormal
  return sign ? -sub : sub;
}

// bf16 bits of x: nearest even, nearest with ties away from zero, or truncated. NaN stays a (quiet)
// NaN of the same sign in every mode; overflow gives +-inf except toward zero (the largest finite).
inline uint16_t round_bf16(float x, Rounding r) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  switch (r) {
    case Rounding::kNearestAway: return static_cast<uint16_t>((u + 0x8000u) >> 16);
    case Rounding::kTowardZero: return static_cast<uint16_t>(u >> 16);
    case Rounding::kNearestEven: break;
  }
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline uint16_t round_f16(float x) { return std::bit_cast<uint16_t>(static_cast<_Float16>(x)); }

// Element i of a bf16, f16, e4m3 (exact) or f32 array.
inline float load(const void* base, int64_t i, DType t) {
  switch (t) {
    case DType::kBF16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kF16: return f16_bits_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
      return e4m3_values(t == DType::kF8E4M3FNUZ)[static_cast<const uint8_t*>(base)[i]];
    default: return static_cast<const float*>(base)[i];
  }
}

inline void store(void* base, int64_t i, DType t, float x, Rounding r = Rounding::kNearestEven) {
  switch (t) {
    case DType::kBF16: static_cast<uint16_t*>(base)[i] = round_bf16(x, r); break;
    case DType::kF16: static_cast<uint16_t*>(base)[i] = round_f16(x); break;
    default: static_cast<float*>(base)[i] = x; break;
  }
}

// ---- the view of one problem ------------------------------------------------------------------

// A [batch, seq, head, dim] operand (dim contiguous), strides in elements.
struct Operand {
  const void* data = nullptr;
  int64_t batch_stride = 0, seq_stride = 0, head_stride = 0;
  int64_t offset(int64_t b, int64_t row, int64_t h) const {
    return b * batch_stride + row * seq_stride + h * head_stride;
  }
};
struct Output {
  void* data = nullptr;
  int64_t batch_stride = 0, seq_stride = 0, head_stride = 0;
  int64_t offset(int64_t b, int64_t row, int64_t h) const {
    return b * batch_stride + row * seq_stride + h * head_stride;
  }
};
// float32 per-row statistics (lse, delta): [batch, head, row], rows contiguous.
struct RowsIn {
  const float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0;
};
struct RowsOut {
  float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0;
};
// A float32 buffer of rows owned by the caller; row 0 is the first row of the range asked for.
// rows / cols bound what may be written (from row 0 / column 0; dbias of a varlen sequence longer
// than the buffer's [seqlen_q, seqlen_k]).
struct Accum {
  float* data = nullptr;
  int64_t row_stride = 0;
  int64_t rows = std::numeric_limits<int64_t>::max(), cols = std::numeric_limits<int64_t>::max();
  float* row(int64_t r) const { return data + r * row_stride; }
};

struct View {
  // q, k, v (and out, dout where read): bf16, f16 or f32; or e4m3 q, k, v (forward only) with out
  // bf16, scale holding their descales' product and out_scale v's descale.
  DType dtype = DType::kBF16;
  float out_scale = 1.f;
  Operand q, k, v;
  // Batch mode: seqlen_q/k are the lengths. Varlen mode (cu_seqlens_q/k non-null, batch strides
  // 0): the maxima the grids are sized from (a longer sequence is computed whole; only the bias's
  // extent is theirs), and total_q/k are the rows of q/k.
  int64_t batch = 0, seqlen_q = 0, seqlen_k = 0, total_q = 0, total_k = 0;
  int64_t heads_q = 1, heads_k = 1, head_dim = 0, head_dim_v = 0;
  const int* cu_seqlens_q = nullptr;
  const int* cu_seqlens_k = nullptr;
  float scale = 1.f;
  int window_left = -1, window_right = -1;  // attn_visible's; causal is (-1, 0)
  // Bias read at b * batch + h * head + i * row + j * col (0 along broadcast dimensions).
  const void* bias = nullptr;
  DType bias_dtype = DType::kF32;
  int64_t bias_batch_stride = 0, bias_head_stride = 0, bias_row_stride = 0, bias_col_stride = 0;
  const float* alibi_slopes = nullptr;  // slope of (b, h): alibi_slopes[b * alibi_batch_stride + h]
  int64_t alibi_batch_stride = 0;
  const unsigned* rng_key = nullptr;  // read only when dropout_threshold > 0
  unsigned dropout_threshold = 0;
  float dropout_scale = 1.f;
  const int* shard = nullptr;  // int32[4] {b0, h0, r0, sq_total}, or null (unsharded)

  int64_t group() const { return heads_k > 0 ? heads_q / heads_k : 1; }
  DType out_dtype() const {
    return dtype == DType::kF8E4M3FN || dtype == DType::kF8E4M3FNUZ ? DType::kBF16 : dtype;
  }
  int64_t key_head(int64_t h) const { return h / std::max<int64_t>(group(), 1); }
  bool dropout() const { return dropout_threshold > 0; }
};

// Where sequence b's rows start in q / k and how many there are. Varlen: every cu_seqlens entry
// clamped into [0, total], the end to at least the start (never to the maximum). Query row i
// has key i + off on its diagonal (attn_diagonal_offset: sk - sq unless the call is a row shard).
struct Sequence {
  int64_t q_start = 0, k_start = 0, sq = 0, sk = 0, off = 0;
};
inline Sequence sequence(const View& v, int64_t b) {
  Sequence s{0, 0, std::max<int64_t>(v.seqlen_q, 0), std::max<int64_t>(v.seqlen_k, 0)};
  auto varlen = [&](const int* cu, int64_t total, int64_t& start, int64_t& len) {
    total = std::max<int64_t>(total, 0);
    start = std::clamp<int64_t>(cu[b], 0, total);
    len = std::clamp<int64_t>(cu[b + 1], start, total) - start;
  };
  if (v.cu_seqlens_q) varlen(v.cu_seqlens_q, v.total_q, s.q_start, s.sq);
  if (v.cu_seqlens_k) varlen(v.cu_seqlens_k, v.total_k, s.k_start, s.sk);
  s.off =
      kernels::attention::attn_diagonal_offset(s.sq, s.sk, kernels::attention::attn_shard(v.shard));
  return s;
}

// A half-open range of rows or columns.
struct Range {
  int64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
  Range operator&(Range o) const {
    const int64_t l = std::max(lo, o.lo);
    return {l, std::max(l, std::min(hi, o.hi))};
  }
};

// The keys among sk that a query whose diagonal is key `diagonal` sees (attn_visible_at in closed
// form: a contiguous range whose ends never decrease as the diagonal grows).
inline Range visible_keys_at(int64_t diagonal, int64_t sk, int left, int right) {
  const int64_t lo = left >= 0 ? std::clamp<int64_t>(diagonal - left, 0, sk) : 0;
  const int64_t hi = right >= 0 ? std::clamp<int64_t>(diagonal + right + 1, 0, sk) : sk;
  return {lo, std::max(lo, hi)};
}
// The queries among sq that see key j, query i's diagonal being key i + off (the same relation
// read the other way).
inline Range visible_queries_at(int64_t j, int64_t off, int64_t sq, int left, int right) {
  const int64_t i_of_diagonal = j - off;  // the query whose diagonal is j
  const int64_t lo = right >= 0 ? std::clamp<int64_t>(i_of_diagonal - right, 0, sq) : 0;
  const int64_t hi = left >= 0 ? std::clamp<int64_t>(i_of_diagonal + left + 1, 0, sq) : sq;
  return {lo, std::max(lo, hi)};
}
// The same in an unsharded sequence of sq queries and sk keys (attn_visible).
inline Range visible_keys(int64_t i, int64_t sq, int64_t sk, int left, int right) {
  return visible_keys_at(i + sk - sq, sk, left, right);
}
inline Range visible_queries(int64_t j, int64_t sq, int64_t sk, int left, int right) {
  return visible_queries_at(j, sk - sq, sq, left, right);
}

namespace detail {

inline constexpr int64_t kChunk = 64;  // query rows and keys per tile of the loops below
inline constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 4;  // "no bound"

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

typedef float F4 __attribute__((vector_size(16)));
inline F4 load4(const float* p) {
  F4 r;
  std::memcpy(&r, p, sizeof r);
  return r;
}
inline void put4(float* p, F4 v, bool add) {
  if (add) v += load4(p);
  std::memcpy(p, &v, sizeof v);
}

// C[m][n] (+)= sum over k < K of A[m * am + k * ak] B[k * ldb + n] for m < M, n < N (M a multiple
// of 4, N of 8): float32 products summed in k order, in 4 x 8 register tiles.
template <bool kAdd>
void gemm(float* __restrict C, int64_t ldc, const float* __restrict A, int64_t am, int64_t ak,
          const float* __restrict B, int64_t ldb, int64_t M, int64_t N, int64_t K) {
  for (int64_t m = 0; m < M; m += 4) {
    for (int64_t n = 0; n < N; n += 8) {
      F4 c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{};
      const float* a = A + m * am;
      const float* b = B + n;
      for (int64_t k = 0; k < K; ++k, a += ak, b += ldb) {
        const F4 b0 = load4(b), b1 = load4(b + 4);
        const float x0 = a[0], x1 = a[am], x2 = a[2 * am], x3 = a[3 * am];
        const F4 a0 = {x0, x0, x0, x0}, a1 = {x1, x1, x1, x1}, a2 = {x2, x2, x2, x2},
                 a3 = {x3, x3, x3, x3};
        c00 += a0 * b0, c01 += a0 * b1, c10 += a1 * b0, c11 += a1 * b1;
        c20 += a2 * b0, c21 += a2 * b1, c30 += a3 * b0, c31 += a3 * b1;
      }
      float* c = C + m * ldc + n;
      put4(c, c00, kAdd), put4(c + 4, c01, kAdd), c += ldc;
      put4(c, c10, kAdd), put4(c + 4, c11, kAdd), c += ldc;
      put4(c, c20, kAdd), put4(c + 4, c21, kAdd), c += ldc;
      put4(c, c30, kAdd), put4(c + 4, c31, kAdd);
    }
  }
}

// y[c] += a x[c] for c < n.
inline void axpy(float* __restrict y, float a, const float* __restrict x, int64_t n) {
  for (int64_t c = 0; c < n; ++c) y[c] += a * x[c];
}

template <class Load>
void load_rows_as(const void* base, int64_t first, int64_t stride, int64_t rows, int64_t dim,
                  float* dst, int64_t width, Load load_one) {
  for (int64_t r = 0; r < rows; ++r) {
    float* out = dst + r * width;
    const int64_t off = first + r * stride;
    for (int64_t c = 0; c < dim; ++c) out[c] = load_one(base, off + c);
  }
}

// `rows` rows of `dim` elements of dtype t as float32, row r at dst + r * width.
inline void load_rows(const void* base, DType t, int64_t first, int64_t stride, int64_t rows,
                      int64_t dim, float* dst, int64_t width) {
  switch (t) {
    case DType::kBF16:
      load_rows_as(base, first, stride, rows, dim, dst, width, [](const void* p, int64_t i) {
        return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
      });
      break;
    case DType::kF16:
      load_rows_as(base, first, stride, rows, dim, dst, width, [](const void* p, int64_t i) {
        return f16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
      });
      break;
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ: {
      const float* values = e4m3_values(t == DType::kF8E4M3FNUZ).data();
      load_rows_as(base, first, stride, rows, dim, dst, width, [values](const void* p, int64_t i) {
        return values[static_cast<const uint8_t*>(p)[i]];
      });
      break;
    }
    default:
      load_rows_as(base, first, stride, rows, dim, dst, width,
                   [](const void* p, int64_t i) { return static_cast<const float*>(p)[i]; });
      break;
  }
}

// One (sequence, query head) and the float32 tiles of a chunk of queries and a chunk of keys, each
// zero-padded to whole tiles (so the register tiles of gemm read zeros, never garbage):
//   q [kChunk][dp], dout [kChunk][dvp], k [kChunk][dp] and kt [dp][kChunk] (transposed),
//   v [kChunk][dvp] and vt [dvp][kChunk]; bias and keep [kChunk][kChunk]; s, dp_, p, ds the
//   [kChunk][kChunk] score tiles.
struct Head {
  const View& v;
  Sequence s;
  int64_t b, h, hk, dp, dvp;
  kernels::attention::AttnShard shard;  // the dropout counter's offsets
  float slope = 0.f;
  int64_t i0 = 0, ni = 0, j0 = 0, nj = 0;  // the chunks loaded
  std::vector<float> q, dout, k, kt, vv, vt, bias, st, dpt, pt, dst, lse, delta;
  std::vector<unsigned char> keep;

  Head(const View& view, int64_t b_, int64_t h_)
      : v(view),
        s(sequence(view, b_)),
        b(b_),
        h(h_),
        hk(view.key_head(h_)),
        dp(round_up(std::max<int64_t>(view.head_dim, 0), 8)),
        dvp(round_up(std::max<int64_t>(view.head_dim_v, 0), 8)),
        shard(kernels::attention::attn_shard(view.shard)) {
    if (view.alibi_slopes) slope = view.alibi_slopes[b * view.alibi_batch_stride + h];
    const auto tile = static_cast<size_t>(kChunk * kChunk);
    q.assign(static_cast<size_t>(kChunk * dp), 0.f);
    dout.assign(static_cast<size_t>(kChunk * dvp), 0.f);
    k.assign(q.size(), 0.f);
    kt.assign(q.size(), 0.f);
    vv.assign(dout.size(), 0.f);
    vt.assign(dout.size(), 0.f);
    st.assign(tile, 0.f);
    pt.assign(tile, 0.f);
    lse.assign(kChunk, 0.f);
    delta.assign(kChunk, 0.f);
  }

  Range keys_of(int64_t i) const {
    return visible_keys_at(i + s.off, s.sk, v.window_left, v.window_right);
  }
  Range queries_of(int64_t j) const {
    return visible_queries_at(j, s.off, s.sq, v.window_left, v.window_right);
  }
  // The keys any of queries [first, last) sees, and the other way round.
  Range keys_of(Range rows) const { return {keys_of(rows.lo).lo, keys_of(rows.hi - 1).hi}; }
  Range queries_of(Range cols) const {
    return {queries_of(cols.lo).lo, queries_of(cols.hi - 1).hi};
  }

  // n rows into dst (rows of `width`), the padding columns and the rows past n zero.
  static void load(const Operand& t, DType dt, int64_t b, int64_t row, int64_t h, int64_t n,
                   int64_t dim, std::vector<float>& dst, int64_t width) {
    load_rows(t.data, dt, t.offset(b, row, h), t.seq_stride, n, dim, dst.data(), width);
    for (int64_t r = 0; r < n && dim < width; ++r) {
      std::fill(dst.data() + r * width + dim, dst.data() + (r + 1) * width, 0.f);
    }
    std::fill(dst.begin() + n * width, dst.end(), 0.f);
  }
  void load_queries(int64_t first, int64_t n, const Operand* dout_op) {
    i0 = first, ni = n;
    load(v.q, v.dtype, b, s.q_start + first, h, n, v.head_dim, q, dp);
    if (dout_op) load(*dout_op, v.dtype, b, s.q_start + first, h, n, v.head_dim_v, dout, dvp);
  }
  void load_stats(const RowsIn& l, const RowsIn& d) {
    const int64_t base = s.q_start + i0;
    for (int64_t r = 0; r < ni; ++r) {
      lse[r] = l.data[b * l.batch_stride + h * l.head_stride + base + r];
      delta[r] = d.data[b * d.batch_stride + h * d.head_stride + base + r];
    }
  }
  void load_keys(int64_t first, int64_t n) {
    j0 = first, nj = n;
    load(v.k, v.dtype, b, s.k_start + first, hk, n, v.head_dim, k, dp);
    load(v.v, v.dtype, b, s.k_start + first, hk, n, v.head_dim_v, vv, dvp);
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t e = 0; e < dp; ++e) kt[e * kChunk + c] = k[c * dp + e];
      for (int64_t e = 0; e < dvp; ++e) vt[e * kChunk + c] = vv[c * dvp + e];
    }
    for (int64_t c = n; c < kChunk; ++c) {
      for (int64_t e = 0; e < dp; ++e) kt[e * kChunk + c] = 0.f;
      for (int64_t e = 0; e < dvp; ++e) vt[e * kChunk + c] = 0.f;
    }
  }
  // Bias and keep bits of the loaded chunks. The bias has seqlen_q rows and seqlen_k columns
  // (where not broadcast): a varlen sequence longer than them reads no bias (0) past them.
  void load_bias_and_keep() {
    if (v.bias) {
      bias.resize(static_cast<size_t>(kChunk * kChunk));
      for (int64_t r = 0; r < ni; ++r) {
        const int64_t off = b * v.bias_batch_stride + h * v.bias_head_stride +
                            (i0 + r) * v.bias_row_stride + j0 * v.bias_col_stride;
        const bool row_in = v.bias_row_stride == 0 || i0 + r < v.seqlen_q;
        for (int64_t c = 0; c < nj; ++c) {
          const bool in = row_in && (v.bias_col_stride == 0 || j0 + c < v.seqlen_k);
          bias[r * kChunk + c] =
              in ? attn_math::load(v.bias, off + c * v.bias_col_stride, v.bias_dtype) : 0.f;
        }
      }
    }
    if (v.dropout()) {
      keep.resize(static_cast<size_t>(kChunk * kChunk));
      for (int64_t r = 0; r < ni; ++r) {
        // One Philox call per 4 columns: counter (i, j / 4, h, b), word j % 4 (attn_dropout_keep),
        // with the whole call's i, h, b.
        for (int64_t jb = j0 >> 2; jb <= (j0 + nj - 1) >> 2; ++jb) {
          const auto w = kernels::attention::philox4x32_10(
              static_cast<unsigned>(shard.r0 + i0 + r), static_cast<unsigned>(jb),
              static_cast<unsigned>(shard.h0 + h), static_cast<unsigned>(shard.b0 + b),
              v.rng_key[0], v.rng_key[1]);
          for (int64_t e = 0; e < 4; ++e) {
            const int64_t c = jb * 4 + e - j0;
            if (c >= 0 && c < nj) keep[r * kChunk + c] = w.v[e] >= v.dropout_threshold;
          }
        }
      }
    }
  }
  // st = q k^T of the loaded chunks (unscaled).
  void scores() {
    gemm<false>(st.data(), kChunk, q.data(), dp, 1, kt.data(), kChunk, round_up(ni, 4),
                round_up(nj, 8), dp);
  }
  // The score of (r, c) of the chunks from st: scaled, plus bias and ALiBi.
  float score(int64_t r, int64_t c) const {
    float sv = st[r * kChunk + c] * v.scale;
    if (v.bias) sv += bias[r * kChunk + c];
    if (v.alibi_slopes) sv += kernels::attention::attn_alibi_at(slope, i0 + r + s.off, j0 + c);
    return sv;
  }
  float dropout_factor(int64_t r, int64_t c) const {
    if (!v.dropout()) return 1.f;
    return keep[r * kChunk + c] ? v.dropout_scale : 0.f;
  }
};

}  // namespace detail

// ---- forward ------------------------------------------------------------------------------------

// out and lse of query rows [i0, i1) of sequence b, head h: out rows (head_dim_v elements) rounded
// to v.out_dtype() with `rounding` (bf16) after v.out_scale, lse float32 (skipped when lse.data is
// null).
inline void forward_rows(const View& v, const Output& out, const RowsOut& lse, int64_t b, int64_t h,
                         int64_t i0, int64_t i1, Rounding rounding = Rounding::kNearestEven) {
  using namespace detail;
  Head hd(v, b, h);
  const Range rows = Range{0, hd.s.sq} & Range{i0, i1};
  const int64_t dvp = hd.dvp;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> acc(static_cast<size_t>(kChunk * dvp)), m(kChunk);
  std::vector<double> l(kChunk);
  for (int64_t ic = rows.lo; ic < rows.hi; ic += kChunk) {
    const int64_t ni = std::min(kChunk, rows.hi - ic);
    hd.load_queries(ic, ni, nullptr);
    std::fill(acc.begin(), acc.end(), 0.f);
    std::fill(m.begin(), m.end(), -kInf);
    std::fill(l.begin(), l.end(), 0.0);
    const Range keys = hd.keys_of(Range{ic, ic + ni});
    for (int64_t jc = keys.lo; jc < keys.hi; jc += kChunk) {
      const int64_t nj = std::min(kChunk, keys.hi - jc);
      hd.load_keys(jc, nj);
      hd.load_bias_and_keep();
      hd.scores();
      std::fill(hd.pt.begin(), hd.pt.end(), 0.f);
      for (int64_t r = 0; r < ni; ++r) {
        const Range vis = hd.keys_of(ic + r) & Range{jc, jc + nj};
        float* srow = hd.st.data() + r * kChunk - jc;  // indexed by key j
        float chunk_max = -kInf;
        bool nan = false;
        for (int64_t j = vis.lo; j < vis.hi; ++j) {
          srow[j] = hd.score(r, j - jc);
          chunk_max = std::max(chunk_max, srow[j]);
          nan = nan || std::isnan(srow[j]);
        }
        if (nan) {  // NaN in, NaN out: the row's out and lse
          l[r] = std::numeric_limits<double>::quiet_NaN();
          continue;
        }
        if (chunk_max == -kInf) continue;  // nothing visible here (or all -inf)
        if (chunk_max > m[r]) {            // online softmax: rescale what the row has so far
          if (l[r] != 0.0) {
            const double alpha = std::exp(static_cast<double>(m[r]) - chunk_max);
            l[r] *= alpha;
            const float fa = static_cast<float>(alpha);
            for (int64_t c = 0; c < dvp; ++c) acc[r * dvp + c] *= fa;
          }
          m[r] = chunk_max;
        }
        double sum = 0.0;
        float* prow = hd.pt.data() + r * kChunk - jc;
        for (int64_t j = vis.lo; j < vis.hi; ++j) {
          const float p = std::exp(srow[j] - m[r]);
          sum += p;
          prow[j] = p * hd.dropout_factor(r, j - jc);
        }
        l[r] += sum;
      }
      gemm<true>(acc.data(), dvp, hd.pt.data(), kChunk, 1, hd.vv.data(), dvp, round_up(ni, 4), dvp,
                 nj);
    }
    for (int64_t r = 0; r < ni; ++r) {
      const int64_t row = hd.s.q_start + ic + r;
      const int64_t off = out.offset(b, row, h);
      const bool empty = l[r] == 0.0;  // (NaN: not empty, and inv NaN)
      const float inv = empty ? 0.f : static_cast<float>(1.0 / l[r]);
      const DType ot = v.out_dtype();
      for (int64_t c = 0; c < v.head_dim_v; ++c) {
        store(out.data, off + c, ot, acc[r * dvp + c] * inv * v.out_scale, rounding);
      }
      if (lse.data) {
        lse.data[b * lse.batch_stride + h * lse.head_stride + row] =
            empty ? kInf : static_cast<float>(static_cast<double>(m[r]) + std::log(l[r]));
      }
    }
  }
}

// ---- backward -----------------------------------------------------------------------------------

// delta = rowsum(dout * out) (double sums, stored float32) of query rows [i0, i1); out and dout of
// v.dtype.
inline void delta_rows(const View& v, const Operand& out, const Operand& dout, const RowsOut& delta,
                       int64_t b, int64_t h, int64_t i0, int64_t i1) {
  const Sequence s = sequence(v, b);
  const Range rows = Range{0, s.sq} & Range{i0, i1};
  for (int64_t i = rows.lo; i < rows.hi; ++i) {
    const int64_t row = s.q_start + i;
    const int64_t oo = out.offset(b, row, h), od = dout.offset(b, row, h);
    double sum = 0.0;
    for (int64_t c = 0; c < v.head_dim_v; ++c) {
      sum +=
          static_cast<double>(load(out.data, oo + c, v.dtype)) * load(dout.data, od + c, v.dtype);
    }
    delta.data[b * delta.batch_stride + h * delta.head_stride + row] = static_cast<float>(sum);
  }
}

// What the backward reads besides the view: dout (v.dtype, out's layout), lse and delta (float32).
struct BwdInputs {
  Operand dout;
  RowsIn lse, delta;
};

// Where backward_tile puts its results (row 0 / column 0: the i0 and j0 passed, before clipping);
// any may be null.
//   dq: row i - i0 += scale * sum over the tile's keys of dS[i, j] k[j]      (head_dim columns)
//   dk: row j - j0 += scale * sum over the tile's queries of dS[i, j] q[i]   (head_dim columns)
//   dv: row j - j0 += sum over the tile's queries of P[i, j] Z[i, j] dout[i] (head_dim_v columns)
//   dbias: element (i - i0, j - j0) = dS[i, j] for every (i, j) of the tile inside the sequence
//          and inside dbias.rows x dbias.cols (0 where masked or the row is empty); written, not
//          added.
struct Grads {
  Accum dq, dk, dv, dbias;
};

// The backward of query head h of sequence b over queries [i0, i1) x keys [j0, j1) (both clipped
// to the sequence): P = exp(s - lse), dP = dout . v, dS = P (Z dP - delta), Z = keep * scale_drop.
// With dk or dv asked it loops key-major (a dkdv kernel's order; dq, if asked too, is added tile by
// tile), else query-major (a dq kernel's order).
inline void backward_tile(const View& v, const BwdInputs& in, int64_t b, int64_t h, int64_t i0,
                          int64_t i1, int64_t j0, int64_t j1, const Grads& g) {
  using namespace detail;
  Head hd(v, b, h);
  const int64_t ai = i0, aj = j0;  // row 0 / column 0 of the accumulators
  const Range rows = Range{0, hd.s.sq} & Range{i0, i1};
  const Range cols = Range{0, hd.s.sk} & Range{j0, j1};
  if (rows.empty() || cols.empty()) return;
  const Range dbias_rows = rows & Range{ai, ai + std::min(g.dbias.rows, kBig)},
              dbias_cols = cols & Range{aj, aj + std::min(g.dbias.cols, kBig)};
  if (g.dbias.data) {
    for (int64_t i = dbias_rows.lo; i < dbias_rows.hi; ++i) {
      std::fill(g.dbias.row(i - ai) + (dbias_cols.lo - aj),
                g.dbias.row(i - ai) + (dbias_cols.hi - aj), 0.f);
    }
  }
  const int64_t d = v.head_dim, dv = v.head_dim_v, dp = hd.dp, dvp = hd.dvp;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  hd.dpt.assign(hd.st.size(), 0.f);
  hd.dst.assign(hd.st.size(), 0.f);
  std::vector<float> dq_acc(g.dq.data ? static_cast<size_t>(kChunk * dp) : 0);
  std::vector<float> dk_acc(g.dk.data || g.dv.data ? static_cast<size_t>(kChunk * dp) : 0);
  std::vector<float> dv_acc(g.dk.data || g.dv.data ? static_cast<size_t>(kChunk * dvp) : 0);

  // P Z and dS of the loaded chunks (0 where masked), dbias, then the products.
  auto tile = [&]() {
    const int64_t ni = hd.ni, nj = hd.nj, ni4 = round_up(ni, 4), nj4 = round_up(nj, 4);
    hd.load_bias_and_keep();
    hd.scores();
    gemm<false>(hd.dpt.data(), kChunk, hd.dout.data(), dvp, 1, hd.vt.data(), kChunk, ni4,
                round_up(nj, 8), dvp);
    std::fill(hd.pt.begin(), hd.pt.end(), 0.f);
    std::fill(hd.dst.begin(), hd.dst.end(), 0.f);
    for (int64_t r = 0; r < ni; ++r) {
      const int64_t i = hd.i0 + r;
      if (hd.lse[r] == kInf) continue;  // an empty row: P = 0
      const Range vis = hd.keys_of(i) & Range{hd.j0, hd.j0 + nj} & cols;
      for (int64_t j = vis.lo; j < vis.hi; ++j) {
        const int64_t c = j - hd.j0, e = r * kChunk + c;
        const float p = std::exp(hd.score(r, c) - hd.lse[r]);
        if (!(p != 0.f)) continue;
        const float z = hd.dropout_factor(r, c);
        hd.pt[e] = p * z;
        hd.dst[e] = p * (z * hd.dpt[e] - hd.delta[r]);
        if (g.dbias.data && i < dbias_rows.hi && j < dbias_cols.hi) {
          g.dbias.row(i - ai)[j - aj] = hd.dst[e];
        }
      }
    }
    if (!dv_acc.empty()) {
      gemm<true>(dv_acc.data(), dvp, hd.pt.data(), 1, kChunk, hd.dout.data(), dvp, nj4, dvp, ni);
      gemm<true>(dk_acc.data(), dp, hd.dst.data(), 1, kChunk, hd.q.data(), dp, nj4, dp, ni);
    }
    if (!dq_acc.empty()) {
      gemm<true>(dq_acc.data(), dp, hd.dst.data(), kChunk, 1, hd.k.data(), dp, ni4, dp, nj);
    }
  };
  auto flush_dq = [&]() {
    for (int64_t r = 0; r < hd.ni; ++r) {
      axpy(g.dq.row(hd.i0 + r - ai), v.scale, dq_acc.data() + r * dp, d);
    }
  };

  if (!dv_acc.empty()) {  // key-major: a key chunk's dk, dv accumulate over all queries
    for (int64_t jc = cols.lo; jc < cols.hi; jc += kChunk) {
      const int64_t nj = std::min(kChunk, cols.hi - jc);
      const Range qs = hd.queries_of(Range{jc, jc + nj}) & rows;
      if (qs.empty()) continue;
      hd.load_keys(jc, nj);
      std::fill(dk_acc.begin(), dk_acc.end(), 0.f);
      std::fill(dv_acc.begin(), dv_acc.end(), 0.f);
      for (int64_t ic = qs.lo; ic < qs.hi; ic += kChunk) {
        hd.load_queries(ic, std::min(kChunk, qs.hi - ic), &in.dout);
        hd.load_stats(in.lse, in.delta);
        std::fill(dq_acc.begin(), dq_acc.end(), 0.f);
        tile();
        if (g.dq.data) flush_dq();
      }
      for (int64_t c = 0; c < nj; ++c) {
        if (g.dk.data) axpy(g.dk.row(jc + c - aj), v.scale, dk_acc.data() + c * dp, d);
        if (g.dv.data) axpy(g.dv.row(jc + c - aj), 1.f, dv_acc.data() + c * dvp, dv);
      }
    }
    return;
  }
  // query-major: a query chunk's dq accumulates over all keys
  for (int64_t ic = rows.lo; ic < rows.hi; ic += kChunk) {
    const int64_t ni = std::min(kChunk, rows.hi - ic);
    const Range ks = hd.keys_of(Range{ic, ic + ni}) & cols;
    if (ks.empty()) continue;
    hd.load_queries(ic, ni, &in.dout);
    hd.load_stats(in.lse, in.delta);
    std::fill(dq_acc.begin(), dq_acc.end(), 0.f);
    for (int64_t jc = ks.lo; jc < ks.hi; jc += kChunk) {
      hd.load_keys(jc, std::min(kChunk, ks.hi - jc));
      tile();
    }
    if (g.dq.data) flush_dq();
  }
}

// dq (+=) and dbias (written) of query rows [i0, i1) of head h over all keys of the sequence.
inline void dq_rows(const View& v, const BwdInputs& in, int64_t b, int64_t h, int64_t i0,
                    int64_t i1, Accum dq, Accum dbias = {}) {
  backward_tile(v, in, b, h, i0, i1, 0, std::numeric_limits<int64_t>::max(), {dq, {}, {}, dbias});
}

// dk and dv (+=) of key rows [j0, j1) from query head h alone (over all its queries): what a GQA
// backward that keeps dk/dv per query head adds (then folds, see fold_heads).
inline void dkdv_rows(const View& v, const BwdInputs& in, int64_t b, int64_t h, int64_t j0,
                      int64_t j1, Accum dk, Accum dv) {
  backward_tile(v, in, b, h, 0, std::numeric_limits<int64_t>::max(), j0, j1, {{}, dk, dv, {}});
}

// dk and dv (+=) of key rows [j0, j1) of key head hk: the sum over the query heads of its group,
// head by head in order.
inline void dkdv_group_rows(const View& v, const BwdInputs& in, int64_t b, int64_t hk, int64_t j0,
                            int64_t j1, Accum dk, Accum dv) {
  const int64_t group = v.group();
  for (int64_t g = 0; g < group; ++g) dkdv_rows(v, in, b, hk * group + g, j0, j1, dk, dv);
}

// ---- storing and folding ----------------------------------------------------------------------

// Rounds `rows` x `cols` floats (src rows at src_row_stride) into dst (element dst_offset, rows at
// dst_row_stride) of dtype t.
inline void store_rows(const float* src, int64_t src_row_stride, int64_t rows, int64_t cols,
                       void* dst, int64_t dst_offset, int64_t dst_row_stride, DType t,
                       Rounding rounding = Rounding::kNearestEven) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      store(dst, dst_offset + r * dst_row_stride + c, t, src[r * src_row_stride + c], rounding);
    }
  }
}

// dst[r, hk, c] = sum over g < group of src[r, hk * group + g, c] (float32 sums in g order), for
// the elements [first, last) of dst flattened; src [rows, heads_k * group, dim] of src_t, dst
// [rows, heads_k, dim] of dst_t, both contiguous. A GQA backward's per-query-head dk/dv folded.
inline void fold_heads(const void* src, DType src_t, void* dst, DType dst_t, int64_t rows,
                       int64_t heads_k, int64_t group, int64_t dim, int64_t first, int64_t last,
                       Rounding rounding = Rounding::kNearestEven) {
  first = std::max<int64_t>(first, 0);
  last = std::min(last, rows * heads_k * dim);
  for (int64_t e = first; e < last; ++e) {
    const int64_t c = e % dim, hk = (e / dim) % heads_k, r = e / (dim * heads_k);
    const int64_t base = (r * heads_k * group + hk * group) * dim + c;
    float sum = 0.f;
    for (int64_t g = 0; g < group; ++g) sum += load(src, base + g * dim, src_t);
    store(dst, e, dst_t, sum, rounding);
  }
}

}  // namespace jax_aiter::host_twins::attn_math
