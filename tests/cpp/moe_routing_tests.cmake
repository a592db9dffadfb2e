# MoE routing (aiter.topk_softmax, aiter.moe_sorting): validation messages, the plans against rules
# stated in the test, and the plans run through the host twins against references written there.
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
