// FlatMM FP8 GEMM's decode + validate + plan for a decode-sized call (M = 16, N = K = 4096): Arg 0
// plans AITER's tier for gfx942, Arg 1 the portable tier for sm_90.
#include "bench_handler.hpp"

#include "jax_aiter/ffi/flatmm_fp8.hpp"

namespace {

void BM_FlatmmFp8DecodeValidatePlan(benchmark::State& state) {
  const ja::Target& t = state.range(0) == 0 ? kGfx942 : kSm90;
  Buffers bufs{{fp8_for(t), {16, 4096}},
               {fp8_for(t), {4096, 4096}},
               {XLA_FFI_DataType_F32, {32, 16}},
               {XLA_FFI_DataType_F32, {32, 32}},
               {XLA_FFI_DataType_F16, {16, 4096}}};
  GenericCall<ja::ops::FlatmmFp8> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                       {bufs.at(4)},
                                       gemm_attrs("w_layout", "flatmm")};
  decode_validate_plan(state, call, t);
}
BENCHMARK(BM_FlatmmFp8DecodeValidatePlan)->Arg(0)->Arg(1);

}  // namespace
