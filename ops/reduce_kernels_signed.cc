// The SIMD kernels of the signed integer types, for every Highway target; their
// table entries are filled in by ops/reduce_kernels.cc (see reduce_kernels-inl.h).

#include <cstdint>

#include "ops/reduce_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/reduce_kernels_signed.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "ops/reduce_kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace zcoll::ops_internal {
namespace HWY_NAMESPACE {

void AddSignedIntegerKernels(KernelTable& table) {
  AddKernelsOfTypes<int8_t, int16_t, int32_t, int64_t>(table);
}

}  // namespace HWY_NAMESPACE
}  // namespace zcoll::ops_internal
HWY_AFTER_NAMESPACE();
