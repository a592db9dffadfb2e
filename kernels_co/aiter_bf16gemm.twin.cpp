// ABI twins of AITER's BF16 ASM GEMM kernels (hsa/<arch>/bf16gemm/*.co): one kernel per row of
// JAX_AITER_BF16GEMM_ROWS (include/jax_aiter/kernels/shared/aiter_bf16gemm.h), named by the row's
// symbol and declaring AITER's kernel arguments exactly as AITER's code objects do (names, offsets,
// sizes, kernarg segment: /work/shared/aiter-facts/kernel-arguments.txt; tests/cpp/data/
// check_twin_kernargs.py compares them). Each honours AITER's launch contract with our own tile
// algorithm (jax_aiter_gemm_tile.hpp), so an ASM-tier plan runs unchanged with the twin in place of
// AITER's code object: on AMD without an AITER checkout, and on sm_90.
//
// Contract (AITER at e4048607a535, csrc/py_itfs_cu/asm_gemm_a16w16.cu; restated in our
// aiter-facts ABI-AND-RULES.md section 4.1):
//   block 256 threads; grid (ceil(N / tileN), ceil(M / tileM), split). Block (bx, by, z) owns out
//   rows [by tileM, +tileM) and columns [bx tileN, +tileN), clipped to M, N, over split z's K range
//   [z chunk, min(K, (z + 1) chunk)), chunk = ceil((K / 64) / split) * 64.
//   Strides in bytes; A, B (and bias) bf16; out bf16 if is_out_b16 else f32;
//   out = alpha acc (+ beta C when C is non-null and beta != 0, C read like D with strideC0)
//   (+ bias[n] when add_bias).
//   splitk > 1 (the splitk_clean rows only): `out` arrives uninitialised and the only workspace is
//   the semaphore, one u32 counter per output tile (16 x 64), zero on entry and left zero on exit.
//
// The split-K reduction (AITER's own scheme is not public; the twin honours the observable
// contract). Counter = semaphore[by gridDim.x + bx]: low 16 bits hand out tickets, high 16 bits
// count the splits done. A block computes its fp32 partial tile in registers, then takes a ticket
// and waits (acquire) until the high half equals it: it only ever waits for blocks that already
// hold earlier tickets, i.e. are running, so the protocol cannot deadlock whatever the grid size.
// Ticket 0 stores alpha partial (+ beta C + bias, applied exactly once); later tickets read out,
// add alpha partial in fp32 and store. Then release and add 1 << 16; the last split's block stores
// 0. With bf16 out the running sum is rounded to bf16 after every split (the tile is held nowhere
// else). A ticket >= split (the semaphore was not zero) or a wait past 2^26 polls writes NaN over
// the tile instead of hanging the GPU, so tests fail loudly.
//
// Beyond the contract: rows without split-K (and splitk <= 1) ignore the semaphore and blocks with
// z >= split return at once; the last split also covers K past split * chunk (K % 64 != 0, which
// AITER never launches); K % 8 != 0 or unaligned operands take element-wise loads. strideX1 (the
// element stride within a row, which AITER leaves 0) is ignored: rows are contiguous.
//
// Build: as gemm.kernel.cpp (nvcc -cubin -arch=sm_90 ...; clang++-22 -x hip ... with
// -fhip-kernel-arg-name for the argument names).
#include "jax_aiter/kernels/shared/aiter_bf16gemm.h"
#include "jax_aiter_gemm_tile.hpp"

namespace ja::twin {

namespace abi = jax_aiter::kernels::aiter_bf16gemm;

inline constexpr int kThreads = abi::kBlockThreads;
inline constexpr int kBK = 32;       // divides AITER's 64-element K granularity
inline constexpr int kSubMax = 128;  // bigger row tiles (256x256) are computed 128x128 at a time
inline constexpr uint32_t kMaxPolls = 1u << 26;

// The output (and C) as this launch has it.
struct Out {
  unsigned char* d;
  const unsigned char* c;  // null: no C term
  int64_t sd, sc;          // row strides in bytes
  bool b16;                // bf16, else f32
  JA_DEVICE float load_d(int r, int n) const {
    const unsigned char* p = d + r * sd;
    return b16 ? BF16::load(load_coherent(reinterpret_cast<const uint16_t*>(p) + n))
               : load_coherent(reinterpret_cast<const float*>(p) + n);
  }
  JA_DEVICE float load_c(int r, int n) const {
    const unsigned char* p = c + r * sc;
    return b16 ? BF16::load(reinterpret_cast<const uint16_t*>(p)[n])
               : reinterpret_cast<const float*>(p)[n];
  }
  JA_DEVICE void store(int r, int n, float v) const {
    unsigned char* p = d + r * sd;
    if (b16) {
      reinterpret_cast<uint16_t*>(p)[n] = BF16::store(v);
    } else {
      reinterpret_cast<float*>(p)[n] = v;
    }
  }
};

// The tile's first-write value: alpha acc (+ beta C) (+ bias).
struct Epilogue {
  float alpha, beta;
  const uint16_t* bias;  // null: none
  JA_DEVICE float first(const Out& o, int r, int n, float acc) const {
    float v = alpha * acc;
    if (o.c != nullptr && beta != 0.f) v += beta * o.load_c(r, n);
    if (bias != nullptr) v += BF16::load(bias[n]);
    return v;
  }
};

// Calls f(r, n, acc) for each of the tile's accumulators inside [0, rows) x [0, cols) (tile
// coordinates; r0, n0 added).
template <class T, class F>
JA_DEVICE void for_each_valid(const T& t, int r0, int n0, int rows, int cols, F&& f) {
  t.for_each([&](int r, int c, float v0, float v1) {
    if (r >= rows) return;
    if (c < cols) f(r0 + r, n0 + c, v0);
    if (T::kRun == 2 && c + 1 < cols) f(r0 + r, n0 + c + 1, v1);
  });
}

JA_DEVICE void fill_nan(const Out& o, int r0, int n0, int rows, int cols) {
  for (int i = thread_id(); i < rows * cols; i += kThreads) {
    o.store(r0 + i / cols, n0 + i % cols, __builtin_nanf(""));
  }
}

// Runs the tile algorithm over one compute tile with the loads the operands allow, then f(t).
template <int SM, int SN, class F>
JA_DEVICE void compute(bool aligned, uint16_t* smem, Operand a, int rows_a, Operand b, int rows_b,
                       int k_begin, int k_end, F&& f) {
  if (aligned) {
    GemmTile<BF16, SM, SN, kBK, kThreads, true> t;
    t.run(smem, a, rows_a, b, rows_b, k_begin, k_end);
    f(t);
  } else {
    GemmTile<BF16, SM, SN, kBK, kThreads, false> t;
    t.run(smem, a, rows_a, b, rows_b, k_begin, k_end);
    f(t);
  }
}

template <int TM, int TN, bool kSplitRow>
JA_DEVICE void bf16gemm(void* D, const void* C, const void* A, const void* B, float alpha,
                        float beta, uint32_t stride_d0, uint32_t stride_c0, uint32_t stride_a0,
                        uint32_t stride_b0, uint32_t m_dim, uint32_t n_dim, uint32_t k_dim,
                        uint32_t splitk, uint32_t is_out_b16, const void* bias, uint32_t add_bias,
                        uint32_t* semaphore) {
  constexpr int SM = TM < kSubMax ? TM : kSubMax, SN = TN < kSubMax ? TN : kSubMax;
  static_assert(TM % SM == 0 && TN % SN == 0);
  static_assert(!kSplitRow || (SM == TM && SN == TN), "a split tile is reduced from registers");
  using Aligned = GemmTile<BF16, SM, SN, kBK, kThreads, true>;
  using Any = GemmTile<BF16, SM, SN, kBK, kThreads, false>;
  constexpr int kSmemElems =
      Aligned::kSmemElems > Any::kSmemElems ? Aligned::kSmemElems : Any::kSmemElems;
  JA_SHARED Pack<uint16_t, 8> smem_chunks[kSmemElems / 8];
  JA_SHARED uint32_t shared_ticket;
  JA_SHARED int shared_state;
  uint16_t* smem = reinterpret_cast<uint16_t*>(smem_chunks);

  const int M = static_cast<int>(m_dim), N = static_cast<int>(n_dim), K = static_cast<int>(k_dim);
  const int bx = block_id(), by = block_id_y(), z = block_id_z();
  const int split = kSplitRow && splitk > 1 ? static_cast<int>(splitk) : 1;
  const int m0 = by * TM, n0 = bx * TN;
  if (z >= split || m0 >= M || n0 >= N) return;
  const int rows = M - m0 < TM ? M - m0 : TM, cols = N - n0 < TN ? N - n0 : TN;

  int k_begin = 0, k_end = K;
  if (split > 1) {
    const int chunk = ((K / 64 + split - 1) / split) * 64;
    const int64_t first = static_cast<int64_t>(z) * chunk;
    k_begin = first < K ? static_cast<int>(first) : K;
    k_end = z == split - 1 || K - k_begin < chunk ? K : k_begin + chunk;
  }
  const bool aligned = K % 8 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(B) % 16 == 0 && stride_a0 % 16 == 0 &&
                       stride_b0 % 16 == 0;
  const Out out{static_cast<unsigned char*>(D), static_cast<const unsigned char*>(C), stride_d0,
                stride_c0, is_out_b16 != 0};
  const Epilogue epi{alpha, beta, add_bias != 0 ? static_cast<const uint16_t*>(bias) : nullptr};
  const auto* a_rows = static_cast<const unsigned char*>(A);
  const auto* b_rows = static_cast<const unsigned char*>(B);

  if (split == 1) {
    for (int sm = 0; sm < rows; sm += SM) {
      for (int sn = 0; sn < cols; sn += SN) {
        const int r = rows - sm < SM ? rows - sm : SM, c = cols - sn < SN ? cols - sn : SN;
        compute<SM, SN>(aligned, smem, Operand{a_rows + (m0 + sm) * int64_t{stride_a0}, stride_a0},
                        r, Operand{b_rows + (n0 + sn) * int64_t{stride_b0}, stride_b0}, c, k_begin,
                        k_end, [&](const auto& t) {
                          for_each_valid(t, m0 + sm, n0 + sn, r, c, [&](int gr, int gn, float v) {
                            out.store(gr, gn, epi.first(out, gr, gn, v));
                          });
                        });
      }
    }
    return;
  }

  compute<SM, SN>(
      aligned, smem, Operand{a_rows + m0 * int64_t{stride_a0}, stride_a0}, rows,
      Operand{b_rows + n0 * int64_t{stride_b0}, stride_b0}, cols, k_begin, k_end,
      [&](const auto& t) {
        const uint32_t index = static_cast<uint32_t>(by) * block_count() + bx;
        if (semaphore == nullptr || index >= abi::kSemaphoreCounters) {
          fill_nan(out, m0, n0, rows, cols);
          return;
        }
        uint32_t* counter = semaphore + index;
        // 0: our turn; 1: waited too long; 2: the ticket shows the semaphore was not zero.
        if (thread_id() == 0) {
          const uint32_t ticket = atomic_add_device(counter, 1u) & 0xFFFFu;
          int state = ticket < static_cast<uint32_t>(split) ? 0 : 2;
          for (uint32_t polls = 0; state == 0 && (load_acquire_device(counter) >> 16) != ticket;) {
            if (++polls >= kMaxPolls) state = 1;
          }
          shared_ticket = ticket;
          shared_state = state;
        }
        barrier();
        const uint32_t ticket = shared_ticket;
        if (shared_state != 0) {
          fill_nan(out, m0, n0, rows, cols);
          return;
        }
        fence_acquire_device();  // the earlier tickets' stores, as thread 0 acquired them
        for_each_valid(t, m0, n0, rows, cols, [&](int gr, int gn, float v) {
          out.store(gr, gn,
                    ticket == 0 ? epi.first(out, gr, gn, v) : out.load_d(gr, gn) + alpha * v);
        });
        fence_release_device();  // this thread's stores, before thread 0 hands over
        barrier();
        if (thread_id() == 0) {
          fence_release_device();
          const uint32_t done = (atomic_add_device(counter, 1u << 16) >> 16) + 1;
          if (done == static_cast<uint32_t>(split)) store_device(counter, 0u);  // all splits done
        }
      });
}

}  // namespace ja::twin

// AITER's symbols are mangled C++ names declared here as extern "C" identifiers, which the
// language reserves (leading underscore and capital).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wreserved-identifier"
#endif

// One argument per 16-byte slot, as AITER's metadata declares them: the value first, then
// padding parameters named pad<n> (which our metadata check skips).
#define JA_PTR_SLOT(type, name, n) type name, [[maybe_unused]] uint64_t pad##n
#define JA_U32_SLOT(type, name, a, b, c)                                         \
  type name, [[maybe_unused]] uint32_t pad##a, [[maybe_unused]] uint32_t pad##b, \
      [[maybe_unused]] uint32_t pad##c
// The 336 bytes every row declares (the pf3 rows end here).
#define JA_BF16GEMM_PARAMS                                                                  \
  JA_PTR_SLOT(void*, D, 0), JA_PTR_SLOT(const void*, C, 1), JA_PTR_SLOT(const void*, A, 2), \
      JA_PTR_SLOT(const void*, B, 3), JA_U32_SLOT(float, alpha, 4, 5, 6),                   \
      JA_U32_SLOT(float, beta, 7, 8, 9), JA_U32_SLOT(uint32_t, strideD0, 10, 11, 12),       \
      JA_U32_SLOT([[maybe_unused]] uint32_t, strideD1, 13, 14, 15),                         \
      JA_U32_SLOT(uint32_t, strideC0, 16, 17, 18),                                          \
      JA_U32_SLOT([[maybe_unused]] uint32_t, strideC1, 19, 20, 21),                         \
      JA_U32_SLOT(uint32_t, strideA0, 22, 23, 24),                                          \
      JA_U32_SLOT([[maybe_unused]] uint32_t, strideA1, 25, 26, 27),                         \
      JA_U32_SLOT(uint32_t, strideB0, 28, 29, 30),                                          \
      JA_U32_SLOT([[maybe_unused]] uint32_t, strideB1, 31, 32, 33),                         \
      JA_U32_SLOT(uint32_t, Mdim, 34, 35, 36), JA_U32_SLOT(uint32_t, Ndim, 37, 38, 39),     \
      JA_U32_SLOT(uint32_t, Kdim, 40, 41, 42), JA_U32_SLOT(uint32_t, splitk, 43, 44, 45),   \
      JA_U32_SLOT(uint32_t, is_out_b16, 46, 47, 48), JA_PTR_SLOT(const void*, Bias, 49),    \
      JA_U32_SLOT(uint32_t, add_bias, 50, 51, 52)

#define JA_BF16GEMM_CALL(tm, tn, split, semaphore)                                         \
  ja::wait_for_prior_grids();                                                              \
  ja::allow_dependent_grids();                                                             \
  ja::twin::bf16gemm<tm, tn, split>(D, C, A, B, alpha, beta, strideD0, strideC0, strideA0, \
                                    strideB0, Mdim, Ndim, Kdim, splitk, is_out_b16, Bias,  \
                                    add_bias, semaphore)

// Rows with a prefetch depth (the _pf3_ ones) declare 336 bytes and no semaphore; all others
// declare ptr_semaphore at 336 and 352 bytes.
#define JA_BF16GEMM_TWIN_PF0(symbol, tm, tn, sk)                               \
  JA_KERNEL_BOUNDED(256)                                                       \
  void symbol(JA_BF16GEMM_PARAMS, JA_PTR_SLOT(uint32_t*, ptr_semaphore, 53)) { \
    JA_BF16GEMM_CALL(tm, tn, sk != 0, ptr_semaphore);                          \
  }
#define JA_BF16GEMM_TWIN_PF(symbol, tm, tn, sk) \
  JA_KERNEL_BOUNDED(256)                        \
  void symbol(JA_BF16GEMM_PARAMS) { JA_BF16GEMM_CALL(tm, tn, false, nullptr); }
#define JA_BF16GEMM_TWIN_SELECT(pf) JA_BF16GEMM_TWIN_SELECT_##pf
#define JA_BF16GEMM_TWIN_SELECT_0 JA_BF16GEMM_TWIN_PF0
#define JA_BF16GEMM_TWIN_SELECT_3 JA_BF16GEMM_TWIN_PF
#define JA_BF16GEMM_TWIN(symbol, co, tm, tn, pf, sk, bias, g942, g950) \
  JA_BF16GEMM_TWIN_SELECT(pf)(symbol, tm, tn, sk)

static_assert(jax_aiter::kernels::aiter_bf16gemm::kBlockThreads == 256);
JAX_AITER_BF16GEMM_ROWS(JA_BF16GEMM_TWIN)
