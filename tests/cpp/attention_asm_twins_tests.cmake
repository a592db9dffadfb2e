# The host ABI twins of AITER's v3 attention kernels (host_twins/aiter_fmha_v3.hpp), run through
# the ASM tiers' own plans (ops/attention_asm.hpp) on the host backend, against a float64
# reference. No XLA, no GPU. Included from tests/cpp/CMakeLists.txt (jax_aiter_test(name)).

jax_aiter_test(test_attention_asm_twins)
# The twins and the reference compute attention for real: optimise (as attention_twins_tests does)
# whatever the build type, so the test stays in seconds.
target_compile_options(test_attention_asm_twins PRIVATE -O2)
