# Tests that drive the CUDA plugin's backend table directly (loaded with
# dlopen), for what the public API cannot express: tensor views at offsets.
# Included from tests/CMakeLists.txt when RILL_BACKEND_CUDA is on.
add_executable(cuda_fused_views_test ${PROJECT_SOURCE_DIR}/tests/cuda_fused_views_test.cpp)
target_include_directories(cuda_fused_views_test PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/tests/support)
target_compile_definitions(cuda_fused_views_test PRIVATE RILL_CUDA_PLUGIN="$<TARGET_FILE:rill_backend_cuda>")
target_link_libraries(cuda_fused_views_test PRIVATE doctest::doctest rill_warnings ${CMAKE_DL_LIBS})
add_dependencies(cuda_fused_views_test rill_backend_cuda)
add_test(NAME cuda_fused_views COMMAND cuda_fused_views_test)
set_tests_properties(cuda_fused_views PROPERTIES LABELS cuda SKIP_RETURN_CODE 77)
