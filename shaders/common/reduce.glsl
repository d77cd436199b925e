// workgroup_sum(v) / workgroup_max(v): the sum / maximum of v over the whole
// workgroup, returned to every invocation. Must be called in uniform control flow (it contains barriers).
// With -DUSE_SUBGROUP it adds within each subgroup first (one subgroupAdd) and
// then across subgroups through shared memory; otherwise it is a shared-memory
// tree. Include common/extensions.glsl first.
#ifndef RILL_REDUCE_GLSL
#define RILL_REDUCE_GLSL

#ifndef WORKGROUP_SIZE
#define WORKGROUP_SIZE 256
#endif

layout(local_size_x = WORKGROUP_SIZE) in;

shared float reduce_partials[WORKGROUP_SIZE];

#if defined(USE_SUBGROUP)
float workgroup_sum(float v) {
  float subgroup_total = subgroupAdd(v);
  if (subgroupElect()) {
    reduce_partials[gl_SubgroupID] = subgroup_total;
  }
  barrier();
  // Every invocation adds the partials in the same order, so all of them see
  // the same total.
  float total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) {
    total += reduce_partials[i];
  }
  barrier();
  return total;
}

float workgroup_max(float v) {
  float subgroup_max = subgroupMax(v);
  if (subgroupElect()) {
    reduce_partials[gl_SubgroupID] = subgroup_max;
  }
  barrier();
  float result = reduce_partials[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) {
    result = max(result, reduce_partials[i]);
  }
  barrier();
  return result;
}
#else
float workgroup_sum(float v) {
  uint lane = gl_LocalInvocationIndex;
  reduce_partials[lane] = v;
  barrier();
  for (uint half_width = WORKGROUP_SIZE / 2; half_width > 0; half_width >>= 1) {
    if (lane < half_width) {
      reduce_partials[lane] += reduce_partials[lane + half_width];
    }
    barrier();
  }
  float total = reduce_partials[0];
  barrier();
  return total;
}

float workgroup_max(float v) {
  uint lane = gl_LocalInvocationIndex;
  reduce_partials[lane] = v;
  barrier();
  for (uint half_width = WORKGROUP_SIZE / 2; half_width > 0; half_width >>= 1) {
    if (lane < half_width) {
      reduce_partials[lane] = max(reduce_partials[lane], reduce_partials[lane + half_width]);
    }
    barrier();
  }
  float result = reduce_partials[0];
  barrier();
  return result;
}
#endif

#endif
