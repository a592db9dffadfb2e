# Building and embedding kernel code objects into a consumer target.
#
#   jax_aiter_embed_kernels(<target> OPS rmsnorm ... ARCHS gfx942 gfx950 sm_90)
#
# For each op: our portable kernels (kernels_co/<op>.kernel.cpp) are compiled for each arch —
# clang-22 for gfx942/gfx950 code objects, nvcc for sm_90 cubins — and AITER's own ASM code
# objects listed for the op in kernels_co/aiter_manifest.cmake are taken from the user's AITER
# checkout (-DJAX_AITER_AITER_ROOT=...). Every file becomes a generated C++ source that registers
# its bytes with jax_aiter::runtime::EmbeddedRegistry; those sources are added to <target>.
# An arch whose compiler is missing is skipped with a message, never silently.

set(_JAX_AITER_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
if(NOT DEFINED JAX_AITER_KERNELS_DIR)
  set(JAX_AITER_KERNELS_DIR "${CMAKE_CURRENT_LIST_DIR}/../kernels_co")
endif()
get_filename_component(JAX_AITER_KERNELS_DIR "${JAX_AITER_KERNELS_DIR}" ABSOLUTE)

find_program(JAX_AITER_CLANG NAMES clang++-22 DOC "clang++ able to target gfx942/gfx950")
find_program(JAX_AITER_NVCC NAMES nvcc HINTS /usr/local/cuda/bin DOC "nvcc for sm_90 cubins")
# nvcc's options for our sm_90 kernels (also used by the tests that read their PTX).
set(JAX_AITER_NVCC_OPTIONS -arch=sm_90 -O3 -std=c++17 -x cu)
set(JAX_AITER_AITER_ROOT "" CACHE PATH "AITER checkout whose hsa/<arch>/ code objects to embed")

include("${JAX_AITER_KERNELS_DIR}/aiter_manifest.cmake")

# Compiles one portable kernel source for one arch; sets <out_var> to the produced file, or to
# the empty string when that arch's compiler is not available.
function(jax_aiter_compile_portable out_var op arch)
  set(src "${JAX_AITER_KERNELS_DIR}/${op}.kernel.cpp")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/jax_aiter_kernels")
  file(MAKE_DIRECTORY "${dir}")
  set(deps "${src}" "${JAX_AITER_KERNELS_DIR}/include/jax_aiter_device.hpp")
  # One rule per output and directory, however many targets embed it.
  get_directory_property(done JAX_AITER_COMPILED_KERNELS)
  if(arch MATCHES "^gfx")
    if(NOT JAX_AITER_CLANG)
      message(STATUS "jax_aiter: clang++-22 not found: no ${arch} code object for ${op}")
      set(${out_var} "" PARENT_SCOPE)
      return()
    endif()
    set(out "${dir}/${op}.${arch}.co")
    if(out IN_LIST done)
      set(${out_var} "${out}" PARENT_SCOPE)
      return()
    endif()
    set_property(DIRECTORY APPEND PROPERTY JAX_AITER_COMPILED_KERNELS "${out}")
    add_custom_command(
      OUTPUT "${out}"
      COMMAND "${JAX_AITER_CLANG}" -x hip --offload-arch=${arch} --offload-device-only
              --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5 -fuse-cuid=none
              -fhip-kernel-arg-name -O3 -std=c++20 -Wall -Wextra
              -I "${JAX_AITER_KERNELS_DIR}/include" -o "${out}" "${src}"
      DEPENDS ${deps}
      COMMENT "jax_aiter: ${op} for ${arch} (clang-22)"
      VERBATIM)
  elseif(arch STREQUAL "sm_90")
    if(NOT JAX_AITER_NVCC)
      message(STATUS "jax_aiter: nvcc not found: no sm_90 cubin for ${op}")
      set(${out_var} "" PARENT_SCOPE)
      return()
    endif()
    set(out "${dir}/${op}.${arch}.cubin")
    if(out IN_LIST done)
      set(${out_var} "${out}" PARENT_SCOPE)
      return()
    endif()
    set_property(DIRECTORY APPEND PROPERTY JAX_AITER_COMPILED_KERNELS "${out}")
    add_custom_command(
      OUTPUT "${out}"
      COMMAND "${JAX_AITER_NVCC}" -cubin ${JAX_AITER_NVCC_OPTIONS}
              -I "${JAX_AITER_KERNELS_DIR}/include" -o "${out}" "${src}"
      DEPENDS ${deps}
      COMMENT "jax_aiter: ${op} for sm_90 (nvcc)"
      VERBATIM)
  else()
    message(FATAL_ERROR "jax_aiter: unknown arch '${arch}' (gfx942, gfx950, sm_90)")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# Embeds one file into <target> under (name, arch).
function(jax_aiter_embed_file target name arch file)
  string(MAKE_C_IDENTIFIER "${name}_${arch}" ident)
  set(cpp "${CMAKE_CURRENT_BINARY_DIR}/jax_aiter_embedded/${target}/${ident}.cpp")
  add_custom_command(
    OUTPUT "${cpp}"
    COMMAND "${CMAKE_COMMAND}" -DINPUT=${file} -DOUTPUT=${cpp} -DNAME=${name} -DARCH=${arch}
            -P "${_JAX_AITER_CMAKE_DIR}/embed_file.cmake"
    DEPENDS "${file}" "${_JAX_AITER_CMAKE_DIR}/embed_file.cmake"
    COMMENT "jax_aiter: embedding ${name} (${arch}) into ${target}"
    VERBATIM)
  target_sources(${target} PRIVATE "${cpp}")
endfunction()

function(jax_aiter_embed_kernels target)
  cmake_parse_arguments(ARG "" "" "OPS;ARCHS" ${ARGN})
  foreach(op IN LISTS ARG_OPS)
    foreach(arch IN LISTS ARG_ARCHS)
      if(EXISTS "${JAX_AITER_KERNELS_DIR}/${op}.kernel.cpp")
        jax_aiter_compile_portable(co "${op}" "${arch}")
        if(co)
          jax_aiter_embed_file(${target} "${op}" "${arch}" "${co}")
        endif()
      endif()
      # AITER's hand-written code objects for this op and arch, from the user's checkout.
      set(asm_list "JAX_AITER_ASM_${op}_${arch}")
      if(DEFINED ${asm_list} AND JAX_AITER_AITER_ROOT)
        foreach(rel IN LISTS ${asm_list})
          set(file "${JAX_AITER_AITER_ROOT}/hsa/${arch}/${rel}")
          if(NOT EXISTS "${file}")
            message(FATAL_ERROR "jax_aiter: ${file} not found in JAX_AITER_AITER_ROOT")
          endif()
          get_filename_component(stem "${rel}" NAME_WE)
          jax_aiter_embed_file(${target} "${stem}" "${arch}" "${file}")
        endforeach()
      endif()
    endforeach()
  endforeach()
endfunction()
