# Flash attention: the ASM tiers' gates, choice of AITER v3 rows and plans over a grid of problems
# against AITER's rules written independently, and our field lists against the kernels' declared
# arguments. Included from tests/cpp/CMakeLists.txt.

jax_aiter_test(test_attention_select)
# The metadata part needs the code-object reader's msgpack headers (code_object_tests.cmake).
if(JAX_AITER_MSGPACK_INCLUDE_DIR)
  target_include_directories(test_attention_select SYSTEM PRIVATE ${JAX_AITER_MSGPACK_INCLUDE_DIR})
  target_compile_definitions(test_attention_select PRIVATE JAX_AITER_TEST_KERNARG_CHECK=1)
endif()
