# BF16 GEMM: the ASM tier's selection over a grid of shapes against an independent rule, and the
# handler through the fake XLA runtime on the Host backend (both tiers, every AITER row forced
# through its ABI twin). Included from tests/cpp/CMakeLists.txt.

jax_aiter_test(test_gemm_select)

if(TARGET XlaFfi::headers)
  # The generic AITER family tier, the knobs and the binder's tier fallback, on a toy family.
  jax_aiter_test(test_aiter_tier)
endif()

if(TARGET XlaFfi::headers)
  jax_aiter_test(test_ffi_gemm)
  target_link_libraries(test_ffi_gemm PRIVATE jax_aiter_test_reference)
  # The host twins multiply for real: a few seconds optimised, much longer unoptimised.
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(test_ffi_gemm PRIVATE -O2)
  endif()
endif()
