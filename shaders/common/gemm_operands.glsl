// The operands that the GEMM kernels (gemm.comp, and the decode GEMV of
// common/gemv.glsl) share: a at binding 0, also as vectors of 4 stored
// elements (VEC4_STORAGE_T, read where every row starts on a multiple of 4
// elements), bias at 2 and out at 3. Each kernel declares its weights at
// binding 1 and its Params block p, whose fields start as gemm.comp's, before
// including this file after common/extensions.glsl and common/dtype.glsl.
#ifndef RILL_GEMM_OPERANDS_GLSL
#define RILL_GEMM_OPERANDS_GLSL

layout(std430, set = 0, binding = 0) readonly buffer ABuffer { STORAGE_T a_data[]; };
layout(std430, set = 0, binding = 0) readonly buffer AVecBuffer { VEC4_STORAGE_T a_vec[]; };
layout(std430, set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias_data[]; };
layout(std430, set = 0, binding = 3) buffer OutBuffer { STORAGE_T out_data[]; };

// Whether a's rows may be read as vectors of 4: every row starts on one.
bool a_rows_vec4() { return ((p.a_offset | p.k) & 3u) == 0u; }

#endif
