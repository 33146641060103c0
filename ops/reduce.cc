#include "ops/reduce.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "ops/reduce_kernels.h"

namespace zcoll {
namespace {

using ops_internal::Kernels;

// User ops are applied through a temporary of at most this many bytes per call, so
// callbacks see cache-sized chunks and the temporary stays small.
constexpr size_t kUserChunkBytes = 64 * 1024;

// A byte range [begin, end) of a buffer argument.
struct Range {
  uintptr_t begin;
  uintptr_t end;
};

Range BytesOf(const void* pointer, size_t count, DataType type) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(pointer);
  return {begin, begin + count * DataTypeSize(type)};
}

bool SameStart(Range a, Range b) { return a.begin == b.begin; }
bool Overlap(Range a, Range b) { return a.begin < b.end && b.begin < a.end; }

absl::Status CheckNotNull(absl::string_view function, absl::string_view argument,
                          const void* pointer, size_t count) {
  if (pointer == nullptr && count > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(function, ": `", argument, "` is null but count is ", count));
  }
  return absl::OkStatus();
}

// `out` may coincide with an input exactly; any other overlap would make the
// element-wise kernels read values they already overwrote.
absl::Status CheckOutput(absl::string_view function, absl::string_view input_name, Range input,
                         Range out) {
  if (Overlap(input, out) && !SameStart(input, out)) {
    return absl::InvalidArgumentError(
        absl::StrCat(function, ": `out` partly overlaps `", input_name,
                     "`; it may be exactly the same buffer or a separate one"));
  }
  return absl::OkStatus();
}

// The kernels for each (op, datatype) a user may pass, resolved from the SIMD table of
// the current target and the portable table. The datatype is first mapped to the
// type the kernels are written for: C-named integers to fixed-width ones, bool to
// uint8 (its logical ops give 0 or 1 either way), and a complex sum to a float or
// double sum of twice as many elements (real and imaginary parts add independently).
// Resolving once keeps the per-call cost to one atomic load and one table lookup.
}  // namespace

namespace internal_reduce {
struct ResolvedKernels {
  ops_internal::BinaryKernel binary = nullptr;
  ops_internal::ManyKernel many = nullptr;
  size_t count_multiplier = 1;
  size_t element_size = 0;  // of the user's datatype
};
}  // namespace internal_reduce

namespace {

using internal_reduce::ResolvedKernels;

struct Dispatch {
  const ResolvedKernels& at(PredefinedOp op, DataType type) const {
    return entries[static_cast<size_t>(op)][static_cast<size_t>(type)];
  }

  const ops_internal::KernelTable* simd = nullptr;  // what this was resolved from
  ResolvedKernels entries[kNumPredefinedOps][kNumDataTypes];
  ops_internal::DivideKernel divide[kNumDataTypes] = {};
};

std::unique_ptr<Dispatch> Resolve(const ops_internal::KernelTable& simd) {
  const ops_internal::KernelTable& portable = ops_internal::PortableKernels();
  auto dispatch = std::make_unique<Dispatch>();
  dispatch->simd = &simd;
  for (DataType type : AllDataTypes()) {
    DataType kernel_type = GetDataTypeInfo(type).canonical;
    if (kernel_type == DataType::kCBool) kernel_type = DataType::kUint8;
    for (PredefinedOp op : AllPredefinedOps()) {
      if (!IsOpDefinedFor(op, type)) continue;
      DataType chosen = kernel_type;
      size_t multiplier = 1;
      if (op == PredefinedOp::kSum && kernel_type == DataType::kCFloatComplex) {
        chosen = DataType::kFloat;
        multiplier = 2;
      } else if (op == PredefinedOp::kSum && kernel_type == DataType::kCDoubleComplex) {
        chosen = DataType::kDouble;
        multiplier = 2;
      }
      const Kernels* kernels = &simd.at(op, chosen);
      if (kernels->binary == nullptr) kernels = &portable.at(op, chosen);
      dispatch->entries[static_cast<size_t>(op)][static_cast<size_t>(type)] = {
          kernels->binary, kernels->many, multiplier, DataTypeSize(type)};
    }
    ops_internal::DivideKernel divide = simd.divide_at(kernel_type);
    if (divide == nullptr) divide = portable.divide_at(kernel_type);
    dispatch->divide[static_cast<size_t>(type)] = divide;
  }
  return dispatch;
}

std::atomic<const Dispatch*> current_dispatch{nullptr};
Mutex dispatch_mutex;

// Every table resolved so far (one per SIMD target; several only in tests), kept so
// that a pointer handed out stays valid for the life of the process.
std::vector<std::unique_ptr<Dispatch>>& ResolvedTables()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(dispatch_mutex) {
  static auto* tables = new std::vector<std::unique_ptr<Dispatch>>();
  return *tables;
}

ABSL_ATTRIBUTE_NOINLINE const Dispatch& CurrentDispatchSlow() {
  MutexLock lock(&dispatch_mutex);
  const ops_internal::KernelTable* simd = &ops_internal::SimdKernels();
  const Dispatch* found = nullptr;
  for (const std::unique_ptr<Dispatch>& table : ResolvedTables()) {
    if (table->simd == simd) found = table.get();
  }
  if (found == nullptr) {
    ResolvedTables().push_back(Resolve(*simd));
    found = ResolvedTables().back().get();
  }
  current_dispatch.store(found, std::memory_order_release);
  return *found;
}

// Memory ordering: the release store in CurrentDispatchSlow publishes a fully built
// table; the acquire load here sees it whole.
inline const Dispatch& CurrentDispatch() {
  const Dispatch* dispatch = current_dispatch.load(std::memory_order_acquire);
  if (ABSL_PREDICT_TRUE(dispatch != nullptr)) return *dispatch;
  return CurrentDispatchSlow();
}

// The kernels for (op, type), or null when the pair is not allowed (or not valid).
inline const ResolvedKernels* FindKernels(PredefinedOp op, DataType type) {
  if (ABSL_PREDICT_FALSE(!IsValidDataType(type) || !IsValidPredefinedOp(op))) return nullptr;
  const ResolvedKernels& kernels = CurrentDispatch().at(op, type);
  return ABSL_PREDICT_TRUE(kernels.binary != nullptr) ? &kernels : nullptr;
}

// Why FindKernels found nothing: the op is not defined for the type (the usual
// case), or a hole in zcoll's tables.
absl::Status NoKernelError(PredefinedOp op, DataType type) {
  RETURN_IF_ERROR(CheckOpForDataType(op, type));
  return absl::InternalError(absl::StrCat("zcoll has no kernel for op ", PredefinedOpName(op),
                                          " on datatype ", DataTypeName(type)));
}

// Calls the user's function. It must not throw (reduce_op.h); one that does anyway
// gets its exception turned into an error here, so that the call fails (and a
// collective fails the job, releasing its peers) instead of the exception unwinding
// through zcoll with transfers still posted.
absl::Status CallUserOp(const ReduceOp& op, const void* in, void* inout, size_t count,
                        DataType type) {
  try {
    op.user_function()(in, inout, count, type);
    return absl::OkStatus();
  } catch (const std::exception& exception) {
    return absl::UnknownError(
        absl::StrCat("the user op '", op.name(), "' threw an exception: ", exception.what()));
  } catch (...) {
    return absl::UnknownError(
        absl::StrCat("the user op '", op.name(), "' threw an exception (not a std::exception)"));
  }
}

// Applies a user op as out = inputs[0] op ... op inputs[k-1], chunk by chunk, right
// to left: the last input is copied into a temporary and every earlier input is
// folded in as the left operand. By associativity this is the canonical
// left-to-right result, and the temporary makes any aliasing of `out` harmless.
absl::Status ApplyUserOp(const ReduceOp& op, DataType type, absl::Span<const void* const> inputs,
                         void* out, size_t count) {
  const size_t element = DataTypeSize(type);
  const size_t chunk = std::max<size_t>(1, kUserChunkBytes / element);
  const auto temporary = std::make_unique<char[]>(std::min(count, chunk) * element);
  for (size_t start = 0; start < count; start += chunk) {
    const size_t n = std::min(chunk, count - start);
    const size_t offset = start * element;
    std::memcpy(temporary.get(), static_cast<const char*>(inputs.back()) + offset, n * element);
    for (size_t j = inputs.size() - 1; j-- > 0;) {
      RETURN_IF_ERROR(
          CallUserOp(op, static_cast<const char*>(inputs[j]) + offset, temporary.get(), n, type));
    }
    std::memcpy(static_cast<char*>(out) + offset, temporary.get(), n * element);
  }
  return absl::OkStatus();
}

// The kernels for a predefined op (null for a user op), or the error for a pair the
// standard does not allow.
absl::StatusOr<const ResolvedKernels*> KernelsFor(const ReduceOp& op, DataType type) {
  if (!op.is_predefined()) {
    RETURN_IF_ERROR(CheckOpForDataType(op, type));
    return nullptr;
  }
  const ResolvedKernels* kernels = FindKernels(op.predefined(), type);
  if (ABSL_PREDICT_FALSE(kernels == nullptr)) return NoKernelError(op.predefined(), type);
  return kernels;
}

// Two byte ranges of the same length that share no byte.
inline bool Disjoint(const void* a, const void* b, size_t bytes) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x + bytes <= y || y + bytes <= x;
}

// `out` is exactly `input` or shares no byte with it.
inline bool SameOrDisjoint(const void* input, const void* out, size_t bytes) {
  return input == out || Disjoint(input, out, bytes);
}

// The Slow functions check everything in the documented order and handle user ops;
// the public functions below run predefined ops on valid arguments without them.
absl::Status ReduceLocalSlow(const ReduceOp& op, DataType type, const void* in, void* inout,
                             size_t count) {
  ASSIGN_OR_RETURN(const ResolvedKernels* kernels, KernelsFor(op, type));
  RETURN_IF_ERROR(CheckNotNull("ReduceLocal", "in", in, count));
  RETURN_IF_ERROR(CheckNotNull("ReduceLocal", "inout", inout, count));
  if (count == 0) return absl::OkStatus();
  const Range in_bytes = BytesOf(in, count, type), inout_bytes = BytesOf(inout, count, type);
  if (SameStart(in_bytes, inout_bytes)) {
    return absl::InvalidArgumentError(
        "ReduceLocal: `in` and `inout` are the same buffer; MPI_Reduce_local does not allow "
        "the in-place option");
  }
  if (Overlap(in_bytes, inout_bytes)) {
    return absl::InvalidArgumentError("ReduceLocal: `in` and `inout` overlap");
  }
  if (kernels == nullptr) return CallUserOp(op, in, inout, count, type);  // a user op
  kernels->binary(in, inout, inout, count * kernels->count_multiplier);
  return absl::OkStatus();
}

absl::Status ReduceTwoSlow(const ReduceOp& op, DataType type, const void* left, const void* right,
                           void* out, size_t count) {
  ASSIGN_OR_RETURN(const ResolvedKernels* kernels, KernelsFor(op, type));
  RETURN_IF_ERROR(CheckNotNull("ReduceTwo", "left", left, count));
  RETURN_IF_ERROR(CheckNotNull("ReduceTwo", "right", right, count));
  RETURN_IF_ERROR(CheckNotNull("ReduceTwo", "out", out, count));
  if (count == 0) return absl::OkStatus();
  const Range out_bytes = BytesOf(out, count, type);
  RETURN_IF_ERROR(CheckOutput("ReduceTwo", "left", BytesOf(left, count, type), out_bytes));
  RETURN_IF_ERROR(CheckOutput("ReduceTwo", "right", BytesOf(right, count, type), out_bytes));
  if (kernels == nullptr) {  // a user op
    if (out == right && left != right) return CallUserOp(op, left, out, count, type);
    const void* inputs[] = {left, right};
    return ApplyUserOp(op, type, inputs, out, count);
  }
  kernels->binary(left, right, out, count * kernels->count_multiplier);
  return absl::OkStatus();
}

}  // namespace

namespace internal_reduce {
absl::Status LengthsDiffer(size_t in, size_t inout) {
  return absl::InvalidArgumentError(absl::StrCat("ReduceLocal: `in` holds ", in,
                                                 " elements and `inout` ", inout,
                                                 "; they must be of one length"));
}
}  // namespace internal_reduce

absl::Status ReduceLocal(const ReduceOp& op, DataType type, const void* in, void* inout,
                         size_t count) {
  if (ABSL_PREDICT_TRUE(op.is_predefined())) {
    const ResolvedKernels* kernels = FindKernels(op.predefined(), type);
    if (ABSL_PREDICT_TRUE(kernels != nullptr && in != nullptr && inout != nullptr &&
                          Disjoint(in, inout, count * kernels->element_size))) {
      kernels->binary(in, inout, inout, count * kernels->count_multiplier);
      return absl::OkStatus();
    }
  }
  return ReduceLocalSlow(op, type, in, inout, count);
}

absl::Status ReduceTwo(const ReduceOp& op, DataType type, const void* left, const void* right,
                       void* out, size_t count) {
  if (ABSL_PREDICT_TRUE(op.is_predefined())) {
    const ResolvedKernels* kernels = FindKernels(op.predefined(), type);
    if (ABSL_PREDICT_TRUE(kernels != nullptr && left != nullptr && right != nullptr &&
                          out != nullptr)) {
      const size_t bytes = count * kernels->element_size;
      if (ABSL_PREDICT_TRUE(SameOrDisjoint(left, out, bytes) &&
                            SameOrDisjoint(right, out, bytes))) {
        kernels->binary(left, right, out, count * kernels->count_multiplier);
        return absl::OkStatus();
      }
    }
  }
  return ReduceTwoSlow(op, type, left, right, out, count);
}

absl::Status ReduceMany(const ReduceOp& op, DataType type, absl::Span<const void* const> inputs,
                        void* out, size_t count) {
  ASSIGN_OR_RETURN(const ResolvedKernels* kernels, KernelsFor(op, type));
  if (inputs.empty()) {
    return absl::InvalidArgumentError("ReduceMany: `inputs` is empty; give at least one input");
  }
  RETURN_IF_ERROR(CheckNotNull("ReduceMany", "out", out, count));
  const Range out_bytes = BytesOf(out, count, type);
  for (size_t j = 0; j < inputs.size(); ++j) {
    const bool null_input = inputs[j] == nullptr && count > 0;
    const Range input_bytes = BytesOf(inputs[j], count, type);
    // The input's name is spelled only for an error (an executor reduces every step).
    if (ABSL_PREDICT_FALSE(null_input || (Overlap(input_bytes, out_bytes) &&
                                          !SameStart(input_bytes, out_bytes)))) {
      const std::string name = absl::StrCat("inputs[", j, "]");
      RETURN_IF_ERROR(CheckNotNull("ReduceMany", name, inputs[j], count));
      return CheckOutput("ReduceMany", name, input_bytes, out_bytes);
    }
  }
  if (count == 0) return absl::OkStatus();
  if (inputs.size() == 1) {
    if (inputs[0] != out) std::memcpy(out, inputs[0], count * DataTypeSize(type));
    return absl::OkStatus();
  }
  if (kernels == nullptr) return ApplyUserOp(op, type, inputs, out, count);  // a user op
  if (inputs.size() == 2) {
    kernels->binary(inputs[0], inputs[1], out, count * kernels->count_multiplier);
  } else {
    kernels->many(inputs.data(), inputs.size(), out, count * kernels->count_multiplier);
  }
  return absl::OkStatus();
}

absl::StatusOr<ResolvedReduction> ResolvedReduction::Resolve(const ReduceOp& op, DataType type) {
  ASSIGN_OR_RETURN(const ResolvedKernels* kernels, KernelsFor(op, type));
  return ResolvedReduction(op, type, kernels);
}

ResolvedReduction::ResolvedReduction(const ReduceOp& op, DataType type,
                                     const internal_reduce::ResolvedKernels* kernels)
    : op_(op), type_(type), kernels_(kernels) {
  if (kernels != nullptr) {
    binary_ = kernels->binary;
    count_multiplier_ = kernels->count_multiplier;
  }
}

absl::Status ResolvedReduction::RunAny(absl::Span<const void* const> inputs, void* out,
                                       size_t count) const {
  if (count == 0) return absl::OkStatus();
  if (inputs.size() == 1) {
    if (inputs[0] != out) std::memcpy(out, inputs[0], count * DataTypeSize(type_));
    return absl::OkStatus();
  }
  if (kernels_ == nullptr) return ApplyUserOp(op_, type_, inputs, out, count);
  if (inputs.size() == 2) {
    kernels_->binary(inputs[0], inputs[1], out, count * kernels_->count_multiplier);
  } else {
    kernels_->many(inputs.data(), inputs.size(), out, count * kernels_->count_multiplier);
  }
  return absl::OkStatus();
}

absl::Status FinishAverage(DataType type, void* data, size_t count, size_t contributions) {
  RETURN_IF_ERROR(CheckOpForDataType(PredefinedOp::kAvg, type));
  RETURN_IF_ERROR(CheckNotNull("FinishAverage", "data", data, count));
  if (contributions == 0) {
    return absl::InvalidArgumentError(
        "FinishAverage: `contributions` is 0; a mean needs at least one");
  }
  if (count == 0) return absl::OkStatus();
  const ops_internal::DivideKernel divide = CurrentDispatch().divide[static_cast<size_t>(type)];
  if (divide == nullptr) {
    return absl::InternalError(absl::StrCat("zcoll has no divide kernel for ", DataTypeName(type)));
  }
  divide(data, count, contributions);
  return absl::OkStatus();
}

absl::string_view ReduceKernelTarget() { return CurrentDispatch().simd->target_name; }

namespace ops_internal {
void ResetDispatchCacheForTest() { current_dispatch.store(nullptr, std::memory_order_release); }
}  // namespace ops_internal

}  // namespace zcoll
