# Finds the XLA FFI headers (xla/ffi/api/{c_api.h,api.h,ffi.h}) that ship inside jaxlib.
# Override with -DXLA_FFI_INCLUDE_DIR=/path/to/include. Defines XlaFfi::headers (SYSTEM includes:
# the headers are XLA's, and their warnings are not ours).
if(NOT XLA_FFI_INCLUDE_DIR)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c "import jax; print(jax.ffi.include_dir())"
      OUTPUT_VARIABLE _xla_ffi_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
      RESULT_VARIABLE _xla_ffi_rc)
    if(_xla_ffi_rc EQUAL 0 AND EXISTS "${_xla_ffi_dir}/xla/ffi/api/ffi.h")
      set(XLA_FFI_INCLUDE_DIR "${_xla_ffi_dir}" CACHE PATH "XLA FFI include directory (from jaxlib)")
    endif()
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(XlaFfi REQUIRED_VARS XLA_FFI_INCLUDE_DIR)

if(XlaFfi_FOUND AND NOT TARGET XlaFfi::headers)
  add_library(XlaFfi::headers INTERFACE IMPORTED)
  set_target_properties(XlaFfi::headers PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
                                                   "${XLA_FFI_INCLUDE_DIR}"
                                                   INTERFACE_INCLUDE_DIRECTORIES "${XLA_FFI_INCLUDE_DIR}")
endif()
