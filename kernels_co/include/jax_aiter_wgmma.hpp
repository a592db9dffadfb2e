// The sm_90a instructions of the wgmma GEMM engine (jax_aiter_gemm_wgmma.hpp): the shared-memory
// matrix descriptor, wgmma m64n256k16 with float accumulators, m64n256k32 s8 with s32 ones,
// m64n128k32 e4m3 with float ones, the mbarrier operations of its stage ring, the proxy fence and
// the register hand-over between warpgroups. CUDA only, built for sm_90a
// (cmake/JaxAiterKernels.cmake: -gencode arch=compute_90a,code=sm_90a; wgmma and setmaxnreg exist
// on no other target). Facts restated from NVIDIA's PTX ISA 8.x/9.0: "Asynchronous Warpgroup Level
// Matrix Multiply-Accumulate" (wgmma, its descriptor and register fragments), "mbarrier",
// "cp.async.mbarrier.arrive", "setmaxnreg", "membar/fence" (fence.proxy.async).
#pragma once

#if defined(__CUDACC__)

#include "jax_aiter_device.hpp"

namespace ja::sm90 {

// Descriptor of a K-major operand tile in the 128-byte swizzle: rows of 128 bytes (64 16-bit
// elements), 8-row atoms of 1024 bytes back to back, 16-byte chunk c of row r stored at chunk
// c ^ (r % 8) of the row: TileLayout<64> of jax_aiter_mma.hpp, which the producers write. The
// swizzle acts on address bits, so every atom must be 1024-byte aligned. Fields (PTX ISA "Matrix
// Descriptor Format"): start address >> 4 in bits [0, 14), leading-dimension byte offset >> 4 in
// [16, 30) (unused when K-major rows are swizzled; 1 as is customary), stride byte offset >> 4 in
// [32, 46) (one 8-row atom to the next: 1024), layout in [62, 64) (1: 128-byte swizzle).
JA_DEVICE uint64_t sw128_desc(uint32_t smem_addr) {
  return uint64_t{(smem_addr & 0x3FFFFu) >> 4} | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}
// One k-step of 16 elements inside the 128-byte rows: 32 bytes on the start address (the hardware
// swizzles the address it forms, so stepping inside an atom is a plain add).
inline constexpr uint64_t kSw128KStep = 32 >> 4;

// The PTX type of a 16-bit operand family in wgmma.
template <typename E>
struct WgmmaInput;
template <>
struct WgmmaInput<BF16> {
  static constexpr bool kBf16 = true;
};
template <>
struct WgmmaInput<F16> {
  static constexpr bool kBf16 = false;
};

// d[64 x 256] += a[64 x K] . b[256 x K]^T for one warpgroup, both operands K-major in shared
// memory (descriptors), accumulators in registers (float for 16-bit inputs, exact s32 for 8-bit
// integers): d[i] of thread t (warp w = t / 32 of the warpgroup, lane l) holds row 16 w + l / 4 +
// 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2 (the same for both accumulator types).
// The 128 accumulators are named one by one: an asm operand list takes no pack expansion.
#define JA_WGMMA_N256(INSTR, TAIL)                                                   \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" INSTR                                \
  "\n{"                                                                              \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, " \
  "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, " \
  "%34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, " \
  "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, " \
  "%66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, " \
  "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, " \
  "%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "     \
  "%111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, "   \
  "%124, %125, %126, %127 "                                                          \
  "},\n%128, %129, p" TAIL ";\n}\n"
#define JA_WGMMA_D128(C)                                                                        \
  C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]), C(d[9]),     \
      C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]), \
      C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), \
      C(d[28]), C(d[29]), C(d[30]), C(d[31]), C(d[32]), C(d[33]), C(d[34]), C(d[35]), C(d[36]), \
      C(d[37]), C(d[38]), C(d[39]), C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), C(d[45]), \
      C(d[46]), C(d[47]), C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), \
      C(d[55]), C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63]), \
      C(d[64]), C(d[65]), C(d[66]), C(d[67]), C(d[68]), C(d[69]), C(d[70]), C(d[71]), C(d[72]), \
      C(d[73]), C(d[74]), C(d[75]), C(d[76]), C(d[77]), C(d[78]), C(d[79]), C(d[80]), C(d[81]), \
      C(d[82]), C(d[83]), C(d[84]), C(d[85]), C(d[86]), C(d[87]), C(d[88]), C(d[89]), C(d[90]), \
      C(d[91]), C(d[92]), C(d[93]), C(d[94]), C(d[95]), C(d[96]), C(d[97]), C(d[98]), C(d[99]), \
      C(d[100]), C(d[101]), C(d[102]), C(d[103]), C(d[104]), C(d[105]), C(d[106]), C(d[107]),   \
      C(d[108]), C(d[109]), C(d[110]), C(d[111]), C(d[112]), C(d[113]), C(d[114]), C(d[115]),   \
      C(d[116]), C(d[117]), C(d[118]), C(d[119]), C(d[120]), C(d[121]), C(d[122]), C(d[123]),   \
      C(d[124]), C(d[125]), C(d[126]), C(d[127])
#define JA_WGMMA_D64(C)                                                                         \
  C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]), C(d[9]),     \
      C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]), \
      C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), \
      C(d[28]), C(d[29]), C(d[30]), C(d[31]), C(d[32]), C(d[33]), C(d[34]), C(d[35]), C(d[36]), \
      C(d[37]), C(d[38]), C(d[39]), C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), C(d[45]), \
      C(d[46]), C(d[47]), C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), \
      C(d[55]), C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63])
#define JA_PLUS_F(x) "+f"(x)
#define JA_PLUS_R(x) "+r"(x)
template <typename E>
JA_DEVICE void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  // scale-a, scale-b 1 (no negation), both operands K-major (no transpose).
  if constexpr (WgmmaInput<E>::kBf16) {
    asm volatile(
        JA_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", ", 1, 1, 0, 0")
        : JA_WGMMA_D128(JA_PLUS_F)
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    asm volatile(
        JA_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", ", 1, 1, 0, 0")
        : JA_WGMMA_D128(JA_PLUS_F)
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}
// The integer form: s8 x s8 with exact s32 accumulation, 32 bytes of K a step (the 128-byte
// swizzled row holds 4 of them, as it holds 4 16-element steps of a 16-bit type). Integer wgmma
// takes no operand scale or transpose (8-bit operands are K-major only).
JA_DEVICE void wgmma_m64n256k32_s8(int (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(JA_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8", "")
               : JA_WGMMA_D128(JA_PLUS_R)
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
// The fp8 form on 64 x 128: e4m3 x e4m3 with f32 accumulators (layout as m64n256k16's, 64 a
// thread), 32 bytes of K a step as the s8 form; scale-a, scale-b 1 and no transpose operand
// (8-bit operands are K-major only). scale_d 0: d = a . b (a fresh partial sum).
JA_DEVICE void wgmma_m64n128k32_e4m3(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                     int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3\n{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63 "
      "},\n%64, %65, p, 1, 1;\n}\n"
      : JA_WGMMA_D64(JA_PLUS_F)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
#undef JA_PLUS_R
#undef JA_PLUS_F
#undef JA_WGMMA_D128
#undef JA_WGMMA_N256
#undef JA_WGMMA_D64

// A V-like operand for B: stored [k][n] (N contiguous, "MN-major"), in the same 128-byte swizzled
// rows the producers write for K-major tiles (row = one k, 64 n a row, 8-row atoms of 1024 bytes).
// With the transpose flag wgmma reads it as B[n][k]. Fields as sw128_desc, with MN-major meanings
// (PTX ISA "Shared Memory Matrix Layout", canonical MN-major 128B layout): leading byte offset =
// from one 64-column block of n to the next (mn_block_bytes), stride byte offset = from one 8-row
// group of k to the next (1024).
JA_DEVICE uint64_t sw128_mn_desc(uint32_t smem_addr, uint32_t mn_block_bytes) {
  return uint64_t{(smem_addr & 0x3FFFFu) >> 4} | (uint64_t{(mn_block_bytes >> 4) & 0x3FFFu} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}
// One k-step of 16 rows of an MN-major operand: two 8-row atoms.
inline constexpr uint64_t kSw128MnKStep = 2048 >> 4;

// d[64 x 128] (+)= a[64 x 16] . b[128 x 16]^T, a and b K-major in shared memory (the attention
// forward's S = Q K^T); accumulator layout as m64n256k16's, 64 a thread.
#define JA_WGMMA_M64N128K16_SS(TYPE)                                                           \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE                                 \
  "\n{"                                                                                        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, " \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
  "%56, %57, %58, %59, %60, %61, %62, %63 "                                                    \
  "},\n%64, %65, p, 1, 1, 0, 0;\n}\n"
// d[64 x 128] += a[64 x 16] . b, a from registers (four 32-bit registers a thread: the
// accumulator layout of a 64 x 16 block, packed in pairs), b MN-major in shared memory (the
// transpose flag): the attention forward's O += P V with P never leaving registers.
#define JA_WGMMA_M64N128K16_RS_TB(TYPE)                                                        \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE                                 \
  "\n{"                                                                                        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, " \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
  "%56, %57, %58, %59, %60, %61, %62, %63 "                                                    \
  "},\n{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
template <typename E>
JA_DEVICE void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  if constexpr (WgmmaInput<E>::kBf16) {
    asm volatile(JA_WGMMA_M64N128K16_SS("bf16")
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    asm volatile(JA_WGMMA_M64N128K16_SS("f16")
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}
template <typename E>
JA_DEVICE void wgmma_m64n128k16_rs_tb(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b) {
  if constexpr (WgmmaInput<E>::kBf16) {
    asm volatile(JA_WGMMA_M64N128K16_RS_TB("bf16")
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(1));
  } else {
    asm volatile(JA_WGMMA_M64N128K16_RS_TB("f16")
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(1));
  }
}
#undef JA_WGMMA_M64N128K16_SS
#undef JA_WGMMA_M64N128K16_RS_TB

// d[64 x 64] (+)= a[64 x 16] . b[64 x 16]^T, both K-major in shared memory (the attention
// backward's S^T = K Q^T and dP^T = V dO^T over 64 query rows); accumulator layout as
// m64n256k16's, 32 a thread.
#define JA_WGMMA_M64N64K16_SS(TYPE)                                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE                                  \
  "\n{"                                                                                        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31 "                                \
  "},\n%32, %33, p, 1, 1, 0, 0;\n}\n"
template <typename E>
JA_DEVICE void wgmma_m64n64k16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  if constexpr (WgmmaInput<E>::kBf16) {
    asm volatile(JA_WGMMA_M64N64K16_SS("bf16")
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    asm volatile(JA_WGMMA_M64N64K16_SS("f16")
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}
#undef JA_WGMMA_M64N64K16_SS

// Ordering of a warpgroup's wgmma: fence before the first wgmma that reads accumulators other
// instructions touched, commit the issued ones as a group, wait until at most N groups are pending.
JA_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
JA_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
JA_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Pins accumulators in place around the asynchronous wgmma: the compiler may not move their reads
// or writes across this point (it cannot see that a wgmma still owns them).
template <int N>
JA_DEVICE void hold_registers(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
JA_DEVICE void hold_registers(int (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// The same for registers a wgmma reads (its A operand from registers): they must stay unchanged
// until the wait that covers it, so their live range reaches past that wait.
template <int N>
JA_DEVICE void hold_registers(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// Shared memory written through the generic proxy (cp.async, ordinary stores) and read next by
// the async proxy (wgmma's operands): the reader's fence after it has acquired the data.
JA_DEVICE void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Named barriers between warpgroups (ids 1-15; 0 is the block's barrier): sync waits until
// `threads` threads have arrived or synced on id, arrive counts this warp without waiting.
JA_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
JA_DEVICE void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// mbarriers of the stage ring (8 bytes of shared memory each).
JA_DEVICE void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(count)
               : "memory");
}
JA_DEVICE void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}
// Arrives on bar once every cp.async this thread issued before has landed; .noinc: the arrival is
// one of the count the barrier was initialised with.
JA_DEVICE void mbarrier_arrive_on_copies(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(shared_address(bar))
               : "memory");
}
JA_DEVICE void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  wait_phase(reinterpret_cast<unsigned long long*>(bar), parity);
}

// Hands registers between the warpgroups of a block launched with a register cap (launch bounds
// with a minimum of one block): every thread of a warpgroup executes the same one.
template <int N>
JA_DEVICE void registers_release() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
JA_DEVICE void registers_claim() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

}  // namespace ja::sm90

#endif  // __CUDACC__
