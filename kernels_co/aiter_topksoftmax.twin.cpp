// ABI twins of AITER's top-k softmax ASM kernels (hsa/<arch>/topksoftmax/*.co): one kernel per
// row of JAX_AITER_TOPKSOFTMAX_ROWS (include/jax_aiter/kernels/shared/aiter_topksoftmax.h), named
// by the row's symbol and declaring AITER's kernel arguments as AITER's code objects do (names,
// offsets, sizes, the 128-byte kernarg segment; tests/cpp/data/check_twin_kernargs.py compares
// them with an AITER checkout's). Each honours AITER's launch contract with our portable row
// routine (jax_aiter_topk_softmax.hpp), so an ASM-tier plan runs unchanged with the twin in place
// of AITER's code object: on sm_90, and on AMD without an AITER checkout.
//
// Contract (AITER at e4048607a535, csrc/py_itfs_cu/asm_topksoftmax.cu; the code objects'
// disassembly for the bounds), as the twin honours it:
//   block 256 threads; grid ceil(batch / subm): block b takes token rows [b subm, (b + 1) subm),
//   stopping at batch (AITER's buffer resources end there). A row is `expert` logits (fp32 or
//   bf16, the row's dtype) apart; the kernel is built for the row's num_experts and topk and
//   chooses that many (the op's rule: largest logits, ties to the lower id, softmax in f32),
//   storing `topk` of them: ids at T + r out_stride bytes, weights at W + r out_stride.
//
// Build: as moe_routing.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... with
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_topksoftmax.h"
#include "jax_aiter_topk_softmax.hpp"

namespace ja::twin_topk {

// Rows [block subm, +subm) of a call, each by the whole block (experts, topk: the row's).
template <typename E, int kSubm>
JA_DEVICE void topksoftmax(void* T, void* W, const void* A, uint32_t batch, uint32_t expert,
                           uint32_t topk, uint32_t renormalize, uint32_t out_stride, int experts,
                           int chosen) {
  const int stored = static_cast<int>(topk) < chosen ? static_cast<int>(topk) : chosen;
  const int64_t first = static_cast<int64_t>(block_id()) * kSubm;
  for (int i = 0; i < kSubm; ++i) {
    const int64_t row = first + i;
    if (row >= batch) return;  // the same for every thread of the block
    const auto* in = static_cast<const typename E::Storage*>(A) + row * expert;
    const int64_t out = row * out_stride;
    topk_softmax_row<E>(in, experts, chosen, stored, static_cast<int>(renormalize),
                        reinterpret_cast<float*>(static_cast<unsigned char*>(W) + out),
                        reinterpret_cast<int*>(static_cast<unsigned char*>(T) + out));
  }
}

}  // namespace ja::twin_topk

// AITER's symbols are mangled C++ names declared here as extern "C" identifiers, which the
// language reserves (leading underscore and capital).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then
// padding parameters named pad<n> (which our metadata check skips).
#define JA_TOPK_PTR_SLOT(type, name, n) type name, [[maybe_unused]] uint64_t pad##n
#define JA_TOPK_U32_SLOT(name, a, b, c)                                              \
  uint32_t name, [[maybe_unused]] uint32_t pad##a, [[maybe_unused]] uint32_t pad##b, \
      [[maybe_unused]] uint32_t pad##c

#define JA_TOPKSOFTMAX_ELEM_fp32 ja::F32
#define JA_TOPKSOFTMAX_ELEM_bf16 ja::BF16
#define JA_TOPKSOFTMAX_TWIN(symbol, co, subm, e, k, dtype, g942, g950)                            \
  JA_KERNEL_BOUNDED(256)                                                                          \
  void symbol(JA_TOPK_PTR_SLOT(void*, T, 0), JA_TOPK_PTR_SLOT(void*, W, 1),                       \
              JA_TOPK_PTR_SLOT(const void*, A, 2), JA_TOPK_U32_SLOT(batch, 3, 4, 5),              \
              JA_TOPK_U32_SLOT(expert, 6, 7, 8), JA_TOPK_U32_SLOT(topk, 9, 10, 11),               \
              JA_TOPK_U32_SLOT(renormalize, 12, 13, 14),                                          \
              JA_TOPK_U32_SLOT(out_stride, 15, 16, 17)) {                                         \
    ja::wait_for_prior_grids();                                                                   \
    ja::allow_dependent_grids();                                                                  \
    ja::twin_topk::topksoftmax<JA_TOPKSOFTMAX_ELEM_##dtype, subm>(T, W, A, batch, expert, topk,   \
                                                                  renormalize, out_stride, e, k); \
  }

static_assert(jax_aiter::kernels::aiter_topksoftmax::kBlockThreads == 256);
static_assert(jax_aiter::kernels::moe_routing::kTopkMaxThreads >= 256);
JAX_AITER_TOPKSOFTMAX_ROWS(JA_TOPKSOFTMAX_TWIN)
