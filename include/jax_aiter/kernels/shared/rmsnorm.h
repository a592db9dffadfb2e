// Facts of our RMSNorm kernels that the kernel source (kernels_co/rmsnorm.kernel.cpp) and the host
// (kernels/rmsnorm.hpp, ops/rmsnorm.hpp) both read, so the two cannot drift. Plain C++ with no
// includes: nvcc and clang-22 (-nogpuinc) compile it into the kernels as well.
#pragma once

namespace jax_aiter::kernels::rmsnorm {

inline constexpr int kChunksFwd = 2;         // vectors a thread keeps in registers per row
inline constexpr int kChunksBwd = 2;         // (backward: its dgamma terms per vector)
inline constexpr int kMaxThreadsFwd = 1024;  // block-size cap of the forward kernels
inline constexpr int kMaxThreadsBwd = 512;   // and of the backward kernels (all kinds)
// The streamed backward is compiled for two resident blocks a multiprocessor (caps its registers).
inline constexpr int kStreamedResidentBlocks = 2;
// The split backward shares a row among the blocks of a thread-block cluster (CUDA): blocks of
// kSplitThreads threads, up to kMaxSplit of them.
inline constexpr int kSplitThreads = 512;
inline constexpr int kMaxSplit = 8;
inline constexpr int kDgammaBlock = 1024;  // threads per block of the dgamma reduction
inline constexpr int kDgammaColumns = 32;  // columns per block of the dgamma reduction
// The backward workspace: a header (the slot count the backward used, read by the reduction),
// then [slots, n] float32 partials; 256 bytes keep the partials as aligned as the workspace.
inline constexpr int kWorkspaceHeaderBytes = 256;
// The fused forward stages its rows in shared memory when the launch gives it the bytes (CUDA,
// 16-byte vectors, rows in registers): at most what a launch may use without raising the
// kernel's attribute.
inline constexpr long long kMaxStagedBytes = 48LL << 10;

// Which backward kernel a row takes: its row in one block's registers, split over the blocks of a
// thread-block cluster, or streamed through L2.
enum class BwdRows : unsigned char { kInRegisters, kSplit, kStreamed };

}  // namespace jax_aiter::kernels::rmsnorm

// The kernels built, one X(tag, Elem, VEC) per dtype and vector width (16-byte accesses at most);
// each gives a forward, a fused forward and three backward kernels (in registers, split, streamed).
// clang-format off
#define JAX_AITER_RMSNORM_VARIANTS(X) \
  X(bf16, BF16, 1) X(bf16, BF16, 2) X(bf16, BF16, 4) X(bf16, BF16, 8) \
  X(f16, F16, 1) X(f16, F16, 2) X(f16, F16, 4) X(f16, F16, 8) \
  X(f32, F32, 1) X(f32, F32, 2) X(f32, F32, 4)
// clang-format on
// One dgamma reduction per dtype, X(tag, Elem).
#define JAX_AITER_RMSNORM_DTYPES(X) X(bf16, BF16) X(f16, F16) X(f32, F32)
