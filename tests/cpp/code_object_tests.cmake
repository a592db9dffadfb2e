# test_code_object: the ELF/AMDGPU-metadata reader and the kernarg check
# (include/jax_aiter/runtime/{code_object,kernarg_check}.hpp).
#
# Included from tests/cpp/CMakeLists.txt. Expects: target jax_aiter::jax_aiter, GTest found,
# JAX_AITER_CLANG (clang++-22 or empty), JAX_AITER_LLVM_READELF (llvm-readelf-22 or empty).
# Without clang the real-object tests skip (saying why); the hand-built-object and kernarg-check
# tests run everywhere. The code object reader needs msgpack-cxx headers (Debian
# libmsgpack-cxx-dev; header-only, used without Boost).

find_path(JAX_AITER_MSGPACK_INCLUDE_DIR msgpack.hpp)
if(NOT JAX_AITER_MSGPACK_INCLUDE_DIR)
  message(WARNING "test_code_object not built: msgpack-cxx headers not found "
                  "(apt-get install libmsgpack-cxx-dev)")
else()
  add_executable(test_code_object ${CMAKE_CURRENT_LIST_DIR}/test_code_object.cpp)
  target_include_directories(test_code_object SYSTEM PRIVATE ${JAX_AITER_MSGPACK_INCLUDE_DIR})
  target_link_libraries(test_code_object PRIVATE jax_aiter::jax_aiter GTest::gtest_main)

  set(_jax_aiter_probe_co "")
  if(JAX_AITER_CLANG)
    # A small gfx950 code object whose metadata the test compares with llvm-readelf's.
    # -fhip-kernel-arg-name makes clang record each argument's .name.
    set(_jax_aiter_probe_src ${CMAKE_CURRENT_LIST_DIR}/data/kernarg_probe.hip)
    set(_jax_aiter_probe_co ${CMAKE_CURRENT_BINARY_DIR}/kernarg_probe_gfx950.co)
    add_custom_command(
      OUTPUT ${_jax_aiter_probe_co}
      COMMAND ${JAX_AITER_CLANG} -x hip --offload-arch=gfx950 --offload-device-only
              --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5 -fuse-cuid=none
              -fhip-kernel-arg-name -O3 -o ${_jax_aiter_probe_co} ${_jax_aiter_probe_src}
      DEPENDS ${_jax_aiter_probe_src}
      COMMENT "Compiling kernarg_probe.hip for gfx950"
      VERBATIM)
    add_custom_target(test_code_object_probe DEPENDS ${_jax_aiter_probe_co})
    add_dependencies(test_code_object test_code_object_probe)
  endif()

  # Our RMSNorm kernels for gfx950, built by the same rule jax_aiter_embed_kernels() uses.
  jax_aiter_compile_kernels(_jax_aiter_rmsnorm_co rmsnorm.kernel.cpp gfx950)
  if(_jax_aiter_rmsnorm_co)
    add_custom_target(test_code_object_rmsnorm DEPENDS ${_jax_aiter_rmsnorm_co})
    add_dependencies(test_code_object test_code_object_rmsnorm)
  endif()

  target_compile_definitions(test_code_object PRIVATE
    JAX_AITER_TEST_PROBE_CO="${_jax_aiter_probe_co}"
    JAX_AITER_TEST_RMSNORM_CO="${_jax_aiter_rmsnorm_co}"
    JAX_AITER_TEST_LLVM_READELF="${JAX_AITER_LLVM_READELF}")

  add_test(NAME test_code_object COMMAND test_code_object)

  # The reader's memory bound, in an executable of its own (it replaces operator new).
  add_executable(test_code_object_limits ${CMAKE_CURRENT_LIST_DIR}/test_code_object_limits.cpp)
  target_include_directories(test_code_object_limits SYSTEM PRIVATE ${JAX_AITER_MSGPACK_INCLUDE_DIR})
  target_link_libraries(test_code_object_limits PRIVATE jax_aiter::jax_aiter GTest::gtest_main)
  add_test(NAME test_code_object_limits COMMAND test_code_object_limits)

  # Files named like code objects that are not one (directory, FIFO, /dev/zero, 3 GiB sparse),
  # read by the loader and check-aiter under an address-space cap (its own main sets RLIMIT_AS);
  # the timeout catches a reader that waits on the FIFO.
  add_executable(test_code_object_files ${CMAKE_CURRENT_LIST_DIR}/test_code_object_files.cpp)
  target_include_directories(test_code_object_files SYSTEM PRIVATE ${JAX_AITER_MSGPACK_INCLUDE_DIR})
  target_link_libraries(test_code_object_files PRIVATE jax_aiter::jax_aiter GTest::gtest)
  add_test(NAME test_code_object_files COMMAND test_code_object_files)
  set_tests_properties(test_code_object_files PROPERTIES TIMEOUT 60)

  # The AITER the user has: the argument layout each code object declares, picked from its
  # metadata, on fixtures of two AITER versions (runtime/kernarg_check.hpp, check_aiter.hpp).
  jax_aiter_test(test_aiter_abi)
  target_include_directories(test_aiter_abi SYSTEM PRIVATE ${JAX_AITER_MSGPACK_INCLUDE_DIR})
endif()

# test_kernel_loads: every sm_90 kernel waits for the previous grid before touching memory, and
# every global load moves at least one whole vector (read from their PTX, built with the cubin's
# nvcc options). nvcc only; skipped without it.
if(JAX_AITER_NVCC)
  set(_jax_aiter_rmsnorm_ptx ${CMAKE_CURRENT_BINARY_DIR}/rmsnorm.sm_90.ptx)
  add_custom_command(
    OUTPUT ${_jax_aiter_rmsnorm_ptx}
    COMMAND ${JAX_AITER_NVCC} -ptx ${JAX_AITER_NVCC_OPTIONS} -I ${JAX_AITER_KERNELS_DIR}/include
            -I ${JAX_AITER_INCLUDE_DIR} -o ${_jax_aiter_rmsnorm_ptx}
            ${JAX_AITER_KERNELS_DIR}/rmsnorm.kernel.cpp
    DEPENDS ${JAX_AITER_KERNELS_DIR}/rmsnorm.kernel.cpp ${_JAX_AITER_KERNEL_HEADERS}
    COMMENT "PTX of rmsnorm.kernel.cpp for test_kernel_loads"
    VERBATIM)
  add_custom_target(test_kernel_loads_ptx DEPENDS ${_jax_aiter_rmsnorm_ptx})
  jax_aiter_test(test_kernel_loads)
  add_dependencies(test_kernel_loads test_kernel_loads_ptx)
  target_compile_definitions(test_kernel_loads PRIVATE
    JAX_AITER_TEST_RMSNORM_PTX="${_jax_aiter_rmsnorm_ptx}")
else()
  message(STATUS "jax_aiter: test_kernel_loads off (nvcc not found)")
endif()

# The ABI twins of AITER's v3 attention kernels (kernels_co/aiter_fmha_v3.twin.cpp): each arch's
# twin code object, built by the rule jax_aiter_embed_kernels() uses, must declare every row's
# kernel of that arch with AITER's argument names, offsets, sizes and kernarg segment
# (kernel-arguments.txt; point JAX_AITER_AITER_FACTS at it to enable the test).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(JAX_AITER_AITER_FACTS AND JAX_AITER_CLANG AND JAX_AITER_LLVM_READELF AND Python3_FOUND)
  set(_fmha_twin_args "")
  set(_fmha_twin_objects "")
  foreach(arch gfx942 gfx950)
    jax_aiter_compile_kernels(_fmha_twin_co aiter_fmha_v3.twin.cpp ${arch})
    list(APPEND _fmha_twin_args ${arch}=${_fmha_twin_co})
    list(APPEND _fmha_twin_objects ${_fmha_twin_co})
  endforeach()
  add_custom_target(test_fmha_twin_kernargs_objects ALL DEPENDS ${_fmha_twin_objects})
  add_test(NAME test_fmha_twin_kernargs
           COMMAND ${CMAKE_COMMAND} -E env LLVM_READELF=${JAX_AITER_LLVM_READELF}
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/data/check_twin_kernargs.py
                   ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_fmha_v3.h
                   ${JAX_AITER_AITER_FACTS} ${_fmha_twin_args})
endif()
