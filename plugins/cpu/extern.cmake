# The cpu plugin's library-call runtime (cpu_extern.h): matmul and convolution through OpenBLAS,
# the other extern ops as OpenMP loops. Included from plugins/cpu/CMakeLists.txt.
find_package(OpenMP REQUIRED)
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
# Only cblas.h is used at build time: cpu_extern.c dlopens libopenblas.so.0 when the first matmul
# or convolution runs (loading it starts OpenBLAS's threads; see the comment there).
if(OPENBLAS_FOUND)
  set(COIL_CBLAS_INCLUDE ${OPENBLAS_INCLUDE_DIRS})
else() # no openblas.pc: look for cblas.h by hand
  find_path(COIL_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas openblas-pthread REQUIRED)
endif()

add_library(coil_cpu_extern STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cpu_extern.c ${CMAKE_CURRENT_LIST_DIR}/cpu_extern_index.c)
set_target_properties(coil_cpu_extern PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(coil_cpu_extern PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_include_directories(coil_cpu_extern PRIVATE ${COIL_CBLAS_INCLUDE})
find_package(Threads REQUIRED)
target_link_libraries(coil_cpu_extern PUBLIC coil_wir OpenMP::OpenMP_C Threads::Threads m ${CMAKE_DL_LIBS})

if(COIL_TESTS)
  coil_add_test(cpu_extern ${CMAKE_CURRENT_LIST_DIR}/tests/test_cpu_extern.c coil_cpu_extern)
endif()
