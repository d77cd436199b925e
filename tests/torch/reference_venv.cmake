# Test setup: a virtual environment beside the build with Hugging Face
# transformers, for the PyTorch tests that take their reference from it
# (layer_reference.py's transformers group), and PyPI's gguf, the reference of
# the quantized block formats (quant_reference.py) and the writer of the GGUF
# tests' files. It sees the interpreter's own
# packages (torch, numpy), so only transformers and the pure-Python packages it
# needs come from PyPI, pinned to versions that work with Debian's torch 1.13.
# Without PyPI it warns and succeeds: those tests then report skipped.
#   cmake -DPYTHON=<python with torch> -DVENV=<dir> -P reference_venv.cmake
set(_packages transformers==4.47.1 tokenizers==0.21.4 huggingface_hub==0.26.5 safetensors regex filelock tqdm fsspec
              gguf==0.19.0)
set(_stamp "${VENV}/rill-packages.txt")
string(JOIN " " _wanted ${_packages})
if(EXISTS "${_stamp}")
  file(READ "${_stamp}" _installed)
  if(_installed STREQUAL _wanted)
    message(STATUS "reference venv: ${VENV} is up to date")
    return()
  endif()
endif()

execute_process(COMMAND "${PYTHON}" -m venv --system-site-packages "${VENV}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(WARNING "reference venv: '${PYTHON} -m venv' failed (python3-venv missing?); the tests that need transformers will report skipped")
  return()
endif()
# --no-deps: pip would otherwise replace the system torch.
execute_process(COMMAND "${VENV}/bin/python" -m pip install -q --disable-pip-version-check --no-deps ${_packages}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(WARNING "reference venv: pip could not install ${_wanted} (no PyPI?); the tests that need transformers will report skipped")
  return()
endif()
file(WRITE "${_stamp}" "${_wanted}")
message(STATUS "reference venv: installed ${_wanted} into ${VENV}")
