# Grouped GEMM (aiter.grouped_gemm, aiter.grouped_gemm_wgrad): validate, the row tile rule, the
# plans and the schedule (test_grouped_gemm_plan); the staged tile's loader map and the
# gfx942/gfx950 code objects' argument layouts (test_grouped_gemm_tile); the handlers through the
# fake XLA runtime on the Host backend (test_ffi_grouped_gemm). Included from
# tests/cpp/CMakeLists.txt.

jax_aiter_test(test_grouped_gemm_plan)

jax_aiter_test(test_grouped_gemm_tile)
target_include_directories(test_grouped_gemm_tile PRIVATE ${PROJECT_SOURCE_DIR}/kernels_co/include)
# Our kernels for gfx942 and gfx950, read with the runtime's metadata reader (msgpack-cxx
# headers): the ROCm handler library's own code objects where it is built (not compiled twice),
# else by jax_aiter_embed_kernels' rule here.
if(JAX_AITER_MSGPACK_INCLUDE_DIR)
  set(_rocm_co "${PROJECT_BINARY_DIR}/python/jax_aiter_kernels")
  if(TARGET _jax_aiter_rocm AND "gfx942" IN_LIST JAX_AITER_GPU_ARCHS
     AND "gfx950" IN_LIST JAX_AITER_GPU_ARCHS)
    set(_grouped_gemm_co_gfx942 "${_rocm_co}/grouped_gemm.gfx942.co")
    set(_grouped_gemm_co_gfx950 "${_rocm_co}/grouped_gemm.gfx950.co")
    add_dependencies(test_grouped_gemm_tile _jax_aiter_rocm)
  else()
    jax_aiter_compile_kernels(_grouped_gemm_co_gfx942 grouped_gemm.kernel.cpp gfx942)
    jax_aiter_compile_kernels(_grouped_gemm_co_gfx950 grouped_gemm.kernel.cpp gfx950)
    if(_grouped_gemm_co_gfx942 AND _grouped_gemm_co_gfx950)
      add_custom_target(test_grouped_gemm_tile_objects
                        DEPENDS ${_grouped_gemm_co_gfx942} ${_grouped_gemm_co_gfx950})
      add_dependencies(test_grouped_gemm_tile test_grouped_gemm_tile_objects)
    endif()
  endif()
  if(_grouped_gemm_co_gfx942 AND _grouped_gemm_co_gfx950)
    target_include_directories(test_grouped_gemm_tile SYSTEM PRIVATE
                               ${JAX_AITER_MSGPACK_INCLUDE_DIR})
    target_compile_definitions(test_grouped_gemm_tile PRIVATE
      JAX_AITER_TEST_GROUPED_GEMM_CO_GFX942="${_grouped_gemm_co_gfx942}"
      JAX_AITER_TEST_GROUPED_GEMM_CO_GFX950="${_grouped_gemm_co_gfx950}")
  endif()
endif()

if(TARGET XlaFfi::headers)
  jax_aiter_test(test_ffi_grouped_gemm)
  # The host twins multiply for real: seconds optimised, much longer unoptimised.
  if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    target_compile_options(test_ffi_grouped_gemm PRIVATE -O2)
  endif()
endif()
