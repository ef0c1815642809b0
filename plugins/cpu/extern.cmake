# The cpu plugin's library-call runtime (cpu_extern.h): matmul and convolution through OpenBLAS,
# the other extern ops as OpenMP loops. Included from plugins/cpu/CMakeLists.txt.
find_package(OpenMP REQUIRED)
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
if(OPENBLAS_FOUND)
  set(COIL_OPENBLAS PkgConfig::OPENBLAS)
else() # no openblas.pc: look for the library and cblas.h by hand
  find_library(COIL_OPENBLAS_LIB NAMES openblas REQUIRED)
  find_path(COIL_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas openblas-pthread REQUIRED)
  add_library(coil_openblas INTERFACE)
  target_link_libraries(coil_openblas INTERFACE ${COIL_OPENBLAS_LIB})
  target_include_directories(coil_openblas INTERFACE ${COIL_CBLAS_INCLUDE})
  set(COIL_OPENBLAS coil_openblas)
endif()

add_library(coil_cpu_extern STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cpu_extern.c ${CMAKE_CURRENT_LIST_DIR}/cpu_extern_index.c)
set_target_properties(coil_cpu_extern PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(coil_cpu_extern PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(coil_cpu_extern PUBLIC coil_wir ${COIL_OPENBLAS} OpenMP::OpenMP_C m)

if(COIL_TESTS)
  coil_add_test(cpu_extern ${CMAKE_CURRENT_LIST_DIR}/tests/test_cpu_extern.c coil_cpu_extern)
endif()
