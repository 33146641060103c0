// SIMD reduction kernels, compiled once per Highway target and dispatched at run time.
//
// The kernels themselves are in reduce_kernels-inl.h; this unit instantiates them for
// the floating types and assembles each target's table from its own entries and those
// of reduce_kernels_signed.cc and reduce_kernels_unsigned.cc (same targets, same
// flags, so every target's three parts exist).
//
// Targets: Highway's defaults for x86 (SSSE3, SSE4, AVX2, AVX3) plus the portable
// fallback, which with GCC before 12.3 is HWY_SCALAR (Highway disables EMU128 there).

#include "ops/reduce_kernels.h"

#include "core/datatype.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/reduce_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "ops/reduce_kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace zcoll::ops_internal {
namespace HWY_NAMESPACE {

void AddFloatingKernels(KernelTable& table) {
  AddKernelsOfTypes<float, double, Float16, Bfloat16>(table);
}

KernelTable BuildTable() {
  KernelTable table;
  AddSignedIntegerKernels(table);
  AddUnsignedIntegerKernels(table);
  AddFloatingKernels(table);
  table.target_name = hwy::TargetName(HWY_TARGET);
  return table;
}

const KernelTable* GetKernelTable() {
  static const KernelTable* const table = new KernelTable(BuildTable());
  return table;
}

}  // namespace HWY_NAMESPACE
}  // namespace zcoll::ops_internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zcoll::ops_internal {

HWY_EXPORT(GetKernelTable);

const KernelTable& SimdKernels() { return *HWY_DYNAMIC_DISPATCH(GetKernelTable)(); }

}  // namespace zcoll::ops_internal
#endif  // HWY_ONCE
