// Internal interface between ops/reduce.cc (argument checks, dispatch) and the kernels.
//
// A KernelTable holds, for each (predefined op, datatype) pair it covers, the two
// kernel shapes:
//
//   binary:   out[i] = a[i] op b[i]                      (out may be a or b)
//   many:     out[i] = in0[i] op in1[i] op ... op ink[i] (out may be one input)
//
// and, for floating types, a divide kernel that finishes AVG (data[i] /= divisor).
// AVG kernels compute the mean of their operands: (a + b) / 2 for binary, the sum
// of all k inputs divided by k for many. Float16 and bfloat16 compute in float32 and
// round once when storing (ops/half.h).
//
// Two tables exist. SimdKernels() is compiled for every Highway target (SSSE3 ...
// AVX-512, plus the portable EMU128 fallback) and dispatched at run time; it covers
// the fixed-width integers, float, double, float16 and bfloat16. PortableKernels()
// covers what SIMD would not speed up or cannot express: long double, complex
// products, complex long double sums and the MINLOC/MAXLOC pair types. Callers pass
// the *kernel* datatype: ops/reduce.cc maps C-named integers to their fixed-width
// twins, bool to uint8 and complex sums to float or double sums first.
//
// Kernels assume valid arguments (checked by ops/reduce.cc) and accept unaligned
// pointers.

#ifndef ZCOLL_OPS_REDUCE_KERNELS_H_
#define ZCOLL_OPS_REDUCE_KERNELS_H_

#include <cstddef>

#include "core/datatype.h"
#include "core/reduce_op.h"

namespace zcoll::ops_internal {

using BinaryKernel = void (*)(const void* a, const void* b, void* out, size_t count);
using ManyKernel = void (*)(const void* const* inputs, size_t num_inputs, void* out, size_t count);
using DivideKernel = void (*)(void* data, size_t count, size_t divisor);

struct Kernels {
  BinaryKernel binary = nullptr;
  ManyKernel many = nullptr;
};

struct KernelTable {
  const Kernels& at(PredefinedOp op, DataType type) const {
    return entries[static_cast<size_t>(op)][static_cast<size_t>(type)];
  }
  DivideKernel divide_at(DataType type) const { return divide[static_cast<size_t>(type)]; }

  Kernels entries[kNumPredefinedOps][kNumDataTypes] = {};
  DivideKernel divide[kNumDataTypes] = {};
  const char* target_name = "";
};

// The table of the best Highway target this CPU supports (or the one forced by
// hwy::SetSupportedTargetsForTest). Cheap to call: an indirect call and a load.
const KernelTable& SimdKernels();

// Scalar kernels for the types listed above; one table for all CPUs.
const KernelTable& PortableKernels();

// ops/reduce.cc resolves the two tables into one entry per (op, user datatype) once
// and caches it. Tests that switch targets with hwy::SetSupportedTargetsForTest call
// this afterwards so that the next call resolves against the new target.
void ResetDispatchCacheForTest();

}  // namespace zcoll::ops_internal

#endif  // ZCOLL_OPS_REDUCE_KERNELS_H_
