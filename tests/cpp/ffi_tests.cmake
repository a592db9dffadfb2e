# test_ffi_rmsnorm: the RMSNorm FFI handlers called through the fake XLA runtime
# (include/jax_aiter/testing/fake_ffi.hpp) on the Host backend. Needs the XLA FFI headers.
#
# Included from tests/cpp/CMakeLists.txt, which defines jax_aiter_test(name).
if(NOT TARGET XlaFfi::headers)
  message(WARNING "test_ffi_rmsnorm not built: XLA FFI headers not found "
                  "(pip install jax, or -DXLA_FFI_INCLUDE_DIR=...)")
  return()
endif()

jax_aiter_test(test_ffi_rmsnorm)
target_link_libraries(test_ffi_rmsnorm PRIVATE jax_aiter::jax_aiter jax_aiter_test_reference)
# The results tests run the Host kernels and a float64 reference over shapes up to 600 x 4096 in
# three dtypes: about 30 s unoptimised, a few seconds at -O2. Optimise unless a build type is set.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  target_compile_options(test_ffi_rmsnorm PRIVATE -O2)
endif()

# Attention's handlers in varlen mode (edge lengths, every tier, bad input); also under ASan.
jax_aiter_test(test_ffi_attention)
target_link_libraries(test_ffi_attention PRIVATE jax_aiter::jax_aiter)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  target_compile_options(test_ffi_attention PRIVATE -O2)
endif()

# Attention split into shards (batch, heads, query rows) with the shard operand's offsets, against
# the unsharded call; also under ASan.
jax_aiter_test(test_attention_shard)
target_link_libraries(test_attention_shard PRIVATE jax_aiter::jax_aiter)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  target_compile_options(test_attention_shard PRIVATE -O2)
endif()
