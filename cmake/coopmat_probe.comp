#version 450
// Configure-time probe (backends/vulkan/CMakeLists.txt): a glslang that
// compiles this can build shaders/gemm_coopmat.comp.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Data { float16_t data[]; };
layout(std430, binding = 1) buffer Result { float result[]; };
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
  coopMatLoad(a, data, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(b, data, 0, 16, gl_CooperativeMatrixLayoutColumnMajor);
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c =
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
  coopMatStore(coopMatMulAdd(a, b, c), result, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
}
