// Reduction operations: the predefined MPI ops, zcoll's AVG, and user-defined ops.
//
// A ReduceOp is a small value (cheap to copy, safe to share across threads) that is
// either one of the predefined ops or a user function with a commutativity flag, the
// analogue of MPI_Op_create. Every API that takes a ReduceOp also takes a
// PredefinedOp directly:
//
//   comm.Allreduce(send, recv, n, DataType::kFloat, PredefinedOp::kSum);
//   ASSIGN_OR_RETURN(ReduceOp concat, ReduceOp::CreateUser(Concat, /*commutative=*/false,
//                                                          "concat"));
//
// Which predefined op may be applied to which datatype is the MPI standard's table
// (MPI-4.1 section 6.9.2; the MPI-2.2 change log, item 11), checked by
// CheckOpForDataType:
//
//   op                    allowed datatype groups
//   MAX, MIN              C integer, multi-language integer, floating point
//   SUM, PROD             C integer, multi-language integer, floating point, complex
//   LAND, LOR, LXOR       C integer, logical
//   BAND, BOR, BXOR       C integer, multi-language integer, byte
//   MINLOC, MAXLOC        value-index pairs
//   AVG (zcoll extension) floating point
//
// "Floating point" includes the float16 and bfloat16 extensions. Characters
// (MPI_CHAR, MPI_WCHAR) take no predefined op. User-defined ops apply to every
// datatype, as in MPI.
//
// REPLACE and NO_OP are left out: the standard defines them only for one-sided
// accumulate operations, which zcoll does not offer.

#ifndef ZCOLL_CORE_REDUCE_OP_H_
#define ZCOLL_CORE_REDUCE_OP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/datatype.h"

namespace zcoll {

enum class PredefinedOp : uint8_t {
  kMax,
  kMin,
  kSum,
  kProd,
  kLand,
  kBand,
  kLor,
  kBor,
  kLxor,
  kBxor,
  kMinloc,
  kMaxloc,
  // zcoll extension, as NCCL's ncclAvg: the sum divided by the number of
  // contributions, applied once after the reduction.
  kAvg,
};

inline constexpr size_t kNumPredefinedOps = static_cast<size_t>(PredefinedOp::kAvg) + 1;

// False for values outside the enum (see IsValidDataType).
constexpr bool IsValidPredefinedOp(PredefinedOp op) {
  return static_cast<size_t>(op) < kNumPredefinedOps;
}

// Every PredefinedOp, in declaration order.
absl::Span<const PredefinedOp> AllPredefinedOps();

// "max", "minloc", "avg": the lower-case name used by tools and benchmarks.
absl::string_view PredefinedOpName(PredefinedOp op);

// "MPI_MAX", ...; "AVG (zcoll extension)" for kAvg.
absl::string_view PredefinedOpMpiName(PredefinedOp op);

// Accepts the lower-case name or the MPI name ("sum", "MPI_SUM").
absl::StatusOr<PredefinedOp> ParsePredefinedOp(absl::string_view name);

namespace reduce_op_internal {
// Per PredefinedOp, the bit set of the DataTypeGroups it accepts (reduce_op.cc).
extern const std::array<uint32_t, kNumPredefinedOps> kAllowedGroups;
}  // namespace reduce_op_internal

// The standard's table (see the file comment). Requires valid arguments. (Inline:
// every reduction checks its pair.)
inline bool IsOpDefinedFor(PredefinedOp op, DataType type) {
  return ((reduce_op_internal::kAllowedGroups[static_cast<size_t>(op)] >>
           static_cast<unsigned>(GetDataTypeInfo(type).group)) &
          1u) != 0;
}

// A user reduction, MPI_User_function's contract with zcoll's types: for each
// i < count, inout[i] = in[i] op inout[i]. `in` is always the left operand, i.e. the
// contribution of the lower ranks in the canonical order, so a non-commutative op sees
// its operands in rank order. The function may be called on any chunk of the
// elements, from any thread zcoll uses, possibly concurrently. It should not throw: an
// exception it throws is caught and ends the call with Unknown naming the op (in a
// collective that fails the job, so that every rank returns at once).
using UserReduceFunction =
    std::function<void(const void* in, void* inout, size_t count, DataType type)>;

class ReduceOp {
 public:
  // Implicit on purpose: a PredefinedOp is a ReduceOp.
  ReduceOp(PredefinedOp op) : predefined_(op) {}  // NOLINT(google-explicit-constructor)

  // MPI_Op_create: `function` must be non-empty; `name` appears in error messages
  // and logs. A non-commutative op is applied in canonical rank order by every
  // collective.
  static absl::StatusOr<ReduceOp> CreateUser(UserReduceFunction function, bool commutative,
                                             absl::string_view name = "user");

  bool is_predefined() const { return user_ == nullptr; }

  // The predefined op; only meaningful when is_predefined().
  PredefinedOp predefined() const { return predefined_; }

  // MPI_Op_commutative: true for every predefined op.
  inline bool commutative() const;

  // The predefined op's name, or the user op's name.
  absl::string_view name() const;

  // The user function; requires !is_predefined().
  const UserReduceFunction& user_function() const;

  // Predefined ops are equal when they are the same op; user ops only to themselves
  // (copies of one CreateUser result).
  friend bool operator==(const ReduceOp& a, const ReduceOp& b) {
    return a.user_ == b.user_ && (a.user_ != nullptr || a.predefined_ == b.predefined_);
  }
  friend bool operator!=(const ReduceOp& a, const ReduceOp& b) { return !(a == b); }

 private:
  struct UserOp {
    UserReduceFunction function;
    bool commutative;
    std::string name;
  };

  PredefinedOp predefined_ = PredefinedOp::kSum;
  std::shared_ptr<const UserOp> user_;
};

// MPI_Op_commutative.
// Inline: every collective call asks.
bool ReduceOp::commutative() const { return user_ == nullptr || user_->commutative; }

inline bool IsCommutative(const ReduceOp& op) { return op.commutative(); }

// OK when `op` may reduce elements of `type`; otherwise InvalidArgument with a
// sentence naming the op, the type, its group and the groups the op accepts (or
// saying which argument is not a valid enum value).
absl::Status CheckOpForDataType(const ReduceOp& op, DataType type);

}  // namespace zcoll

#endif  // ZCOLL_CORE_REDUCE_OP_H_
