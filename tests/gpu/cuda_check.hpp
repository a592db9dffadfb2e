// CHECK_CU for the GPU test programs: a failed driver call prints its name and where, and exits 2
// (a setup failure, told apart from a failed check's exit status 1).
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CU(x)                                                               \
  do {                                                                            \
    CUresult r_ = (x);                                                            \
    if (r_ != CUDA_SUCCESS) {                                                     \
      const char* s_ = nullptr;                                                   \
      cuGetErrorName(r_, &s_);                                                    \
      std::printf("CUDA error %s at %s:%d\n", s_ ? s_ : "?", __FILE__, __LINE__); \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

// Device 0 with its primary context current (the context the jax_aiter CUDA backend uses too).
inline CUdevice use_device0() {
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  return dev;
}
