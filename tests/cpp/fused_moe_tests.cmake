# Fused MoE (aiter.fused_moe) on AITER's one-stage fmoe family, and its two-stage family's stage 1
# (aiter.fused_moe_stage1, fmoe_2stages; in the same programs): the ASM tier's selection over a
# grid of problems against an independent rule; the family's argument structs against AITER's
# code objects (check-aiter on an AITER checkout: point JAX_AITER_AITER_ROOT, at configure or run
# time, at one; without it those cases skip); the rows' host twins running the tier's plans
# against float64; and the op's handler.
# Included from tests/cpp/CMakeLists.txt.

set(_fmoe_csv ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_fmoe.csv)
set(_fmoe2_csv ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_fmoe_2stages.csv)

jax_aiter_test(test_fused_moe_select)
target_compile_definitions(test_fused_moe_select PRIVATE JAX_AITER_FMOE_CSV="${_fmoe_csv}"
                           JAX_AITER_FMOE_2STAGES_CSV="${_fmoe2_csv}"
                           JAX_AITER_TEST_AITER_ROOT="${JAX_AITER_AITER_ROOT}")
# Some 700,000 selections per arch: seconds optimised, much longer unoptimised.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  target_compile_options(test_fused_moe_select PRIVATE -O2)
endif()

if(JAX_AITER_MSGPACK_INCLUDE_DIR)
  jax_aiter_test(test_fused_moe_abi)
  target_include_directories(test_fused_moe_abi SYSTEM PRIVATE ${JAX_AITER_MSGPACK_INCLUDE_DIR})
  target_compile_definitions(test_fused_moe_abi PRIVATE JAX_AITER_FMOE_CSV="${_fmoe_csv}"
                             JAX_AITER_TEST_AITER_ROOT="${JAX_AITER_AITER_ROOT}")
endif()

# The fmoe rows' host twins against float64 of the dequantized math (host_twins/aiter_fmoe.hpp).
jax_aiter_test(test_fused_moe_twin)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  target_compile_options(test_fused_moe_twin PRIVATE -O2)
endif()

# aiter.fused_moe's handler through the fake XLA runtime on the Host backend: a call planned for
# each arch and run by the twins, and every bad operand and attribute.
if(TARGET XlaFfi::headers)
  jax_aiter_test(test_ffi_fused_moe)
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(test_ffi_fused_moe PRIVATE -O2)
  endif()
endif()
