# Attention's host twins (host_twins/attention.hpp, host_twins/attention_math.hpp) through the
# HostTwins registry with hand-packed argument structs, against a float64 reference. No XLA needed.
# Included from tests/cpp/CMakeLists.txt, which defines jax_aiter_test(name).

jax_aiter_test(test_attention_twins)
# The twins and the float64 reference compute attention for real: a few seconds optimised, much
# longer unoptimised. Optimise unless a build type is set.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  target_compile_options(test_attention_twins PRIVATE -O2)
endif()
