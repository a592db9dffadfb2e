// FP8 block-scale GEMM's decode + validate + plan for a decode-sized call (M = 16, N = K = 4096):
// Arg 0 plans AITER's fp8gemm_blockscale tier for gfx942 (bf16 out), Arg 1 its FlatMM tier for
// gfx942 (f16 out: the scale transpose, then AITER's kernel), Arg 2 the portable tier for sm_90.
#include "bench_handler.hpp"

#include "jax_aiter/ffi/gemm_fp8_blockscale.hpp"

namespace {

void BM_GemmFp8BlockscaleDecodeValidatePlan(benchmark::State& state) {
  const ja::Target& t = state.range(0) == 2 ? kSm90 : kGfx942;
  const XLA_FFI_DataType out = state.range(0) == 1 ? XLA_FFI_DataType_F16 : XLA_FFI_DataType_BF16;
  Buffers bufs{{fp8_for(t), {16, 4096}},
               {fp8_for(t), {4096, 4096}},
               {XLA_FFI_DataType_F32, {32, 16}},
               {XLA_FFI_DataType_F32, {32, 32}},
               {out, {16, 4096}},
               {XLA_FFI_DataType_U8, {16384}}};
  GenericCall<ja::ops::GemmFp8Blockscale> call{{bufs.at(0), bufs.at(1), bufs.at(2), bufs.at(3)},
                                               {bufs.at(4), bufs.at(5)},
                                               gemm_attrs("b_layout", "16x16")};
  decode_validate_plan(state, call, t);
}
BENCHMARK(BM_GemmFp8BlockscaleDecodeValidatePlan)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
