# Writes OUT, a C++ header naming the values of cuBLASLt's tile, stages, cluster-shape and
# inner-shape enums, read from HEADER (the toolkit's cublasLt.h). Generated rather than
# typed in so that a newer cuBLASLt's new tiles get readable names by rebuilding.
file(READ "${HEADER}" text)

# emit(VAR PREFIX REGEX): appends `{value, "name"},` for every `PREFIX<name> = <value>`.
function(emit out_var array prefix name_regex)
  string(REGEX MATCHALL "${prefix}${name_regex} = [0-9]+" hits "${text}")
  set(body "static const EnumName ${array}[] = {\n")
  set(n 0)
  foreach(h ${hits})
    string(REGEX REPLACE "${prefix}(${name_regex}) = ([0-9]+)" "\\1;\\2" pair "${h}")
    list(GET pair 0 name)
    list(GET pair 1 value)
    string(APPEND body "    {${value}, \"${name}\"},\n")
    math(EXPR n "${n} + 1")
  endforeach()
  if(n EQUAL 0)
    message(FATAL_ERROR "no ${prefix}* values found in ${HEADER}")
  endif()
  string(APPEND body "};\n")
  set(${out_var} "${${out_var}}${body}" PARENT_SCOPE)
endfunction()

set(out "// generated from ${HEADER} by enum_names.cmake; do not edit\n#pragma once\n\n")
string(APPEND out "struct EnumName {\n  int value;\n  const char* name;\n};\n\n")
emit(out k_tile_names "CUBLASLT_MATMUL_TILE_" "[0-9]+x[0-9]+")
emit(out k_stages_names "CUBLASLT_MATMUL_STAGES_" "[0-9]+x[0-9A-Z]+")
emit(out k_cluster_names "CUBLASLT_CLUSTER_SHAPE_" "[0-9]+x[0-9]+x[0-9]+")
emit(out k_inner_names "CUBLASLT_MATMUL_INNER_SHAPE_" "MMA[0-9]+")

file(WRITE "${OUT}.tmp" "${out}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
