# Vulkan backend tests, included at the end of tests/CMakeLists.txt. The backend test
# loads the plugin directly through the backend interface and runs twice: once
# plain and once with the Khronos validation layer, where any validation
# message fails it. Both exit 77 (skipped) without a Vulkan device.
if(NOT TARGET rill_backend_vulkan)
  return()
endif()

add_executable(vulkan_backend_test ${PROJECT_SOURCE_DIR}/tests/vulkan_backend_test.cpp
               ${PROJECT_SOURCE_DIR}/tests/support/reference.cpp ${PROJECT_SOURCE_DIR}/tests/support/tolerance.cpp)
target_include_directories(vulkan_backend_test PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/backends/cpu
                           ${PROJECT_SOURCE_DIR}/tests/support)
target_compile_definitions(vulkan_backend_test PRIVATE RILL_VULKAN_PLUGIN="$<TARGET_FILE:rill_backend_vulkan>")
target_link_libraries(vulkan_backend_test PRIVATE doctest::doctest rill_warnings ${CMAKE_DL_LIBS})
add_dependencies(vulkan_backend_test rill_backend_vulkan)

add_test(NAME vulkan_backend COMMAND vulkan_backend_test)
add_test(NAME vulkan_backend_validation COMMAND vulkan_backend_test)
set_tests_properties(vulkan_backend vulkan_backend_validation PROPERTIES LABELS "vulkan" SKIP_RETURN_CODE 77)

# Under the sanitizers (scripts/quickstart.sh test, which applies
# tests/sanitizers/lsan.supp to the whole suite): the validation layer leaks and
# is unloaded before the leak report, so its stacks cannot be matched at all.
# The validation runs keep AddressSanitizer's error checks but not its leak
# check; the plain runs cover the same plugin code with it.
set(RILL_VULKAN_VALIDATION_ENV "RILL_VULKAN_VALIDATION=1;ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
set_tests_properties(vulkan_backend_validation PROPERTIES ENVIRONMENT "${RILL_VULKAN_VALIDATION_ENV}")

# The cross-backend conformance suite on Vulkan once more under the validation
# layer (with synchronization validation): any message fails an op there.
if(TARGET conformance_test)
  add_test(NAME conformance_vulkan_validation COMMAND conformance_test)
  set_tests_properties(conformance_vulkan_validation PROPERTIES
    ENVIRONMENT "RILL_TEST_BACKEND=vulkan;${RILL_VULKAN_VALIDATION_ENV}" SKIP_RETURN_CODE 77
    LABELS "conformance;vulkan")
endif()
