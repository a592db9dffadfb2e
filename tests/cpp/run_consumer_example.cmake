# ctest driver: install jax_aiter, then build and run examples/consumer against the install.
set(prefix "${BINARY_DIR}/consumer_install")
set(build "${BINARY_DIR}/consumer_build")
file(REMOVE_RECURSE "${prefix}" "${build}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples/consumer" -B "${build}" -G "${GENERATOR}"
                        "-DCMAKE_PREFIX_PATH=${prefix}" "-DXLA_FFI_INCLUDE_DIR=${XLA_FFI_INCLUDE_DIR}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${build}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
execute_process(COMMAND "${build}/consumer_test" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer_test failed: ${rc}")
endif()
