// MoE routing: decode + validate + plan of both targets at DeepSeek-V3's routing shape (4096
// tokens, 256 experts, top-8, block_m 32; Arg 0 plans for gfx942, Arg 1 for sm_90), and the real
// handlers on the Host backend (the twins run: a decode-sized call, 16 tokens).
#include "bench_handler.hpp"

#include "jax_aiter/ffi/moe_routing.hpp"
#include "jax_aiter/host_twins/moe_routing.hpp"
#include "jax_aiter/runtime/host.hpp"

JAX_AITER_DEFINE_HANDLER(bench_topk_softmax_cpu, jax_aiter::ops::TopkSoftmax,
                         jax_aiter::runtime::Host);
JAX_AITER_DEFINE_HANDLER(bench_moe_sorting_cpu, jax_aiter::ops::MoeSorting,
                         jax_aiter::runtime::Host);

namespace {

constexpr int64_t kTokens = 4096, kExperts = 256, kTopk = 8, kBlockM = 32;

// The sort's sizes and workspace for a call, by the op's own rules.
struct SortSizes {
  int64_t rows, blocks, workspace;
};
SortSizes sort_sizes(int64_t tokens) {
  const int64_t rows = ja::ops::moe_sorting_padded_rows(tokens, kTopk, kExperts, kBlockM);
  ja::ops::MoeSorting::Params p;
  int64_t dims[2] = {tokens, kTopk};
  p.ids = ja::ops::Tensor::over(nullptr, ja::DType::kI32, dims);
  p.num_experts = kExperts;
  p.block_m = kBlockM;
  return {rows, ja::ops::moe_sorting_blocks(rows, kBlockM),
          ja::ops::MoeSorting::workspace_bytes(p)};
}

void BM_TopkSoftmaxDecodeValidatePlan(benchmark::State& state) {
  Buffers bufs{{XLA_FFI_DataType_BF16, {kTokens, kExperts}},
               {XLA_FFI_DataType_F32, {kTokens, kTopk}},
               {XLA_FFI_DataType_S32, {kTokens, kTopk}}};
  GenericCall<ja::ops::TopkSoftmax> call{
      {bufs.at(0)},
      {bufs.at(1), bufs.at(2)},
      {{"renormalize", ja::ffi::AttrValue::boolean("PRED", true)}}};
  decode_validate_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_TopkSoftmaxDecodeValidatePlan)->Arg(0)->Arg(1);

void BM_MoeSortingDecodeValidatePlan(benchmark::State& state) {
  const SortSizes s = sort_sizes(kTokens);
  Buffers bufs{{XLA_FFI_DataType_S32, {kTokens, kTopk}}, {XLA_FFI_DataType_F32, {kTokens, kTopk}},
               {XLA_FFI_DataType_S32, {s.rows}},         {XLA_FFI_DataType_F32, {s.rows}},
               {XLA_FFI_DataType_S32, {s.blocks}},       {XLA_FFI_DataType_S32, {2}},
               {XLA_FFI_DataType_U8, {s.workspace}}};
  GenericCall<ja::ops::MoeSorting> call{
      {bufs.at(0), bufs.at(1)},
      {bufs.at(2), bufs.at(3), bufs.at(4), bufs.at(5), bufs.at(6)},
      {{"num_experts", ja::ffi::AttrValue::i64("S64", kExperts)},
       {"block_m", ja::ffi::AttrValue::i64("S64", kBlockM)}}};
  decode_validate_plan(state, call, state.range(0) == 0 ? kGfx942 : kSm90);
}
BENCHMARK(BM_MoeSortingDecodeValidatePlan)->Arg(0)->Arg(1);

void BM_TopkSoftmaxHandler(benchmark::State& state) {
  const int64_t t = state.range(0);
  Frame f;
  f.storage.reserve(3);
  f.frame.arg(XLA_FFI_DataType_F32, {t, kExperts}, f.buffer(t * kExperts))
      .ret(XLA_FFI_DataType_F32, {t, kTopk}, f.buffer(t * kTopk))
      .ret(XLA_FFI_DataType_S32, {t, kTopk}, f.buffer(t * kTopk))
      .attr("renormalize", true);
  XLA_FFI_CallFrame* frame = f.frame.get();
  measure(state, [&] { return call_ok(bench_topk_softmax_cpu, frame); });
}
BENCHMARK(BM_TopkSoftmaxHandler)->Arg(16);

void BM_MoeSortingHandler(benchmark::State& state) {
  const int64_t t = state.range(0);
  const SortSizes s = sort_sizes(t);
  Frame f;
  f.storage.reserve(7);
  auto* ids = reinterpret_cast<int32_t*>(f.buffer(t * kTopk));
  for (int64_t i = 0; i < t * kTopk; ++i) ids[i] = static_cast<int32_t>(i * 37 % kExperts);
  f.frame.arg(XLA_FFI_DataType_S32, {t, kTopk}, ids)
      .arg(XLA_FFI_DataType_F32, {t, kTopk}, f.buffer(t * kTopk))
      .ret(XLA_FFI_DataType_S32, {s.rows}, f.buffer(s.rows))
      .ret(XLA_FFI_DataType_F32, {s.rows}, f.buffer(s.rows))
      .ret(XLA_FFI_DataType_S32, {s.blocks}, f.buffer(s.blocks))
      .ret(XLA_FFI_DataType_S32, {2}, f.buffer(2))
      .ret(XLA_FFI_DataType_U8, {s.workspace}, f.buffer(s.workspace / 4 + 1))
      .attr("num_experts", kExperts)
      .attr("block_m", kBlockM);
  XLA_FFI_CallFrame* frame = f.frame.get();
  measure(state, [&] { return call_ok(bench_moe_sorting_cpu, frame); });
}
BENCHMARK(BM_MoeSortingHandler)->Arg(16);

}  // namespace
