# The tests of a Windows build (included from tests/CMakeLists.txt when WIN32):
# the C API, plugin loading with the fake plugins built as DLLs, and the
# conformance suite on the CPU backend and, when it is built, on Vulkan. Cross-built with MinGW-w64, CTest runs
# them under Wine (cmake/toolchains/mingw-w64-x86_64.cmake); scripts/windows-check.sh
# builds and runs them with the examples.
add_subdirectory(fake_plugins)
rill_add_test(plugin_loader SOURCES plugin_loader_test.cpp LIBS rill_fake_plugins LABELS runtime)
# Files and folders with UTF-8 names through the UTF-16 file APIs.
rill_add_test(platform SOURCES platform_test.cpp LIBS rill_platform LABELS runtime)

add_executable(c_api_test c_api_test.c)
set_target_properties(c_api_test PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
target_compile_options(c_api_test PRIVATE -pedantic -Wall -Wextra -Werror)
target_link_libraries(c_api_test PRIVATE rill::rill m)
add_test(NAME c_api COMMAND c_api_test)

add_executable(conformance_test conformance_test.cpp support/reference.cpp support/tolerance.cpp)
target_include_directories(conformance_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
target_link_libraries(conformance_test PRIVATE rill::rill doctest::doctest rill_warnings)
add_test(NAME conformance_cpu COMMAND conformance_test)
set_tests_properties(conformance_cpu PROPERTIES
  ENVIRONMENT "RILL_TEST_BACKEND=cpu" SKIP_RETURN_CODE 77 LABELS "conformance;cpu")
# The scalar kernels (RILL_CPU_ISA=scalar) are the same sources in both
# builds and run natively as conformance_cpu_portable; under Wine they would
# take three times the AVX2 pass's time in CI, so only the kernels this
# machine picks run here.
# rill-vulkan.dll through Wine's Vulkan (winevulkan, over the host's driver:
# lavapipe in CI), skipped where Wine has no Vulkan device.
if(TARGET rill_backend_vulkan)
  add_test(NAME conformance_vulkan COMMAND conformance_test)
  set_tests_properties(conformance_vulkan PROPERTIES
    ENVIRONMENT "RILL_TEST_BACKEND=vulkan" SKIP_RETURN_CODE 77 LABELS "conformance;vulkan")
endif()

# The rill tool starts and finds its built-in CPU backend.
add_test(NAME cli_info COMMAND rill_cli info)
set_tests_properties(cli_info PROPERTIES PASS_REGULAR_EXPRESSION "cpu: available" LABELS runtime)

# Everything the tests above run, and nothing else: scripts/windows-check.sh
# builds this target (the examples' targets come from examples/, defined later).
add_custom_target(rill_windows_tests)
add_dependencies(rill_windows_tests rill_cli c_api_test conformance_test platform_test plugin_loader_test)
if(TARGET rill_backend_vulkan)
  add_dependencies(rill_windows_tests rill_backend_vulkan)
endif()
if(RILL_BUILD_EXAMPLES)
  add_dependencies(rill_windows_tests rill_example_embed_c rill_example_embed_cpp rill_example_game_loop)
endif()
