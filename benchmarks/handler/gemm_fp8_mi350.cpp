// MI350 FP8 GEMM's decode + validate + plan for a decode-sized call (M = 16, N = K = 4096): Arg 0
// plans AITER's tier for gfx950, Arg 1 the portable tier for sm_90.
#include "bench_handler.hpp"

#include "jax_aiter/ffi/gemm_fp8_mi350.hpp"

namespace {

void BM_GemmFp8Mi350DecodeValidatePlan(benchmark::State& state) {
  const ja::Target& t = state.range(0) == 0 ? kGfx950 : kSm90;
  Buffers bufs{{fp8_for(t), {16, 4096}},
               {fp8_for(t), {4096, 4096}},
               {XLA_FFI_DataType_F32, {32, 16}},
               {XLA_FFI_DataType_F32, {32, 32}},
               {XLA_FFI_DataType_BF16, {16, 4096}}};
  GenericCall<ja::ops::GemmFp8Mi350> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                          {bufs.at(4)},
                                          gemm_attrs("b_layout", "16x16")};
  decode_validate_plan(state, call, t);
}
BENCHMARK(BM_GemmFp8Mi350DecodeValidatePlan)->Arg(0)->Arg(1);

}  // namespace
