// Grouped GEMM's decode + validate + plan for an MoE layer's expert GEMM (M = 512 tokens x top-8,
// 8 local experts, N = 512, K = 1024: small enough for the benchmark's ones-filled arena; the
// plan does not depend on the sizes' magnitude): Arg 0 plans for sm_90, Arg 1 for gfx942. The
// forward, its dgrad (transpose_w) and the wgrad.
#include "bench_handler.hpp"

#include "jax_aiter/ffi/grouped_gemm.hpp"

namespace {

constexpr int64_t kM = 4096, kG = 8, kN = 512, kK = 1024;

const ja::Target& target_of(const benchmark::State& state) {
  return state.range(0) == 0 ? kSm90 : kGfx942;
}

void BM_GroupedGemmValidatePlan(benchmark::State& state) {
  const bool dgrad = state.range(1) != 0;
  ja::ops::GroupedGemmParams sizing;
  sizing.x = ja::ops::Tensor::over(nullptr, ja::DType::kBF16, {kM, dgrad ? kN : kK});
  sizing.w = ja::ops::Tensor::over(nullptr, ja::DType::kBF16, {kG, kN, kK});
  const int64_t ws = ja::ops::GroupedGemm::workspace_bytes(sizing);
  Buffers bufs{{XLA_FFI_DataType_BF16, {kM, dgrad ? kN : kK}},
               {XLA_FFI_DataType_BF16, {kG, kN, kK}},
               {XLA_FFI_DataType_S32, {kG}},
               {XLA_FFI_DataType_U8, {0}},
               {XLA_FFI_DataType_U8, {0}},
               {XLA_FFI_DataType_BF16, {kM, dgrad ? kK : kN}},
               {XLA_FFI_DataType_U8, {ws}}};
  GenericCall<ja::ops::GroupedGemm> call{
      {bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3), bufs.at(4)},
      {bufs.at(5), bufs.at(6)},
      {{"transpose_w", ja::ffi::AttrValue::boolean("PRED", dgrad)}}};
  decode_validate_plan(state, call, target_of(state));
}
BENCHMARK(BM_GroupedGemmValidatePlan)->Args({0, 0})->Args({1, 0})->Args({0, 1});

void BM_GroupedGemmWgradValidatePlan(benchmark::State& state) {
  Buffers bufs{{XLA_FFI_DataType_BF16, {kM, kN}},
               {XLA_FFI_DataType_BF16, {kM, kK}},
               {XLA_FFI_DataType_S32, {kG}},
               {XLA_FFI_DataType_BF16, {kG, kN, kK}},
               {XLA_FFI_DataType_U8, {ja::ops::grouped_schedule_bytes(kG, 0)}}};
  GenericCall<ja::ops::GroupedGemmWgrad> call{
      {bufs.at(0), bufs.at(1), bufs.at(2)}, {bufs.at(3), bufs.at(4)}, {}};
  decode_validate_plan(state, call, target_of(state));
}
BENCHMARK(BM_GroupedGemmWgradValidatePlan)->Arg(0)->Arg(1);

}  // namespace
