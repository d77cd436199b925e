# Install rules and the CMake/pkg-config package of rill. Included at the end of
# the top-level CMakeLists.txt, after every target exists (install(TARGETS) of
# targets defined in other folders needs CMake >= 3.13).
#
# Layout under the prefix:
#   include/rill.h, rill_backend.h, rill.hpp
#   <libdir>/librill.so.<major> (+ the librill.so link), librill-<backend>.so plugins
#     beside it, where the runtime's loader looks by default
#   bin/rill
#   <libdir>/cmake/rill/rillConfig.cmake, rillConfigVersion.cmake, rillTargets*.cmake
#   <libdir>/pkgconfig/rill.pc
include(CMakePackageConfigHelpers)

set(RILL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/rill" CACHE STRING
    "Where rillConfig.cmake is installed, relative to the prefix")

install(TARGETS rill EXPORT rillTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES
  ${PROJECT_SOURCE_DIR}/include/rill.h
  ${PROJECT_SOURCE_DIR}/include/rill_backend.h
  ${PROJECT_SOURCE_DIR}/include/rill.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Plugins exist only when their options are on. They go beside librill, the
# folder the loader searches after plugin_dir and RILL_PLUGIN_PATH.
# Installed plugins keep the run-time path of the libraries they link from
# outside the build tree (the CUDA toolkit's libcudart and libcublasLt, when it
# is not on the system's library path).
foreach(_rill_plugin rill_backend_vulkan rill_backend_cuda)
  if(TARGET ${_rill_plugin})
    set_target_properties(${_rill_plugin} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
    install(TARGETS ${_rill_plugin} LIBRARY DESTINATION ${RILL_INSTALL_PLUGINDIR})
  endif()
endforeach()

if(TARGET rill_cli)
  # The tool finds the librill installed beside it wherever the prefix lands.
  file(RELATIVE_PATH _rill_bin_to_lib "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(rill_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${_rill_bin_to_lib}")
  install(TARGETS rill_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT rillTargets NAMESPACE rill:: DESTINATION ${RILL_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/rillConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rillConfig.cmake
  INSTALL_DESTINATION ${RILL_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rillConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rillConfig.cmake ${PROJECT_BINARY_DIR}/rillConfigVersion.cmake
  DESTINATION ${RILL_INSTALL_CMAKEDIR})

# rill.pc finds its prefix relative to its own folder, so an install tree that
# is moved (or installed with `cmake --install --prefix`) stays usable.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "rill: CMAKE_INSTALL_LIBDIR must be relative to the prefix, got ${CMAKE_INSTALL_LIBDIR}")
endif()
file(RELATIVE_PATH RILL_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(${CMAKE_CURRENT_LIST_DIR}/rill.pc.in ${PROJECT_BINARY_DIR}/rill.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rill.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
