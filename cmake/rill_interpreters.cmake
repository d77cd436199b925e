# Finds the interpreters the Python and C# tests and examples run under.
#
# RILL_PYTHON: a Python 3 with numpy (and pytest, for the binding's tests).
#   Debian's python3-numpy and python3-pytest serve /usr/bin/python3, which
#   may not be the python3 first on PATH, so it is tried first.
# RILL_MCS, RILL_MONO: Mono's C# compiler and runtime (Debian mono-mcs,
#   mono-runtime).
# Tests that need an interpreter which is missing are registered with
# rill_add_skipped_test so that they report "skipped", never "passed".
# Included by each folder that needs it.

if(NOT DEFINED RILL_PYTHON)
  set(_rill_python_found "")
  find_program(_rill_python_on_path python3 NO_CACHE)
  foreach(_candidate /usr/bin/python3 ${_rill_python_on_path})
    if(EXISTS ${_candidate})
      execute_process(COMMAND ${_candidate} -c "import numpy, pytest"
                      RESULT_VARIABLE _rill_python_rc OUTPUT_QUIET ERROR_QUIET)
      if(_rill_python_rc EQUAL 0)
        set(_rill_python_found ${_candidate})
        break()
      endif()
    endif()
  endforeach()
  set(RILL_PYTHON "${_rill_python_found}" CACHE FILEPATH "Python 3 with numpy and pytest for rill's Python tests")
  if(NOT RILL_PYTHON)
    message(STATUS "rill: no Python 3 with numpy and pytest found; the Python tests will report skipped")
  endif()
endif()

find_program(RILL_MCS mcs)
find_program(RILL_MONO mono)

# rill_add_skipped_test(<name> <reason>): a test that reports skipped (77).
function(rill_add_skipped_test name reason)
  add_test(NAME ${name} COMMAND sh -c "echo 'skipped: ${reason}'; exit 77")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS no-sanitize)
endfunction()
