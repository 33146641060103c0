#include "ops/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
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

// The kernels for (op, type), after mapping `type` to the type the kernels are
// written for: C-named integers to fixed-width ones, bool to uint8 (its logical ops
// give 0 or 1 either way), and a complex sum to a float or double sum of twice as
// many elements (a complex sum adds real and imaginary parts independently).
struct KernelChoice {
  const Kernels* kernels;
  size_t count_multiplier;
};

absl::StatusOr<KernelChoice> ChooseKernels(PredefinedOp op, DataType type) {
  DataType kernel_type = GetDataTypeInfo(type).canonical;
  size_t multiplier = 1;
  if (kernel_type == DataType::kCBool) kernel_type = DataType::kUint8;
  if (op == PredefinedOp::kSum && kernel_type == DataType::kCFloatComplex) {
    kernel_type = DataType::kFloat;
    multiplier = 2;
  } else if (op == PredefinedOp::kSum && kernel_type == DataType::kCDoubleComplex) {
    kernel_type = DataType::kDouble;
    multiplier = 2;
  }
  const Kernels* kernels = &ops_internal::SimdKernels().at(op, kernel_type);
  if (kernels->binary == nullptr) kernels = &ops_internal::PortableKernels().at(op, kernel_type);
  if (kernels->binary == nullptr) {
    // CheckOpForDataType passed, so this is a hole in zcoll's tables.
    return absl::InternalError(absl::StrCat("zcoll has no kernel for op ", PredefinedOpName(op),
                                            " on datatype ", DataTypeName(type)));
  }
  return KernelChoice{kernels, multiplier};
}

// Applies a user op as out = inputs[0] op ... op inputs[k-1], chunk by chunk, right
// to left: the last input is copied into a temporary and every earlier input is
// folded in as the left operand. By associativity this is the canonical
// left-to-right result, and the temporary makes any aliasing of `out` harmless.
void ApplyUserOp(const ReduceOp& op, DataType type, absl::Span<const void* const> inputs, void* out,
                 size_t count) {
  const size_t element = DataTypeSize(type);
  const size_t chunk = std::max<size_t>(1, kUserChunkBytes / element);
  const auto temporary = std::make_unique<char[]>(std::min(count, chunk) * element);
  for (size_t start = 0; start < count; start += chunk) {
    const size_t n = std::min(chunk, count - start);
    const size_t offset = start * element;
    std::memcpy(temporary.get(), static_cast<const char*>(inputs.back()) + offset, n * element);
    for (size_t j = inputs.size() - 1; j-- > 0;) {
      op.user_function()(static_cast<const char*>(inputs[j]) + offset, temporary.get(), n, type);
    }
    std::memcpy(static_cast<char*>(out) + offset, temporary.get(), n * element);
  }
}

}  // namespace

absl::Status ReduceLocal(const ReduceOp& op, DataType type, const void* in, void* inout,
                         size_t count) {
  RETURN_IF_ERROR(CheckOpForDataType(op, type));
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
  if (!op.is_predefined()) {
    op.user_function()(in, inout, count, type);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const KernelChoice choice, ChooseKernels(op.predefined(), type));
  choice.kernels->binary(in, inout, inout, count * choice.count_multiplier);
  return absl::OkStatus();
}

absl::Status ReduceTwo(const ReduceOp& op, DataType type, const void* left, const void* right,
                       void* out, size_t count) {
  RETURN_IF_ERROR(CheckOpForDataType(op, type));
  RETURN_IF_ERROR(CheckNotNull("ReduceTwo", "left", left, count));
  RETURN_IF_ERROR(CheckNotNull("ReduceTwo", "right", right, count));
  RETURN_IF_ERROR(CheckNotNull("ReduceTwo", "out", out, count));
  if (count == 0) return absl::OkStatus();
  const Range out_bytes = BytesOf(out, count, type);
  RETURN_IF_ERROR(CheckOutput("ReduceTwo", "left", BytesOf(left, count, type), out_bytes));
  RETURN_IF_ERROR(CheckOutput("ReduceTwo", "right", BytesOf(right, count, type), out_bytes));
  if (!op.is_predefined()) {
    if (out == right && left != right) {
      op.user_function()(left, out, count, type);
    } else {
      const void* inputs[] = {left, right};
      ApplyUserOp(op, type, inputs, out, count);
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const KernelChoice choice, ChooseKernels(op.predefined(), type));
  choice.kernels->binary(left, right, out, count * choice.count_multiplier);
  return absl::OkStatus();
}

absl::Status ReduceMany(const ReduceOp& op, DataType type, absl::Span<const void* const> inputs,
                        void* out, size_t count) {
  RETURN_IF_ERROR(CheckOpForDataType(op, type));
  if (inputs.empty()) {
    return absl::InvalidArgumentError("ReduceMany: `inputs` is empty; give at least one input");
  }
  RETURN_IF_ERROR(CheckNotNull("ReduceMany", "out", out, count));
  const Range out_bytes = BytesOf(out, count, type);
  for (size_t j = 0; j < inputs.size(); ++j) {
    const std::string name = absl::StrCat("inputs[", j, "]");
    RETURN_IF_ERROR(CheckNotNull("ReduceMany", name, inputs[j], count));
    if (count > 0) {
      RETURN_IF_ERROR(CheckOutput("ReduceMany", name, BytesOf(inputs[j], count, type), out_bytes));
    }
  }
  if (count == 0) return absl::OkStatus();
  if (inputs.size() == 1) {
    if (inputs[0] != out) std::memcpy(out, inputs[0], count * DataTypeSize(type));
    return absl::OkStatus();
  }
  if (!op.is_predefined()) {
    ApplyUserOp(op, type, inputs, out, count);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const KernelChoice choice, ChooseKernels(op.predefined(), type));
  if (inputs.size() == 2) {
    choice.kernels->binary(inputs[0], inputs[1], out, count * choice.count_multiplier);
  } else {
    choice.kernels->many(inputs.data(), inputs.size(), out, count * choice.count_multiplier);
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
  const DataType kernel_type = GetDataTypeInfo(type).canonical;
  ops_internal::DivideKernel divide = ops_internal::SimdKernels().divide_at(kernel_type);
  if (divide == nullptr) divide = ops_internal::PortableKernels().divide_at(kernel_type);
  if (divide == nullptr) {
    return absl::InternalError(absl::StrCat("zcoll has no divide kernel for ", DataTypeName(type)));
  }
  divide(data, count, contributions);
  return absl::OkStatus();
}

absl::string_view ReduceKernelTarget() { return ops_internal::SimdKernels().target_name; }

}  // namespace zcoll
