# coilPluginHelpers.cmake — coil_add_plugin(), the one way a coil backend plugin is built: in
# this tree (plugin-sdk/CMakeLists.txt includes this file) and out of it (the installed
# coilConfig.cmake includes its installed copy, after the imported targets coil::*).
#
# coil_add_plugin(TARGET tgt NAME name SOURCES src... [OUTPUT_DIRECTORY dir])
# Builds the plugin NAME as libcoil_NAME.so, a MODULE library (only ever dlopen'd), into dir
# (default: ${COIL_PLUGIN_OUTPUT_DIRECTORY} when that is set, as it is in coil's own build, to
# build/plugins; otherwise CMake's usual place, the current binary directory). Only
# coil_plugin_entry is exported: sources are built with hidden visibility and the static
# libraries linked in (coil::wir, coil::sdk) keep their symbols local, so two plugins, or a
# plugin and the host, never bind to each other's copies. The target links coil::plugin_sdk
# (the ABI header and the Wrapper IR); link coil::sdk yourself for the SDK helpers.
function(coil_add_plugin)
  cmake_parse_arguments(P "" "TARGET;NAME;OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT P_TARGET OR NOT P_NAME OR NOT P_SOURCES)
    message(FATAL_ERROR "coil_add_plugin: TARGET, NAME and SOURCES are required")
  endif()
  if(NOT P_NAME MATCHES "^[a-z0-9_-]+$")
    message(FATAL_ERROR "coil_add_plugin: NAME '${P_NAME}' is not a plugin name ([a-z0-9_-]+)")
  endif()
  if(NOT P_OUTPUT_DIRECTORY AND COIL_PLUGIN_OUTPUT_DIRECTORY)
    set(P_OUTPUT_DIRECTORY ${COIL_PLUGIN_OUTPUT_DIRECTORY})
  endif()
  add_library(${P_TARGET} MODULE ${P_SOURCES})
  set_target_properties(${P_TARGET} PROPERTIES
    PREFIX "lib" OUTPUT_NAME coil_${P_NAME} SUFFIX ".so"
    C_VISIBILITY_PRESET hidden)
  if(P_OUTPUT_DIRECTORY)
    set_target_properties(${P_TARGET} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIRECTORY})
  endif()
  target_link_libraries(${P_TARGET} PRIVATE coil::plugin_sdk)
  target_link_options(${P_TARGET} PRIVATE "LINKER:--exclude-libs,ALL")
endfunction()
