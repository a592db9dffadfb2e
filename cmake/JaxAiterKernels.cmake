# Building and embedding kernel code objects into a consumer target.
#
#   jax_aiter_embed_kernels(<target> OPS rmsnorm gemm ... ARCHS gfx942 gfx950 sm_90 [TWINS])
#
# For each op (the manifest, ops.cmake, says what each needs):
#  - our portable kernels (kernels_co/<module>.kernel.cpp) are compiled for each arch (clang-22 for
#    gfx942/gfx950 code objects, nvcc for sm_90 cubins) and embedded, always;
#  - AITER's own ASM code objects of the op's families are embedded from the user's AITER checkout
#    (-DJAX_AITER_AITER_ROOT=..., files hsa/<arch>/<path>, the paths read from the family's row
#    CSVs under include/jax_aiter/kernels/shared/, cmake/JaxAiterRows.cmake); without a checkout
#    the library can still read them at run time from one
#    (jax_aiter::runtime::CodeObjects::set_aiter_root);
#  - the ABI twins of those families (our kernels that read AITER's argument structs, compiled
#    from kernels_co/<family>.twin.cpp) are embedded under AITER's names for sm_90 always (CUDA has
#    no AITER code to run) and for gfx archs when TWINS is given (stand-ins where AITER's code
#    objects are absent).
# Every code object goes into one generated source per target, as .incbin directives (fast to build
# however many there are) plus one table that registers them at start-up
# (runtime/code_objects.hpp). A STATIC library target does not keep that source itself: it becomes
# an INTERFACE source, compiled into whatever links the library, so that the linker cannot drop
# the registration as unreferenced. An arch whose compiler is missing is skipped with a message,
# never silently.

set(_JAX_AITER_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
if(NOT DEFINED JAX_AITER_KERNELS_DIR)
  set(JAX_AITER_KERNELS_DIR "${CMAKE_CURRENT_LIST_DIR}/../kernels_co")
endif()
get_filename_component(JAX_AITER_KERNELS_DIR "${JAX_AITER_KERNELS_DIR}" ABSOLUTE)
if(NOT DEFINED JAX_AITER_INCLUDE_DIR)
  set(JAX_AITER_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include")
endif()
get_filename_component(JAX_AITER_INCLUDE_DIR "${JAX_AITER_INCLUDE_DIR}" ABSOLUTE)

find_program(JAX_AITER_CLANG NAMES clang++-22 DOC "clang++ able to target gfx942/gfx950")
find_program(JAX_AITER_NVCC NAMES nvcc HINTS /usr/local/cuda/bin DOC "nvcc for sm_90 cubins")
# nvcc's options for our sm_90 kernels (also used by the tests that read their PTX).
# sm_90a: the wgmma and setmaxnreg of the GEMM engine; its cubins load on compute capability 9.0
# exactly (H100, H200). The -gencode form: nvcc 13.0 runs -arch=sm_90a through an sm_90 pass too.
set(JAX_AITER_NVCC_OPTIONS -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -x cu)
set(JAX_AITER_AITER_ROOT "" CACHE PATH "AITER checkout whose hsa/<arch>/ code objects to embed")
option(JAX_AITER_DEVICE_CODE "Compile kernel code objects (OFF: host code only, embedding nothing)"
       ON)

if(NOT DEFINED JAX_AITER_ROWS_DIR)
  set(JAX_AITER_ROWS_DIR "${JAX_AITER_INCLUDE_DIR}/jax_aiter/kernels/shared")
endif()
include("${_JAX_AITER_CMAKE_DIR}/JaxAiterRows.cmake")

# The manifest: one jax_aiter_op() line per op (ops.cmake, beside this file once installed).
#   jax_aiter_op(<op> [KERNELS <module>...] [AITER <family>...])
# sets JAX_AITER_OP_<op>_KERNELS and JAX_AITER_OP_<op>_AITER and appends <op> to JAX_AITER_OPS.
if(NOT DEFINED JAX_AITER_OPS_MANIFEST)
  set(JAX_AITER_OPS_MANIFEST "${CMAKE_CURRENT_LIST_DIR}/../ops.cmake")
endif()
macro(jax_aiter_op op)
  cmake_parse_arguments(_JAX_AITER_OP "" "" "KERNELS;AITER" ${ARGN})
  if(_JAX_AITER_OP_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "jax_aiter_op(${op}): unknown arguments "
                        "${_JAX_AITER_OP_UNPARSED_ARGUMENTS}")
  endif()
  if(${op} IN_LIST JAX_AITER_OPS)
    message(FATAL_ERROR "jax_aiter_op(${op}): the op is listed twice")
  endif()
  list(APPEND JAX_AITER_OPS ${op})
  set(JAX_AITER_OP_${op}_KERNELS ${_JAX_AITER_OP_KERNELS})
  set(JAX_AITER_OP_${op}_AITER ${_JAX_AITER_OP_AITER})
endmacro()
set(JAX_AITER_OPS "")
include("${JAX_AITER_OPS_MANIFEST}")

# The headers every kernel source sees, for rebuild dependencies.
file(GLOB _JAX_AITER_KERNEL_HEADERS "${JAX_AITER_KERNELS_DIR}/include/*.hpp"
     "${JAX_AITER_INCLUDE_DIR}/jax_aiter/kernels/shared/*.h")

# Compiles kernels_co/<source> for one arch into <out_var> (the file), or "" when that arch's
# compiler is missing. One rule per output and directory, however many targets embed it.
function(jax_aiter_compile_kernels out_var source arch)
  if(NOT JAX_AITER_DEVICE_CODE)
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  set(src "${JAX_AITER_KERNELS_DIR}/${source}")
  get_filename_component(stem "${source}" NAME_WE)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/jax_aiter_kernels")
  file(MAKE_DIRECTORY "${dir}")
  set(deps "${src}" ${_JAX_AITER_KERNEL_HEADERS})
  set(includes -I "${JAX_AITER_KERNELS_DIR}/include" -I "${JAX_AITER_INCLUDE_DIR}")
  get_directory_property(done JAX_AITER_COMPILED_KERNELS)
  if(arch MATCHES "^gfx")
    if(NOT JAX_AITER_CLANG)
      message(STATUS "jax_aiter: clang++-22 not found: no ${arch} code object from ${source}")
      set(${out_var} "" PARENT_SCOPE)
      return()
    endif()
    set(out "${dir}/${stem}.${arch}.co")
    if(NOT out IN_LIST done)
      set_property(DIRECTORY APPEND PROPERTY JAX_AITER_COMPILED_KERNELS "${out}")
      add_custom_command(
        OUTPUT "${out}"
        COMMAND "${JAX_AITER_CLANG}" -x hip --offload-arch=${arch} --offload-device-only
                --no-gpu-bundle-output -nogpuinc -nogpulib -mcode-object-version=5
                -fuse-cuid=none -fhip-kernel-arg-name -O3 -std=c++20 -Wall -Wextra ${includes}
                -o "${out}" "${src}"
        DEPENDS ${deps}
        COMMENT "jax_aiter: ${source} for ${arch} (clang-22)"
        VERBATIM)
    endif()
  elseif(arch STREQUAL "sm_90")
    if(NOT JAX_AITER_NVCC)
      message(STATUS "jax_aiter: nvcc not found: no sm_90 cubin from ${source}")
      set(${out_var} "" PARENT_SCOPE)
      return()
    endif()
    set(out "${dir}/${stem}.${arch}.cubin")
    if(NOT out IN_LIST done)
      set_property(DIRECTORY APPEND PROPERTY JAX_AITER_COMPILED_KERNELS "${out}")
      add_custom_command(
        OUTPUT "${out}"
        COMMAND "${JAX_AITER_NVCC}" -cubin ${JAX_AITER_NVCC_OPTIONS} ${includes} -o "${out}"
                "${src}"
        DEPENDS ${deps}
        COMMENT "jax_aiter: ${source} for sm_90 (nvcc)"
        VERBATIM)
    endif()
  else()
    message(FATAL_ERROR "jax_aiter: unknown arch '${arch}' (gfx942, gfx950, sm_90)")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# The code-object paths of an AITER family on one arch: the code_object column of the family's
# rows (cmake/JaxAiterRows.cmake) whose on_<arch> column is 1. For a non-AMD arch (whose ABI twins
# stand in for every row): the rows of any AMD arch, each path once.
function(jax_aiter_family_code_objects out_var family arch)
  jax_aiter_rows_column(paths "${family}" code_object)
  jax_aiter_rows_column(on_gfx942 "${family}" on_gfx942)
  jax_aiter_rows_column(on_gfx950 "${family}" on_gfx950)
  set(out "")
  set(i 0)
  foreach(path IN LISTS paths)
    list(GET on_gfx942 ${i} g942)
    list(GET on_gfx950 ${i} g950)
    if((arch STREQUAL "gfx942" AND g942) OR (arch STREQUAL "gfx950" AND g950)
       OR NOT arch MATCHES "^gfx")
      list(APPEND out "${path}")
    endif()
    math(EXPR i "${i} + 1")
  endforeach()
  list(REMOVE_DUPLICATES out)
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(jax_aiter_embed_kernels target)
  cmake_parse_arguments(ARG "TWINS" "" "OPS;ARCHS" ${ARGN})
  string(MAKE_C_IDENTIFIER "${target}" ident)
  set(cpp "${CMAKE_CURRENT_BINARY_DIR}/jax_aiter_embedded/${ident}.cpp")
  set(asm "")
  set(decls "")
  set(table "")
  set(files "")
  set(symbols "")
  set(count 0)
  # Appends one code object (name, arch, kind) to the generated source: a hidden symbol at each
  # end of the file's bytes. A file registered under several names (a twin module standing in for
  # many AITER code objects) is included once.
  macro(_jax_aiter_add name arch kind file)
    list(FIND files "${file}" _seen)
    if(_seen EQUAL -1)
      set(sym "jax_aiter_blob_${ident}_${count}")
      string(APPEND asm "  \".balign 16\\n.globl ${sym}\\n.hidden ${sym}\\n${sym}:\\n\"\n"
                        "  \".incbin \\\"${file}\\\"\\n\"\n"
                        "  \".globl ${sym}_end\\n.hidden ${sym}_end\\n${sym}_end:\\n\"\n")
      string(APPEND decls "__attribute__((visibility(\"hidden\"))) extern const unsigned char "
                          "${sym}[], ${sym}_end[];\n")
      list(APPEND files "${file}")
      list(APPEND symbols "${sym}")
      math(EXPR count "${count} + 1")
    else()
      list(GET symbols ${_seen} sym)
    endif()
    string(APPEND table "    {\"${name}\", \"${arch}\", ::jax_aiter::runtime::CodeObjectKind::${kind}, "
                        "${sym}, ${sym}_end},\n")
  endmacro()
  foreach(op IN LISTS ARG_OPS)
    if(NOT op IN_LIST JAX_AITER_OPS)
      message(FATAL_ERROR "jax_aiter: unknown op '${op}' (the manifest, ops.cmake, lists "
                          "${JAX_AITER_OPS})")
    endif()
    foreach(arch IN LISTS ARG_ARCHS)
      foreach(module IN LISTS JAX_AITER_OP_${op}_KERNELS)
        jax_aiter_compile_kernels(co "${module}.kernel.cpp" "${arch}")
        if(co)
          _jax_aiter_add("${module}" "${arch}" kOurs "${co}")
        endif()
      endforeach()
      foreach(family IN LISTS JAX_AITER_OP_${op}_AITER)
        jax_aiter_family_code_objects(paths "${family}" "${arch}")
        if(JAX_AITER_AITER_ROOT AND arch MATCHES "^gfx")
          foreach(path IN LISTS paths)
            set(file "${JAX_AITER_AITER_ROOT}/hsa/${arch}/${path}")
            if(NOT EXISTS "${file}")
              message(FATAL_ERROR "jax_aiter: ${file} not found in JAX_AITER_AITER_ROOT")
            endif()
            _jax_aiter_add("${path}" "${arch}" kAiter "${file}")
          endforeach()
        endif()
        if(arch STREQUAL "sm_90" OR ARG_TWINS)
          jax_aiter_compile_kernels(twin "${family}.twin.cpp" "${arch}")
          if(twin)
            foreach(path IN LISTS paths)
              _jax_aiter_add("${path}" "${arch}" kTwin "${twin}")
            endforeach()
          endif()
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(count EQUAL 0)
    message(STATUS "jax_aiter: nothing to embed into ${target}")
    return()
  endif()
  file(GENERATE OUTPUT "${cpp}" CONTENT
"// Generated by jax_aiter_embed_kernels(${target}); do not edit.
#include <jax_aiter/runtime/code_objects.hpp>
__asm__(\"  .section .rodata.jax_aiter,\\\"a\\\",@progbits\\n\"
${asm}  \"  .previous\\n\");
extern \"C\" {
${decls}}
namespace {
const ::jax_aiter::runtime::EmbeddedCodeObject kCodeObjects[] = {
${table}};
const ::jax_aiter::runtime::CodeObjectRegistrar kRegistrar{kCodeObjects};
}  // namespace
")
  # The blobs are built before the source that includes them is compiled.
  add_custom_target(${ident}_jax_aiter_code_objects DEPENDS ${files})
  add_dependencies(${target} ${ident}_jax_aiter_code_objects)
  set_source_files_properties("${cpp}" PROPERTIES OBJECT_DEPENDS "${files}" GENERATED TRUE)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    target_sources(${target} INTERFACE "${cpp}")
  else()
    target_sources(${target} PRIVATE "${cpp}")
  endif()
endfunction()
