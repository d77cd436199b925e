// The portable kernels: plain C++ on one float at a time, for any CPU.
#include <math.h>

#include <cstdint>

#include "cpu_convert.h"
#include "cpu_kernels.h"

namespace rill::cpu::scalar {

namespace {

constexpr const char* kIsaName = "scalar";
constexpr int64_t kWidth = 1;
using V = float;
// Rows of a per GEMM register tile.
constexpr int kGemmTileRows = 2;
// The panel kernel's tile: 4 rows of a x 4 output features.
constexpr int kPanelRows = 4;
constexpr int kPanelVectors = 4;
constexpr int64_t kPanelCols = kPanelVectors * kWidth;

template <rill_dtype DT>
inline V vload(const void* p, int64_t i) {
  return load_scalar<DT>(p, i);
}
template <rill_dtype DT>
inline void vstore(void* p, int64_t i, V v) {
  store_scalar<DT>(p, i, v);
}
template <rill_dtype DT>
inline V vstore_rounded(void* p, int64_t i, V v) {
  store_scalar<DT>(p, i, v);
  return load_scalar<DT>(p, i);
}
// No cache-bypassing stores in portable code: plain stores.
constexpr uintptr_t kStreamAlign = 1;
template <rill_dtype DT>
inline void vstream(void* p, int64_t i, V v) {
  store_scalar<DT>(p, i, v);
}
inline void vstream_fence() {}

inline void keep_in_register(V&) {}

inline V vset1(float f) { return f; }
inline V vadd(V a, V b) { return a + b; }
inline V vsub(V a, V b) { return a - b; }
inline V vmul(V a, V b) { return a * b; }
inline V vdiv(V a, V b) { return a / b; }
// As the SSE/AVX instructions: b when either is NaN.
inline V vmin(V a, V b) { return a < b ? a : b; }
inline V vmax(V a, V b) { return a > b ? a : b; }
inline V vround(V v) { return nearbyintf(v); }
inline V vfloor(V v) { return floorf(v); }
inline V vpow2(V n) { return n == n ? bits_float(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23) : n; }
inline V vfma(V a, V b, V c) { return a * b + c; }
inline float vhsum(V v) { return v; }

struct Acc {
  double sum;
};
inline Acc acc_zero() { return Acc{0.0}; }
inline void acc_sq(Acc& acc, V v) { acc.sum += static_cast<double>(v) * v; }
inline void acc_sum(Acc& acc, V v) { acc.sum += v; }
inline double acc_total(const Acc& acc) { return acc.sum; }

}  // namespace

#include "cpu_kernels.inc"

}  // namespace rill::cpu::scalar
