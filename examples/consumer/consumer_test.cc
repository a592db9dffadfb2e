// What a plugin author writes: a handler instantiated in the plugin's static op library
// (my_ops.cc), plus checks that it runs (on the host backend) and that the gfx950 code object
// jax_aiter_embed_kernels() embedded into that static library reached this program, parses, and
// agrees with our argument structs, as the HIP backend requires before a launch.
#include <cmath>
#include <cstdio>
#include <vector>

#include <jax_aiter/ffi/rmsnorm.hpp>
#include <jax_aiter/host_twins/rmsnorm.hpp>
#include <jax_aiter/kernels/rmsnorm.hpp>
#include <jax_aiter/runtime/code_object.hpp>
#include <jax_aiter/runtime/code_objects.hpp>
#include <jax_aiter/runtime/host.hpp>
#include <jax_aiter/runtime/kernarg_check.hpp>

// The handler my_ops.cc defines (a plugin hands these to XLA).
extern "C" XLA_FFI_Error* MyRmsNorm(XLA_FFI_CallFrame* frame);

namespace ja = jax_aiter;

static int failures = 0;
static void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
  failures += ok ? 0 : 1;
}

int main() {
  // 0. The static library's handler is linked and registered under its target name.
  bool registered = false;
  for (const auto& e : ja::ffi::HandlerRegistry::entries()) {
    registered = registered || (e.name == "aiter.rms_norm" && e.bundle.execute == &MyRmsNorm);
  }
  expect(registered, "my_ops's handler registered");

  // 1. The handler's run path on the host backend, against a double-precision reference.
  const int rows = 3, n = 5;
  std::vector<float> x(rows * n), g(n), y(rows * n, NAN);
  for (int i = 0; i < rows * n; ++i) x[i] = std::sin(0.7f * i) * 3.f;
  for (int j = 0; j < n; ++j) g[j] = 0.5f + 0.25f * j;
  ja::ops::RmsNorm::Params p;
  auto tensor = [](float* d, std::initializer_list<int64_t> dims) {
    ja::ops::Tensor t;
    t.data = d;
    t.dtype = ja::DType::kF32;
    t.rank = static_cast<int>(dims.size());
    int i = 0;
    for (int64_t v : dims) t.dims[i++] = v;
    return t;
  };
  p.x = tensor(x.data(), {rows, n});
  p.gamma = tensor(g.data(), {n});
  p.y = tensor(y.data(), {rows, n});
  p.epsilon = 1e-5f;
  const ja::Status st = ja::ffi::Handler<ja::ops::RmsNorm, ja::runtime::Host>::run({}, p);
  expect(st.ok(), "handler run on the host backend");
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int j = 0; j < n; ++j) ss += double(x[r * n + j]) * x[r * n + j];
    const double rstd = 1 / std::sqrt(ss / n + 1e-5);
    for (int j = 0; j < n; ++j) {
      const double ref = x[r * n + j] * rstd * g[j];
      worst = std::fmax(worst, std::fabs(ref - y[r * n + j]) / (1e-6 + std::fabs(ref)));
    }
  }
  std::printf("max relative error %.3g\n", worst);
  expect(worst < 1e-5, "values match the float64 reference");

  // 2. The embedded gfx950 code object: found, parsed, every kernel's arguments match our structs.
  const auto co = ja::runtime::CodeObjects::find("rmsnorm", "gfx950");
  expect(co.ok() && co->kind == ja::runtime::CodeObjectKind::kOurs,
         "rmsnorm gfx950 code object embedded");
  if (co.ok()) {
    auto info = ja::runtime::read_code_object(co->bytes);
    expect(info.ok(), "code object parses");
    if (info.ok()) {
      int checked = 0;
      for (const ja::kernels::KernelInfo* k : ja::kernels::kRmsNormKernels) {
        const auto* md = info->find(k->symbol);
        if (md && ja::runtime::check_kernel_arguments(*md, *k).ok()) ++checked;
      }
      std::printf("%d of %zu kernels match\n", checked, ja::kernels::kRmsNormKernels.size());
      expect(checked == static_cast<int>(ja::kernels::kRmsNormKernels.size()),
             "kernel arguments match the metadata");
    }
  }
  std::printf("%d passed, %d failed\n", 5 - failures, failures);
  return failures == 0 ? 0 : 1;
}
