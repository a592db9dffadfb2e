// Facts of our MoE routing kernels that the kernel source (kernels_co/moe_routing.kernel.cpp), the
// host twins and the plans (kernels/moe_routing.hpp, ops/moe_routing.hpp) all read, so they cannot
// drift. Plain C++ with no includes: nvcc and clang-22 (-nogpuinc) compile it into the kernels.
//
// AITER's sorted layout (restated from AITER at e4048607a5: aiter/fused_moe.py
// _moe_sorting_impl, op_tests/test_moe_sorting.py run_torch_moe_sorting and
// csrc/include/moe_sorting_opus.h, the MOE_SORTING_MOCK_ID packing and its padding loop):
//   a row of sorted_token_ids holds (topk_slot << 24) | token (token in the low 24 bits);
//   a padding row holds (topk << 24) | tokens (slot and token one past their ranges), weight 0;
//   experts follow in id order, each padded to a multiple of block_m rows; an expert with no
//   token gets no block; tokens increase within an expert.
#pragma once

namespace jax_aiter::kernels::moe_routing {

inline constexpr int kMaxExperts = 4096;     // topk_softmax keeps a row's logits in shared memory
inline constexpr int kTopkMaxThreads = 256;  // threads of a top-k softmax block (one row a block)
// Experts a top-k thread owns at most (kMaxExperts / kTopkMaxThreads): its "taken" bits fit a word.
inline constexpr int kTopkPerThread = kMaxExperts / kTopkMaxThreads;
static_assert(kTopkPerThread <= 32);

// Sorting: the (token, slot) entries in row-major order are cut into tiles of kSortTile entries,
// one block of kSortTile threads each; the scan is one block of kScanThreads.
inline constexpr int kSortTile = 256;
inline constexpr int kScanThreads = 256;

// The packed id of AITER's sorted_token_ids: (slot << kTokenBits) | token, 24 bits of token and 8
// of top-k slot (as uint32: a slot from 128 up sets the i32's sign bit, as in AITER).
inline constexpr int kTokenBits = 24;
inline constexpr int kMaxTokens = (1 << kTokenBits) - 1;  // the padding row's token is `tokens`
inline constexpr int kMaxTopk = 255;                      // the padding row's slot is `topk`

}  // namespace jax_aiter::kernels::moe_routing

// The top-k softmax kernels built, one X(tag, Elem) per logits dtype.
#define JAX_AITER_TOPK_SOFTMAX_DTYPES(X) X(bf16, BF16) X(f16, F16) X(f32, F32)
