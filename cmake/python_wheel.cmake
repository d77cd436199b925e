# What the Python wheel holds (pyproject.toml; scikit-build-core installs only
# the component "python"): librill, the backend plugins that were built and
# the rill tool, all in the package folder rill/ beside the ctypes binding.
# The binding loads librill from there first, librill's loader finds the
# plugins beside itself, and the tool finds librill beside itself ($ORIGIN).
# Included by the top-level CMakeLists.txt when scikit-build-core runs CMake
# (it defines SKBUILD), after install.cmake.

# A wheel is a zip, which stores a symbolic link as a second copy: librill is
# one file there, named by its SONAME (librill.so.0), the name the tool and
# the binding ask for.
if(NOT WIN32)
  set_target_properties(rill PROPERTIES VERSION ${PROJECT_VERSION_MAJOR})
endif()
install(TARGETS rill
  LIBRARY DESTINATION rill COMPONENT python NAMELINK_SKIP
  RUNTIME DESTINATION rill COMPONENT python)

# The plugins keep the run-time path of the libraries they link from outside
# the build tree (install.cmake): a CUDA plugin needs the CUDA toolkit's
# libcudart and libcublasLt on the machine that installs the wheel.
foreach(_rill_plugin rill_backend_vulkan rill_backend_cuda)
  if(TARGET ${_rill_plugin})
    install(TARGETS ${_rill_plugin} LIBRARY DESTINATION rill COMPONENT python)
  endif()
endforeach()

# `python -m rill run|generate|...` runs this tool (rill/__main__.py).
if(TARGET rill_cli)
  set_target_properties(rill_cli PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS rill_cli RUNTIME DESTINATION rill COMPONENT python)
endif()
