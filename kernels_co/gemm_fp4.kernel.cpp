// Portable FP4 (MXFP4) GEMM: out[M, N] bf16 = dequant(a) . dequant(b)^T, a and b fp4 e2m1 packed
// two a byte, e8m0 scales per 32 along K in AITER's e8m0_shuffle layout, b shuffled (16, 16) or
// plain. FP4 is dequantised in the kernel; plain float FMAs on every target
// (jax_aiter_gemm_fp4_tile.hpp).
//
// The parameter list IS the ABI: include/jax_aiter/kernels/gemm_fp4.hpp mirrors it field by field
// (GemmFp4Args). The kernels instantiated are exactly JAX_AITER_GEMM_FP4_TILES (grid
// (ceil(N / BN), ceil(M / BM)), no K split) and JAX_AITER_GEMM_FP4_DECODE (small M, weight
// streaming: grid (ceil(N / 16), ceil(M / BM)), K split inside the block) of
// include/jax_aiter/kernels/shared/gemm_fp4.h.
//
// The sm_90 decode kernels (jax_aiter_gemm_fp4_stream and its _finish; M <= 16, B shuffled,
// GemmFp4StreamArgs): the weight-streaming engine of jax_aiter_gemm_stream_q.hpp on fp8 tensor
// cores (e2m1 read as e4m3), K split across blocks, the splits' f32 partials added in split order.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... -nogpuinc).
#include "jax_aiter/kernels/shared/gemm_fp4.h"
#include "jax_aiter_gemm_fp4_tile.hpp"
#include "jax_aiter_gemm_stream_q_families.hpp"

namespace ja {

template <int BM, int BN>
JA_DEVICE void gemm_fp4_kernel(const void* a, const void* b, const void* a_scale,
                               const void* b_scale, void* out, int M, int N, int K, int lda,
                               int sa_stride, int sb_stride, int b_shuffled) {
  static_assert(BN == fp4::kSN && (BM == 64 || BM == 16));
  JA_SHARED fp4::Shared<BM> sh;
  const int n0 = block_id() * BN, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const fp4::Operands o{static_cast<const unsigned char*>(a),
                        lda,
                        static_cast<const unsigned char*>(b),
                        b_shuffled != 0,
                        static_cast<const unsigned char*>(a_scale),
                        sa_stride,
                        static_cast<const unsigned char*>(b_scale),
                        sb_stride,
                        M,
                        N,
                        K};
  uint16_t* o_ptr = static_cast<uint16_t*>(out) + static_cast<int64_t>(m0) * N + n0;
  fp4::subtile<BM>(sh, o, m0, n0, 0, K, [&](int r, int c, float v) {
    o_ptr[static_cast<int64_t>(r) * N + c] = BF16::store(v);
  });
}

namespace decode {

constexpr int kThreads = JAX_AITER_GEMM_FP4_DECODE_THREADS;
constexpr int kRows = JAX_AITER_GEMM_FP4_DECODE_ROWS;
constexpr int kSlices = JAX_AITER_GEMM_FP4_DECODE_SLICES;
constexpr int kAStride = 36;  // floats a staged 32-block of A (16-byte aligned, 4 banks apart)
static_assert(kThreads == kRows * kSlices);

struct alignas(16) Chunk {  // 16 bytes of B: one row's 32-block (32 fp4 values)
  uint32_t w[4];
};
struct alignas(16) F4 {
  float v[4];
};

template <int BM, int U>
struct Shared {
  alignas(16) float a[BM][kSlices * U][kAStride];  // the stage's A, decoded; then the slice sums
  float sa[BM][kSlices * U];
  float table[16];
};

// out rows [m0, m0 + BM) x B rows [n0, n0 + 16) over all of K (kernels/shared/gemm_fp4.h).
template <int BM, int U>
JA_DEVICE void gemm_fp4_decode(const void* a, const void* b, const void* a_scale,
                               const void* b_scale, void* out, int M, int N, int K, int lda,
                               int sa_stride, int sb_stride, int b_shuffled) {
  static_assert(BM * kThreads <= BM * kSlices * U * kAStride, "slice sums reuse Shared::a");
  constexpr int kStage = kSlices * U;  // 32-blocks a stage
  JA_SHARED Shared<BM, U> sh;
  const int n0 = block_id() * kRows, m0 = block_id_y() * BM;
  if (m0 >= M || n0 >= N) return;
  const int t = thread_id();
  const int row = t % kRows, slice = t / kRows;
  const int n = n0 + row;
  const int rows = M - m0 < BM ? M - m0 : BM;
  const int nblk = K / fp4::L::kScaleBlock;
  const long long kbytes = K / 2;
  const auto* A = static_cast<const unsigned char*>(a);
  const auto* B = static_cast<const unsigned char*>(b);
  const auto* SA = static_cast<const unsigned char*>(a_scale);
  const auto* SB = static_cast<const unsigned char*>(b_scale);
  // Chunk (row, kb): shuffled, the group's bytes start at n0 K/2 and hold chunk kb 16 + row at
  // 16 (kb 16 + row); plain, row n's bytes start at n K/2.
  const Chunk* b_row = b_shuffled != 0
                           ? reinterpret_cast<const Chunk*>(B + n0 * kbytes) + row
                           : reinterpret_cast<const Chunk*>(B + static_cast<long long>(n) * kbytes);
  const int b_step = b_shuffled != 0 ? kRows : 1;  // chunks from one 32-block to the next
  const bool n_ok = n < N;
  if (t < 16) sh.table[t] = fp4::e2m1(static_cast<uint32_t>(t));
  float acc[BM];
#pragma unroll
  for (int m = 0; m < BM; ++m) acc[m] = 0.f;
  const int stages = (nblk + kStage - 1) / kStage;
  Chunk cur[U] = {}, nxt[U] = {};  // a stage's chunks and scale codes; the next stage's, early
  uint32_t cur_sb[U] = {}, nxt_sb[U] = {};
  auto load = [&](int s, Chunk(&dst)[U], uint32_t(&dst_sb)[U]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kb = s * kStage + u * kSlices + slice;
      if (n_ok && kb < nblk) {
        dst[u] = load_once(b_row + static_cast<long long>(kb) * b_step);
        dst_sb[u] = SB[fp4::L::shuffled_scale_offset(n, kb, sb_stride)];
      } else {
#pragma unroll
        for (int w = 0; w < 4; ++w) dst[u].w[w] = 0u;
        dst_sb[u] = 127u;
      }
    }
  };
  load(0, cur, cur_sb);
  for (int s = 0; s < stages; ++s) {
    barrier();  // the previous stage's A is read
    for (int q = t; q < rows * kStage * 16; q += kThreads) {
      const int m = q / (kStage * 16), bl = (q / 16) % kStage, e = q % 16;
      const int kb = s * kStage + bl;
      const bool ok = kb < nblk;
      const uint32_t byte = ok ? A[static_cast<long long>(m0 + m) * lda + kb * 16 + e] : 0u;
      sh.a[m][bl][2 * e] = fp4::e2m1(byte & 15u);
      sh.a[m][bl][2 * e + 1] = fp4::e2m1(byte >> 4);
      if (e == 0) {
        sh.sa[m][bl] =
            ok ? fp4::e8m0(SA[fp4::L::shuffled_scale_offset(m0 + m, kb, sa_stride)]) : 0.f;
      }
    }
    if (s + 1 < stages) load(s + 1, nxt, nxt_sb);
    barrier();
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int bl = u * kSlices + slice, kb = s * kStage + bl;
      if (!n_ok || kb >= nblk) continue;
      const float sb = fp4::e8m0(cur_sb[u]);
      float bv[32];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
#pragma unroll
        for (int i = 0; i < 8; ++i) bv[8 * w + i] = sh.table[(cur[u].w[w] >> (4 * i)) & 15u];
      }
#pragma unroll
      for (int m = 0; m < BM; ++m) {
        if (m < rows) {
          const F4* av = reinterpret_cast<const F4*>(sh.a[m][bl]);
          float part = 0.f;  // exact: multiples of 1/4 below 2^11
#pragma unroll
          for (int q = 0; q < 8; ++q) {
            const F4 v = av[q];
#pragma unroll
            for (int i = 0; i < 4; ++i) part += v.v[i] * bv[4 * q + i];
          }
          acc[m] += part * (sh.sa[m][bl] * sb);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      cur[u] = nxt[u];
      cur_sb[u] = nxt_sb[u];
    }
  }
  barrier();
  float* sums = &sh.a[0][0][0];  // [BM][kThreads]: slice sums, slice-major
#pragma unroll
  for (int m = 0; m < BM; ++m) {
    if (m < rows) sums[m * kThreads + t] = acc[m];
  }
  barrier();
  if (t < rows * kRows) {
    const int m = t / kRows, r = t % kRows;
    float v = 0.f;
    for (int sl = 0; sl < kSlices; ++sl) v += sums[m * kThreads + sl * kRows + r];
    if (n0 + r < N) {
      static_cast<uint16_t*>(out)[static_cast<long long>(m0 + m) * N + n0 + r] = BF16::store(v);
    }
  }
}

}  // namespace decode

}  // namespace ja

// One kernel per tile; the parameter list is GemmFp4Args'.
#define JA_GEMM_FP4_KERNEL(name, BM, BN, THREADS)                                                \
  JA_KERNEL_BOUNDED(THREADS)                                                                     \
  void jax_aiter_gemm_fp4_##name(const void* a, const void* b, const void* a_scale,              \
                                 const void* b_scale, void* out, int M, int N, int K, int lda,   \
                                 int sa_stride, int sb_stride, int b_shuffled) {                 \
    ja::wait_for_prior_grids();                                                                  \
    ja::allow_dependent_grids();                                                                 \
    ja::gemm_fp4_kernel<BM, BN>(a, b, a_scale, b_scale, out, M, N, K, lda, sa_stride, sb_stride, \
                                b_shuffled);                                                     \
  }

JAX_AITER_GEMM_FP4_TILES(JA_GEMM_FP4_KERNEL)

#define JA_GEMM_FP4_DECODE_KERNEL(name, BM, U, MIN_BLOCKS)                                     \
  JA_KERNEL_BOUNDED_RESIDENT(JAX_AITER_GEMM_FP4_DECODE_THREADS, MIN_BLOCKS)                    \
  void jax_aiter_gemm_fp4_##name(const void* a, const void* b, const void* a_scale,            \
                                 const void* b_scale, void* out, int M, int N, int K, int lda, \
                                 int sa_stride, int sb_stride, int b_shuffled) {               \
    ja::wait_for_prior_grids();                                                                \
    ja::allow_dependent_grids();                                                               \
    ja::decode::gemm_fp4_decode<BM, U>(a, b, a_scale, b_scale, out, M, N, K, lda, sa_stride,   \
                                       sb_stride, b_shuffled);                                 \
  }

JAX_AITER_GEMM_FP4_DECODE(JA_GEMM_FP4_DECODE_KERNEL)

// The sm_90 decode kernels (on AMD the symbols exist for the shared kernel table and trap: no plan
// for a gfx arch takes them). Parameter lists: GemmFp4StreamArgs, GemmFp4StreamFinishArgs.
JA_KERNEL_BOUNDED_RESIDENT(jax_aiter::kernels::gemm_stream_q::kThreads, 2)
void jax_aiter_gemm_fp4_stream(const void* a, const void* b, const void* a_scale,
                               const void* b_scale, void* out, void* partials, int M, int N, int K,
                               int lda, int sb_stride, int k_chunk, int splits) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
#if defined(__CUDACC__)
  ja::stream_q::gemm_fp4_stream(a, b, a_scale, b_scale, out, partials, M, N, K, lda, sb_stride,
                                k_chunk, splits);
#else
  ja::unsupported_here(a, b, a_scale, b_scale, out, partials, M, N, K, lda, sb_stride, k_chunk,
                       splits);
#endif
}

JA_KERNEL_BOUNDED(jax_aiter::kernels::gemm_stream_q::kFinishThreads)
void jax_aiter_gemm_fp4_stream_finish(const void* partials, void* out, int M, int N, int splits) {
  ja::wait_for_prior_grids();
  ja::allow_dependent_grids();
#if defined(__CUDACC__)
  ja::stream_q::gemm_fp4_stream_finish(partials, out, M, N, splits);
#else
  ja::unsupported_here(partials, out, M, N, splits);
#endif
}
