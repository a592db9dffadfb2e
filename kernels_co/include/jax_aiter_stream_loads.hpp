// The guarded 16-byte global loads of the weight-streaming kernels (the bf16 stream tiles of
// jax_aiter_gemm_stream.hpp and the quantized decode engine of jax_aiter_gemm_stream_q.hpp).
#pragma once

#include "jax_aiter_mma.hpp"  // JA_DEVICE, the device layer

namespace ja {

#if defined(__CUDACC__)

// One 16-byte global load into four words, or zeros when `ok` is false (no access then).
// B: read once, not kept in L1; L2 fetches the whole 256-byte line.
JA_DEVICE void load_stream_16(uint32_t (&w)[4], const unsigned char* p, bool ok) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n"
      " mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @p ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
      : "l"(p), "r"(static_cast<int>(ok)));
}
// A: small and read by every block (L1 and L2 hits).
JA_DEVICE void load_reused_16(uint32_t (&w)[4], const unsigned char* p, bool ok) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n"
      " mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
      " @p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
      : "l"(p), "r"(static_cast<int>(ok)));
}

#endif  // __CUDACC__

}  // namespace ja
