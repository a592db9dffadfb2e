# The Python package's tests (pytest on tests/python) against the build tree's package:
# ${PROJECT_BINARY_DIR}/python/jax_aiter holds the .py files and the handler libraries
# (_jax_aiter_cpu.so, and _jax_aiter_cuda.so / _jax_aiter_rocm.so where built). Included from
# tests/CMakeLists.txt. Needs a Python with jax, numpy and pytest; without one the test is skipped
# at configure time with a message rather than failing.
if(NOT TARGET _jax_aiter_cpu)
  message(STATUS "jax_aiter: Python tests off (JAX_AITER_BUILD_PYTHON is OFF)")
  return()
endif()

find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "jax_aiter: Python tests off (no Python 3 interpreter found)")
  return()
endif()
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import jax, numpy, pytest"
                RESULT_VARIABLE _jax_aiter_py_ok OUTPUT_QUIET ERROR_QUIET)
if(NOT _jax_aiter_py_ok EQUAL 0)
  message(STATUS "jax_aiter: Python tests off (${Python3_EXECUTABLE} lacks jax, numpy or pytest)")
  return()
endif()
message(STATUS "jax_aiter: Python tests with ${Python3_EXECUTABLE}")

# ctest builds nothing itself: this fixture brings the handler library up to date before pytest
# loads it (it is part of `all` too, so after a plain build it is a no-op).
# Our ABI twins of AITER's code objects for gfx942/gfx950, one code object per twin source
# (kernels_co/aiter_*.twin.cpp), for test_check_aiter.py: JAX_AITER_TWIN_CO_<ARCH> lists
# "<twin>=<path>" entries separated by "|".
set(_twin_env "")
set(_twin_targets "")
file(GLOB _twin_sources RELATIVE "${PROJECT_SOURCE_DIR}/kernels_co"
     "${PROJECT_SOURCE_DIR}/kernels_co/aiter_*.twin.cpp")
foreach(arch gfx942 gfx950)
  set(_entries "")
  foreach(_source IN LISTS _twin_sources)
    jax_aiter_compile_kernels(_twin ${_source} ${arch})
    if(_twin)
      string(REPLACE ".twin.cpp" "" _name "${_source}")
      list(APPEND _entries "${_name}=${_twin}")
      list(APPEND _twin_targets "${_twin}")
    endif()
  endforeach()
  if(_entries)
    string(TOUPPER ${arch} _upper)
    string(REPLACE ";" "|" _entries "${_entries}")
    list(APPEND _twin_env "JAX_AITER_TWIN_CO_${_upper}=${_entries}")
  endif()
endforeach()
set(_twin_build "")
if(_twin_targets)
  add_custom_target(python_test_twins ALL DEPENDS ${_twin_targets})
  set(_twin_build python_test_twins)
endif()

add_test(NAME python_build_handlers
         COMMAND "${CMAKE_COMMAND}" --build "${CMAKE_BINARY_DIR}" --target _jax_aiter_cpu
                 ${_twin_build})
set_tests_properties(python_build_handlers PROPERTIES FIXTURES_SETUP jax_aiter_python_handlers
                                                      LABELS python)

# One ctest test per test file, python_tests_<name> for tests/python/test_<name>.py (found, not
# listed): each stays far inside its timeout on a loaded machine, and ctest spreads them over the
# cores beside the C++ tests.
file(GLOB _py_tests CONFIGURE_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/test_*.py")
foreach(_py_test IN LISTS _py_tests)
  get_filename_component(_name "${_py_test}" NAME_WE)
  string(REGEX REPLACE "^test_" "python_tests_" _name "${_name}")
  add_test(NAME ${_name}
           COMMAND "${Python3_EXECUTABLE}" -m pytest -q -p no:cacheprovider "${_py_test}"
           WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  set_tests_properties(${_name} PROPERTIES
    ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;PYTHONDONTWRITEBYTECODE=1;${_twin_env}"
    FIXTURES_REQUIRED jax_aiter_python_handlers
    DEPENDS python_build_handlers
    LABELS python
    TIMEOUT 600)
endforeach()

# The README's main job: the transformer block example, on CPU, must agree with its jnp twin.
add_test(NAME example_transformer_block
         COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/examples/transformer_block.py")
set_tests_properties(example_transformer_block PROPERTIES
  ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;PYTHONDONTWRITEBYTECODE=1;JAX_PLATFORMS=cpu"
  FIXTURES_REQUIRED jax_aiter_python_handlers
  LABELS python
  TIMEOUT 600)

# pip install of the project (scikit-build-core) into a fresh venv, then used with no environment
# variables from outside the tree. Needs scikit-build-core in the environment (scripts/setup.sh).
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import scikit_build_core"
                RESULT_VARIABLE _jax_aiter_skb_ok OUTPUT_QUIET ERROR_QUIET)
if(_jax_aiter_skb_ok EQUAL 0)
  add_test(NAME python_pip_install
           COMMAND "${CMAKE_CURRENT_LIST_DIR}/check_pip_install.sh" "${Python3_EXECUTABLE}"
                   "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_BINARY_DIR}/pip_install")
  set_tests_properties(python_pip_install PROPERTIES LABELS python TIMEOUT 900 COST 500)
else()
  message(STATUS "jax_aiter: pip install test off (${Python3_EXECUTABLE} lacks scikit-build-core)")
endif()
