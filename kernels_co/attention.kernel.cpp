// Portable flash attention, forward and backward: one source for gfx942/gfx950 (clang-22, MFMA,
// wave64) and sm_90 (nvcc, mma.sync + ldmatrix + cp.async, warp of 32). FlashAttention-2's
// algorithm (online softmax in float32, P and dS fed from registers into the next product, see
// jax_aiter_attn_mma.hpp), with every feature of include/jax_aiter/kernels/shared/attention.h:
// batch and varlen, MHA/GQA/MQA, head dims up to the bucket (d and dv multiples of 8, may differ),
// bottom-right causal masks and windows (fully masked key tiles skipped), bias of any dtype with
// broadcast strides (and its gradient), ALiBi, dropout (attn_dropout_keep, the same bits as the
// host and dropout_mask), lse, and shard offsets (a shard of a call split along batch, heads or
// query rows computes the whole call's values on its slice: the header's "Sharded calls").
//
// The parameter lists ARE the ABI: every kernel declares its parameters from the X-macro lists of
// kernels/shared/attention.h, which include/jax_aiter/kernels/attention.hpp turns into the host
// structs and metadata field lists.
//
// Preconditions the kernels do not check (the host's dense layouts satisfy them): q, k, v, out,
// dout, dq, dk, dv 16-byte aligned with sequence, head and batch strides multiples of 8 elements
// (tiles move in 16-byte chunks); heads_q a multiple of heads_k; with a bias in varlen mode (the
// ops layer takes none), every sequence within seqlen_q x seqlen_k.
//
// Work layout (numbers per head-dim bucket in AttnConfig below; the grids are the header's). A
// block owns tiles x, x + G, x + 2 G, ... of its sequence (rows for fwd, pre and dq, keys for
// dkdv), G the grid's width by the header's formula (the tiles of seqlen_q / seqlen_k: max_seqlen_*
// in varlen mode, where offsets are device data), so a longer sequence is still computed whole
// (next_tile says what that loop costs).
//   forward (grid: query tiles of kRowsQ, heads_q, batch): a warp owns 16 MI query rows, keeps
//     Q in shared memory, streams K and V in tiles of kFwdKeys keys (single buffers, FA2's overlap:
//     V(t) loads under Q K(t)^T, K(t+1) under P V(t)).
//   dkdv (grid: key tiles of kRowsK, heads_k, batch): K and V of the tile stay in shared memory; a
//     warp owns 16 MI keys (kDkdvSplit warps share them for d = 256, each keeping half the dk/dv
//     columns and recomputing the scores); loops over the query heads of its group and the query
//     tiles (kDkdvRows rows) that can see its keys: S^T = K Q^T, P^T from lse, dP^T = V dO^T,
//     dS^T, dk += dS^T Q, dv += (P^T Z) dO in float32 registers; no atomics.
//   dq (grid: query tiles of kRowsQ, heads_q, batch), in passes of kDqRows rows: dq += dS K over
//     the visible key tiles (kDqKeys), dbias = dS; no atomics.
// Tiles are zero-filled past the sequence and past d / dv up to the bucket: every product runs at
// the bucket's full width (d = 192 in the 256 bucket computes 256 wide), with no guards inside
// the unrolled loops.
//
// Measured (NVIDIA H100 80GB HBM3, 2026-11-25, tests/gpu/cuda_attention_kernels.cpp, bf16, CUDA
// events, median of 20; log in benchmarks/gpu/NOTES.md "Attention kernels"): 96/96 checks against
// a float64 reference; forward 222 / 249 / 147 / 245 TFLOP/s (0.46 / 0.44 / 1.28 / 0.42 of cuDNN)
// and backward 128 / 144 / 68 / 142 TFLOP/s at b4 s4096 hq32 hk8 d128 causal / b4 s4096 hq=hk=32
// d128 / b16 s1024 hq=hk=16 d64 causal / b1 s16384 hq32 hk8 d128 causal. What limits it: the
// tensor pipe is ~37% busy; mma.sync with ~6 issued instructions and 0.56 ldmatrix per HMMA in the
// forward loop, 8 warps an SM (255 registers), and 48 KiB of static shared memory (no 128 x 64
// tile, no K/V double buffer); more warps with smaller tiles measured slower. On sm_90 every
// 16-bit forward of the 128 bucket runs attn_fwd_wg below instead (wgmma, warp-specialised: 479 /
// 552 / 541 TFLOP/s on the d128 shapes above, an H200, 2026-11-28). Tiles and register caps below
// are the best of the variants measured (NOTES.md).
#include "jax_aiter/kernels/shared/attention.h"
#include "jax_aiter_attn_mma.hpp"
#include "jax_aiter_wgmma.hpp"

namespace ja {

namespace attn = jax_aiter::kernels::attention;

inline constexpr int kAttnSmemBudget = 48 * 1024;  // static shared memory, no opt-in
inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

constexpr int attn_bucket(int d) { return d <= 64 ? 0 : d <= 128 ? 1 : 2; }

// Tile shapes per head-dim bucket D (threads and the grids' row counts come from the header).
template <int D>
struct AttnConfig {
  static constexpr int kBucket = attn_bucket(D);
  static_assert(attn::kHeadDims[kBucket] == D, "a head-dim bucket of JAX_AITER_ATTN_KERNELS");
  static constexpr int kThreads = attn::kThreads[kBucket];
  static constexpr int kRowsQ = attn::kRowsQ[kBucket];
  static constexpr int kRowsK = attn::kRowsK[kBucket];
  // Forward: keys a tile. Q [kRowsQ x D] + K, V [kFwdKeys x D] fill the 48 KiB at D = 128, 256
  // (at D = 128, 64 rows x 64 keys; 128 rows x 32 keys measured no faster and spills).
  static constexpr int kFwdKeys = D <= 64 ? 64 : D <= 128 ? 4096 / kRowsQ : 16;
  // dq: rows a pass (Q and dO [kDqRows x D] in shared memory), keys a tile, warps a row group.
  static constexpr int kDqRows = D <= 128 ? 64 : 32;
  static constexpr int kDqKeys = D <= 128 ? 32 : 16;
  static constexpr int kDqSplit = D <= 128 ? 1 : 2;
  // dkdv: query rows a tile, warps a key group (each keeps D / split columns of dk and dv).
  static constexpr int kDkdvRows = D <= 64 ? 64 : D <= 128 ? 32 : 16;
  static constexpr int kDkdvSplit = D <= 128 ? 1 : 2;
  // Blocks an SM must hold at once (__launch_bounds__'s second argument, a register cap: 3 blocks
  // of 128 threads leave 168 registers a thread). Measured on the H100 (benchmarks/gpu/NOTES.md):
  // 3 blocks win for the d64 forward and the d64/d128 dq pass despite a few spilled registers, and
  // lose 18% for the d128 forward (344 bytes spilled); dkdv keeps dk and dv in registers (1).
  static constexpr int kFwdMinBlocks = D <= 64 ? 3 : 1;
  static constexpr int kDkdvMinBlocks = 1;
  static constexpr int kDqMinBlocks = D <= 128 ? 3 : 1;
};

// ---- parameters: the argument lists as structs --------------------------------------------------
#define JA_ATTN_MEMBER(T, n) T n;
struct FwdParams {
  JAX_AITER_ATTN_FWD_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
struct BwdParams {
  JAX_AITER_ATTN_BWD_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
struct GqaReduceParams {
  JAX_AITER_ATTN_GQA_REDUCE_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
struct DropoutMaskParams {
  JAX_AITER_ATTN_DROPOUT_MASK_ARGS(JA_ATTN_MEMBER, JA_ATTN_MEMBER)
};
#undef JA_ATTN_MEMBER

JA_DEVICE int imin(int a, int b) { return a < b ? a : b; }
JA_DEVICE int imax(int a, int b) { return a > b ? a : b; }
JA_DEVICE long long lmin(long long a, long long b) { return a < b ? a : b; }
JA_DEVICE long long lmax(long long a, long long b) { return a > b ? a : b; }
JA_DEVICE float inf() { return __builtin_huge_valf(); }

// ---- sequences, visibility ----------------------------------------------------------------------

// Where sequence b lies: its first row in q / k (0 in batch mode, where the batch stride moves),
// its lengths (offsets clamped as the header says; never to seqlen_q / seqlen_k), and its diagonal
// offset: query row i (of this call) sees key i + off straight ahead (attn_diagonal_offset:
// k_len - q_len unsharded, aligned to the whole call's corner for a row shard). Every mask and
// ALiBi test below reads `off`.
struct Seq {
  long long q_start, k_start;
  int q_len, k_len;
  int off;  // int: i + off is a row of the whole call plus sk - sq_total, all int
};
JA_DEVICE int clamp_to(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
template <class P>
JA_DEVICE Seq sequence(const P& p, int b) {
  Seq s{0, 0, p.seqlen_q, p.seqlen_k, 0};
  if (p.cu_seqlens_q != nullptr) {
    const int a = clamp_to(p.cu_seqlens_q[b], 0, p.total_q);
    const int e = clamp_to(p.cu_seqlens_q[b + 1], a, p.total_q);
    s.q_start = a;
    s.q_len = e - a;
  }
  if (p.cu_seqlens_k != nullptr) {
    const int a = clamp_to(p.cu_seqlens_k[b], 0, p.total_k);
    const int e = clamp_to(p.cu_seqlens_k[b + 1], a, p.total_k);
    s.k_start = a;
    s.k_len = e - a;
  }
  s.off = static_cast<int>(attn::attn_diagonal_offset(s.q_len, s.k_len, attn::attn_shard(p.shard)));
  return s;
}

struct Range {
  int lo, hi;  // empty when hi <= lo
};
// The keys that some query row in [r0, r1) sees (attn_visible solved for j).
JA_DEVICE Range keys_seen(int r0, int r1, const Seq& s, int left, int right) {
  const long long off = s.off;  // 64-bit sums: a window bound may be near 2^31
  long long lo = 0, hi = s.k_len;
  if (left >= 0) lo = lmax(lo, r0 + off - left);
  if (right >= 0) hi = lmin(hi, (r1 - 1) + off + right + 1);
  return {static_cast<int>(lmin(lo, s.k_len)), static_cast<int>(lmax(hi, 0))};
}
// The query rows that see some key in [c0, c1) (attn_visible solved for i).
JA_DEVICE Range queries_seeing(int c0, int c1, const Seq& s, int left, int right) {
  const long long off = s.off;
  long long lo = 0, hi = s.q_len;
  if (right >= 0) lo = lmax(lo, c0 - off - right);
  if (left >= 0) hi = lmin(hi, (c1 - 1) - off + left + 1);
  return {static_cast<int>(lmin(lo, s.q_len)), static_cast<int>(lmax(hi, 0))};
}
// Whether the tile of query rows [r0, r1) x keys [c0, c1) needs no per-element test: inside both
// sequences and entirely visible.
JA_DEVICE bool tile_unmasked(int r0, int r1, int c0, int c1, const Seq& s, int left, int right) {
  if (r1 > s.q_len || c1 > s.k_len) return false;
  const long long off = s.off;
  return (left < 0 || c0 >= (r1 - 1) + off - left) && (right < 0 || c1 - 1 <= r0 + off + right);
}
// (i + off: the whole call's row i plus sk - sq_total, within int.)
JA_DEVICE bool visible(int i, int j, const Seq& s, int left, int right) {
  return i < s.q_len && j < s.k_len && attn::attn_visible_at(i + s.off, j, left, right);
}

JA_DEVICE float bias_at(const void* bias, int dtype, long long idx) {
  if (dtype == attn::kAttnF32) return static_cast<const float*>(bias)[idx];
  const uint16_t v = static_cast<const uint16_t*>(bias)[idx];
  return dtype == attn::kAttnBF16 ? BF16::load(v) : F16::load(v);
}

// The score terms of one (batch, query head) beyond scale * q.k: bias and ALiBi.
struct ScoreExtras {
  const void* bias;  // at (b, h), or null
  long long bias_row, bias_col;
  int bias_dtype;
  float slope;  // ALiBi slope
  bool alibi;
  JA_DEVICE bool any() const { return bias != nullptr || alibi; }
  // scale * qk + bias + alibi for (i, j) inside the sequence (with a bias, i < seqlen_q and
  // j < seqlen_k: the preconditions above).
  JA_DEVICE float apply(float scaled, int i, int j, const Seq& s) const {
    if (bias != nullptr) scaled += bias_at(bias, bias_dtype, i * bias_row + j * bias_col);
    if (alibi) scaled += attn::attn_alibi_at(slope, i + s.off, j);
    return scaled;
  }
};
template <class P>
JA_DEVICE ScoreExtras score_extras(const P& p, int b, int h) {
  ScoreExtras x;
  x.bias = p.bias == nullptr ? nullptr
                             : static_cast<const unsigned char*>(p.bias) +
                                   (b * p.bias_batch_stride + h * p.bias_head_stride) *
                                       (p.bias_dtype == attn::kAttnF32 ? 4 : 2);
  x.bias_row = p.bias_row_stride;
  x.bias_col = p.bias_col_stride;
  x.bias_dtype = p.bias_dtype;
  x.alibi = p.alibi_slopes != nullptr;
  x.slope = x.alibi ? p.alibi_slopes[b * p.alibi_batch_stride + h] : 0.f;
  return x;
}

// The dropout factor Z of score (h, i, j) of one batch (this call's indices; the shard's offsets
// make them the whole call's): 1 / (1 - p) when kept, 0 when dropped.
struct Dropout {
  unsigned key[2];
  unsigned threshold;
  float scale;
  int batch, h0, r0;  // the batch in the whole call, the shard's head and row offsets
  // attn_dropout_keep's bits, with the word picked by selects rather than an index into the
  // result (a run-time index would put Philox's four words in local memory).
  JA_DEVICE float z(int h, int i, int j) const {
    const attn::Philox4 r = attn::philox4x32_10(
        static_cast<unsigned>(i + r0), static_cast<unsigned>(j) >> 2, static_cast<unsigned>(h + h0),
        static_cast<unsigned>(batch), key[0], key[1]);
    const unsigned w = (j & 2) ? ((j & 1) ? r.v[3] : r.v[2]) : ((j & 1) ? r.v[1] : r.v[0]);
    return w >= threshold ? scale : 0.f;
  }
};
template <class P>
JA_DEVICE Dropout dropout_of(const P& p, int b) {
  const attn::AttnShard sh = attn::attn_shard(p.shard);
  Dropout d{{0u, 0u}, p.dropout_threshold, p.dropout_scale, b + sh.b0, sh.h0, sh.r0};
  if (p.dropout_threshold > 0) d.key[0] = p.rng_key[0], d.key[1] = p.rng_key[1];
  return d;
}

// ---- tiles --------------------------------------------------------------------------------------

// The 8-column chunks of an R x W tile, spread over THREADS threads: chunk(r, ch, ok) for each of
// this thread's, ok when row r < rows and its columns start below cols (a multiple of 8).
template <int R, int W, int THREADS, class Chunk>
JA_DEVICE void for_each_tile_chunk(int rows, int cols, Chunk&& chunk) {
  constexpr int kCpr = W / 8, kChunks = R * kCpr, kPasses = (kChunks + THREADS - 1) / THREADS;
  const int tid = thread_id();
  JA_UNROLL
  for (int p = 0; p < kPasses; ++p) {
    const int c = tid + p * THREADS;
    if (kChunks % THREADS != 0 && c >= kChunks) break;
    const int r = c / kCpr, ch = c % kCpr;
    chunk(r, ch, r < rows && ch * 8 < cols);
  }
}

// Rows [0, R) of a matrix (row r at g + r * stride elements) into an R x W tile; rows >= rows and
// columns >= cols (a multiple of 8) are zeros. Every thread of the block calls it; on sm_90 the
// copies are asynchronous (async_commit / async_wait, then a barrier, publish them).
template <int R, int W, int THREADS>
JA_DEVICE void load_tile(uint16_t* tile, const uint16_t* g, long long stride, int rows, int cols) {
  for_each_tile_chunk<R, W, THREADS>(rows, cols, [&](int r, int ch, bool ok) {
    copy_16(tile + TileLayout<W>::chunk_offset(r, ch), ok ? g + r * stride + ch * 8 : g, ok);
  });
}

// load_tile for fp8 rows (row r at g + r * stride bytes): each 8-byte chunk turned into 8 f16
// (attn_e4m3_as_f16: the byte's value times 2^-shift, exactly) on its way to the tile, through
// registers (no asynchronous copy can convert). 8-byte aligned: strides are multiples of 8.
template <int R, int W, int THREADS>
JA_DEVICE void load_tile_fp8(uint16_t* tile, const unsigned char* g, long long stride, int rows,
                             int cols, int in_dtype) {
  for_each_tile_chunk<R, W, THREADS>(rows, cols, [&](int r, int ch, bool ok) {
    Pack<uint32_t, 2> w = {};
    if (ok) w = *reinterpret_cast<const Pack<uint32_t, 2>*>(g + r * stride + ch * 8);
    Pack<uint16_t, 8> v;
    JA_UNROLL
    for (int u = 0; u < 8; ++u) {
      v.v[u] = attn::attn_e4m3_as_f16((w.v[u / 4] >> (8 * (u % 4))) & 0xffu, in_dtype);
    }
    *reinterpret_cast<Pack<uint16_t, 8>*>(tile + TileLayout<W>::chunk_offset(r, ch)) = v;
  });
}

// out's type: E's, bf16 for fp8 inputs.
template <typename E, bool kFp8>
struct FwdOut {
  using type = E;
};
template <typename E>
struct FwdOut<E, true> {
  using type = BF16;
};

// The inputs of the forward: 16-bit (In = the compute type) or fp8 (bytes, converted to f16).
template <bool kFp8>
struct FwdIn {
  using Storage = uint16_t;
};
template <>
struct FwdIn<true> {
  using Storage = unsigned char;
};
template <bool kFp8, int R, int W, int THREADS>
JA_DEVICE void load_in(uint16_t* tile, const typename FwdIn<kFp8>::Storage* g, long long stride,
                       int rows, int cols, int in_dtype) {
  if constexpr (kFp8) {
    load_tile_fp8<R, W, THREADS>(tile, g, stride, rows, cols, in_dtype);
  } else {
    load_tile<R, W, THREADS>(tile, g, stride, rows, cols);
  }
}

// Stores rows [0, rows) x columns [0, cols) of a warp's register tile, whose block (0, 0) starts
// at (row0, col0) of g (row r at g + r * stride), rounded to nearest even.
template <typename E, int MI, int NB>
JA_DEVICE void store_tile(const float (&c)[MI][NB][4], uint16_t* g, long long stride, int row0,
                          int rows, int col0, int cols, int lane) {
  using L = AccLayout;
  using Run = Pack<uint16_t, L::kRun>;
  JA_UNROLL
  for (int i = 0; i < MI; ++i) {
    JA_UNROLL
    for (int j = 0; j < NB; ++j) {
      JA_UNROLL
      for (int e = 0; e < 4; e += L::kRun) {
        const int r = row0 + 16 * i + L::row(lane, e), col = col0 + L::kW * j + L::col(lane, e);
        if (r >= rows || col >= cols) continue;
        Run v;
        JA_UNROLL
        for (int u = 0; u < L::kRun; ++u) v.v[u] = E::store(c[i][j][e + u]);
        *reinterpret_cast<Run*>(g + r * stride + col) = v;
      }
    }
  }
}

// v[u] = op(v[u], v[u + W]) for u < W, when the array holds 2 W values or more.
template <int W, int N, typename Op>
JA_DEVICE void tree_step(float (&v)[N], Op op) {
  if constexpr (N >= 2 * W) {
    JA_UNROLL
    for (int u = 0; u < W; ++u) v[u] = op(v[u], v[u + W]);
  }
}

// r[slot] = op over the elements of one 16-row block of a register tile that lie in that slot's
// row, as a balanced tree (dependency chains of log2 length, not one per element).
template <int NS, typename Op>
JA_DEVICE void slot_reduce(const float (&c)[NS][4], float (&r)[AccLayout::kSlots], Op op) {
  using L = AccLayout;
  constexpr int kRun = 4 / L::kSlots, kPer = NS * kRun;  // elements of one slot
  static_assert((kPer & (kPer - 1)) == 0, "a power of two");
  JA_UNROLL
  for (int sl = 0; sl < L::kSlots; ++sl) {
    float v[kPer];
    JA_UNROLL
    for (int j = 0; j < NS; ++j) {
      JA_UNROLL
      for (int u = 0; u < kRun; ++u) v[j * kRun + u] = c[j][sl * kRun + u];
    }
    static_assert(kPer <= 64);
    tree_step<32, kPer>(v, op);
    tree_step<16, kPer>(v, op);
    tree_step<8, kPer>(v, op);
    tree_step<4, kPer>(v, op);
    tree_step<2, kPer>(v, op);
    tree_step<1, kPer>(v, op);
    r[sl] = v[0];
  }
}

template <int MI, int NB>
JA_DEVICE void scale_tile(float (&c)[MI][NB][4], float f) {
  JA_UNROLL
  for (int i = 0; i < MI; ++i) {
    JA_UNROLL
    for (int j = 0; j < NB; ++j) {
      JA_UNROLL
      for (int e = 0; e < 4; ++e) c[i][j][e] *= f;
    }
  }
}

// ---- forward ------------------------------------------------------------------------------------

// Query rows [m0, m0 + kRowsQ) of sequence s (of the block's batch), of the block's query head.
// E: the products' type (and out's, unless kFp8). kFp8: q, k, v are e4m3 bytes (in_dtype), read
// as f16 times 2^-shift (E is F16), the descales and the shifts folded into the score scale and
// the output's 1 / l in float32; out is bf16.
template <typename E, int D, bool kFp8 = false>
JA_DEVICE void attn_fwd_tile(const FwdParams& p, const Seq& s, int m0) {
  using In = typename FwdIn<kFp8>::Storage;
  using Out = typename FwdOut<E, kFp8>::type;
  using C = AttnConfig<D>;
  using L = AccLayout;
  constexpr int T = C::kThreads, BM = C::kRowsQ, BN = C::kFwdKeys;
  constexpr int kWarps = T / kWarp, kRowsW = BM / kWarps, MI = kRowsW / 16;
  static_assert(T % kWarp == 0 && kRowsW % 16 == 0 && BN % 16 == 0);
  constexpr int NS = BN / L::kW, NO = D / L::kW, KD = D / 16, KN = BN / 16;
  JA_SHARED Pack<uint16_t, 8> smem[(BM + 2 * BN) * D / 8];
  static_assert(sizeof(smem) <= kAttnSmemBudget);
  uint16_t* const sQ = reinterpret_cast<uint16_t*>(smem);
  uint16_t* const sK = sQ + BM * D;
  uint16_t* const sV = sK + BN * D;

  const int tid = thread_id(), warp = tid / kWarp, lane = tid % kWarp;
  const int b = block_id_z(), h = block_id_y();
  const int hk = h / (p.heads_q / p.heads_k);
  const int left = p.window_left, right = p.window_right;
  const Range keys = keys_seen(m0, imin(m0 + BM, s.q_len), s, left, right);
  const int n_first = keys.hi > keys.lo ? keys.lo / BN * BN : 0;
  // At least one tile (rows that see no key score one masked tile): every consumer step then
  // runs unconditionally, which keeps the wgmma off branches.
  const int ntiles = keys.hi > keys.lo ? (keys.hi - n_first + BN - 1) / BN : 1;

  const In* const q = static_cast<const In*>(p.q) + b * p.q_batch_stride +
                      (s.q_start + m0) * p.q_seq_stride + h * p.q_head_stride;
  const In* const kg = static_cast<const In*>(p.k) + b * p.k_batch_stride +
                       s.k_start * p.k_seq_stride + hk * p.k_head_stride;
  const In* const vg = static_cast<const In*>(p.v) + b * p.v_batch_stride +
                       s.k_start * p.v_seq_stride + hk * p.v_head_stride;
  const int in_dtype = p.in_dtype;
  load_in<kFp8, BM, D, T>(sQ, q, p.q_seq_stride, s.q_len - m0, p.head_dim, in_dtype);
  if (ntiles > 0) {
    load_in<kFp8, BN, D, T>(sK, kg + n_first * p.k_seq_stride, p.k_seq_stride, s.k_len - n_first,
                            p.head_dim, in_dtype);
  }
  async_commit();

  const ScoreExtras extras = score_extras(p, b, h);
  const Dropout drop = dropout_of(p, b);
  const bool dropping = p.dropout_threshold > 0;
  // fp8: products of f16 values each 2^-shift times the input's, so q k^T is 2^-2 shift times the
  // true one and p v 2^-shift times it; the descales and 2^shift (exact) come back here, in f32.
  float in_scale = 1.f, out_scale = 1.f;
  if constexpr (kFp8) {
    const float unshift = attn::attn_fp8_f16_shift(in_dtype) == 7 ? 128.f : 256.f;
    in_scale = *p.q_descale * *p.k_descale * unshift * unshift;
    out_scale = *p.v_descale * unshift;
  }
  const float scale = p.scale * in_scale, scale2 = scale * kLog2e;
  const int rw0 = warp * kRowsW;  // the warp's first row in the block tile

  float o[MI][NO][4] = {};
  float m_run[MI][L::kSlots], l_run[MI][L::kSlots];  // running max (log2 units), partial sums
  JA_UNROLL
  for (int i = 0; i < MI; ++i) {
    JA_UNROLL
    for (int sl = 0; sl < L::kSlots; ++sl) m_run[i][sl] = -inf(), l_run[i][sl] = 0.f;
  }

  for (int t = 0; t < ntiles; ++t) {
    const int n = n_first + t * BN;
    async_wait<0>();  // K(t) (and Q) landed
    barrier();        // ... for every thread; and every warp is done with V(t - 1)
    load_in<kFp8, BN, D, T>(sV, vg + n * p.v_seq_stride, p.v_seq_stride, s.k_len - n, p.head_dim_v,
                            in_dtype);
    async_commit();

    float sc[MI][NS][4] = {};
    mma_nk<E, D, D, MI, NS, KD>(sc, sQ, rw0, sK, 0, lane);
    // Scores in log2 units, -inf where masked.
    const bool check = !tile_unmasked(m0, m0 + BM, n, n + BN, s, left, right);
    if (!check && !extras.any()) {
      scale_tile(sc, scale2);
    } else {
      JA_UNROLL
      for (int i = 0; i < MI; ++i) {
        JA_UNROLL
        for (int j = 0; j < NS; ++j) {
          JA_UNROLL
          for (int e = 0; e < 4; ++e) {
            const int qi = m0 + rw0 + 16 * i + L::row(lane, e),
                      kj = n + L::kW * j + L::col(lane, e);
            float& x = sc[i][j][e];
            if (check && !visible(qi, kj, s, left, right)) {
              x = -inf();
            } else {
              x = extras.apply(x * scale, qi, kj, s) * kLog2e;
            }
          }
        }
      }
    }

    // Online softmax: new row maxima, rescale the running sums and the output rows.
    float m_use[MI][L::kSlots];
    JA_UNROLL
    for (int i = 0; i < MI; ++i) {
      float mx[L::kSlots];
      slot_reduce(sc[i], mx, [](float a, float b) { return fmax_(a, b); });
      float alpha[L::kSlots];
      JA_UNROLL
      for (int sl = 0; sl < L::kSlots; ++sl) {
        const float m_new = fmax_(m_run[i][sl], L::row_max(mx[sl]));
        m_use[i][sl] = m_new == -inf() ? 0.f : m_new;  // a row with nothing visible yet
        alpha[sl] = fast_exp2(m_run[i][sl] - m_use[i][sl]);
        m_run[i][sl] = m_new;
        l_run[i][sl] *= alpha[sl];
      }
      JA_UNROLL
      for (int j = 0; j < NO; ++j) {
        JA_UNROLL
        for (int e = 0; e < 4; ++e) o[i][j][e] *= alpha[L::slot(e)];
      }
      JA_UNROLL
      for (int j = 0; j < NS; ++j) {
        JA_UNROLL
        for (int e = 0; e < 4; ++e) sc[i][j][e] = fast_exp2(sc[i][j][e] - m_use[i][L::slot(e)]);
      }
      float rs[L::kSlots];  // lse is of the undropped scores
      slot_reduce(sc[i], rs, [](float a, float b) { return a + b; });
      JA_UNROLL
      for (int sl = 0; sl < L::kSlots; ++sl) l_run[i][sl] += rs[sl];
    }
    if (dropping) {
      JA_UNROLL
      for (int i = 0; i < MI; ++i) {
        JA_UNROLL
        for (int j = 0; j < NS; ++j) {
          JA_UNROLL
          for (int e = 0; e < 4; ++e) {
            const int qi = m0 + rw0 + 16 * i + L::row(lane, e),
                      kj = n + L::kW * j + L::col(lane, e);
            sc[i][j][e] *= drop.z(h, qi, kj);
          }
        }
      }
    }
    AFrag pa[MI][KN];
    to_afrags<E, MI, KN>(sc, pa);

    async_wait<0>();  // V(t) landed
    barrier();        // ... for every thread; and every warp is done with K(t)
    if (t + 1 < ntiles) {
      load_in<kFp8, BN, D, T>(sK, kg + (n + BN) * p.k_seq_stride, p.k_seq_stride, s.k_len - n - BN,
                              p.head_dim, in_dtype);
    }
    async_commit();
    mma_rk<E, D, MI, NO, KN>(o, pa, sV, 0, 0, lane);
  }

  // out = o / l (0 for a row that saw nothing), lse = log(l) + max (+inf for such a row). A NaN
  // score (a NaN input, bias or ALiBi slope) makes l NaN (the running max skips NaN, exp does not):
  // out and lse NaN.
  float* const lse = p.lse + b * p.lse_batch_stride + h * p.lse_head_stride + s.q_start;
  JA_UNROLL
  for (int i = 0; i < MI; ++i) {
    float inv[L::kSlots];
    JA_UNROLL
    for (int sl = 0; sl < L::kSlots; ++sl) {
      const float l = L::row_sum(l_run[i][sl]);
      inv[sl] = l == 0.f ? 0.f : out_scale / l;
      const int qi = m0 + rw0 + 16 * i + L::slot_row(lane, sl);
      if (L::row_leader(lane) && qi < s.q_len) {
        lse[qi] = l == 0.f ? inf() : (m_run[i][sl] + fast_log2(l)) * kLn2;
      }
    }
    JA_UNROLL
    for (int j = 0; j < NO; ++j) {
      JA_UNROLL
      for (int e = 0; e < 4; ++e) o[i][j][e] *= inv[L::slot(e)];
    }
  }
  uint16_t* const out = static_cast<uint16_t*>(p.out) + b * p.o_batch_stride +
                        (s.q_start + m0) * p.o_seq_stride + h * p.o_head_stride;
  store_tile<Out>(o, out, p.o_seq_stride, rw0, s.q_len - m0, 0, p.head_dim_v, lane);
}

// Whether a block that has done the tile at row r0 of its sequence's n rows has another one: the
// grid spans the tiles of `grid_rows` rows (seqlen_q or seqlen_k, the header's grid formulas), so
// its next tile is that many tiles on (then r0 moves to it, and the block waits until every thread
// is done with the shared memory of the last one). The step comes from the parameters, not the
// grid's size (on AMD that needs the dispatch packet), and r0 is live through a tile anyway. What
// the loop costs, from ptxas -v and llvm-readelf-22 --notes against the single-tile kernels (not
// run on hardware): on sm_90 a few bytes of spills outside the key loops, except the d64 forward
// (7 spill loads an iteration of its key loop); on gfx942 / gfx950 loop-carried state (kernel
// arguments, thread offsets) raises the register counts, e.g. 237 -> 289 VGPRs for dq d128 (two
// waves a SIMD -> one), 163 -> 208 for dq d64 (three -> two), and the forwards spill SGPRs to
// VGPR lanes (0 -> about 65 at d128).
template <int kTile>
JA_DEVICE bool next_tile(int& r0, int n, int grid_rows) {
  const int step = (grid_rows / kTile + (grid_rows % kTile != 0)) * kTile;
  if (step >= n - r0) return false;
  r0 += step;
  async_wait<0>();
  barrier();
  return true;
}

template <typename E, int D, bool kFp8 = false>
JA_DEVICE void attn_fwd(const FwdParams& p) {
  constexpr int BM = AttnConfig<D>::kRowsQ;
  const Seq s = sequence(p, block_id_z());
  int m0 = block_id() * BM;
  if (m0 >= s.q_len) return;
  do {
    attn_fwd_tile<E, D, kFp8>(p, s, m0);
  } while (next_tile<BM>(m0, s.q_len, p.seqlen_q));
}

// ---- backward: delta ----------------------------------------------------------------------------

// delta of query row r of sequence s (every thread of the block calls it: TPR threads a row,
// reduced by shuffles; `sub` is the thread's place in its row).
template <typename E>
JA_DEVICE void attn_bwd_pre_row(const BwdParams& p, const Seq& s, int b, int h, int r, int sub) {
  constexpr int TPR = attn::kPreThreads / attn::kPreRows;
  using Chunk = Pack<uint16_t, 8>;
  const bool ok = r < s.q_len;
  float acc = 0.f;
  if (ok) {
    const Chunk* o =
        reinterpret_cast<const Chunk*>(static_cast<const uint16_t*>(p.out) + b * p.o_batch_stride +
                                       (s.q_start + r) * p.o_seq_stride + h * p.o_head_stride);
    const Chunk* d = reinterpret_cast<const Chunk*>(
        static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride +
        (s.q_start + r) * p.do_seq_stride + h * p.do_head_stride);
    for (int c = sub; c < p.head_dim_v / 8; c += TPR) {
      const Chunk x = o[c], y = d[c];
      JA_UNROLL
      for (int e = 0; e < 8; ++e) acc += E::load(x.v[e]) * E::load(y.v[e]);
    }
  }
  JA_UNROLL
  for (int mask = TPR / 2; mask > 0; mask /= 2) acc += shuffle_xor(acc, mask);
  if (ok && sub == 0) {
    p.delta[b * p.lse_batch_stride + h * p.lse_head_stride + s.q_start + r] = acc;
  }
}

template <typename E>
JA_DEVICE void attn_bwd_pre(const BwdParams& p) {
  constexpr int T = attn::kPreThreads, R = attn::kPreRows, TPR = T / R;
  static_assert(T % R == 0 && TPR <= kWarp && (TPR & (TPR - 1)) == 0);
  const int tid = thread_id(), b = block_id_z(), h = block_id_y();
  const Seq s = sequence(p, b);
  int r0 = block_id() * R;
  if (r0 >= s.q_len) return;  // the whole block (uniform)
  do {
    attn_bwd_pre_row<E>(p, s, b, h, r0 + tid / TPR, tid % TPR);
  } while (next_tile<R>(r0, s.q_len, p.seqlen_q));
}

// ---- backward: dk, dv ---------------------------------------------------------------------------

// dk and dv of key rows [n0, n0 + kRowsK) of sequence s, of the block's key head.
template <typename E, int D>
JA_DEVICE void attn_bwd_dkdv_tile(const BwdParams& p, const Seq& s, int n0) {
  using C = AttnConfig<D>;
  using L = AccLayout;
  constexpr int T = C::kThreads, BK = C::kRowsK, BQ = C::kDkdvRows, SPLIT = C::kDkdvSplit;
  constexpr int kWarps = T / kWarp, kGroups = kWarps / SPLIT, kRowsW = BK / kGroups;
  constexpr int MI = kRowsW / 16, DC = D / SPLIT;
  static_assert(kWarps % SPLIT == 0 && kRowsW % 16 == 0 && BQ % 16 == 0 && DC % 16 == 0);
  constexpr int NS = BQ / L::kW, NO = DC / L::kW, KD = D / 16, KQ = BQ / 16;
  JA_SHARED Pack<uint16_t, 8> smem[(2 * BK + 2 * BQ) * D / 8];
  static_assert(sizeof(smem) <= kAttnSmemBudget);
  uint16_t* const sK = reinterpret_cast<uint16_t*>(smem);
  uint16_t* const sV = sK + BK * D;
  uint16_t* const sQ = sV + BK * D;
  uint16_t* const sO = sQ + BQ * D;  // dO

  const int tid = thread_id(), warp = tid / kWarp, lane = tid % kWarp;
  const int kr0 = (warp / SPLIT) * kRowsW, col0 = (warp % SPLIT) * DC;
  const int b = block_id_z(), hk = block_id_y();
  const int left = p.window_left, right = p.window_right;
  const int group = p.heads_q / p.heads_k;
  const Range rows = queries_seeing(n0, imin(n0 + BK, s.k_len), s, left, right);
  const int m_first = rows.hi > rows.lo ? rows.lo / BQ * BQ : 0;
  const int ntq = rows.hi > rows.lo ? (rows.hi - m_first + BQ - 1) / BQ : 0;
  const int total = group * ntq;  // (query head, query tile) steps

  const uint16_t* const q_bs =
      static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride + s.q_start * p.q_seq_stride;
  const uint16_t* const do_bs =
      static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride + s.q_start * p.do_seq_stride;
  auto load_q = [&](int step) {
    const int hq = hk * group + step / ntq, m = m_first + (step % ntq) * BQ;
    load_tile<BQ, D, T>(sQ, q_bs + m * p.q_seq_stride + hq * p.q_head_stride, p.q_seq_stride,
                        s.q_len - m, p.head_dim);
  };
  auto load_do = [&](int step) {
    const int hq = hk * group + step / ntq, m = m_first + (step % ntq) * BQ;
    load_tile<BQ, D, T>(sO, do_bs + m * p.do_seq_stride + hq * p.do_head_stride, p.do_seq_stride,
                        s.q_len - m, p.head_dim_v);
  };

  float dk[MI][NO][4] = {}, dv[MI][NO][4] = {};
  if (total > 0) {
    load_tile<BK, D, T>(sK,
                        static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                            (s.k_start + n0) * p.k_seq_stride + hk * p.k_head_stride,
                        p.k_seq_stride, s.k_len - n0, p.head_dim);
    load_tile<BK, D, T>(sV,
                        static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                            (s.k_start + n0) * p.v_seq_stride + hk * p.v_head_stride,
                        p.v_seq_stride, s.k_len - n0, p.head_dim_v);
    load_q(0);
    async_commit();
    load_do(0);
    async_commit();
  }
  const Dropout drop = dropout_of(p, b);
  const bool dropping = p.dropout_threshold > 0;
  const float scale = p.scale, scale2 = p.scale * kLog2e;

  for (int step = 0; step < total; ++step) {
    const int hq = hk * group + step / ntq, m = m_first + (step % ntq) * BQ;
    const ScoreExtras extras = score_extras(p, b, hq);
    // lse (log2 units) and delta of this lane's columns (query rows).
    const long long lse_off = b * p.lse_batch_stride + hq * p.lse_head_stride + s.q_start;
    float lse2[NS][4], dlt[NS][4];
    JA_UNROLL
    for (int j = 0; j < NS; ++j) {
      JA_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int qi = m + L::kW * j + L::col(lane, e);
        const bool ok = qi < s.q_len;
        lse2[j][e] = ok ? p.lse[lse_off + qi] * kLog2e : inf();
        dlt[j][e] = ok ? p.delta[lse_off + qi] : 0.f;
      }
    }

    async_wait<1>();  // K, V, Q(step) landed
    barrier();
    // P^T = exp(S^T - lse), S^T = K Q^T (rows: keys, columns: queries).
    float st[MI][NS][4] = {};
    mma_nk<E, D, D, MI, NS, KD>(st, sK, kr0, sQ, 0, lane);
    const bool check = !tile_unmasked(m, m + BQ, n0, n0 + BK, s, left, right);
    if (!check && !extras.any()) {
      JA_UNROLL
      for (int i = 0; i < MI; ++i) {
        JA_UNROLL
        for (int j = 0; j < NS; ++j) {
          JA_UNROLL
          for (int e = 0; e < 4; ++e) st[i][j][e] = fast_exp2(st[i][j][e] * scale2 - lse2[j][e]);
        }
      }
    } else {
      JA_UNROLL
      for (int i = 0; i < MI; ++i) {
        JA_UNROLL
        for (int j = 0; j < NS; ++j) {
          JA_UNROLL
          for (int e = 0; e < 4; ++e) {
            const int kj = n0 + kr0 + 16 * i + L::row(lane, e),
                      qi = m + L::kW * j + L::col(lane, e);
            float& x = st[i][j][e];
            if (check && !visible(qi, kj, s, left, right)) {
              x = 0.f;
            } else {
              x = fast_exp2(extras.apply(x * scale, qi, kj, s) * kLog2e - lse2[j][e]);
            }
          }
        }
      }
    }

    async_wait<0>();  // dO(step) landed
    barrier();
    // dP^T = V dO^T; dS^T = P^T (Z dP^T - delta); (P^T Z) for dv.
    float dpt[MI][NS][4] = {};
    mma_nk<E, D, D, MI, NS, KD>(dpt, sV, kr0, sO, 0, lane);
    JA_UNROLL
    for (int i = 0; i < MI; ++i) {
      JA_UNROLL
      for (int j = 0; j < NS; ++j) {
        JA_UNROLL
        for (int e = 0; e < 4; ++e) {
          float z = 1.f;
          if (dropping) {
            const int kj = n0 + kr0 + 16 * i + L::row(lane, e),
                      qi = m + L::kW * j + L::col(lane, e);
            z = drop.z(hq, qi, kj);
          }
          const float pr = st[i][j][e];
          dpt[i][j][e] = pr * (z * dpt[i][j][e] - dlt[j][e]);  // dS^T
          st[i][j][e] = pr * z;                                // P^T Z
        }
      }
    }
    AFrag dsf[MI][KQ], pzf[MI][KQ];
    to_afrags<E, MI, KQ>(dpt, dsf);
    to_afrags<E, MI, KQ>(st, pzf);
    mma_rk<E, D, MI, NO, KQ>(dk, dsf, sQ, 0, col0, lane);  // dk += dS^T Q
    barrier();                                             // every warp is done with Q(step)
    if (step + 1 < total) {
      load_q(step + 1);
      async_commit();
    }
    mma_rk<E, D, MI, NO, KQ>(dv, pzf, sO, 0, col0, lane);  // dv += (P^T Z) dO
    barrier();                                             // every warp is done with dO(step)
    if (step + 1 < total) {
      load_do(step + 1);
      async_commit();
    }
  }

  scale_tile(dk, scale);
  store_tile<E>(dk,
                static_cast<uint16_t*>(p.dk) + b * p.dk_batch_stride +
                    (s.k_start + n0) * p.dk_seq_stride + hk * p.dk_head_stride,
                p.dk_seq_stride, kr0, s.k_len - n0, col0, p.head_dim, lane);
  store_tile<E>(dv,
                static_cast<uint16_t*>(p.dv) + b * p.dv_batch_stride +
                    (s.k_start + n0) * p.dv_seq_stride + hk * p.dv_head_stride,
                p.dv_seq_stride, kr0, s.k_len - n0, col0, p.head_dim_v, lane);
}

template <typename E, int D>
JA_DEVICE void attn_bwd_dkdv(const BwdParams& p) {
  constexpr int BK = AttnConfig<D>::kRowsK;
  const Seq s = sequence(p, block_id_z());
  int n0 = block_id() * BK;
  if (n0 >= s.k_len) return;
  do {
    attn_bwd_dkdv_tile<E, D>(p, s, n0);
  } while (next_tile<BK>(n0, s.k_len, p.seqlen_k));
}

// ---- backward: dq (and dbias) -------------------------------------------------------------------

// dbias rows [r0, r1) of one (batch, head) (r1 at most seqlen_q): zeros in every column below
// ncols (seqlen_k) except columns [c_lo, c_hi) of the rows below q_len (which the dS tiles write).
// Every thread of the block calls it.
template <int THREADS>
JA_DEVICE void zero_dbias(float* dbias, long long row_stride, int r0, int r1, int c_lo, int c_hi,
                          const Seq& s, int ncols) {
  for (int r = r0; r < r1; ++r) {
    float* row = dbias + r * row_stride;
    const bool inside = r < s.q_len;
    const int a = inside ? imin(c_lo, ncols) : ncols, z = inside ? c_hi : ncols;
    for (int c = thread_id(); c < a; c += THREADS) row[c] = 0.f;
    for (int c = z + thread_id(); c < ncols; c += THREADS) row[c] = 0.f;
  }
}

// dq (and dbias) of query rows [mb, mb + kRowsQ) of sequence s, the block's query head, in passes
// of kDqRows rows, below rows_end (the sequence's end, or with a dbias also seqlen_q: dbias rows
// past a varlen sequence get zeros).
template <typename E, int D>
JA_DEVICE void attn_bwd_dq_tile(const BwdParams& p, const Seq& s, int mb, int rows_end) {
  using C = AttnConfig<D>;
  using L = AccLayout;
  constexpr int T = C::kThreads, BMQ = C::kRowsQ, BM = C::kDqRows, BN = C::kDqKeys;
  constexpr int SPLIT = C::kDqSplit;
  constexpr int kWarps = T / kWarp, kGroups = kWarps / SPLIT, kRowsW = BM / kGroups;
  constexpr int MI = kRowsW / 16, DC = D / SPLIT;
  static_assert(BMQ % BM == 0 && kWarps % SPLIT == 0 && kRowsW % 16 == 0 && BN % 16 == 0);
  constexpr int NS = BN / L::kW, NO = DC / L::kW, KD = D / 16, KN = BN / 16;
  JA_SHARED Pack<uint16_t, 8> smem[(2 * BM + 2 * BN) * D / 8];
  static_assert(sizeof(smem) <= kAttnSmemBudget);
  uint16_t* const sQ = reinterpret_cast<uint16_t*>(smem);
  uint16_t* const sO = sQ + BM * D;  // dO
  uint16_t* const sK = sO + BM * D;
  uint16_t* const sV = sK + BN * D;

  const int tid = thread_id(), warp = tid / kWarp, lane = tid % kWarp;
  const int rw0 = (warp / SPLIT) * kRowsW, col0 = (warp % SPLIT) * DC;
  const int b = block_id_z(), h = block_id_y();
  const int hk = h / (p.heads_q / p.heads_k);
  const int left = p.window_left, right = p.window_right;
  float* const dbias =
      p.dbias == nullptr ? nullptr : p.dbias + b * p.dbias_batch_stride + h * p.dbias_head_stride;
  const ScoreExtras extras = score_extras(p, b, h);
  const Dropout drop = dropout_of(p, b);
  const bool dropping = p.dropout_threshold > 0;
  const float scale = p.scale, scale2 = p.scale * kLog2e;
  const long long lse_off = b * p.lse_batch_stride + h * p.lse_head_stride + s.q_start;
  const uint16_t* const kg = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                             s.k_start * p.k_seq_stride + hk * p.k_head_stride;
  const uint16_t* const vg = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                             s.k_start * p.v_seq_stride + hk * p.v_head_stride;

  for (int pass = 0; pass < BMQ / BM; ++pass) {
    const int m0 = mb + pass * BM;
    if (m0 >= rows_end) break;
    if (m0 >= s.q_len) {  // rows past this sequence (varlen): only their dbias, zeros
      if (dbias != nullptr) {
        zero_dbias<T>(dbias, p.dbias_row_stride, m0, imin(m0 + BM, p.seqlen_q), 0, 0, s,
                      p.seqlen_k);
      }
      continue;
    }
    const Range keys = keys_seen(m0, imin(m0 + BM, s.q_len), s, left, right);
    const int n_first = keys.hi > keys.lo ? keys.lo / BN * BN : 0;
    const int ntiles = keys.hi > keys.lo ? (keys.hi - n_first + BN - 1) / BN : 0;
    if (dbias != nullptr) {
      zero_dbias<T>(dbias, p.dbias_row_stride, m0, imin(m0 + BM, p.seqlen_q), n_first,
                    imin(n_first + ntiles * BN, s.k_len), s, p.seqlen_k);
    }
    // lse (log2 units) and delta of this lane's rows.
    float lse2[MI][L::kSlots], dlt[MI][L::kSlots];
    JA_UNROLL
    for (int i = 0; i < MI; ++i) {
      JA_UNROLL
      for (int sl = 0; sl < L::kSlots; ++sl) {
        const int qi = m0 + rw0 + 16 * i + L::slot_row(lane, sl);
        const bool ok = qi < s.q_len;
        lse2[i][sl] = ok ? p.lse[lse_off + qi] * kLog2e : inf();
        dlt[i][sl] = ok ? p.delta[lse_off + qi] : 0.f;
      }
    }
    if (ntiles > 0) {
      load_tile<BM, D, T>(sQ,
                          static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride +
                              (s.q_start + m0) * p.q_seq_stride + h * p.q_head_stride,
                          p.q_seq_stride, s.q_len - m0, p.head_dim);
      load_tile<BM, D, T>(sO,
                          static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride +
                              (s.q_start + m0) * p.do_seq_stride + h * p.do_head_stride,
                          p.do_seq_stride, s.q_len - m0, p.head_dim_v);
      load_tile<BN, D, T>(sK, kg + n_first * p.k_seq_stride, p.k_seq_stride, s.k_len - n_first,
                          p.head_dim);
      load_tile<BN, D, T>(sV, vg + n_first * p.v_seq_stride, p.v_seq_stride, s.k_len - n_first,
                          p.head_dim_v);
      async_commit();
    }

    float dq[MI][NO][4] = {};
    for (int t = 0; t < ntiles; ++t) {
      const int n = n_first + t * BN;
      async_wait<0>();  // Q, dO, K(t), V(t) landed
      barrier();
      float sc[MI][NS][4] = {}, dp[MI][NS][4] = {};
      mma_nk<E, D, D, MI, NS, KD>(sc, sQ, rw0, sK, 0, lane);  // S = Q K^T
      mma_nk<E, D, D, MI, NS, KD>(dp, sO, rw0, sV, 0, lane);  // dP = dO V^T
      const bool check = !tile_unmasked(m0, m0 + BM, n, n + BN, s, left, right);
      const bool plain = !check && !extras.any() && !dropping && dbias == nullptr;
      JA_UNROLL
      for (int i = 0; i < MI; ++i) {
        JA_UNROLL
        for (int j = 0; j < NS; ++j) {
          JA_UNROLL
          for (int e = 0; e < 4; ++e) {
            const int sl = L::slot(e);
            float ds;
            if (plain) {
              ds = fast_exp2(sc[i][j][e] * scale2 - lse2[i][sl]) * (dp[i][j][e] - dlt[i][sl]);
            } else {
              const int qi = m0 + rw0 + 16 * i + L::row(lane, e),
                        kj = n + L::kW * j + L::col(lane, e);
              ds = 0.f;
              if (!check || visible(qi, kj, s, left, right)) {
                const float pr =
                    fast_exp2(extras.apply(sc[i][j][e] * scale, qi, kj, s) * kLog2e - lse2[i][sl]);
                const float z = dropping ? drop.z(h, qi, kj) : 1.f;
                ds = pr * (z * dp[i][j][e] - dlt[i][sl]);
              }
              if (dbias != nullptr && qi < s.q_len && kj < s.k_len && qi < p.seqlen_q &&
                  kj < p.seqlen_k) {
                dbias[qi * p.dbias_row_stride + kj] = ds;
              }
            }
            sc[i][j][e] = ds;  // dS
          }
        }
      }
      barrier();  // every warp is done with V(t)
      if (t + 1 < ntiles) {
        load_tile<BN, D, T>(sV, vg + (n + BN) * p.v_seq_stride, p.v_seq_stride, s.k_len - n - BN,
                            p.head_dim_v);
        async_commit();
      }
      AFrag dsf[MI][KN];
      to_afrags<E, MI, KN>(sc, dsf);
      mma_rk<E, D, MI, NO, KN>(dq, dsf, sK, 0, col0, lane);  // dq += dS K
      barrier();                                             // every warp is done with K(t)
      if (t + 1 < ntiles) {
        load_tile<BN, D, T>(sK, kg + (n + BN) * p.k_seq_stride, p.k_seq_stride, s.k_len - n - BN,
                            p.head_dim);
        async_commit();
      }
    }
    scale_tile(dq, scale);
    store_tile<E>(dq,
                  static_cast<uint16_t*>(p.dq) + b * p.dq_batch_stride +
                      (s.q_start + m0) * p.dq_seq_stride + h * p.dq_head_stride,
                  p.dq_seq_stride, rw0, s.q_len - m0, col0, p.head_dim, lane);
    barrier();  // the next pass reloads Q and dO
  }
}

template <typename E, int D>
JA_DEVICE void attn_bwd_dq(const BwdParams& p) {
  constexpr int BMQ = AttnConfig<D>::kRowsQ;
  const Seq s = sequence(p, block_id_z());
  const int rows_end = p.dbias != nullptr ? imax(s.q_len, p.seqlen_q) : s.q_len;
  int mb = block_id() * BMQ;
  if (mb >= rows_end) return;
  do {
    attn_bwd_dq_tile<E, D>(p, s, mb, rows_end);
  } while (next_tile<BMQ>(mb, rows_end, p.seqlen_q));
}

// ---- GQA fold, dropout mask ---------------------------------------------------------------------

template <typename E>
JA_DEVICE void attn_gqa_reduce(const GqaReduceParams& p) {
  constexpr int V = 4;
  const long long width = static_cast<long long>(p.heads_k) * p.dim;  // dst elements a row
  const long long total = p.rows * width;
  const long long e0 =
      (static_cast<long long>(block_id()) * attn::kReduceThreads + thread_id()) * V;
  if (e0 >= total) return;
  const auto* src = static_cast<const uint16_t*>(p.src);
  auto* dst = static_cast<uint16_t*>(p.dst);
  // One (row, head) for all V elements when dim % V == 0: one 8-byte access per source head.
  const bool vec = p.dim % V == 0 && reinterpret_cast<uintptr_t>(src) % 8 == 0 &&
                   reinterpret_cast<uintptr_t>(dst) % 8 == 0;
  if (vec) {
    const long long r = e0 / width, rem = e0 % width, hk = rem / p.dim, c = rem % p.dim;
    const uint16_t* in = src + (r * p.heads_k * p.group + hk * p.group) * p.dim + c;
    float acc[V] = {};
    for (int g = 0; g < p.group; ++g) {
      const Pack<uint16_t, V> x = *reinterpret_cast<const Pack<uint16_t, V>*>(in + g * p.dim);
      JA_UNROLL
      for (int u = 0; u < V; ++u) acc[u] += E::load(x.v[u]);
    }
    Pack<uint16_t, V> y;
    JA_UNROLL
    for (int u = 0; u < V; ++u) y.v[u] = E::store(acc[u]);
    *reinterpret_cast<Pack<uint16_t, V>*>(dst + e0) = y;
    return;
  }
  for (int u = 0; u < V; ++u) {
    const long long e = e0 + u;
    if (e >= total) break;
    const long long r = e / width, rem = e % width, hk = rem / p.dim, c = rem % p.dim;
    const uint16_t* in = src + (r * p.heads_k * p.group + hk * p.group) * p.dim + c;
    float acc = 0.f;
    for (int g = 0; g < p.group; ++g) acc += E::load(in[g * p.dim]);
    dst[e] = E::store(acc);
  }
}

JA_DEVICE void attn_dropout_mask(const DropoutMaskParams& p) {
  const long long j0 = (static_cast<long long>(block_id()) * attn::kMaskThreads + thread_id()) * 4;
  if (j0 >= p.seqlen_k) return;
  const int i = block_id_y(), bh = block_id_z();
  const int b = bh / p.heads, h = bh % p.heads;
  const attn::AttnShard sh = attn::attn_shard(p.shard);  // the whole call's bits at its indices
  const unsigned key[2] = {p.rng_key[0], p.rng_key[1]};
  unsigned char* out = p.keep + (static_cast<long long>(bh) * p.seqlen_q + i) * p.seqlen_k + j0;
  // One Philox call serves the 4 columns (attn_dropout_keep's counter is (i, j / 4, h, b)).
  unsigned char k[4];
  JA_UNROLL
  for (int u = 0; u < 4; ++u) {
    const bool keep =
        attn::attn_dropout_keep(key, b + sh.b0, h + sh.h0, i + sh.r0, j0 + u, p.dropout_threshold);
    k[u] = keep ? 1 : 0;
  }
  if (j0 + 4 <= p.seqlen_k && reinterpret_cast<uintptr_t>(out) % 4 == 0) {
    *reinterpret_cast<Pack<unsigned char, 4>*>(out) =
        Pack<unsigned char, 4>{{k[0], k[1], k[2], k[3]}};
  } else {
    for (int u = 0; u < 4 && j0 + u < p.seqlen_k; ++u) out[u] = k[u];
  }
}

// ---- sm_90 forward: wgmma with warp specialisation ----------------------------------------------
//
// FlashAttention-3's forward structure (Shah et al., "FlashAttention-3: Fast and Accurate
// Attention with Asynchrony and Low-precision", 2024), on the GEMM engine's primitives
// (jax_aiter_wgmma.hpp): warpgroup 0 produces, copying Q once and then K and V tiles of 128 keys
// with cp.async into a ring of kWgStages (3) stages (128-byte swizzled rows, mbarriers `full_k`,
// `full_v`, `empty`); warpgroups 1 and 2 each own 64 query rows: S = Q K^T by wgmma from shared
// memory, the online softmax in registers, O += P V by wgmma with P from registers (the accumulator
// layout of S is the A-operand layout once packed to 16 bits) and V read MN-major through the
// transpose flag, so V is stored as loaded. O stays in registers; key tiles no row of the block
// sees are not loaded (causal, windows). Two variants a dtype: the plain one (batch mode, masks
// and windows) and the features one (kX: varlen, bias, ALiBi, dropout), so the plain kernel has
// none of their registers or instructions. Masks test each element against its row's visible key
// range (WgMask); bias and ALiBi enter as the S wgmma's initial accumulator (wg_score_terms);
// dropout is attn_dropout_keep's Philox (wg_keep_bits). Taken by plans for sm_90 only
// (ops/attention_portable.hpp states the rule).
#if defined(__CUDACC__)
struct AttnFwdWg {
  static constexpr int BM = attn::kWgRowsQ, BN = 128, D = 128, kStages = attn::kWgStages;
  static constexpr int kThreads = attn::kWgThreads;
  static constexpr int kHalfBytes = 128 * 128;       // 64 columns (one swizzled row) x 128 rows
  static constexpr int kTileBytes = 2 * kHalfBytes;  // 128 rows x 128 columns, 16-bit
  static_assert(BM == 128 && BN == 128 && kThreads == 3 * 128);
  static_assert(attn::kWgSmemBytes ==
                1024 + (1 + 2 * kStages) * kTileBytes + 8 * (2 + 3 * kStages));
  // setmaxnreg's split (the GEMM engine's): it moves registers within what the block got at launch,
  // 168 a thread under launch bounds (384, 1); a split asking for more waits forever (32 / 240
  // hung on the H100). o, s and two P tiles need 240 (232 spilled 24 bytes).
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 256 <= 168 * kThreads);
};

// Rows [0, rows) and columns [0, cols) (cols a multiple of 8) of a 128 x 128 tile at g (row
// stride `stride` elements) into its two swizzled 64-column halves at dst; the rest zero. The
// producer warpgroup's 128 threads: thread t copies 16-byte chunk t % 16 of rows t / 16 + 8 p,
// which all share row % 8, hence the swizzled chunk.
JA_DEVICE void wg_load_tile(uint32_t dst, const uint16_t* g, long long stride, int rows, int cols) {
  const int t = thread_id() % 128, c = t % 16, r0 = t / 16;
  const uint32_t d0 = dst + (c / 8) * AttnFwdWg::kHalfBytes + r0 * 128 + ((c % 8) ^ r0) * 16;
  const bool col_ok = c * 8 < cols;
  // One running address (the producer holds few registers: 16 precomputed ones spilled).
  const uint16_t* src = g + r0 * stride + c * 8;
  const long long step = 8 * stride;
  uint32_t d = d0;
  JA_UNROLL
  for (int p = 0; p < 16; ++p) {
    const bool ok = col_ok && r0 + 8 * p < rows;
    cp_async_16(d, ok ? src : g, ok);
    src += step;
    d += 1024;
  }
}

// The key tiles the rows [m0, m0 + BM) of sequence s need: the first key and the number of BN-key
// tiles (0: no row sees a key).
struct WgKeys {
  int first, tiles;
};
JA_DEVICE WgKeys wg_keys(const Seq& s, int m0, int left, int right) {
  constexpr int BN = AttnFwdWg::BN;
  const Range keys = keys_seen(m0, imin(m0 + AttnFwdWg::BM, s.q_len), s, left, right);
  if (keys.hi <= keys.lo) return {0, 0};
  const int first = keys.lo / BN * BN;
  return {first, (keys.hi - first + BN - 1) / BN};
}

// Rows [m0, m0 + BM) of sequence s when none of them sees a key: out 0, lse +inf (as attn_fwd),
// written by threads [0, threads) of the caller's group (tid its place in it).
JA_DEVICE void wg_write_unseen(const FwdParams& p, const Seq& s, int b, int h, int m0, int tid,
                               int threads) {
  const int rows = imin(AttnFwdWg::BM, s.q_len - m0);
  float* const lse = p.lse + b * p.lse_batch_stride + h * p.lse_head_stride + s.q_start + m0;
  uint16_t* const out = static_cast<uint16_t*>(p.out) + b * p.o_batch_stride +
                        (s.q_start + m0) * p.o_seq_stride + h * p.o_head_stride;
  for (int i = tid; i < rows * p.head_dim_v; i += threads) {
    out[(i / p.head_dim_v) * p.o_seq_stride + i % p.head_dim_v] = 0;
  }
  for (int r = tid; r < rows; r += threads) lse[r] = inf();
}

// The features variant's next row tile: a varlen sequence may be longer than max_seqlen_q, which
// sizes the grid (next_tile's step; no barrier: each role runs its own loop).
JA_DEVICE bool wg_next_rows(int& m0, int q_len, int seqlen_q) {
  constexpr int BM = AttnFwdWg::BM;
  const int step = (seqlen_q / BM + (seqlen_q % BM != 0)) * BM;
  if (step >= q_len - m0) return false;
  m0 += step;
  return true;
}

// The dropout keep bits of one consumer thread's 64 scores of a tile (attn_dropout_keep's, as
// Dropout::z): element i (row r_lane + 8 ((i / 2) % 2), column kj0 + 8 (i / 4) + i % 2) is kept
// when bit i of the result is set. Lanes l and l ^ 1 hold the same rows and the two halves of the
// same 4-column Philox groups, so each computes the words of every other 8-column block for both
// (16 Philox calls a thread instead of 32) and hands its partner's bits over in one shuffle.
JA_DEVICE uint64_t wg_keep_bits(const Dropout& d, int h, int r_lane, int kj0, int lane) {
  const bool odd = (lane & 1) != 0;
  uint32_t mine = 0, theirs = 0;  // bit 2 (2 jp + sl) + w: block 2 jp + (lane & 1), slot sl, word w
  JA_UNROLL
  for (int jp = 0; jp < 8; ++jp) {
    const unsigned group = static_cast<unsigned>(kj0 + 16 * jp + (odd ? 8 : 0)) >> 2;
    JA_UNROLL
    for (int sl = 0; sl < 2; ++sl) {
      const attn::Philox4 r = attn::philox4x32_10(
          static_cast<unsigned>(r_lane + 8 * sl + d.r0), group, static_cast<unsigned>(h + d.h0),
          static_cast<unsigned>(d.batch), d.key[0], d.key[1]);
      // Even lanes hold words 0, 1 of a group, odd lanes 2, 3.
      const unsigned m0 = odd ? r.v[2] : r.v[0], m1 = odd ? r.v[3] : r.v[1];
      const unsigned t0 = odd ? r.v[0] : r.v[2], t1 = odd ? r.v[1] : r.v[3];
      const int bit = 2 * (2 * jp + sl);
      mine |= (m0 >= d.threshold ? 1u : 0u) << bit | (m1 >= d.threshold ? 1u : 0u) << (bit + 1);
      theirs |= (t0 >= d.threshold ? 1u : 0u) << bit | (t1 >= d.threshold ? 1u : 0u) << (bit + 1);
    }
  }
  const uint32_t got = __shfl_xor_sync(0xffffffffu, theirs, 1);
  // Blocks of even index from the even lane of the pair, odd ones from the odd lane.
  const uint32_t even = odd ? got : mine, odd_blocks = odd ? mine : got;
  uint64_t keep = 0;
  JA_UNROLL
  for (int i = 0; i < 64; ++i) {
    const int jb = i / 4, src = 2 * (2 * (jb / 2) + (i / 2) % 2) + i % 2;
    const uint32_t bits = jb % 2 == 0 ? even : odd_blocks;
    keep |= static_cast<uint64_t>((bits >> src) & 1u) << i;
  }
  return keep;
}

// A consumer thread's view of a tile's masks: whether the tile crosses a mask edge, and the keys
// its slots' rows see, kj0 + [lo, hi) (attn_visible_at solved for j, in 64 bits; 0 <= lo <= hi <=
// BN). Its elements are keys kj0 + 8 (i / 4) + i % 2 of rows r_lane + 8 ((i / 2) % 2), so each
// costs two compares and no branch.
struct WgMask {
  bool check;
  int lo[2], hi[2];
};
JA_DEVICE WgMask wg_mask(const Seq& s, int r_row0, int r_lane, int n, int kj0, int left,
                         int right) {
  constexpr int BN = AttnFwdWg::BN;
  WgMask mk{!tile_unmasked(r_row0, r_row0 + 64, n, n + BN, s, left, right), {0, 0}, {BN, BN}};
  if (mk.check) {
    JA_UNROLL
    for (int sl = 0; sl < 2; ++sl) {
      const int qi = r_lane + 8 * sl;
      const long long diag = static_cast<long long>(qi) + s.off;
      long long a = 0, z = s.k_len;
      if (left >= 0) a = lmax(a, diag - left);
      if (right >= 0) z = lmin(z, diag + right + 1);
      if (qi >= s.q_len) z = a;
      mk.lo[sl] = static_cast<int>(lmin(lmax(a - kj0, 0), BN));
      mk.hi[sl] = static_cast<int>(lmin(lmax(z - kj0, 0), BN));
    }
  }
  return mk;
}
template <bool kCheck>
JA_DEVICE bool wg_visible(const WgMask& mk, int sl, int c) {
  return !kCheck || (c >= mk.lo[sl] && c < mk.hi[sl]);
}

// The bias kinds of the features variant, template arguments so no element branches on them.
inline constexpr int kWgNoBias = 0, kWgBiasF32 = 1, kWgBiasBF16 = 2, kWgBiasF16 = 3;

// The bias's storage type of each kind.
template <int kBias>
struct WgBias {
  using type = uint16_t;
};
template <>
struct WgBias<kWgBiasF32> {
  using type = float;
};

// The features variant's score terms of a tile, bias + ALiBi (ScoreExtras::apply's), divided by
// the softmax scale into sc, onto which the S wgmma then accumulates q.k: scale (q.k + terms /
// scale) is apply's sum. The loads are issued before the consumer's turn to issue its products,
// so their latency runs under the other consumer's work, and the terms take no registers but
// sc's, which are free between a tile's softmax and the next tile's S. Element i is row
// r_lane + 8 ((i / 2) % 2), key kj0 + 8 (i / 4) + i % 2; a masked one (kCheck: the tile crosses
// a mask edge) reads the (b, h) base, a valid address, and the softmax masks it. ALiBi is added
// always (its slope is 0 without it: -0 * distance adds nothing), its distance |diagonal - key|
// formed in float: exact below 2^24 keys, as attn_alibi_at's conversion.
template <int kBias, bool kCheck>
JA_DEVICE void wg_score_terms(float (&sc)[64], const ScoreExtras& x, const Seq& s, int r_lane,
                              int kj0, const WgMask& mk, float inv_scale) {
  using T = typename WgBias<kBias>::type;
  const T* const base = static_cast<const T*>(x.bias);
  const T* row[2] = {};
  float dist0[2];  // diagonal - kj0 of each slot's row
  JA_UNROLL
  for (int sl = 0; sl < 2; ++sl) {
    const int qi = r_lane + 8 * sl;
    if constexpr (kBias != kWgNoBias) row[sl] = base + qi * x.bias_row + kj0 * x.bias_col;
    dist0[sl] = static_cast<float>(static_cast<long long>(qi) + s.off) - static_cast<float>(kj0);
  }
  const float neg_slope = -x.slope * inv_scale;
  JA_UNROLL
  for (int i = 0; i < 64; ++i) {
    const int sl = (i / 2) % 2, c = 8 * (i / 4) + i % 2;  // key kj0 + c
    float v = neg_slope * __builtin_fabsf(dist0[sl] - static_cast<float>(c));
    if constexpr (kBias != kWgNoBias) {
      const T e = *(wg_visible<kCheck>(mk, sl, c) ? row[sl] + c * x.bias_col : base);
      float f;
      if constexpr (kBias == kWgBiasF32) {
        f = e;
      } else if constexpr (kBias == kWgBiasBF16) {
        f = BF16::load(e);
      } else {
        f = F16::load(e);
      }
      v += f * inv_scale;
    }
    sc[i] = v;
  }
}
template <bool kCheck>
JA_DEVICE void wg_score_terms_of(int bias_kind, float (&sc)[64], const ScoreExtras& x, const Seq& s,
                                 int r_lane, int kj0, const WgMask& mk, float inv_scale) {
  if (bias_kind == kWgNoBias) {
    wg_score_terms<kWgNoBias, kCheck>(sc, x, s, r_lane, kj0, mk, inv_scale);
  } else if (bias_kind == kWgBiasF32) {
    wg_score_terms<kWgBiasF32, kCheck>(sc, x, s, r_lane, kj0, mk, inv_scale);
  } else if (bias_kind == kWgBiasBF16) {
    wg_score_terms<kWgBiasBF16, kCheck>(sc, x, s, r_lane, kj0, mk, inv_scale);
  } else {
    wg_score_terms<kWgBiasF16, kCheck>(sc, x, s, r_lane, kj0, mk, inv_scale);
  }
}

// kX: the features variant (ALiBi, bias, dropout, varlen sequences longer than max_seqlen_q);
// without it the kernel takes none of them (windows it takes either way: the masks are the
// same code), and keeps its registers.
template <typename E, bool kX>
JA_DEVICE void attn_fwd_wg(const FwdParams& p) {
  using W = AttnFwdWg;
  constexpr int BN = W::BN, S = W::kStages;
  const Seq s = sequence(p, block_id_z());
  const int m_begin = block_id() * W::BM;
  if (m_begin >= s.q_len) return;
  const int b = block_id_z(), h = block_id_y();
  const int hk = h / (p.heads_q / p.heads_k);
  const int left = p.window_left, right = p.window_right;
  if constexpr (!kX) {  // one row tile: if no row sees a key (causal sq > sk), nothing to load
    if (wg_keys(s, m_begin, left, right).tiles == 0) {
      wg_write_unseen(p, s, b, h, m_begin, thread_id(), W::kThreads);
      return;
    }
  }

  unsigned char* smem_raw = dynamic_shared();
  if (dynamic_shared_bytes() < attn::kWgSmemBytes) __trap();  // a plan that gave too little
  const uint32_t raw = shared_address(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the swizzle's atoms are 1024-byte aligned
  const uint32_t sq = base, stages = base + W::kTileBytes;
  uint64_t* const bar_q =
      reinterpret_cast<uint64_t*>(smem_raw + (base - raw) + (1 + 2 * S) * W::kTileBytes);
  uint64_t* const full_k = bar_q + 1;
  uint64_t* const full_v = full_k + S;
  uint64_t* const empty = full_v + S;
  uint64_t* const q_free = empty + S;  // the features variant's next Q may overwrite this one
  if (thread_id() == 0) {
    sm90::mbarrier_init(bar_q, 128);  // every producer thread, once its copies landed
    for (int i = 0; i < S; ++i) {
      sm90::mbarrier_init(&full_k[i], 128);
      sm90::mbarrier_init(&full_v[i], 128);
      sm90::mbarrier_init(&empty[i], 8);  // lane 0 of each consumer warp
    }
    sm90::mbarrier_init(q_free, 8);
  }
  barrier();

  const uint16_t* const qg = static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride +
                             s.q_start * p.q_seq_stride + h * p.q_head_stride;
  const uint16_t* const kg = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                             s.k_start * p.k_seq_stride + hk * p.k_head_stride;
  const uint16_t* const vg = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                             s.k_start * p.v_seq_stride + hk * p.v_head_stride;

  // The ring's and bar_q's phases run on across the row tiles of the features variant: g counts
  // the K/V tiles and `round` the Q tiles loaded before this row tile.
  if (thread_id() < 128) {  // the producer
    sm90::registers_release<W::kProducerRegs>();
    int m0 = m_begin, g = 0, round = 0;
    do {
      const WgKeys kt = wg_keys(s, m0, left, right);
      if (kt.tiles == 0) continue;
      if (kX && round > 0) sm90::mbarrier_wait(q_free, (round - 1) & 1);
      wg_load_tile(sq, qg + m0 * p.q_seq_stride, p.q_seq_stride, s.q_len - m0, p.head_dim);
      sm90::mbarrier_arrive_on_copies(bar_q);
      for (int t = 0; t < kt.tiles; ++t, ++g) {
        const int st = g % S, n = kt.first + t * BN;
        if (g >= S) sm90::mbarrier_wait(&empty[st], ((g / S) - 1) & 1);
        const uint32_t sk = stages + st * 2 * W::kTileBytes;
        wg_load_tile(sk, kg + n * p.k_seq_stride, p.k_seq_stride, s.k_len - n, p.head_dim);
        sm90::mbarrier_arrive_on_copies(&full_k[st]);
        wg_load_tile(sk + W::kTileBytes, vg + n * p.v_seq_stride, p.v_seq_stride, s.k_len - n,
                     p.head_dim_v);
        sm90::mbarrier_arrive_on_copies(&full_v[st]);
      }
      ++round;
    } while (kX && wg_next_rows(m0, s.q_len, p.seqlen_q));
    cp_async_wait<0>();
    return;
  }
  sm90::registers_claim<W::kConsumerRegs>();

  const int tw = thread_id() % 128, warp = tw / kWarp, lane = tw % kWarp;
  const int wg = thread_id() / 128 - 1;  // consumer 0 or 1
  const int row0 = 64 * wg;              // this warpgroup's first row in the block
  const int c_lane = 2 * (lane % 4);     // column of element 0 in each 8-block
  const float scale2 = p.scale * kLog2e;
  const bool arrives = lane == 0;
  // Ping-pong (FA3 section 3.1): the two consumers take turns issuing their products, so one's
  // softmax runs under the other's wgmma. Named barrier 1 + w: consumer w's turn (256 threads:
  // it syncs, the other arrives). In each row tile consumer 1 lets consumer 0 go first and skips
  // its last pass.
  const auto turn_wait = [&] { sm90::named_barrier_sync(1 + wg, 256); };
  const auto turn_pass = [&] { sm90::named_barrier_arrive(2 - wg, 256); };
  // The features variant's score terms (bias, ALiBi) and dropout mask.
  const ScoreExtras extras = kX ? score_extras(p, b, h) : ScoreExtras{};
  const Dropout drop = kX ? dropout_of(p, b) : Dropout{};
  const bool dropping = kX && p.dropout_threshold > 0;
  const bool terms = kX && extras.any();  // bias or ALiBi: wg_score_terms
  const float inv_scale = kX ? 1.f / p.scale : 0.f;
  const int bias_kind = !kX || extras.bias == nullptr          ? kWgNoBias
                        : extras.bias_dtype == attn::kAttnF32  ? kWgBiasF32
                        : extras.bias_dtype == attn::kAttnBF16 ? kWgBiasBF16
                                                               : kWgBiasF16;
  const float out_scale = kX ? p.dropout_scale : 1.f;  // dropout's 1 / (1 - p), once at the end

  float* const lse_g = p.lse + b * p.lse_batch_stride + h * p.lse_head_stride + s.q_start;
  uint16_t* const out_g = static_cast<uint16_t*>(p.out) + b * p.o_batch_stride +
                          s.q_start * p.o_seq_stride + h * p.o_head_stride;
  int m0 = m_begin, g = 0, round = 0;
  do {
    const WgKeys kt = wg_keys(s, m0, left, right);
    if (kt.tiles == 0) {  // the features variant only (the plain one returned above)
      wg_write_unseen(p, s, b, h, m0, thread_id() - 128, 256);
      continue;
    }
    const int n_first = kt.first, ntiles = kt.tiles;
    const int r_lane = m0 + row0 + 16 * warp + lane / 4;  // row of slot 0 (slot 1: + 8)
    if (wg == 1) turn_pass();

    float o[64];
    JA_UNROLL
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m_run[2] = {-inf(), -inf()}, l_run[2] = {0.f, 0.f};  // log2 units; partial sums
    sm90::mbarrier_wait(bar_q, round & 1);
    const uint64_t dq = sm90::sw128_desc(sq + row0 * 128);
    // Tile t of this row tile is the ring's tile g + t.
    const auto stage_k = [&](int t) { return stages + ((g + t) % S) * 2 * W::kTileBytes; };

    // P of two consecutive tiles in two arrays (the loop below is unrolled by two): the softmax
    // of tile t writes one while P V of t - 1 reads the other. One array and a copy let the
    // compiler merge them, and ptxas then serialises every wgmma (C7513).
    using PFrag = uint32_t[W::BN / 16][4];
    float sc[64];
    PFrag pa0, pa1;
    float alpha[2];
    // acc: sc holds the tile's score terms (wg_score_terms), which q.k is added to.
    const auto issue_s = [&](int t, bool acc) {
      const uint64_t dk = sm90::sw128_desc(stage_k(t));
      JA_UNROLL
      for (int kk = 0; kk < W::D / 16; ++kk) {
        const uint64_t off = (kk / 4) * (W::kHalfBytes >> 4) + (kk % 4) * sm90::kSw128KStep;
        sm90::wgmma_m64n128k16_ss<E>(sc, dq + off, dk + off, kk > 0 || acc ? 1 : 0);
      }
      sm90::wgmma_commit();
    };
    const auto issue_pv = [&](int t, const PFrag& pp) {
      const uint64_t dv = sm90::sw128_mn_desc(stage_k(t) + W::kTileBytes, W::kHalfBytes);
      JA_UNROLL
      for (int kk = 0; kk < W::BN / 16; ++kk) {
        sm90::wgmma_m64n128k16_rs_tb<E>(o, pp[kk], dv + kk * sm90::kSw128MnKStep);
      }
      sm90::wgmma_commit();
    };
    // Tile t's masks, and its score terms (the features variant with a bias or ALiBi) into sc.
    const auto mask_of = [&](int t) {
      const int n = n_first + t * BN;
      return wg_mask(s, m0 + row0, r_lane, n, n + c_lane, left, right);
    };
    const auto init_terms = [&](int t, const WgMask& mk) {
      const int kj0 = n_first + t * BN + c_lane;
      if (mk.check) {
        wg_score_terms_of<true>(bias_kind, sc, extras, s, r_lane, kj0, mk, inv_scale);
      } else {
        wg_score_terms_of<false>(bias_kind, sc, extras, s, r_lane, kj0, mk, inv_scale);
      }
    };
    // Scores of tile t (in sc) to P (pn) with the online softmax: new row maxima, alpha (the
    // factor o still owes), running sums. Log2 units, -inf where masked (only tiles that cross
    // a mask edge test each element).
    const auto softmax = [&](int t, PFrag& pn, const WgMask& mk) {
      const int kj0 = n_first + t * BN + c_lane;
      if (mk.check) {
        JA_UNROLL
        for (int i = 0; i < 64; ++i) {
          sc[i] = wg_visible<true>(mk, (i / 2) % 2, 8 * (i / 4) + i % 2) ? sc[i] * scale2 : -inf();
        }
      } else {
        JA_UNROLL
        for (int i = 0; i < 64; ++i) sc[i] *= scale2;
      }
      float mx[2][2] = {{-inf(), -inf()}, {-inf(), -inf()}};  // two chains a row
      JA_UNROLL
      for (int i = 0; i < 64; ++i) mx[(i / 2) % 2][i / 32] = fmax_(mx[(i / 2) % 2][i / 32], sc[i]);
      float m_use[2];
      JA_UNROLL
      for (int sl = 0; sl < 2; ++sl) {
        float m = fmax_(mx[sl][0], mx[sl][1]);
        m = fmax_(m, shuffle_xor(m, 1));
        m = fmax_(m, shuffle_xor(m, 2));
        const float m_new = fmax_(m_run[sl], m);
        m_use[sl] = m_new == -inf() ? 0.f : m_new;  // a row with nothing visible yet
        alpha[sl] = fast_exp2(m_run[sl] - m_use[sl]);
        m_run[sl] = m_new;
      }
      float rs[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
      JA_UNROLL
      for (int i = 0; i < 64; ++i) {
        sc[i] = fast_exp2(sc[i] - m_use[(i / 2) % 2]);
        rs[(i / 2) % 2][i / 32] += sc[i];
      }
      JA_UNROLL
      for (int sl = 0; sl < 2; ++sl) l_run[sl] = l_run[sl] * alpha[sl] + (rs[sl][0] + rs[sl][1]);
      if (dropping) {  // lse is of the undropped scores; the kept ones' 1 / (1 - p) is out_scale
        const uint64_t keep = wg_keep_bits(drop, h, r_lane, kj0, lane);
        JA_UNROLL
        for (int i = 0; i < 64; ++i) sc[i] = (keep >> i) & 1u ? sc[i] : 0.f;
      }
      JA_UNROLL
      for (int kk = 0; kk < W::BN / 16; ++kk) {
        JA_UNROLL
        for (int r = 0; r < 4; ++r) {
          pn[kk][r] = pack2<E>(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
        }
      }
    };
    // Tile t's scores are issued with tile t - 1's P V (FA3 section 3.2): the softmax of t runs
    // while P V of t - 1 is in flight; o is rescaled once that product has landed. The loop runs
    // steps 1 .. t_last in pairs, with no wgmma under a branch (ptxas serialises every wgmma of a
    // kernel that has one on a path it cannot prove uniform, C7520): step ntiles scores the last
    // tile again unused, and a step past it multiplies a zero P into the last V tile.
    const int t_last = ntiles + (ntiles & 1);
    const auto step = [&](int t, PFrag& pp, PFrag& pn) {
      const int tk = imin(t, ntiles - 1), tv = imin(t - 1, ntiles - 1);
      const WgMask mk = mask_of(t);
      const bool acc = terms && t < ntiles;
      if (acc) init_terms(t, mk);
      sm90::mbarrier_wait(&full_k[(g + tk) % S], ((g + tk) / S) & 1);
      sm90::mbarrier_wait(&full_v[(g + tv) % S], ((g + tv) / S) & 1);
      sm90::fence_proxy_async();
      turn_wait();
      sm90::wgmma_fence();
      sm90::hold_registers(o);
      issue_s(tk, acc);
      issue_pv(tv, pp);
      if (wg == 0 || t != t_last) turn_pass();
      sm90::wgmma_wait<1>();  // the scores of t
      sm90::hold_registers(sc);
      if (t < ntiles) {
        softmax(t, pn, mk);
      } else {
        JA_UNROLL
        for (int kk = 0; kk < W::BN / 16; ++kk) {
          JA_UNROLL
          for (int r = 0; r < 4; ++r) pn[kk][r] = 0u;
        }
        alpha[0] = alpha[1] = 1.f;
      }
      sm90::wgmma_wait<0>();  // P V of t - 1: its stage is free, o is ours again
      sm90::hold_registers(o);
      JA_UNROLL
      for (int kk = 0; kk < W::BN / 16; ++kk) sm90::hold_registers(pp[kk]);
      // The last tile's stage is read up to step t_last (the masked dummy steps): freed only
      // then, as the features variant's producer refills it for the next row tile.
      if (arrives && (t - 1 < ntiles - 1 || t == t_last)) {
        sm90::mbarrier_arrive(&empty[(g + tv) % S]);
      }
      JA_UNROLL
      for (int i = 0; i < 64; ++i) o[i] *= alpha[(i / 2) % 2];
    };
    const WgMask mk0 = mask_of(0);
    if (terms) init_terms(0, mk0);
    sm90::mbarrier_wait(&full_k[g % S], (g / S) & 1);
    sm90::fence_proxy_async();
    turn_wait();
    sm90::wgmma_fence();
    issue_s(0, terms);
    turn_pass();
    sm90::wgmma_wait<0>();
    sm90::hold_registers(sc);
    softmax(0, pa0, mk0);
    for (int t = 1; t <= t_last; t += 2) {
      step(t, pa0, pa1);
      step(t + 1, pa1, pa0);
    }
    // Every product that read Q has landed: the producer may load the next row tile's.
    if (kX && arrives) sm90::mbarrier_arrive(q_free);

    // out = o / l (0 for a row that saw nothing), lse = log(l) + max (+inf for such a row); a
    // NaN score makes l NaN, hence out and lse (as attn_fwd_tile).
    JA_UNROLL
    for (int sl = 0; sl < 2; ++sl) {
      float l = l_run[sl];
      l += shuffle_xor(l, 1);
      l += shuffle_xor(l, 2);
      const float inv = l == 0.f ? 0.f : out_scale / l;
      const int qi = r_lane + 8 * sl;
      if (qi >= s.q_len) continue;
      if (lane % 4 == 0) lse_g[qi] = l == 0.f ? inf() : (m_run[sl] + fast_log2(l)) * kLn2;
      uint16_t* const row = out_g + qi * p.o_seq_stride;
      JA_UNROLL
      for (int j = 0; j < W::D / 8; ++j) {
        const int c = 8 * j + c_lane;
        if (c < p.head_dim_v) {
          *reinterpret_cast<uint32_t*>(row + c) =
              pack2<E>(o[4 * j + 2 * sl] * inv, o[4 * j + 2 * sl + 1] * inv);
        }
      }
    }
    g += ntiles;
    ++round;
  } while (kX && wg_next_rows(m0, s.q_len, p.seqlen_q));
}
#endif  // __CUDACC__

// ---- sm_90 backward: wgmma with warp specialisation ---------------------------------------------
//
// The backward of FlashAttention-3 (Shah et al. 2024, section 3; FA2's algorithm) in our two-pass,
// atomic-free form, on the forward's primitives: warpgroup 0 produces with cp.async into
// mbarrier-guarded rings, warpgroups 1 and 2 consume with wgmma (setmaxnreg 24 / 240, as
// attn_fwd_wg).
//   dkdv (a block: 128 keys of one key head; a consumer: 64 of them): K and V stay in shared
//     memory; the producer streams 64-row tiles of Q and dO with their lse and delta through a
//     kWgBwdStages ring, over the group's query heads and the query tiles that see the keys. Per
//     tile the consumer computes S^T = K Q^T and dP^T = V dO^T (wgmma m64n64k16 from shared
//     memory: keys are the rows, so P^T and dS^T land in the accumulator layout, which is the
//     register A operand of the next products), P^T = exp(S^T scale - lse), dS^T = P^T (dP^T -
//     delta), then dV += P^T dO and dK += dS^T Q (m64n128k16, A from registers, dO and Q read
//     MN-major through the transpose flag, as the forward reads V). dK and dV stay in registers
//     (128 a thread) until the end; no query head's sum leaves the block (GQA as attn_bwd_dkdv).
//   dq (a block: 128 query rows of one query head; a consumer: 64): Q and dO stay; K and V tiles
//     of 128 keys stream through a kWgDqStages ring; S = Q K^T, dP = dO V^T (m64n128k16 from
//     shared memory), dS in registers, dQ += dS K (K read MN-major). Blocks take their query tiles
//     last first: under a causal mask those see the most keys.
// Taken by plans for sm_90 only (ops/attention_portable.hpp, attn_bwd_takes_wgmma). Measured (H200,
// 2026-11-28, benchmarks/gpu/NOTES.md): backward 314 / 350 / 365 TFLOP/s at b4 s4096 hq32 hk8 d128
// causal / b4 s4096 hq=hk=32 / b1 s16384 hq32 hk8 causal, 2.5-2.6x the mma.sync passes; dkdv runs
// its four products at 440-485 TFLOP/s, dq its three at 460-500. Each consumer waits for its own
// products before the next (issuing the next tile's S^T behind dV and dK measured -5% causal, +6%
// non-causal: not kept).
#if defined(__CUDACC__)
struct AttnBwdWg {
  static constexpr int D = 128, kThreads = attn::kWgThreads;
  static constexpr int BK = attn::kWgBwdKeys, BQ = attn::kWgBwdRows, kStages = attn::kWgBwdStages;
  static constexpr int DqRows = attn::kWgRowsQ, DqKeys = attn::kWgDqKeys;
  static constexpr int kDqStages = attn::kWgDqStages;
  // A tile of R rows x 128 16-bit columns: two 64-column halves of R 128-byte swizzled rows.
  template <int R>
  static constexpr uint32_t kHalfBytes = R * 128;
  template <int R>
  static constexpr uint32_t kTileBytes = 2 * R * 128;
  static_assert(kThreads == 3 * 128 && BK == 128 && BQ == 64 && DqRows == 128 && DqKeys == 128);
  static_assert(attn::kWgDkdvSmemBytes == 1024 + 2 * kTileBytes<BK> +
                                              kStages * (2 * kTileBytes<BQ> + 2 * BQ * 4) +
                                              8 * (1 + 2 * kStages));
  static_assert(attn::kWgDqSmemBytes == 1024 + 2 * kTileBytes<DqRows> +
                                            kDqStages * 2 * kTileBytes<DqKeys> +
                                            8 * (1 + 2 * kDqStages));
  // The GEMM engine's split (ptxas -v: no spills; 24 / 240 spilled 8-12 bytes in the producer,
  // while the consumers fit in 224: dk, dv and the two score tiles).
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 256 <= 168 * kThreads);
};

// wg_load_tile for a tile of R rows: rows [0, rows) and columns [0, cols) of g (row stride
// `stride`) into the two swizzled halves at dst, zeros elsewhere; the producer's 128 threads.
template <int R>
JA_DEVICE void wgb_load_tile(uint32_t dst, const uint16_t* g, long long stride, int rows,
                             int cols) {
  const int t = thread_id() % 128, c = t % 16, r0 = t / 16;
  const bool col_ok = c * 8 < cols;
  const uint16_t* src = g + r0 * stride + c * 8;
  const long long step = 8 * stride;
  uint32_t d = dst + (c / 8) * AttnBwdWg::kHalfBytes<R> + r0 * 128 + ((c % 8) ^ r0) * 16;
  JA_UNROLL
  for (int p = 0; p < R / 8; ++p) {
    const bool ok = col_ok && r0 + 8 * p < rows;
    cp_async_16(d, ok ? src : g, ok);
    src += step;
    d += 1024;
  }
}

// 4 bytes global -> shared, asynchronously (zeros when !valid): lse and delta rows, whose offsets
// are not 16-byte aligned.
JA_DEVICE void cp_async_4(uint32_t smem_addr, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_addr), "l"(src),
               "r"(valid ? 4 : 0)
               : "memory");
}

// Stores rows [0, 64) of a consumer's 64 x 128 accumulator (times f) at g (row r_lane - r_base:
// this thread's rows r_lane, r_lane + 8), rows below `rows` and columns below `cols`.
template <typename E>
JA_DEVICE void wgb_store(const float (&acc)[64], float f, uint16_t* g, long long stride, int r_lane,
                         int rows, int cols, int c_lane) {
  JA_UNROLL
  for (int sl = 0; sl < 2; ++sl) {
    const int r = r_lane + 8 * sl;
    if (r >= rows) continue;
    uint16_t* const row = g + r * stride;
    JA_UNROLL
    for (int j = 0; j < 16; ++j) {
      const int c = 8 * j + c_lane;
      if (c < cols) {
        *reinterpret_cast<uint32_t*>(row + c) =
            pack2<E>(acc[4 * j + 2 * sl] * f, acc[4 * j + 2 * sl + 1] * f);
      }
    }
  }
}

// Zeros rows [0, rows) x columns [0, cols) at g: what a block whose rows or keys see nothing owes.
JA_DEVICE void wgb_zero(uint16_t* g, long long stride, int rows, int cols) {
  for (int i = thread_id(); i < rows * cols; i += AttnBwdWg::kThreads) {
    g[(i / cols) * stride + i % cols] = 0;
  }
}

template <typename E>
JA_DEVICE void attn_bwd_dkdv_wg(const BwdParams& p) {
  using W = AttnBwdWg;
  constexpr int BK = W::BK, BQ = W::BQ, S = W::kStages;
  constexpr uint32_t kKv = W::kTileBytes<BK>, kKvHalf = W::kHalfBytes<BK>;
  constexpr uint32_t kRow = W::kTileBytes<BQ>, kRowHalf = W::kHalfBytes<BQ>;
  const Seq s = sequence(p, block_id_z());
  const int n0 = block_id() * BK;
  if (n0 >= s.k_len) return;
  const int b = block_id_z(), hk = block_id_y();
  const int left = p.window_left, right = p.window_right;
  const int group = p.heads_q / p.heads_k;
  const Range rows = queries_seeing(n0, imin(n0 + BK, s.k_len), s, left, right);
  const int m_first = rows.hi > rows.lo ? rows.lo / BQ * BQ : 0;
  const int ntq = rows.hi > rows.lo ? (rows.hi - m_first + BQ - 1) / BQ : 0;
  const int total = group * ntq;  // (query head, query tile) steps
  uint16_t* const dk = static_cast<uint16_t*>(p.dk) + b * p.dk_batch_stride +
                       (s.k_start + n0) * p.dk_seq_stride + hk * p.dk_head_stride;
  uint16_t* const dv = static_cast<uint16_t*>(p.dv) + b * p.dv_batch_stride +
                       (s.k_start + n0) * p.dv_seq_stride + hk * p.dv_head_stride;
  if (total == 0) {  // no query sees these keys
    wgb_zero(dk, p.dk_seq_stride, imin(BK, s.k_len - n0), p.head_dim);
    wgb_zero(dv, p.dv_seq_stride, imin(BK, s.k_len - n0), p.head_dim_v);
    return;
  }

  // Shared memory: K, V, then per stage Q and dO, then per stage lse and delta (BQ floats each),
  // then the barriers.
  unsigned char* smem_raw = dynamic_shared();
  if (dynamic_shared_bytes() < attn::kWgDkdvSmemBytes) __trap();  // a plan that gave too little
  const uint32_t raw = shared_address(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the swizzle's atoms are 1024-byte aligned
  const uint32_t sk = base, sv = base + kKv, stages = base + 2 * kKv;
  const uint32_t rows_s = stages + S * 2 * kRow;  // lse of stage st at rows_s + st * 8 BQ
  const float* const rows_p = reinterpret_cast<const float*>(smem_raw + (rows_s - raw));
  uint64_t* const bar_kv = reinterpret_cast<uint64_t*>(smem_raw + (rows_s - raw) + S * 8 * BQ);
  uint64_t* const full = bar_kv + 1;
  uint64_t* const empty = full + S;
  if (thread_id() == 0) {
    sm90::mbarrier_init(bar_kv, 128);  // every producer thread, once its copies landed
    for (int i = 0; i < S; ++i) {
      sm90::mbarrier_init(&full[i], 128);
      sm90::mbarrier_init(&empty[i], 8);  // lane 0 of each consumer warp
    }
  }
  barrier();

  if (thread_id() < 128) {  // the producer
    sm90::registers_release<W::kProducerRegs>();
    wgb_load_tile<BK>(sk,
                      static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                          (s.k_start + n0) * p.k_seq_stride + hk * p.k_head_stride,
                      p.k_seq_stride, s.k_len - n0, p.head_dim);
    wgb_load_tile<BK>(sv,
                      static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                          (s.k_start + n0) * p.v_seq_stride + hk * p.v_head_stride,
                      p.v_seq_stride, s.k_len - n0, p.head_dim_v);
    sm90::mbarrier_arrive_on_copies(bar_kv);
    const uint16_t* const qg =
        static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride + s.q_start * p.q_seq_stride;
    const uint16_t* const og =
        static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride + s.q_start * p.do_seq_stride;
    // Threads 0-63 copy the tile's lse, 64-127 its delta (0 past the sequence: those rows of Q
    // and dO are zeros, so they add nothing).
    static_assert(2 * BQ == 128);
    const int t = thread_id(), r = t % BQ;
    const float* const lg = (t < BQ ? p.lse : p.delta) + b * p.lse_batch_stride + s.q_start + r;
    for (int step = 0; step < total; ++step) {
      const int st = step % S;
      const int hq = hk * group + step / ntq, m = m_first + (step % ntq) * BQ;
      if (step >= S) sm90::mbarrier_wait(&empty[st], ((step / S) - 1) & 1);
      const uint32_t sq = stages + st * 2 * kRow;
      wgb_load_tile<BQ>(sq, qg + m * p.q_seq_stride + hq * p.q_head_stride, p.q_seq_stride,
                        s.q_len - m, p.head_dim);
      wgb_load_tile<BQ>(sq + kRow, og + m * p.do_seq_stride + hq * p.do_head_stride,
                        p.do_seq_stride, s.q_len - m, p.head_dim_v);
      const bool ok = m + r < s.q_len;
      cp_async_4(rows_s + st * 8 * BQ + 4 * t, lg + hq * p.lse_head_stride + m, ok);
      sm90::mbarrier_arrive_on_copies(&full[st]);
    }
    cp_async_wait<0>();
    return;
  }
  sm90::registers_claim<W::kConsumerRegs>();

  const int tw = thread_id() % 128, warp = tw / kWarp, lane = tw % kWarp;
  const int key0 = 64 * (thread_id() / 128 - 1);        // this consumer's first key in the block
  const int k_lane = n0 + key0 + 16 * warp + lane / 4;  // key of slot 0 (slot 1: + 8)
  const int c_lane = 2 * (lane % 4);  // query column of element 0 in each 8-column block
  const float scale2 = p.scale * kLog2e;
  const bool arrives = lane == 0;

  float dka[64], dva[64];
  JA_UNROLL
  for (int i = 0; i < 64; ++i) dka[i] = dva[i] = 0.f;
  float pt[32], dp[32];  // S^T then P^T; dP^T then dS^T (64 keys x 64 queries)
  uint32_t pf[BQ / 16][4], df[BQ / 16][4];
  sm90::mbarrier_wait(bar_kv, 0);
  const uint64_t desc_k = sm90::sw128_desc(sk + key0 * 128);
  const uint64_t desc_v = sm90::sw128_desc(sv + key0 * 128);

  for (int step = 0; step < total; ++step) {
    const int st = step % S;
    const int m = m_first + (step % ntq) * BQ;
    const uint32_t sq = stages + st * 2 * kRow, so = sq + kRow;
    const float* const lse_t = rows_p + st * 2 * BQ;
    const float* const dlt_t = lse_t + BQ;
    sm90::mbarrier_wait(&full[st], (step / S) & 1);
    sm90::fence_proxy_async();
    const uint64_t desc_q = sm90::sw128_desc(sq), desc_o = sm90::sw128_desc(so);
    sm90::wgmma_fence();
    JA_UNROLL
    for (int kk = 0; kk < W::D / 16; ++kk) {
      const uint64_t ok = (kk / 4) * (kKvHalf >> 4) + (kk % 4) * sm90::kSw128KStep;
      const uint64_t oq = (kk / 4) * (kRowHalf >> 4) + (kk % 4) * sm90::kSw128KStep;
      sm90::wgmma_m64n64k16_ss<E>(pt, desc_k + ok, desc_q + oq, kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();
    JA_UNROLL
    for (int kk = 0; kk < W::D / 16; ++kk) {
      const uint64_t ok = (kk / 4) * (kKvHalf >> 4) + (kk % 4) * sm90::kSw128KStep;
      const uint64_t oq = (kk / 4) * (kRowHalf >> 4) + (kk % 4) * sm90::kSw128KStep;
      sm90::wgmma_m64n64k16_ss<E>(dp, desc_v + ok, desc_o + oq, kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();

    // P^T = exp(S^T scale - lse) while dP^T is in flight; 0 where masked (tiles across a mask
    // edge or the sequences' ends test each element). Element i: key k_lane + 8 ((i / 2) % 2),
    // query m + 8 (i / 4) + c_lane + i % 2.
    sm90::wgmma_wait<1>();
    sm90::hold_registers(pt);
    const bool check = !tile_unmasked(m, m + BQ, n0 + key0, n0 + key0 + 64, s, left, right);
    JA_UNROLL
    for (int j = 0; j < BQ / 8; ++j) {
      const float2 l = *reinterpret_cast<const float2*>(lse_t + 8 * j + c_lane);
      JA_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int i = 4 * j + e;
        pt[i] = fast_exp2(pt[i] * scale2 - (e % 2 ? l.y : l.x) * kLog2e);
        if (check && !visible(m + 8 * j + c_lane + e % 2, k_lane + 8 * (e / 2), s, left, right)) {
          pt[i] = 0.f;
        }
      }
    }
    sm90::wgmma_wait<0>();
    sm90::hold_registers(dp);
    JA_UNROLL
    for (int j = 0; j < BQ / 8; ++j) {
      const float2 dl = *reinterpret_cast<const float2*>(dlt_t + 8 * j + c_lane);
      JA_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int i = 4 * j + e;
        dp[i] = pt[i] * (dp[i] - (e % 2 ? dl.y : dl.x));  // dS^T
      }
    }
    JA_UNROLL
    for (int kk = 0; kk < BQ / 16; ++kk) {
      JA_UNROLL
      for (int r = 0; r < 4; ++r) {
        pf[kk][r] = pack2<E>(pt[8 * kk + 2 * r], pt[8 * kk + 2 * r + 1]);
        df[kk][r] = pack2<E>(dp[8 * kk + 2 * r], dp[8 * kk + 2 * r + 1]);
      }
    }
    // dV += P^T dO, dK += dS^T Q: dO and Q [query][d] read as B[d][query] (MN-major).
    const uint64_t desc_ot = sm90::sw128_mn_desc(so, kRowHalf);
    const uint64_t desc_qt = sm90::sw128_mn_desc(sq, kRowHalf);
    sm90::wgmma_fence();
    sm90::hold_registers(dva);
    sm90::hold_registers(dka);
    JA_UNROLL
    for (int kk = 0; kk < BQ / 16; ++kk) {
      sm90::wgmma_m64n128k16_rs_tb<E>(dva, pf[kk], desc_ot + kk * sm90::kSw128MnKStep);
    }
    JA_UNROLL
    for (int kk = 0; kk < BQ / 16; ++kk) {
      sm90::wgmma_m64n128k16_rs_tb<E>(dka, df[kk], desc_qt + kk * sm90::kSw128MnKStep);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();  // the stage is free, dk and dv are ours again
    sm90::hold_registers(dva);
    sm90::hold_registers(dka);
    JA_UNROLL
    for (int kk = 0; kk < BQ / 16; ++kk) {
      sm90::hold_registers(pf[kk]);
      sm90::hold_registers(df[kk]);
    }
    if (arrives) sm90::mbarrier_arrive(&empty[st]);
  }

  const int kr = k_lane - n0;  // this thread's first key row in the block
  wgb_store<E>(dka, p.scale, dk, p.dk_seq_stride, kr, s.k_len - n0, p.head_dim, c_lane);
  wgb_store<E>(dva, 1.f, dv, p.dv_seq_stride, kr, s.k_len - n0, p.head_dim_v, c_lane);
}

template <typename E>
JA_DEVICE void attn_bwd_dq_wg(const BwdParams& p) {
  using W = AttnBwdWg;
  constexpr int BM = W::DqRows, BN = W::DqKeys, S = W::kDqStages;
  constexpr uint32_t kTile = W::kTileBytes<128>, kHalf = W::kHalfBytes<128>;
  const Seq s = sequence(p, block_id_z());
  // Last tile first (batch mode: seqlen_q is the sequence's length).
  const int m0 = ((p.seqlen_q + BM - 1) / BM - 1 - block_id()) * BM;
  if (m0 < 0 || m0 >= s.q_len) return;
  const int b = block_id_z(), h = block_id_y();
  const int hk = h / (p.heads_q / p.heads_k);
  const int left = p.window_left, right = p.window_right;
  const Range keys = keys_seen(m0, imin(m0 + BM, s.q_len), s, left, right);
  const int n_first = keys.hi > keys.lo ? keys.lo / BN * BN : 0;
  const int ntiles = keys.hi > keys.lo ? (keys.hi - n_first + BN - 1) / BN : 0;
  uint16_t* const dq = static_cast<uint16_t*>(p.dq) + b * p.dq_batch_stride +
                       (s.q_start + m0) * p.dq_seq_stride + h * p.dq_head_stride;
  if (ntiles == 0) {  // no row of the block sees a key (causal sq > sk)
    wgb_zero(dq, p.dq_seq_stride, imin(BM, s.q_len - m0), p.head_dim);
    return;
  }

  unsigned char* smem_raw = dynamic_shared();
  if (dynamic_shared_bytes() < attn::kWgDqSmemBytes) __trap();
  const uint32_t raw = shared_address(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t sq = base, so = base + kTile, stages = base + 2 * kTile;
  uint64_t* const bar_q =
      reinterpret_cast<uint64_t*>(smem_raw + (base - raw) + (2 + 2 * S) * kTile);
  uint64_t* const full = bar_q + 1;
  uint64_t* const empty = full + S;
  if (thread_id() == 0) {
    sm90::mbarrier_init(bar_q, 128);
    for (int i = 0; i < S; ++i) {
      sm90::mbarrier_init(&full[i], 128);
      sm90::mbarrier_init(&empty[i], 8);
    }
  }
  barrier();

  if (thread_id() < 128) {  // the producer
    sm90::registers_release<W::kProducerRegs>();
    wgb_load_tile<BM>(sq,
                      static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride +
                          (s.q_start + m0) * p.q_seq_stride + h * p.q_head_stride,
                      p.q_seq_stride, s.q_len - m0, p.head_dim);
    wgb_load_tile<BM>(so,
                      static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride +
                          (s.q_start + m0) * p.do_seq_stride + h * p.do_head_stride,
                      p.do_seq_stride, s.q_len - m0, p.head_dim_v);
    sm90::mbarrier_arrive_on_copies(bar_q);
    const uint16_t* const kg = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                               s.k_start * p.k_seq_stride + hk * p.k_head_stride;
    const uint16_t* const vg = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                               s.k_start * p.v_seq_stride + hk * p.v_head_stride;
    for (int t = 0; t < ntiles; ++t) {
      const int st = t % S, n = n_first + t * BN;
      if (t >= S) sm90::mbarrier_wait(&empty[st], ((t / S) - 1) & 1);
      const uint32_t sk = stages + st * 2 * kTile;
      wgb_load_tile<BN>(sk, kg + n * p.k_seq_stride, p.k_seq_stride, s.k_len - n, p.head_dim);
      wgb_load_tile<BN>(sk + kTile, vg + n * p.v_seq_stride, p.v_seq_stride, s.k_len - n,
                        p.head_dim_v);
      sm90::mbarrier_arrive_on_copies(&full[st]);
    }
    cp_async_wait<0>();
    return;
  }
  sm90::registers_claim<W::kConsumerRegs>();

  const int tw = thread_id() % 128, warp = tw / kWarp, lane = tw % kWarp;
  const int row0 = 64 * (thread_id() / 128 - 1);        // this consumer's first row in the block
  const int r_lane = m0 + row0 + 16 * warp + lane / 4;  // row of slot 0 (slot 1: + 8)
  const int c_lane = 2 * (lane % 4);
  const float scale2 = p.scale * kLog2e;
  const bool arrives = lane == 0;
  // lse (log2 units; +inf past the sequence: P = 0 there) and delta of this thread's two rows.
  float lse2[2], dlt[2];
  const long long lse_off = b * p.lse_batch_stride + h * p.lse_head_stride + s.q_start;
  JA_UNROLL
  for (int sl = 0; sl < 2; ++sl) {
    const int qi = r_lane + 8 * sl;
    const bool ok = qi < s.q_len;
    lse2[sl] = ok ? p.lse[lse_off + qi] * kLog2e : inf();
    dlt[sl] = ok ? p.delta[lse_off + qi] : 0.f;
  }

  float dqa[64], sc[64], dp[64];
  JA_UNROLL
  for (int i = 0; i < 64; ++i) dqa[i] = 0.f;
  uint32_t df[BN / 16][4];
  sm90::mbarrier_wait(bar_q, 0);
  const uint64_t desc_q = sm90::sw128_desc(sq + row0 * 128);
  const uint64_t desc_o = sm90::sw128_desc(so + row0 * 128);

  for (int t = 0; t < ntiles; ++t) {
    const int st = t % S, n = n_first + t * BN;
    const uint32_t sk = stages + st * 2 * kTile;
    sm90::mbarrier_wait(&full[st], (t / S) & 1);
    sm90::fence_proxy_async();
    const uint64_t desc_k = sm90::sw128_desc(sk), desc_v = sm90::sw128_desc(sk + kTile);
    sm90::wgmma_fence();
    JA_UNROLL
    for (int kk = 0; kk < W::D / 16; ++kk) {
      const uint64_t off = (kk / 4) * (kHalf >> 4) + (kk % 4) * sm90::kSw128KStep;
      sm90::wgmma_m64n128k16_ss<E>(sc, desc_q + off, desc_k + off, kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();
    JA_UNROLL
    for (int kk = 0; kk < W::D / 16; ++kk) {
      const uint64_t off = (kk / 4) * (kHalf >> 4) + (kk % 4) * sm90::kSw128KStep;
      sm90::wgmma_m64n128k16_ss<E>(dp, desc_o + off, desc_v + off, kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();

    // P = exp(S scale - lse) while dP is in flight. Element i: row r_lane + 8 ((i / 2) % 2),
    // key n + 8 (i / 4) + c_lane + i % 2.
    sm90::wgmma_wait<1>();
    sm90::hold_registers(sc);
    const bool check = !tile_unmasked(m0 + row0, m0 + row0 + 64, n, n + BN, s, left, right);
    JA_UNROLL
    for (int i = 0; i < 64; ++i) {
      const int sl = (i / 2) % 2;
      sc[i] = fast_exp2(sc[i] * scale2 - lse2[sl]);
      if (check && !visible(r_lane + 8 * sl, n + 8 * (i / 4) + c_lane + i % 2, s, left, right)) {
        sc[i] = 0.f;
      }
    }
    sm90::wgmma_wait<0>();
    sm90::hold_registers(dp);
    JA_UNROLL
    for (int kk = 0; kk < BN / 16; ++kk) {
      JA_UNROLL
      for (int r = 0; r < 4; ++r) {
        const int i = 8 * kk + 2 * r, sl = r % 2;  // (i / 2) % 2 == r % 2
        df[kk][r] = pack2<E>(sc[i] * (dp[i] - dlt[sl]), sc[i + 1] * (dp[i + 1] - dlt[sl]));
      }
    }
    // dQ += dS K: K [key][d] read as B[d][key] (MN-major).
    const uint64_t desc_kt = sm90::sw128_mn_desc(sk, kHalf);
    sm90::wgmma_fence();
    sm90::hold_registers(dqa);
    JA_UNROLL
    for (int kk = 0; kk < BN / 16; ++kk) {
      sm90::wgmma_m64n128k16_rs_tb<E>(dqa, df[kk], desc_kt + kk * sm90::kSw128MnKStep);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::hold_registers(dqa);
    JA_UNROLL
    for (int kk = 0; kk < BN / 16; ++kk) sm90::hold_registers(df[kk]);
    if (arrives) sm90::mbarrier_arrive(&empty[st]);
  }
  wgb_store<E>(dqa, p.scale, dq, p.dq_seq_stride, r_lane - m0, s.q_len - m0, p.head_dim, c_lane);
}
#endif  // __CUDACC__

}  // namespace ja

// ---- the kernels: parameter lists from the header's X-macros ------------------------------------
#define JA_ATTN_PARAM_F(T, n) T n
#define JA_ATTN_PARAM_X(T, n) , T n
#define JA_ATTN_NAME_F(T, n) n
#define JA_ATTN_NAME_X(T, n) , n
#define JA_ATTN_FWD_PARAMS JAX_AITER_ATTN_FWD_ARGS(JA_ATTN_PARAM_F, JA_ATTN_PARAM_X)
#define JA_ATTN_FWD_NAMES JAX_AITER_ATTN_FWD_ARGS(JA_ATTN_NAME_F, JA_ATTN_NAME_X)
#define JA_ATTN_BWD_PARAMS JAX_AITER_ATTN_BWD_ARGS(JA_ATTN_PARAM_F, JA_ATTN_PARAM_X)
#define JA_ATTN_BWD_NAMES JAX_AITER_ATTN_BWD_ARGS(JA_ATTN_NAME_F, JA_ATTN_NAME_X)

// Every kernel waits for the stream's previous grids before touching memory (the CUDA backend
// launches it as a programmatic dependent; tests/cpp/test_kernel_loads.cpp checks the PTX).
#define JA_ATTN_BUCKET_KERNELS(tag, Elem, D)                                                 \
  JA_KERNEL_BOUNDED_RESIDENT(ja::AttnConfig<D>::kThreads, ja::AttnConfig<D>::kFwdMinBlocks)  \
  void jax_aiter_attn_fwd_##tag##_d##D(JA_ATTN_FWD_PARAMS) {                                 \
    ja::wait_for_prior_grids();                                                              \
    ja::allow_dependent_grids();                                                             \
    ja::attn_fwd<ja::Elem, D>(ja::FwdParams{JA_ATTN_FWD_NAMES});                             \
  }                                                                                          \
  JA_KERNEL_BOUNDED_RESIDENT(ja::AttnConfig<D>::kThreads, ja::AttnConfig<D>::kDkdvMinBlocks) \
  void jax_aiter_attn_bwd_dkdv_##tag##_d##D(JA_ATTN_BWD_PARAMS) {                            \
    ja::wait_for_prior_grids();                                                              \
    ja::allow_dependent_grids();                                                             \
    ja::attn_bwd_dkdv<ja::Elem, D>(ja::BwdParams{JA_ATTN_BWD_NAMES});                        \
  }                                                                                          \
  JA_KERNEL_BOUNDED_RESIDENT(ja::AttnConfig<D>::kThreads, ja::AttnConfig<D>::kDqMinBlocks)   \
  void jax_aiter_attn_bwd_dq_##tag##_d##D(JA_ATTN_BWD_PARAMS) {                              \
    ja::wait_for_prior_grids();                                                              \
    ja::allow_dependent_grids();                                                             \
    ja::attn_bwd_dq<ja::Elem, D>(ja::BwdParams{JA_ATTN_BWD_NAMES});                          \
  }

#define JA_ATTN_DTYPE_KERNELS(tag, Elem)                                                      \
  JA_KERNEL_BOUNDED(jax_aiter::kernels::attention::kPreThreads)                               \
  void jax_aiter_attn_bwd_pre_##tag(JA_ATTN_BWD_PARAMS) {                                     \
    ja::wait_for_prior_grids();                                                               \
    ja::allow_dependent_grids();                                                              \
    ja::attn_bwd_pre<ja::Elem>(ja::BwdParams{JA_ATTN_BWD_NAMES});                             \
  }                                                                                           \
  JA_KERNEL_BOUNDED(jax_aiter::kernels::attention::kReduceThreads)                            \
  void jax_aiter_attn_gqa_reduce_##tag(                                                       \
      JAX_AITER_ATTN_GQA_REDUCE_ARGS(JA_ATTN_PARAM_F, JA_ATTN_PARAM_X)) {                     \
    ja::wait_for_prior_grids();                                                               \
    ja::allow_dependent_grids();                                                              \
    ja::attn_gqa_reduce<ja::Elem>(                                                            \
        ja::GqaReduceParams{JAX_AITER_ATTN_GQA_REDUCE_ARGS(JA_ATTN_NAME_F, JA_ATTN_NAME_X)}); \
  }

// The fp8 forward: products in f16 (exact e4m3 -> f16, see attn_fwd_tile), bf16 out.
#define JA_ATTN_FP8_KERNEL(D)                                                               \
  JA_KERNEL_BOUNDED_RESIDENT(ja::AttnConfig<D>::kThreads, ja::AttnConfig<D>::kFwdMinBlocks) \
  void jax_aiter_attn_fwd_fp8_d##D(JA_ATTN_FWD_PARAMS) {                                    \
    ja::wait_for_prior_grids();                                                             \
    ja::allow_dependent_grids();                                                            \
    ja::attn_fwd<ja::F16, D, true>(ja::FwdParams{JA_ATTN_FWD_NAMES});                       \
  }

JAX_AITER_ATTN_KERNELS(JA_ATTN_BUCKET_KERNELS)
JAX_AITER_ATTN_DTYPES(JA_ATTN_DTYPE_KERNELS)
JAX_AITER_ATTN_FP8_KERNELS(JA_ATTN_FP8_KERNEL)

// sm_90's wgmma forwards (attn_fwd_wg): the plain one and the features variant (_feat_); on AMD
// the symbols exist for the shared kernel table and trap: no plan for a gfx arch takes them.
#define JA_ATTN_WG_KERNEL(tag, Elem)                                       \
  JA_KERNEL_BOUNDED_RESIDENT(jax_aiter::kernels::attention::kWgThreads, 1) \
  void jax_aiter_attn_fwd_wg_##tag##_d128(JA_ATTN_FWD_PARAMS) {            \
    ja::wait_for_prior_grids();                                            \
    ja::allow_dependent_grids();                                           \
    JA_ATTN_WG_BODY(Elem, false)                                           \
  }                                                                        \
  JA_KERNEL_BOUNDED_RESIDENT(jax_aiter::kernels::attention::kWgThreads, 1) \
  void jax_aiter_attn_fwd_wg_feat_##tag##_d128(JA_ATTN_FWD_PARAMS) {       \
    ja::wait_for_prior_grids();                                            \
    ja::allow_dependent_grids();                                           \
    JA_ATTN_WG_BODY(Elem, true)                                            \
  }
#if defined(__CUDACC__)
#define JA_ATTN_WG_BODY(Elem, kX) ja::attn_fwd_wg<ja::Elem, kX>(ja::FwdParams{JA_ATTN_FWD_NAMES});
#else  // the parameters read once (no unused ones), then a trap
#define JA_ATTN_WG_BODY(Elem, kX)         \
  (void)ja::FwdParams{JA_ATTN_FWD_NAMES}; \
  __builtin_trap();
#endif
JAX_AITER_ATTN_WG_KERNELS(JA_ATTN_WG_KERNEL)

JA_KERNEL_BOUNDED(jax_aiter::kernels::attention::kMaskThreads)
void jax_aiter_attn_dropout_mask(JAX_AITER_ATTN_DROPOUT_MASK_ARGS(JA_ATTN_PARAM_F,
                                                                  JA_ATTN_PARAM_X)) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
  ja::attn_dropout_mask(
      ja::DropoutMaskParams{JAX_AITER_ATTN_DROPOUT_MASK_ARGS(JA_ATTN_NAME_F, JA_ATTN_NAME_X)});
}

// sm_90's wgmma backward passes (attn_bwd_dkdv_wg, attn_bwd_dq_wg); on AMD, as the wgmma forward's,
// the symbols exist and trap.
#define JA_ATTN_WG_BWD_KERNEL(tag, Elem)                                   \
  JA_KERNEL_BOUNDED_RESIDENT(jax_aiter::kernels::attention::kWgThreads, 1) \
  void jax_aiter_attn_bwd_dkdv_wg_##tag##_d128(JA_ATTN_BWD_PARAMS) {       \
    ja::wait_for_prior_grids();                                            \
    ja::allow_dependent_grids();                                           \
    JA_ATTN_WG_BWD_BODY(attn_bwd_dkdv_wg, Elem)                            \
  }                                                                        \
  JA_KERNEL_BOUNDED_RESIDENT(jax_aiter::kernels::attention::kWgThreads, 1) \
  void jax_aiter_attn_bwd_dq_wg_##tag##_d128(JA_ATTN_BWD_PARAMS) {         \
    ja::wait_for_prior_grids();                                            \
    ja::allow_dependent_grids();                                           \
    JA_ATTN_WG_BWD_BODY(attn_bwd_dq_wg, Elem)                              \
  }
#if defined(__CUDACC__)
#define JA_ATTN_WG_BWD_BODY(fn, Elem) ja::fn<ja::Elem>(ja::BwdParams{JA_ATTN_BWD_NAMES});
#else
#define JA_ATTN_WG_BWD_BODY(fn, Elem)     \
  (void)ja::BwdParams{JA_ATTN_BWD_NAMES}; \
  __builtin_trap();
#endif
JAX_AITER_ATTN_WG_BWD_KERNELS(JA_ATTN_WG_BWD_KERNEL)
