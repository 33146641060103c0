// Element-wise reductions of local buffers: MPI_Reduce_local and the shapes that the
// collectives' schedules use.
//
//   ReduceLocal  inout[i] = in[i] op inout[i]            (MPI_Reduce_local)
//   ReduceTwo    out[i]   = left[i] op right[i]
//   ReduceMany   out[i]   = in[0][i] op in[1][i] op ... op in[k-1][i]
//
// `op` is any ReduceOp: a predefined op on a datatype the MPI standard allows for it
// (core/reduce_op.h), or a user op. Operands are always combined in the order shown,
// left to right, so a non-commutative user op sees them in canonical rank order when
// the caller passes them in rank order. ReduceMany reads every input once (one pass
// over memory however many inputs a k-nomial tree delivers).
//
// Predefined ops run in SIMD kernels chosen at run time for this CPU (Highway: SSSE3
// to AVX-512, or a portable fallback); long double, complex products and the
// MINLOC/MAXLOC pairs run in scalar kernels. The results are the same on every
// target. Semantics beyond the standard:
// - integer ops wrap modulo 2^bits (no undefined behaviour on signed overflow);
// - floating MAX and MIN propagate NaN (the left operand's if both are NaN); for
//   equal operands (+0 and -0) MAX and MIN return the right operand;
// - MINLOC/MAXLOC: equal values keep the lower index (the standard's rule); a NaN
//   value wins over a number, and of two NaNs the lower index wins;
// - float16 and bfloat16 are computed in float32 and rounded to nearest even once
//   per result: once per element for ReduceTwo, once after all k inputs for
//   ReduceMany;
// - AVG (zcoll extension) gives the mean of the operands of the call: (left+right)/2
//   for ReduceLocal and ReduceTwo, the sum of the k inputs divided by k for
//   ReduceMany. Collectives sum partial results and call FinishAverage once at the
//   end, since a mean of means is not the mean.
//
// User ops are called on chunks of the buffers (possibly several calls per call
// here), as MPI_User_function, with `in` the left operand and `inout` the right one.
//
// Buffers may be unaligned. A count of 0 is valid with null pointers. Errors are
// InvalidArgument with a sentence naming the argument.
//
// Thread safety: every function may be called concurrently from any thread.

#ifndef ZCOLL_OPS_REDUCE_H_
#define ZCOLL_OPS_REDUCE_H_

#include <cstddef>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/datatype.h"
#include "core/reduce_op.h"

namespace zcoll {
namespace internal_reduce {
absl::Status LengthsDiffer(size_t in, size_t inout);
}  // namespace internal_reduce

// MPI_Reduce_local. `in` and `inout` must not overlap: the standard does not allow
// MPI_IN_PLACE here.
absl::Status ReduceLocal(const ReduceOp& op, DataType type, const void* in, void* inout,
                         size_t count);
// Typed: the datatype from T; `in` and `inout` must be of one length (InvalidArgument
// naming both lengths otherwise).
template <typename T>
absl::Status ReduceLocal(const ReduceOp& op, absl::Span<const T> in, absl::Span<T> inout) {
  if (in.size() != inout.size()) return internal_reduce::LengthsDiffer(in.size(), inout.size());
  return ReduceLocal(op, kDataTypeOf<T>, in.data(), inout.data(), in.size());
}

// `out` may be exactly `left` or exactly `right` (in place), but must not partly
// overlap either.
absl::Status ReduceTwo(const ReduceOp& op, DataType type, const void* left, const void* right,
                       void* out, size_t count);

// At least one input. `out` may be exactly one of the inputs, but must not partly
// overlap any. One input is a copy.
absl::Status ReduceMany(const ReduceOp& op, DataType type, absl::Span<const void* const> inputs,
                        void* out, size_t count);

namespace internal_reduce {
struct ResolvedKernels;
}  // namespace internal_reduce

// ReduceMany's kernels for one op and type, looked up once, for a caller that reduces
// often with them and has checked its buffers itself: Run is ReduceMany without the
// checks (inputs non-null unless `count` is 0, `out` exactly one of them or overlapping
// none). A user op's exception still comes back as an error.
class ResolvedReduction {
 public:
  static absl::StatusOr<ResolvedReduction> Resolve(const ReduceOp& op, DataType type);
  ABSL_ATTRIBUTE_ALWAYS_INLINE absl::Status Run(absl::Span<const void* const> inputs, void* out,
                                                size_t count) const {
    // Two inputs of a predefined op (every reduction of two ranks) call the kernel
    // here, inline: a small collective's reduction is a few instructions of work.
    if (ABSL_PREDICT_TRUE(binary_ != nullptr && inputs.size() == 2)) {
      if (count > 0) binary_(inputs[0], inputs[1], out, count * count_multiplier_);
      return absl::OkStatus();
    }
    return RunAny(inputs, out, count);
  }
  const ReduceOp& op() const { return op_; }
  DataType type() const { return type_; }

 private:
  using BinaryKernel = void (*)(const void* a, const void* b, void* out, size_t count);
  ResolvedReduction(const ReduceOp& op, DataType type,
                    const internal_reduce::ResolvedKernels* kernels);
  absl::Status RunAny(absl::Span<const void* const> inputs, void* out, size_t count) const;
  ReduceOp op_;
  DataType type_;
  const internal_reduce::ResolvedKernels* kernels_;  // null: a user op
  // kernels_'s binary kernel and the elements it counts per element of `type_`.
  BinaryKernel binary_ = nullptr;
  size_t count_multiplier_ = 1;
};

// Finishes AVG over `contributions` contributions that were reduced with SUM:
// data[i] /= contributions. `type` must be a floating type (float16 and bfloat16
// included), `contributions` at least 1.
absl::Status FinishAverage(DataType type, void* data, size_t count, size_t contributions);

// The SIMD target the predefined ops run on for this process: "AVX3", "AVX2", "SSE4",
// "SSSE3" or "EMU128".
absl::string_view ReduceKernelTarget();

}  // namespace zcoll

#endif  // ZCOLL_OPS_REDUCE_H_
