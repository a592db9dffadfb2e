# The platform's shared machinery: the per-device cache under many threads (and again under
# ThreadSanitizer), the code-object registry. Included from tests/cpp/CMakeLists.txt.

jax_aiter_test(test_device_cache)
find_package(Threads REQUIRED)
target_link_libraries(test_device_cache PRIVATE Threads::Threads)

# The same test under ThreadSanitizer (g++ has it; a data race fails the run).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=thread")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=thread")
check_cxx_source_compiles("int main() { return 0; }" JAX_AITER_HAVE_TSAN)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(JAX_AITER_HAVE_TSAN)
  add_executable(test_device_cache_tsan test_device_cache.cpp)
  target_link_libraries(test_device_cache_tsan PRIVATE jax_aiter::jax_aiter GTest::gtest_main
                                                       Threads::Threads)
  target_compile_options(test_device_cache_tsan PRIVATE -fsanitize=thread -g -O1)
  target_link_options(test_device_cache_tsan PRIVATE -fsanitize=thread)
  add_test(NAME test_device_cache_tsan COMMAND test_device_cache_tsan)
  set_tests_properties(test_device_cache_tsan PROPERTIES ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1")
else()
  message(STATUS "jax_aiter: no ThreadSanitizer with this compiler: test_device_cache_tsan off")
endif()

jax_aiter_test(test_code_objects)
target_link_libraries(test_code_objects PRIVATE Threads::Threads)
