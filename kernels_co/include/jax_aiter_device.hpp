// The few device primitives our portable kernels use, mapped onto CUDA (nvcc) or onto clang's
// AMDGPU builtins (clang-22 in HIP mode with -nogpuinc: no ROCm headers or device libraries).
// One kernel source, three targets: gfx942, gfx950, sm_90.
#pragma once

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define JA_KERNEL_BOUNDED(max_threads) extern "C" __global__ __launch_bounds__(max_threads)
// And with at least min_blocks such blocks resident on a multiprocessor (caps the registers).
#define JA_KERNEL_BOUNDED_RESIDENT(max_threads, min_blocks) \
  extern "C" __global__ __launch_bounds__(max_threads, min_blocks)
#define JA_DEVICE __device__ __forceinline__
#define JA_SHARED __shared__

namespace ja {
inline constexpr int kWarp = 32;
JA_DEVICE int thread_id() { return static_cast<int>(threadIdx.x); }
JA_DEVICE int block_id() { return static_cast<int>(blockIdx.x); }
JA_DEVICE int block_count() { return static_cast<int>(gridDim.x); }
JA_DEVICE void barrier() { __syncthreads(); }
JA_DEVICE float shuffle_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
JA_DEVICE float rsqrt(float x) { return rsqrtf(x); }
JA_DEVICE float bits_to_float(uint32_t u) { return __uint_as_float(u); }
JA_DEVICE uint32_t float_to_bits(float f) { return __float_as_uint(f); }
JA_DEVICE float half_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
JA_DEVICE uint16_t float_to_half(float f) { return __half_as_ushort(__float2half_rn(f)); }
// Data touched once (read or written a single time per kernel): cache-streaming accesses
// (ld.global.cs / st.global.cs, "evict first"), so a stream bigger than L2 does not push out what
// is reused (gamma, the dgamma partials). Where they help is measured per kernel, not assumed.
// The word __ldcs / __stcs move for a pack of that many bytes.
template <int kBytes>
struct PackWord;
template <>
struct PackWord<16> {
  using type = uint4;
};
template <>
struct PackWord<8> {
  using type = uint2;
};
template <>
struct PackWord<4> {
  using type = unsigned;
};
template <>
struct PackWord<2> {
  using type = unsigned short;
};
template <typename P>
JA_DEVICE P load_once(const P* p) {
  using W = typename PackWord<sizeof(P)>::type;
  P out;
  *reinterpret_cast<W*>(&out) = __ldcs(reinterpret_cast<const W*>(p));
  return out;
}
template <typename P>
JA_DEVICE void store_once(P* p, const P& v) {
  using W = typename PackWord<sizeof(P)>::type;
  __stcs(reinterpret_cast<W*>(p), *reinterpret_cast<const W*>(&v));
}
// Programmatic dependent launch (sm_90): the CUDA backend launches every kernel with programmatic
// stream serialisation, so its blocks may be scheduled while the stream's previous kernel is still
// finishing. A kernel therefore waits for the previous grids to complete and flush before it
// touches memory (their outputs may be its inputs; tests/cpp/test_kernel_loads.cpp checks the
// order in the PTX), then lets the next kernel be scheduled once all its own blocks run.
JA_DEVICE void wait_for_prior_grids() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
JA_DEVICE void allow_dependent_grids() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
// sm_90 converts to bf16 in one instruction (round to nearest even, NaN kept).
#define JA_HAVE_NATIVE_BF16 1
JA_DEVICE uint16_t float_to_bf16(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }

// Staging a block's contiguous input in shared memory with the bulk-copy engine (cp.async.bulk,
// sm_90): one thread issues one copy for the whole block, which completes on an mbarrier; the data
// never passes through registers on the way. Where the kernels use it is measured per kernel.
inline constexpr bool kStageInShared = true;
// The block's dynamic shared memory (the launch's shared_bytes), aligned for 16-byte vectors.
JA_DEVICE unsigned char* dynamic_shared() {
  extern __shared__ __align__(128) unsigned char ja_dynamic_shared[];
  return ja_dynamic_shared;
}
// How much dynamic shared memory the launch gave the block: a kernel stages only into memory it
// was given, so a plan that gives none gets direct loads, never writes past the allocation.
JA_DEVICE uint32_t dynamic_shared_bytes() {
  uint32_t bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes;
}
// The completion barrier of one staging (an mbarrier: 8 bytes of shared memory).
struct Staging {
  unsigned long long barrier;
};
JA_DEVICE uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Called by every thread of the block, with the same arguments: starts copying bytes[k] from
// src[k] to dst[k] (16-byte aligned addresses, sizes multiples of 16). The barrier inside orders
// the mbarrier's initialisation before any thread waits on it.
template <int kCopies>
JA_DEVICE void stage_in_shared(Staging& s, void* const (&dst)[kCopies],
                               const void* const (&src)[kCopies],
                               const uint32_t (&bytes)[kCopies]) {
  if (thread_id() == 0) {
    const uint32_t bar = shared_address(&s.barrier);
    uint32_t total = 0;
    for (int k = 0; k < kCopies; ++k) total += bytes[k];
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(total)
                 : "memory");
    for (int k = 0; k < kCopies; ++k) {
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];" ::"r"(shared_address(dst[k])),
          "l"(src[k]), "r"(bytes[k]), "r"(bar)
          : "memory");
    }
  }
  __syncthreads();
}
// Waits until the mbarrier's phase of this parity has completed.
JA_DEVICE void wait_phase(unsigned long long* barrier, uint32_t parity) {
  const uint32_t bar = shared_address(barrier);
  uint32_t done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// Every thread waits until the staged bytes have landed.
JA_DEVICE void wait_staged(Staging& s) { wait_phase(&s.barrier, 0); }

// Thread-block clusters (sm_90): the blocks of one cluster run at once on one GPU processing
// cluster and can read each other's shared memory. A launch without clusters is a cluster of one.
inline constexpr bool kHasClusters = true;
JA_DEVICE int cluster_size() {
  uint32_t n;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return static_cast<int>(n);
}
JA_DEVICE int cluster_rank() {
  uint32_t r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return static_cast<int>(r);
}
// Every thread of every block of the cluster: shared-memory writes before it are visible to the
// cluster's reads after it.
JA_DEVICE void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}
// Sending a few floats to other blocks of the cluster with no cluster-wide barrier: the sender
// writes them into the receiver's shared memory with st.async, which counts the bytes on the
// receiver's mbarrier; the receiver waits on that barrier alone. On H100 the split backward took
// 0.214 ms at [4096, 16384] bf16 with a cluster barrier a row and 0.162 ms with this: the barrier's
// release seems to wait for the thread's loads in flight (the next row's, prefetched).
struct Inbox {
  unsigned long long barrier;  // one mbarrier, one phase per message
};
// One thread of the block, before any block of the cluster sends (then a cluster_barrier).
JA_DEVICE void init_inbox(Inbox& box) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&box.barrier)));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// One thread of the receiver, once per message: the phase completes when `bytes` have arrived.
JA_DEVICE void expect_in_inbox(Inbox& box, uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(&box.barrier)),
      "r"(bytes)
      : "memory");
}
// Writes two floats to dst (8-byte aligned) in block `rank` and counts them on its inbox.
JA_DEVICE void send_to_block(float* dst, float a, float b, Inbox& box, int rank) {
  uint32_t remote_dst, remote_bar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote_dst)
               : "r"(shared_address(dst)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote_bar)
               : "r"(shared_address(&box.barrier)), "r"(rank));
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(
          remote_dst),
      "f"(a), "f"(b), "r"(remote_bar)
      : "memory");
}
// Every thread of the receiver: waits for the message of this parity (phases alternate 0, 1, ...).
JA_DEVICE void wait_inbox(Inbox& box, uint32_t parity) { wait_phase(&box.barrier, parity); }
}  // namespace ja

#elif defined(__HIP__)

typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long uintptr_t;

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define JA_KERNEL_BOUNDED(max_threads) \
  extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(1, max_threads)))
// The residency hint is CUDA's (its register cap was measured on H100); on AMD the kernel gets the
// block cap alone.
#define JA_KERNEL_BOUNDED_RESIDENT(max_threads, min_blocks) JA_KERNEL_BOUNDED(max_threads)
#define JA_DEVICE __device__ inline __attribute__((always_inline))
#define JA_SHARED __shared__

namespace ja {
inline constexpr int kWarp = 64;  // CDNA3/CDNA4 run wave64
JA_DEVICE int thread_id() { return static_cast<int>(__builtin_amdgcn_workitem_id_x()); }
JA_DEVICE int block_id() { return static_cast<int>(__builtin_amdgcn_workgroup_id_x()); }
JA_DEVICE int block_count() {
  // From the HSA dispatch packet: grid_size_x (work-items, u32 at byte 12) over
  // workgroup_size_x (u16 at byte 4), as HIP's gridDim.x computes it.
  const auto* packet = static_cast<const unsigned char*>(__builtin_amdgcn_dispatch_ptr());
  const uint32_t grid = *reinterpret_cast<const uint32_t*>(packet + 12);
  const uint32_t group = *reinterpret_cast<const uint16_t*>(packet + 4);
  return static_cast<int>(grid / group);
}
JA_DEVICE void barrier() {
  // What HIP's __syncthreads does: make LDS writes visible across the workgroup.
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
JA_DEVICE int lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
JA_DEVICE float shuffle_xor(float v, int mask) {
  const int src = (lane_id() ^ mask) << 2;  // ds_bpermute addresses lanes in bytes
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(src, __builtin_bit_cast(int, v)));
}
JA_DEVICE float rsqrt(float x) { return __builtin_amdgcn_rsqf(x); }
JA_DEVICE float bits_to_float(uint32_t u) { return __builtin_bit_cast(float, u); }
JA_DEVICE uint32_t float_to_bits(float f) { return __builtin_bit_cast(uint32_t, f); }
JA_DEVICE float half_to_float(uint16_t h) {
  return static_cast<float>(__builtin_bit_cast(_Float16, h));
}
JA_DEVICE uint16_t float_to_half(float f) {
  return __builtin_bit_cast(uint16_t, static_cast<_Float16>(f));
}
// Plain accesses: gfx9's nontemporal hint is the analogue of CUDA's cache-streaming one, but with
// no AMD GPU to measure it on we do not guess.
template <typename P>
JA_DEVICE P load_once(const P* p) {
  return *p;
}
template <typename P>
JA_DEVICE void store_once(P* p, const P& v) {
  *p = v;
}
// AMD queues order kernels of a stream by themselves: nothing to wait for or allow.
JA_DEVICE void wait_for_prior_grids() {}
JA_DEVICE void allow_dependent_grids() {}
// No staging in shared memory on AMD: gfx942 has no bulk-copy engine, and with no AMD GPU to
// measure an LDS round trip against direct loads, the kernels load straight into registers there.
// The primitives are only declared: the kernels name them in `if constexpr (kStageInShared)`
// branches, which AMD never compiles.
inline constexpr bool kStageInShared = false;
struct Staging {};
JA_DEVICE unsigned char* dynamic_shared();
JA_DEVICE uint32_t dynamic_shared_bytes();
template <int kCopies>
JA_DEVICE void stage_in_shared(Staging& s, void* const (&dst)[kCopies],
                               const void* const (&src)[kCopies], const uint32_t (&bytes)[kCopies]);
JA_DEVICE void wait_staged(Staging& s);
// No thread-block clusters on AMD: every launch is a cluster of one block; the cluster primitives
// are only declared, for `if constexpr (kHasClusters)` branches AMD never compiles.
inline constexpr bool kHasClusters = false;
JA_DEVICE constexpr int cluster_size() { return 1; }
JA_DEVICE constexpr int cluster_rank() { return 0; }
JA_DEVICE void cluster_barrier();
struct Inbox {};
JA_DEVICE void init_inbox(Inbox& box);
JA_DEVICE void expect_in_inbox(Inbox& box, uint32_t bytes);
JA_DEVICE void send_to_block(float* dst, float a, float b, Inbox& box, int rank);
JA_DEVICE void wait_inbox(Inbox& box, uint32_t parity);
}  // namespace ja

#else
#error "jax_aiter_device.hpp is for nvcc or clang in HIP mode"
#endif

namespace ja {

// Element types by storage; arithmetic is always in float.
struct BF16 {
  using Storage = uint16_t;
  static JA_DEVICE float load(Storage s) { return bits_to_float(static_cast<uint32_t>(s) << 16); }
  static JA_DEVICE Storage store(float f) {
#if defined(JA_HAVE_NATIVE_BF16)
    return float_to_bf16(f);
#endif
    const uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<Storage>((u >> 16) | 0x40u);  // NaN
    return static_cast<Storage>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // nearest, ties even
  }
};
struct F16 {
  using Storage = uint16_t;
  static JA_DEVICE float load(Storage s) { return half_to_float(s); }
  static JA_DEVICE Storage store(float f) { return float_to_half(f); }
};
struct F32 {
  using Storage = float;
  static JA_DEVICE float load(Storage s) { return s; }
  static JA_DEVICE Storage store(float f) { return f; }
};

// N elements moved as one aligned access (16 bytes at most).
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

}  // namespace ja

// ---------------------------------------------------------------------------------------------
// Added for the GEMM kernels (kernels_co/gemm.kernel.cpp, kernels_co/aiter_bf16gemm.twin.cpp):
// 2-D/3-D grids, asynchronous global-to-shared copies, and the device-scope atomics and fences of
// the split-K semaphore. Nothing above depends on this section.
// ---------------------------------------------------------------------------------------------
#if defined(__CUDACC__)

namespace ja {
JA_DEVICE int block_id_y() { return static_cast<int>(blockIdx.y); }
JA_DEVICE int block_id_z() { return static_cast<int>(blockIdx.z); }

// cp.async (sm_80+): 16 bytes from global to shared without passing through registers, cached in
// L2 only (.cg: tiles are read once per block). `valid` false copies nothing and zero-fills the 16
// bytes (src-size 0), which is how tile edges get their zeros.
inline constexpr bool kHasAsyncCopy = true;
JA_DEVICE void cp_async_16(uint32_t smem_addr, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
JA_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
JA_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Device-scope atomics and fences (the split-K semaphore).
JA_DEVICE uint32_t atomic_add_device(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
JA_DEVICE uint32_t load_acquire_device(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
JA_DEVICE void store_device(uint32_t* p, uint32_t v) { atomicExch(p, v); }
JA_DEVICE void fence_release_device() { __threadfence(); }
JA_DEVICE void fence_acquire_device() { __threadfence(); }
// A load that another block may have just written (after an acquire): served by L2, never by a
// possibly stale L1 line.
template <typename T>
JA_DEVICE T load_coherent(const T* p) {
  return __ldcg(p);
}
}  // namespace ja

#elif defined(__HIP__)

typedef unsigned long long uint64_t;

namespace ja {
JA_DEVICE int block_id_y() { return static_cast<int>(__builtin_amdgcn_workgroup_id_y()); }
JA_DEVICE int block_id_z() { return static_cast<int>(__builtin_amdgcn_workgroup_id_z()); }

// gfx942 has no 16-byte global-to-LDS copy: the GEMM tiles go through registers there. Declared
// only, for `if constexpr (kHasAsyncCopy)` branches AMD never compiles.
inline constexpr bool kHasAsyncCopy = false;
JA_DEVICE uint32_t shared_address(const void* p);
JA_DEVICE void cp_async_16(uint32_t smem_addr, const void* src, bool valid);
JA_DEVICE void cp_async_commit();
template <int kPending>
JA_DEVICE void cp_async_wait();

// Agent (device) scope: the HSA memory model's scope for all work-groups of one GPU.
JA_DEVICE uint32_t atomic_add_device(uint32_t* p, uint32_t v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
JA_DEVICE uint32_t load_acquire_device(const uint32_t* p) {
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}
JA_DEVICE void store_device(uint32_t* p, uint32_t v) {
  __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
JA_DEVICE void fence_release_device() { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent"); }
// At agent scope the acquire invalidates the compute unit's vector L1, so plain loads after it
// see what other compute units released.
JA_DEVICE void fence_acquire_device() { __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent"); }
template <typename T>
JA_DEVICE T load_coherent(const T* p) {
  return *p;
}
}  // namespace ja

#endif
