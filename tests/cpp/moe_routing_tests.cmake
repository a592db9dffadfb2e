# MoE routing (aiter.topk_softmax, aiter.moe_sorting): validation messages, the plans against rules
# stated in the test (the top-k softmax ASM tier's choice of AITER row over a grid of problems per
# arch), and the plans run through the host twins (every AITER topksoftmax row's too) against
# references written there.
# Included from tests/cpp/CMakeLists.txt.

jax_aiter_test(test_moe_routing_plan)

# The code objects jax_aiter_embed_kernels() builds for gfx942 and gfx950 (same rule): every kernel
# of kMoeRoutingKernels is there and passes the kernarg check against its argument struct. Needs
# clang++-22 and msgpack-cxx (the metadata reader); skipped at configure time without them.
if(JAX_AITER_MSGPACK_INCLUDE_DIR AND JAX_AITER_CLANG)
  jax_aiter_test(test_moe_routing_kernargs)
  target_include_directories(test_moe_routing_kernargs SYSTEM PRIVATE
                             ${JAX_AITER_MSGPACK_INCLUDE_DIR})
  set(_moe_routing_cos "")
  foreach(arch gfx942 gfx950)
    jax_aiter_compile_kernels(_co moe_routing.kernel.cpp ${arch})
    list(APPEND _moe_routing_cos "${_co}")
  endforeach()
  add_custom_target(test_moe_routing_kernargs_objects DEPENDS ${_moe_routing_cos})
  add_dependencies(test_moe_routing_kernargs test_moe_routing_kernargs_objects)
  string(REPLACE ";" "|" _moe_routing_cos "${_moe_routing_cos}")
  target_compile_definitions(test_moe_routing_kernargs PRIVATE
                             JAX_AITER_TEST_MOE_ROUTING_COS="${_moe_routing_cos}")
endif()

# The AITER topksoftmax twins' kernel-argument metadata against AITER's own code objects, read from
# an AITER checkout (JAX_AITER_AITER_ROOT; kernel-arguments.txt does not list this family). Without
# a checkout there is nothing to compare with: no test. (Python3: gemm_kernel_tests.cmake.)
if(JAX_AITER_AITER_ROOT AND JAX_AITER_CLANG AND JAX_AITER_LLVM_READELF AND Python3_FOUND)
  set(_topk_twin_args "")
  set(_topk_twin_objects "")
  foreach(arch gfx942 gfx950)
    jax_aiter_compile_kernels(_co aiter_topksoftmax.twin.cpp ${arch})
    list(APPEND _topk_twin_args ${arch}=${_co})
    list(APPEND _topk_twin_objects ${_co})
  endforeach()
  add_custom_target(test_topksoftmax_twin_kernargs_objects ALL DEPENDS ${_topk_twin_objects})
  add_test(NAME test_topksoftmax_twin_kernargs
           COMMAND ${CMAKE_COMMAND} -E env LLVM_READELF=${JAX_AITER_LLVM_READELF}
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/data/check_twin_kernargs.py
                   ${PROJECT_SOURCE_DIR}/include/jax_aiter/kernels/shared/aiter_topksoftmax.h
                   ${JAX_AITER_AITER_ROOT} ${_topk_twin_args})
endif()
