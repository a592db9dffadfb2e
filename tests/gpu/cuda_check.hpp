// The GPU test programs' driver-API helpers: CHECK_CU (a failed driver call prints its name and
// where, and exits 2: a setup failure, told apart from a failed check's exit status 1), device
// buffers, poisoned outputs with guard bytes, and reading a cubin.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

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

// A device allocation, freed with its owner.
struct DevBuf {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  DevBuf() = default;
  explicit DevBuf(size_t n) : bytes(n) { CHECK_CU(cuMemAlloc(&p, n > 0 ? n : 1)); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~DevBuf() {
    if (p) cuMemFree(p);
  }
  void* ptr() const { return reinterpret_cast<void*>(p); }
};

template <typename T>
DevBuf upload(const std::vector<T>& v) {
  DevBuf b(v.size() * sizeof(T));
  if (!v.empty()) CHECK_CU(cuMemcpyHtoD(b.p, v.data(), b.bytes));
  return b;
}

// An output of `bytes` bytes followed by `guard` bytes, all 0xFF (NaN in every float type): what a
// kernel leaves unwritten cannot pass, and a write past the end shows in the guard.
inline DevBuf poisoned(size_t bytes, size_t guard = 256) {
  DevBuf b(bytes + guard);
  CHECK_CU(cuMemsetD8(b.p, 0xFF, bytes + guard));
  return b;
}

inline std::vector<unsigned char> download(const DevBuf& b) {
  std::vector<unsigned char> v(b.bytes);
  CHECK_CU(cuMemcpyDtoH(v.data(), b.p, b.bytes));
  return v;
}

// The bytes from `used` on are still the poison.
inline bool guard_intact(const std::vector<unsigned char>& v, size_t used) {
  for (size_t i = used; i < v.size(); ++i) {
    if (v[i] != 0xFF) return false;
  }
  return true;
}

inline std::vector<char> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::printf("cannot read %s\n", path);
    std::exit(2);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
