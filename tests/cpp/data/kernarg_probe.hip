// Probe kernels for tests/cpp/test_code_object.cpp: a few argument layouts (pointers, 32-bit
// scalars, a 64-bit scalar after a 32-bit one, a small struct by value) whose metadata the reader
// must decode exactly as llvm-readelf-22 prints it. Compiled with -nogpuinc: no HIP headers.
#define __global__ __attribute__((global))

struct Pair {
  float a;
  int b;
};

extern "C" __global__ void probe_axpy(float* y, const float* x, float alpha, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) y[i] += alpha * x[i];
}

// A 64-bit scalar after a 32-bit one: the metadata carries the alignment gap.
extern "C" __global__ void probe_mixed(int flag, long long count, double* out, unsigned short tag,
                                       const Pair pair) {
  if (__builtin_amdgcn_workitem_id_x() == 0) out[0] = flag + count + tag + pair.a + pair.b;
}

// Only scalars and no pointers.
extern "C" __global__ void probe_scalars(int a, float b, unsigned c) {
  (void)a;
  (void)b;
  (void)c;
}

// Reads the block size, which code object v5 passes as hidden arguments after the explicit ones:
// the segment then ends well past the last named argument.
extern "C" __global__ void probe_hidden(float* out, int n) {
  unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
               __builtin_amdgcn_workitem_id_x();
  if (i < static_cast<unsigned>(n)) out[i] = 1.0f;
}
