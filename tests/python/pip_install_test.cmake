# Installs the Python package offline with pip (no build isolation, no index,
# no downloads) into a fresh folder, then checks that the installed copy is the
# one imported and that it finds a librill placed in its own folder when no
# RILL_LIBRARY is set.
# Inputs: PYTHON, PACKAGE_DIR, LIBRARY (librill in the build tree), WORK_DIR.
foreach(var PYTHON PACKAGE_DIR LIBRARY WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "pip_install_test: -D${var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
# Build from a copy so that the source tree gets no build/ or egg-info folder.
file(COPY ${PACKAGE_DIR}/ DESTINATION ${WORK_DIR}/src PATTERN __pycache__ EXCLUDE)
run(${CMAKE_COMMAND} -E env PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
    ${PYTHON} -m pip install --no-build-isolation --no-deps --no-index --quiet
    --target ${WORK_DIR}/site ${WORK_DIR}/src)

# librill beside the package's modules, found without RILL_LIBRARY.
get_filename_component(real_library ${LIBRARY} REALPATH)
file(COPY ${real_library} DESTINATION ${WORK_DIR}/site/rill)
get_filename_component(real_name ${real_library} NAME)
file(RENAME ${WORK_DIR}/site/rill/${real_name} ${WORK_DIR}/site/rill/librill.so)

set(check [=[
import os, sys, rill
site = os.path.realpath(sys.argv[1])
assert os.path.realpath(rill.__file__).startswith(site), rill.__file__
where = os.path.realpath(rill.library_path())
assert where == os.path.join(site, "rill", "librill.so"), where
with rill.Context('[runtime]\nbackend = "cpu"\n') as ctx:
    y = ctx.rms_norm(ctx.tensor([[3.0, 4.0]], dtype="f32"), eps=0.0).read()
assert abs(y[0, 0] - 3 / 12.5 ** 0.5) < 1e-6 and abs(y[0, 1] - 4 / 12.5 ** 0.5) < 1e-6, y
print("installed rill", rill.__version__, "loads", where)
]=])
run(${CMAKE_COMMAND} -E env --unset=RILL_LIBRARY PYTHONPATH=${WORK_DIR}/site PYTHONDONTWRITEBYTECODE=1
    ${PYTHON} -c "${check}" ${WORK_DIR}/site)
message(STATUS "${run_output}")
