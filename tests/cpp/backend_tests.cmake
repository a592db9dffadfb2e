# Backends with no GPU: the HIP and CUDA backends compile here and, run on a machine without the
# device (or with the CUDA stub driver), answer with clear errors instead of crashing. The
# consumer example builds against the installed package. Our gfx code objects' metadata must agree
# with our argument structs.

if(JAX_AITER_HAVE_HIP)
  add_executable(test_backend_hip test_backend_hip.cpp)
  target_link_libraries(test_backend_hip PRIVATE jax_aiter::jax_aiter GTest::gtest_main "${JAX_AITER_HIP_LIB}")
  target_include_directories(test_backend_hip SYSTEM PRIVATE "${JAX_AITER_HIP_INCLUDE}")
  jax_aiter_embed_kernels(test_backend_hip OPS rmsnorm ARCHS gfx942 gfx950)
  add_test(NAME test_backend_hip COMMAND test_backend_hip)
endif()

# The consumer project: install this tree into the build dir, then configure, build and test the
# example against that install, as a plugin author would.
add_test(NAME consumer_example
         COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBINARY_DIR=${CMAKE_BINARY_DIR}
                 -DGENERATOR=${CMAKE_GENERATOR} -DXLA_FFI_INCLUDE_DIR=${XLA_FFI_INCLUDE_DIR}
                 -P "${CMAKE_CURRENT_SOURCE_DIR}/run_consumer_example.cmake")
