// aiter.fused_moe through its FFI handler on the Host backend (no XLA, no GPU): one call planned
// for each arch and run by the fmoe rows' host twins, out poisoned first, against a value worked
// out by hand; then every bad operand and attribute, each error naming the op, the operand or
// attribute, what was expected and what came. (Values over every list and row: test_fused_moe_twin
// and tests/python/test_fused_moe_asm.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gemm_ffi_testing.hpp"
#include "jax_aiter/ffi/fused_moe.hpp"
#include "jax_aiter/host_twins/aiter_fmoe.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;
using ja::gemm_testing::Fails;

JAX_AITER_DEFINE_HANDLER(test_fused_moe_cpu, ops::FusedMoe, ja::runtime::Host);

namespace {

// e4m3 codes of 0.5 (fn: exponent 6 of bias 7; fnuz: 7 of bias 8).
constexpr unsigned char kHalfFn = 0x30, kHalfFnuz = 0x38;

// A per-token fp8 call whose every product is known: x, w1, w2 all 0.5, x_scale 4 / H and
// w1_scale 1 (gate = up = 1), w2_scale 2 / I (the down product of h is h), token t routed to
// experts t % E and (t + 1) % E with weights 0.25 and 0.75: out = silu(1) (or gelu(1)) exactly,
// then rounded to bf16 once per top-k slot.
struct MoeCall {
  int64_t t, e, k = 2, h, i, block_m = 32, rows, blocks;
  bool fnuz;
  Array x, w1, w2, sorted_ids, sorted_weights, sorted_experts, num_valid, x_scale, w1_scale,
      w2_scale, out;
  std::string activation = "silu", quant = "fp8_per_token", layout = "16x16";
  int64_t topk_attr = 2;

  MoeCall(int64_t t_, int64_t e_, int64_t h_, int64_t i_, bool fnuz_)
      : t(t_),
        e(e_),
        h(h_),
        i(i_),
        rows(t_ * 2 + e_ * 32 - 2),
        blocks((rows + 31) / 32),
        fnuz(fnuz_),
        x(fp8(), {t_, h_}),
        w1(fp8(), {e_, 2 * i_, h_}),
        w2(fp8(), {e_, h_, i_}),
        sorted_ids(DType::kI32, {rows}),
        sorted_weights(DType::kF32, {rows}),
        sorted_experts(DType::kI32, {blocks}),
        num_valid(DType::kI32, {2}),
        x_scale(DType::kF32, {t_, 1}),
        w1_scale(DType::kF32, {e_, 2 * i_, 1}),
        w2_scale(DType::kF32, {e_, h_, 1}),
        out(DType::kBF16, {t_, h_}) {
    const unsigned char half = fnuz ? kHalfFnuz : kHalfFn;
    for (Array* a : {&x, &w1, &w2}) std::fill(a->bytes.begin(), a->bytes.end(), half);
    for (int64_t r = 0; r < t; ++r) x_scale.set(r, 4.0 / static_cast<double>(h));
    for (int64_t r = 0; r < w1_scale.size(); ++r) w1_scale.set(r, 1.0);
    for (int64_t r = 0; r < w2_scale.size(); ++r) w2_scale.set(r, 2.0 / static_cast<double>(i));
    // AITER's layout: experts in order, tokens ascending, each expert padded to whole blocks.
    std::vector<int32_t> ids(rows, (2 << 24) | static_cast<int32_t>(t));
    std::vector<float> weights(rows, 0.f);
    std::vector<int32_t> experts(blocks, -1);
    int64_t at = 0;
    for (int64_t ex = 0; ex < e; ++ex) {
      const int64_t first = at;
      for (int64_t tok = 0; tok < t; ++tok) {
        for (int64_t s = 0; s < 2; ++s) {
          if ((tok + s) % e != ex) continue;
          ids[at] = static_cast<int32_t>((s << 24) | tok);
          weights[at++] = s == 0 ? 0.25f : 0.75f;
        }
      }
      if (at == first) continue;
      at = (at + 31) / 32 * 32;
      for (int64_t b = first / 32; b < at / 32; ++b) experts[b] = static_cast<int32_t>(ex);
    }
    std::memcpy(sorted_ids.data(), ids.data(), ids.size() * 4);
    std::memcpy(sorted_weights.data(), weights.data(), weights.size() * 4);
    std::memcpy(sorted_experts.data(), experts.data(), experts.size() * 4);
    const int32_t valid[2] = {static_cast<int32_t>(at), static_cast<int32_t>(t)};
    std::memcpy(num_valid.data(), valid, 8);
    out.poison();
  }
  DType fp8() const { return fnuz ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN; }

  fake::CallFrame frame(const std::string& arch, std::string kernel = "") {
    fake::CallFrame f;
    for (Array* a : {&x, &w1, &w2, &sorted_ids, &sorted_weights, &sorted_experts, &num_valid,
                     &x_scale, &w1_scale, &w2_scale}) {
      if (a->dtype == DType::kU8 && a->size() == 0) {
        fake::add_absent(f);
      } else {
        fake::add_arg(f, *a);
      }
    }
    fake::add_ret(f, out);
    f.string_attr("w_layout", layout);
    f.attr("topk", topk_attr);
    f.attr("block_m", block_m);
    f.string_attr("activation", activation);
    f.string_attr("quant", quant);
    f.string_attr("kernel", kernel);
    f.string_attr("tier", "asm");
    if (!arch.empty()) f.string_attr("asm_arch", arch);
    return f;
  }
  fake::CallResult call(const std::string& arch = "gfx942", std::string kernel = "") {
    fake::CallFrame f = frame(arch, std::move(kernel));
    return fake::call(test_fused_moe_cpu, f);
  }
};

// An absent optional operand (u8[0]).
Array absent() { return Array(DType::kU8, {0}); }

TEST(FusedMoeHandler, RunsThroughTheTwinsOnEachArch) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    for (const char* act : {"silu", "gelu"}) {
      MoeCall c(37, 5, 256, 256, std::string(arch) == "gfx942");
      c.activation = act;
      const auto r = c.call(arch);
      ASSERT_TRUE(r.ok()) << arch << " " << r.message;
      const double g = 1.0;
      const double want = std::string(act) == "silu" ? g / (1 + std::exp(-g))
                                                     : 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
      for (int64_t n = 0; n < c.out.size(); ++n) {
        ASSERT_NEAR(c.out.at(n), want, 2 * want * 0x1p-8) << arch << " " << act << " " << n;
      }
    }
  }
}

TEST(FusedMoeHandler, EveryBadOperandIsNamed) {
  auto with = [](auto mutate, const char* arch = "gfx942") {
    MoeCall c(8, 4, 256, 256, true);
    mutate(c);
    return c.call(arch);
  };
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.x = Array(DType::kF8E4M3FNUZ, {8}); }),
                    {"aiter.fused_moe: operand x:", "expected [T, H]", "got f8_e4m3fnuz[8]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) {
                      c.x = Array(DType::kBF16, {8, 256});
                    }),
                    {"operand x:", "all fp8 (per-token quantization)", "got x bf16[8,256]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) {
                      c.w1 = Array(DType::kF8E4M3FNUZ, {4, 512, 128});
                    }),
                    {"operand w1:", "expected [E, 2I, 256] (H from x)", "[4,512,128]"}));
  EXPECT_TRUE(
      Fails(with([](MoeCall& c) {
              c.w2 = Array(DType::kF8E4M3FNUZ, {4, 256, 128});
            }),
            {"operand w2:", "expected f8_e4m3fnuz[4,256,256]", "got f8_e4m3fnuz[4,256,128]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.sorted_ids = Array(DType::kF32, {c.rows}); }),
                    {"operand sorted_token_ids:", "expected i32[S]", "got f32["}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.sorted_weights = Array(DType::kF32, {3}); }),
                    {"operand sorted_weights:", "(S from sorted_token_ids)", "got f32[3]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.sorted_experts = Array(DType::kI32, {2}); }),
                    {"operand sorted_expert_ids:", "(ceil(S / block_m))", "got i32[2]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.num_valid = Array(DType::kI32, {3}); }),
                    {"operand num_valid_ids:", "expected i32[1] or i32[2]", "got i32[3]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.x_scale = Array(DType::kF32, {8}); }),
                    {"operand x_scale:", "expected f32[8,1]", "got f32[8]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.w1_scale = absent(); }),
                    {"operand w1_scale:", "expected f32[4,512,1]", "got none"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) {
                      c.w2_scale = Array(DType::kBF16, {4, 256, 1});
                    }),
                    {"operand w2_scale:", "expected f32[4,256,1]", "got bf16[4,256,1]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) {
                      c.out = Array(DType::kF32, {8, 256});
                    }),
                    {"operand out:", "expected bf16 or f16 [8,256]", "got f32[8,256]"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) {
                      c.w2 = Array(DType::kF8E4M3FNUZ, {4, 256, 0});
                      c.w1 = Array(DType::kF8E4M3FNUZ, {4, 0, 256});
                      c.w1_scale = Array(DType::kF32, {4, 0, 1});
                    }),
                    {"operand x:", "expected a non-empty problem", "I=0"}));
  // The arch's fp8 format: gfx950 kernels read e4m3fn.
  EXPECT_TRUE(Fails(with([](MoeCall&) {}, "gfx950"),
                    {"aiter.fused_moe: no tier runs this call (asm (fmoe):", "e4m3fn"}));
}

TEST(FusedMoeHandler, EveryBadAttributeIsNamed) {
  auto with = [](auto mutate, std::string kernel = "") {
    MoeCall c(8, 4, 256, 256, true);
    mutate(c);
    return c.call("gfx942", std::move(kernel));
  };
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.activation = "relu"; }),
                    {"aiter.fused_moe: attribute activation: expected 'silu' or 'gelu', got "
                     "'relu'"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.quant = "int4"; }),
                    {"aiter.fused_moe: attribute quant: expected 'none', 'fp8_per_token', "
                     "'int8_per_token' or 'fp8_block_scale', got 'int4'"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.quant = "int8_per_token"; }),
                    {"operand x:", "all i8 (per-token quantization)"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.quant = "none"; }),
                    {"operand x:", "all bf16 or all f16 (no quantization)"}));
  EXPECT_TRUE(
      Fails(with([](MoeCall& c) { c.layout = "flatmm"; }),
            {"operand w1:", "pre-shuffled in the (16, 16) layout", "got w_layout \"flatmm\""}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.topk_attr = 5; }),
                    {"attribute topk: expected 1..min(E, 255) (E = 4), got 5"}));
  EXPECT_TRUE(Fails(with([](MoeCall& c) { c.block_m = 64; }),
                    {"operand sorted_expert_ids:", "(ceil(S / block_m))"}));
  EXPECT_TRUE(Fails(with([](MoeCall&) {}, "bogus"),
                    {"attribute kernel: expected \"\"", "fmoe kernels", "got 'bogus'"}));
  EXPECT_TRUE(Fails(with([](MoeCall&) {}, "fmoe_bf16_pertokenInt8_g1u1_vs_silu_1tg_32x256"),
                    {"asm (fmoe): the forced kernel is in another AITER list"}));
  MoeCall c(8, 4, 256, 256, true);
  fake::CallFrame missing = c.frame("gfx942");
  missing.remove_attr("quant");
  EXPECT_TRUE(Fails(fake::call(test_fused_moe_cpu, missing),
                    {"aiter.fused_moe: attribute quant: missing (string)"}));
  fake::CallFrame typed = c.frame("gfx942");
  typed.attr("activation", int64_t{1});
  EXPECT_TRUE(
      Fails(fake::call(test_fused_moe_cpu, typed), {"attribute activation: expected string"}));
  fake::CallFrame split = c.frame("gfx942");
  split.attr("splitk", int64_t{2});
  EXPECT_TRUE(Fails(fake::call(test_fused_moe_cpu, split),
                    {"asm (fmoe): AITER's fmoe kernels do not split their GEMMs (splitk 2)"}));
  fake::CallFrame unknown = c.frame("gfx942");
  unknown.attr("block_size", int64_t{32});
  EXPECT_TRUE(Fails(fake::call(test_fused_moe_cpu, unknown),
                    {"unknown attribute 'block_size'",
                     "w_layout, topk, block_m, activation, "
                     "quant, weight_first, kernel, splitk, tier"}));
}

}  // namespace
