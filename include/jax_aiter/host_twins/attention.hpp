// Host twins of our portable attention kernels (kernels/attention.hpp): each reads the very bytes
// the plan packed (AttnFwdArgs, AttnBwdArgs, AttnGqaReduceArgs, AttnDropoutMaskArgs) and computes
// exactly the blocks of the grid it is given, with the kernel's rows per block
// (kernels/shared/attention.h), so a short grid, a wrong stride, a wrong workspace or a wrong
// bucket shows up as wrong or unwritten outputs. The math is host_twins/attention_math.hpp's.
//
// Blocks (the grid formulas of kernels/shared/attention.h). As the kernels do, block x owns the
// tiles x, x + G, x + 2 G, ... of its sequence, up to the sequence's end, where G is the grid's
// width by the formula (the tiles of seqlen_q, or seqlen_k for dkdv): a varlen sequence longer
// than its maximum is computed whole, and a grid short of G leaves its missing blocks' tiles
// unwritten.
//   fwd   (x, h, b): out and lse of query rows [t kRowsQ, +kRowsQ) of head h, sequence b, for
//         each tile t of block x. The fp8 forward reads q, k, v of in_dtype (e4m3fn or e4m3fnuz,
//         decoded exactly) and their float32 descales, and writes bf16 out; another in_dtype or a
//         null descale writes NaN over its rows.
//   pre   (x, h, b): delta of query rows [t kPreRows, +kPreRows).
//   dkdv  (x, hk, b): dk and dv of key rows [t kRowsK, +kRowsK) of key head hk, summed over the
//         query heads of its group.
//   dq    (x, h, b): dq of query rows [t kRowsQ, +kRowsQ), and dbias (when non-null) of those rows:
//         every column < seqlen_k, so zeros outside the sequence (varlen) and where masked; in
//         varlen mode also the rows of the tiles past the sequence's end (up to seqlen_q), so
//         dbias is fully written by a full grid with no memset. dbias has rows < seqlen_q and
//         columns < seqlen_k only: a varlen sequence longer than them writes none past them, and
//         reads no bias there (0; the kernels take that as a precondition instead).
//   gqa   (x): dst elements [x kReduceThreads 4, +kReduceThreads 4) of the flattened dst.
//   mask  (x, i, b * heads + h): keep[b, h, i, j] for j in [x 4 kMaskThreads, +4 kMaskThreads).
// Rows past a sequence's end, heads >= heads (y), batches >= batch (z) are skipped. A kernel asked
// for a head dim above its bucket D (a planning bug) writes NaN over its block's outputs. A shard
// (the args' `shard`) reads as kernels/shared/attention.h says: blocks index this call's rows,
// heads and batches; masks, ALiBi and dropout see the whole call's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/attention_math.hpp"
#include "jax_aiter/kernels/attention.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace attention_twin_detail {

namespace am = attn_math;
namespace A = kernels::attention;

constexpr DType bias_dtype_of(int code) {
  return code == A::kAttnBF16 ? DType::kBF16 : code == A::kAttnF16 ? DType::kF16 : DType::kF32;
}

// The view of the fields AttnFwdArgs and AttnBwdArgs share.
template <typename Args>
am::View view_of(const Args& a, DType dtype) {
  am::View v;
  v.dtype = dtype;
  v.q = {a.q, a.q_batch_stride, a.q_seq_stride, a.q_head_stride};
  v.k = {a.k, a.k_batch_stride, a.k_seq_stride, a.k_head_stride};
  v.v = {a.v, a.v_batch_stride, a.v_seq_stride, a.v_head_stride};
  v.batch = a.batch;
  v.seqlen_q = a.seqlen_q;
  v.seqlen_k = a.seqlen_k;
  v.total_q = a.total_q;
  v.total_k = a.total_k;
  v.heads_q = a.heads_q;
  v.heads_k = a.heads_k;
  v.head_dim = a.head_dim;
  v.head_dim_v = a.head_dim_v;
  v.cu_seqlens_q = a.cu_seqlens_q;
  v.cu_seqlens_k = a.cu_seqlens_k;
  v.scale = a.scale;
  v.window_left = a.window_left;
  v.window_right = a.window_right;
  v.bias = a.bias;
  v.bias_dtype = bias_dtype_of(a.bias_dtype);
  v.bias_batch_stride = a.bias_batch_stride;
  v.bias_head_stride = a.bias_head_stride;
  v.bias_row_stride = a.bias_row_stride;
  v.bias_col_stride = a.bias_col_stride;
  v.alibi_slopes = a.alibi_slopes;
  v.alibi_batch_stride = a.alibi_batch_stride;
  v.rng_key = a.rng_key;
  v.dropout_threshold = a.dropout_threshold;
  v.dropout_scale = a.dropout_scale;
  v.shard = a.shard;
  return v;
}

constexpr int bucket_of(int head_dim) {
  for (int i = 0; i < static_cast<int>(std::size(A::kHeadDims)); ++i) {
    if (A::kHeadDims[i] == head_dim) return i;
  }
  return -1;
}

// The first rows of the tiles block x owns below end: x tile, (x + G) tile, ..., with G the tiles
// of grid_rows (the kernels' next_tile).
template <typename F>
void for_tiles(int64_t x, int64_t grid_rows, int64_t tile, int64_t end, F&& f) {
  const int64_t step = std::max<int64_t>((grid_rows + tile - 1) / tile, 1) * tile;
  for (int64_t r0 = x * tile; r0 < end; r0 += step) f(r0);
}

// Calls f(x, y, z) for every block of the grid whose y < heads and z < batch.
template <typename F>
void for_blocks(kernels::Dim3 grid, int64_t heads, int64_t batch, F&& f) {
  for (int64_t z = 0; z < std::min<int64_t>(grid.z, batch); ++z) {
    for (int64_t y = 0; y < std::min<int64_t>(grid.y, heads); ++y) {
      for (int64_t x = 0; x < grid.x; ++x) f(x, y, z);
    }
  }
}

// NaN over rows [r0, r1) (clipped to n) x cols of o at sequence row start `start`.
inline void poison_rows(const am::Output& o, DType t, int64_t b, int64_t h, int64_t start,
                        int64_t r0, int64_t r1, int64_t cols) {
  for (int64_t r = std::max<int64_t>(r0, 0); r < r1; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      am::store(o.data, o.offset(b, start + r, h) + c, t, std::numeric_limits<float>::quiet_NaN());
    }
  }
}

}  // namespace attention_twin_detail

namespace attention_twin_detail {
// The forward's blocks over view v (fits: the head dims and inputs are the kernel's; else NaN).
template <int D>
void fwd_blocks(const kernels::AttnFwdArgs& a, const am::View& v, bool fits, kernels::Dim3 grid) {
  const am::Output out{a.out, a.o_batch_stride, a.o_seq_stride, a.o_head_stride};
  const am::RowsOut lse{a.lse, a.lse_batch_stride, a.lse_head_stride};
  constexpr int64_t kRows = A::kRowsQ[bucket_of(D)];
  for_blocks(grid, a.heads_q, a.batch, [&](int64_t x, int64_t h, int64_t b) {
    const am::Sequence s = am::sequence(v, b);
    for_tiles(x, a.seqlen_q, kRows, s.sq, [&](int64_t i0) {
      if (fits) {
        am::forward_rows(v, out, lse, b, h, i0, i0 + kRows);
        return;
      }
      const int64_t i1 = std::min(i0 + kRows, s.sq);
      poison_rows(out, v.out_dtype(), b, h, s.q_start, i0, i1, a.head_dim_v);
      for (int64_t i = i0; lse.data && i < i1; ++i) {
        lse.data[b * lse.batch_stride + h * lse.head_stride + s.q_start + i] =
            std::numeric_limits<float>::quiet_NaN();
      }
    });
  });
}
}  // namespace attention_twin_detail

template <DType T, int D>
void attn_fwd(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  namespace d = attention_twin_detail;
  const auto a = packed.unpack<kernels::AttnFwdArgs>();
  d::fwd_blocks<D>(a, d::view_of(a, T), a.head_dim <= D && a.head_dim_v <= D, grid);
}

// jax_aiter_attn_fwd_fp8_d<D>: q, k, v of in_dtype, descales folded as the kernel folds them.
template <int D>
void attn_fwd_fp8(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  namespace d = attention_twin_detail;
  const auto a = packed.unpack<kernels::AttnFwdArgs>();
  const bool fnuz = a.in_dtype == d::A::kAttnE4M3FNUZ;
  const bool ok = (fnuz || a.in_dtype == d::A::kAttnE4M3FN) && a.q_descale != nullptr &&
                  a.k_descale != nullptr && a.v_descale != nullptr;
  attn_math::View v = d::view_of(a, fnuz ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN);
  if (ok) {
    v.scale = a.scale * *a.q_descale * *a.k_descale;
    v.out_scale = *a.v_descale;
  }
  d::fwd_blocks<D>(a, v, ok && a.head_dim <= D && a.head_dim_v <= D, grid);
}

template <DType T>
void attn_bwd_pre(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  namespace d = attention_twin_detail;
  const auto a = packed.unpack<kernels::AttnBwdArgs>();
  const attn_math::View v = d::view_of(a, T);
  const attn_math::Operand out{a.out, a.o_batch_stride, a.o_seq_stride, a.o_head_stride};
  const attn_math::Operand dout{a.dout, a.do_batch_stride, a.do_seq_stride, a.do_head_stride};
  const attn_math::RowsOut delta{a.delta, a.lse_batch_stride, a.lse_head_stride};
  constexpr int64_t kRows = d::A::kPreRows;
  d::for_blocks(grid, a.heads_q, a.batch, [&](int64_t x, int64_t h, int64_t b) {
    const attn_math::Sequence s = attn_math::sequence(v, b);
    d::for_tiles(x, a.seqlen_q, kRows, s.sq, [&](int64_t i0) {
      attn_math::delta_rows(v, out, dout, delta, b, h, i0, i0 + kRows);
    });
  });
}

namespace attention_twin_detail {
inline attn_math::BwdInputs bwd_inputs(const kernels::AttnBwdArgs& a) {
  return {{a.dout, a.do_batch_stride, a.do_seq_stride, a.do_head_stride},
          {a.lse, a.lse_batch_stride, a.lse_head_stride},
          {a.delta, a.lse_batch_stride, a.lse_head_stride}};
}
}  // namespace attention_twin_detail

template <DType T, int D>
void attn_bwd_dkdv(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  namespace d = attention_twin_detail;
  const auto a = packed.unpack<kernels::AttnBwdArgs>();
  const attn_math::View v = d::view_of(a, T);
  const attn_math::BwdInputs in = d::bwd_inputs(a);
  const attn_math::Output dk{a.dk, a.dk_batch_stride, a.dk_seq_stride, a.dk_head_stride};
  const attn_math::Output dv{a.dv, a.dv_batch_stride, a.dv_seq_stride, a.dv_head_stride};
  constexpr int64_t kRows = d::A::kRowsK[d::bucket_of(D)];
  const int64_t hd = a.head_dim, hdv = a.head_dim_v;
  const bool fits = hd <= D && hdv <= D;
  std::vector<float> dk_acc(static_cast<size_t>(kRows * std::max<int64_t>(hd, 0))),
      dv_acc(static_cast<size_t>(kRows * std::max<int64_t>(hdv, 0)));
  d::for_blocks(grid, a.heads_k, a.batch, [&](int64_t x, int64_t hk, int64_t b) {
    const attn_math::Sequence s = attn_math::sequence(v, b);
    d::for_tiles(x, a.seqlen_k, kRows, s.sk, [&](int64_t j0) {
      const int64_t j1 = std::min(j0 + kRows, s.sk);
      if (!fits) {
        d::poison_rows(dk, T, b, hk, s.k_start, j0, j1, hd);
        d::poison_rows(dv, T, b, hk, s.k_start, j0, j1, hdv);
        return;
      }
      std::fill(dk_acc.begin(), dk_acc.end(), 0.f);
      std::fill(dv_acc.begin(), dv_acc.end(), 0.f);
      attn_math::dkdv_group_rows(v, in, b, hk, j0, j1, {dk_acc.data(), hd}, {dv_acc.data(), hdv});
      attn_math::store_rows(dk_acc.data(), hd, j1 - j0, hd, dk.data,
                            dk.offset(b, s.k_start + j0, hk), dk.seq_stride, T);
      attn_math::store_rows(dv_acc.data(), hdv, j1 - j0, hdv, dv.data,
                            dv.offset(b, s.k_start + j0, hk), dv.seq_stride, T);
    });
  });
}

template <DType T, int D>
void attn_bwd_dq(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3 /*block*/) {
  namespace d = attention_twin_detail;
  const auto a = packed.unpack<kernels::AttnBwdArgs>();
  const attn_math::View v = d::view_of(a, T);
  const attn_math::BwdInputs in = d::bwd_inputs(a);
  const attn_math::Output dq{a.dq, a.dq_batch_stride, a.dq_seq_stride, a.dq_head_stride};
  constexpr int64_t kRows = d::A::kRowsQ[d::bucket_of(D)];
  const int64_t hd = a.head_dim;
  const bool fits = hd <= D && a.head_dim_v <= D;
  std::vector<float> dq_acc(static_cast<size_t>(kRows * std::max<int64_t>(hd, 0)));
  d::for_blocks(grid, a.heads_q, a.batch, [&](int64_t x, int64_t h, int64_t b) {
    const attn_math::Sequence s = attn_math::sequence(v, b);
    const int64_t rows_end = a.dbias ? std::max<int64_t>(s.sq, a.seqlen_q) : s.sq;
    d::for_tiles(x, a.seqlen_q, kRows, rows_end, [&](int64_t i0) {
      const int64_t i1 = std::min(i0 + kRows, s.sq);
      attn_math::Accum dbias;
      if (a.dbias) {  // the tile's rows up to seqlen_q, every column up to seqlen_k
        const int64_t dbias_end = std::min<int64_t>(i0 + kRows, a.seqlen_q);
        dbias = {
            a.dbias + b * a.dbias_batch_stride + h * a.dbias_head_stride + i0 * a.dbias_row_stride,
            a.dbias_row_stride, std::max<int64_t>(a.seqlen_q - i0, 0), a.seqlen_k};
        for (int64_t i = i0; i < dbias_end; ++i) {
          float* row = dbias.row(i - i0);
          const int64_t from = i < i1 && fits ? s.sk : 0;  // dq_rows writes [0, sk) of its rows
          const float fill = fits ? 0.f : std::numeric_limits<float>::quiet_NaN();
          std::fill(row + std::min<int64_t>(from, a.seqlen_k),
                    row + std::max<int64_t>(a.seqlen_k, 0), fill);
        }
      }
      if (i0 >= i1) return;
      if (!fits) {
        d::poison_rows(dq, T, b, h, s.q_start, i0, i1, hd);
        return;
      }
      std::fill(dq_acc.begin(), dq_acc.end(), 0.f);
      attn_math::dq_rows(v, in, b, h, i0, i1, {dq_acc.data(), hd}, dbias);
      attn_math::store_rows(dq_acc.data(), hd, i1 - i0, hd, dq.data,
                            dq.offset(b, s.q_start + i0, h), dq.seq_stride, T);
    });
  });
}

template <DType T>
void attn_gqa_reduce(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                     kernels::Dim3 /*block*/) {
  const auto a = packed.unpack<kernels::AttnGqaReduceArgs>();
  constexpr int64_t kPerBlock = int64_t{kernels::attention::kReduceThreads} * 4;
  for (int64_t x = 0; x < grid.x; ++x) {
    attn_math::fold_heads(a.src, T, a.dst, T, a.rows, a.heads_k, a.group, a.dim, x * kPerBlock,
                          (x + 1) * kPerBlock);
  }
}

inline void attn_dropout_mask(const kernels::KernelArgs& packed, kernels::Dim3 grid,
                              kernels::Dim3 /*block*/) {
  const auto a = packed.unpack<kernels::AttnDropoutMaskArgs>();
  constexpr int64_t kPerBlock = int64_t{kernels::attention::kMaskThreads} * 4;
  const int64_t sq = a.seqlen_q, sk = a.seqlen_k, heads = a.heads;
  const int64_t planes = std::min<int64_t>(grid.z, int64_t{a.batch} * heads);
  const kernels::attention::AttnShard sh = kernels::attention::attn_shard(a.shard);
  for (int64_t bh = 0; bh < planes; ++bh) {
    for (int64_t i = 0; i < std::min<int64_t>(grid.y, sq); ++i) {
      unsigned char* row = a.keep + (bh * sq + i) * sk;
      for (int64_t x = 0; x < grid.x; ++x) {
        for (int64_t j = x * kPerBlock; j < std::min((x + 1) * kPerBlock, sk); ++j) {
          row[j] = kernels::attention::attn_dropout_keep(
              a.rng_key, sh.b0 + static_cast<int>(bh / heads), sh.h0 + static_cast<int>(bh % heads),
              sh.r0 + i, j, a.dropout_threshold);
        }
      }
    }
  }
}

namespace attention_twin_detail {

template <size_t... I>
bool register_twins(std::index_sequence<I...>) {
  auto one = [](auto index) {
    constexpr const kernels::AttnKernels& k = kernels::kAttnKernels[decltype(index)::value];
    static_assert(bucket_of(k.head_dim) >= 0);
    runtime::HostTwins::add(k.fwd.symbol, &attn_fwd<k.dtype, k.head_dim>);
    runtime::HostTwins::add(k.dkdv.symbol, &attn_bwd_dkdv<k.dtype, k.head_dim>);
    runtime::HostTwins::add(k.dq.symbol, &attn_bwd_dq<k.dtype, k.head_dim>);
  };
  (one(std::integral_constant<size_t, I>{}), ...);
  for (const kernels::AttnDtypeKernels& k : kernels::kAttnDtypeKernels) {
    const bool f16 = k.dtype == DType::kF16;
    runtime::HostTwins::add(k.bwd_pre.symbol,
                            f16 ? &attn_bwd_pre<DType::kF16> : &attn_bwd_pre<DType::kBF16>);
    runtime::HostTwins::add(k.gqa_reduce.symbol,
                            f16 ? &attn_gqa_reduce<DType::kF16> : &attn_gqa_reduce<DType::kBF16>);
  }
  runtime::HostTwins::add(kernels::kAttnDropoutMaskKernel.symbol, &attn_dropout_mask);
  static_assert(kernels::kAttnFp8Kernels.size() == 3);
  runtime::HostTwins::add(kernels::kAttnFp8Kernels[0].fwd.symbol,
                          &attn_fwd_fp8<kernels::kAttnFp8Kernels[0].head_dim>);
  runtime::HostTwins::add(kernels::kAttnFp8Kernels[1].fwd.symbol,
                          &attn_fwd_fp8<kernels::kAttnFp8Kernels[1].head_dim>);
  runtime::HostTwins::add(kernels::kAttnFp8Kernels[2].fwd.symbol,
                          &attn_fwd_fp8<kernels::kAttnFp8Kernels[2].head_dim>);
  return true;
}

inline const bool kRegistered =
    register_twins(std::make_index_sequence<kernels::kAttnKernels.size()>{});

}  // namespace attention_twin_detail

}  // namespace jax_aiter::host_twins
