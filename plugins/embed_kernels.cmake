# Writes OUT, a C++ header holding each file of KERNELS ('|'-separated) as a string
# constant named k_<file stem>, for NVRTC to compile at run time.
#
# What NVRTC gets is one self-contained text: an `#include` of the plugin kit's kernel headers
# (<gemmtune/NAME>, from core/include) or of a file beside the including one ("NAME") is
# replaced by that file, once per file (they are include-guarded anyway), with #line markers
# so that compiler messages name the file and line they come from. Other includes (the CUDA
# headers) are left for NVRTC. So a family may keep its kernel in several files, and the
# family's source hash and every build's fingerprint cover all of them.
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST) in script mode
string(REPLACE "|" ";" files "${KERNELS}")
get_filename_component(kit_include_dir "${CMAKE_CURRENT_LIST_DIR}/../core/include" ABSOLUTE)

# The file named by an include line's target, or "" when the line is left for NVRTC.
function(gt_include_target line from_dir out)
  set(${out} "" PARENT_SCOPE)
  if(line MATCHES "^#include[ \t]*[<\"](gemmtune/[^>\"]+)[>\"]")
    set(${out} "${kit_include_dir}/${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(line MATCHES "^#include[ \t]*\"([^\"]+)\"" AND EXISTS "${from_dir}/${CMAKE_MATCH_1}")
    set(${out} "${from_dir}/${CMAKE_MATCH_1}" PARENT_SCOPE)
  endif()
endfunction()

# `file`'s text with its inlinable includes replaced (recursively); `shown` is its name in
# #line markers. A file already inlined (the global `gt_inlined`) leaves only a marker.
function(gt_inline file shown depth out)
  if(depth GREATER 8)
    message(FATAL_ERROR "${file}: includes nest deeper than 8 (a cycle?)")
  endif()
  file(READ "${file}" rest)
  get_filename_component(dir "${file}" DIRECTORY)
  string(REGEX MATCHALL "(^|\n)#include[ \t]*[<\"][^\n]*" lines "${rest}")
  set(result "")
  set(lineno 1)  # the line `rest` starts on
  foreach(raw ${lines})
    string(STRIP "${raw}" line)
    # Where the line starts (at a line's start, not in a comment), in what is left of the file.
    string(FIND "\n${rest}" "\n${line}" at)
    string(SUBSTRING "${rest}" 0 ${at} before)
    string(LENGTH "${line}" len)
    math(EXPR past "${at} + ${len}")
    string(SUBSTRING "${rest}" ${past} -1 rest)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines n)
    math(EXPR lineno "${lineno} + ${n}")
    math(EXPR resume "${lineno} + 1")
    gt_include_target("${line}" "${dir}" target)
    if(target STREQUAL "")
      string(APPEND result "${before}${line}")
      continue()
    endif()
    if(NOT EXISTS "${target}")
      message(FATAL_ERROR "${file}:${lineno}: ${line}: no such file ${target}")
    endif()
    get_property(done GLOBAL PROPERTY gt_inlined)
    set(text "")
    if(NOT "${target}" IN_LIST done)
      set_property(GLOBAL APPEND PROPERTY gt_inlined "${target}")
      file(RELATIVE_PATH name "${kit_include_dir}" "${target}")
      if(NOT name MATCHES "^gemmtune/")
        get_filename_component(name "${target}" NAME)
      endif()
      math(EXPR deeper "${depth} + 1")
      gt_inline("${target}" "${name}" ${deeper} text)
      if(NOT text MATCHES "\n$")
        string(APPEND text "\n")
      endif()
      set(text "#line 1 \"${name}\"\n${text}")
    endif()
    string(APPEND result "${before}${text}#line ${resume} \"${shown}\"")
  endforeach()
  string(APPEND result "${rest}")
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

set(text "// generated from the kernel sources of this plugin; do not edit\n#pragma once\n")
foreach(f ${files})
  get_filename_component(stem ${f} NAME_WE)
  get_filename_component(fname ${f} NAME)
  set_property(GLOBAL PROPERTY gt_inlined "")
  gt_inline("${f}" "${fname}" 0 content)
  string(FIND "${content}" ")GTSRC\"" bad)
  if(NOT bad EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter )GTSRC\"")
  endif()
  string(APPEND text "static const char k_${stem}[] = R\"GTSRC(${content})GTSRC\";\n")
  string(APPEND text "static const char k_${stem}_name[] = \"${fname}\";\n")
endforeach()
file(WRITE ${OUT}.tmp "${text}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
