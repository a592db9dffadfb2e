// ABI twins of AITER's one-stage fused-MoE ASM kernels (hsa/<arch>/fmoe/{silu,gelu}/*.co): one
// kernel per symbol of JAX_AITER_FMOE_ROWS (include/jax_aiter/kernels/shared/aiter_fmoe.h), named
// by it and declaring AITER's kernel arguments as the row's code object does: the 448-byte struct
// (kernels/aiter/fmoe.hpp) with the slot names of the row's arg_names, cut at 416 bytes (after
// topk) or 436 (ps_deno with no trailing pad), or extended to 480 (the a2, a2q slots), as its
// kernarg_bytes says. A symbol with two rows on one arch (gfx942's a16 flat and emsort kernels,
// in two lists) is defined once: each arch's code object takes the rows of
// JAX_AITER_FMOE_ROWS_UNIQUE_<ARCH> (cmake/JaxAiterRows.cmake), and the sm_90 cubin, which stands
// in for both archs, those of JAX_AITER_FMOE_ROWS_UNIQUE, each in the 448-byte form: a gfx950
// plan of a 480-byte row then feeds 448 bytes of parameters (the twins never read a2, a2q), and a
// 416- or 436-byte row's struct is 448 bytes all the same (runtime/cuda.hpp wants parameters that
// end within our struct).
//
// The contract, as the host twins honour it (include/jax_aiter/host_twins/aiter_fmoe.hpp: the
// same work split, order of sums and roundings; AITER at e4048607a535, csrc/py_itfs_cu/
// asm_fmoe.cu):
//   block 256 threads. A work item is (inter tile n, sorted block b): rows [b subGU_m, +subGU_m)
//   of STP/SW, expert SEP[b], inter columns [n subGU_n, +subGU_n) clipped to inter_dim; blocks at
//   or past U[0] (num_valid_ids) rows, and rows whose token (id & 0xffffff) is >= token_cnt, are
//   skipped. A plain grid (total_tgs == 0) is (ps_deno, blocks): workgroup (x, y) takes (x, y); a
//   persistent one has workgroup g < total_tgs take tile g % ps_deno and blocks g / ps_deno + i
//   (total_tgs / ps_deno), i = 0, 1, ...; the others idle.
//   Per row (token t, weight w): h_j = act(x[t] . w1[e][j]) * (x[t] . w1[e][I + j]) over the
//   tile's j (dequantized as the row's list says, f32 sums in k order; act silu or erf-gelu;
//   tkw1 rows scale h_j by w), then out[t][c] += w (sum over the tile's j of h_j w2[e][c][j])
//   (tkw1: without w), added atomically into the 16-bit out (a compare-and-swap on its 32-bit
//   word), which the plan zeroed. AITER's kernels quantize h again for their 8-bit down GEMM and
//   the blockscaleBf16 ones quantize x to fp8 themselves; the twins keep h in f32 and read x's
//   bf16 values.
//   Weights: each expert's w1 (eGUs bytes apart) and w2 (eDs) shuffled (16, 16) for K = dim and
//   inter_dim (aiter_fmoe::shuffled_offset); scales f32, per token x [T], w1 [2I] and w2 [H] per
//   expert (eGUQs, eDQs bytes apart), per block x [dim/128, T], w1 [2I/128, dim/128], w2
//   [dim/128, inter/128]. The fp8 format (e4m3fnuz for a gfx942 plan, e4m3fn for gfx950) is the
//   first pad byte of the topk slot (aiter_fmoe::kFormatFnuz), which AITER's kernels never read.
// Not run: flat rows (flat 1, 2: unsorted routing, one workgroup per (token, k) or a sort on the
// device; this op never plans them): their twins declare the arguments and return. Rows with
// smoothing scales (smf 1, 2) and g1u0 rows compute as the g1u1, smf 0 rows do (the op never
// plans them either).
//
// Written for the contract, not for speed: one thread per inter column, then per out column.
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... with
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_fmoe.h"
#include "jax_aiter_fmoe_twin.hpp"     // act, e4m3, GateUp (shared with the two-stage twins)
#include "jax_aiter_gemm_i8_tile.hpp"  // atomic_cas_device, load_coherent

#if defined(__CUDACC__)
#define JA_FMOE_NOINLINE __device__ __noinline__
#else
#define JA_FMOE_NOINLINE __device__ __attribute__((noinline))
#endif

namespace ja::twin_fmoe {

namespace L = jax_aiter::kernels::aiter_fmoe;

enum Quant : int { kPertokenFp8, kPertokenInt8, kBlockscaleFp8, kBlockscaleBf16 };

// A row's columns the twin reads.
struct Row {
  int f16_out, quant, gelu, tkw1, sub_m, sub_n, flat;
};

// The struct's fields, whatever the metadata calls them.
struct Args {
  void* O;
  const void *X, *GU, *XC, *D, *XQ, *GUQ, *DQ, *STP, *SW, *SEP;
  uint32_t dim, inter, tokens, Xs, Os, eGUs, eDs, eGUQs, eDQs, format, total_tgs, ps_deno;
};

inline constexpr int kMaxTile = 512;  // the widest subGU_n

struct Call {
  const Row& r;
  const Args& a;
  bool fnuz;

  JA_DEVICE GateUp reader() const {
    return gate_up_of(a, r.quant == kPertokenInt8, block_scaled(), r.quant == kBlockscaleBf16,
                      fnuz);
  }
  JA_DEVICE float weight(unsigned char b) const { return reader().weight(b); }
  JA_DEVICE static float scale(const void* base, uint32_t expert_bytes, uint32_t e, uint64_t i) {
    return GateUp::scale(base, expert_bytes, e, i);
  }
  JA_DEVICE bool block_scaled() const {
    return r.quant == kBlockscaleFp8 || r.quant == kBlockscaleBf16;
  }
  // x[t] . w1[e][n], dequantized.
  JA_DEVICE float gate_up(uint32_t t, uint32_t e, uint32_t n) const { return reader()(t, e, n); }

  // sum over j in [j0, j1) of h[j - j0] w2[e][c][j], dequantized.
  JA_DEVICE float down(uint32_t e, uint32_t c, uint32_t j0, uint32_t j1, const float* h) const {
    const auto* w = static_cast<const unsigned char*>(a.D) + static_cast<uint64_t>(e) * a.eDs;
    const uint32_t inter = a.inter;
    if (!block_scaled()) {
      float s = 0.f;
      for (uint32_t j = j0; j < j1; ++j)
        s += h[j - j0] * weight(w[L::shuffled_offset(c, j, inter)]);
      return s * scale(a.DQ, a.eDQs, e, c);
    }
    const uint32_t jb_count = inter / L::kScaleBlock;
    float total = 0.f;
    for (uint32_t jb = j0 / L::kScaleBlock; jb * L::kScaleBlock < j1; ++jb) {
      float s = 0.f;
      const uint32_t lo = j0 > jb * L::kScaleBlock ? j0 : jb * L::kScaleBlock;
      const uint32_t hi = j1 < (jb + 1) * L::kScaleBlock ? j1 : (jb + 1) * L::kScaleBlock;
      for (uint32_t j = lo; j < hi; ++j)
        s += h[j - j0] * weight(w[L::shuffled_offset(c, j, inter)]);
      total +=
          s * scale(a.DQ, a.eDQs, e, static_cast<uint64_t>(c / L::kScaleBlock) * jb_count + jb);
    }
    return total;
  }

  // out[t][c] += v in the out dtype, atomically.
  JA_DEVICE void add_out(uint32_t t, uint32_t c, float v) const {
    auto* p = reinterpret_cast<uint16_t*>(static_cast<unsigned char*>(a.O) +
                                          static_cast<uint64_t>(t) * a.Os) +
              c;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    uint32_t* word = reinterpret_cast<uint32_t*>(addr & ~uintptr_t{3});
    const uint32_t shift = (addr & 2u) ? 16u : 0u;
    uint32_t old = load_coherent(word), assumed;
    do {
      assumed = old;
      const auto bits = static_cast<uint16_t>(assumed >> shift);
      const uint16_t sum =
          r.f16_out ? F16::store(F16::load(bits) + v) : BF16::store(BF16::load(bits) + v);
      const uint32_t next = (assumed & ~(0xFFFFu << shift)) | (static_cast<uint32_t>(sum) << shift);
      old = atomic_cas_device(word, assumed, next);
    } while (old != assumed);
  }

  // One work item: inter tile n over sorted block b (every thread of the block calls it).
  JA_DEVICE void item(uint32_t n, uint32_t b, uint32_t valid, float* h) const {
    const auto m = static_cast<uint32_t>(r.sub_m), width = static_cast<uint32_t>(r.sub_n);
    if (static_cast<uint64_t>(b) * m >= valid) return;
    const uint32_t j0 = n * width, j1 = a.inter < j0 + width ? a.inter : j0 + width;
    if (j0 >= j1) return;
    const auto* ids = static_cast<const int*>(a.STP);
    const auto* weights = static_cast<const float*>(a.SW);
    const auto e = static_cast<uint32_t>(static_cast<const int*>(a.SEP)[b]);
    const auto tid = static_cast<uint32_t>(thread_id());
    for (uint32_t i = 0; i < m; ++i) {
      const uint64_t at = static_cast<uint64_t>(b) * m + i;
      const auto t = static_cast<uint32_t>(L::sorted_token(ids[at]));
      if (t >= a.tokens) continue;  // the same for every thread: the barriers below stay uniform
      const float wt = weights[at];
      for (uint32_t j = j0 + tid; j < j1; j += L::kBlockThreads) {
        h[j - j0] =
            act(r.gelu, gate_up(t, e, j)) * gate_up(t, e, a.inter + j) * (r.tkw1 ? wt : 1.f);
      }
      barrier();
      for (uint32_t c = tid; c < a.dim; c += L::kBlockThreads) {
        add_out(t, c, down(e, c, j0, j1, h) * (r.tkw1 ? 1.f : wt));
      }
      barrier();
    }
  }
};

JA_FMOE_NOINLINE void run(Row r, Args a, float* h) {
  if (r.flat != 0) return;
  const Call call{r, a, (a.format & 0xffu) == static_cast<uint32_t>(L::kFormatFnuz)};
  const auto valid = static_cast<uint32_t>(static_cast<const int*>(a.XC)[0]);
  if (a.total_tgs == 0) {
    call.item(static_cast<uint32_t>(block_id()), static_cast<uint32_t>(block_id_y()), valid, h);
    return;
  }
  const uint32_t g = static_cast<uint32_t>(block_id()), deno = a.ps_deno > 0 ? a.ps_deno : 1;
  if (g >= a.total_tgs) return;
  const auto m = static_cast<uint32_t>(r.sub_m);
  const uint32_t blocks = (valid + m - 1) / m, stride = a.total_tgs / deno;
  for (uint32_t b = g / deno; b < blocks; b += stride) call.item(g % deno, b, valid, h);
}

}  // namespace ja::twin_fmoe

// AITER's symbols are mangled C++ names declared here as extern "C" identifiers, which the
// language reserves (leading underscore and capital).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then padding
// parameters named pad<n> (which the metadata checks skip). pad51, the first pad of the topk slot,
// carries the fp8 format (aiter_fmoe::kFormatFnuz). Some values go unread (SMQ, eprt, GUs, Ds,
// eSMQs: the layout fixes the row strides), hence [[maybe_unused]] throughout.
#define JA_FMOE_PTR(type, name, n) [[maybe_unused]] type name, [[maybe_unused]] uint64_t pad##n
#define JA_FMOE_U32(name, a, b, c)                                  \
  [[maybe_unused]] uint32_t name, [[maybe_unused]] uint32_t pad##a, \
      [[maybe_unused]] uint32_t pad##b, [[maybe_unused]] uint32_t pad##c
// The slots every row declares, up to topk's, by the names of one naming.
#define JA_FMOE_HEAD(O, X, G, U, D, XQ, GQ, DQ, SMQ, STP, SW, SEP, dim, hdim, batch, eprt, Xs,     \
                     GUs, Ds, Os, eGUs, eDs, eGUQs, eDQs, eSMQs, topk)                             \
  JA_FMOE_PTR(void*, O, 0), JA_FMOE_PTR(const void*, X, 1), JA_FMOE_PTR(const void*, G, 2),        \
      JA_FMOE_PTR(const void*, U, 3), JA_FMOE_PTR(const void*, D, 4),                              \
      JA_FMOE_PTR(const void*, XQ, 5), JA_FMOE_PTR(const void*, GQ, 6),                            \
      JA_FMOE_PTR(const void*, DQ, 7), JA_FMOE_PTR(const void*, SMQ, 8),                           \
      JA_FMOE_PTR(const void*, STP, 9), JA_FMOE_PTR(const void*, SW, 10),                          \
      JA_FMOE_PTR(const void*, SEP, 11), JA_FMOE_U32(dim, 12, 13, 14),                             \
      JA_FMOE_U32(hdim, 15, 16, 17), JA_FMOE_U32(batch, 18, 19, 20),                               \
      JA_FMOE_U32(eprt, 21, 22, 23), JA_FMOE_U32(Xs, 24, 25, 26), JA_FMOE_U32(GUs, 27, 28, 29),    \
      JA_FMOE_U32(Ds, 30, 31, 32), JA_FMOE_U32(Os, 33, 34, 35), JA_FMOE_U32(eGUs, 36, 37, 38),     \
      JA_FMOE_U32(eDs, 39, 40, 41), JA_FMOE_U32(eGUQs, 42, 43, 44), JA_FMOE_U32(eDQs, 45, 46, 47), \
      JA_FMOE_U32(eSMQs, 48, 49, 50), JA_FMOE_U32(topk, 51, 52, 53)
// The fields run() reads, in ja::twin_fmoe::Args' order (the tail's total and deno follow).
#define JA_FMOE_ARGS(O, X, G, U, D, XQ, GQ, DQ, SMQ, STP, SW, SEP, dim, hdim, batch, eprt, Xs, \
                     GUs, Ds, Os, eGUs, eDs, eGUQs, eDQs, eSMQs, topk)                         \
  O, X, G, U, D, XQ, GQ, DQ, STP, SW, SEP, dim, hdim, batch, Xs, Os, eGUs, eDs, eGUQs, eDQs, pad51
// The two namings of the head (kernels/aiter/fmoe.hpp aiter_fmoe_detail::kO and kR).
#define JA_FMOE_NAMES_O                                                                         \
  (O, X, G, U, D, XQ, GQ, DQ, SMQ, STP, SW, SEP, dim, hdim, batch, eprt, Xs, GUs, Ds, Os, eGUs, \
   eDs, eGUQs, eDQs, eSMQs, topk)
#define JA_FMOE_NAMES_R                                                                           \
  (R, X, G, U, D, XQ, GQ, DQ, GsmQ, STP, SW, SEP, dim_len, hidden_len, token_cnt, eprt_cnt,       \
   stride_X, stride_GU, stride_D, stride_R, stride_expert_GU, stride_expert_D, stride_expert_GUQ, \
   stride_expert_DQ, stride_expert_GsmQ, topk)
#define JA_FMOE_EXPAND(macro, args) macro args
#define JA_FMOE_STRIP(...) __VA_ARGS__

// A kernel: the head's parameters, then the tail's (a parenthesized list, each entry after a
// comma), and run() with the tail's total_tgs and ps_deno (0, 0 for a 416-byte row: plain grid).
#define JA_FMOE_KERNEL(symbol, row, names, tail, total, deno)                                     \
  JA_KERNEL_BOUNDED(256)                                                                          \
  void symbol(JA_FMOE_EXPAND(JA_FMOE_HEAD, names) JA_FMOE_STRIP tail) {                           \
    JA_SHARED float h[ja::twin_fmoe::kMaxTile];                                                   \
    ja::twin_fmoe::run(JA_FMOE_STRIP row,                                                         \
                       ja::twin_fmoe::Args{JA_FMOE_EXPAND(JA_FMOE_ARGS, names), total, deno}, h); \
  }
#define JA_FMOE_TAIL(total, deno) (, JA_FMOE_U32(total, 54, 55, 56), JA_FMOE_U32(deno, 57, 58, 59))
// kernarg_bytes x arg_names -> the four arguments after the row: names, tail, total, deno.
#define JA_FMOE_FORM_448_o_tgs JA_FMOE_NAMES_O, JA_FMOE_TAIL(total_tgs, ps_deno), total_tgs, ps_deno
#define JA_FMOE_FORM_448_o_s_tgs \
  JA_FMOE_NAMES_O, JA_FMOE_TAIL(_s_total_tgs, _s_deno_tgs), _s_total_tgs, _s_deno_tgs
#define JA_FMOE_FORM_448_r_s_tgs \
  JA_FMOE_NAMES_R, JA_FMOE_TAIL(_s_total_tgs, _s_deno_tgs), _s_total_tgs, _s_deno_tgs
#define JA_FMOE_FORM_448_r_pad_tgs \
  JA_FMOE_NAMES_R, JA_FMOE_TAIL(_pad_total_tgs, _pad_ps_deno), _pad_total_tgs, _pad_ps_deno
#define JA_FMOE_FORM_416_o_tgs JA_FMOE_NAMES_O, (), 0u, 0u
#define JA_FMOE_FORM_436_o_tgs \
  JA_FMOE_NAMES_O, (, JA_FMOE_U32(total_tgs, 54, 55, 56), uint32_t ps_deno), total_tgs, ps_deno
#define JA_FMOE_FORM_480_o_s_tgs                                                      \
  JA_FMOE_NAMES_O,                                                                    \
      (, JA_FMOE_U32(_s_total_tgs, 54, 55, 56), JA_FMOE_U32(_s_deno_tgs, 57, 58, 59), \
       JA_FMOE_PTR(const void*, a2, 60), JA_FMOE_PTR(const void*, a2q, 61)),          \
      _s_total_tgs, _s_deno_tgs

#define JA_FMOE_F16_bf16 0
#define JA_FMOE_F16_fp16 1
#define JA_FMOE_Q_pertokenFp8 ja::twin_fmoe::kPertokenFp8
#define JA_FMOE_Q_pertokenInt8 ja::twin_fmoe::kPertokenInt8
#define JA_FMOE_Q_blockscaleFp8 ja::twin_fmoe::kBlockscaleFp8
#define JA_FMOE_Q_blockscaleBf16 ja::twin_fmoe::kBlockscaleBf16
#define JA_FMOE_GELU_silu 0
#define JA_FMOE_GELU_gelu 1
// A row's columns as a parenthesized Row (the parentheses keep its commas one macro argument).
#define JA_FMOE_ROW(out, quant, act, tkw1, sm, sn, flat) \
  (ja::twin_fmoe::Row{JA_FMOE_F16_##out, JA_FMOE_Q_##quant, JA_FMOE_GELU_##act, tkw1, sm, sn, flat})
#define JA_FMOE_KERNEL_FORM(symbol, row, form) JA_FMOE_KERNEL_(symbol, row, form)
#define JA_FMOE_KERNEL_(...) JA_FMOE_KERNEL(__VA_ARGS__)

// The row's own form (gfx942, gfx950), or the 448-byte one (sm_90: see the top).
#define JA_FMOE_TWIN(symbol, co, out, quant, gate, act, tkw1, atm, vskip, smf, tgs, ps, sm, sn, \
                     flat, kernarg, names, g942, g950)                                          \
  JA_FMOE_KERNEL_FORM(symbol, JA_FMOE_ROW(out, quant, act, tkw1, sm, sn, flat),                 \
                      JA_FMOE_FORM_##kernarg##_##names)
#define JA_FMOE_TWIN_448(symbol, co, out, quant, gate, act, tkw1, atm, vskip, smf, tgs, ps, sm, \
                         sn, flat, kernarg, names, g942, g950)                                  \
  JA_FMOE_KERNEL_FORM(symbol, JA_FMOE_ROW(out, quant, act, tkw1, sm, sn, flat),                 \
                      JA_FMOE_FORM_448_o_tgs)

static_assert(jax_aiter::kernels::aiter_fmoe::kBlockThreads == 256);
#if defined(__CUDACC__)
JAX_AITER_FMOE_ROWS_UNIQUE(JA_FMOE_TWIN_448)
#elif defined(__gfx942__)
JAX_AITER_FMOE_ROWS_UNIQUE_GFX942(JA_FMOE_TWIN)
#elif defined(__gfx950__)
JAX_AITER_FMOE_ROWS_UNIQUE_GFX950(JA_FMOE_TWIN)
#else
#error "aiter_fmoe.twin.cpp: built for gfx942, gfx950 or sm_90"
#endif
