# cmake -DCC=<compiler> -DSRC=<file.c> -DINC=<include dir> "-DFLAGS=<flags>" \
#       -P check_vectorized.cmake
# Compiles SRC with -fopt-info-vec-optimized and fails unless GCC reports a vectorized loop
# on every line of SRC that ends in the comment VEC (between comment delimiters).
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(
  COMMAND ${CC} ${flags} -fopt-info-vec-optimized -I${INC} -c ${SRC} -o /dev/null
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${SRC} failed:\n${err}")
endif()
# One list element per line: blank out what CMake lists treat specially (; [ ] \) first.
file(READ ${SRC} content)
string(REGEX REPLACE "[][;\\]" "_" content "${content}")
string(REPLACE "\n" ";" lines "${content}")
set(line 0)
set(missing "")
set(checked 0)
foreach(text IN LISTS lines)
  math(EXPR line "${line} + 1")
  if(text MATCHES "/\\* VEC \\*/$")
    math(EXPR checked "${checked} + 1")
    if(NOT "${out}${err}" MATCHES ":${line}:[0-9]+: optimized: loop vectorized")
      string(APPEND missing " ${line}")
    endif()
  endif()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no line of ${SRC} is marked VEC")
endif()
if(missing)
  message(FATAL_ERROR "loops not vectorized at ${SRC} lines:${missing}\n${out}${err}")
endif()
message(STATUS "${checked} loops vectorized")
