// The GPU check programs' kernels by their KernelInfo (kernels/kernel.hpp): resolved in a loaded
// cubin and launched with the packed-argument buffer, as the CUDA backend does; PASS / FAIL
// tallies; 16-bit outputs read back as numbers.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "jax_aiter/kernels/kernel.hpp"

#include "cuda_check.hpp"

inline int g_pass = 0, g_fail = 0;

inline void verdict(bool ok, const std::string& what) {
  (ok ? g_pass : g_fail)++;
  if (!ok || std::getenv("VERBOSE")) std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
}

// A bf16 (f16 false) or f16 bit pattern's value.
inline double half_bits_to_double(uint16_t h, bool f16) {
  if (!f16) {
    const uint32_t u = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = (h >> 15) ? -1.0 : 1.0;
  if (e == 31) return m ? NAN : s * INFINITY;
  return e == 0 ? s * std::ldexp(m, -24) : s * std::ldexp(1024 + m, e - 25);
}

inline unsigned cdiv(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

struct CuKernel {
  CUfunction f = nullptr;
  std::string symbol;
  size_t arg_bytes = 0;  // the end of the last parameter (a struct's tail padding is no parameter:
                         // passing sizeof(GemmI8SplitArgs) = 48 for its 44 failed the launch)
  uint32_t shared = 0;   // dynamic shared memory, as the plan asks
};

inline CuKernel resolve(CUmodule m, const jax_aiter::kernels::KernelInfo& info) {
  CuKernel k;
  const std::string name(info.symbol);
  CHECK_CU(cuModuleGetFunction(&k.f, m, name.c_str()));
  k.symbol = name;
  for (const jax_aiter::kernels::ArgField& f : info.fields)
    k.arg_bytes = std::max<size_t>(k.arg_bytes, f.offset + f.size);
  k.shared = info.dynamic_shared;
  if (k.shared > 48 * 1024) {
    CHECK_CU(cuFuncSetAttribute(k.f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(k.shared)));
  }
  return k;
}

// Queues a launch on the legacy stream; a refused launch prints the kernel's resources, exits 2.
template <class Args>
void launch_async(const CuKernel& k, unsigned gx, unsigned gy, unsigned gz, unsigned block,
                  const Args& args) {
  size_t size = k.arg_bytes;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<Args*>(&args),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  if (const CUresult r =
          cuLaunchKernel(k.f, gx, gy, gz, block, 1, 1, k.shared, nullptr, nullptr, extra);
      r != CUDA_SUCCESS) {
    int regs = 0, local = 0, stat = 0;
    cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.f);
    cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k.f);
    cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.f);
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::printf(
        "launch %s: %s (grid %u %u %u, block %u, dynamic shared %u; regs %d, local %d, static "
        "shared %d)\n",
        k.symbol.c_str(), name ? name : "?", gx, gy, gz, block, k.shared, regs, local, stat);
    std::exit(2);
  }
}

// launch_async, then waits for it.
template <class Args>
void launch(const CuKernel& k, unsigned gx, unsigned gy, unsigned gz, unsigned block,
            const Args& args) {
  launch_async(k, gx, gy, gz, block, args);
  CHECK_CU(cuCtxSynchronize());
}
