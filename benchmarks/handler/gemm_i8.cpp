// INT8 GEMM's decode + validate + plan for a decode-sized call (M = 16, N = K = 4096): Arg 0
// plans AITER's tier for gfx942, Arg 1 the portable tier for sm_90 (which splits K into its
// workspace accumulator).
#include "bench_handler.hpp"

#include "jax_aiter/ffi/gemm_i8.hpp"

namespace {

void BM_GemmI8DecodeValidatePlan(benchmark::State& state) {
  ja::ops::GemmI8Params sizing;
  int64_t a[2] = {16, 4096}, b[2] = {4096, 4096};
  sizing.a = ja::ops::Tensor::over(nullptr, ja::DType::kI8, a);
  sizing.b = ja::ops::Tensor::over(nullptr, ja::DType::kI8, b);
  const int64_t ws = ja::ops::GemmI8::workspace_bytes(sizing);
  Buffers bufs{{XLA_FFI_DataType_S8, {16, 4096}},  {XLA_FFI_DataType_S8, {4096, 4096}},
               {XLA_FFI_DataType_F32, {16, 1}},    {XLA_FFI_DataType_F32, {1, 4096}},
               {XLA_FFI_DataType_U8, {0}},         {XLA_FFI_DataType_BF16, {16, 4096}},
               {XLA_FFI_DataType_U8, {ws / 4 + 1}}};
  GenericCall<ja::ops::GemmI8> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3), bufs.at(4)},
                                    {bufs.at(5), bufs.at(6)},
                                    gemm_attrs("b_layout", "16x16")};
  decode_validate_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_GemmI8DecodeValidatePlan)->Arg(0)->Arg(1);

}  // namespace
