# The AITER families' row tables: one CSV per list of rows (AITER's own style), the one source that
# C++, CMake and Python read.
#
#   include/jax_aiter/kernels/shared/<family>.csv         a family with one list of rows
#   include/jax_aiter/kernels/shared/<family>.<list>.csv  a family with several (aiter_fmha_v3)
#
# The first line names the columns. Every column is a C token (an identifier or an integer) except
# code_object, the code object's path under hsa/<arch>/, and every family's last two columns are
# on_gfx942 and on_gfx950 (1: AITER ships the row for that arch). What the other columns mean is
# said beside the rows' C++ users, in include/jax_aiter/kernels/shared/<family>.h.
#
# Readers:
#   C++          <family>.rows.h, generated from the CSVs by jax_aiter_rows_header() below and
#                committed (header-only consumers need no generation step): one X-macro per list,
#                JAX_AITER_<FAMILY>[_<LIST>]_ROWS(X), which <family>.h includes; host tables and
#                the kernel sources (clang-22, nvcc) expand it (a list with two rows of one
#                symbol on one arch also gets <MACRO>_UNIQUE[_GFX942|_GFX950]: each symbol once,
#                for the twin sources). After editing a CSV, regenerate
#                (below) and commit both: configuring warns of a stale header and the test
#                rows_headers_current fails on one.
#   CMake        jax_aiter_rows_column() (the code objects jax_aiter_embed_kernels() embeds).
#   Python       csv.DictReader (tests/cpp/data/check_twin_kernargs.py).
#
#   cmake -P cmake/JaxAiterRows.cmake             rewrites every stale <family>.rows.h
#   cmake -DCHECK=ON -P cmake/JaxAiterRows.cmake  fails, naming them, if any is stale

if(NOT DEFINED JAX_AITER_ROWS_DIR)
  set(JAX_AITER_ROWS_DIR "${CMAKE_CURRENT_LIST_DIR}/../include/jax_aiter/kernels/shared")
endif()
get_filename_component(JAX_AITER_ROWS_DIR "${JAX_AITER_ROWS_DIR}" ABSOLUTE)

# The CSV files of a family, in a stated order (the family's own file, then its lists by name).
function(jax_aiter_rows_files out_var family)
  file(GLOB lists "${JAX_AITER_ROWS_DIR}/${family}.*.csv")
  list(SORT lists)
  set(files "")
  if(EXISTS "${JAX_AITER_ROWS_DIR}/${family}.csv")
    list(APPEND files "${JAX_AITER_ROWS_DIR}/${family}.csv")
  endif()
  list(APPEND files ${lists})
  if(NOT files)
    message(FATAL_ERROR "jax_aiter: AITER family '${family}' has no rows "
                        "(${JAX_AITER_ROWS_DIR}/${family}.csv)")
  endif()
  set(${out_var} "${files}" PARENT_SCOPE)
endfunction()

# Reads one CSV: <prefix>_COLUMNS (the names), <prefix>_COUNT, and <prefix>_<i> (row i's cells as a
# list, i from 0). Every cell is checked: a C token, or for code_object a plain path.
function(jax_aiter_rows_read prefix csv)
  file(STRINGS "${csv}" lines)
  list(POP_FRONT lines header)
  string(REPLACE "," ";" columns "${header}")
  list(LENGTH columns width)
  list(FIND columns code_object path_column)
  set(count 0)
  foreach(line IN LISTS lines)
    if(line STREQUAL "")
      continue()
    endif()
    string(REPLACE "," ";" cells "${line}")
    list(LENGTH cells n)
    if(NOT n EQUAL width)
      message(FATAL_ERROR "jax_aiter: ${csv}: row ${count} has ${n} cells, the header ${width}")
    endif()
    set(i 0)
    foreach(cell IN LISTS cells)
      if(i EQUAL path_column)
        set(ok_pattern "^[A-Za-z0-9_./-]+$")
      else()
        set(ok_pattern "^[A-Za-z0-9_]+$")
      endif()
      if(NOT cell MATCHES "${ok_pattern}")
        list(GET columns ${i} column)
        message(FATAL_ERROR "jax_aiter: ${csv}: row ${count}, column ${column}: '${cell}' is not "
                            "a C token (or, for code_object, a path)")
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
    set(${prefix}_${count} "${cells}" PARENT_SCOPE)
    math(EXPR count "${count} + 1")
  endforeach()
  set(${prefix}_COLUMNS "${columns}" PARENT_SCOPE)
  set(${prefix}_COUNT ${count} PARENT_SCOPE)
endfunction()

# The values of one column over every row of every list of a family, in order.
function(jax_aiter_rows_column out_var family column)
  jax_aiter_rows_files(files "${family}")
  set(values "")
  foreach(csv IN LISTS files)
    jax_aiter_rows_read(_r "${csv}")
    list(FIND _r_COLUMNS "${column}" c)
    if(c EQUAL -1)
      message(FATAL_ERROR "jax_aiter: ${csv} has no column '${column}'")
    endif()
    if(_r_COUNT GREATER 0)
      math(EXPR last "${_r_COUNT} - 1")
      foreach(r RANGE ${last})
        list(GET _r_${r} ${c} value)
        list(APPEND values "${value}")
      endforeach()
    endif()
  endforeach()
  set(${out_var} "${values}" PARENT_SCOPE)
endfunction()

# The X-macro name of one CSV: aiter_fmha_v3.bwd_odo.csv -> JAX_AITER_FMHA_V3_BWD_ODO_ROWS.
function(jax_aiter_rows_macro out_var csv)
  get_filename_component(name "${csv}" NAME)
  string(REGEX REPLACE "\\.csv$" "" name "${name}")
  string(REGEX REPLACE "^aiter_" "" name "${name}")
  string(REPLACE "." "_" name "${name}")
  string(TOUPPER "${name}" name)
  set(${out_var} "JAX_AITER_${name}_ROWS" PARENT_SCOPE)
endfunction()

# The text of one X-macro `macro` over the rows `indices` of the CSV read into _r (a row per
# X(...), wrapped within 100 columns), then a blank line.
function(_jax_aiter_rows_macro_text out_var macro path_column indices)
  set(text "#define ${macro}(X)")
  foreach(r IN LISTS indices)
    # A row: "  X(" cells joined by ", ", broken before a cell that would take the line (with its
    # ", \" or ") \" ending) past column 100; continuation lines indented by 4.
    string(APPEND text " \\\n")
    set(line "  X(")
    set(i 0)
    foreach(cell IN LISTS _r_${r})
      if(i EQUAL path_column)
        set(cell "\"${cell}\"")
      endif()
      if(i GREATER 0)
        string(LENGTH "${line}, ${cell}" width)
        if(width GREATER 97)
          string(APPEND text "${line}, \\\n")
          set(line "    ${cell}")
        else()
          set(line "${line}, ${cell}")
        endif()
      else()
        set(line "${line}${cell}")
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
    string(APPEND text "${line})")
  endforeach()
  string(APPEND text "\n\n")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# The text of <family>.rows.h: one X-macro per CSV, a row per X(...), wrapped within 100 columns;
# where a CSV has two rows of one symbol on one arch, also its rows with each symbol once
# (<MACRO>_UNIQUE over both archs, <MACRO>_UNIQUE_GFX942 and _GFX950 per arch).
function(jax_aiter_rows_header out_var family)
  jax_aiter_rows_files(files "${family}")
  set(source "${family}.csv")
  list(LENGTH files n)
  if(n GREATER 1)
    set(source "${family}.*.csv")
  endif()
  string(CONCAT text
         "// Generated by cmake/JaxAiterRows.cmake from ${source}: edit the CSV, not this\n"
         "// file (configuring the project rewrites it; the test rows_headers_current checks it).\n"
         "// The columns are the CSV's (its first line), said in ${family}.h.\n"
         "#pragma once\n\n// clang-format off\n")
  foreach(csv IN LISTS files)
    jax_aiter_rows_read(_r "${csv}")
    jax_aiter_rows_macro(macro "${csv}")
    list(FIND _r_COLUMNS code_object path_column)
    set(all "")
    if(_r_COUNT GREATER 0)
      math(EXPR last "${_r_COUNT} - 1")
      foreach(r RANGE ${last})
        list(APPEND all ${r})
      endforeach()
    endif()
    _jax_aiter_rows_macro_text(rows_text "${macro}" "${path_column}" "${all}")
    string(APPEND text "${rows_text}")
    # Where a symbol has two rows on one arch (one kernel in two lists), which no preprocessor test
    # of a row's own columns can tell apart, the rows with each symbol once, for the twin sources
    # (a code object defines a symbol once): per arch, the first row of each symbol on it; and
    # over both archs (one sm_90 cubin stands in for both), the first row of each symbol.
    list(FIND _r_COLUMNS symbol symbol_column)
    list(FIND _r_COLUMNS on_gfx942 gfx942_column)
    list(FIND _r_COLUMNS on_gfx950 gfx950_column)
    if(symbol_column GREATER -1 AND gfx942_column GREATER -1 AND gfx950_column GREATER -1)
      set(seen "")
      set(seen_gfx942 "")
      set(seen_gfx950 "")
      set(once "")
      set(once_gfx942 "")
      set(once_gfx950 "")
      set(repeated FALSE)
      foreach(r IN LISTS all)
        list(GET _r_${r} ${symbol_column} symbol)
        list(FIND seen ${symbol} at)  # (not IN_LIST: this file also runs as a script)
        if(at EQUAL -1)
          list(APPEND seen ${symbol})
          list(APPEND once ${r})
        endif()
        foreach(arch gfx942 gfx950)
          list(GET _r_${r} ${${arch}_column} built)
          list(FIND seen_${arch} ${symbol} at)
          if(built EQUAL 1 AND at GREATER -1)
            set(repeated TRUE)
          elseif(built EQUAL 1)
            list(APPEND seen_${arch} ${symbol})
            list(APPEND once_${arch} ${r})
          endif()
        endforeach()
      endforeach()
      if(repeated)
        foreach(suffix "" _GFX942 _GFX950)
          string(TOLOWER "${suffix}" arch)
          string(REPLACE "_" "" arch "${arch}")
          set(picked "${once}")
          if(arch)
            set(picked "${once_${arch}}")
          endif()
          _jax_aiter_rows_macro_text(rows_text "${macro}_UNIQUE${suffix}" "${path_column}"
                                     "${picked}")
          string(APPEND text "${rows_text}")
        endforeach()
      endif()
    endif()
  endforeach()
  string(APPEND text "// clang-format on\n")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# Every family with rows: the CSVs' names up to the first dot.
function(jax_aiter_rows_families out_var)
  file(GLOB csvs RELATIVE "${JAX_AITER_ROWS_DIR}" "${JAX_AITER_ROWS_DIR}/*.csv")
  set(families "")
  foreach(csv IN LISTS csvs)
    string(REGEX REPLACE "\\..*$" "" family "${csv}")
    list(APPEND families "${family}")
  endforeach()
  list(REMOVE_DUPLICATES families)
  list(SORT families)
  set(${out_var} "${families}" PARENT_SCOPE)
endfunction()

# Writes every <family>.rows.h whose text differs from its CSVs' (check: only finds them).
# Returns the stale headers' names in out_var.
function(jax_aiter_rows_update out_var check)
  jax_aiter_rows_families(families)
  set(stale "")
  foreach(family IN LISTS families)
    jax_aiter_rows_header(text "${family}")
    set(header "${JAX_AITER_ROWS_DIR}/${family}.rows.h")
    set(old "")
    if(EXISTS "${header}")
      file(READ "${header}" old)
    endif()
    if(NOT old STREQUAL text)
      list(APPEND stale "${family}.rows.h")
      if(NOT check)
        file(WRITE "${header}" "${text}")
      endif()
    endif()
  endforeach()
  set(${out_var} "${stale}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  jax_aiter_rows_update(stale "${CHECK}")
  if(stale AND CHECK)
    message(FATAL_ERROR "jax_aiter: stale row headers (their CSVs changed): ${stale}; run "
                        "cmake -P cmake/JaxAiterRows.cmake and commit them")
  elseif(stale)
    message(STATUS "jax_aiter: rewrote ${stale}")
  endif()
endif()
