// ABI twins of AITER's two-stage fused-MoE stage-1 ASM kernels (hsa/<arch>/fmoe_2stages/*.co): one
// kernel per symbol of JAX_AITER_FMOE_2STAGES_ROWS (include/jax_aiter/kernels/shared/
// aiter_fmoe_2stages.h), named by it and declaring AITER's kernel arguments as the row's code
// object does: the 368-byte struct (kernels/aiter/fmoe_2stages.hpp) with the metadata's names, or
// the 400-byte form of the rows whose code object declares it (total_tgs, ps_deno). The
// sm_90 cubin, which stands in for both archs, declares every kernel in the 368-byte form (a plan
// of a 400-byte row then feeds parameters ending within our struct; the twins never read the
// extra slots). Each kernel is a call of one function with the row's list and tile as values: the
// code is compiled once, not once per row.
//
// The contract, as the host twins honour it (include/jax_aiter/host_twins/aiter_fmoe_2stages.hpp:
// the same work split, order of sums and roundings; AITER at e4048607a535, csrc/py_itfs_cu/
// asm_moe_2stage.cu and aiter/fused_moe.py):
//   block 256 threads, grid (ceil(I / tile_n), sorted blocks). Workgroup (x, y) takes inter
//   columns [x tile_n, +tile_n) of rows [y tile_m, +tile_m) of STP, expert SEP[y]; blocks at or
//   past Xc[0] (num_valid_ids) rows, and rows whose token (id & 0xffffff) is >= batch, are
//   skipped. Per row (token t, slot k = id >> 24): a_j = act(x[t] . w1[e][j]) * (x[t] .
//   w1[e][I + j]) (dequantized as the row's list says, f32 sums in k order; act by the
//   activation field: 0 silu, 1 erf-gelu), times SW[row] for doweight rows; written bf16 at
//   O + t Os + (k I + j) 2, or (block scales) quantized to e4m3 per 128 columns (scale = max |a| /
//   the format's max, 1 for an all-zero block; nearest even) at O + t Os + k I + j with the f32
//   scale at float (t topk + k) (I / 128) + j / 128 of the region from O + batch Os. The fp8
//   format (e4m3fnuz for a gfx942 plan) is the first pad byte of the topk slot
//   (aiter_fmoe::kFormatFnuz), which AITER's kernels never read.
// Written for the contract, not for speed: one thread per inter column.
// Build: as aiter_fmoe.twin.cpp.
#include "jax_aiter/kernels/shared/aiter_fmoe_2stages.h"
#include "jax_aiter_fmoe_twin.hpp"

#if defined(__CUDACC__)
#define JA_FMOE2_NOINLINE __device__ __noinline__
#else
#define JA_FMOE2_NOINLINE __device__ __attribute__((noinline))
#endif

namespace ja::twin_fmoe2 {

namespace L = jax_aiter::kernels::aiter_fmoe;
namespace L2 = jax_aiter::kernels::aiter_fmoe_2stages;
using ja::twin_fmoe::gate_up_of;
using ja::twin_fmoe::GateUp;

enum Quant : int { kPertokenFp8, kPertokenInt8, kBlockscaleFp8 };

// A row's columns the twin reads.
struct Row {
  int quant, doweight, tile_m, tile_n;
};

// The struct's fields the twin reads.
struct Args {
  void* O;
  const void *X, *GU, *XC, *XQ, *GUQ, *STP, *SEP, *SW;
  uint32_t dim, inter, tokens, Xs, Os, eGUs, eGUQs, topk, activation, format;
};

inline constexpr int kMaxTile = 512;  // the widest tile_n
inline constexpr int kBlocks = kMaxTile / L2::kScaleBlock;

JA_FMOE2_NOINLINE void run(Row r, Args a, float* h, float* scale) {
  const auto m = static_cast<uint32_t>(r.tile_m), width = static_cast<uint32_t>(r.tile_n);
  const auto y = static_cast<uint32_t>(block_id_y());
  const auto valid = static_cast<uint32_t>(static_cast<const int*>(a.XC)[0]);
  if (static_cast<uint64_t>(y) * m >= valid) return;
  const uint32_t j0 = static_cast<uint32_t>(block_id()) * width;
  const uint32_t j1 = a.inter < j0 + width ? a.inter : j0 + width;
  if (j0 >= j1) return;
  const bool fnuz = (a.format & 0xffu) == static_cast<uint32_t>(L::kFormatFnuz);
  const bool blocks = r.quant == kBlockscaleFp8;
  const GateUp gate_up = gate_up_of(a, r.quant == kPertokenInt8, blocks, false, fnuz);
  const auto* ids = static_cast<const int*>(a.STP);
  const auto e = static_cast<uint32_t>(static_cast<const int*>(a.SEP)[y]);
  const auto tid = static_cast<uint32_t>(thread_id());
  const float fmax = fnuz ? 240.f : 448.f;
  auto* out = static_cast<unsigned char*>(a.O);
  auto* scales = reinterpret_cast<float*>(out + static_cast<uint64_t>(a.tokens) * a.Os);
  for (uint32_t i = 0; i < m; ++i) {
    const uint64_t at = static_cast<uint64_t>(y) * m + i;
    const auto t = static_cast<uint32_t>(L::sorted_token(ids[at]));
    const auto k = static_cast<uint32_t>(L::sorted_slot(ids[at]));
    if (t >= a.tokens || k >= a.topk) continue;  // uniform: the barriers below stay so
    const float w = r.doweight ? static_cast<const float*>(a.SW)[at] : 1.f;
    unsigned char* row = out + static_cast<uint64_t>(t) * a.Os;
    for (uint32_t j = j0 + tid; j < j1; j += L2::kBlockThreads) {
      const float v =
          ja::twin_fmoe::act(static_cast<int>(a.activation == L2::kGelu), gate_up(t, e, j)) *
          gate_up(t, e, a.inter + j) * w;
      if (!blocks) {
        reinterpret_cast<uint16_t*>(row)[static_cast<uint64_t>(k) * a.inter + j] = BF16::store(v);
      } else {
        h[j - j0] = v;
      }
    }
    if (!blocks) continue;
    barrier();
    const uint32_t nb = (j1 - j0 + L2::kScaleBlock - 1) / L2::kScaleBlock;
    if (tid < nb) {
      const uint32_t b0 = tid * L2::kScaleBlock;
      const uint32_t b1 = b0 + L2::kScaleBlock < j1 - j0 ? b0 + L2::kScaleBlock : j1 - j0;
      float amax = 0.f;
      for (uint32_t j = b0; j < b1; ++j) {
        const float v = h[j] < 0.f ? -h[j] : h[j];
        amax = v > amax ? v : amax;
      }
      scale[tid] = amax > 0.f ? amax / fmax : 1.f;
      scales[(static_cast<uint64_t>(t) * a.topk + k) * (a.inter / L2::kScaleBlock) +
             (j0 + b0) / L2::kScaleBlock] = scale[tid];
    }
    barrier();
    for (uint32_t j = j0 + tid; j < j1; j += L2::kBlockThreads) {
      float q = h[j - j0] / scale[(j - j0) / L2::kScaleBlock];
      q = q < -fmax ? -fmax : (q > fmax ? fmax : q);
      row[static_cast<uint64_t>(k) * a.inter + j] =
          static_cast<unsigned char>(ja::twin_fmoe::e4m3_encode(q, fnuz));
    }
    barrier();
  }
}

}  // namespace ja::twin_fmoe2

// AITER's symbols are mangled C++ names declared here as extern "C" identifiers, which the
// language reserves (leading underscore and capital).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then padding
// parameters named pad<n> (which the metadata checks skip). pad39, the first pad of the topk slot,
// carries the fp8 format. Some values go unread (SMQ, eprt, GUs, eSMQs, splitk), hence
// [[maybe_unused]] throughout.
#define JA_FMOE2_PTR(type, name, n) [[maybe_unused]] type name, [[maybe_unused]] uint64_t pad##n
#define JA_FMOE2_U32(name, a, b, c)                                 \
  [[maybe_unused]] uint32_t name, [[maybe_unused]] uint32_t pad##a, \
      [[maybe_unused]] uint32_t pad##b, [[maybe_unused]] uint32_t pad##c
#define JA_FMOE2_HEAD                                                                            \
  JA_FMOE2_PTR(void*, O, 0), JA_FMOE2_PTR(const void*, X, 1), JA_FMOE2_PTR(const void*, G, 2),   \
      JA_FMOE2_PTR(const void*, Xc, 3), JA_FMOE2_PTR(const void*, XQ, 4),                        \
      JA_FMOE2_PTR(const void*, GQ, 5), JA_FMOE2_PTR(const void*, SMQ, 6),                       \
      JA_FMOE2_PTR(const void*, STP, 7), JA_FMOE2_PTR(const void*, SEP, 8),                      \
      JA_FMOE2_U32(dim, 9, 10, 11), JA_FMOE2_U32(hdim, 12, 13, 14),                              \
      JA_FMOE2_U32(batch, 15, 16, 17), JA_FMOE2_U32(eprt, 18, 19, 20),                           \
      JA_FMOE2_U32(Xs, 21, 22, 23), JA_FMOE2_U32(GUs, 24, 25, 26), JA_FMOE2_U32(Os, 27, 28, 29), \
      JA_FMOE2_U32(eGUs, 30, 31, 32), JA_FMOE2_U32(eGUQs, 33, 34, 35),                           \
      JA_FMOE2_U32(eSMQs, 36, 37, 38), JA_FMOE2_U32(topk, 39, 40, 41),                           \
      JA_FMOE2_U32(splitk, 42, 43, 44), JA_FMOE2_U32(activation, 45, 46, 47), JA_FMOE2_SW
// SW, as AITER's metadata declares it: a 4-byte value at 352, then padding (the runtime copies
// the padding too: the pointer's high half is pad48).
#define JA_FMOE2_SW \
  [[maybe_unused]] uint32_t SW, [[maybe_unused]] uint32_t pad48, [[maybe_unused]] uint64_t pad49
#define JA_FMOE2_SW_PTR \
  reinterpret_cast<const void*>((static_cast<uint64_t>(pad48) << 32) | static_cast<uint64_t>(SW))
#define JA_FMOE2_TAIL_368
#define JA_FMOE2_TAIL_400 , JA_FMOE2_U32(total_tgs, 50, 51, 52), JA_FMOE2_U32(ps_deno, 53, 54, 55)

#define JA_FMOE2_Q_pertokenFp8 ja::twin_fmoe2::kPertokenFp8
#define JA_FMOE2_Q_pertokenInt8 ja::twin_fmoe2::kPertokenInt8
#define JA_FMOE2_Q_blockscaleFp8 ja::twin_fmoe2::kBlockscaleFp8

#define JA_FMOE2_KERNEL(symbol, quant, doweight, tm, tn, tail)                                     \
  JA_KERNEL_BOUNDED(256) void symbol(JA_FMOE2_HEAD JA_FMOE2_TAIL_##tail) {                         \
    JA_SHARED float h[ja::twin_fmoe2::kMaxTile];                                                   \
    JA_SHARED float scale[ja::twin_fmoe2::kBlocks];                                                \
    ja::twin_fmoe2::run(                                                                           \
        ja::twin_fmoe2::Row{JA_FMOE2_Q_##quant, doweight, tm, tn},                                 \
        ja::twin_fmoe2::Args{O, X, G, Xc, XQ, GQ, STP, SEP, JA_FMOE2_SW_PTR, dim, hdim, batch, Xs, \
                             Os, eGUs, eGUQs, topk, activation, pad39},                            \
        h, scale);                                                                                 \
  }
#define JA_FMOE2_KERNEL_(...) JA_FMOE2_KERNEL(__VA_ARGS__)

// Every row in its code object's form (gfx942, gfx950: a row AITER ships for one arch only is
// declared in both, as the other families' twins do), or in the 368-byte one (sm_90: see the top).
#define JA_FMOE2_TWIN(symbol, co, quant, doweight, tm, tn, kernarg, g942, g950) \
  JA_FMOE2_KERNEL_(symbol, quant, doweight, tm, tn, kernarg)
#define JA_FMOE2_TWIN_368(symbol, co, quant, doweight, tm, tn, kernarg, g942, g950) \
  JA_FMOE2_KERNEL_(symbol, quant, doweight, tm, tn, 368)

static_assert(jax_aiter::kernels::aiter_fmoe_2stages::kBlockThreads == 256);
#if defined(__CUDACC__)
JAX_AITER_FMOE_2STAGES_ROWS(JA_FMOE2_TWIN_368)
#elif defined(__gfx942__) || defined(__gfx950__)
JAX_AITER_FMOE_2STAGES_ROWS(JA_FMOE2_TWIN)
#else
#error "aiter_fmoe_2stages.twin.cpp: built for gfx942, gfx950 or sm_90"
#endif
