# coil_cpu_math.h: the branch-free float math the CPU backend copies into every generated
# kernel. Its test and benchmark are compiled the way generated code is (-std=gnu11 -O3
# -march=native -fno-math-errno, with OpenMP's simd pragmas), so that they measure the
# vectorized code, FMA contraction included. Included from plugins/cpu/CMakeLists.txt; paths
# are spelled from CMAKE_SOURCE_DIR so that it does not matter which directory includes it.
set(COIL_CPU_MATH_DIR ${CMAKE_SOURCE_DIR}/plugins/cpu)
set(COIL_CPU_MATH_FLAGS -O3 -march=native -fopenmp-simd -fno-math-errno)
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  # clang warns of every simd loop it leaves scalar (all of them under the sanitizers); GCC,
  # which compiles the generated kernels, is checked by cpu_math_vectorized_* below instead
  list(APPEND COIL_CPU_MATH_FLAGS -Wno-pass-failed)
endif()

# bench_cpu_math: ns/element against libm (run it by hand; see the file's header). GCC lists
# the loops it vectorized while compiling it.
add_executable(bench_cpu_math ${COIL_CPU_MATH_DIR}/tests/bench_cpu_math.c)
target_include_directories(bench_cpu_math PRIVATE ${COIL_CPU_MATH_DIR})
target_compile_options(bench_cpu_math PRIVATE ${COIL_CPU_MATH_FLAGS})
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  target_compile_options(bench_cpu_math PRIVATE -fopt-info-vec-optimized)
endif()
set_target_properties(bench_cpu_math PROPERTIES C_EXTENSIONS ON)
target_link_libraries(bench_cpu_math PRIVATE m)

if(COIL_TESTS)
  coil_add_test(cpu_math ${COIL_CPU_MATH_DIR}/tests/test_cpu_math.c m)
  target_include_directories(cpu_math PRIVATE ${COIL_CPU_MATH_DIR})
  target_compile_options(cpu_math PRIVATE ${COIL_CPU_MATH_FLAGS})
  set_target_properties(cpu_math PROPERTIES C_EXTENSIONS ON)

  # cpu_math_nofma: the same checks on the code path for CPUs without FMA (FP_FAST_FMAF
  # undefined: unfused polynomials, a five-part pi/2), in coarser steps.
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|i.86")
    coil_add_test(cpu_math_nofma ${COIL_CPU_MATH_DIR}/tests/test_cpu_math.c m)
    target_include_directories(cpu_math_nofma PRIVATE ${COIL_CPU_MATH_DIR})
    target_compile_options(cpu_math_nofma PRIVATE ${COIL_CPU_MATH_FLAGS} -mno-avx512f -mno-fma)
    target_compile_definitions(cpu_math_nofma PRIVATE STRIDE=997 DENSE=7)
    set_target_properties(cpu_math_nofma PROPERTIES C_EXTENSIONS ON)
  endif()

  # cpu_math_vectorized_<arch>: every loop of bench_cpu_math.c marked VEC must be
  # vectorized (a select or call that GCC cannot if-convert would silently leave a kernel
  # scalar), for this machine and, on x86, for AVX2 and plain SSE2, where GCC has no masked
  # operations to fall back on. The check reads GCC's -fopt-info, so a build with another
  # compiler (CI's clang sanitizer build) leaves it to the GCC build.
  set(COIL_CPU_MATH_ARCHS native)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
    set(COIL_CPU_MATH_ARCHS "")
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    list(APPEND COIL_CPU_MATH_ARCHS x86-64-v3 x86-64)
  endif()
  foreach(arch IN LISTS COIL_CPU_MATH_ARCHS)
    add_test(NAME cpu_math_vectorized_${arch}
      COMMAND ${CMAKE_COMMAND}
        -DCC=${CMAKE_C_COMPILER} -DSRC=${COIL_CPU_MATH_DIR}/tests/bench_cpu_math.c
        -DINC=${COIL_CPU_MATH_DIR}
        "-DFLAGS=-std=gnu11 -O3 -march=${arch} -fopenmp-simd -fno-math-errno"
        -P ${COIL_CPU_MATH_DIR}/tests/check_vectorized.cmake)
  endforeach()
endif()
