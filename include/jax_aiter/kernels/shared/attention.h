// Facts of our portable attention kernels that the kernel source (kernels_co/attention.kernel.cpp),
// the host twins (host_twins/attention.hpp) and the planner (ops/attention_portable.hpp) all read:
// the argument lists (one X-macro each: the host struct, the kernel parameters and the metadata
// field list are generated from it, so they cannot drift), the kernels built, and the math that
// must be bit-for-bit the same everywhere (which keys a query sees, ALiBi, the dropout RNG).
// Plain C++ with no includes: nvcc and clang-22 (-nogpuinc) compile it into the kernels too.
//
// Sharded calls. A call may be one shard of a larger one, split along batch, query heads or query
// rows (context parallelism: q's rows split, k and v whole along the sequence); every device runs
// the same program, so where the shard sits is device data, `shard` = int32[4] {b0, h0, r0,
// sq_total} (null: unsharded), read by the kernels themselves. This call's batch b, query head h
// and query row i are the whole call's b0 + b, h0 + h and r0 + i, and sq_total is the whole
// call's number of query rows (0: this call's own sq). They enter the math in two places, so a
// shard computes exactly the whole call's values on its slice:
//   - the dropout counter uses the global (b0 + b, h0 + h, r0 + i) (attn_dropout_keep);
//   - masks and ALiBi are aligned to the whole call's bottom-right corner: query row i's diagonal
//     (the key it sees straight ahead) is key i + off with off = sk - sq_total + r0
//     (attn_diagonal_offset; unsharded, sk - sq). Keys are never split: sk is the whole sequence.
// Bias and ALiBi slopes arrive sliced by the caller (read at the local b, h, i as ever). A row
// shard's dk and dv are partial sums over its queries (the caller sums them over the shards).
// Varlen mode (cu_seqlens given) never splits the sequence dim: r0 and sq_total must be 0 (b0
// counts sequences, h0 heads); nobody checks this (the values are device data).
#pragma once

#if defined(__CUDACC__)
#define JAX_AITER_ATTN_HD __host__ __device__ inline
#elif defined(__HIP__)
#define JAX_AITER_ATTN_HD __attribute__((host, device)) inline
#else
#define JAX_AITER_ATTN_HD inline
#endif

// ---- argument lists -----------------------------------------------------------------------------
// X(type, name) for every parameter but the first, F(type, name) for the first (a kernel parameter
// list needs commas between, a struct semicolons after). Strides are in elements. Layouts:
//   batch mode:  q [b, sq, hq, d], k [b, sk, hk, d], v [b, sk, hk, dv], out [b, sq, hq, dv],
//                lse [b, hq, sq] float32;
//   varlen mode: (cu_seqlens_q/k non-null) q [total_q, hq, d], ..., lse [hq, total_q]; the batch
//                strides are 0 and sequence s starts at row cu_seqlens[s] of its tensor.
// seqlen_q / seqlen_k are the lengths in batch mode and the maxima (max_seqlen_*) in varlen mode,
// where they only size the grid: a block owns the tiles x, x + G, x + 2 G, ... of its sequence up
// to the sequence's end (G the grid's width by the formulas below, from seqlen_q or seqlen_k), so
// a sequence longer than its maximum (offsets are device data, never checked by the host) is
// still computed whole, as if the maximum were right.
// total_q / total_k are the rows of q / k: a varlen kernel clamps every cu_seqlens entry into
// [0, total] (and a sequence's end to at least its start), so bad offsets read and write nothing
// out of bounds (the values of rows no sequence covers, or of overlapping sequences, are then
// unspecified).
// window_left / window_right: the keys a query sees (see attn_visible), -1 unbounded; causal is
// (-1, 0). bias: [.., .., sq, sk] with broadcast dimensions at stride 0, of bias_dtype (kAttnF32,
// kAttnBF16, kAttnF16), or null. In varlen mode, where the ops layer takes no bias, a bias needs
// every sequence within seqlen_q x seqlen_k (the kernels read it unchecked: a guard in their score
// path cost registers; the host twins read 0 past it), and dbias is written only within them.
// alibi_slopes: float32 [hq] (alibi_batch_stride 0) or [b, hq] (stride hq), or
// null. rng_key: two u32 words (see attn_dropout_keep), read only when dropout_threshold > 0; kept
// values are scaled by dropout_scale = 1 / (1 - p). shard: int32[4] {b0, h0, r0, sq_total} (see
// "Sharded calls" above), or null.
// Forward only: in_dtype is q's, k's and v's dtype code (kAttnBF16 / kAttnF16 for the 16-bit
// kernels, which take it as given; kAttnE4M3FN / kAttnE4M3FNUZ for the fp8 ones, whose out is
// bf16). The fp8 kernels read q_descale, k_descale, v_descale (float32, one value each; null for
// the 16-bit ones) and compute attention of the dequantised inputs: scores scale * qd * kd q k^T,
// out v_descale * softmax v. pad: unused (keeps the struct free of padding).
// clang-format off
#define JAX_AITER_ATTN_FWD_ARGS(F, X)                                                            \
  F(const void*, q) X(const void*, k) X(const void*, v) X(const void*, bias)                     \
  X(const float*, alibi_slopes) X(const int*, cu_seqlens_q) X(const int*, cu_seqlens_k)          \
  X(const unsigned*, rng_key) X(const int*, shard) X(void*, out) X(float*, lse)                   \
  X(const float*, q_descale) X(const float*, k_descale) X(const float*, v_descale)                \
  X(long long, q_batch_stride) X(long long, q_seq_stride) X(long long, q_head_stride)             \
  X(long long, k_batch_stride) X(long long, k_seq_stride) X(long long, k_head_stride)             \
  X(long long, v_batch_stride) X(long long, v_seq_stride) X(long long, v_head_stride)             \
  X(long long, o_batch_stride) X(long long, o_seq_stride) X(long long, o_head_stride)             \
  X(long long, bias_batch_stride) X(long long, bias_head_stride) X(long long, bias_row_stride)    \
  X(long long, bias_col_stride) X(long long, lse_batch_stride) X(long long, lse_head_stride)      \
  X(int, batch) X(int, seqlen_q) X(int, seqlen_k) X(int, total_q) X(int, total_k)           \
  X(int, heads_q) X(int, heads_k)                                                                 \
  X(int, head_dim) X(int, head_dim_v) X(int, window_left) X(int, window_right)                    \
  X(int, alibi_batch_stride) X(unsigned, dropout_threshold) X(float, scale)                       \
  X(float, dropout_scale) X(int, bias_dtype) X(int, in_dtype) X(int, pad)

// The backward's three kernels (pre: delta = rowsum(dout * out); dkdv; dq) read one list.
// delta has lse's layout. dbias (float32, or null): the gradient of the scores before the
// broadcast, [b, hq, sq, sk] at dbias_*_stride; the caller sums it down to the bias's shape.
// dk / dv of a key head sum over the heads_q / heads_k query heads that read it.
#define JAX_AITER_ATTN_BWD_ARGS(F, X)                                                            \
  F(const void*, q) X(const void*, k) X(const void*, v) X(const void*, bias)                     \
  X(const float*, alibi_slopes) X(const int*, cu_seqlens_q) X(const int*, cu_seqlens_k)          \
  X(const unsigned*, rng_key) X(const int*, shard) X(const void*, out) X(const void*, dout)      \
  X(const float*, lse) X(float*, delta) X(void*, dq) X(void*, dk) X(void*, dv) X(float*, dbias)   \
  X(long long, q_batch_stride) X(long long, q_seq_stride) X(long long, q_head_stride)             \
  X(long long, k_batch_stride) X(long long, k_seq_stride) X(long long, k_head_stride)             \
  X(long long, v_batch_stride) X(long long, v_seq_stride) X(long long, v_head_stride)             \
  X(long long, o_batch_stride) X(long long, o_seq_stride) X(long long, o_head_stride)             \
  X(long long, do_batch_stride) X(long long, do_seq_stride) X(long long, do_head_stride)          \
  X(long long, dq_batch_stride) X(long long, dq_seq_stride) X(long long, dq_head_stride)          \
  X(long long, dk_batch_stride) X(long long, dk_seq_stride) X(long long, dk_head_stride)          \
  X(long long, dv_batch_stride) X(long long, dv_seq_stride) X(long long, dv_head_stride)          \
  X(long long, bias_batch_stride) X(long long, bias_head_stride) X(long long, bias_row_stride)    \
  X(long long, bias_col_stride) X(long long, dbias_batch_stride) X(long long, dbias_head_stride)  \
  X(long long, dbias_row_stride) X(long long, lse_batch_stride) X(long long, lse_head_stride)     \
  X(int, batch) X(int, seqlen_q) X(int, seqlen_k) X(int, total_q) X(int, total_k)           \
  X(int, heads_q) X(int, heads_k)                                                                 \
  X(int, head_dim) X(int, head_dim_v) X(int, window_left) X(int, window_right)                    \
  X(int, alibi_batch_stride) X(unsigned, dropout_threshold) X(float, scale)                       \
  X(float, dropout_scale) X(int, bias_dtype)

// dst[b, s, hk, d] = sum over g < group of src[b, s, hk * group + g, d] (float32 sums, stored in
// dtype): AITER's GQA backward writes dk/dv per query head into a workspace, this folds them.
// Contiguous [rows, heads, dim] on both sides (rows = b * sk, or total_k).
#define JAX_AITER_ATTN_GQA_REDUCE_ARGS(F, X)                                                     \
  F(const void*, src) X(void*, dst) X(long long, rows) X(int, heads_k) X(int, group) X(int, dim)  \
  X(int, pad)

// keep[b, h, i, j] (uint8, 1 kept, 0 dropped) for a [b, hq, sq, sk] score grid, the very bits the
// attention kernels use (attn_dropout_keep). With a shard: the whole call's bits at (b0 + b,
// h0 + h, r0 + i, j) (sq_total is not read: the mask has no alignment).
#define JAX_AITER_ATTN_DROPOUT_MASK_ARGS(F, X)                                                   \
  F(const unsigned*, rng_key) X(const int*, shard) X(unsigned char*, keep) X(int, batch)         \
  X(int, heads) X(int, seqlen_q) X(int, seqlen_k) X(unsigned, dropout_threshold) X(int, pad)
// clang-format on

// ---- the kernels built --------------------------------------------------------------------------
// One forward, dkdv and dq kernel per X(tag, Elem, D): inputs of dtype Elem, head dims up to D
// (d and dv both; the host takes the smallest D that fits). One pre and one GQA reduction per
// Y(tag, Elem). The dropout-mask kernel is jax_aiter_attn_dropout_mask.
// Names: jax_aiter_attn_{fwd,bwd_dkdv,bwd_dq}_<tag>_d<D>,
// jax_aiter_attn_{bwd_pre,gqa_reduce}_<tag>.
// clang-format off
#define JAX_AITER_ATTN_KERNELS(X) \
  X(bf16, BF16, 64) X(bf16, BF16, 128) X(bf16, BF16, 256) \
  X(f16, F16, 64) X(f16, F16, 128) X(f16, F16, 256)
#define JAX_AITER_ATTN_DTYPES(Y) Y(bf16, BF16) Y(f16, F16)
// sm_90 only (elsewhere the symbols exist and trap; no plan takes them): the wgmma forwards for
// the 128 head-dim bucket, two a dtype: jax_aiter_attn_fwd_wg_<tag>_d128 (batch mode, masks and
// windows; no bias, ALiBi or dropout) and jax_aiter_attn_fwd_wg_feat_<tag>_d128 (every feature:
// varlen, bias, ALiBi, dropout too).
#define JAX_AITER_ATTN_WG_KERNELS(W) W(bf16, BF16) W(f16, F16)
// sm_90 only, likewise: the wgmma backward's dkdv and dq passes for the calls the wgmma forward
// takes (jax_aiter_attn_bwd_{dkdv,dq}_wg_<tag>_d128; the pre pass stays bwd_pre).
#define JAX_AITER_ATTN_WG_BWD_KERNELS(W) W(bf16, BF16) W(f16, F16)
// The fp8 forward: jax_aiter_attn_fwd_fp8_d<D>, e4m3fn or e4m3fnuz q, k, v (in_dtype says which),
// bf16 out. No backward.
#define JAX_AITER_ATTN_FP8_KERNELS(Z) Z(64) Z(128) Z(256)
// clang-format on

namespace jax_aiter::kernels::attention {

inline constexpr int kMaxHeadDim = 256;
inline constexpr int kHeadDims[] = {64, 128, 256};  // the D of JAX_AITER_ATTN_KERNELS, ascending

// bias_dtype and in_dtype codes.
inline constexpr int kAttnF32 = 0;
inline constexpr int kAttnBF16 = 1;
inline constexpr int kAttnF16 = 2;
inline constexpr int kAttnE4M3FN = 3;    // in_dtype only
inline constexpr int kAttnE4M3FNUZ = 4;  // in_dtype only

// An e4m3 byte's value times 2^-kFp8F16Shift(format), as f16 bits, exactly: the byte's sign,
// exponent and mantissa placed at f16's sign, exponent and mantissa top (e4m3fn's bias 7 against
// f16's 15 shifts by 2^-8, e4m3fnuz's 8 by 2^-7; e4m3 subnormals land on f16 subnormals, never
// rounded). The fp8 kernels multiply in f16 and undo the shift in float32. NaN bytes (e4m3fn
// 0x7f / 0xff, e4m3fnuz 0x80) become an f16 NaN.
JAX_AITER_ATTN_HD unsigned short attn_e4m3_as_f16(unsigned byte, int in_dtype) {
  const bool nan = in_dtype == kAttnE4M3FNUZ ? byte == 0x80u : (byte & 0x7fu) == 0x7fu;
  return static_cast<unsigned short>(nan ? 0x7e00u : ((byte & 0x80u) << 8) | ((byte & 0x7fu) << 7));
}
JAX_AITER_ATTN_HD int attn_fp8_f16_shift(int in_dtype) { return in_dtype == kAttnE4M3FNUZ ? 7 : 8; }

// Launch shapes, per head-dim bucket (index into kHeadDims): query rows per block of the forward
// and dq kernels, key rows per block of the dkdv kernel, threads per block (4 warps on sm_90, 2
// waves on AMD). The grids:
//   fwd, dq:  (ceil(seqlen_q / kRowsQ), heads_q, batch)
//   dkdv:     (ceil(seqlen_k / kRowsK), heads_k, batch)
//   pre:      (ceil(seqlen_q / kPreRows), heads_q, batch), kPreThreads threads
//   gqa:      (ceil(rows * heads_k * dim / (kReduceThreads * 4)), 1, 1), kReduceThreads threads
//   mask:     (ceil(seqlen_k / 4 / kMaskThreads), seqlen_q, batch * heads), kMaskThreads threads
// Why these numbers (kernels_co/attention.kernel.cpp, AttnConfig, has the per-kernel tiles): 48 KiB
// of static shared memory a block; 64 query rows a block of 4 warps (16 a warp: one m16 block, so
// the float32 output, 64 registers at D = 128, leaves room for 64-key K and V tiles without
// spilling); dkdv keeps 16 keys a warp (dk and dv both accumulate in registers), at D = 256 two
// warps share them. Measured on the H100 against 128 rows a block (32 a warp, 32-key tiles, which
// spill): faster or within run-to-run noise (benchmarks/gpu/NOTES.md, "Attention kernels").
// sm_90's wgmma forward (jax_aiter_attn_fwd_wg_<dtype>_d128, JAX_AITER_ATTN_WG_KERNELS): one
// producer warpgroup and two consumer warpgroups of 64 query rows each, grid (ceil(seqlen_q /
// kWgRowsQ), heads_q, batch), kWgSmemBytes of dynamic shared memory: Q (128 x 128), kWgStages
// stages of K and V tiles (128 keys x 128 each), 16-bit, their barriers (Q's two, three a stage),
// 1024 bytes of alignment.
inline constexpr int kWgRowsQ = 128;
inline constexpr int kWgThreads = 384;
inline constexpr int kWgStages = 3;
inline constexpr int kWgSmemBytes =
    1024 + (1 + 2 * kWgStages) * 128 * 128 * 2 + 8 * (2 + 3 * kWgStages);
// sm_90's wgmma backward (JAX_AITER_ATTN_WG_BWD_KERNELS), the same three warpgroups:
//   dkdv: grid (ceil(seqlen_k / kWgBwdKeys), heads_k, batch); each consumer owns 64 keys and keeps
//     their dk and dv in registers over the group's query heads and the query tiles (kWgBwdRows
//     rows) that see them; shared memory: K, V (128 keys x 128), kWgBwdStages stages of Q and dO
//     (kWgBwdRows x 128, 16-bit) with their lse and delta (float32), barriers, 1024 bytes of
//     alignment.
//   dq: grid (ceil(seqlen_q / kWgRowsQ), heads_q, batch), 64 query rows a consumer; Q and dO (128
//     rows x 128), kWgDqStages stages of K and V tiles (kWgDqKeys keys x 128).
inline constexpr int kWgBwdKeys = 128;
inline constexpr int kWgBwdRows = 64;
inline constexpr int kWgBwdStages = 3;
inline constexpr int kWgDkdvSmemBytes =
    1024 + 2 * 128 * 128 * 2 + kWgBwdStages * (2 * kWgBwdRows * 128 * 2 + 2 * kWgBwdRows * 4) +
    8 * (1 + 2 * kWgBwdStages);
inline constexpr int kWgDqKeys = 128;
inline constexpr int kWgDqStages = 2;
inline constexpr int kWgDqSmemBytes = 1024 + 2 * kWgRowsQ * 128 * 2 +
                                      kWgDqStages * 2 * kWgDqKeys * 128 * 2 +
                                      8 * (1 + 2 * kWgDqStages);
inline constexpr int kRowsQ[] = {64, 64, 64};
inline constexpr int kRowsK[] = {64, 64, 32};
inline constexpr int kThreads[] = {128, 128, 128};
inline constexpr int kPreRows = 32;
inline constexpr int kPreThreads = 256;
inline constexpr int kReduceThreads = 256;
inline constexpr int kMaskThreads = 128;

// ---- which keys a query sees, ALiBi ------------------------------------------------------------

// Where a call sits in the whole call it is a shard of (see "Sharded calls" at the top).
struct AttnShard {
  int b0, h0, r0, sq_total;
};
// The shard a kernel's `shard` argument names: {0, 0, 0, 0} (unsharded) for null.
JAX_AITER_ATTN_HD AttnShard attn_shard(const int* shard) {
  if (shard == nullptr) return {0, 0, 0, 0};
  return {shard[0], shard[1], shard[2], shard[3]};
}

// The diagonal offset of a sequence of sq query rows (this call's) and sk keys: query row i
// (counted from this call's first row) has key i + off on its diagonal, the key it sees straight
// ahead. Masks and ALiBi are aligned to the bottom-right corner (the last query of the whole call
// sees the last key), as flash-attn and AITER align causal masks: off = sk - sq unsharded, and
// sk - sq_total + r0 for a shard (sq_total 0 meaning sq).
JAX_AITER_ATTN_HD long long attn_diagonal_offset(long long sq, long long sk, const AttnShard& s) {
  return sk - (s.sq_total > 0 ? s.sq_total : sq) + s.r0;
}

// Whether a query whose diagonal is key `diagonal` sees key j: -1 leaves a side unbounded.
JAX_AITER_ATTN_HD bool attn_visible_at(long long diagonal, long long j, int left, int right) {
  if (left >= 0 && j < diagonal - left) return false;
  if (right >= 0 && j > diagonal + right) return false;
  return true;
}
// Whether query row i sees key column j (both counted from their sequence's start) in an
// unsharded sequence of sq queries and sk keys.
JAX_AITER_ATTN_HD bool attn_visible(long long i, long long j, long long sq, long long sk, int left,
                                    int right) {
  return attn_visible_at(i + sk - sq, j, left, right);
}

// The ALiBi term added to score (i, j) with key `diagonal` on query i's diagonal:
// -slope * |diagonal - j| (flash-attn's -slope * |i + sk - sq - j|). A NaN slope makes every score
// of its rows NaN (NaN * 0 too). NaN in, NaN out: a row with a NaN score (a NaN in q, k, the bias
// or the slope) gets out and lse NaN (a running max skips NaN, so the kernels test the row's sum,
// which does not), and so do its gradients and those of every key it sees.
JAX_AITER_ATTN_HD float attn_alibi_at(float slope, long long diagonal, long long j) {
  const long long distance = diagonal - j;
  return -slope * static_cast<float>(distance < 0 ? -distance : distance);
}
JAX_AITER_ATTN_HD float attn_alibi(float slope, long long i, long long j, long long sq,
                                   long long sk) {
  return attn_alibi_at(slope, i + sk - sq, j);
}

// ---- dropout ------------------------------------------------------------------------------------

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): four u32
// words from a 128-bit counter and a 64-bit key.
struct Philox4 {
  unsigned v[4];
};
JAX_AITER_ATTN_HD Philox4 philox4x32_10(unsigned c0, unsigned c1, unsigned c2, unsigned c3,
                                        unsigned k0, unsigned k1) {
  constexpr unsigned long long kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr unsigned kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = kM0 * c0, p1 = kM1 * c2;
    const unsigned hi0 = static_cast<unsigned>(p0 >> 32), lo0 = static_cast<unsigned>(p0);
    const unsigned hi1 = static_cast<unsigned>(p1 >> 32), lo1 = static_cast<unsigned>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// Whether dropout keeps score (b, h, i, j) of the whole call (a shard adds its b0, h0, r0; i, j
// counted from the sequence's start; b the sequence index in varlen mode): a pure function of the
// key and the position, so forward, backward, dropout_mask and every shard agree whatever the
// tiling or tier. One Philox call serves 4 adjacent columns:
// counter (i, j / 4, h, b), word j % 4; the score is dropped when that word is below
// threshold = min(floor(p 2^32), 2^32 - 1).
JAX_AITER_ATTN_HD bool attn_dropout_keep(const unsigned* key, int b, int h, long long i,
                                         long long j, unsigned threshold) {
  const Philox4 r =
      philox4x32_10(static_cast<unsigned>(i), static_cast<unsigned>(j >> 2),
                    static_cast<unsigned>(h), static_cast<unsigned>(b), key[0], key[1]);
  return r.v[j & 3] >= threshold;
}

}  // namespace jax_aiter::kernels::attention
