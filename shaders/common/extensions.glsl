// Every #extension a rill shader may need, selected by the variant's defines.
// Included first by each kernel, before any declaration.
#if defined(DTYPE_F16) || defined(DTYPE_BF16)
#extension GL_EXT_shader_16bit_storage : require
#endif
#if defined(USE_SUBGROUP)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
