// Host twins of AITER's top-k softmax ASM kernels (kernels/aiter/topksoftmax.hpp): one per row,
// reading the very bytes the plan packed (AITER's 128-byte struct) and covering exactly the rows
// its launch grid gives it, so a wrong pointer, stride, count or grid in a plan shows up as a wrong
// or unwritten output.
//
// The contract, as the twins honour it (AITER at e4048607a535, csrc/py_itfs_cu/asm_topksoftmax.cu;
// the code objects' disassembly for what the launcher leaves implicit):
//  - workgroup g takes token rows [g subm, (g + 1) subm); rows at or past `batch` are neither read
//    nor written (the kernels' buffer resources end there);
//  - a row is `expert` logits apart (A is dense), of the row's dtype; the kernel is built for
//    exactly the row's num_experts and topk: it chooses that many (by the op's rule: the k largest
//    logits, ties to the lower id; softmax in f32) and stores `topk` of them;
//  - row r's ids go to T + r out_stride bytes, its weights to W + r out_stride: exp(l - max) over
//    the row's sum, or with renormalize over the chosen ones' sum.
// The arithmetic is the portable kernel's (host_twins/moe_routing.hpp); AITER's kernels compute
// exp(l) without subtracting the row's max (docs/ops/moe.md says what that changes).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/host_twins/moe_routing.hpp"
#include "jax_aiter/kernels/aiter/topksoftmax.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace jax_aiter::host_twins {

namespace aiter_topksoftmax_detail {

template <DType T>
void run_row(const kernels::AiterTopksoftmaxArgs& a, const kernels::AiterTopksoftmaxRow& r,
             int64_t row) {
  std::array<float, kernels::moe_routing::kMaxExperts> w{};
  std::array<int32_t, kernels::moe_routing::kMaxExperts> ids{};
  moe_routing_detail::topk_softmax_row<T>(a.A.value, row, a.expert.value, r.experts, r.topk,
                                          a.renormalize.value != 0, w.data(), ids.data());
  const int64_t stored = std::min<int64_t>(a.topk.value, r.topk);
  auto* t_row = static_cast<std::byte*>(a.T.value) + row * int64_t{a.out_stride.value};
  auto* w_row = static_cast<std::byte*>(a.W.value) + row * int64_t{a.out_stride.value};
  for (int64_t i = 0; i < stored; ++i) {
    reinterpret_cast<int32_t*>(t_row)[i] = ids[i];
    reinterpret_cast<float*>(w_row)[i] = w[i];
  }
}

template <size_t I>
void aiter_topksoftmax(const kernels::KernelArgs& packed, kernels::Dim3 grid, kernels::Dim3) {
  constexpr const kernels::AiterTopksoftmaxRow& r = kernels::kAiterTopksoftmaxRows[I];
  const auto a = packed.unpack<kernels::AiterTopksoftmaxArgs>();
  const int64_t batch = a.batch.value;
  for (int64_t g = 0; g < int64_t{grid.x}; ++g) {
    for (int64_t row = g * r.subm; row < (g + 1) * r.subm && row < batch; ++row) {
      if constexpr (r.dtype == DType::kBF16) {
        run_row<DType::kBF16>(a, r, row);
      } else {
        run_row<DType::kF32>(a, r, row);
      }
    }
  }
}

// One twin per row (each row is one symbol, the same on both archs).
template <size_t... I>
bool register_rows(std::index_sequence<I...>) {
  (runtime::HostTwins::add(kernels::kAiterTopksoftmaxRows[I].kernel.symbol, &aiter_topksoftmax<I>),
   ...);
  return true;
}
inline const bool kRegistered =
    register_rows(std::make_index_sequence<std::size(kernels::kAiterTopksoftmaxRows)>{});

}  // namespace aiter_topksoftmax_detail

}  // namespace jax_aiter::host_twins
