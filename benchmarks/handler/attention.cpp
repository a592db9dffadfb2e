// Attention's decode + validate + plan for one target (the execute path minus the launches): the
// ASM tier planned for gfx942 (AITER's v3 kernels, memsets and carved workspace in the backward)
// and the portable tier for sm_90. Batch b=2 s=512 hq=16 hk=4 d=128 causal, bf16.
#include "bench_handler.hpp"

#include "jax_aiter/ffi/attention.hpp"
#include "jax_aiter/ops/attention.hpp"

namespace {

Attrs attention_attrs(bool backward) {
  std::vector<std::pair<std::string_view, ja::ffi::AttrValue>> a{
      {"softmax_scale", ja::ffi::AttrValue::f32("F32", 0.088)},
      {"causal", ja::ffi::AttrValue::boolean("PRED", true)},
      {"window_left", ja::ffi::AttrValue::i64("S64", -1)},
      {"window_right", ja::ffi::AttrValue::i64("S64", -1)},
      {"dropout_p", ja::ffi::AttrValue::f32("F32", 0.0)},
      {"max_seqlen_q", ja::ffi::AttrValue::i64("S64", 0)},
      {"max_seqlen_k", ja::ffi::AttrValue::i64("S64", 0)},
      {"bf16_cvt", ja::ffi::AttrValue::i64("S64", 1)}};
  if (backward) {
    a.emplace_back("deterministic", ja::ffi::AttrValue::boolean("PRED", false));
    a.emplace_back("atomic32", ja::ffi::AttrValue::boolean("PRED", true));
  }
  return a;
}

void BM_AttnFwdDecodeValidatePlan(benchmark::State& state) {
  constexpr auto kBf16 = XLA_FFI_DataType_BF16;
  Buffers b{
      {kBf16, {2, 512, 16, 128}}, {kBf16, {2, 512, 4, 128}},           {kBf16, {2, 512, 4, 128}},
      {XLA_FFI_DataType_U8, {0}}, {XLA_FFI_DataType_U8, {0}},          {XLA_FFI_DataType_U8, {0}},
      {XLA_FFI_DataType_U8, {0}}, {XLA_FFI_DataType_U8, {0}},          {XLA_FFI_DataType_U8, {0}},
      {XLA_FFI_DataType_U8, {0}}, {XLA_FFI_DataType_U8, {0}},          {XLA_FFI_DataType_U8, {0}},
      {kBf16, {2, 512, 16, 128}}, {XLA_FFI_DataType_F32, {2, 16, 512}}};
  GenericCall<ja::ops::FlashAttnFwd> call{{b.at(0), b.at(1), b.at(2), b.at(3), b.at(4), b.at(5),
                                           b.at(6), b.at(7), b.at(8), b.at(9), b.at(10), b.at(11)},
                                          {b.at(12), b.at(13)},
                                          attention_attrs(false)};
  decode_validate_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_AttnFwdDecodeValidatePlan)->Arg(0)->Arg(1);

void BM_AttnBwdDecodeValidatePlan(benchmark::State& state) {
  constexpr auto kBf16 = XLA_FFI_DataType_BF16;
  constexpr auto kU8 = XLA_FFI_DataType_U8;
  ja::ops::FlashAttnBwdParams sizing;  // the workspace the op asks for, as Python sizes it
  int64_t q[4] = {2, 512, 16, 128}, kv[4] = {2, 512, 4, 128}, lse[3] = {2, 16, 512}, none[1] = {0};
  sizing.dout = sizing.out = ja::ops::Tensor::over(nullptr, ja::DType::kBF16, q);
  sizing.q = sizing.dq = ja::ops::Tensor::over(nullptr, ja::DType::kBF16, q);
  sizing.k = sizing.v = sizing.dk = sizing.dv =
      ja::ops::Tensor::over(nullptr, ja::DType::kBF16, kv);
  sizing.lse = ja::ops::Tensor::over(nullptr, ja::DType::kF32, lse);
  sizing.dbias = ja::ops::Tensor::over(nullptr, ja::DType::kF32, none);
  sizing.opt.causal = true;
  const int64_t ws = ja::ops::FlashAttnBwd::workspace_bytes(sizing);
  Buffers b{{kBf16, {2, 512, 16, 128}},
            {kBf16, {2, 512, 16, 128}},
            {kBf16, {2, 512, 4, 128}},
            {kBf16, {2, 512, 4, 128}},
            {kBf16, {2, 512, 16, 128}},
            {XLA_FFI_DataType_F32, {2, 16, 512}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kU8, {0}},
            {kBf16, {2, 512, 16, 128}},
            {kBf16, {2, 512, 4, 128}},
            {kBf16, {2, 512, 4, 128}},
            {XLA_FFI_DataType_F32, {0}},
            {kU8, {ws / 4}}};
  GenericCall<ja::ops::FlashAttnBwd> call{{b.at(0), b.at(1), b.at(2), b.at(3), b.at(4), b.at(5),
                                           b.at(6), b.at(7), b.at(8), b.at(9), b.at(10), b.at(11)},
                                          {b.at(12), b.at(13), b.at(14), b.at(15), b.at(16)},
                                          attention_attrs(true)};
  decode_validate_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_AttnBwdDecodeValidatePlan)->Arg(0)->Arg(1);

}  // namespace
