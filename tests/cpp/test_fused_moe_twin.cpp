// The ABI twins of AITER's fmoe kernels on the Host backend (host_twins/aiter_fmoe.hpp): the ASM
// tier plans a call (Params -> supports -> plan: the packed 448/480-byte struct, the memset of out,
// the grid), the plan runs with each kernel's host twin, and out must match float64 of the
// dequantized math over the same quantized operands. Every list and block size the tier reaches,
// plain and persistent grids, both fp8 formats; then every row that can run this op's calls
// forced through its twin once; then a plan packed wrongly on purpose must give a wrong answer.
// The same for the two-stage family's stage 1 (aiter.fused_moe_stage1, host_twins/
// aiter_fmoe_2stages.hpp): every row forced once, the heuristic's rows, a spoiled plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "jax_aiter/host_twins/aiter_fmoe.hpp"
#include "jax_aiter/host_twins/aiter_fmoe_2stages.hpp"
#include "jax_aiter/ops/fused_moe_asm.hpp"
#include "jax_aiter/ops/fused_moe_stage1.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace {

namespace ja = jax_aiter;
namespace kn = ja::kernels;
namespace L = kn::aiter_fmoe;
using ja::Arch;
using ja::DType;
using ja::ops::FusedMoeParams;
using ja::ops::MoeQuant;
using ja::ops::Tensor;

struct Case {
  int64_t tokens = 5, experts = 4, topk = 2, hidden = 256, inter = 256, block_m = 32;
  MoeQuant quant = MoeQuant::kFp8PerToken;
  bool x_bf16 = false;  // block scales: x bf16, quantized in the kernel
  ja::ops::MoeActivation act = ja::ops::MoeActivation::kSilu;
  DType out = DType::kBF16;
  bool weight_first = false;
  Arch arch = Arch::kGfx942;
  int cus = 304;
  std::string_view kernel;  // forced row, or "" for the heuristic
};

// The operands of a case, quantized, with their dequantized values for the reference.
struct Operands {
  std::vector<uint8_t> x, w1, w2;  // x: 1 byte, or bf16 as 2 bytes each
  std::vector<float> x_scale, w1_scale, w2_scale;
  std::vector<double> xd, w1d, w2d;  // dequantized, unshuffled: [T,H], [E,2I,H], [E,H,I]
  std::vector<int32_t> ids, expert_ids, num_valid;
  std::vector<float> weights;
  std::vector<int> topk_ids;        // [T, k]
  std::vector<float> topk_weights;  // [T, k]
  std::vector<uint16_t> out;
};

double fp8_max(bool fnuz) { return fnuz ? 240.0 : 448.0; }

// The value of an e4m3 code (a table: ja::decode is exact but slow).
double fp8_value(bool fnuz, uint8_t c) {
  static const auto make = [](const ja::MiniFloat& f) {
    std::array<double, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) t[i] = ja::decode(f, i);
    return t;
  };
  static const auto fn = make(ja::kE4M3FNFormat), nuz = make(ja::kE4M3FNUZFormat);
  return (fnuz ? nuz : fn)[c];
}

// An e4m3 code near y (|y| within the format's range), by a table on the top 16 bits of y as a
// float: much faster than ja::encode for the millions of weights the tests quantize. Which of two
// neighbouring codes it picks does not matter: the reference reads the code's own value back.
uint8_t fp8_code(bool fnuz, double y) {
  static const auto make = [](bool nuz) {
    const ja::MiniFloat& f = nuz ? ja::kE4M3FNUZFormat : ja::kE4M3FNFormat;
    std::vector<uint8_t> t(1 << 16);
    for (uint32_t hi = 0; hi < (1u << 16); ++hi) {
      const float v = std::bit_cast<float>((hi << 16) | 0x8000u);  // the bucket's middle
      const double top = nuz ? 240.0 : 448.0;
      t[hi] = std::isfinite(v) && std::fabs(v) <= top ? static_cast<uint8_t>(ja::encode(f, v))
                                                      : uint8_t{0};
    }
    return t;
  };
  static const std::vector<uint8_t> fn = make(false), nuz = make(true);
  return (fnuz ? nuz : fn)[std::bit_cast<uint32_t>(static_cast<float>(y)) >> 16];
}

// Quantizes v (n values) with one scale: codes into q, the dequantized values into d.
float quantize(const double* v, size_t n, size_t stride, MoeQuant q, bool fnuz, uint8_t* codes,
               size_t code_stride, double* d) {
  double amax = 0;
  for (size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(v[i * stride]));
  const bool int8 = q == MoeQuant::kInt8PerToken;
  const double top = int8 ? 127.0 : fp8_max(fnuz);
  const float scale = static_cast<float>(amax > 0 ? amax / top : 1.0);
  for (size_t i = 0; i < n; ++i) {
    const double y = v[i * stride] / scale;
    uint8_t c;
    double back;
    if (int8) {
      const double r = std::clamp(std::nearbyint(y), -127.0, 127.0);
      c = static_cast<uint8_t>(static_cast<int8_t>(r));
      back = r;
    } else {
      c = fp8_code(fnuz, y);
      back = fp8_value(fnuz, c);
    }
    codes[i * code_stride] = c;
    d[i * stride] = back * scale;
  }
  return scale;
}

Operands make_operands(const Case& c, uint32_t seed) {
  const int64_t T = c.tokens, E = c.experts, K = c.topk, H = c.hidden, I = c.inter;
  const bool fnuz = c.arch == Arch::kGfx942;
  const bool block = c.quant == MoeQuant::kFp8BlockScale;
  std::minstd_rand rng(seed);  // fast: the tests draw millions of weights
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Operands o;
  // Values with some spread in magnitude across rows and blocks, so scales differ.
  auto fill = [&](std::vector<double>& v, size_t n, double amp) {
    v.resize(n);
    for (auto& e : v) e = amp * u(rng) * (0.25 + std::fabs(u(rng)));
  };
  std::vector<double> x, w1, w2;
  fill(x, T * H, 2.0);
  fill(w1, E * 2 * I * H, 0.1);
  fill(w2, E * H * I, 0.1);
  o.xd.resize(T * H);
  o.w1d.resize(w1.size());
  o.w2d.resize(w2.size());
  std::vector<uint8_t> w1q(w1.size()), w2q(w2.size());
  const MoeQuant wq = block ? MoeQuant::kFp8BlockScale : c.quant;
  if (block) {
    constexpr int64_t B = L::kScaleBlock;
    o.w1_scale.resize(E * (2 * I / B) * (H / B));
    o.w2_scale.resize(E * (H / B) * (I / B));
    auto blocks = [&](const std::vector<double>& w, std::vector<uint8_t>& q, std::vector<double>& d,
                      std::vector<float>& s, int64_t rows, int64_t cols) {
      for (int64_t e = 0; e < E; ++e) {
        for (int64_t rb = 0; rb < rows / B; ++rb) {
          for (int64_t cb = 0; cb < cols / B; ++cb) {
            // One 128x128 block: quantize its rows with the block's scale.
            double amax = 0;
            for (int64_t r = 0; r < B; ++r) {
              for (int64_t k = 0; k < B; ++k) {
                amax = std::max(amax, std::fabs(w[(e * rows + rb * B + r) * cols + cb * B + k]));
              }
            }
            const float scale = static_cast<float>(amax / fp8_max(fnuz));
            s[(e * (rows / B) + rb) * (cols / B) + cb] = scale;
            for (int64_t r = 0; r < B; ++r) {
              for (int64_t k = 0; k < B; ++k) {
                const size_t at = (e * rows + rb * B + r) * cols + cb * B + k;
                q[at] = fp8_code(fnuz, w[at] / scale);
                d[at] = fp8_value(fnuz, q[at]) * scale;
              }
            }
          }
        }
      }
    };
    blocks(w1, w1q, o.w1d, o.w1_scale, 2 * I, H);
    blocks(w2, w2q, o.w2d, o.w2_scale, H, I);
    if (c.x_bf16) {
      o.x.resize(T * H * 2);
      for (int64_t i = 0; i < T * H; ++i) {
        const uint16_t b = ja::float_to_bf16(static_cast<float>(x[i]));
        std::memcpy(&o.x[i * 2], &b, 2);
        o.xd[i] = ja::bf16_to_float(b);
      }
    } else {
      // x in 1x128 blocks, scales stored [H/128, T].
      o.x.resize(T * H);
      o.x_scale.resize((H / B) * T);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t kb = 0; kb < H / B; ++kb) {
          o.x_scale[kb * T + t] = quantize(&x[t * H + kb * B], B, 1, wq, fnuz, &o.x[t * H + kb * B],
                                           1, &o.xd[t * H + kb * B]);
        }
      }
    }
  } else {
    o.x.resize(T * H);
    o.x_scale.resize(T);
    for (int64_t t = 0; t < T; ++t) {
      o.x_scale[t] = quantize(&x[t * H], H, 1, wq, fnuz, &o.x[t * H], 1, &o.xd[t * H]);
    }
    o.w1_scale.resize(E * 2 * I);
    for (int64_t r = 0; r < E * 2 * I; ++r) {
      o.w1_scale[r] = quantize(&w1[r * H], H, 1, wq, fnuz, &w1q[r * H], 1, &o.w1d[r * H]);
    }
    o.w2_scale.resize(E * H);
    for (int64_t r = 0; r < E * H; ++r) {
      o.w2_scale[r] = quantize(&w2[r * I], I, 1, wq, fnuz, &w2q[r * I], 1, &o.w2d[r * I]);
    }
  }
  // Shuffle each expert's weights.
  o.w1.resize(w1q.size());
  o.w2.resize(w2q.size());
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t n = 0; n < 2 * I; ++n) {
      for (int64_t k = 0; k < H; ++k) {
        o.w1[e * 2 * I * H + L::shuffled_offset(n, k, H)] = w1q[(e * 2 * I + n) * H + k];
      }
    }
    for (int64_t n = 0; n < H; ++n) {
      for (int64_t k = 0; k < I; ++k) {
        o.w2[e * H * I + L::shuffled_offset(n, k, I)] = w2q[(e * H + n) * I + k];
      }
    }
  }
  // Routing: k distinct experts per token, weights summing to 1; then moe_sorting's layout.
  o.topk_ids.resize(T * K);
  o.topk_weights.resize(T * K);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int> ex(E);
    std::iota(ex.begin(), ex.end(), 0);
    std::shuffle(ex.begin(), ex.end(), rng);
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      o.topk_ids[t * K + k] = ex[k];
      o.topk_weights[t * K + k] = static_cast<float>(0.2 + std::fabs(u(rng)));
      sum += o.topk_weights[t * K + k];
    }
    for (int64_t k = 0; k < K; ++k) o.topk_weights[t * K + k] /= static_cast<float>(sum);
  }
  const int64_t bm = c.block_m, S = L::max_sorted_rows(T, K, E, bm),
                nb = L::max_blocks(T, K, E, bm);
  const int32_t pad = L::sorted_id(static_cast<int>(T), static_cast<int>(K));
  o.ids.assign(S, pad);
  o.weights.assign(S, 0.f);
  o.expert_ids.assign(nb, 0);
  int64_t row = 0;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t start = row;
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t k = 0; k < K; ++k) {
        if (o.topk_ids[t * K + k] != e) continue;
        o.ids[row] = L::sorted_id(static_cast<int>(t), static_cast<int>(k));
        o.weights[row] = o.topk_weights[t * K + k];
        ++row;
      }
    }
    if (row == start) continue;  // an expert with no token takes no block
    row = (row + bm - 1) / bm * bm;
    for (int64_t b = start / bm; b < row / bm; ++b) o.expert_ids[b] = static_cast<int32_t>(e);
  }
  o.num_valid = {static_cast<int32_t>(row), static_cast<int32_t>(T)};
  o.out.assign(T * H, 0x7fc0);  // NaN: the plan must zero out
  return o;
}

// float64 of the dequantized math.
std::vector<double> reference(const Case& c, const Operands& o) {
  const int64_t T = c.tokens, K = c.topk, H = c.hidden, I = c.inter;
  std::vector<double> out(T * H, 0.0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < K; ++k) {
      const int64_t e = o.topk_ids[t * K + k];
      const double w = o.topk_weights[t * K + k];
      std::vector<double> h(I);
      for (int64_t j = 0; j < I; ++j) {
        double g = 0, up = 0;
        for (int64_t x = 0; x < H; ++x) {
          g += o.xd[t * H + x] * o.w1d[(e * 2 * I + j) * H + x];
          up += o.xd[t * H + x] * o.w1d[(e * 2 * I + I + j) * H + x];
        }
        const double a = c.act == ja::ops::MoeActivation::kSilu
                             ? g / (1 + std::exp(-g))
                             : 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
        h[j] = a * up;
      }
      for (int64_t col = 0; col < H; ++col) {
        double s = 0;
        for (int64_t j = 0; j < I; ++j) s += h[j] * o.w2d[(e * H + col) * I + j];
        out[t * H + col] += w * s;
      }
    }
  }
  return out;
}

FusedMoeParams params(const Case& c, Operands& o) {
  const int64_t T = c.tokens, E = c.experts, H = c.hidden, I = c.inter;
  const DType fp8 = c.arch == Arch::kGfx942 ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN;
  const DType w = c.quant == MoeQuant::kInt8PerToken ? DType::kI8 : fp8;
  FusedMoeParams p;
  p.x = Tensor::over(o.x.data(), c.x_bf16 ? DType::kBF16 : w, {T, H});
  p.w1 = Tensor::over(o.w1.data(), w, {E, 2 * I, H});
  p.w2 = Tensor::over(o.w2.data(), w, {E, H, I});
  p.sorted_token_ids = Tensor::over(o.ids.data(), DType::kI32, {int64_t(o.ids.size())});
  p.sorted_weights = Tensor::over(o.weights.data(), DType::kF32, {int64_t(o.weights.size())});
  p.sorted_expert_ids =
      Tensor::over(o.expert_ids.data(), DType::kI32, {int64_t(o.expert_ids.size())});
  p.num_valid_ids = Tensor::over(o.num_valid.data(), DType::kI32, {2});
  if (c.quant == MoeQuant::kFp8BlockScale) {
    constexpr int64_t B = L::kScaleBlock;
    if (!c.x_bf16) p.x_scale = Tensor::over(o.x_scale.data(), DType::kF32, {H / B, T});
    p.w1_scale = Tensor::over(o.w1_scale.data(), DType::kF32, {E, 2 * I / B, H / B});
    p.w2_scale = Tensor::over(o.w2_scale.data(), DType::kF32, {E, H / B, I / B});
  } else {
    p.x_scale = Tensor::over(o.x_scale.data(), DType::kF32, {T, 1});
    p.w1_scale = Tensor::over(o.w1_scale.data(), DType::kF32, {E, 2 * I, 1});
    p.w2_scale = Tensor::over(o.w2_scale.data(), DType::kF32, {E, H, 1});
  }
  p.out = Tensor::over(o.out.data(), c.out, {T, H});
  p.topk = c.topk;
  p.block_m = c.block_m;
  p.activation = c.act;
  p.quant = c.quant;
  p.weight_first = c.weight_first;
  p.w_layout = L::kShuffleName;
  p.aiter.kernel = c.kernel;
  return p;
}

bool execute(const kn::Plan& plan) {
  namespace rt = ja::runtime;
  for (const kn::Step& s : plan.view()) {
    if (s.kind == kn::Step::Kind::kMemset) {
      const ja::Status st = rt::Host::memset(0, nullptr, s.memset);
      EXPECT_TRUE(st.ok()) << st.message();
      if (!st.ok()) return false;
      continue;
    }
    const rt::Host::Kernel& k = rt::Host::resolve(0, *s.launch.kernel);
    EXPECT_TRUE(k.status.ok()) << k.status.message();
    if (!k.status.ok()) return false;
    const ja::Status st = rt::Host::launch(0, nullptr, k, s.launch);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return false;
  }
  return true;
}

// The worst error over the reference's scale: max |got - want| / max |want|, and whether every
// element is within 2% of its own value plus 0.5% of the largest (the 16-bit out is rounded once
// per work item added into it; the kernels' partial sums are f32).
struct Compare {
  double worst = 0;
  bool ok = true;
};
Compare compare(const Case& c, const Operands& o, const std::vector<double>& want) {
  double top = 0;
  for (double v : want) top = std::max(top, std::fabs(v));
  Compare r;
  for (size_t i = 0; i < want.size(); ++i) {
    const double got =
        c.out == DType::kBF16 ? ja::bf16_to_float(o.out[i]) : ja::f16_to_float(o.out[i]);
    const double d = std::fabs(got - want[i]);
    r.worst = std::max(r.worst, d / top);
    if (!(d <= 0.02 * std::fabs(want[i]) + 0.005 * top)) r.ok = false;
  }
  return r;
}

// Plans c, optionally spoils the plan, runs it; the comparison with float64, and the row run.
struct Outcome {
  bool planned = false;
  std::string why, row;
  bool persistent = false;
  Compare cmp;
};
Outcome run(const Case& c, uint32_t seed, const std::function<void(kn::Plan&)>& spoil = nullptr) {
  Operands o = make_operands(c, seed);
  const FusedMoeParams p = params(c, o);
  Outcome r;
  if (const ja::Status st = ja::ops::fused_moe_detail::check(p); !st.ok()) {
    r.why = st.message();
    return r;
  }
  const ja::Target target{ja::BackendKind::kHost, c.arch, c.cus};
  const auto d = ja::ops::FusedMoeAsmTier::supports(p, target);
  if (!d.ok()) {
    r.why = d.verdict().text();
    return r;
  }
  kn::Plan plan;
  ja::ops::FusedMoeAsmTier::plan(p, target, *d, plan);
  if (spoil) spoil(plan);
  r.planned = true;
  r.row = std::string(kn::short_name(*d->row));
  r.persistent = plan.steps[1].launch.grid.y == 1 && d->row->ps;
  if (!execute(plan)) return r;
  r.cmp = compare(c, o, reference(c, o));
  return r;
}

// Every list and block size the tier reaches, on both archs, plain and persistent grids.
TEST(FmoeTwin, TheHeuristicsRowsMatchFloat64) {
  using ja::ops::MoeActivation;
  int runs = 0, persistent = 0;
  double worst = 0;
  uint32_t seed = 1;
  for (const Arch arch : {Arch::kGfx942, Arch::kGfx950}) {
    for (const int cus : {4, 304}) {  // 4 CUs: one persistent workgroup walks many items
      for (const MoeActivation act : {MoeActivation::kSilu, MoeActivation::kGelu}) {
        std::vector<Case> cases;
        for (const DType out : {DType::kBF16, DType::kF16}) {
          for (const MoeQuant q : {MoeQuant::kFp8PerToken, MoeQuant::kInt8PerToken}) {
            Case c;
            c.quant = q;
            c.out = out;
            c.hidden = 128;
            c.inter = 384;
            cases.push_back(c);
          }
          Case tkw1;
          tkw1.weight_first = true;
          tkw1.out = out;
          tkw1.hidden = 128;
          cases.push_back(tkw1);
        }
        for (const bool x_bf16 : {false, true}) {
          for (const int64_t bm : {16, 32, 64}) {
            Case c;
            c.quant = MoeQuant::kFp8BlockScale;
            c.x_bf16 = x_bf16;
            c.block_m = bm;
            cases.push_back(c);
          }
        }
        for (Case c : cases) {
          c.arch = arch;
          c.cus = cus;
          c.act = act;
          const Outcome r = run(c, seed++);
          if (!r.planned) continue;  // a list or block size AITER lacks for this arch
          ++runs;
          persistent += r.persistent;
          worst = std::max(worst, r.cmp.worst);
          EXPECT_TRUE(r.cmp.ok) << ja::name(arch) << " " << cus << " CUs " << r.row
                                << ": worst error " << r.cmp.worst;
        }
      }
    }
  }
  EXPECT_GE(runs, 40);
  EXPECT_GT(persistent, 5);
  std::printf("%d planned calls through the twins (%d persistent), worst error %.2e of max|ref|\n",
              runs, persistent, worst);
}

// Every row a call of this op can run (smf 0, flat 0), forced by name once through its twin.
TEST(FmoeTwin, EveryRunnableRowForcedOnce) {
  int runs = 0, skipped = 0;
  double worst = 0;
  uint32_t seed = 1000;
  for (const kn::AiterFmoeRow& r : kn::kAiterFmoeRows) {
    if (!r.g1u1 || r.smf != 0 || r.flat != 0) {
      ++skipped;
      continue;
    }
    Case c;
    c.arch = r.on_gfx942 ? Arch::kGfx942 : Arch::kGfx950;
    c.cus = 8;
    c.kernel = r.kernel.symbol;
    c.block_m = r.sub_m;
    c.out = r.out;
    c.act = r.act == kn::AiterFmoeAct::kSilu ? ja::ops::MoeActivation::kSilu
                                             : ja::ops::MoeActivation::kGelu;
    c.weight_first = r.tkw1;
    c.tokens = 3;
    c.experts = 2;
    c.hidden = 128;
    using Q = kn::AiterFmoeQuant;
    c.quant = r.quant == Q::kPertokenInt8  ? MoeQuant::kInt8PerToken
              : r.quant == Q::kPertokenFp8 ? MoeQuant::kFp8PerToken
                                           : MoeQuant::kFp8BlockScale;
    c.x_bf16 = r.quant == Q::kBlockscaleBf16;
    // Two inter tiles (one for 448 and up), a multiple of 128 for block scales.
    c.inter = r.sub_n * (r.sub_n >= 448 ? 1 : 2);
    if (c.quant == MoeQuant::kFp8BlockScale && c.inter % 128 != 0) c.inter *= 2;
    const Outcome o = run(c, seed++);
    ASSERT_TRUE(o.planned) << r.kernel.symbol << ": " << o.why;
    ++runs;
    worst = std::max(worst, o.cmp.worst);
    EXPECT_TRUE(o.cmp.ok) << r.kernel.symbol << ": worst error " << o.cmp.worst;
  }
  EXPECT_GT(runs, 200);
  std::printf(
      "%d rows forced through their twins (%d others: g1u0, smoothing or flat), worst "
      "error %.2e of max|ref|\n",
      runs, skipped, worst);
}

// Rows sharing a symbol share a host twin: they must compute alike.
TEST(FmoeTwin, RowsSharingASymbolComputeAlike) {
  const auto& rows = kn::kAiterFmoeRows;
  for (size_t i = 0; i < std::size(rows); ++i) {
    for (size_t j = i + 1; j < std::size(rows); ++j) {
      const auto &a = rows[i], &b = rows[j];
      if (a.kernel.symbol != b.kernel.symbol || (a.flat != 0 && b.flat != 0)) continue;
      EXPECT_TRUE(a.sub_m == b.sub_m && a.sub_n == b.sub_n && a.quant == b.quant &&
                  a.act == b.act && a.out == b.out && a.tkw1 == b.tkw1 && a.g1u1 == b.g1u1)
          << a.kernel.symbol;
    }
  }
}

// Pack wrongly and the twin computes the wrong answer (or leaves out unwritten).
TEST(FmoeTwin, AWronglyPackedPlanFails) {
  Case c;
  c.cus = 4;
  const Outcome good = run(c, 7);
  ASSERT_TRUE(good.planned && good.cmp.ok) << good.why;
  auto spoiled = [&](const char* what, const std::function<void(kn::AiterFmoeArgs&)>& f) {
    const Outcome bad = run(c, 7, [&](kn::Plan& plan) {
      kn::Launch& l = plan.steps[1].launch;
      auto a = l.args.unpack<kn::AiterFmoeArgs>();
      f(a);
      std::memcpy(l.args.bytes.data(), &a, sizeof(a));
    });
    EXPECT_FALSE(bad.cmp.ok) << what;
  };
  spoiled("w1 scales' expert stride", [](kn::AiterFmoeArgs& a) { a.eGUQs = a.eGUQs.value / 2; });
  spoiled("w2's expert stride", [](kn::AiterFmoeArgs& a) { a.eDs = 0; });
  // A persistent launch read as a plain one, or the other way round.
  spoiled("total_tgs", [](kn::AiterFmoeArgs& a) { a.total_tgs = a.total_tgs.value ? 0 : 1; });
  spoiled("topk weights", [](kn::AiterFmoeArgs& a) { a.SW = a.STP.value; });
  const Outcome no_memset = run(c, 7, [](kn::Plan& plan) {
    plan.steps[0].memset.bytes = 0;  // out stays NaN
  });
  EXPECT_FALSE(no_memset.cmp.ok);
}

// ---- the two-stage family's stage 1 -------------------------------------------------------------

namespace L2 = kn::aiter_fmoe_2stages;
using ja::ops::FusedMoeStage1Params;

// Stage 1's out: bf16 [T, topk, I], or (block scales) fp8 [T + ceil(4T/128), topk, I].
std::vector<uint8_t> stage1_out(const Case& c) {
  const bool blocks = c.quant == MoeQuant::kFp8BlockScale;
  const int64_t rows = blocks ? c.tokens + L2::stage1_scale_rows(c.tokens) : c.tokens;
  return std::vector<uint8_t>(rows * c.topk * c.inter * (blocks ? 1 : 2), 0xff);  // NaN bytes
}

FusedMoeStage1Params params1(const Case& c, Operands& o, std::vector<uint8_t>& out) {
  const FusedMoeParams whole = params(c, o);
  const bool blocks = c.quant == MoeQuant::kFp8BlockScale;
  FusedMoeStage1Params p;
  p.x = whole.x;
  p.w1 = whole.w1;
  p.sorted_token_ids = whole.sorted_token_ids;
  p.sorted_weights = whole.sorted_weights;
  p.sorted_expert_ids = whole.sorted_expert_ids;
  p.num_valid_ids = whole.num_valid_ids;
  p.x_scale = whole.x_scale;
  p.w1_scale = whole.w1_scale;
  const int64_t rows = blocks ? c.tokens + L2::stage1_scale_rows(c.tokens) : c.tokens;
  p.out = Tensor::over(out.data(), blocks ? whole.w1.dtype : DType::kBF16, {rows, c.topk, c.inter});
  p.topk = c.topk;
  p.block_m = c.block_m;
  p.activation = c.act;
  p.quant = c.quant;
  p.weight_first = c.weight_first;
  p.w_layout = L::kShuffleName;
  p.aiter.kernel = c.kernel;
  return p;
}

// Stage 1 against float64: each (token, slot)'s act(gate) * up (times its weight with
// weight_first), read back from bf16, or from fp8 times its block's scale.
Compare compare1(const Case& c, const Operands& o, const std::vector<uint8_t>& out) {
  const int64_t T = c.tokens, K = c.topk, H = c.hidden, I = c.inter;
  const bool blocks = c.quant == MoeQuant::kFp8BlockScale, fnuz = c.arch == Arch::kGfx942;
  std::vector<double> want(T * K * I);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < K; ++k) {
      const int64_t e = o.topk_ids[t * K + k];
      for (int64_t j = 0; j < I; ++j) {
        double g = 0, up = 0;
        for (int64_t x = 0; x < H; ++x) {
          g += o.xd[t * H + x] * o.w1d[(e * 2 * I + j) * H + x];
          up += o.xd[t * H + x] * o.w1d[(e * 2 * I + I + j) * H + x];
        }
        const double a = c.act == ja::ops::MoeActivation::kSilu
                             ? g / (1 + std::exp(-g))
                             : 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
        want[(t * K + k) * I + j] = a * up * (c.weight_first ? o.topk_weights[t * K + k] : 1.0);
      }
    }
  }
  double top = 0;
  for (double v : want) top = std::max(top, std::fabs(v));
  const auto* scales = reinterpret_cast<const float*>(out.data() + T * K * I);
  Compare r;
  for (size_t n = 0; n < want.size(); ++n) {
    double got;
    if (blocks) {
      got = fp8_value(fnuz, out[n]) * scales[n / L2::kScaleBlock];
    } else {
      uint16_t b;
      std::memcpy(&b, &out[n * 2], 2);
      got = ja::bf16_to_float(b);
    }
    const double d = std::fabs(got - want[n]);
    r.worst = std::max(r.worst, d / top);
    // fp8 keeps 3 mantissa bits (a relative step of 1/8 at worst, half of it rounding).
    const double rel = blocks ? 0.07 : 0.02;
    if (!(d <= rel * std::fabs(want[n]) + 0.005 * top)) r.ok = false;
  }
  return r;
}

Outcome run1(const Case& c, uint32_t seed, const std::function<void(kn::Plan&)>& spoil = nullptr) {
  Operands o = make_operands(c, seed);
  std::vector<uint8_t> out = stage1_out(c);
  const FusedMoeStage1Params p = params1(c, o, out);
  Outcome r;
  if (const ja::Status st = ja::ops::FusedMoeStage1::validate(p); !st.ok()) {
    r.why = st.message();
    return r;
  }
  const ja::Target target{ja::BackendKind::kHost, c.arch, c.cus};
  const auto d = ja::ops::FusedMoeStage1AsmTier::supports(p, target);
  if (!d.ok()) {
    r.why = d.verdict().text();
    return r;
  }
  kn::Plan plan;
  ja::ops::FusedMoeStage1AsmTier::plan(p, target, *d, plan);
  if (spoil) spoil(plan);
  r.planned = true;
  r.row = std::string(kn::short_name(*d->row));
  if (!execute(plan)) return r;
  r.cmp = compare1(c, o, out);
  return r;
}

MoeQuant quant_of(kn::AiterFmoe2StagesQuant q) {
  using Q = kn::AiterFmoe2StagesQuant;
  return q == Q::kPertokenInt8  ? MoeQuant::kInt8PerToken
         : q == Q::kPertokenFp8 ? MoeQuant::kFp8PerToken
                                : MoeQuant::kFp8BlockScale;
}

// Every row forced by name once through its twin (both fp8 formats, both activations).
TEST(Fmoe2StagesTwin, EveryRowForcedOnce) {
  int runs = 0;
  double worst = 0;
  uint32_t seed = 2000;
  size_t n = 0;
  for (const kn::AiterFmoe2StagesRow& r : kn::kAiterFmoe2StagesRows) {
    Case c;
    const bool alt = n++ % 2 == 1;
    c.arch = alt && r.on_gfx950 ? Arch::kGfx950 : Arch::kGfx942;
    c.act = alt ? ja::ops::MoeActivation::kGelu : ja::ops::MoeActivation::kSilu;
    c.cus = 8;
    c.kernel = r.kernel.symbol;
    c.block_m = r.tile_m;
    c.quant = quant_of(r.quant);
    c.weight_first = r.doweight;
    c.tokens = 3;
    c.experts = 2;
    c.hidden = 128;
    c.inter = r.tile_n >= 384 ? r.tile_n : 2 * r.tile_n;  // two inter tiles below 384
    const Outcome o = run1(c, seed++);
    ASSERT_TRUE(o.planned) << r.kernel.symbol << ": " << o.why;
    ++runs;
    worst = std::max(worst, o.cmp.worst);
    EXPECT_TRUE(o.cmp.ok) << r.kernel.symbol << ": worst error " << o.cmp.worst;
  }
  EXPECT_EQ(runs, 186);
  std::printf("%d fmoe_2stages rows forced through their twins, worst error %.2e of max|ref|\n",
              runs, worst);
}

// The heuristic's choice, each list on both archs, at AITER's default block_m for the call.
TEST(Fmoe2StagesTwin, TheHeuristicsRowsMatchFloat64) {
  int runs = 0;
  uint32_t seed = 3000;
  for (const Arch arch : {Arch::kGfx942, Arch::kGfx950}) {
    for (const MoeQuant q :
         {MoeQuant::kFp8PerToken, MoeQuant::kInt8PerToken, MoeQuant::kFp8BlockScale}) {
      for (const bool weight_first : {false, true}) {
        if (weight_first && q != MoeQuant::kFp8PerToken) continue;
        Case c;
        c.arch = arch;
        c.cus = 80;
        c.quant = q;
        c.weight_first = weight_first;
        c.tokens = 6;
        c.hidden = 128;
        c.inter = 256;
        c.block_m = L2::default_block_m(q == MoeQuant::kFp8BlockScale, c.tokens, c.topk, c.experts,
                                        c.inter, c.cus);
        const Outcome o = run1(c, seed++);
        ASSERT_TRUE(o.planned) << o.why;
        ++runs;
        EXPECT_TRUE(o.cmp.ok) << o.row << ": worst error " << o.cmp.worst;
      }
    }
  }
  EXPECT_EQ(runs, 8);
}

// Pack wrongly and the twin computes the wrong answer (or leaves out unwritten).
TEST(Fmoe2StagesTwin, AWronglyPackedPlanFails) {
  Case c;
  c.weight_first = true;
  c.block_m = 16;
  const Outcome good = run1(c, 9);
  ASSERT_TRUE(good.planned && good.cmp.ok) << good.why;
  auto spoiled = [&](const char* what, const std::function<void(kn::AiterFmoe2StagesArgs&)>& f) {
    const Outcome bad = run1(c, 9, [&](kn::Plan& plan) {
      kn::Launch& l = plan.steps[1].launch;
      auto a = l.args.unpack<kn::AiterFmoe2StagesArgs>();
      f(a);
      std::memcpy(l.args.bytes.data(), &a, sizeof(a));
    });
    EXPECT_FALSE(bad.cmp.ok) << what;
  };
  spoiled("w1 scales' expert stride",
          [](kn::AiterFmoe2StagesArgs& a) { a.eGUQs = a.eGUQs.value / 2; });
  spoiled("w1's expert stride", [](kn::AiterFmoe2StagesArgs& a) { a.eGUs = 0; });
  spoiled("activation", [](kn::AiterFmoe2StagesArgs& a) { a.activation = L2::kGelu; });
  spoiled("out's token stride", [](kn::AiterFmoe2StagesArgs& a) { a.Os = a.Os.value / 2; });
  spoiled("topk weights", [](kn::AiterFmoe2StagesArgs& a) { a.SW = a.STP.value; });
  const Outcome no_memset = run1(c, 9, [](kn::Plan& plan) { plan.steps[0].memset.bytes = 0; });
  EXPECT_TRUE(no_memset.cmp.ok);  // every entry is written: the memset only defines the rest
}

}  // namespace
