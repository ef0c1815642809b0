# install.cmake — what `cmake --install BUILD --prefix P` puts in P, and the CMake package that
# lets a plugin be built outside this tree against P (find_package(coil), coilConfig.cmake.in):
#
#   bin/coil, bin/coil-conformance          the tools
#   lib/coil/plugins/libcoil_{interp,cpu,cuda,hip,fx}.so the in-tree plugins (never the test plugins)
#   include/coil/                           the SDK headers: coil_plugin.h, coil_sdk.h and the
#                                           Wrapper IR headers they include
#   lib/libcoil_wir.a, lib/libcoil_sdk.a    static and PIC: a plugin links them in
#   lib/cmake/coil/                         coilConfig.cmake, its version file, the exported
#                                           targets coil::{wir,sdk,plugin_sdk}, coil_add_plugin
# The SDK's lib/ is CMAKE_INSTALL_LIBDIR (lib64 or lib/<multiarch> on some systems); the plugin
# directory is always lib/coil/plugins (COIL_INSTALL_PLUGINDIR), the one tools/coil.c names for
# an installed coil.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COIL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/coil)
set(COIL_INSTALL_PLUGINDIR lib/coil/plugins CACHE STRING
    "Where the plugins are installed, relative to the prefix")

# ---- the plugin SDK ----
install(DIRECTORY ${PROJECT_SOURCE_DIR}/wrapper-ir/include/coil
                  ${PROJECT_SOURCE_DIR}/plugin-sdk/include/coil
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(TARGETS coil_wir coil_sdk coil_plugin_sdk EXPORT coilTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT coilTargets NAMESPACE coil:: DESTINATION ${COIL_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/coilConfig.cmake.in
  ${PROJECT_BINARY_DIR}/coilConfig.cmake
  INSTALL_DESTINATION ${COIL_INSTALL_CMAKEDIR})
# 0.x: a new minor version may change the SDK, so only the same major.minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/coilConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/coilConfig.cmake ${PROJECT_BINARY_DIR}/coilConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/coilPluginHelpers.cmake
        DESTINATION ${COIL_INSTALL_CMAKEDIR})

# ---- tools and plugins ----
install(TARGETS coil RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET coil_conformance) # conformance/ may not define it yet
  install(TARGETS coil_conformance RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(TARGETS coil_plugin_interp coil_plugin_cpu coil_plugin_cuda coil_plugin_hip coil_plugin_fx
        LIBRARY DESTINATION ${COIL_INSTALL_PLUGINDIR})
install(TARGETS coil_cuda_tune coil_hip_tune RUNTIME DESTINATION ${COIL_INSTALL_PLUGINDIR}) # found beside libcoil_cuda.so, libcoil_hip.so
if(TARGET coil_cpu_llvm) # found beside libcoil_cpu.so, with its compile worker
  install(TARGETS coil_cpu_llvm LIBRARY DESTINATION ${COIL_INSTALL_PLUGINDIR})
  install(TARGETS coil_cpu_llvm_worker RUNTIME DESTINATION ${COIL_INSTALL_PLUGINDIR})
endif()

# ---- the conformance suite's data: coil-conformance finds <prefix>/share/coil/conformance/models ----
install(DIRECTORY ${PROJECT_SOURCE_DIR}/conformance/models DESTINATION ${CMAKE_INSTALL_DATADIR}/coil/conformance)

# ---- the Python package (tools/python, built by scikit-build-core, which sets SKBUILD) ----
# Component "python" only (pyproject.toml installs no other): inside the package's directory,
#   coil/lib/libcoil.so            the embedding API (coil/embed.h) the package loads with ctypes
#   coil/lib/coil/plugins/         the plugins: where libcoil.so and bin/coil look beside them
#   coil/bin/coil                  the command line tool (`coil run DIR` on an AOT artifact)
# The system libraries they need (cJSON, inih, xxHash, libsodium) are the system's.
if(SKBUILD)
  set(COIL_PYTHON_PACKAGE_DEFAULT ON)
else()
  set(COIL_PYTHON_PACKAGE_DEFAULT OFF)
endif()
option(COIL_PYTHON_PACKAGE "Install the Python package's native parts (component python)" ${COIL_PYTHON_PACKAGE_DEFAULT})
if(COIL_PYTHON_PACKAGE)
  install(TARGETS coil_shared LIBRARY DESTINATION coil/lib COMPONENT python)
  # every target here is in tools/python/pyproject.toml's build.targets (the package builds only those)
  install(TARGETS coil_plugin_interp coil_plugin_cpu coil_plugin_cuda coil_plugin_hip coil_plugin_fx
          LIBRARY DESTINATION coil/lib/coil/plugins COMPONENT python)
  install(TARGETS coil_cuda_tune coil_hip_tune RUNTIME DESTINATION coil/lib/coil/plugins COMPONENT python)
  if(TARGET coil_cpu_llvm)
    install(TARGETS coil_cpu_llvm LIBRARY DESTINATION coil/lib/coil/plugins COMPONENT python)
    install(TARGETS coil_cpu_llvm_worker RUNTIME DESTINATION coil/lib/coil/plugins COMPONENT python)
  endif()
  install(TARGETS coil RUNTIME DESTINATION coil/bin COMPONENT python)
endif()
