# Drives the consumer tests (cmake -P). MODE:
#   install           cmake --install the build into PREFIX and check the layout
#   find_package      configure, build and run find_package/ against PREFIX
#   pkg_config        compile consumer.c with `pkg-config --cflags --libs rill`
#                     against PREFIX and run it
#   add_subdirectory  configure, build and run add_subdirectory/ on SOURCE_DIR
# Other inputs: BUILD_DIR (the rill build), PREFIX, LIBDIR (relative), WORK_DIR,
# SOURCE_DIR, GENERATOR, C_COMPILER, CXX_COMPILER, HAVE_TOOL, PLUGINS (names,
# comma-separated), VERSION, VERSION_MAJOR.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" PLUGINS "${PLUGINS}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

function(configure_build_run source build)
  file(REMOVE_RECURSE ${build})
  run(${CMAKE_COMMAND} -S ${source} -B ${build} -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${ARGN})
  run(${CMAKE_COMMAND} --build ${build} -j 2)
  foreach(program consumer consumer_hpp)
    if(EXISTS ${build}/${program})
      run(${build}/${program})
      message(STATUS "${run_output}")
    endif()
  endforeach()
endfunction()

set(here ${CMAKE_CURRENT_LIST_DIR})

if(MODE STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  set(expected include/rill.h include/rill_backend.h include/rill.hpp ${LIBDIR}/librill.so ${LIBDIR}/librill.so.0
      ${LIBDIR}/cmake/rill/rillConfig.cmake ${LIBDIR}/cmake/rill/rillConfigVersion.cmake
      ${LIBDIR}/cmake/rill/rillTargets.cmake ${LIBDIR}/pkgconfig/rill.pc)
  foreach(plugin ${PLUGINS})
    list(APPEND expected ${LIBDIR}/lib${plugin}.so)
  endforeach()
  if(HAVE_TOOL)
    list(APPEND expected bin/rill)
  endif()
  foreach(path ${expected})
    if(NOT EXISTS ${PREFIX}/${path})
      message(FATAL_ERROR "install tree lacks ${path}")
    endif()
  endforeach()
  if(HAVE_TOOL)
    # The installed tool finds the installed librill and, beside it, the plugins.
    run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=RILL_PLUGIN_PATH ${PREFIX}/bin/rill info)
    foreach(plugin ${PLUGINS})
      if(run_output MATCHES "lib${plugin}.so not found")
        message(FATAL_ERROR "the installed rill does not find lib${plugin}.so beside librill:\n${run_output}")
      endif()
    endforeach()
    message(STATUS "installed rill info:\n${run_output}")
  endif()

elseif(MODE STREQUAL "find_package")
  configure_build_run(${here}/find_package ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${PREFIX}
                      -DRILL_REQUIRED_VERSION=${VERSION})
  # SameMajorVersion: another major version must not be accepted.
  math(EXPR next_major "${VERSION_MAJOR} + 1")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${here}/find_package -B ${WORK_DIR}/build-next-major
                          -G "${GENERATOR}" -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
                          -DCMAKE_PREFIX_PATH=${PREFIX}
                          -DRILL_REQUIRED_VERSION=${next_major}.0
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "find_package(rill ${next_major}.0) accepted rill ${VERSION}")
  endif()

elseif(MODE STREQUAL "pkg_config")
  file(REMOVE_RECURSE ${WORK_DIR})
  file(MAKE_DIRECTORY ${WORK_DIR})
  set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
  run(pkg-config --modversion rill)
  string(STRIP "${run_output}" found_version)
  if(NOT found_version STREQUAL VERSION)
    message(FATAL_ERROR "pkg-config reports rill ${found_version}, expected ${VERSION}")
  endif()
  run(pkg-config --cflags --libs rill)
  separate_arguments(flags UNIX_COMMAND "${run_output}")
  run(${C_COMPILER} -std=c99 ${here}/consumer.c ${flags} -lm -Wl,-rpath,${PREFIX}/${LIBDIR}
      -o ${WORK_DIR}/consumer)
  run(${WORK_DIR}/consumer)
  message(STATUS "${run_output}")

elseif(MODE STREQUAL "add_subdirectory")
  configure_build_run(${here}/add_subdirectory ${WORK_DIR}/build -DRILL_SOURCE_DIR=${SOURCE_DIR})

else()
  message(FATAL_ERROR "run_consumer.cmake: unknown MODE '${MODE}'")
endif()
