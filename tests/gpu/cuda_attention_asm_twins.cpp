// The ASM tiers of attention (ops/attention_asm.hpp: AITER's v3 forward and backward as planned for
// gfx942 and gfx950) run on an sm_90 GPU through the ABI twins of AITER's kernels
// (kernels_co/aiter_fmha_v3.twin.cpp), with nothing but the CUDA driver API: no XLA, no jax_aiter
// runtime. For each problem and each target (gfx942 MI300, gfx942 MI308, gfx950) the tiers' gates
// decide; where they take the problem, their plans (grids, packed structs, memsets, workspace) run
// as a backend runs them, on outputs poisoned with NaN and followed by a guard that must stay
// untouched, and are compared with a float64 reference computed here. The backward gets the
// reference's out and lse (rounded as the forward stores them) as its inputs. GQA plans end in our
// portable gqa_reduce kernel: give attention.sm_90.cubin as the second argument (without it GQA
// backward problems are skipped). Prints PASS / FAIL / SKIP lines and 'N passed, M failed,
// K skipped'; exit status 1 when any check fails.
// Usage: cuda_attention_asm_twins TWIN_CUBIN [ATTENTION_CUBIN]
// Build the cubin with
//   nvcc -cubin -arch=sm_90 -O3 -std=c++17 -x cu -I kernels_co/include -I include -o X.cubin
//        kernels_co/aiter_fmha_v3.twin.cpp
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/aiter/fmha_v3.hpp"
#include "jax_aiter/kernels/attention.hpp"
#include "jax_aiter/ops/attention_asm.hpp"
#include "jax_aiter/ops/attention_params.hpp"

#include "cuda_check.hpp"

namespace jk = jax_aiter::kernels;
namespace ops = jax_aiter::ops;
using jax_aiter::Arch;
using jax_aiter::DType;

namespace {

int passed = 0, failed = 0, skipped = 0;
void verdict(bool ok, const std::string& what) {
  (ok ? passed : failed)++;
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
}

float decode(DType t, uint16_t h) {
  return t == DType::kBF16 ? jax_aiter::bf16_to_float(h) : jax_aiter::f16_to_float(h);
}
uint16_t encode(DType t, float f) {
  return t == DType::kBF16 ? jax_aiter::float_to_bf16(f) : jax_aiter::float_to_f16(f);
}

// ---- device memory, kernels, plans ----

struct Kernel {
  CUfunction f = nullptr;
  size_t arg_bytes = 0;
};
std::map<std::string, Kernel, std::less<>> kernels;
std::vector<CUmodule> modules;

const Kernel* find_kernel(std::string_view symbol) {
  const auto it = kernels.find(symbol);
  if (it != kernels.end()) return &it->second;
  for (CUmodule m : modules) {
    Kernel k;
    if (cuModuleGetFunction(&k.f, m, std::string(symbol).c_str()) != CUDA_SUCCESS) continue;
    for (size_t i = 0;; ++i) {
      size_t off = 0, size = 0;
      if (cuFuncGetParamInfo(k.f, i, &off, &size) != CUDA_SUCCESS) break;
      k.arg_bytes = std::max(k.arg_bytes, off + size);
    }
    return &(kernels[std::string(symbol)] = k);
  }
  return nullptr;
}

// The self-test of this program (JA_MUTATE=1 or 2 in the environment): plans the twins must
// reject, so that their checks are seen to fail. 1: every AITER kernel's grid one block short in x
// (where it has more than one); 2: the tile field of the forward (s_Ts) and of the dqdkdv kernel
// (Ts) one row too large.
int mutation = 0;
void mutate(std::string_view symbol, jk::Dim3& grid, jk::KernelArgs& args) {
  if (mutation == 0 || symbol.substr(0, 9) != "_ZN5aiter") return;
  if (mutation == 1 && grid.x > 1) grid.x -= 1;
  if (mutation != 2) return;
  auto field = [&](size_t at) -> uint32_t& {
    return *reinterpret_cast<uint32_t*>(&args.bytes[at]);
  };
  if (symbol.find("fmha_fwd") != std::string_view::npos)
    field(128) += field(112);  // s_Ts += s_Seqs
  const bool main_kernel = symbol.find("fmha_bwd") != std::string_view::npos &&
                           symbol.find("_odo") == std::string_view::npos &&
                           symbol.find("_dq_") == std::string_view::npos;
  if (main_kernel) field(192) += field(304);  // Ts += Seqs_k
}

// Runs a plan's steps in order on one stream, as a backend does; false if a kernel is missing.
bool run_plan(const jk::Plan& plan, std::string& why) {
  for (const jk::Step& st : plan.view()) {
    if (st.kind == jk::Step::Kind::kMemset) {
      CHECK_CU(cuMemsetD32(reinterpret_cast<CUdeviceptr>(st.memset.dst), st.memset.value,
                           st.memset.bytes / 4));
      continue;
    }
    const jk::Launch& l = st.launch;
    const Kernel* k = find_kernel(l.kernel->symbol);
    if (k == nullptr) {
      why = "kernel " + std::string(l.kernel->symbol) + " not in the cubins";
      return false;
    }
    if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0) continue;
    size_t size = std::min<size_t>(l.args.size, k->arg_bytes);
    jk::Dim3 grid = l.grid;
    jk::KernelArgs args = l.args;
    mutate(l.kernel->symbol, grid, args);
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args.bytes.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &size, CU_LAUNCH_PARAM_END};
    CHECK_CU(cuLaunchKernel(k->f, grid.x, grid.y, grid.z, l.block.x, l.block.y, l.block.z,
                            l.shared_bytes, nullptr, nullptr, extra));
  }
  CHECK_CU(cuCtxSynchronize());
  return true;
}

// ---- problems and the float64 reference ----
struct Case {
  std::string name;
  DType dt = DType::kBF16;
  int b = 1, sq = 256, sk = 256, hq = 2, hk = 2, d = 128, dv = 128;
  bool causal = false;
  int wl = -1, wr = -1;
  std::vector<int> lq, lk;  // varlen: sequence lengths (b = lq.size(); sq, sk their maxima)
  bool atomic32 = true, deterministic = false;
  int cvt = 1;
  bool fwd = true, bwd = true;
};

struct Layout {
  bool varlen;
  int nseq, total_q, total_k;
  std::vector<int> q0, k0, ql, kl;
};
Layout layout_of(const Case& c) {
  Layout L{!c.lq.empty(), 0, 0, 0, {}, {}, {}, {}};
  L.nseq = L.varlen ? static_cast<int>(c.lq.size()) : c.b;
  for (int s = 0; s < L.nseq; ++s) {
    const int a = L.varlen ? c.lq[s] : c.sq, z = L.varlen ? c.lk[s] : c.sk;
    L.q0.push_back(L.total_q), L.k0.push_back(L.total_k), L.ql.push_back(a), L.kl.push_back(z);
    L.total_q += a, L.total_k += z;
  }
  return L;
}

// Row-major [rows, heads, dim] per sequence (batch mode: sequence s at row s * len).
struct Ref {
  std::vector<double> out, lse, dq, dk, dv;
};
bool visible(const Case& c, int i, int j, int sq, int sk) {
  const long diag = long(i) + sk - sq;
  int left = c.wl, right = c.causal ? 0 : c.wr;
  if (left >= 0 && j < diag - left) return false;
  if (right >= 0 && j > diag + right) return false;
  return true;
}

Ref reference(const Case& c, const Layout& L, const std::vector<float>& q,
              const std::vector<float>& k, const std::vector<float>& v,
              const std::vector<float>& dout, double scale) {
  Ref r;
  const int R = c.hq / c.hk;
  r.out.assign(size_t(L.total_q) * c.hq * c.dv, 0);
  r.lse.assign(size_t(L.total_q) * c.hq, 0);
  r.dq.assign(size_t(L.total_q) * c.hq * c.d, 0);
  r.dk.assign(size_t(L.total_k) * c.hk * c.d, 0);
  r.dv.assign(size_t(L.total_k) * c.hk * c.dv, 0);
  for (int s = 0; s < L.nseq; ++s) {
    const int sq = L.ql[s], sk = L.kl[s];
    for (int h = 0; h < c.hq; ++h) {
      const int g = h / R;
      std::vector<double> P(size_t(sq) * sk, 0);
      for (int i = 0; i < sq; ++i) {
        const size_t qi = (size_t(L.q0[s] + i) * c.hq + h) * c.d;
        double mx = -INFINITY;
        std::vector<double> srow(sk, -INFINITY);
        for (int j = 0; j < sk; ++j) {
          if (!visible(c, i, j, sq, sk)) continue;
          const size_t kj = (size_t(L.k0[s] + j) * c.hk + g) * c.d;
          double acc = 0;
          for (int e = 0; e < c.d; ++e) acc += double(q[qi + e]) * k[kj + e];
          srow[j] = acc * scale;
          mx = std::max(mx, srow[j]);
        }
        double sum = 0;
        for (int j = 0; j < sk; ++j) sum += srow[j] == -INFINITY ? 0 : std::exp(srow[j] - mx);
        const double lse = sum > 0 ? mx + std::log(sum) : INFINITY;
        r.lse[size_t(h) * L.total_q + L.q0[s] + i] = lse;  // [hq, total] (batch: see below)
        for (int j = 0; j < sk; ++j) {
          P[size_t(i) * sk + j] = srow[j] == -INFINITY ? 0 : std::exp(srow[j] - lse);
        }
        const size_t oi = (size_t(L.q0[s] + i) * c.hq + h) * c.dv;
        for (int j = 0; j < sk; ++j) {
          const double p = P[size_t(i) * sk + j];
          if (p == 0) continue;
          const size_t vj = (size_t(L.k0[s] + j) * c.hk + g) * c.dv;
          for (int e = 0; e < c.dv; ++e) r.out[oi + e] += p * v[vj + e];
        }
      }
      // Backward, with out as the forward stores it (rounded to the dtype).
      for (int i = 0; i < sq; ++i) {
        const size_t oi = (size_t(L.q0[s] + i) * c.hq + h) * c.dv;
        const size_t qi = (size_t(L.q0[s] + i) * c.hq + h) * c.d;
        double delta = 0;
        for (int e = 0; e < c.dv; ++e) {
          delta += double(decode(c.dt, encode(c.dt, float(r.out[oi + e])))) * dout[oi + e];
        }
        for (int j = 0; j < sk; ++j) {
          const double p = P[size_t(i) * sk + j];
          if (p == 0) continue;
          const size_t kj = (size_t(L.k0[s] + j) * c.hk + g) * c.d;
          const size_t vj = (size_t(L.k0[s] + j) * c.hk + g) * c.dv;
          double dp = 0;
          for (int e = 0; e < c.dv; ++e) dp += double(dout[oi + e]) * v[vj + e];
          const double ds = p * (dp - delta);
          for (int e = 0; e < c.dv; ++e) r.dv[vj + e] += p * dout[oi + e];
          for (int e = 0; e < c.d; ++e) {
            r.dq[qi + e] += scale * ds * k[kj + e];
            r.dk[kj + e] += scale * ds * q[qi + e];
          }
        }
      }
    }
  }
  return r;
}

// max |got - ref| / max(max |ref|, 1e-3) over 16-bit elements; NaN counts as infinite.
double rel_error(const std::vector<double>& ref, const std::vector<unsigned char>& got, DType t) {
  double worst = 0, scale = 1e-3;
  for (double x : ref) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < ref.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, &got[i * 2], 2);
    const double e = std::abs(double(decode(t, h)) - ref[i]);
    if (!(e <= 1e30)) return INFINITY;
    worst = std::max(worst, e);
  }
  return worst / scale;
}

std::vector<uint16_t> random16(DType t, size_t n, std::mt19937& rng, std::vector<float>& f) {
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<uint16_t> v(n);
  f.resize(n);
  for (size_t i = 0; i < n; ++i) v[i] = encode(t, dist(rng)), f[i] = decode(t, v[i]);
  return v;
}

struct Target {
  const char* name;
  jax_aiter::Target t;
};

void run_case(const Case& c, const Target& tg, std::mt19937& rng) {
  const Layout L = layout_of(c);
  const std::string what = c.name + " [" + tg.name + "]";
  std::vector<float> qf, kf, vf, dof;
  const auto q = random16(c.dt, size_t(L.total_q) * c.hq * c.d, rng, qf);
  const auto k = random16(c.dt, size_t(L.total_k) * c.hk * c.d, rng, kf);
  const auto v = random16(c.dt, size_t(L.total_k) * c.hk * c.dv, rng, vf);
  const auto dout = random16(c.dt, size_t(L.total_q) * c.hq * c.dv, rng, dof);
  const double scale = 1.0 / std::sqrt(double(c.d));
  const Ref ref = reference(c, L, qf, kf, vf, dof, scale);

  DevBuf dq_ = upload(q), dk_ = upload(k), dv_ = upload(v), ddo = upload(dout);
  std::vector<int> cuq{0}, cuk{0};
  for (int s = 0; s < L.nseq; ++s)
    cuq.push_back(L.q0[s] + L.ql[s]), cuk.push_back(L.k0[s] + L.kl[s]);
  DevBuf dcuq = upload(cuq), dcuk = upload(cuk);
  const int rq = L.varlen ? L.total_q : c.sq, rk = L.varlen ? L.total_k : c.sk;
  auto dims = [&](int rows, int heads, int dim) -> std::vector<int64_t> {
    if (L.varlen) return {rows, heads, dim};
    return {c.b, rows, heads, dim};
  };
  auto T = [&](const DevBuf& b, std::vector<int64_t> d) {
    return ops::Tensor::over(b.ptr(), c.dt, std::span<const int64_t>(d));
  };
  ops::AttnOptions opt;
  opt.softmax_scale = static_cast<float>(scale);
  opt.causal = c.causal;
  opt.window_left = c.wl;
  opt.window_right = c.wr;
  opt.max_seqlen_q = c.sq;
  opt.max_seqlen_k = c.sk;
  opt.bf16_cvt = c.cvt;
  std::optional<ops::Tensor> tcuq, tcuk;
  if (L.varlen) {
    tcuq = ops::Tensor::over(dcuq.ptr(), DType::kI32, {L.nseq + 1});
    tcuk = ops::Tensor::over(dcuk.ptr(), DType::kI32, {L.nseq + 1});
  }
  // The lse layout: [b, hq, sq] or [hq, total_q]; the reference holds [hq, total_q].
  auto lse_ref_at = [&](size_t idx_dev) {
    if (L.varlen) return ref.lse[idx_dev];
    const size_t b = idx_dev / (size_t(c.hq) * c.sq), h = idx_dev / c.sq % c.hq, i = idx_dev % c.sq;
    return ref.lse[h * L.total_q + b * c.sq + i];
  };
  const size_t lse_n = size_t(L.total_q) * c.hq;
  const ops::Tensor tlse_shape = L.varlen
                                     ? ops::Tensor::over(nullptr, DType::kF32, {c.hq, L.total_q})
                                     : ops::Tensor::over(nullptr, DType::kF32, {c.b, c.hq, c.sq});

  if (c.fwd) {
    DevBuf out = poisoned(size_t(L.total_q) * c.hq * c.dv * 2), lse = poisoned(lse_n * 4);
    ops::FlashAttnFwdParams fp;
    fp.q = T(dq_, dims(rq, c.hq, c.d));
    fp.k = T(dk_, dims(rk, c.hk, c.d));
    fp.v = T(dv_, dims(rk, c.hk, c.dv));
    fp.cu_seqlens_q = tcuq, fp.cu_seqlens_k = tcuk;
    fp.out = T(out, dims(rq, c.hq, c.dv));
    fp.lse = tlse_shape;
    fp.lse.data = lse.ptr();
    fp.opt = opt;
    const auto v_ = ops::FlashAttnFwdAsmTier::supports(fp, tg.t);
    if (!v_.ok()) {
      ++skipped;
      std::printf("SKIP fwd %s: %s\n", what.c_str(), v_.text().c_str());
    } else {
      jk::Plan plan;
      ops::plan_with<ops::FlashAttnFwdAsmTier>(fp, tg.t, *v_, plan);
      std::string why;
      if (!run_plan(plan, why)) {
        verdict(false, "fwd " + what + ": " + why);
      } else {
        const auto oh = download(out), lh = download(lse);
        const double eo = rel_error(ref.out, oh, c.dt);
        double el = 0;
        for (size_t i = 0; i < lse_n; ++i) {
          float x;
          std::memcpy(&x, &lh[i * 4], 4);
          const double r = lse_ref_at(i);
          const double e = std::isinf(r) ? (x == float(r) ? 0 : INFINITY) : std::abs(x - r);
          el = std::max(el, std::isnan(e) ? INFINITY : e);
        }
        const bool guards = guard_intact(oh, ref.out.size() * 2) && guard_intact(lh, lse_n * 4);
        char buf[200];
        std::snprintf(buf, sizeof buf, ": out %.2e lse %.2e%s (%s)", eo, el, guards ? "" : " GUARD",
                      std::string(plan.view()[0].launch.kernel->symbol).c_str());
        verdict(eo <= 2e-2 && el <= 2e-3 && guards, "fwd " + what + buf);
      }
    }
  }
  if (!c.bwd) return;
  // The backward's inputs: the reference's out (rounded) and lse.
  std::vector<uint16_t> out16(ref.out.size());
  for (size_t i = 0; i < out16.size(); ++i) out16[i] = encode(c.dt, float(ref.out[i]));
  std::vector<float> lse_dev(lse_n);
  for (size_t i = 0; i < lse_n; ++i) lse_dev[i] = float(lse_ref_at(i));
  DevBuf dout16 = upload(out16), dlse = upload(lse_dev);
  DevBuf gq = poisoned(size_t(L.total_q) * c.hq * c.d * 2);
  DevBuf gk = poisoned(size_t(L.total_k) * c.hk * c.d * 2);
  DevBuf gv = poisoned(size_t(L.total_k) * c.hk * c.dv * 2);
  DevBuf dbias(4);
  ops::FlashAttnBwdParams bp;
  bp.dout = T(ddo, dims(rq, c.hq, c.dv));
  bp.q = T(dq_, dims(rq, c.hq, c.d));
  bp.k = T(dk_, dims(rk, c.hk, c.d));
  bp.v = T(dv_, dims(rk, c.hk, c.dv));
  bp.out = T(dout16, dims(rq, c.hq, c.dv));
  bp.lse = tlse_shape;
  bp.lse.data = dlse.ptr();
  bp.cu_seqlens_q = tcuq, bp.cu_seqlens_k = tcuk;
  bp.dq = T(gq, dims(rq, c.hq, c.d));
  bp.dk = T(gk, dims(rk, c.hk, c.d));
  bp.dv = T(gv, dims(rk, c.hk, c.dv));
  bp.dbias = ops::Tensor::over(dbias.ptr(), DType::kF32, {0});
  bp.opt = opt;
  bp.deterministic = c.deterministic;
  bp.atomic32 = c.atomic32;
  const auto prob = ops::attn_problem(bp);
  if (!prob) {
    verdict(false, "bwd " + what + ": params refused: " + prob.status().message());
    return;
  }
  const int64_t ws_bytes = std::max<int64_t>(ops::flash_attn_bwd_asm_workspace_bytes(*prob), 4);
  DevBuf ws = poisoned(static_cast<size_t>(ws_bytes));
  bp.workspace = ops::Tensor::over(ws.ptr(), DType::kU8, {ws_bytes});
  const auto v_ = ops::FlashAttnBwdAsmTier::supports(bp, tg.t);
  if (!v_.ok()) {
    ++skipped;
    std::printf("SKIP bwd %s: %s\n", what.c_str(), v_.text().c_str());
    return;
  }
  jk::Plan plan;
  plan.workspace_base = ws.ptr();
  ops::plan_with<ops::FlashAttnBwdAsmTier>(bp, tg.t, *v_, plan);
  std::string why;
  if (!run_plan(plan, why)) {
    if (c.hq != c.hk && modules.size() < 2) {
      ++skipped;
      std::printf("SKIP bwd %s: %s\n", what.c_str(), why.c_str());
    } else {
      verdict(false, "bwd " + what + ": " + why);
    }
    return;
  }
  const auto qh = download(gq), kh = download(gk), vh = download(gv);
  const double eq = rel_error(ref.dq, qh, c.dt), ek = rel_error(ref.dk, kh, c.dt),
               ev = rel_error(ref.dv, vh, c.dt);
  const bool guards = guard_intact(qh, ref.dq.size() * 2) && guard_intact(kh, ref.dk.size() * 2) &&
                      guard_intact(vh, ref.dv.size() * 2);
  // 16-bit dq accumulation (a16) rounds at every key tile's addition.
  const double tol = c.dt == DType::kBF16 ? (c.atomic32 ? 2e-2 : 4e-2) : (c.atomic32 ? 5e-3 : 1e-2);
  std::string kernels_used;
  for (const jk::Step& st : plan.view()) {
    if (st.kind == jk::Step::Kind::kLaunch) {
      kernels_used += " " + std::string(st.launch.kernel->symbol);
    }
  }
  char buf[200];
  std::snprintf(buf, sizeof buf, ": dq %.2e dk %.2e dv %.2e%s (", eq, ek, ev,
                guards ? "" : " GUARD");
  verdict(eq <= tol && ek <= tol && ev <= tol && guards, "bwd " + what + buf + kernels_used + ")");
}

// The cases name only what differs from Case's defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wmissing-designated-field-initializers"
#endif
std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](Case c) { v.push_back(std::move(c)); };
  // Forward (bf16, (128, 128) or (192, 128), batch seqlen_q > 128) and backward together.
  add({.name = "b2 s300 h4/2 d128", .b = 2, .sq = 300, .sk = 300, .hq = 4, .hk = 2, .bwd = true});
  add({.name = "b2 s300 h4/2 d128 causal",
       .b = 2,
       .sq = 300,
       .sk = 300,
       .hq = 4,
       .hk = 2,
       .causal = true});
  add({.name = "b1 sq200 sk333 h2 d128 causal", .sq = 200, .sk = 333, .causal = true});
  add({.name = "b1 sq333 sk200 h2 d128 causal", .sq = 333, .sk = 200, .causal = true});
  add({.name = "b2 sq260 sk190 h2 d192/128", .b = 2, .sq = 260, .sk = 190, .d = 192, .dv = 128});
  add({.name = "b1 s257 h2 d192/128 causal",
       .sq = 257,
       .sk = 257,
       .d = 192,
       .dv = 128,
       .causal = true});
  add({.name = "b1 s300 d128 rtne", .sq = 300, .sk = 300, .cvt = 0, .bwd = false});
  add({.name = "b1 s300 d128 rtz", .sq = 300, .sk = 300, .cvt = 2, .bwd = false});
  add({.name = "varlen h4/2 d128 causal",
       .sq = 300,
       .sk = 300,
       .hq = 4,
       .hk = 2,
       .causal = true,
       .lq = {130, 1, 300},
       .lk = {200, 64, 300}});
  add({.name = "varlen h2 d192/128",
       .sq = 257,
       .sk = 190,
       .d = 192,
       .dv = 128,
       .lq = {257, 3},
       .lk = {190, 100}});
  // Backward only: the accumulators, padding, masks, dtypes.
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const std::string t = dt == DType::kBF16 ? " bf16" : " f16";
    add({.name = "bwd s256 d128 a16" + t, .dt = dt, .atomic32 = false, .fwd = false});
    add({.name = "bwd s256 d128 a16 causal" + t,
         .dt = dt,
         .causal = true,
         .atomic32 = false,
         .fwd = false});
    add({.name = "bwd s128 d96 a16 (pddv)" + t,
         .dt = dt,
         .sq = 128,
         .sk = 128,
         .d = 96,
         .dv = 96,
         .atomic32 = false,
         .fwd = false});
    add({.name = "bwd sq100 sk150 d64 a32 causal" + t,
         .dt = dt,
         .sq = 100,
         .sk = 150,
         .d = 64,
         .dv = 64,
         .causal = true,
         .fwd = false});
    add({.name = "bwd sq150 sk170 d192 a32" + t,
         .dt = dt,
         .sq = 150,
         .sk = 170,
         .d = 192,
         .dv = 192,
         .fwd = false});
    add({.name = "bwd s200 d128 a32 window(30,10)" + t,
         .dt = dt,
         .sq = 200,
         .sk = 200,
         .wl = 30,
         .wr = 10,
         .fwd = false});
    add({.name = "bwd s200 d112 h4/1 a32 causal" + t,
         .dt = dt,
         .sq = 200,
         .sk = 230,
         .hq = 4,
         .hk = 1,
         .d = 112,
         .dv = 112,
         .causal = true,
         .fwd = false});
    add({.name = "bwd s200 d192/128 a16" + t,
         .dt = dt,
         .sq = 200,
         .sk = 300,
         .d = 192,
         .dv = 128,
         .atomic32 = false,
         .fwd = false});
    add({.name = "bwd s64 d128 one-block deterministic" + t,
         .dt = dt,
         .sq = 64,
         .sk = 200,
         .deterministic = true,
         .fwd = false});
    add({.name = "bwd varlen d128 a32 causal" + t,
         .dt = dt,
         .sq = 100,
         .sk = 120,
         .hq = 4,
         .hk = 2,
         .causal = true,
         .lq = {40, 1, 100, 0},
         .lk = {50, 70, 120, 9},
         .fwd = false});
    add({.name = "bwd varlen d128 a16" + t,
         .dt = dt,
         .sq = 100,
         .sk = 120,
         .lq = {40, 100},
         .lk = {120, 64},
         .atomic32 = false,
         .fwd = false});
  }
  return v;
}

// The forward twin's speed at b 4, s 4096, hq 32, hk 8, d 128 (causal and not), planned for
// gfx942: the median of 5 runs, with CUDA events (the twins verify contracts; this keeps them
// usable at real sizes).
void time_forward(std::mt19937& rng) {
  const int b = 4, s = 4096, hq = 32, hk = 8, d = 128;
  std::vector<float> f;
  DevBuf q = upload(random16(DType::kBF16, size_t(b) * s * hq * d, rng, f));
  DevBuf k = upload(random16(DType::kBF16, size_t(b) * s * hk * d, rng, f));
  DevBuf v = upload(random16(DType::kBF16, size_t(b) * s * hk * d, rng, f));
  DevBuf out(size_t(b) * s * hq * d * 2), lse(size_t(b) * hq * s * 4);
  for (bool causal : {false, true}) {
    ops::FlashAttnFwdParams fp;
    fp.q = ops::Tensor::over(q.ptr(), DType::kBF16, {b, s, hq, d});
    fp.k = ops::Tensor::over(k.ptr(), DType::kBF16, {b, s, hk, d});
    fp.v = ops::Tensor::over(v.ptr(), DType::kBF16, {b, s, hk, d});
    fp.out = ops::Tensor::over(out.ptr(), DType::kBF16, {b, s, hq, d});
    fp.lse = ops::Tensor::over(lse.ptr(), DType::kF32, {b, hq, s});
    fp.opt.softmax_scale = 0.088f;
    fp.opt.causal = causal;
    const jax_aiter::Target t{jax_aiter::BackendKind::kCuda, Arch::kGfx942, 304, 0, 0x74a1};
    jk::Plan plan;
    if (!ops::decide_and_plan<ops::FlashAttnFwdAsmTier>(fp, t, plan).ok()) continue;
    std::string why;
    std::vector<float> ms;
    for (int rep = 0; rep < 6; ++rep) {
      CUevent e0, e1;
      CHECK_CU(cuEventCreate(&e0, 0));
      CHECK_CU(cuEventCreate(&e1, 0));
      CHECK_CU(cuEventRecord(e0, nullptr));
      if (!run_plan(plan, why)) {
        std::printf("TIME forward: %s\n", why.c_str());
        return;
      }
      CHECK_CU(cuEventRecord(e1, nullptr));
      CHECK_CU(cuEventSynchronize(e1));
      float m = 0;
      CHECK_CU(cuEventElapsedTime(&m, e0, e1));
      if (rep > 0) ms.push_back(m);  // the first run loads the module's code
      cuEventDestroy(e0);
      cuEventDestroy(e1);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("TIME forward twin b4 s4096 hq32 hk8 d128%s (%s): %.1f ms\n",
                causal ? " causal" : "", std::string(plan.view()[0].launch.kernel->symbol).c_str(),
                ms[ms.size() / 2]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s TWIN_CUBIN [ATTENTION_CUBIN]\n", argv[0]);
    return 2;
  }
  if (const char* m = std::getenv("JA_MUTATE")) mutation = std::atoi(m);
  use_device0();
  for (int i = 1; i < argc && i < 3; ++i) {
    const std::vector<char> image = read_file(argv[i]);
    CUmodule m;
    CHECK_CU(cuModuleLoadData(&m, image.data()));
    modules.push_back(m);
  }
  const Target targets[] = {
      {"gfx942 MI300", {jax_aiter::BackendKind::kCuda, Arch::kGfx942, 304, 0, 0x74a1}},
      {"gfx942 MI308", {jax_aiter::BackendKind::kCuda, Arch::kGfx942, 80, 0, 0x74a2}},
      {"gfx950", {jax_aiter::BackendKind::kCuda, Arch::kGfx950, 256, 0, 0}},
  };
  std::mt19937 rng(1234);
  for (const Case& c : cases()) {
    for (const Target& t : targets) {
      if (std::string(t.name) == "gfx942 MI308" && !c.fwd) continue;  // the same backward rows
      run_case(c, t, rng);
    }
  }
  if (mutation == 0) time_forward(rng);
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed == 0 ? 0 : 1;
}
