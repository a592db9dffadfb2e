// FP4 GEMM's decode + validate + plan for a decode-sized call (M = 32, as gemm_fp4 pads it, N = K =
// 4096): Arg 0 plans AITER's tier for gfx950, Arg 1 the portable tier for sm_90. The op's
// workspace output is sized by its own rule (the decode kernel's split partials, M <= 16).
#include "bench_handler.hpp"

#include "jax_aiter/ffi/gemm_fp4.hpp"

namespace {

void BM_GemmFp4DecodeValidatePlan(benchmark::State& state) {
  ja::ops::GemmFp4Params sizing;
  int64_t a[2] = {32, 2048}, b[2] = {4096, 2048};
  sizing.a = ja::ops::Tensor::over(nullptr, ja::DType::kU8, a);
  sizing.b = ja::ops::Tensor::over(nullptr, ja::DType::kU8, b);
  const int64_t ws = ja::ops::GemmFp4::workspace_bytes(sizing);
  Buffers bufs{{XLA_FFI_DataType_U8, {32, 2048}},   {XLA_FFI_DataType_U8, {4096, 2048}},
               {XLA_FFI_DataType_U8, {256, 128}},   {XLA_FFI_DataType_U8, {4096, 128}},
               {XLA_FFI_DataType_BF16, {32, 4096}}, {XLA_FFI_DataType_U8, {ws + 1}}};
  GenericCall<ja::ops::GemmFp4> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                     {bufs.at(4), bufs.at(5)},
                                     gemm_attrs("b_layout", "16x16")};
  decode_validate_plan(state, call, state.range(0) == 0 ? kGfx950 : kSm90);
}
BENCHMARK(BM_GemmFp4DecodeValidatePlan)->Arg(0)->Arg(1);

}  // namespace
