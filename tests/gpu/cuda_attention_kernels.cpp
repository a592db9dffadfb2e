// Our portable flash-attention kernels (kernels_co/attention.kernel.cpp) on an sm_90 GPU with
// nothing but the CUDA driver API: no XLA, no jax_aiter runtime. Loads the attention cubin and
//   1. checks every kernel's parameter layout (cuFuncGetParamInfo) against our argument structs,
//   2. runs the plans of include/jax_aiter/ops/attention_portable.hpp (FlashAttnFwdPortableTier,
//      FlashAttnBwdPortableTier, AttnDropoutMaskPortableTier) step by step, exactly as a backend
//      would, over a grid of problems that reaches every kernel: bf16 and f16, each head-dim bucket
//      (64, 128, 256) with d != dv, MHA / GQA / MQA, causal with sq < sk and sq > sk, windows,
//      bias of f32 and the input dtype with broadcast strides (and dbias), ALiBi [hq] and [b, hq],
//      dropout, varlen with sequences of length 0, 1 and long ones, lse; outputs are poisoned with
//      NaN first and followed by a guard that must stay untouched; every output is compared with a
//      float64 host reference written from the semantics (notes/attention-design.md), not from the
//      host twins; jax_aiter_attn_gqa_reduce_* is launched directly; then calls split into
//      shards (batch, heads, query rows with k and v whole), each piece run with its `shard`
//      offsets, against the unsharded call's slices (bit for bit where the tiles line up; dk and
//      dv summed over the pieces). Every backward runs twice and must give the same bits.
//      Prints PASS / FAIL lines and 'N passed, M failed'.
//   3. times forward and forward + backward (CUDA events, median of 20 after warm-up) at the
//      benchmark shapes of issue 15 and prints TFLOP/s (forward 4 b hq sq sk d, halved when causal;
//      backward 2.5x the forward), and each backward kernel alone.
//   4. bench-features: the forward with each feature (window, ALiBi, dropout, bias, varlen) at
//      b4 s4096 hq32 hk8 d128 causal, against the plain call.
// Usage: cuda_attention_kernels ATTENTION_CUBIN
//          [check|check-fwd|check-bwd|bench|bench-features|all]
//        [SHAPE_INDEX [REPETITIONS]]
// Exit status 1 when any check fails, 2 on a setup failure.
#include <cuda.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/kernels/attention.hpp"
#include "jax_aiter/ops/attention_portable.hpp"

#include "cuda_check.hpp"

namespace jk = jax_aiter::kernels;
namespace ops = jax_aiter::ops;
namespace A = jax_aiter::kernels::attention;
using jax_aiter::DType;

namespace {

int passed = 0, failed = 0;

void verdict(bool ok, const std::string& what) {
  ++(ok ? passed : failed);
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
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

// Resolves a kernel and checks its parameters against our struct: every field starts a parameter
// of the field's size, and the parameter block is the struct.
void resolve(CUmodule m, const jk::KernelInfo& info, bool report) {
  const std::string symbol(info.symbol);
  if (kernels.count(symbol)) return;
  Kernel k;
  if (cuModuleGetFunction(&k.f, m, symbol.c_str()) != CUDA_SUCCESS) {
    verdict(false, "params " + symbol + ": not in the cubin");
    return;
  }
  std::map<size_t, size_t> params;
  for (size_t i = 0;; ++i) {
    size_t off = 0, size = 0;
    if (cuFuncGetParamInfo(k.f, i, &off, &size) != CUDA_SUCCESS) break;
    params[off] = size;
    k.arg_bytes = std::max(k.arg_bytes, off + size);
  }
  std::string problems;
  for (const jk::ArgField& f : info.fields) {
    const auto it = params.find(f.offset);
    if (it == params.end() || it->second != f.size) {
      problems += " " + std::string(f.name) + "@" + std::to_string(f.offset);
    }
  }
  const bool ok =
      problems.empty() && k.arg_bytes == info.args_size && params.size() == info.fields.size();
  if (report || !ok) {
    int regs = 0, local = 0, smem = 0;
    cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.f);
    cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k.f);
    cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.f);
    verdict(ok, "params " + symbol + ": " + std::to_string(params.size()) + " parameters, " +
                    std::to_string(k.arg_bytes) + " bytes (" + std::to_string(regs) + " regs, " +
                    std::to_string(local) + " B local, " + std::to_string(smem) + " B smem)" +
                    (problems.empty() ? "" : "; mismatched:" + problems));
  }
  kernels[symbol] = k;
}

// The target the plans are made for: sm_90, as the CUDA backend's (its forward takes the wgmma
// kernels where attn_fwd_takes_wgmma says so); JAX_AITER_ATTN_PLAN=host plans as for the host,
// which runs the mma.sync forward on every case.
jax_aiter::Target plan_target() {
  static const bool host = [] {
    const char* e = std::getenv("JAX_AITER_ATTN_PLAN");
    return e != nullptr && std::string_view(e) == "host";
  }();
  jax_aiter::Target t{};
  if (!host) t.arch = jax_aiter::Arch::kSm90, t.compute_units = 132;
  return t;
}

void resolve_all(CUmodule m) {
  for (const jk::AttnWgKernel& k : jk::kAttnWgKernels) {
    for (const jk::KernelInfo* f : {&k.fwd, &k.fwd_features}) {
      resolve(m, *f, true);
      CHECK_CU(cuFuncSetAttribute(kernels[std::string(f->symbol)].f,
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(f->dynamic_shared)));
    }
  }
  for (const jk::AttnWgBwdKernels& k : jk::kAttnWgBwdKernels) {
    for (const jk::KernelInfo* info : {&k.dkdv, &k.dq}) {
      resolve(m, *info, true);
      CHECK_CU(cuFuncSetAttribute(kernels[std::string(info->symbol)].f,
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(info->dynamic_shared)));
    }
  }
  for (const jk::AttnKernels& k : jk::kAttnKernels) {
    resolve(m, k.fwd, true);
    resolve(m, k.dkdv, true);
    resolve(m, k.dq, true);
  }
  for (const jk::AttnDtypeKernels& k : jk::kAttnDtypeKernels) {
    resolve(m, k.bwd_pre, true);
    resolve(m, k.gqa_reduce, true);
  }
  resolve(m, jk::kAttnDropoutMaskKernel, true);
}

void launch_raw(const Kernel& k, jk::Dim3 grid, jk::Dim3 block, const void* args, size_t bytes,
                uint32_t shared, CUstream s) {
  size_t size = std::min(bytes, k.arg_bytes);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(args),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CHECK_CU(cuLaunchKernel(k.f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, s,
                          nullptr, extra));
}

// Runs a plan's steps in order on one stream, as a backend does (only step `only` when >= 0).
void run_plan(const jk::Plan& plan, CUstream s = nullptr, int only = -1) {
  int index = -1;
  for (const jk::Step& st : plan.view()) {
    if (++index != only && only >= 0) continue;
    if (st.kind == jk::Step::Kind::kMemset) {
      CHECK_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(st.memset.dst), st.memset.value,
                                st.memset.bytes / 4, s));
      continue;
    }
    const jk::Launch& l = st.launch;
    const auto it = kernels.find(l.kernel->symbol);
    if (it == kernels.end() || it->second.f == nullptr) {
      std::printf("kernel %s not resolved\n", std::string(l.kernel->symbol).c_str());
      std::exit(2);
    }
    if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0) continue;
    launch_raw(it->second, l.grid, l.block, l.args.bytes.data(), l.args.size, l.shared_bytes, s);
  }
}

// ---- problems ----
struct Case {
  std::string name{};
  DType dt = DType::kBF16;
  int b = 1, sq = 64, sk = 64, hq = 2, hk = 2, d = 64, dv = 64;
  bool causal = false;
  int wl = -1, wr = -1;
  bool bias = false;
  std::array<bool, 4> bias_bcast{};  // dims of [b, hq, sq, sk] the bias has as 1
  bool bias_f32 = true;
  int alibi = 0;  // 0 none, 1 [hq], 2 [b, hq]
  float p = 0.f;
  // varlen: sequence lengths (b = lq.size()); sq, sk the maxima the call is given (below a real
  // length: the kernels still compute every row and key, as the reference does)
  std::vector<int> lq{}, lk{};
  bool bwd = true;
  bool nan_slope = false;  // ALiBi slope of (batch 1 or sequence 1, head 2) NaN: its rows NaN
};

// Inputs of one problem, as the float values the device sees.
struct Inputs {
  std::vector<uint16_t> q, k, v, dout, bias16;
  std::vector<float> qf, kf, vf, doutf, biasf, slopes;
  std::vector<int> cu_q, cu_k;
  std::array<int64_t, 4> bias_dims{};
  unsigned key[2] = {0x1234567u, 0x89abcdefu};
};

struct Layout {
  bool varlen;
  int nseq, total_q, total_k;
  std::vector<int> q0, k0, ql, kl;  // each sequence's first row and length
};
Layout layout_of(const Case& c) {
  Layout L;
  L.varlen = !c.lq.empty();
  L.nseq = L.varlen ? static_cast<int>(c.lq.size()) : c.b;
  int tq = 0, tk = 0;
  for (int s = 0; s < L.nseq; ++s) {
    const int a = L.varlen ? c.lq[s] : c.sq, z = L.varlen ? c.lk[s] : c.sk;
    L.q0.push_back(tq), L.k0.push_back(tk), L.ql.push_back(a), L.kl.push_back(z);
    tq += a, tk += z;
  }
  L.total_q = tq, L.total_k = tk;
  return L;
}

std::vector<uint16_t> random_values(DType t, size_t n, std::mt19937& rng, float sd,
                                    std::vector<float>& as_float) {
  std::normal_distribution<float> dist(0.f, sd);
  std::vector<uint16_t> v(n);
  as_float.resize(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = encode(t, dist(rng));
    as_float[i] = decode(t, v[i]);
  }
  return v;
}

Inputs make_inputs(const Case& c, const Layout& L, std::mt19937& rng) {
  Inputs in;
  in.q = random_values(c.dt, size_t(L.total_q) * c.hq * c.d, rng, 1.f, in.qf);
  in.k = random_values(c.dt, size_t(L.total_k) * c.hk * c.d, rng, 1.f, in.kf);
  in.v = random_values(c.dt, size_t(L.total_k) * c.hk * c.dv, rng, 1.f, in.vf);
  in.dout = random_values(c.dt, size_t(L.total_q) * c.hq * c.dv, rng, 1.f, in.doutf);
  if (c.bias) {
    const int64_t full[4] = {c.b, c.hq, c.sq, c.sk};
    size_t n = 1;
    for (int i = 0; i < 4; ++i) n *= (in.bias_dims[i] = c.bias_bcast[i] ? 1 : full[i]);
    in.bias16 = random_values(c.dt, n, rng, 1.f, in.biasf);
  }
  if (c.alibi) {
    const int n = c.alibi == 1 ? c.hq : c.b * c.hq;
    for (int i = 0; i < n; ++i)
      in.slopes.push_back(std::exp2(-8.f * (i % c.hq + 1) / c.hq) * (1 + i / c.hq));
    if (c.nan_slope) in.slopes[(c.alibi == 2 ? c.hq : 0) + 2] = NAN;
  }
  if (L.varlen) {
    for (int s = 0; s <= L.nseq; ++s) {
      in.cu_q.push_back(s < L.nseq ? L.q0[s] : L.total_q);
      in.cu_k.push_back(s < L.nseq ? L.k0[s] : L.total_k);
    }
  }
  in.key[0] = static_cast<unsigned>(rng()), in.key[1] = static_cast<unsigned>(rng());
  return in;
}

// float64 reference of the forward and the backward (semantics of notes/attention-design.md). A row
// with a NaN score gets NaN out, lse and dq, and NaN dk / dv at every key it sees.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv, dbias;
};

unsigned threshold_of(float p) {
  const double t = std::floor(static_cast<double>(p) * 4294967296.0);
  return t >= 4294967295.0 ? 4294967295u : static_cast<unsigned>(t);
}

// lse / delta index of (sequence s, head h, row i).
size_t lse_index(const Case& c, const Layout& L, int s, int h, int i) {
  return L.varlen ? size_t(h) * L.total_q + L.q0[s] + i : (size_t(s) * c.hq + h) * c.sq + i;
}

// out_gpu: the forward's output the backward is given (delta = rowsum(dout * out)).
Reference reference(const Case& c, const Layout& L, const Inputs& in,
                    const std::vector<float>& out_gpu, bool backward) {
  Reference r;
  r.out.assign(size_t(L.total_q) * c.hq * c.dv, 0.0);
  r.lse.assign(size_t(L.total_q) * c.hq, 0.0);
  if (backward) {
    r.dq.assign(size_t(L.total_q) * c.hq * c.d, 0.0);
    r.dk.assign(size_t(L.total_k) * c.hk * c.d, 0.0);
    r.dv.assign(size_t(L.total_k) * c.hk * c.dv, 0.0);
    if (c.bias) r.dbias.assign(size_t(c.b) * c.hq * c.sq * c.sk, 0.0);
  }
  const int group = c.hq / c.hk;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  const int left = c.wl, right = c.causal ? 0 : c.wr;
  const unsigned thr = threshold_of(c.p);
  const double zkeep = c.p > 0 ? 1.0 / (1.0 - c.p) : 1.0;
  auto work = [&](int s, int kh) {
    const int sq = L.ql[s], sk = L.kl[s];
    std::vector<double> sc(sk), pr(sk), z(sk), dp(sk);
    std::vector<char> vis(sk);
    for (int g = 0; g < group; ++g) {
      const int h = kh * group + g;
      const double slope = c.alibi == 0 ? 0 : in.slopes[c.alibi == 1 ? h : s * c.hq + h];
      for (int i = 0; i < sq; ++i) {
        const float* qi = &in.qf[(size_t(L.q0[s] + i) * c.hq + h) * c.d];
        double m = -INFINITY;
        bool nan_row = false;
        for (int j = 0; j < sk; ++j) {
          vis[j] = A::attn_visible(i, j, sq, sk, left, right);
          if (!vis[j]) continue;
          const float* kj = &in.kf[(size_t(L.k0[s] + j) * c.hk + kh) * c.d];
          double acc = 0;
          for (int e = 0; e < c.d; ++e) acc += double(qi[e]) * kj[e];
          acc *= scale;
          if (c.bias) {
            const int64_t* bd = in.bias_dims.data();
            const size_t bi = ((size_t(bd[0] == 1 ? 0 : s) * bd[1] + (bd[1] == 1 ? 0 : h)) * bd[2] +
                               (bd[2] == 1 ? 0 : i)) *
                                  bd[3] +
                              (bd[3] == 1 ? 0 : j);
            acc += in.biasf[bi];
          }
          if (c.alibi) acc -= slope * std::abs(double(i) + sk - sq - j);
          sc[j] = acc;
          m = std::max(m, acc);
          nan_row = nan_row || std::isnan(acc);
        }
        const size_t li = lse_index(c, L, s, h, i);
        const size_t orow = (size_t(L.q0[s] + i) * c.hq + h);
        if (nan_row) {
          r.lse[li] = NAN;
          std::fill_n(&r.out[orow * c.dv], c.dv, NAN);
          if (!backward) continue;
          std::fill_n(&r.dq[orow * c.d], c.d, NAN);
          for (int j = 0; j < sk; ++j) {
            if (!vis[j]) continue;
            const size_t krow = size_t(L.k0[s] + j) * c.hk + kh;
            std::fill_n(&r.dk[krow * c.d], c.d, NAN);
            std::fill_n(&r.dv[krow * c.dv], c.dv, NAN);
          }
          continue;
        }
        if (m == -INFINITY) {
          r.lse[li] = INFINITY;
          continue;  // out 0, no gradient
        }
        double l = 0;
        for (int j = 0; j < sk; ++j) l += vis[j] ? (pr[j] = std::exp(sc[j] - m)) : (pr[j] = 0);
        r.lse[li] = m + std::log(l);
        for (int j = 0; j < sk; ++j) {
          pr[j] /= l;
          z[j] = c.p > 0 ? (A::attn_dropout_keep(in.key, s, h, i, j, thr) ? zkeep : 0.0) : 1.0;
        }
        double* o = &r.out[orow * c.dv];
        for (int j = 0; j < sk; ++j) {
          if (pr[j] == 0 || z[j] == 0) continue;
          const float* vj = &in.vf[(size_t(L.k0[s] + j) * c.hk + kh) * c.dv];
          const double w = pr[j] * z[j];
          for (int e = 0; e < c.dv; ++e) o[e] += w * vj[e];
        }
        if (!backward) continue;
        const float* doi = &in.doutf[orow * c.dv];
        const float* oi = &out_gpu[orow * c.dv];
        double delta = 0;
        for (int e = 0; e < c.dv; ++e) delta += double(doi[e]) * oi[e];
        double* dqi = &r.dq[orow * c.d];
        for (int j = 0; j < sk; ++j) {
          if (!vis[j]) continue;
          const size_t krow = size_t(L.k0[s] + j) * c.hk + kh;
          const float* vj = &in.vf[krow * c.dv];
          const float* kj = &in.kf[krow * c.d];
          double dpj = 0;
          for (int e = 0; e < c.dv; ++e) dpj += double(doi[e]) * vj[e];
          const double ds = pr[j] * (z[j] * dpj - delta);
          if (c.bias) r.dbias[((size_t(s) * c.hq + h) * c.sq + i) * c.sk + j] = ds;
          double* dkj = &r.dk[krow * c.d];
          double* dvj = &r.dv[krow * c.dv];
          for (int e = 0; e < c.d; ++e) {
            dqi[e] += scale * ds * kj[e];
            dkj[e] += scale * ds * qi[e];
          }
          const double pz = pr[j] * z[j];
          for (int e = 0; e < c.dv; ++e) dvj[e] += pz * doi[e];
        }
      }
    }
  };
  std::vector<std::pair<int, int>> jobs;
  for (int s = 0; s < L.nseq; ++s) {
    for (int kh = 0; kh < c.hk; ++kh) jobs.push_back({s, kh});
  }
  const int workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      for (size_t t = w; t < jobs.size(); t += workers) work(jobs[t].first, jobs[t].second);
    });
  }
  for (auto& t : pool) t.join();
  return r;
}

// ||got - ref|| / ||ref|| over 16-bit or float32 outputs; infinity when anything is not finite
// where the reference is, or finite where it is NaN.
double rel_error(const std::vector<double>& ref, const std::vector<unsigned char>& got, int bytes,
                 DType t) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g;
    if (bytes == 4) {
      float f;
      std::memcpy(&f, &got[i * 4], 4);
      g = f;
    } else {
      uint16_t h;
      std::memcpy(&h, &got[i * 2], 2);
      g = decode(t, h);
    }
    if (std::isnan(ref[i])) {
      if (!std::isnan(g)) return INFINITY;
      continue;
    }
    if (!std::isfinite(g)) return INFINITY;
    num += (g - ref[i]) * (g - ref[i]);
    den += ref[i] * ref[i];
  }
  if (den == 0) return std::sqrt(num);
  return std::sqrt(num / den);
}

// lse: +inf and NaN exactly where the reference has them, else max |got - ref|.
double lse_error(const std::vector<double>& ref, const std::vector<unsigned char>& got) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    float f;
    std::memcpy(&f, &got[i * 4], 4);
    if (std::isnan(ref[i])) {
      if (!std::isnan(f)) return INFINITY;
      continue;
    }
    if (std::isinf(ref[i])) {
      if (!(std::isinf(f) && f > 0)) return INFINITY;
      continue;
    }
    if (!std::isfinite(f)) return INFINITY;
    worst = std::max(worst, std::abs(f - ref[i]));
  }
  return worst;
}

std::string describe(const Case& c, const Layout& L) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s %s b=%d sq=%d sk=%d hq=%d hk=%d d=%d dv=%d%s w=(%d,%d)%s%s%s%s", c.name.c_str(),
                c.dt == DType::kBF16 ? "bf16" : "f16", L.nseq, c.sq, c.sk, c.hq, c.hk, c.d, c.dv,
                c.causal ? " causal" : "", c.wl, c.wr,
                c.bias ? (c.bias_f32 ? " bias:f32" : " bias:16") : "",
                c.alibi ? (c.alibi == 1 ? " alibi[hq]" : " alibi[b,hq]") : "",
                c.p > 0 ? " dropout" : "", L.varlen ? " varlen" : "");
  return buf;
}

void check_case(const Case& c, std::mt19937& rng) {
  const Layout L = layout_of(c);
  const Inputs in = make_inputs(c, L, rng);
  const std::string what = describe(c, L);
  const double tol = c.dt == DType::kBF16 ? 1e-2 : 2e-3;
  const int eb = 2;

  DevBuf q = upload(in.q), k = upload(in.k), v = upload(in.v), dout = upload(in.dout);
  DevBuf bias = c.bias ? (c.bias_f32 ? upload(in.biasf) : upload(in.bias16)) : DevBuf();
  DevBuf slopes = c.alibi ? upload(in.slopes) : DevBuf();
  DevBuf cuq = L.varlen ? upload(in.cu_q) : DevBuf(), cuk = L.varlen ? upload(in.cu_k) : DevBuf();
  const std::vector<unsigned> keyv = {in.key[0], in.key[1]};
  DevBuf key = upload(keyv);

  const size_t out_elems = size_t(L.total_q) * c.hq * c.dv, lse_elems = size_t(L.total_q) * c.hq;
  DevBuf out = poisoned(out_elems * eb), lse = poisoned(lse_elems * 4);

  auto T = [&](const DevBuf& b, DType t, std::initializer_list<int64_t> dims) {
    return ops::Tensor::over(b.ptr(), t, dims);
  };
  auto dims3 = [&](int rows_b, int rows_s, int heads, int dim) -> std::vector<int64_t> {
    if (L.varlen) return {rows_s, heads, dim};
    return {rows_b, rows_s, heads, dim};
  };
  auto Tv = [&](const DevBuf& b, std::vector<int64_t> dims) {
    return ops::Tensor::over(b.ptr(), c.dt, std::span<const int64_t>(dims));
  };
  const int rq = L.varlen ? L.total_q : c.sq, rk = L.varlen ? L.total_k : c.sk;

  ops::AttnOptions opt;
  opt.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
  opt.causal = c.causal;
  opt.window_left = c.wl;
  opt.window_right = c.wr;
  opt.dropout_p = c.p;
  opt.max_seqlen_q = c.sq;
  opt.max_seqlen_k = c.sk;

  std::optional<ops::Tensor> tbias, talibi, tcuq, tcuk, tkey;
  if (c.bias) {
    tbias = T(bias, c.bias_f32 ? DType::kF32 : c.dt,
              {in.bias_dims[0], in.bias_dims[1], in.bias_dims[2], in.bias_dims[3]});
  }
  if (c.alibi == 1) talibi = T(slopes, DType::kF32, {c.hq});
  if (c.alibi == 2) talibi = T(slopes, DType::kF32, {c.b, c.hq});
  if (L.varlen) {
    tcuq = T(cuq, DType::kI32, {L.nseq + 1});
    tcuk = T(cuk, DType::kI32, {L.nseq + 1});
  }
  if (c.p > 0) tkey = T(key, DType::kI32, {2});
  const jax_aiter::Target target = plan_target();

  ops::FlashAttnFwdParams fp;
  fp.q = Tv(q, dims3(c.b, rq, c.hq, c.d));
  fp.k = Tv(k, dims3(c.b, rk, c.hk, c.d));
  fp.v = Tv(v, dims3(c.b, rk, c.hk, c.dv));
  fp.bias = tbias, fp.alibi_slopes = talibi, fp.cu_seqlens_q = tcuq, fp.cu_seqlens_k = tcuk;
  fp.rng_key = tkey;
  fp.out = Tv(out, dims3(c.b, rq, c.hq, c.dv));
  fp.lse =
      L.varlen ? T(lse, DType::kF32, {c.hq, L.total_q}) : T(lse, DType::kF32, {c.b, c.hq, c.sq});
  fp.opt = opt;
  if (auto prob = ops::attn_problem(fp); !prob) {
    verdict(false, what + ": forward params refused: " + prob.status().message());
    return;
  }
  jk::Plan fplan;
  ops::FlashAttnFwdPortableTier::plan(fp, target, fplan);
  run_plan(fplan);
  CHECK_CU(cuCtxSynchronize());
  const auto out_h = download(out), lse_h = download(lse);
  std::vector<float> out_f(out_elems);
  for (size_t i = 0; i < out_elems; ++i) {
    uint16_t h;
    std::memcpy(&h, &out_h[i * 2], 2);
    out_f[i] = decode(c.dt, h);
  }
  const Reference ref = reference(c, L, in, out_f, c.bwd);
  {
    const double eo = rel_error(ref.out, out_h, eb, c.dt), el = lse_error(ref.lse, lse_h);
    const bool guards = guard_intact(out_h, out_elems * eb) && guard_intact(lse_h, lse_elems * 4);
    char buf[160];
    std::snprintf(buf, sizeof buf, ": fwd out %.2e lse %.2e%s", eo, el, guards ? "" : " GUARD");
    verdict(eo <= tol && el <= 2e-3 && guards, "fwd " + what + buf);
  }
  if (!c.bwd) return;

  DevBuf dq = poisoned(size_t(L.total_q) * c.hq * c.d * eb);
  DevBuf dk = poisoned(size_t(L.total_k) * c.hk * c.d * eb);
  DevBuf dv = poisoned(size_t(L.total_k) * c.hk * c.dv * eb);
  const size_t dbias_elems = c.bias ? size_t(c.b) * c.hq * c.sq * c.sk : 0;
  DevBuf dbias = poisoned(dbias_elems * 4);
  ops::FlashAttnBwdParams bp;
  bp.dout = Tv(dout, dims3(c.b, rq, c.hq, c.dv));
  bp.q = fp.q, bp.k = fp.k, bp.v = fp.v, bp.out = fp.out, bp.lse = fp.lse;
  bp.bias = tbias, bp.alibi_slopes = talibi, bp.cu_seqlens_q = tcuq, bp.cu_seqlens_k = tcuk;
  bp.rng_key = tkey;
  bp.dq = Tv(dq, dims3(c.b, rq, c.hq, c.d));
  bp.dk = Tv(dk, dims3(c.b, rk, c.hk, c.d));
  bp.dv = Tv(dv, dims3(c.b, rk, c.hk, c.dv));
  bp.dbias = c.bias ? T(dbias, DType::kF32, {c.b, c.hq, c.sq, c.sk}) : T(dbias, DType::kF32, {0});
  bp.opt = opt;
  const auto bprob = ops::attn_problem(bp);
  if (!bprob) {
    verdict(false, what + ": backward params refused: " + bprob.status().message());
    return;
  }
  const int64_t ws_bytes = ops::FlashAttnBwdPortableTier::workspace_bytes(*bprob);
  DevBuf ws = poisoned(static_cast<size_t>(ws_bytes));
  bp.workspace = T(ws, DType::kU8, {ws_bytes});
  jk::Plan bplan;
  bplan.workspace_base = ws.ptr();
  ops::FlashAttnBwdPortableTier::plan(bp, target, bplan);
  run_plan(bplan);
  CHECK_CU(cuCtxSynchronize());
  const auto dq_h = download(dq), dk_h = download(dk), dv_h = download(dv);
  // Deterministic: a second run gives the same bits.
  run_plan(bplan);
  CHECK_CU(cuCtxSynchronize());
  const bool same = download(dq) == dq_h && download(dk) == dk_h && download(dv) == dv_h;
  const double eq = rel_error(ref.dq, dq_h, eb, c.dt), ek = rel_error(ref.dk, dk_h, eb, c.dt),
               ev = rel_error(ref.dv, dv_h, eb, c.dt);
  bool guards = guard_intact(dq_h, ref.dq.size() * eb) && guard_intact(dk_h, ref.dk.size() * eb) &&
                guard_intact(dv_h, ref.dv.size() * eb) && guard_intact(download(ws), ws_bytes);
  double eb_ = 0;
  if (c.bias) {
    const auto db_h = download(dbias);
    eb_ = rel_error(ref.dbias, db_h, 4, DType::kF32);
    guards = guards && guard_intact(db_h, dbias_elems * 4);
  }
  const ops::AttnBwdWgmma wg = ops::attn_bwd_takes_wgmma(*bprob, target);
  char buf[240];
  std::snprintf(buf, sizeof buf, ": bwd%s%s dq %.2e dk %.2e dv %.2e dbias %.2e%s%s",
                wg.dkdv ? " [wg dkdv]" : "", wg.dq ? " [wg dq]" : "", eq, ek, ev, eb_,
                guards ? "" : " GUARD", same ? "" : " NOT-DETERMINISTIC");
  verdict(eq <= tol && ek <= tol && ev <= tol && eb_ <= tol && guards && same, "bwd " + what + buf);
}

void check_dropout_mask(std::mt19937& rng) {
  const int b = 2, h = 3, sq = 37, sk = 131;
  const float p = 0.3f;
  const std::vector<unsigned> keyv = {static_cast<unsigned>(rng()), static_cast<unsigned>(rng())};
  DevBuf key = upload(keyv);
  const size_t n = size_t(b) * h * sq * sk;
  DevBuf keep = poisoned(n);
  ops::AttnDropoutMaskParams mp;
  mp.rng_key = ops::Tensor::over(key.ptr(), DType::kI32, {2});
  mp.keep = ops::Tensor::over(keep.ptr(), DType::kU8, {b, h, sq, sk});
  mp.dropout_p = p;
  jk::Plan plan;
  ops::AttnDropoutMaskPortableTier::plan(mp, jax_aiter::Target{}, plan);
  run_plan(plan);
  CHECK_CU(cuCtxSynchronize());
  const auto got = download(keep);
  const unsigned thr = threshold_of(p);
  size_t wrong = 0, kept = 0;
  for (int bb = 0; bb < b; ++bb)
    for (int hh = 0; hh < h; ++hh)
      for (int i = 0; i < sq; ++i)
        for (int j = 0; j < sk; ++j) {
          const size_t idx = ((size_t(bb) * h + hh) * sq + i) * sk + j;
          const int want = A::attn_dropout_keep(keyv.data(), bb, hh, i, j, thr) ? 1 : 0;
          wrong += got[idx] != want;
          kept += want;
        }
  const double frac = double(kept) / n;
  char buf[160];
  std::snprintf(buf, sizeof buf, "dropout_mask [%d,%d,%d,%d] p=%.2f: %zu wrong, kept %.3f%s", b, h,
                sq, sk, p, wrong, frac, guard_intact(got, n) ? "" : " GUARD");
  verdict(wrong == 0 && std::abs(frac - (1 - p)) < 0.02 && guard_intact(got, n), buf);
}

void check_gqa_reduce(std::mt19937& rng) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    for (auto [rows, hk, group, dim] :
         {std::array<int, 4>{300, 2, 4, 128}, std::array<int, 4>{77, 3, 2, 6},
          std::array<int, 4>{5, 1, 8, 256}}) {
      std::vector<float> srcf;
      const auto src = random_values(t, size_t(rows) * hk * group * dim, rng, 1.f, srcf);
      DevBuf s = upload(src);
      const size_t n = size_t(rows) * hk * dim;
      DevBuf d = poisoned(n * 2);
      jk::AttnGqaReduceArgs a{};
      a.src = s.ptr();
      a.dst = d.ptr();
      a.rows = rows;
      a.heads_k = hk;
      a.group = group;
      a.dim = dim;
      const auto& info = jk::attn_dtype_kernels(t).gqa_reduce;
      const jk::Dim3 grid{
          static_cast<uint32_t>((n + A::kReduceThreads * 4 - 1) / (A::kReduceThreads * 4)), 1, 1};
      launch_raw(kernels.at(std::string(info.symbol)), grid, {A::kReduceThreads, 1, 1}, &a,
                 sizeof a, 0, nullptr);
      CHECK_CU(cuCtxSynchronize());
      const auto got = download(d);
      std::vector<double> ref(n);
      for (int r = 0; r < rows; ++r)
        for (int h = 0; h < hk; ++h)
          for (int c = 0; c < dim; ++c) {
            double acc = 0;
            for (int g = 0; g < group; ++g)
              acc += srcf[((size_t(r) * hk + h) * group + g) * dim + c];
            ref[(size_t(r) * hk + h) * dim + c] = acc;
          }
      const double e = rel_error(ref, got, 2, t);
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s rows=%d hk=%d group=%d dim=%d: %.2e%s",
                    std::string(info.symbol).c_str(), rows, hk, group, dim, e,
                    guard_intact(got, n * 2) ? "" : " GUARD");
      verdict(e <= (t == DType::kBF16 ? 8e-3 : 1e-3) && guard_intact(got, n * 2), buf);
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (DType dt : {DType::kBF16, DType::kF16}) {
    // Each bucket, tile-aligned and ragged, d != dv, MHA / GQA / MQA, causal both ways.
    v.push_back({.name = "plain", .dt = dt, .b = 2, .sq = 128, .sk = 128, .hq = 4, .hk = 4});
    v.push_back({.name = "gqa",
                 .dt = dt,
                 .b = 1,
                 .sq = 100,
                 .sk = 300,
                 .hq = 8,
                 .hk = 2,
                 .d = 40,
                 .dv = 64,
                 .causal = true});
    v.push_back({.name = "mqa",
                 .dt = dt,
                 .b = 2,
                 .sq = 257,
                 .sk = 257,
                 .hq = 4,
                 .hk = 1,
                 .d = 128,
                 .dv = 128,
                 .causal = true});
    v.push_back({.name = "sq>sk",
                 .dt = dt,
                 .b = 1,
                 .sq = 300,
                 .sk = 100,
                 .hq = 2,
                 .hk = 2,
                 .d = 96,
                 .dv = 128,
                 .causal = true});
    v.push_back({.name = "noncausal",
                 .dt = dt,
                 .b = 1,
                 .sq = 190,
                 .sk = 333,
                 .hq = 2,
                 .hk = 1,
                 .d = 128,
                 .dv = 72});
    v.push_back({.name = "d192",
                 .dt = dt,
                 .b = 1,
                 .sq = 130,
                 .sk = 190,
                 .hq = 4,
                 .hk = 2,
                 .d = 192,
                 .dv = 128,
                 .causal = true});
    v.push_back({.name = "d256",
                 .dt = dt,
                 .b = 2,
                 .sq = 96,
                 .sk = 96,
                 .hq = 2,
                 .hk = 2,
                 .d = 256,
                 .dv = 256});
    v.push_back({.name = "window",
                 .dt = dt,
                 .b = 1,
                 .sq = 200,
                 .sk = 260,
                 .hq = 2,
                 .hk = 1,
                 .d = 256,
                 .dv = 160,
                 .wl = 32,
                 .wr = 16});
    v.push_back({.name = "dropout",
                 .dt = dt,
                 .b = 2,
                 .sq = 150,
                 .sk = 170,
                 .hq = 4,
                 .hk = 2,
                 .d = 64,
                 .dv = 64,
                 .causal = true,
                 .p = 0.17f});
  }
  const DType b16 = DType::kBF16;
  // Windows.
  v.push_back(
      {.name = "diag", .dt = b16, .sq = 129, .sk = 129, .d = 64, .dv = 64, .wl = 0, .wr = 0});
  v.push_back({.name = "left5", .dt = b16, .sq = 70, .sk = 200, .d = 128, .dv = 128, .wl = 5});
  v.push_back({.name = "right7", .dt = b16, .sq = 200, .sk = 70, .d = 64, .dv = 32, .wr = 7});
  v.push_back({.name = "causal+left",
               .dt = b16,
               .sq = 300,
               .sk = 300,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .wl = 40});
  // Bias: full f32, broadcast in the input dtype, row / column broadcasts.
  v.push_back({.name = "bias-full",
               .dt = b16,
               .b = 2,
               .sq = 90,
               .sk = 150,
               .hq = 2,
               .hk = 1,
               .d = 64,
               .dv = 64,
               .bias = true});
  v.push_back({.name = "bias-bcast",
               .dt = b16,
               .b = 2,
               .sq = 130,
               .sk = 100,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .bias = true,
               .bias_bcast = {true, false, true, false},
               .bias_f32 = false});
  v.push_back({.name = "bias-rows",
               .dt = DType::kF16,
               .b = 2,
               .sq = 70,
               .sk = 90,
               .hq = 2,
               .hk = 2,
               .d = 256,
               .dv = 200,
               .bias = true,
               .bias_bcast = {false, true, false, true},
               .bias_f32 = false});
  // ALiBi.
  v.push_back({.name = "alibi",
               .dt = b16,
               .b = 2,
               .sq = 200,
               .sk = 200,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .alibi = 1});
  // A NaN slope: NaN in, NaN out (its rows, their gradients, the keys they see); the rest as ever.
  v.push_back({.name = "alibi-nan",
               .dt = b16,
               .b = 2,
               .sq = 100,
               .sk = 120,
               .hq = 4,
               .hk = 2,
               .d = 64,
               .dv = 64,
               .causal = true,
               .alibi = 2,
               .nan_slope = true});
  v.push_back({.name = "alibi-b",
               .dt = DType::kF16,
               .b = 2,
               .sq = 100,
               .sk = 140,
               .hq = 2,
               .hk = 2,
               .d = 64,
               .dv = 64,
               .wl = 30,
               .wr = 10,
               .alibi = 2});
  // Dropout with the other features.
  v.push_back({.name = "dropout-all",
               .dt = b16,
               .b = 2,
               .sq = 120,
               .sk = 160,
               .hq = 4,
               .hk = 1,
               .d = 128,
               .dv = 96,
               .causal = true,
               .wl = 50,
               .bias = true,
               .bias_bcast = {true, false, false, false},
               .alibi = 2,
               .p = 0.25f});
  v.push_back({.name = "dropout-256",
               .dt = b16,
               .b = 1,
               .sq = 80,
               .sk = 100,
               .hq = 2,
               .hk = 2,
               .d = 256,
               .dv = 256,
               .p = 0.1f});
  // Varlen: sequences of length 0, 1 and long ones, keys of length 0.
  v.push_back({.name = "varlen",
               .dt = b16,
               .sq = 300,
               .sk = 310,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .lq = {0, 1, 300, 17, 129, 5},
               .lk = {3, 1, 310, 0, 129, 5}});
  v.push_back({.name = "varlen",
               .dt = DType::kF16,
               .sq = 260,
               .sk = 260,
               .hq = 2,
               .hk = 1,
               .d = 64,
               .dv = 64,
               .lq = {1, 260, 0, 64},
               .lk = {1, 33, 5, 260}});
  v.push_back({.name = "varlen-drop",
               .dt = b16,
               .sq = 200,
               .sk = 150,
               .hq = 2,
               .hk = 2,
               .d = 256,
               .dv = 192,
               .causal = true,
               .alibi = 1,
               .p = 0.2f,
               .lq = {200, 1, 33},
               .lk = {150, 7, 1}});
  v.push_back({.name = "varlen-win",
               .dt = b16,
               .sq = 180,
               .sk = 180,
               .hq = 3,
               .hk = 3,
               .d = 64,
               .dv = 64,
               .wl = 20,
               .wr = 3,
               .lq = {180, 90},
               .lk = {100, 180}});
  // max_seqlen below real lengths (traced offsets under jit): the grids are sized from the maxima,
  // each block loops over its sequence's tiles, and every row and key is computed whole (a window
  // wider than max_seqlen_k still bounds the longer sequences).
  v.push_back({.name = "varlen-past-max",
               .dt = b16,
               .sq = 64,
               .sk = 70,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .lq = {200, 1, 130},
               .lk = {150, 7, 260}});
  v.push_back({.name = "varlen-past-max-all",
               .dt = DType::kF16,
               .sq = 40,
               .sk = 50,
               .hq = 2,
               .hk = 1,
               .d = 64,
               .dv = 64,
               .causal = true,
               .wl = 80,
               .alibi = 1,
               .p = 0.2f,
               .lq = {150, 90},
               .lk = {90, 200}});
  // sm_90's wgmma backward (attn_bwd_takes_wgmma; the cases above with d and dv in the 128 bucket
  // and no bias, ALiBi, dropout, window or varlen take it too): GQA with several query tiles a key
  // block and a ring that wraps, ragged ends, causal with sq < sk, keys beyond 1000.
  v.push_back({.name = "wg-gqa",
               .dt = b16,
               .b = 2,
               .sq = 384,
               .sk = 520,
               .hq = 8,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true});
  v.push_back({.name = "wg-gqa",
               .dt = DType::kF16,
               .b = 2,
               .sq = 200,
               .sk = 136,
               .hq = 6,
               .hk = 2,
               .d = 80,
               .dv = 112});
  v.push_back({.name = "wg-long",
               .dt = b16,
               .b = 1,
               .sq = 256,
               .sk = 1100,
               .hq = 2,
               .hk = 1,
               .d = 128,
               .dv = 128,
               .causal = true});
  // The 128 bucket's features, which sm_90 plans run on its wgmma kernels (the plain one takes
  // windows; the features one varlen, bias, ALiBi, dropout): windows both sides and with rows
  // that see nothing, dropout alone, bias of each kind, a NaN slope, varlen with every feature
  // and sequences longer than max_seqlen (one block loops over 3 row tiles).
  v.push_back({.name = "wg-window",
               .dt = DType::kF16,
               .sq = 333,
               .sk = 400,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .wl = 100,
               .wr = 30});
  v.push_back({.name = "wg-window-sq>sk",
               .dt = b16,
               .b = 2,
               .sq = 300,
               .sk = 140,
               .hq = 2,
               .hk = 1,
               .d = 96,
               .dv = 128,
               .causal = true,
               .wl = 50});
  v.push_back({.name = "wg-dropout",
               .dt = b16,
               .b = 2,
               .sq = 257,
               .sk = 300,
               .hq = 4,
               .hk = 1,
               .d = 128,
               .dv = 128,
               .causal = true,
               .p = 0.1f});
  v.push_back({.name = "wg-dropout",
               .dt = DType::kF16,
               .sq = 200,
               .sk = 200,
               .hq = 2,
               .hk = 2,
               .d = 128,
               .dv = 96,
               .p = 0.3f});
  v.push_back({.name = "wg-bias-f32",
               .dt = DType::kF16,
               .b = 2,
               .sq = 200,
               .sk = 260,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .bias = true});
  v.push_back({.name = "wg-bias-cols",
               .dt = b16,
               .b = 2,
               .sq = 140,
               .sk = 140,
               .hq = 2,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .bias = true,
               .bias_bcast = {false, false, false, true},
               .bias_f32 = false});
  v.push_back({.name = "wg-alibi-nan",
               .dt = b16,
               .b = 2,
               .sq = 150,
               .sk = 170,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .alibi = 2,
               .nan_slope = true});
  v.push_back({.name = "wg-varlen-all",
               .dt = b16,
               .sq = 300,
               .sk = 280,
               .hq = 4,
               .hk = 2,
               .d = 128,
               .dv = 128,
               .causal = true,
               .wl = 60,
               .alibi = 1,
               .p = 0.15f,
               .lq = {300, 0, 129, 1},
               .lk = {280, 7, 129, 3}});
  v.push_back({.name = "wg-varlen-past-max",
               .dt = DType::kF16,
               .sq = 100,
               .sk = 100,
               .hq = 2,
               .hk = 1,
               .d = 128,
               .dv = 128,
               .wl = 40,
               .wr = 40,
               .p = 0.1f,
               .lq = {300, 5, 257},
               .lk = {290, 300, 200}});
  v.push_back({.name = "varlen-past-max-256",
               .dt = b16,
               .sq = 32,
               .sk = 32,
               .hq = 2,
               .hk = 2,
               .d = 192,
               .dv = 128,
               .lq = {100, 33},
               .lk = {70, 120}});
  return v;
}

// The check-bwd selection: attn_bwd_takes_wgmma's rule restated on a case (check_case tags each
// backward with the kernels the plan really took), and a few cases of the other kernels.
bool takes_wg_bwd(const Case& c) {
  const int need = std::max(c.d, c.dv);
  return c.lq.empty() && !c.bias && c.alibi == 0 && c.p == 0 && c.wl < 0 &&
         (c.causal || c.wr < 0) && need > 64 && need <= 128;
}
bool keeps_mma_bwd(const Case& c) {
  return c.name == "plain" || c.name == "causal+left" || (c.name == "varlen" && c.d == 128);
}

// ---- shards: one call split along batch, query heads or query rows (k and v whole) ----
// Each piece runs the portable plans with its `shard` operand {b0, h0, r0, sq_total} and must give
// the unsharded call's values on its slice: bit for bit for batch and head pieces, and for row
// pieces whose rows start and end on the kernels' row tiles (kRowsQ: then every tile holds the
// same rows, sees the same keys and takes the same masked or unmasked path as in the whole call);
// within rounding for row pieces cut through a tile. Summed over the pieces, dk and dv (a row
// piece's are partial sums over its queries) must match the whole call's within rounding.

// A row-major array of 2- or 4-byte elements on the host.
struct HostArray {
  std::vector<int64_t> dims{};
  size_t es = 2;
  std::vector<unsigned char> bytes{};
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

template <typename T>
HostArray host_array(const std::vector<T>& v, std::vector<int64_t> dims) {
  HostArray a{std::move(dims), sizeof(T), {}};
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

// The block [start, start + size) of `a` along every dim.
HostArray cut(const HostArray& a, const std::vector<int64_t>& start,
              const std::vector<int64_t>& size) {
  HostArray out{size, a.es, {}};
  out.bytes.resize(static_cast<size_t>(out.size()) * a.es);
  std::vector<int64_t> idx(size.size(), 0);
  for (int64_t e = 0; e < out.size(); ++e) {
    int64_t src = 0;
    for (size_t d = 0; d < size.size(); ++d) src = src * a.dims[d] + start[d] + idx[d];
    std::memcpy(&out.bytes[e * a.es], &a.bytes[src * a.es], a.es);
    for (size_t d = size.size(); d-- > 0;) {
      if (++idx[d] < size[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

double value_of(const HostArray& a, int64_t i, DType t) {
  if (a.es == 4) {
    float f;
    std::memcpy(&f, &a.bytes[i * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &a.bytes[i * 2], 2);
  return decode(t, h);
}

// ||got - want|| / ||want|| over want's finite elements; infinity when got is not finite there,
// or differs where want is infinite.
double rel_diff(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      if (got[i] != want[i]) return INFINITY;
      continue;
    }
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

std::vector<double> values(const HostArray& a, DType t) {
  std::vector<double> v(static_cast<size_t>(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[i] = value_of(a, i, a.es == 4 ? DType::kF32 : t);
  return v;
}

struct ShardInputs {
  HostArray q, k, v, dout;
  std::optional<HostArray> bias, alibi;
};
struct ShardOutputs {
  HostArray out, lse, dq, dk, dv, dbias;
  bool ok = false;
};

// The portable tier's forward and backward plans over `in`, with `shard` (4 ints) or none.
ShardOutputs run_shard(const Case& c, const ShardInputs& in, const unsigned key[2],
                       const int32_t* shard) {
  const int64_t b = in.q.dims[0], sq = in.q.dims[1], hq = in.q.dims[2];
  DevBuf q = upload(in.q.bytes), k = upload(in.k.bytes), v = upload(in.v.bytes),
         dout = upload(in.dout.bytes);
  DevBuf bias = in.bias ? upload(in.bias->bytes) : DevBuf();
  DevBuf slopes = in.alibi ? upload(in.alibi->bytes) : DevBuf();
  DevBuf keyb = upload(std::vector<unsigned>{key[0], key[1]});
  DevBuf shardb = shard ? upload(std::vector<int32_t>(shard, shard + 4)) : DevBuf();
  auto T = [](const DevBuf& buf, DType t, const std::vector<int64_t>& dims) {
    return ops::Tensor::over(buf.ptr(), t, std::span<const int64_t>(dims));
  };
  const std::vector<int64_t> out_dims{b, sq, hq, c.dv}, lse_dims{b, hq, sq},
      dbias_dims = in.bias ? std::vector<int64_t>{b, hq, sq, c.sk} : std::vector<int64_t>{0};
  DevBuf out(size_t(b * sq * hq * c.dv) * 2), lse(size_t(b * hq * sq) * 4), dq(in.q.bytes.size()),
      dk(in.k.bytes.size()), dv(in.v.bytes.size()),
      dbias(in.bias ? size_t(b * hq * sq * c.sk) * 4 : 0);

  ops::AttnOptions opt;
  opt.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
  opt.causal = c.causal;
  opt.window_left = c.wl;
  opt.window_right = c.wr;
  opt.dropout_p = c.p;
  ops::FlashAttnFwdParams fp;
  fp.q = T(q, c.dt, in.q.dims);
  fp.k = T(k, c.dt, in.k.dims);
  fp.v = T(v, c.dt, in.v.dims);
  if (in.bias) fp.bias = T(bias, c.bias_f32 ? DType::kF32 : c.dt, in.bias->dims);
  if (in.alibi) fp.alibi_slopes = T(slopes, DType::kF32, in.alibi->dims);
  if (c.p > 0) fp.rng_key = T(keyb, DType::kI32, {2});
  if (shard) fp.shard = T(shardb, DType::kI32, {4});
  fp.out = T(out, c.dt, out_dims);
  fp.lse = T(lse, DType::kF32, lse_dims);
  fp.opt = opt;
  ShardOutputs o;
  if (auto prob = ops::attn_problem(fp); !prob) {
    verdict(false, "shard forward params refused: " + prob.status().message());
    return o;
  }
  jk::Plan fplan;
  ops::FlashAttnFwdPortableTier::plan(fp, plan_target(), fplan);
  run_plan(fplan);

  ops::FlashAttnBwdParams bp;
  bp.dout = T(dout, c.dt, in.dout.dims);
  bp.q = fp.q, bp.k = fp.k, bp.v = fp.v, bp.out = fp.out, bp.lse = fp.lse;
  bp.bias = fp.bias, bp.alibi_slopes = fp.alibi_slopes, bp.rng_key = fp.rng_key;
  bp.shard = fp.shard;
  bp.dq = T(dq, c.dt, in.q.dims);
  bp.dk = T(dk, c.dt, in.k.dims);
  bp.dv = T(dv, c.dt, in.v.dims);
  bp.dbias = T(dbias, DType::kF32, dbias_dims);
  bp.opt = opt;
  const auto bprob = ops::attn_problem(bp);
  if (!bprob) {
    verdict(false, "shard backward params refused: " + bprob.status().message());
    return o;
  }
  const int64_t ws_bytes = ops::FlashAttnBwdPortableTier::workspace_bytes(*bprob);
  DevBuf ws(static_cast<size_t>(ws_bytes));
  bp.workspace = T(ws, DType::kU8, {ws_bytes});
  jk::Plan bplan;
  bplan.workspace_base = ws.ptr();
  ops::FlashAttnBwdPortableTier::plan(bp, plan_target(), bplan);
  run_plan(bplan);
  CHECK_CU(cuCtxSynchronize());
  o.out = {out_dims, 2, download(out)};
  o.lse = {lse_dims, 4, download(lse)};
  o.dq = {in.q.dims, 2, download(dq)};
  o.dk = {in.k.dims, 2, download(dk)};
  o.dv = {in.v.dims, 2, download(dv)};
  o.dbias = {dbias_dims, 4, in.bias ? download(dbias) : std::vector<unsigned char>{}};
  o.ok = true;
  return o;
}

// A piece: batches [b0, +nb), query heads [h0, +nh) (whole key-head groups: the cases' GQA groups
// divide hq / 2), rows [r0, +nr).
struct Piece {
  int b0, nb, h0, nh, r0, nr;
};

ShardInputs piece_inputs(const Case& c, const ShardInputs& w, const Piece& p) {
  const int group = c.hq / c.hk, hk0 = p.h0 / group, nhk = p.nh / group;
  ShardInputs in{cut(w.q, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.d}),
                 cut(w.k, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.d}),
                 cut(w.v, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.dv}),
                 cut(w.dout, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.dv}),
                 {},
                 {}};
  if (w.bias) {
    const int64_t at[4] = {p.b0, p.h0, p.r0, 0}, n[4] = {p.nb, p.nh, p.nr, c.sk};
    std::vector<int64_t> start(4), size(4);
    for (int i = 0; i < 4; ++i) {
      start[i] = w.bias->dims[i] == 1 ? 0 : at[i];
      size[i] = w.bias->dims[i] == 1 ? 1 : n[i];
    }
    in.bias = cut(*w.bias, start, size);
  }
  if (w.alibi) {
    in.alibi = w.alibi->dims.size() == 1 ? cut(*w.alibi, {p.h0}, {p.nh})
                                         : cut(*w.alibi, {p.b0, p.h0}, {p.nb, p.nh});
  }
  return in;
}

struct Split {
  std::string name;
  std::vector<Piece> pieces;
  bool exact;  // bit for bit (else within rounding)
};

// Batch, heads, rows on tile boundaries, every combination of the three, rows through tiles.
std::vector<Split> splits_of(const Case& c) {
  const int hh = c.hq / 2, rows = A::kRowsQ[0];
  std::vector<Split> s = {
      {"batch", {}, true},
      {"heads", {{0, c.b, 0, hh, 0, c.sq}, {0, c.b, hh, c.hq - hh, 0, c.sq}}, true},
      {"rows", {{0, c.b, 0, c.hq, 0, rows}, {0, c.b, 0, c.hq, rows, c.sq - rows}}, true},
      {"batch x heads x rows", {}, true},
      {"rows through tiles",
       {{0, c.b, 0, c.hq, 0, 40}, {0, c.b, 0, c.hq, 40, 61}, {0, c.b, 0, c.hq, 101, c.sq - 101}},
       false}};
  for (int b = 0; b < c.b; ++b) {
    s[0].pieces.push_back({b, 1, 0, c.hq, 0, c.sq});
    for (int h0 : {0, hh}) {
      for (int r0 = 0; r0 < c.sq; r0 += rows) {
        s[3].pieces.push_back({b, 1, h0, h0 == 0 ? hh : c.hq - hh, r0, std::min(rows, c.sq - r0)});
      }
    }
  }
  return s;
}

void check_shards_of(const Case& c, std::mt19937& rng) {
  const Layout L = layout_of(c);
  const Inputs raw = make_inputs(c, L, rng);
  ShardInputs w{host_array(raw.q, {c.b, c.sq, c.hq, c.d}),
                host_array(raw.k, {c.b, c.sk, c.hk, c.d}),
                host_array(raw.v, {c.b, c.sk, c.hk, c.dv}),
                host_array(raw.dout, {c.b, c.sq, c.hq, c.dv}),
                {},
                {}};
  if (c.bias) {
    const std::vector<int64_t> bd(raw.bias_dims.begin(), raw.bias_dims.end());
    w.bias = c.bias_f32 ? host_array(raw.biasf, bd) : host_array(raw.bias16, bd);
  }
  if (c.alibi == 1) w.alibi = host_array(raw.slopes, {c.hq});
  if (c.alibi == 2) w.alibi = host_array(raw.slopes, {c.b, c.hq});
  const ShardOutputs whole = run_shard(c, w, raw.key, nullptr);
  if (!whole.ok) return;
  const int group = c.hq / c.hk;
  const double tol = c.dt == DType::kBF16 ? 1e-2 : 2e-3;
  const std::vector<double> whole_dk = values(whole.dk, c.dt), whole_dv = values(whole.dv, c.dt);

  for (const Split& sp : splits_of(c)) {
    std::vector<double> dk_sum(whole_dk.size(), 0.0), dv_sum(whole_dv.size(), 0.0);
    std::string bad;
    for (const Piece& p : sp.pieces) {
      const int32_t offsets[4] = {p.b0, p.h0, p.r0, c.sq};
      const ShardOutputs o = run_shard(c, piece_inputs(c, w, p), raw.key, offsets);
      if (!o.ok) return;
      const int hk0 = p.h0 / group, nhk = p.nh / group;
      const bool all_rows = p.nr == c.sq;
      const std::pair<const char*, const HostArray*> got[] = {{"out", &o.out}, {"lse", &o.lse},
                                                              {"dq", &o.dq},   {"dbias", &o.dbias},
                                                              {"dk", &o.dk},   {"dv", &o.dv}};
      const HostArray want[] = {
          cut(whole.out, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.dv}),
          cut(whole.lse, {p.b0, p.h0, p.r0}, {p.nb, p.nh, p.nr}),
          cut(whole.dq, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.d}),
          c.bias ? cut(whole.dbias, {p.b0, p.h0, p.r0, 0}, {p.nb, p.nh, p.nr, c.sk}) : HostArray{},
          all_rows ? cut(whole.dk, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.d}) : HostArray{},
          all_rows ? cut(whole.dv, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.dv}) : HostArray{}};
      for (int i = 0; i < 6; ++i) {
        if (want[i].bytes.empty()) continue;
        const bool ok = sp.exact ? got[i].second->bytes == want[i].bytes
                                 : rel_diff(values(*got[i].second, c.dt), values(want[i], c.dt)) <=
                                       (i == 1 ? 1e-5 : tol);
        if (!ok) bad += " " + std::string(got[i].first) + "@r0=" + std::to_string(p.r0);
      }
      // This piece's dk, dv added into their places in the whole.
      auto add = [&](const HostArray& part, std::vector<double>& sum, int dim) {
        for (int b = 0; b < p.nb; ++b)
          for (int j = 0; j < c.sk; ++j)
            for (int h = 0; h < nhk; ++h)
              for (int e = 0; e < dim; ++e) {
                const int64_t from = ((int64_t(b) * c.sk + j) * nhk + h) * dim + e;
                const int64_t to = ((int64_t(p.b0 + b) * c.sk + j) * c.hk + hk0 + h) * dim + e;
                sum[size_t(to)] += value_of(part, from, c.dt);
              }
      };
      add(o.dk, dk_sum, c.d);
      add(o.dv, dv_sum, c.dv);
    }
    const double ek = rel_diff(dk_sum, whole_dk), ev = rel_diff(dv_sum, whole_dv);
    if (!(ek <= tol && ev <= tol)) bad += " dk/dv sums";
    char buf[240];
    std::snprintf(buf, sizeof buf, "shards %s of %s %s: %zu pieces%s, dk/dv sums %.1e %.1e%s%s",
                  sp.name.c_str(), c.name.c_str(), c.dt == DType::kBF16 ? "bf16" : "f16",
                  sp.pieces.size(), sp.exact ? " bit for bit" : "", ek, ev,
                  bad.empty() ? "" : "; wrong:", bad.c_str());
    verdict(bad.empty(), buf);
  }
}

// The dropout mask of a piece is the whole call's at its offsets.
void check_shard_masks(std::mt19937& rng) {
  const int b = 2, h = 3, sq = 37, sk = 131;
  const std::vector<unsigned> keyv = {static_cast<unsigned>(rng()), static_cast<unsigned>(rng())};
  DevBuf key = upload(keyv);
  auto mask = [&](const Piece& p, const int32_t* shard) {
    DevBuf keep(size_t(p.nb) * p.nh * p.nr * sk);
    DevBuf shardb = shard ? upload(std::vector<int32_t>(shard, shard + 4)) : DevBuf();
    ops::AttnDropoutMaskParams mp;
    mp.rng_key = ops::Tensor::over(key.ptr(), DType::kI32, {2});
    if (shard) mp.shard = ops::Tensor::over(shardb.ptr(), DType::kI32, {4});
    mp.keep = ops::Tensor::over(keep.ptr(), DType::kU8, {p.nb, p.nh, p.nr, sk});
    mp.dropout_p = 0.3f;
    jk::Plan plan;
    ops::AttnDropoutMaskPortableTier::plan(mp, jax_aiter::Target{}, plan);
    run_plan(plan);
    CHECK_CU(cuCtxSynchronize());
    return HostArray{{p.nb, p.nh, p.nr, sk}, 1, download(keep)};
  };
  const HostArray whole = mask({0, b, 0, h, 0, sq}, nullptr);
  std::string bad;
  for (const Piece& p : {Piece{1, 1, 0, h, 0, sq}, Piece{0, b, 2, 1, 0, sq},
                         Piece{0, b, 0, h, 13, 24}, Piece{1, 1, 1, 2, 5, 9}}) {
    const int32_t offsets[4] = {p.b0, p.h0, p.r0, sq};
    if (mask(p, offsets).bytes != cut(whole, {p.b0, p.h0, p.r0, 0}, {p.nb, p.nh, p.nr, sk}).bytes) {
      bad += " r0=" + std::to_string(p.r0) + ",h0=" + std::to_string(p.h0);
    }
  }
  verdict(bad.empty(), "shards of dropout_mask [2,3,37,131]: 4 pieces bit for bit" +
                           (bad.empty() ? std::string() : "; wrong:" + bad));
}

// Every feature the offsets touch: dropout, causal (sq > sk too: rows that see no key), windows
// (a right bound wider than a piece's rows), ALiBi of both shapes, bias full and broadcast, GQA,
// each head-dim bucket.
std::vector<Case> shard_cases() {
  return {{.name = "causal dropout alibi[b,hq] bias",
           .b = 2,
           .sq = 192,
           .sk = 160,
           .hq = 4,
           .hk = 2,
           .causal = true,
           .bias = true,
           .alibi = 2,
           .p = 0.2f},
          {.name = "window alibi[hq]",
           .dt = DType::kF16,
           .b = 2,
           .sq = 192,
           .sk = 256,
           .hq = 4,
           .hk = 2,
           .d = 128,
           .dv = 96,
           .wl = 40,
           .wr = 100,
           .alibi = 1},
          {.name = "sq>sk causal dropout bias[1,hq,1,sk]",
           .b = 2,
           .sq = 192,
           .sk = 96,
           .hq = 4,
           .hk = 2,
           .d = 256,
           .dv = 192,
           .causal = true,
           .bias = true,
           .bias_bcast = {true, false, true, false},
           .bias_f32 = false,
           .p = 0.1f}};
}

// ---- benchmark ----
struct BenchShape {
  int b, s, hq, hk, d;
  bool causal;
  double cudnn_fwd;  // TFLOP/s of cuDNN's forward (issue 15, H100, JAX 0.11.2)
};

// Fills n 16-bit values with normal-ish random numbers fast (sum of uniforms).
std::vector<uint16_t> fast_random(size_t n, uint64_t seed) {
  std::vector<uint16_t> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const float u = (static_cast<float>(x & 0xffff) + static_cast<float>((x >> 16) & 0xffff) +
                     static_cast<float>((x >> 32) & 0xffff)) /
                        65536.f -
                    1.5f;
    v[i] = jax_aiter::float_to_bf16(u * 2.f);
  }
  return v;
}

double median(std::vector<float> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void bench(int only, int reps) {
  const BenchShape shapes[] = {{4, 4096, 32, 8, 128, true, 488},
                               {4, 4096, 32, 32, 128, false, 565},
                               {16, 1024, 16, 16, 64, true, 115},
                               {1, 16384, 32, 8, 128, true, 585}};
  std::printf("\nbenchmark (bf16, CUDA events, median of 20):\n");
  std::printf("%-34s %9s %9s %9s %9s %9s %7s\n", "shape", "fwd ms", "fwd TF/s", "bwd ms",
              "bwd TF/s", "f+b TF/s", "fwd/cuDNN");
  CUevent e0, e1;
  CHECK_CU(cuEventCreate(&e0, 0));
  CHECK_CU(cuEventCreate(&e1, 0));
  for (int si = 0; si < 4; ++si) {
    if (only >= 0 && si != only) continue;
    const BenchShape& sh = shapes[si];
    const size_t nq = size_t(sh.b) * sh.s * sh.hq * sh.d, nk = size_t(sh.b) * sh.s * sh.hk * sh.d;
    DevBuf q = upload(fast_random(nq, 1)), k = upload(fast_random(nk, 2)),
           v = upload(fast_random(nk, 3)), dout = upload(fast_random(nq, 4));
    DevBuf out(nq * 2), lse(size_t(sh.b) * sh.hq * sh.s * 4), dq(nq * 2), dk(nk * 2), dv(nk * 2);
    auto Tq = [&](const DevBuf& b) {
      return ops::Tensor::over(b.ptr(), DType::kBF16, {sh.b, sh.s, sh.hq, sh.d});
    };
    auto Tk = [&](const DevBuf& b) {
      return ops::Tensor::over(b.ptr(), DType::kBF16, {sh.b, sh.s, sh.hk, sh.d});
    };
    ops::AttnOptions opt;
    opt.softmax_scale = static_cast<float>(1.0 / std::sqrt(double(sh.d)));
    opt.causal = sh.causal;
    ops::FlashAttnFwdParams fp;
    fp.q = Tq(q), fp.k = Tk(k), fp.v = Tk(v), fp.out = Tq(out);
    fp.lse = ops::Tensor::over(lse.ptr(), DType::kF32, {sh.b, sh.hq, sh.s});
    fp.opt = opt;
    jk::Plan fplan;
    ops::FlashAttnFwdPortableTier::plan(fp, plan_target(), fplan);
    ops::FlashAttnBwdParams bp;
    bp.dout = Tq(dout), bp.q = fp.q, bp.k = fp.k, bp.v = fp.v, bp.out = fp.out, bp.lse = fp.lse;
    bp.dq = Tq(dq), bp.dk = Tk(dk), bp.dv = Tk(dv);
    bp.dbias = ops::Tensor::over(nullptr, DType::kF32, {0});
    bp.opt = opt;
    const auto prob = ops::attn_problem(bp);
    if (!prob) {
      std::printf("bench params refused: %s\n", prob.status().message().c_str());
      continue;
    }
    DevBuf ws(static_cast<size_t>(ops::FlashAttnBwdPortableTier::workspace_bytes(*prob)));
    bp.workspace = ops::Tensor::over(ws.ptr(), DType::kU8, {static_cast<int64_t>(ws.bytes)});
    jk::Plan bplan;
    bplan.workspace_base = ws.ptr();
    ops::FlashAttnBwdPortableTier::plan(bp, plan_target(), bplan);

    auto time = [&](auto&& body) {
      for (int i = 0; i < (reps > 1 ? 3 : 0); ++i) body();
      std::vector<float> ms;
      for (int i = 0; i < reps; ++i) {
        CHECK_CU(cuEventRecord(e0, nullptr));
        body();
        CHECK_CU(cuEventRecord(e1, nullptr));
        CHECK_CU(cuEventSynchronize(e1));
        float t = 0;
        CHECK_CU(cuEventElapsedTime(&t, e0, e1));
        ms.push_back(t);
      }
      return median(ms);
    };
    const double tf = time([&] { run_plan(fplan); });
    const double tb = time([&] { run_plan(bplan); });
    const double tfb = time([&] {
      run_plan(fplan);
      run_plan(bplan);
    });
    const double fl = 4.0 * sh.b * sh.hq * double(sh.s) * sh.s * sh.d * (sh.causal ? 0.5 : 1.0);
    char name[64];
    std::snprintf(name, sizeof name, "b=%d s=%d hq=%d hk=%d d=%d%s", sh.b, sh.s, sh.hq, sh.hk, sh.d,
                  sh.causal ? " causal" : "");
    const double tff = fl / tf / 1e9;
    std::printf("%-34s %9.3f %9.1f %9.3f %9.1f %9.1f %7.2f\n", name, tf, tff, tb,
                2.5 * fl / tb / 1e9, 3.5 * fl / tfb / 1e9, tff / sh.cudnn_fwd);
    // Each backward step alone (ms): where the backward's time goes.
    std::printf("  bwd steps:");
    for (int i = 0; i < static_cast<int>(bplan.count); ++i) {
      const jk::Step& st = bplan.steps[i];
      if (st.kind != jk::Step::Kind::kLaunch) continue;
      std::printf(" %s %.3f", std::string(st.launch.kernel->symbol).c_str(),
                  time([&] { run_plan(bplan, nullptr, i); }));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  cuEventDestroy(e0);
  cuEventDestroy(e1);
}

// The forward's features at one shape, b4 s4096 hq32 hk8 d128 causal bf16 (forward only, events,
// median of `reps`): each row against the plain one, TFLOP/s from the visible (query, key) pairs.
struct FeatureRow {
  const char* name;
  int wl = -1;
  int alibi = 0;        // 1: slopes [hq]
  float p = 0.f;        // dropout
  int bias = 0;         // 1: [1, 1, s, s] f32, 2: [1, hq, s, s] bf16
  bool varlen = false;  // the b sequences as one varlen call
};

void bench_features(int reps) {
  const int b = 4, s = 4096, hq = 32, hk = 8, d = 128;
  const FeatureRow rows[] = {{"plain"},
                             {"window 1024 (causal, left 1023)", 1023},
                             {"alibi [hq]", -1, 1},
                             {"dropout 0.1", -1, 0, 0.1f},
                             {"bias [1,1,s,s] f32", -1, 0, 0.f, 1},
                             {"bias [1,hq,s,s] bf16", -1, 0, 0.f, 2},
                             {"varlen 4 x 4096", -1, 0, 0.f, 0, true},
                             {"window+alibi+dropout", 1023, 1, 0.1f}};
  std::printf(
      "\nforward features, b=%d s=%d hq=%d hk=%d d=%d causal bf16 (events, median of %d):\n", b, s,
      hq, hk, d, reps);
  std::printf("%-34s %-36s %9s %9s %8s\n", "feature", "kernel", "fwd ms", "TF/s", "vs plain");
  const size_t nq = size_t(b) * s * hq * d, nk = size_t(b) * s * hk * d;
  DevBuf q = upload(fast_random(nq, 1)), k = upload(fast_random(nk, 2)),
         v = upload(fast_random(nk, 3));
  DevBuf out(nq * 2), lse(size_t(b) * hq * s * 4);
  std::vector<float> slopes_h(hq);
  for (int h = 0; h < hq; ++h) slopes_h[h] = std::exp2(-8.f * (h + 1) / hq);
  DevBuf slopes = upload(slopes_h), key = upload(std::vector<unsigned>{0x1234567u, 0x89abcdefu});
  std::vector<int> cu(b + 1);
  for (int i = 0; i <= b; ++i) cu[i] = i * s;
  DevBuf cuq = upload(cu);
  DevBuf bias32, bias16;
  {
    std::vector<float> f(size_t(s) * s);
    const std::vector<uint16_t> r = fast_random(f.size(), 5);
    for (size_t i = 0; i < f.size(); ++i) f[i] = jax_aiter::bf16_to_float(r[i]);
    bias32 = upload(f);
    bias16 = upload(fast_random(size_t(hq) * s * s, 6));
  }
  CUevent e0, e1;
  CHECK_CU(cuEventCreate(&e0, 0));
  CHECK_CU(cuEventCreate(&e1, 0));
  double plain_ms = 0;
  for (const FeatureRow& row : rows) {
    ops::AttnOptions opt;
    opt.softmax_scale = static_cast<float>(1.0 / std::sqrt(double(d)));
    opt.causal = true;
    opt.window_left = row.wl;
    opt.dropout_p = row.p;
    ops::FlashAttnFwdParams fp;
    if (row.varlen) {
      fp.q = ops::Tensor::over(q.ptr(), DType::kBF16, {b * s, hq, d});
      fp.k = ops::Tensor::over(k.ptr(), DType::kBF16, {b * s, hk, d});
      fp.v = ops::Tensor::over(v.ptr(), DType::kBF16, {b * s, hk, d});
      fp.out = ops::Tensor::over(out.ptr(), DType::kBF16, {b * s, hq, d});
      fp.lse = ops::Tensor::over(lse.ptr(), DType::kF32, {hq, b * s});
      fp.cu_seqlens_q = ops::Tensor::over(cuq.ptr(), DType::kI32, {b + 1});
      fp.cu_seqlens_k = fp.cu_seqlens_q;
      opt.max_seqlen_q = opt.max_seqlen_k = s;
    } else {
      fp.q = ops::Tensor::over(q.ptr(), DType::kBF16, {b, s, hq, d});
      fp.k = ops::Tensor::over(k.ptr(), DType::kBF16, {b, s, hk, d});
      fp.v = ops::Tensor::over(v.ptr(), DType::kBF16, {b, s, hk, d});
      fp.out = ops::Tensor::over(out.ptr(), DType::kBF16, {b, s, hq, d});
      fp.lse = ops::Tensor::over(lse.ptr(), DType::kF32, {b, hq, s});
    }
    if (row.alibi) fp.alibi_slopes = ops::Tensor::over(slopes.ptr(), DType::kF32, {hq});
    if (row.p > 0) fp.rng_key = ops::Tensor::over(key.ptr(), DType::kI32, {2});
    if (row.bias == 1) fp.bias = ops::Tensor::over(bias32.ptr(), DType::kF32, {1, 1, s, s});
    if (row.bias == 2) fp.bias = ops::Tensor::over(bias16.ptr(), DType::kBF16, {1, hq, s, s});
    fp.opt = opt;
    if (auto prob = ops::attn_problem(fp); !prob) {
      std::printf("%-34s refused: %s\n", row.name, prob.status().message().c_str());
      continue;
    }
    jk::Plan plan;
    ops::FlashAttnFwdPortableTier::plan(fp, plan_target(), plan);
    for (int i = 0; i < 3; ++i) run_plan(plan);
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
      CHECK_CU(cuEventRecord(e0, nullptr));
      run_plan(plan);
      CHECK_CU(cuEventRecord(e1, nullptr));
      CHECK_CU(cuEventSynchronize(e1));
      float t = 0;
      CHECK_CU(cuEventElapsedTime(&t, e0, e1));
      ms.push_back(t);
    }
    const double t = median(ms);
    if (plain_ms == 0) plain_ms = t;
    double pairs = 0;  // visible (query, key) pairs of one sequence
    for (int i = 0; i < s; ++i) pairs += std::min(i, row.wl < 0 ? i : row.wl) + 1;
    const double fl = 4.0 * b * hq * d * pairs;
    // The same call on the host's plan (the mma.sync kernel; the same dropout mask): out's
    // norm-wise difference and lse's largest, at this size.
    std::string diff;
    if (plan_target().arch == jax_aiter::Arch::kSm90) {
      const auto out_h = download(out), lse_h = download(lse);
      jk::Plan ref;
      ops::FlashAttnFwdPortableTier::plan(fp, jax_aiter::Target{}, ref);
      run_plan(ref);
      CHECK_CU(cuCtxSynchronize());
      const auto out_r = download(out), lse_r = download(lse);
      double num = 0, den = 0, dl = 0;
      for (size_t i = 0; i < nq; ++i) {
        uint16_t x, y;
        std::memcpy(&x, &out_h[i * 2], 2);
        std::memcpy(&y, &out_r[i * 2], 2);
        const double a = jax_aiter::bf16_to_float(x), r = jax_aiter::bf16_to_float(y);
        num += (a - r) * (a - r), den += r * r;
      }
      for (size_t i = 0; i < lse_h.size() / 4; ++i) {
        float x, y;
        std::memcpy(&x, &lse_h[i * 4], 4);
        std::memcpy(&y, &lse_r[i * 4], 4);
        dl = std::max(dl, std::isfinite(x) && std::isfinite(y) ? std::abs(double(x) - y) : 1e30);
      }
      char buf[96];
      std::snprintf(buf, sizeof buf, "  vs mma.sync: out %.1e lse %.1e", std::sqrt(num / den), dl);
      diff = buf;
    }
    std::printf("%-34s %-36s %9.3f %9.1f %8.2f%s\n", row.name,
                std::string(plan.steps[0].launch.kernel->symbol).c_str(), t, fl / t / 1e9,
                t / plain_ms, diff.c_str());
    std::fflush(stdout);
  }
  cuEventDestroy(e0);
  cuEventDestroy(e1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: %s ATTENTION_CUBIN [check|bench|all]\n", argv[0]);
    return 2;
  }
  const std::string mode = argc > 2 ? argv[2] : "all";
  const CUdevice dev = use_device0();
  char dev_name[256] = {};
  cuDeviceGetName(dev_name, sizeof dev_name, dev);
  std::printf("device: %s\n", dev_name);
  const auto image = read_file(argv[1]);
  CUmodule mod;
  CHECK_CU(cuModuleLoadData(&mod, image.data()));
  resolve_all(mod);
  if (mode != "bench" && mode != "bench-features") {
    std::mt19937 rng(20261125);
    // check-fwd: the forward of every case alone (its CPU reference is a fraction of the
    // backward's). check-bwd: forward and backward of the cases sm_90's wgmma backward takes, and
    // of a few the mma.sync kernels keep (within a minute of a GPU call).
    for (Case c : cases()) {
      if (mode == "check-fwd") c.bwd = false;
      if (mode == "check-bwd" && !takes_wg_bwd(c) && !keeps_mma_bwd(c)) continue;
      check_case(c, rng);
    }
    if (mode != "check-bwd") {
      check_dropout_mask(rng);
      check_gqa_reduce(rng);
      for (const Case& c : shard_cases()) check_shards_of(c, rng);
      check_shard_masks(rng);
    }
    std::printf("\n%d passed, %d failed\n", passed, failed);
  }
  // bench [shape index] [repetitions]: one shape, e.g. once under a profiler.
  if (mode == "bench" || mode == "all")
    bench(argc > 3 ? std::atoi(argv[3]) : -1, argc > 4 ? std::atoi(argv[4]) : 20);
  // bench-features [repetitions]: the forward's features at one shape (bench_features).
  if (mode == "bench-features" || mode == "all") bench_features(argc > 3 ? std::atoi(argv[3]) : 20);
  cuModuleUnload(mod);
  cuDevicePrimaryCtxRelease(dev);
  return failed ? 1 : 0;
}
