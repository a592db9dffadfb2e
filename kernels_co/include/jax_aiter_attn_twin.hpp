// The device building blocks of the ABI twins of AITER's ASM v3 attention kernels
// (kernels_co/aiter_fmha_v3.twin.cpp): plain float32 arithmetic in shared-memory tiles, no matrix
// instructions, so one source compiles quickly for gfx942, gfx950 and sm_90. The twins exist to
// verify the ASM tier's contract (argument packing, grids, workspaces, rounding), not to be fast;
// they should still not be pathologically slow (the forward keeps scores, online softmax and the
// output tile in registers and shared memory, as FlashAttention does).
//
// Each engine works on one (sequence, head) of one block and a range of rows; the kernel entries
// of the twin source decode AITER's argument structs into the jobs below. Every function marked
// JA_TWIN_FN is compiled once per instantiation and called, not inlined, by the many kernel
// entries (compile time).
//
// Conventions: byte strides (as AITER's structs carry them); 16-bit elements are bf16 or f16
// (`f16`); a bf16 store rounds as AITER's bf16_cvt code says (0 nearest even, 1 nearest away from
// zero, 2 toward zero; 3 "any" rounds to nearest even); f16 rounds to nearest even. A row with no
// visible key gets out 0 and lse +inf (the library's one meaning, attention-design.md).
#pragma once

#include "jax_aiter/kernels/shared/attention.h"
#include "jax_aiter_device.hpp"

#ifndef JA_UNROLL
#define JA_UNROLL _Pragma("unroll")
#endif

#if defined(__CUDACC__)
#define JA_TWIN_FN __device__ __noinline__
#define JA_TWIN_HD __host__ __device__ constexpr
#else
#define JA_TWIN_FN __device__ __attribute__((noinline))
#define JA_TWIN_HD __attribute__((host, device)) constexpr
#endif

namespace ja::fmha_twin {

// ---- primitives ---------------------------------------------------------------------------------

JA_DEVICE int block_threads() {
#if defined(__CUDACC__)
  return static_cast<int>(blockDim.x);
#else
  // workgroup_size_x of the HSA dispatch packet (u16 at byte 4), as HIP's blockDim.x reads it.
  const auto* packet = static_cast<const unsigned char*>(__builtin_amdgcn_dispatch_ptr());
  return *reinterpret_cast<const uint16_t*>(packet + 4);
#endif
}
JA_DEVICE float exp2_(float x) {
#if defined(__CUDACC__)
  return exp2f(x);
#else
  return __builtin_amdgcn_exp2f(x);
#endif
}
JA_DEVICE float log2_(float x) {
#if defined(__CUDACC__)
  return log2f(x);
#else
  return __builtin_amdgcn_logf(x);
#endif
}
JA_DEVICE float fmax2(float a, float b) { return a > b ? a : b; }
JA_DEVICE float inf_() { return __builtin_huge_valf(); }
JA_DEVICE float nan_() { return __builtin_nanf(""); }
JA_DEVICE long long lmin(long long a, long long b) { return a < b ? a : b; }
JA_DEVICE long long lmax(long long a, long long b) { return a > b ? a : b; }
inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

JA_DEVICE float from16(uint16_t u, bool f16) { return f16 ? F16::load(u) : BF16::load(u); }
JA_DEVICE uint16_t to16(float x, bool f16, int cvt) {
  if (f16) return F16::store(x);
  const uint32_t u = float_to_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  if (cvt == 1) return static_cast<uint16_t>((u + 0x8000u) >> 16);
  if (cvt == 2) return static_cast<uint16_t>(u >> 16);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
JA_DEVICE float ld16(const unsigned char* p, bool f16) {
  return from16(*reinterpret_cast<const uint16_t*>(p), f16);
}
JA_DEVICE void st16(unsigned char* p, float x, bool f16, int cvt) {
  *reinterpret_cast<uint16_t*>(p) = to16(x, f16, cvt);
}

JA_DEVICE void atomic_add_f32(float* p, float v) {
#if defined(__CUDACC__)
  atomicAdd(p, v);
#else
  __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#endif
}
JA_DEVICE uint32_t cas_u32(uint32_t* p, uint32_t expected, uint32_t desired) {
#if defined(__CUDACC__)
  return atomicCAS(p, expected, desired);
#else
  __hip_atomic_compare_exchange_strong(p, &expected, desired, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                       __HIP_MEMORY_SCOPE_AGENT);
  return expected;
#endif
}
// *p += v for a 16-bit element (compare-and-swap on its 32-bit word), rounded as to16 rounds.
JA_DEVICE void atomic_add_16(unsigned char* p, float v, bool f16, int cvt) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t* w = reinterpret_cast<uint32_t*>(a & ~uintptr_t{3});
  const int shift = (a & 2) != 0 ? 16 : 0;
  uint32_t old = *reinterpret_cast<volatile uint32_t*>(w), assumed;
  do {
    assumed = old;
    const float sum = from16(static_cast<uint16_t>(assumed >> shift), f16) + v;
    const uint32_t next =
        (assumed & ~(0xffffu << shift)) | (static_cast<uint32_t>(to16(sum, f16, cvt)) << shift);
    old = cas_u32(w, assumed, next);
  } while (old != assumed);
}

// The shared memory of the engines: one pool, declared by the kernel (a function's own __shared__
// variables make clang's AMDGPU module-LDS lowering give every kernel that reaches it hidden
// kernel arguments, which AITER's code objects do not declare) and carved up by the engine.
inline constexpr int kPoolBytes = 48 * 1024;
template <typename T>
JA_DEVICE T* carve(unsigned char* pool, int& offset, int count) {
  T* p = reinterpret_cast<T*>(pool + offset);
  offset += (count * static_cast<int>(sizeof(T)) + 15) / 16 * 16;
  return p;
}

// ---- masks --------------------------------------------------------------------------------------

// AITER's mask codes over one sequence of sq query rows and sk keys: 0 none, 1 causal aligned
// top-left (j <= i), 2 causal aligned bottom-right (j <= i + sk - sq), 3 a window in CK's generic
// coordinates (i - y < j < i + x).
struct Mask {
  int kind, x, y;
  long long sq, sk;
  JA_DEVICE bool visible(long long i, long long j) const {
    switch (kind) {
      case 1: return j <= i;
      case 2: return j <= i + sk - sq;
      case 3: return j > i - y && j < i + x;
      default: return true;
    }
  }
  // Keys some row of [r0, r1) sees, clipped to [0, sk); empty when hi <= lo.
  JA_DEVICE void keys(long long r0, long long r1, long long& lo, long long& hi) const {
    lo = 0, hi = sk;
    if (kind == 1) hi = lmin(hi, r1);
    if (kind == 2) hi = lmin(hi, r1 + sk - sq);
    if (kind == 3) lo = lmax(lo, r0 - y + 1), hi = lmin(hi, r1 - 1 + x);
  }
  // Query rows that see some key of [c0, c1), clipped to [0, sq).
  JA_DEVICE void queries(long long c0, long long c1, long long& lo, long long& hi) const {
    lo = 0, hi = sq;
    if (kind == 1) lo = lmax(lo, c0);
    if (kind == 2) lo = lmax(lo, c0 - (sk - sq));
    if (kind == 3) lo = lmax(lo, c0 - x + 1), hi = lmin(hi, c1 - 1 + y);
  }
};

// ---- forward ------------------------------------------------------------------------------------

// One (sequence, query head): pointers at the sequence's first row.
struct FwdJob {
  unsigned char* pool;  // kPoolBytes of shared memory
  const unsigned char *q, *k, *v;
  unsigned char* o;
  float* lse;  // null: not written
  long long q_rs, k_rs, v_rs, o_rs;
  int sq, sk, d, dv;
  float scale;
  Mask mask;
  bool f16;
  int cvt;
  // fp8 rows: q, k, v are e4m3 bytes of this in_dtype code (kernels/shared/attention.h), read as
  // f16 times 2^-shift (scale then carries the descales and 2^(2 shift)); 0: 16-bit inputs.
  int fp8 = 0;
  float out_scale = 1.f;  // out = out_scale * softmax v (fp8: v's descale times 2^shift)
};

// Loads rows [0, rows) x columns [0, cols) of g (row stride rs bytes) into an R x (W + 2) tile of
// 16-bit elements (the 2 pad the row to an odd number of 4-byte words), zeros elsewhere.
template <int R, int W, int T>
JA_DEVICE void load_rows16(uint16_t* s, const unsigned char* g, long long rs, int rows, int cols) {
  constexpr int kS = W + 2, kWords = W / 2;
  for (int idx = thread_id(); idx < R * kWords; idx += T) {
    const int r = idx / kWords, c = 2 * (idx % kWords);
    uint32_t w = 0;
    if (r < rows && c < cols) w = *reinterpret_cast<const uint32_t*>(g + r * rs + 2 * c);
    *reinterpret_cast<uint32_t*>(s + r * kS + c) = w;
  }
}

// load_rows16 for e4m3 rows (row stride rs bytes): each byte as f16 bits of its value times
// 2^-shift (jax_aiter::kernels::attention::attn_e4m3_as_f16), exactly.
template <int R, int W, int T>
JA_DEVICE void load_rows_fp8(uint16_t* s, const unsigned char* g, long long rs, int rows, int cols,
                             int fp8) {
  constexpr int kS = W + 2, kWords = W / 2;
  for (int idx = thread_id(); idx < R * kWords; idx += T) {
    const int r = idx / kWords, c = 2 * (idx % kWords);
    uint32_t w = 0;
    if (r < rows && c < cols) {
      const unsigned char* e = g + r * rs + c;
      w = jax_aiter::kernels::attention::attn_e4m3_as_f16(e[0], fp8) |
          (uint32_t{jax_aiter::kernels::attention::attn_e4m3_as_f16(e[1], fp8)} << 16);
    }
    *reinterpret_cast<uint32_t*>(s + r * kS + c) = w;
  }
}
template <int R, int W, int T>
JA_DEVICE void load_rows_in(uint16_t* s, const unsigned char* g, long long rs, int rows, int cols,
                            int fp8) {
  if (fp8 != 0) {
    load_rows_fp8<R, W, T>(s, g, rs, rows, cols, fp8);
  } else {
    load_rows16<R, W, T>(s, g, rs, rows, cols);
  }
}

JA_DEVICE void pair16(uint32_t w, bool f16, float& lo, float& hi) {
  lo = from16(static_cast<uint16_t>(w & 0xffffu), f16);
  hi = from16(static_cast<uint16_t>(w >> 16), f16);
}

// out and lse of rows [r0, r1) (r1 <= sq) in passes of BM rows and tiles of 32 keys, T threads
// (16 columns x T / 16 rows of threads), head dims up to DQ / DV.
template <int T, int DQ, int DV, int BM = 64>
JA_TWIN_FN void fwd_rows(FwdJob j, int r0, int r1) {
  constexpr int BN = 32, TR = T / 16, RS = BM / TR, NC = DV / 16;
  constexpr int SQ = DQ + 2, SKV = (DQ > DV ? DQ : DV) + 2;
  static_assert(T % 64 == 0 && BM % TR == 0 && DQ % 16 == 0 && DV % 16 == 0);
  static_assert(2 * (BM * SQ + BN * SKV) + 4 * (BM * (BN + 1) + 3 * BM) + 5 * 16 <= kPoolBytes);
  int off = 0;
  uint16_t* sQ = carve<uint16_t>(j.pool, off, BM * SQ);
  uint16_t* sKV = carve<uint16_t>(j.pool, off, BN * SKV);
  auto sS = reinterpret_cast<float(*)[BN + 1]>(carve<float>(j.pool, off, BM * (BN + 1)));
  float* sM = carve<float>(j.pool, off, BM);
  float* sL = carve<float>(j.pool, off, BM);
  float* sA = carve<float>(j.pool, off, BM);
  const int tid = thread_id(), tr = tid / 16, tc = tid % 16;
  const float scale2 = j.scale * kLog2e;
  const bool tf16 = j.f16 || j.fp8 != 0;  // the tiles' 16-bit type (fp8 rows: f16)
  for (int m0 = r0; m0 < r1; m0 += BM) {
    const int rows = r1 - m0 < BM ? r1 - m0 : BM;
    barrier();
    load_rows_in<BM, DQ, T>(sQ, j.q + m0 * j.q_rs, j.q_rs, rows, j.d, j.fp8);
    if (tid < BM) sM[tid] = -inf_(), sL[tid] = 0.f;
    float o[RS][NC] = {};
    long long klo, khi;
    j.mask.keys(m0, m0 + rows, klo, khi);
    for (long long n0 = klo; n0 < khi; n0 += BN) {
      const int keys = khi - n0 < BN ? static_cast<int>(khi - n0) : BN;
      barrier();  // sKV (V of the last tile) and sS are free
      load_rows_in<BN, SKV - 2, T>(sKV, j.k + n0 * j.k_rs, j.k_rs, keys, j.d, j.fp8);
      barrier();
      // Scores in log2 units, -inf where masked: rows tr + TR u, keys tc and tc + 16.
      float s[RS][2] = {};
      for (int c = 0; c < j.d; c += 2) {
        float k0l, k0h, k1l, k1h;
        pair16(*reinterpret_cast<const uint32_t*>(sKV + tc * SKV + c), tf16, k0l, k0h);
        pair16(*reinterpret_cast<const uint32_t*>(sKV + (tc + 16) * SKV + c), tf16, k1l, k1h);
        JA_UNROLL
        for (int u = 0; u < RS; ++u) {
          float ql, qh;
          pair16(*reinterpret_cast<const uint32_t*>(sQ + (tr + TR * u) * SQ + c), tf16, ql, qh);
          s[u][0] += ql * k0l + qh * k0h;
          s[u][1] += ql * k1l + qh * k1h;
        }
      }
      JA_UNROLL
      for (int u = 0; u < RS; ++u) {
        const int r = tr + TR * u;
        JA_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int kk = tc + 16 * e;
          const bool ok = r < rows && kk < keys && j.mask.visible(m0 + r, n0 + kk);
          sS[r][kk] = ok ? s[u][e] * scale2 : -inf_();
        }
      }
      barrier();
      // Online softmax, one thread a row: p = 2^(s - m), the running sum and the rescale factor.
      if (tid < BM) {
        float mx = -inf_();
        for (int kk = 0; kk < BN; ++kk) mx = fmax2(mx, sS[tid][kk]);
        const float m_old = sM[tid], m_new = fmax2(m_old, mx);
        const float m_use = m_new == -inf_() ? 0.f : m_new;
        const float alpha = exp2_(m_old - m_use);
        float l = sL[tid] * alpha;
        for (int kk = 0; kk < BN; ++kk) {
          const float p = exp2_(sS[tid][kk] - m_use);
          sS[tid][kk] = p;
          l += p;
        }
        sM[tid] = m_new, sL[tid] = l, sA[tid] = alpha;
      }
      barrier();  // the scores are read; K may be overwritten by V
      load_rows_in<BN, SKV - 2, T>(sKV, j.v + n0 * j.v_rs, j.v_rs, keys, j.dv, j.fp8);
      barrier();
      JA_UNROLL
      for (int u = 0; u < RS; ++u) {
        const int r = tr + TR * u;
        const float alpha = sA[r];
        JA_UNROLL
        for (int c = 0; c < NC; ++c) o[u][c] *= alpha;
      }
      for (int kk = 0; kk < keys; ++kk) {
        float vv[NC];
        JA_UNROLL
        for (int c = 0; c < NC; ++c) vv[c] = from16(sKV[kk * SKV + tc + 16 * c], tf16);
        JA_UNROLL
        for (int u = 0; u < RS; ++u) {
          const float p = sS[tr + TR * u][kk];
          JA_UNROLL
          for (int c = 0; c < NC; ++c) o[u][c] += p * vv[c];
        }
      }
    }
    barrier();
    JA_UNROLL
    for (int u = 0; u < RS; ++u) {
      const int r = tr + TR * u;
      if (r >= rows) continue;
      const float l = sL[r], inv = l > 0.f ? j.out_scale / l : 0.f;
      unsigned char* out = j.o + (m0 + r) * j.o_rs;
      JA_UNROLL
      for (int c = 0; c < NC; ++c) {
        const int col = tc + 16 * c;
        if (col < j.dv) st16(out + 2 * col, o[u][c] * inv, j.f16, j.cvt);
      }
    }
    if (j.lse != nullptr && tid < rows) {
      const float l = sL[tid];
      j.lse[m0 + tid] = l > 0.f ? (sM[tid] + log2_(l)) * kLn2 : inf_();
    }
  }
}

// ---- backward -----------------------------------------------------------------------------------

// The odo pre-pass over rows [r0, r1) (2 threads a row, T = 256): d[i] = sum_c o[i][c] do[i][c].
struct OdoJob {
  const unsigned char *o, *dout;
  unsigned char* d;
  long long o_rs, do_rs, d_rs;
  int cols;
  bool f16;
};
JA_TWIN_FN void odo_rows(OdoJob j, int r0, int r1) {
  const int tid = thread_id(), r = r0 + tid / 2, half = tid % 2;
  float acc = 0.f;
  if (r < r1) {
    const unsigned char *o = j.o + r * j.o_rs, *g = j.dout + r * j.do_rs;
    for (int c = 2 * half; c < j.cols; c += 4) {
      float ol, oh, gl, gh;
      pair16(*reinterpret_cast<const uint32_t*>(o + 2 * c), j.f16, ol, oh);
      pair16(*reinterpret_cast<const uint32_t*>(g + 2 * c), j.f16, gl, gh);
      acc += ol * gl + oh * gh;
    }
  }
  acc += shuffle_xor(acc, 1);
  if (r < r1 && half == 0) *reinterpret_cast<float*>(j.d + r * j.d_rs) = acc;
}

// One (sequence, query head) of the main kernel: key rows [c0, c1) get dk and dv (of this query
// head), and every visible query row gets scale * dS K added into its dq accumulator row.
struct BwdJob {
  unsigned char* pool;  // kPoolBytes of shared memory
  const unsigned char *q, *k, *v, *dout;
  const float *lse, *delta;
  unsigned char *dk_out, *dv_out;
  long long q_rs, k_rs, v_rs, do_rs, dk_rs, dv_rs;
  unsigned char* dq;  // row 0 of the sequence in the accumulator (or dq)
  long long dq_rs;
  bool dq_f32;  // float32 accumulator (a32), else 16-bit adds (a16)
  int sq, sk, d, dv;
  float scale, log2e;
  Mask mask;
  bool f16;
  int cvt;
};

// Key rows [c0, c1) in tiles of 32 keys, query rows in tiles of 16, T = 256 threads, head dims up
// to DQ / DV.
template <int DQ, int DV>
JA_TWIN_FN void bwd_keys(BwdJob j, int c0, int c1) {
  constexpr int T = 256, BK = 32, BQ = 16, SQ = DQ + 2, SV = DV + 2;
  constexpr int NK = DQ / 8, NV = DV / 8;
  static_assert(2 * (BK + BQ) * (SQ + SV) + 4 * (2 * BQ * (BK + 1) + 2 * BQ) + 8 * 16 <=
                kPoolBytes);
  int off = 0;
  uint16_t* sK = carve<uint16_t>(j.pool, off, BK * SQ);
  uint16_t* sV = carve<uint16_t>(j.pool, off, BK * SV);
  uint16_t* sQ = carve<uint16_t>(j.pool, off, BQ * SQ);
  uint16_t* sO = carve<uint16_t>(j.pool, off, BQ * SV);
  auto sP = reinterpret_cast<float(*)[BK + 1]>(carve<float>(j.pool, off, BQ * (BK + 1)));
  auto sD = reinterpret_cast<float(*)[BK + 1]>(carve<float>(j.pool, off, BQ * (BK + 1)));
  float* sLse = carve<float>(j.pool, off, BQ);
  float* sDel = carve<float>(j.pool, off, BQ);
  const int tid = thread_id();
  const int kr = tid % BK, kg = tid / BK;  // dk / dv: key row, column group (8)
  const int si = tid / 16, sj = tid % 16;  // scores: row, keys sj and sj + 16
  const int qi = tid % BQ, qg = tid / BQ;  // dq: row, column group (16)
  for (int n0 = c0; n0 < c1; n0 += BK) {
    const int keys = c1 - n0 < BK ? c1 - n0 : BK;
    barrier();
    load_rows16<BK, DQ, T>(sK, j.k + n0 * j.k_rs, j.k_rs, keys, j.d);
    load_rows16<BK, DV, T>(sV, j.v + n0 * j.v_rs, j.v_rs, keys, j.dv);
    float dk[NK] = {}, dv[NV] = {};
    long long qlo, qhi;
    j.mask.queries(n0, n0 + keys, qlo, qhi);
    for (long long m0 = qlo; m0 < qhi; m0 += BQ) {
      const int rows = qhi - m0 < BQ ? static_cast<int>(qhi - m0) : BQ;
      barrier();
      load_rows16<BQ, DQ, T>(sQ, j.q + m0 * j.q_rs, j.q_rs, rows, j.d);
      load_rows16<BQ, DV, T>(sO, j.dout + m0 * j.do_rs, j.do_rs, rows, j.dv);
      if (tid < BQ) {
        sLse[tid] = tid < rows ? j.lse[m0 + tid] : inf_();
        sDel[tid] = tid < rows ? j.delta[m0 + tid] : 0.f;
      }
      barrier();
      // S = Q K^T and dP = dO V^T at (si, sj), (si, sj + 16); P and dS into shared memory.
      float s[2] = {}, dp[2] = {};
      for (int c = 0; c < j.d; c += 2) {
        float ql, qh, al, ah, bl, bh;
        pair16(*reinterpret_cast<const uint32_t*>(sQ + si * SQ + c), j.f16, ql, qh);
        pair16(*reinterpret_cast<const uint32_t*>(sK + sj * SQ + c), j.f16, al, ah);
        pair16(*reinterpret_cast<const uint32_t*>(sK + (sj + 16) * SQ + c), j.f16, bl, bh);
        s[0] += ql * al + qh * ah;
        s[1] += ql * bl + qh * bh;
      }
      for (int c = 0; c < j.dv; c += 2) {
        float ol, oh, al, ah, bl, bh;
        pair16(*reinterpret_cast<const uint32_t*>(sO + si * SV + c), j.f16, ol, oh);
        pair16(*reinterpret_cast<const uint32_t*>(sV + sj * SV + c), j.f16, al, ah);
        pair16(*reinterpret_cast<const uint32_t*>(sV + (sj + 16) * SV + c), j.f16, bl, bh);
        dp[0] += ol * al + oh * ah;
        dp[1] += ol * bl + oh * bh;
      }
      JA_UNROLL
      for (int e = 0; e < 2; ++e) {
        const int kk = sj + 16 * e;
        const bool ok = si < rows && kk < keys && j.mask.visible(m0 + si, n0 + kk);
        const float p = ok ? exp2_((s[e] * j.scale - sLse[si]) * j.log2e) : 0.f;
        sP[si][kk] = p;
        sD[si][kk] = p * (dp[e] - sDel[si]);
      }
      barrier();
      // dv += P^T dO, dk += dS^T Q for key row kr, columns kg + 8 u.
      for (int i = 0; i < rows; ++i) {
        const float p = sP[i][kr], ds = sD[i][kr];
        JA_UNROLL
        for (int u = 0; u < NV; ++u) dv[u] += p * from16(sO[i * SV + kg + 8 * u], j.f16);
        JA_UNROLL
        for (int u = 0; u < NK; ++u) dk[u] += ds * from16(sQ[i * SQ + kg + 8 * u], j.f16);
      }
      // dq[qi] += scale dS K, columns qg + 16 u (a loop, not unrolled: this function is compiled
      // once per kernel on sm_90, and its size is the twins' compile time).
      if (qi < rows) {
        unsigned char* row = j.dq + (m0 + qi) * j.dq_rs;
#pragma unroll 1
        for (int col = qg; col < j.d; col += 16) {
          float acc = 0.f;
          for (int kk = 0; kk < keys; ++kk) acc += sD[qi][kk] * from16(sK[kk * SQ + col], j.f16);
          if (j.dq_f32) {
            atomic_add_f32(reinterpret_cast<float*>(row) + col, j.scale * acc);
          } else {
            atomic_add_16(row + 2 * col, j.scale * acc, j.f16, j.cvt);
          }
        }
      }
    }
    if (kr < keys) {
      unsigned char* dkr = j.dk_out + (n0 + kr) * j.dk_rs;
      unsigned char* dvr = j.dv_out + (n0 + kr) * j.dv_rs;
      JA_UNROLL
      for (int u = 0; u < NK; ++u) {
        if (kg + 8 * u < j.d) st16(dkr + 2 * (kg + 8 * u), j.scale * dk[u], j.f16, j.cvt);
      }
      JA_UNROLL
      for (int u = 0; u < NV; ++u) {
        if (kg + 8 * u < j.dv) st16(dvr + 2 * (kg + 8 * u), dv[u], j.f16, j.cvt);
      }
    }
  }
}

// NaN over rows [r0, r1) x columns [0, cols) of 16-bit g (a twin's contract check failed).
JA_TWIN_FN void poison16(unsigned char* g, long long rs, int r0, int r1, int cols) {
  const int n = (r1 - r0) * cols;
  for (int idx = thread_id(); idx < n; idx += block_threads()) {
    *reinterpret_cast<uint16_t*>(g + (r0 + idx / cols) * rs + 2 * (idx % cols)) = 0x7fc0u;
  }
}

}  // namespace ja::fmha_twin
