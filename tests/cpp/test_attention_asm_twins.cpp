// The ASM tiers of flash attention (ops/attention_asm.hpp) run on the host backend through the ABI
// twins of AITER's v3 kernels (host_twins/aiter_fmha_v3.hpp): each problem is planned by
// FlashAttnFwdAsmTier / FlashAttnBwdAsmTier for a gfx942 (MI300X or MI308X chip id, 304 CUs) or
// gfx950 (256 CUs) target, and the plan (its rows, grids, packed bytes, memsets and carved
// workspace) is executed step by step with runtime::Host. Outputs and the workspace start as NaN
// bytes and every buffer is fenced by guard bytes; out, lse, dq, dk and dv are compared with a
// float64 reference written here with plain loops (bottom-right causal mask, GQA, varlen offsets)
// as |got - ref| <= atol + rtol |ref| per dtype. Mutated plans (a short grid, a corrupted stride
// byte, AITER's odo head_dim) must fail the same comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "jax_aiter/host_twins/aiter_fmha_v3.hpp"
#include "jax_aiter/kernels/aiter/fmha_v3.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/attention_asm.hpp"
#include "jax_aiter/ops/attention_params.hpp"
#include "jax_aiter/runtime/host.hpp"

namespace {

namespace ja = jax_aiter;
namespace kn = jax_aiter::kernels;
namespace ops = jax_aiter::ops;
using ja::Arch;
using ja::DType;

// ---- buffers ------------------------------------------------------------------------------------

double from_bits(uint16_t b, DType t) {
  return t == DType::kBF16 ? static_cast<double>(std::bit_cast<float>(uint32_t{b} << 16))
                           : static_cast<double>(std::bit_cast<_Float16>(b));
}
uint16_t to_bits(double v, DType t) {  // nearest even, through float
  if (t == DType::kF16) return std::bit_cast<uint16_t>(static_cast<_Float16>(v));
  const uint32_t u = std::bit_cast<uint32_t>(static_cast<float>(v));
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

constexpr size_t kGuard = 256;
constexpr unsigned char kGuardByte = 0xA5;

// n bytes between two guard zones; contents start as 0xFF bytes (NaN in every float type).
struct Buf {
  std::vector<unsigned char> raw;
  size_t n = 0;
  explicit Buf(size_t bytes = 0) : raw(bytes + 2 * kGuard + 64, kGuardByte), n(bytes) {
    std::memset(data(), 0xFF, n);
  }
  void* data() {  // 64-byte aligned start after the front guard
    auto p = reinterpret_cast<uintptr_t>(raw.data() + kGuard);
    return reinterpret_cast<void*>((p + 63) / 64 * 64);
  }
  uint16_t* u16() { return static_cast<uint16_t*>(data()); }
  float* f32() { return static_cast<float*>(data()); }
  int* i32() { return static_cast<int*>(data()); }
  bool guards_intact() {
    auto* b = static_cast<unsigned char*>(data());
    for (auto* p = raw.data(); p < b - kGuard / 2; ++p) {
      if (*p != kGuardByte) return false;
    }
    for (size_t i = n; i < n + kGuard; ++i) {
      if (b[i] != kGuardByte) return false;
    }
    return true;
  }
};

// ---- problems -----------------------------------------------------------------------------------

struct Case {
  std::string name;
  Arch arch = Arch::kGfx942;
  uint32_t chip = 0x74a1;  // MI300X; 0x74a2 an MI308X
  DType dtype = DType::kBF16;
  int64_t b = 1, sq = 256, sk = 256, hq = 2, hk = 2, d = 128, dv = 128;
  std::vector<std::pair<int, int>> lens;  // varlen when non-empty: (sq, sk) per sequence
  bool causal = false, a32 = true, det = false;
  int64_t wl = -1, wr = -1;  // a sliding window (attn_visible's left, right; -1 unbounded)
  int cvt = 1;
  bool fwd = true, bwd = true;  // the tiers that must take it

  bool varlen() const { return !lens.empty(); }
  ja::Target target() const {
    ja::Target t{ja::BackendKind::kHip, arch, arch == Arch::kGfx942 ? 304 : 256, 0};
    t.pci_chip_id = chip;
    return t;
  }
};

// The tensors of one problem (host memory), the inputs random in [-1, 1].
struct Problem {
  Case c;
  int64_t nseq = 0, tq = 0, tk = 0;  // sequences, rows of q / k
  std::vector<int> cu_q, cu_k;
  Buf q, k, v, dout, out, lse, dq, dk, dv, cuq, cuk, ws, out_in, lse_in;
  float scale = 0;

  explicit Problem(const Case& cs) : c(cs) {
    if (c.varlen()) {
      nseq = static_cast<int64_t>(c.lens.size());
      cu_q = {0};
      cu_k = {0};
      for (auto [a, bb] : c.lens) {
        cu_q.push_back(cu_q.back() + a);
        cu_k.push_back(cu_k.back() + bb);
      }
      tq = cu_q.back();
      tk = cu_k.back();
    } else {
      nseq = c.b;
      tq = c.b * c.sq;
      tk = c.b * c.sk;
    }
    scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
    std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(c.name)));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto fill = [&](Buf& buf, int64_t n) {
      buf = Buf(static_cast<size_t>(n * 2));
      for (int64_t i = 0; i < n; ++i) buf.u16()[i] = to_bits(u(rng), c.dtype);
    };
    fill(q, tq * c.hq * c.d);
    fill(k, tk * c.hk * c.d);
    fill(v, tk * c.hk * c.dv);
    fill(dout, tq * c.hq * c.dv);
    out = Buf(static_cast<size_t>(tq * c.hq * c.dv * 2));
    out_in = Buf(out.n);
    lse = Buf(static_cast<size_t>(tq * c.hq * 4));
    lse_in = Buf(lse.n);
    dq = Buf(q.n);
    dk = Buf(k.n);
    dv = Buf(v.n);
    cuq = Buf(static_cast<size_t>(nseq + 1) * 4);
    cuk = Buf(cuq.n);
    if (c.varlen()) {
      std::memcpy(cuq.data(), cu_q.data(), cuq.n);
      std::memcpy(cuk.data(), cu_k.data(), cuk.n);
    }
  }

  // Sequence s: (q start, k start, sq, sk).
  std::array<int64_t, 4> seq(int64_t s) const {
    if (c.varlen()) return {cu_q[s], cu_k[s], cu_q[s + 1] - cu_q[s], cu_k[s + 1] - cu_k[s]};
    return {s * c.sq, s * c.sk, c.sq, c.sk};
  }
  // Element offsets: rows are global (q start + i), [row, head, dim].
  int64_t qo(int64_t row, int64_t h) const { return (row * c.hq + h) * c.d; }
  int64_t ko(int64_t row, int64_t h) const { return (row * c.hk + h) * c.d; }
  int64_t vo(int64_t row, int64_t h) const { return (row * c.hk + h) * c.dv; }
  int64_t oo(int64_t row, int64_t h) const { return (row * c.hq + h) * c.dv; }
  // lse [b, hq, sq] or [hq, total_q], by sequence, head and row within the sequence.
  int64_t lo(int64_t s, int64_t h, int64_t i) const {
    return c.varlen() ? h * tq + cu_q[s] + i : (s * c.hq + h) * c.sq + i;
  }

  ops::AttnOptions options() const {
    ops::AttnOptions o;
    o.softmax_scale = scale;
    o.causal = c.causal;
    o.window_left = c.wl;
    o.window_right = c.wr;
    o.max_seqlen_q = c.varlen() ? c.sq : 0;
    o.max_seqlen_k = c.varlen() ? c.sk : 0;
    o.bf16_cvt = c.cvt;
    return o;
  }
  ops::Tensor t(Buf& buf, DType dt, std::initializer_list<int64_t> dims) {
    return ops::Tensor::over(buf.data(), dt, dims);
  }
  ops::Tensor qkv(Buf& buf, int64_t rows, int64_t heads, int64_t dim) {
    const DType dt = c.dtype;
    return c.varlen() ? t(buf, dt, {rows, heads, dim}) : t(buf, dt, {c.b, rows / c.b, heads, dim});
  }
  ops::Tensor lse_t(Buf& buf) {
    return c.varlen() ? t(buf, DType::kF32, {c.hq, tq}) : t(buf, DType::kF32, {c.b, c.hq, c.sq});
  }
  std::optional<ops::Tensor> cu(Buf& buf) {
    if (!c.varlen()) return std::nullopt;
    return t(buf, DType::kI32, {nseq + 1});
  }

  ops::FlashAttnFwdParams fwd_params() {
    ops::FlashAttnFwdParams p;
    p.q = qkv(q, tq, c.hq, c.d);
    p.k = qkv(k, tk, c.hk, c.d);
    p.v = qkv(v, tk, c.hk, c.dv);
    p.cu_seqlens_q = cu(cuq);
    p.cu_seqlens_k = cu(cuk);
    p.out = qkv(out, tq, c.hq, c.dv);
    p.lse = lse_t(lse);
    p.opt = options();
    return p;
  }
  ops::FlashAttnBwdParams bwd_params(int64_t ws_bytes) {
    ops::FlashAttnBwdParams p;
    p.dout = qkv(dout, tq, c.hq, c.dv);
    p.q = qkv(q, tq, c.hq, c.d);
    p.k = qkv(k, tk, c.hk, c.d);
    p.v = qkv(v, tk, c.hk, c.dv);
    p.out = qkv(out_in, tq, c.hq, c.dv);
    p.lse = lse_t(lse_in);
    p.cu_seqlens_q = cu(cuq);
    p.cu_seqlens_k = cu(cuk);
    p.dq = qkv(dq, tq, c.hq, c.d);
    p.dk = qkv(dk, tk, c.hk, c.d);
    p.dv = qkv(dv, tk, c.hk, c.dv);
    p.dbias = ops::Tensor::over(nullptr, DType::kF32, {0});
    p.workspace = ops::Tensor::over(ws.data(), DType::kU8, {ws_bytes});
    p.opt = options();
    p.deterministic = c.det;
    p.atomic32 = c.a32;
    return p;
  }
};

// ---- the float64 reference ----------------------------------------------------------------------

struct Ref {
  std::vector<double> out, lse, dq, dk, dv;
};

// Key j is visible to query i (the design's rule, bottom-right aligned): causal is right 0.
bool visible(const Case& c, int64_t i, int64_t j, int64_t sq, int64_t sk) {
  const int64_t right = c.causal ? 0 : c.wr, diagonal = i + sk - sq;
  return (c.wl < 0 || j >= diagonal - c.wl) && (right < 0 || j <= diagonal + right);
}

Ref reference(const Problem& p, bool backward) {
  const Case& c = p.c;
  Ref r;
  r.out.assign(static_cast<size_t>(p.tq * c.hq * c.dv), 0.0);
  r.lse.assign(static_cast<size_t>(p.tq * c.hq), 0.0);
  r.dq.assign(static_cast<size_t>(p.tq * c.hq * c.d), 0.0);
  r.dk.assign(static_cast<size_t>(p.tk * c.hk * c.d), 0.0);
  r.dv.assign(static_cast<size_t>(p.tk * c.hk * c.dv), 0.0);
  auto Q = [&](int64_t i) { return from_bits(const_cast<Buf&>(p.q).u16()[i], c.dtype); };
  auto Kx = [&](int64_t i) { return from_bits(const_cast<Buf&>(p.k).u16()[i], c.dtype); };
  auto V = [&](int64_t i) { return from_bits(const_cast<Buf&>(p.v).u16()[i], c.dtype); };
  auto DO = [&](int64_t i) { return from_bits(const_cast<Buf&>(p.dout).u16()[i], c.dtype); };
  const int64_t group = c.hq / c.hk;
  std::vector<double> s, pr, dp;
  for (int64_t b = 0; b < p.nseq; ++b) {
    const auto [q0, k0, sq, sk] = p.seq(b);
    for (int64_t h = 0; h < c.hq; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < sq; ++i) {
        s.assign(static_cast<size_t>(sk), 0.0);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < sk; ++j) {
          if (!visible(c, i, j, sq, sk)) continue;
          double dot = 0;
          for (int64_t e = 0; e < c.d; ++e)
            dot += Q(p.qo(q0 + i, h) + e) * Kx(p.ko(k0 + j, hk) + e);
          s[j] = dot * p.scale;
          m = std::max(m, s[j]);
        }
        const size_t lrow = static_cast<size_t>(p.oo(q0 + i, h) / c.dv);
        if (m == -std::numeric_limits<double>::infinity()) {  // no visible key
          r.lse[static_cast<size_t>(p.lo(b, h, i))] = std::numeric_limits<double>::infinity();
          continue;
        }
        double l = 0;
        pr.assign(static_cast<size_t>(sk), 0.0);
        for (int64_t j = 0; j < sk; ++j) {
          if (visible(c, i, j, sq, sk)) l += pr[j] = std::exp(s[j] - m);
        }
        const double lse = m + std::log(l);
        r.lse[static_cast<size_t>(p.lo(b, h, i))] = lse;
        for (int64_t j = 0; j < sk; ++j) pr[j] /= l;
        for (int64_t e = 0; e < c.dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < sk; ++j) acc += pr[j] * V(p.vo(k0 + j, hk) + e);
          r.out[lrow * c.dv + e] = acc;
        }
        if (!backward) continue;
        // The backward from the stored out (what the kernels read): delta = dout . out.
        double delta = 0;
        for (int64_t e = 0; e < c.dv; ++e) {  // out as stored (set_backward_inputs)
          delta += DO(p.oo(q0 + i, h) + e) *
                   from_bits(to_bits(r.out[lrow * c.dv + e], c.dtype), c.dtype);
        }
        for (int64_t j = 0; j < sk; ++j) {
          if (pr[j] == 0) continue;
          double dpj = 0;
          for (int64_t e = 0; e < c.dv; ++e)
            dpj += DO(p.oo(q0 + i, h) + e) * V(p.vo(k0 + j, hk) + e);
          const double ds = pr[j] * (dpj - delta);
          for (int64_t e = 0; e < c.d; ++e) {
            r.dq[p.qo(q0 + i, h) + e] += p.scale * ds * Kx(p.ko(k0 + j, hk) + e);
            r.dk[p.ko(k0 + j, hk) + e] += p.scale * ds * Q(p.qo(q0 + i, h) + e);
          }
          for (int64_t e = 0; e < c.dv; ++e)
            r.dv[p.vo(k0 + j, hk) + e] += pr[j] * DO(p.oo(q0 + i, h) + e);
        }
      }
    }
  }
  return r;
}

// ---- comparison ---------------------------------------------------------------------------------

double g_worst = 0;  // the largest |got - ref| / (atol + rtol |ref|) of the passing runs
int g_problems = 0;  // plans run and compared
int64_t g_checked = 0;

struct Tol {
  double rtol, atol_of_max;
};
// rtol: a bf16 ulp (covers round-toward-zero and the 16-bit dq accumulation's few roundings) or an
// f16 one; atol: a small fraction of the tensor's largest reference value (float32 arithmetic).
Tol tol_for(DType t) { return t == DType::kBF16 ? Tol{0x1p-7, 4e-3} : Tol{0x1p-10, 1e-3}; }

// Mismatches of `n` 16-bit (or f32 when f32) elements against ref; the worst ratio into *worst.
int64_t compare(const char* what, const void* got, bool f32, DType t,
                const std::vector<double>& ref, Tol tol, double* worst, bool verbose) {
  double mx = 0;
  for (double r : ref) {
    if (std::isfinite(r)) mx = std::max(mx, std::abs(r));
  }
  const double atol = tol.atol_of_max * std::max(mx, 1e-3);
  int64_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = f32 ? static_cast<double>(static_cast<const float*>(got)[i])
                         : from_bits(static_cast<const uint16_t*>(got)[i], t);
    const double r = ref[i];
    bool ok;
    double ratio = 0;
    if (std::isinf(r)) {
      ok = g == r;
    } else {
      ratio = std::abs(g - r) / (atol + tol.rtol * std::abs(r));
      ok = ratio <= 1.0;  // false for NaN
    }
    if (ok) {
      *worst = std::max(*worst, ratio);
    } else {
      if (verbose && bad < 3) {
        std::printf("  %s[%zu]: got %.6g, want %.6g\n", what, i, g, r);
      }
      ++bad;
    }
  }
  g_checked += static_cast<int64_t>(ref.size());
  return bad;
}

// ---- running plans ------------------------------------------------------------------------------

using Mutation = std::function<void(kn::Plan&)>;

// Runs every step of a plan on the host backend. False (with a failure recorded) when a kernel has
// no twin or a step fails.
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

kn::Launch* find_launch(kn::Plan& plan, std::string_view part) {
  for (size_t i = 0; i < plan.count; ++i) {
    kn::Step& s = plan.steps[i];
    if (s.kind == kn::Step::Kind::kLaunch &&
        s.launch.kernel->symbol.find(part) != std::string_view::npos) {
      return &s.launch;
    }
  }
  return nullptr;
}

// The inputs of the backward: out (rounded to the dtype) and lse (float32) of the reference.
void set_backward_inputs(Problem& p, const Ref& r) {
  for (size_t i = 0; i < r.out.size(); ++i) p.out_in.u16()[i] = to_bits(r.out[i], p.c.dtype);
  for (size_t i = 0; i < r.lse.size(); ++i) p.lse_in.f32()[i] = static_cast<float>(r.lse[i]);
}

struct Outcome {
  int64_t bad = 0;  // mismatching elements
  double worst = 0;
  bool guards = true;
};

Outcome run_fwd(Problem& p, const Ref& ref, const Mutation& mutate = {}, bool verbose = true) {
  Outcome o;
  const ja::Target t = p.c.target();
  const ops::FlashAttnFwdParams params = p.fwd_params();
  const auto v = ops::FlashAttnFwdAsmTier::supports(params, t);
  EXPECT_TRUE(v.ok()) << p.c.name << ": " << v.text();
  if (!v.ok()) return {1, 0, true};
  kn::Plan plan;
  EXPECT_TRUE(ops::decide_and_plan<ops::FlashAttnFwdAsmTier>(params, t, plan).ok());
  // gfx942 loads the MI308 build of the forward on an MI308 chip id, the MI300 one otherwise.
  if (p.c.arch == Arch::kGfx942) {
    const std::string_view co = plan.steps[0].launch.kernel->code_object;
    EXPECT_EQ(co.substr(0, 18), p.c.chip == 0x74a2 ? "fmha_v3_fwd/MI308/" : "fmha_v3_fwd/MI300/");
  }
  if (mutate) mutate(plan);
  std::memset(p.out.data(), 0xFF, p.out.n);
  std::memset(p.lse.data(), 0xFF, p.lse.n);
  if (!execute(plan)) return {1, 0, true};
  const Tol tol = tol_for(p.c.dtype);
  o.bad += compare("out", p.out.data(), false, p.c.dtype, ref.out, tol, &o.worst, verbose);
  o.bad += compare("lse", p.lse.data(), true, p.c.dtype, ref.lse, {1e-5, 1e-6}, &o.worst, verbose);
  o.guards = p.out.guards_intact() && p.lse.guards_intact();
  return o;
}

Outcome run_bwd(Problem& p, const Ref& ref, const Mutation& mutate = {}, bool verbose = true) {
  Outcome o;
  const ja::Target t = p.c.target();
  const ops::FlashAttnBwdParams probe = p.bwd_params(0);
  const auto v = ops::FlashAttnBwdAsmTier::supports(probe, t);
  EXPECT_TRUE(v.ok()) << p.c.name << ": " << v.text();
  if (!v.ok()) return {1, 0, true};
  const int64_t ws = ops::flash_attn_bwd_asm_workspace_bytes(*ops::attn_problem(probe));
  p.ws = Buf(static_cast<size_t>(std::max<int64_t>(ws, 4)));
  const ops::FlashAttnBwdParams params = p.bwd_params(ws);
  kn::Plan plan;
  plan.workspace_base = p.ws.data();
  EXPECT_TRUE(ops::decide_and_plan<ops::FlashAttnBwdAsmTier>(params, t, plan).ok());
  EXPECT_LE(plan.workspace.total, ws);
  if (mutate) mutate(plan);
  std::memset(p.dq.data(), 0xFF, p.dq.n);
  std::memset(p.dk.data(), 0xFF, p.dk.n);
  std::memset(p.dv.data(), 0xFF, p.dv.n);
  if (!execute(plan)) return {1, 0, true};
  Tol tol = tol_for(p.c.dtype);
  o.bad += compare("dq", p.dq.data(), false, p.c.dtype, ref.dq, tol, &o.worst, verbose);
  o.bad += compare("dk", p.dk.data(), false, p.c.dtype, ref.dk, tol, &o.worst, verbose);
  o.bad += compare("dv", p.dv.data(), false, p.c.dtype, ref.dv, tol, &o.worst, verbose);
  o.guards =
      p.dq.guards_intact() && p.dk.guards_intact() && p.dv.guards_intact() && p.ws.guards_intact();
  return o;
}

// The plan's notes, for the log.
std::string notes_of(const Problem& p, bool backward) {
  kn::Plan plan;
  Problem& q = const_cast<Problem&>(p);
  const ja::Target t = p.c.target();
  Buf ws(1 << 20);
  plan.workspace_base = ws.data();
  std::string s;
  if (backward) {
    EXPECT_TRUE(ops::decide_and_plan<ops::FlashAttnBwdAsmTier>(q.bwd_params(0), t, plan).ok());
  } else {
    EXPECT_TRUE(ops::decide_and_plan<ops::FlashAttnFwdAsmTier>(q.fwd_params(), t, plan).ok());
  }
  for (const kn::Step& st : plan.view()) {
    if (st.kind == kn::Step::Kind::kLaunch) {
      s += std::string(st.launch.kernel->symbol) + " ";
    }
  }
  return s;
}

void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  Problem p(c);
  const Ref ref = reference(p, c.bwd);
  if (c.fwd) {
    const Outcome o = run_fwd(p, ref);
    EXPECT_EQ(o.bad, 0) << c.name << " forward";
    EXPECT_TRUE(o.guards) << c.name << " forward wrote out of bounds";
    ++g_problems;
    g_worst = std::max(g_worst, o.worst);
    std::printf("%-34s fwd worst %.3f  %s\n", c.name.c_str(), o.worst, notes_of(p, false).c_str());
  }
  if (c.bwd) {
    set_backward_inputs(p, ref);
    const Outcome o = run_bwd(p, ref);
    EXPECT_EQ(o.bad, 0) << c.name << " backward";
    EXPECT_TRUE(o.guards) << c.name << " backward wrote out of bounds";
    ++g_problems;
    g_worst = std::max(g_worst, o.worst);
    std::printf("%-34s bwd worst %.3f  %s\n", c.name.c_str(), o.worst, notes_of(p, true).c_str());
  }
}

constexpr uint32_t kMi300x = 0x74a1, kMi308x = 0x74a2;

Case mk(std::string name, Arch arch, DType t, int64_t b, int64_t sq, int64_t sk, int64_t hq,
        int64_t hk, int64_t d, int64_t dv, bool causal) {
  Case c;
  c.name = std::move(name);
  c.arch = arch;
  c.dtype = t;
  c.b = b;
  c.sq = sq;
  c.sk = sk;
  c.hq = hq;
  c.hk = hk;
  c.d = d;
  c.dv = dv;
  c.causal = causal;
  return c;
}
Case with(Case c, auto&& f) {
  f(c);
  return c;
}
Case varlen(Case c, std::vector<std::pair<int, int>> lens) {
  c.lens = std::move(lens);
  c.b = static_cast<int64_t>(c.lens.size());
  c.sq = c.sk = 0;
  for (auto [a, b] : c.lens) {
    c.sq = std::max<int64_t>(c.sq, a);
    c.sk = std::max<int64_t>(c.sk, b);
  }
  return c;
}

constexpr Arch k942 = Arch::kGfx942, k950 = Arch::kGfx950;
constexpr DType kBF = DType::kBF16, kF16 = DType::kF16;

// ---- tests --------------------------------------------------------------------------------------

TEST(AiterFmhaTwins, EveryRowSymbolHasATwin) {
  auto has = [](const kn::KernelInfo& k) {
    return ja::runtime::HostTwins::find(k.symbol) != nullptr;
  };
  for (const auto& r : kn::kAiterFmhaFwdRows) EXPECT_TRUE(has(r.kernel)) << r.kernel.symbol;
  for (const auto& r : kn::kAiterFmhaBwdOdoRows) EXPECT_TRUE(has(r.kernel)) << r.kernel.symbol;
  for (const auto& r : kn::kAiterFmhaBwdDqdkdvRows) EXPECT_TRUE(has(r.kernel)) << r.kernel.symbol;
  for (const auto& r : kn::kAiterFmhaBwdDqConvertRows)
    EXPECT_TRUE(has(r.kernel)) << r.kernel.symbol;
  for (const auto& r : kn::kAiterFmhaBwdDqShuffleRows)
    EXPECT_TRUE(has(r.kernel)) << r.kernel.symbol;
}

TEST(AiterFmhaTwins, Gfx942BatchPlans) {
  const std::vector<Case> cases = {
      with(mk("942 hd128 gqa causal sq>sk", k942, kBF, 2, 300, 200, 4, 2, 128, 128, true),
           [](Case& c) { c.cvt = 1; }),
      with(mk("942-mi300x hd128 mha sq<sk rtne", k942, kBF, 1, 200, 333, 2, 2, 128, 128, false),
           [](Case& c) { c.cvt = 0, c.chip = kMi300x; }),
      with(mk("942-mi308 hd128 causal rtz", k942, kBF, 1, 257, 257, 2, 1, 128, 128, true),
           [](Case& c) { c.cvt = 2, c.chip = kMi308x; }),
      with(mk("942 hd192x128 mqa causal", k942, kBF, 1, 257, 300, 4, 1, 192, 128, true),
           [](Case& c) { c.cvt = 2, c.bwd = false; }),
      with(mk("942-mi308 hd192x128 sq>sk", k942, kBF, 2, 140, 100, 2, 2, 192, 128, false),
           [](Case& c) { c.chip = kMi308x, c.bwd = false; }),
      // The backward alone (the forward gate takes bf16 (128 | 192, 128) only).
      with(mk("942 a16 f16 d72 causal (pddv)", k942, kF16, 1, 128, 128, 2, 2, 72, 72, true),
           [](Case& c) { c.a32 = false, c.fwd = false; }),
      with(mk("942 a16 bf16 d64 rtna", k942, kBF, 2, 192, 192, 2, 2, 64, 64, false),
           [](Case& c) { c.a32 = false, c.fwd = false, c.cvt = 1; }),
      with(mk("942 a16 bf16 d128 causal rtz", k942, kBF, 1, 256, 256, 2, 2, 128, 128, true),
           [](Case& c) { c.a32 = false, c.fwd = false, c.cvt = 2; }),
      with(mk("942 a32 bf16 d160 gqa causal", k942, kBF, 1, 50, 90, 4, 2, 160, 160, true),
           [](Case& c) { c.fwd = false, c.cvt = 2; }),
      with(mk("942 a32 f16 d64 sq<sk", k942, kF16, 2, 40, 70, 2, 1, 64, 64, false),
           [](Case& c) { c.fwd = false; }),
      with(mk("942 a32 f16 d192 causal sq>sk", k942, kF16, 1, 90, 33, 2, 2, 192, 192, true),
           [](Case& c) { c.fwd = false; }),
      with(mk("942 a32 bf16 d64 causal mqa", k942, kBF, 1, 70, 70, 3, 1, 64, 64, true),
           [](Case& c) { c.fwd = false, c.cvt = 0; }),
      // Sliding windows (the backward's SWA rows: CK's mask_x / mask_y).
      with(mk("942 swa bf16 d128 (32, 8) sq<sk", k942, kBF, 2, 100, 150, 2, 2, 128, 128, false),
           [](Case& c) { c.fwd = false, c.wl = 32, c.wr = 8, c.cvt = 2; }),
      with(mk("942 swa f16 d96 (20, -1) gqa sq>sk", k942, kF16, 1, 160, 90, 4, 2, 96, 96, false),
           [](Case& c) { c.fwd = false, c.wl = 20; }),
      with(mk("942 swa bf16 d128 (-1, 5)", k942, kBF, 1, 64, 64, 2, 1, 128, 128, false),
           [](Case& c) { c.fwd = false, c.wr = 5, c.cvt = 0; }),
  };
  for (const Case& c : cases) check_case(c);
}

TEST(AiterFmhaTwins, Gfx942VarlenPlans) {
  const std::vector<Case> cases = {
      varlen(mk("942 varlen hd128 gqa causal", k942, kBF, 0, 0, 0, 4, 2, 128, 128, true),
             {{0, 5}, {1, 1}, {300, 200}, {40, 0}, {130, 270}}),
      with(varlen(mk("942 varlen hd128 sq!=sk rtz", k942, kBF, 0, 0, 0, 2, 2, 128, 128, false),
                  {{260, 3}, {1, 300}, {0, 0}, {17, 17}}),
           [](Case& c) { c.cvt = 2; }),
      with(varlen(mk("942 varlen hd192x128 causal", k942, kBF, 0, 0, 0, 2, 1, 192, 128, true),
                  {{129, 300}, {1, 0}, {200, 64}}),
           [](Case& c) { c.bwd = false; }),
      with(varlen(mk("942-mi308 varlen hd192x128", k942, kBF, 0, 0, 0, 2, 2, 192, 128, false),
                  {{300, 10}, {0, 7}, {5, 200}}),
           [](Case& c) { c.bwd = false, c.chip = kMi308x, c.cvt = 0; }),
      with(varlen(mk("942 varlen a32 f16 d128", k942, kF16, 0, 0, 0, 2, 2, 128, 128, false),
                  {{60, 90}, {0, 4}, {33, 1}}),
           [](Case& c) { c.fwd = false; }),
      with(varlen(mk("942 varlen a32 bf16 d96 gqa causal", k942, kBF, 0, 0, 0, 4, 2, 96, 96, true),
                  {{70, 40}, {1, 1}, {20, 90}}),
           [](Case& c) { c.fwd = false, c.cvt = 2; }),
      with(varlen(mk("942 varlen a32 f16 d64", k942, kF16, 0, 0, 0, 2, 1, 64, 64, true),
                  {{64, 64}, {64, 64}}),
           [](Case& c) { c.fwd = false; }),
      with(varlen(mk("942 varlen a32 bf16 d136 mqa", k942, kBF, 0, 0, 0, 3, 1, 136, 136, false),
                  {{1, 0}, {45, 80}, {80, 45}}),
           [](Case& c) { c.fwd = false, c.cvt = 0; }),
  };
  for (const Case& c : cases) check_case(c);
}

// Issue 23: max_seqlen below a sequence's length (traced offsets, which nobody checks). The
// forward's group-mode grid spans total_q's tiles (AITER's), and ours of the backward's three
// kernels total_q / total_k's: every row and key of the longer sequences is computed whole.
TEST(AiterFmhaTwins, VarlenSequencesLongerThanMaxSeqlen) {
  for (Arch arch : {k942, k950}) {
    const Case c = with(varlen(mk(arch == k942 ? "942 varlen past max_seqlen causal"
                                               : "950 varlen past max_seqlen causal",
                                  arch, kBF, 0, 0, 0, 4, 2, 128, 128, true),
                               {{300, 200}, {1, 1}, {130, 270}}),
                        [](Case& cc) { cc.sq = 100, cc.sk = 90; });
    check_case(c);
  }
}

// AITER's 16-bit dq accumulator (gfx950's a16 group rows) holds max_seqlen_q rows a sequence: with
// traced offsets a longer sequence would write past it, so the tier takes varlen with atomic32
// only (our kernels run the rest).
TEST(AiterFmhaTwins, Gfx950VarlenA16IsDeclined) {
  for (bool a32 : {false, true}) {
    const Case c =
        with(varlen(mk("950 varlen f16 d120", k950, kF16, 0, 0, 0, 2, 2, 120, 120, false),
                    {{50, 80}, {0, 9}, {31, 1}}),
             [&](Case& cc) { cc.a32 = a32, cc.fwd = false; });
    Problem p(c);
    const ja::Verdict v = ops::FlashAttnBwdAsmTier::supports(p.bwd_params(0), c.target()).verdict();
    EXPECT_EQ(v.ok(), a32) << v.text();
    if (!a32) {
      EXPECT_NE(v.text().find("atomic32 only"), std::string::npos) << v.text();
    }
  }
}

// Four dqdkdv symbols name a gfx942 build (ts 192) and a gfx950 one (ts 256); the registry is keyed
// by symbol, so the one twin must take each plan's tile from its Ts.
TEST(AiterFmhaTwins, SharedSymbolsTakeTheirPlansTile) {
  std::string symbol[2];
  uint32_t grid_x[2] = {0, 0};
  for (Arch arch : {k942, k950}) {
    const Case c = with(varlen(mk(arch == k942 ? "942 varlen f16 d120 causal (ts 192)"
                                               : "950 varlen f16 d120 causal (ts 256)",
                                  arch, kF16, 0, 0, 0, 2, 2, 120, 120, true),
                               {{150, 400}, {0, 2}, {20, 1}}),
                        [](Case& cc) { cc.fwd = false; });
    check_case(c);
    Problem p(c);
    Buf ws(1 << 22);
    kn::Plan plan;
    plan.workspace_base = ws.data();
    EXPECT_TRUE(
        ops::decide_and_plan<ops::FlashAttnBwdAsmTier>(p.bwd_params(0), c.target(), plan).ok());
    const kn::Launch* l = find_launch(plan, "psskddv");
    ASSERT_NE(l, nullptr);
    symbol[arch == k950] = std::string(l->kernel->symbol);
    grid_x[arch == k950] = l->grid.x;
  }
  EXPECT_EQ(symbol[0], symbol[1]);
  EXPECT_EQ(grid_x[0], 2u);  // (cdiv(total_k 403, 192) + 1) / 2
  EXPECT_EQ(grid_x[1], 1u);  // (cdiv(total_k 403, 256) + 1) / 2
}

TEST(AiterFmhaTwins, Gfx950Plans) {
  const std::vector<Case> cases = {
      with(mk("950 hd128 gqa causal a32", k950, kBF, 1, 300, 290, 2, 1, 128, 128, true),
           [](Case& c) { c.cvt = 1; }),
      mk("950 hd192x128 causal sq>sk", k950, kBF, 1, 300, 150, 2, 2, 192, 128, true),
      with(mk("950 hd192x128 a16 sq<sk", k950, kBF, 1, 150, 300, 2, 1, 192, 128, false),
           [](Case& c) { c.a32 = false; }),
      with(mk("950 a16 f16 d128 (bf16 shuffle)", k950, kF16, 1, 100, 300, 2, 2, 128, 128, false),
           [](Case& c) { c.a32 = false, c.fwd = false; }),
      with(mk("950 one-block d80 (a32 asked)", k950, kBF, 2, 40, 200, 2, 2, 80, 80, true),
           [](Case& c) { c.fwd = false; }),
      with(mk("950 deterministic one-block", k950, kF16, 1, 33, 256, 2, 1, 128, 128, false),
           [](Case& c) { c.fwd = false, c.det = true; }),
      varlen(mk("950 varlen hd128 causal a32", k950, kBF, 0, 0, 0, 2, 1, 128, 128, true),
             {{0, 3}, {1, 1}, {290, 300}, {2, 0}}),
      with(varlen(mk("950 varlen a32 f16 d128 gqa", k950, kF16, 0, 0, 0, 4, 2, 128, 128, true),
                  {{40, 300}, {7, 0}}),
           [](Case& c) { c.fwd = false; }),
  };
  for (const Case& c : cases) check_case(c);
}

// bf16_cvt 2 (toward zero) really truncates: no output element is larger in magnitude than its
// exact value (beyond float32's error), where nearest rounding raises about half of them.
TEST(AiterFmhaTwins, RoundTowardZeroTruncates) {
  for (int cvt : {2, 0}) {
    const Case c = with(mk("942 rounding", k942, kBF, 1, 200, 200, 2, 2, 128, 128, false),
                        [&](Case& cc) { cc.cvt = cvt, cc.bwd = false; });
    Problem p(c);
    const Ref ref = reference(p, false);
    const Outcome o = run_fwd(p, ref);
    EXPECT_EQ(o.bad, 0);
    int64_t up = 0;
    for (size_t i = 0; i < ref.out.size(); ++i) {
      const double g = from_bits(p.out.u16()[i], kBF);
      if (std::abs(g) > std::abs(ref.out[i]) * (1 + 1e-5) + 1e-7) ++up;
    }
    if (cvt == 2) {
      EXPECT_EQ(up, 0);
    } else {
      EXPECT_GT(up, static_cast<int64_t>(ref.out.size()) / 4);
    }
  }
}

// The comparison fails when the plan is wrong: each mutation of a correct plan must mismatch.
TEST(AiterFmhaTwins, WrongPlansFail) {
  struct M {
    std::string what;
    Case c;
    bool backward;
    Mutation mutate;
  };
  const Case fwd_c = mk("mut fwd", k942, kBF, 1, 600, 300, 2, 2, 128, 128, true);
  const Case fwd_g = varlen(mk("mut fwd varlen", k950, kBF, 0, 0, 0, 2, 1, 128, 128, false),
                            {{600, 40}, {10, 30}});
  const Case bwd_c = with(mk("mut bwd", k942, kBF, 1, 100, 300, 2, 1, 128, 128, true),
                          [](Case& c) { c.fwd = false; });
  const Case bwd_950 = with(mk("mut bwd 950", k950, kBF, 1, 100, 300, 2, 2, 192, 128, false),
                            [](Case& c) { c.fwd = false; });
  const Case bwd_swa = with(mk("mut swa", k942, kBF, 1, 100, 150, 2, 2, 128, 128, false),
                            [](Case& c) { c.fwd = false, c.wl = 32, c.wr = 8; });
  const Case bwd_a16 = with(mk("mut a16", k942, kBF, 1, 128, 128, 2, 2, 128, 128, false),
                            [](Case& c) { c.fwd = false, c.a32 = false; });
  auto grid_x = [](std::string_view part, int delta) {
    return [=](kn::Plan& pl) { find_launch(pl, part)->grid.x += delta; };
  };
  auto field = [](std::string_view part, size_t offset, uint32_t value) {
    return [=](kn::Plan& pl) {
      std::memcpy(find_launch(pl, part)->args.bytes.data() + offset, &value, 4);
    };
  };
  auto add_field = [](std::string_view part, size_t offset, int delta) {
    return [=](kn::Plan& pl) {
      uint32_t v;
      auto* p = find_launch(pl, part)->args.bytes.data() + offset;
      std::memcpy(&v, p, 4);
      v += static_cast<uint32_t>(delta);
      std::memcpy(p, &v, 4);
    };
  };
  const std::vector<M> ms = {
      {"forward grid one tile pair short", fwd_c, false, grid_x("fmha_fwd", -1)},
      {"forward group grid z one short", fwd_g, false,
       [](kn::Plan& pl) { --find_launch(pl, "fmha_fwd")->grid.z; }},
      {"forward k head stride 0", fwd_c, false,
       field("fmha_fwd", offsetof(kn::AiterFmhaFwdArgs, s_k_Hs), 0)},
      {"forward s_gqa wrong", fwd_c, false,
       field("fmha_fwd", offsetof(kn::AiterFmhaFwdArgs, s_gqa), 2)},
      {"dqdkdv grid one short", bwd_c, true, grid_x("a32", -1)},
      {"dqdkdv Seqs_k +2 bytes", bwd_c, true,
       add_field("a32", offsetof(kn::AiterFmhaBwdDqdkdvArgs, Seqs_k), 2)},
      {"odo head_dim = hdim_q (AITER's value on gfx950 (192, 128))", bwd_950, true,
       field("odo", offsetof(kn::AiterFmhaBwdOdoArgs, head_dim), 192)},
      {"odo grid one short", bwd_c, true, grid_x("odo", -1)},
      {"dq_convert grid one short", bwd_c, true, grid_x("dq_convert", -1)},
      {"dq_convert accumulator head stride 0", bwd_c, true,
       field("dq_convert", offsetof(kn::AiterFmhaBwdPostArgs, Hs_dq_acc), 0)},
      {"a16 problem on a pssk-less row with sq != sk", bwd_a16, true,
       add_field("a16", offsetof(kn::AiterFmhaBwdDqdkdvArgs, seqlen_k), -64)},
      {"dqdkdv SWA mask_x one less (CK's window coordinates)", bwd_swa, true,
       add_field("swa", offsetof(kn::AiterFmhaBwdDqdkdvArgs, mask_x), -1)},
      {"dq memset dropped", bwd_c, true,
       [](kn::Plan& pl) {
         for (size_t i = 0; i < pl.count; ++i) {
           if (pl.steps[i].kind == kn::Step::Kind::kMemset) {
             pl.steps[i].memset.bytes = 0;
             break;
           }
         }
       }},
  };
  for (const M& m : ms) {
    SCOPED_TRACE(m.what);
    Problem p(m.c);
    const Ref ref = reference(p, m.backward);
    // The unmutated plan passes ...
    Outcome good;
    if (m.backward) {
      set_backward_inputs(p, ref);
      good = run_bwd(p, ref);
    } else {
      good = run_fwd(p, ref);
    }
    EXPECT_EQ(good.bad, 0) << m.what << ": the correct plan";
    // ... and the mutated one does not.
    const Outcome bad =
        m.backward ? run_bwd(p, ref, m.mutate, false) : run_fwd(p, ref, m.mutate, false);
    EXPECT_GT(bad.bad, 0) << m.what << ": a wrong plan passed";
    std::printf("mutation %-62s %lld mismatches\n", m.what.c_str(),
                static_cast<long long>(bad.bad));
  }
}

// ---- fp8 forward
// ---------------------------------------------------------------------------------- AITER's
// fp8bf16 rows through their host twins: e4m3 q, k, v (the arch's format) with per-tensor descales,
// bf16 out, against float64 of the dequantised inputs (descale * decoded byte). The tolerance is
// the bf16 one above: the inputs are exact in both, so what is left is float32 arithmetic and the
// bf16 rounding of out (gfx942's rows round away from zero).
struct Fp8Case {
  std::string name;
  Arch arch;
  uint32_t chip;
  std::vector<std::pair<int, int>> lens;  // (sq, sk) per sequence; varlen when `varlen`
  bool varlen, causal;
  int64_t hq, hk, d;
};

struct Fp8Problem {
  Fp8Case c;
  DType fmt;
  int64_t nseq, tq, tk, sq = 0, sk = 0;
  std::vector<int> cu_q{0}, cu_k{0};
  Buf q, k, v, out, lse, cuq, cuk, qd, kd, vd;
  float scale;
  std::vector<double> ref_out, ref_lse;

  explicit Fp8Problem(const Fp8Case& cs) : c(cs) {
    fmt = c.arch == Arch::kGfx942 ? DType::kF8E4M3FNUZ : DType::kF8E4M3FN;
    const ja::MiniFloat& f = fmt == DType::kF8E4M3FNUZ ? ja::kE4M3FNUZFormat : ja::kE4M3FNFormat;
    nseq = static_cast<int64_t>(c.lens.size());
    for (auto [a, b] : c.lens) {
      cu_q.push_back(cu_q.back() + a);
      cu_k.push_back(cu_k.back() + b);
      sq = std::max<int64_t>(sq, a);
      sk = std::max<int64_t>(sk, b);
    }
    tq = cu_q.back();
    tk = cu_k.back();
    scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
    std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(c.name)));
    std::uniform_real_distribution<double> u(-12.0, 12.0);
    auto fill = [&](Buf& buf, int64_t n) {
      buf = Buf(static_cast<size_t>(n));
      auto* b = static_cast<unsigned char*>(buf.data());
      for (int64_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(ja::encode(f, u(rng)));
    };
    fill(q, tq * c.hq * c.d);
    fill(k, tk * c.hk * c.d);
    fill(v, tk * c.hk * c.d);
    out = Buf(static_cast<size_t>(tq * c.hq * c.d * 2));
    lse = Buf(static_cast<size_t>(tq * c.hq * 4));
    cuq = Buf(static_cast<size_t>(nseq + 1) * 4);
    cuk = Buf(cuq.n);
    std::memcpy(cuq.data(), cu_q.data(), cuq.n);
    std::memcpy(cuk.data(), cu_k.data(), cuk.n);
    const float descales[3] = {0.04f, 0.07f, 0.3f};
    Buf* bufs[3] = {&qd, &kd, &vd};
    for (int i = 0; i < 3; ++i) {
      *bufs[i] = Buf(4);
      bufs[i]->f32()[0] = descales[i];
    }
    // The float64 reference over the dequantised inputs (each byte decoded once).
    auto dequant = [&](Buf& buf, float ds) {
      std::vector<double> out(buf.n);
      for (size_t i = 0; i < buf.n; ++i) {
        out[i] = ja::decode(f, static_cast<unsigned char*>(buf.data())[i]) * ds;
      }
      return out;
    };
    const std::vector<double> xq = dequant(q, descales[0]), xk = dequant(k, descales[1]),
                              xv = dequant(v, descales[2]);
    auto x = [&](Buf& buf, int64_t i, float) {
      return (&buf == &q ? xq : &buf == &k ? xk : xv)[static_cast<size_t>(i)];
    };
    ref_out.assign(static_cast<size_t>(tq * c.hq * c.d), 0.0);
    ref_lse.assign(static_cast<size_t>(tq * c.hq), 0.0);
    for (int64_t s = 0; s < nseq; ++s) {
      const int64_t q0 = cu_q[s], k0 = cu_k[s], n = cu_q[s + 1] - q0, m = cu_k[s + 1] - k0;
      for (int64_t h = 0; h < c.hq; ++h) {
        const int64_t hk = h / (c.hq / c.hk);
        for (int64_t i = 0; i < n; ++i) {
          std::vector<double> sc(static_cast<size_t>(m), -INFINITY);
          double mx = -INFINITY;
          for (int64_t j = 0; j < m; ++j) {
            if (c.causal && j > i + m - n) continue;
            double dot = 0;
            for (int64_t e = 0; e < c.d; ++e) {
              dot += x(q, ((q0 + i) * c.hq + h) * c.d + e, descales[0]) *
                     x(k, ((k0 + j) * c.hk + hk) * c.d + e, descales[1]);
            }
            sc[j] = dot * scale;
            mx = std::max(mx, sc[j]);
          }
          double l = 0;
          for (int64_t j = 0; j < m; ++j) l += sc[j] == -INFINITY ? 0 : std::exp(sc[j] - mx);
          const int64_t row = (q0 + i) * c.hq + h;
          for (int64_t e = 0; e < c.d; ++e) {
            double acc = 0;
            for (int64_t j = 0; j < m; ++j) {
              if (sc[j] == -INFINITY) continue;
              acc += std::exp(sc[j] - mx) * x(v, ((k0 + j) * c.hk + hk) * c.d + e, descales[2]);
            }
            ref_out[row * c.d + e] = l > 0 ? acc / l : 0.0;
          }
          const int64_t li = c.varlen ? h * tq + q0 + i : (s * c.hq + h) * sq + i;
          ref_lse[li] = l > 0 ? mx + std::log(l) : INFINITY;
        }
      }
    }
  }

  ops::FlashAttnFwdParams params() {
    ops::FlashAttnFwdParams p;
    auto t = [](Buf& buf, DType dt, std::initializer_list<int64_t> dims) {
      return ops::Tensor::over(buf.data(), dt, dims);
    };
    if (c.varlen) {
      p.q = t(q, fmt, {tq, c.hq, c.d});
      p.k = t(k, fmt, {tk, c.hk, c.d});
      p.v = t(v, fmt, {tk, c.hk, c.d});
      p.out = t(out, DType::kBF16, {tq, c.hq, c.d});
      p.lse = t(lse, DType::kF32, {c.hq, tq});
      p.cu_seqlens_q = t(cuq, DType::kI32, {nseq + 1});
      p.cu_seqlens_k = t(cuk, DType::kI32, {nseq + 1});
    } else {
      p.q = t(q, fmt, {nseq, sq, c.hq, c.d});
      p.k = t(k, fmt, {nseq, sk, c.hk, c.d});
      p.v = t(v, fmt, {nseq, sk, c.hk, c.d});
      p.out = t(out, DType::kBF16, {nseq, sq, c.hq, c.d});
      p.lse = t(lse, DType::kF32, {nseq, c.hq, sq});
    }
    p.q_descale = t(qd, DType::kF32, {1});
    p.k_descale = t(kd, DType::kF32, {1});
    p.v_descale = t(vd, DType::kF32, {1});
    p.opt.softmax_scale = scale;
    p.opt.causal = c.causal;
    p.opt.max_seqlen_q = c.varlen ? sq : 0;
    p.opt.max_seqlen_k = c.varlen ? sk : 0;
    return p;
  }

  // Mismatches of out and lse after running the (mutated) plan.
  int64_t run(const Mutation& mutate = {}, bool verbose = true) {
    ja::Target t{ja::BackendKind::kHip, c.arch, c.arch == Arch::kGfx942 ? 304 : 256, 0};
    t.pci_chip_id = c.chip;
    const ops::FlashAttnFwdParams p = params();
    kn::Plan plan;
    const auto st = ops::decide_and_plan<ops::FlashAttnFwdAsmTier>(p, t, plan);
    EXPECT_TRUE(st.ok()) << c.name << ": " << st.text();
    if (!st.ok()) return 1;
    if (mutate) mutate(plan);
    std::memset(out.data(), 0xFF, out.n);
    std::memset(lse.data(), 0xFF, lse.n);
    if (!execute(plan)) return 1;
    double worst = 0;
    int64_t bad = compare("out", out.data(), false, DType::kBF16, ref_out, tol_for(DType::kBF16),
                          &worst, verbose);
    bad += compare("lse", lse.data(), true, DType::kBF16, ref_lse, {1e-5, 1e-6}, &worst, verbose);
    EXPECT_TRUE(out.guards_intact() && lse.guards_intact()) << c.name;
    if (bad == 0) g_worst = std::max(g_worst, worst);
    if (verbose) {
      std::printf("%-34s fp8 fwd worst %.3f  %s\n", c.name.c_str(), worst,
                  std::string(plan.steps[0].launch.kernel->symbol).c_str());
    }
    return bad;
  }
};

TEST(AiterFmhaTwins, Fp8Plans) {
  const Fp8Case cases[] = {
      {"fp8 gfx942 batch causal gqa4", k942, kMi300x, {{200, 300}}, false, true, 4, 1, 128},
      {"fp8 gfx942 mi308 varlen",
       k942,
       kMi308x,
       {{150, 90}, {3, 260}, {300, 300}},
       true,
       false,
       2,
       2,
       128},
      {"fp8 gfx950 batch hd256 causal", k950, 0, {{160, 160}}, false, true, 2, 2, 256},
      {"fp8 gfx950 varlen causal gqa2", k950, 0, {{70, 100}, {260, 200}}, true, true, 4, 2, 128},
  };
  for (const Fp8Case& c : cases) {
    Fp8Problem p(c);
    EXPECT_EQ(p.run(), 0) << c.name;
    ++g_problems;
  }
  // Wrong packing fails: 2-byte q strides (bf16's), a null v descale, s_Ts of the wrong tile.
  Fp8Problem p({"fp8 gfx942 small varlen", k942, kMi300x, {{40, 50}}, true, true, 4, 1, 128});
  const auto set_u32 = [](kn::Plan& plan, uint32_t at, uint32_t v) {
    std::memcpy(plan.steps[0].launch.args.bytes.data() + at, &v, 4);
  };
  EXPECT_GT(p.run([&](kn::Plan& plan) { set_u32(plan, 112, 4 * 128 * 2); }, false), 0);
  EXPECT_GT(p.run(
                [&](kn::Plan& plan) {
                  const uint64_t null = 0;
                  std::memcpy(plan.steps[0].launch.args.bytes.data() + 544, &null, 8);
                },
                false),
            0);
  EXPECT_GT(p.run([&](kn::Plan& plan) { set_u32(plan, 128, 128 * 4 * 128); }, false), 0);
}

TEST(AiterFmhaTwins, Summary) {
  std::printf("problems run: %d, elements checked: %lld, worst error ratio: %.3f\n", g_problems,
              static_cast<long long>(g_checked), g_worst);
  EXPECT_LE(g_worst, 1.0);
}

}  // namespace
