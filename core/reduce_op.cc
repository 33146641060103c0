#include "core/reduce_op.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"

namespace zcoll {
namespace {

using G = DataTypeGroup;

constexpr uint32_t Bit(G group) { return uint32_t{1} << static_cast<unsigned>(group); }

struct OpInfo {
  PredefinedOp op;
  absl::string_view name;
  absl::string_view mpi_name;
  uint32_t allowed_groups;  // bit set of DataTypeGroup
};

constexpr uint32_t kIntegers = Bit(G::kCInteger) | Bit(G::kMultiLanguageInteger);

// MPI-4.1 section 6.9.2 (and the MPI-2.2 change log, item 11).
constexpr std::array<OpInfo, kNumPredefinedOps> kOps = {{
    {PredefinedOp::kMax, "max", "MPI_MAX", kIntegers | Bit(G::kFloatingPoint)},
    {PredefinedOp::kMin, "min", "MPI_MIN", kIntegers | Bit(G::kFloatingPoint)},
    {PredefinedOp::kSum, "sum", "MPI_SUM", kIntegers | Bit(G::kFloatingPoint) | Bit(G::kComplex)},
    {PredefinedOp::kProd, "prod", "MPI_PROD",
     kIntegers | Bit(G::kFloatingPoint) | Bit(G::kComplex)},
    // Logical ops take C integers and logicals, but not the multi-language integers
    // (the standard lists "Fortran integer" only for the bit-wise ops).
    {PredefinedOp::kLand, "land", "MPI_LAND", Bit(G::kCInteger) | Bit(G::kLogical)},
    {PredefinedOp::kBand, "band", "MPI_BAND", kIntegers | Bit(G::kByte)},
    {PredefinedOp::kLor, "lor", "MPI_LOR", Bit(G::kCInteger) | Bit(G::kLogical)},
    {PredefinedOp::kBor, "bor", "MPI_BOR", kIntegers | Bit(G::kByte)},
    {PredefinedOp::kLxor, "lxor", "MPI_LXOR", Bit(G::kCInteger) | Bit(G::kLogical)},
    {PredefinedOp::kBxor, "bxor", "MPI_BXOR", kIntegers | Bit(G::kByte)},
    {PredefinedOp::kMinloc, "minloc", "MPI_MINLOC", Bit(G::kPair)},
    {PredefinedOp::kMaxloc, "maxloc", "MPI_MAXLOC", Bit(G::kPair)},
    {PredefinedOp::kAvg, "avg", "AVG (zcoll extension)", Bit(G::kFloatingPoint)},
}};

constexpr bool TableIsIndexedByOp() {
  for (size_t i = 0; i < kOps.size(); ++i) {
    if (static_cast<size_t>(kOps[i].op) != i) return false;
  }
  return true;
}
static_assert(TableIsIndexedByOp(), "kOps must list PredefinedOp values in order");

constexpr std::array<PredefinedOp, kNumPredefinedOps> AllOpsInOrder() {
  std::array<PredefinedOp, kNumPredefinedOps> ops{};
  for (size_t i = 0; i < kNumPredefinedOps; ++i) ops[i] = static_cast<PredefinedOp>(i);
  return ops;
}
constexpr std::array<PredefinedOp, kNumPredefinedOps> kAllOps = AllOpsInOrder();

const OpInfo& Info(PredefinedOp op) { return kOps[static_cast<size_t>(op)]; }

std::string AllowedGroupsText(uint32_t allowed) {
  std::vector<std::string> names;
  for (G group : {G::kCInteger, G::kMultiLanguageInteger, G::kFloatingPoint, G::kComplex,
                  G::kLogical, G::kByte, G::kCharacter, G::kPair}) {
    if (allowed & Bit(group)) names.emplace_back(DataTypeGroupName(group));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::Span<const PredefinedOp> AllPredefinedOps() { return kAllOps; }

absl::string_view PredefinedOpName(PredefinedOp op) { return Info(op).name; }

absl::string_view PredefinedOpMpiName(PredefinedOp op) { return Info(op).mpi_name; }

absl::StatusOr<PredefinedOp> ParsePredefinedOp(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const OpInfo& info : kOps) {
    if (lower == info.name || lower == absl::StrCat("mpi_", info.name)) return info.op;
  }
  std::vector<std::string> names;
  for (const OpInfo& info : kOps) names.emplace_back(info.name);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown reduction op '", name, "'; expected one of ", absl::StrJoin(names, ", ")));
}

namespace reduce_op_internal {
constexpr std::array<uint32_t, kNumPredefinedOps> AllowedGroupsInOrder() {
  std::array<uint32_t, kNumPredefinedOps> allowed{};
  for (size_t i = 0; i < kNumPredefinedOps; ++i) allowed[i] = kOps[i].allowed_groups;
  return allowed;
}
const std::array<uint32_t, kNumPredefinedOps> kAllowedGroups = AllowedGroupsInOrder();
}  // namespace reduce_op_internal

absl::StatusOr<ReduceOp> ReduceOp::CreateUser(UserReduceFunction function, bool commutative,
                                              absl::string_view name) {
  if (!function) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReduceOp::CreateUser: the function of user op '", name, "' is empty"));
  }
  ReduceOp op(PredefinedOp::kSum);
  op.user_ =
      std::make_shared<const UserOp>(UserOp{std::move(function), commutative, std::string(name)});
  return op;
}

absl::string_view ReduceOp::name() const {
  return user_ == nullptr ? PredefinedOpName(predefined_) : absl::string_view(user_->name);
}

const UserReduceFunction& ReduceOp::user_function() const {
  ZCOLL_CHECK(user_ != nullptr) << "user_function() called on predefined op " << name();
  return user_->function;
}

absl::Status CheckOpForDataType(const ReduceOp& op, DataType type) {
  if (!IsValidDataType(type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("datatype value ", static_cast<int>(type), " is not a zcoll::DataType"));
  }
  if (op.is_predefined() && !IsValidPredefinedOp(op.predefined())) {
    return absl::InvalidArgumentError(absl::StrCat("op value ", static_cast<int>(op.predefined()),
                                                   " is not a zcoll::PredefinedOp"));
  }
  if (!op.is_predefined() || IsOpDefinedFor(op.predefined(), type)) {
    return absl::OkStatus();
  }
  const DataTypeInfo& type_info = GetDataTypeInfo(type);
  const OpInfo& op_info = Info(op.predefined());
  return absl::InvalidArgumentError(absl::StrCat(
      "reduction op ", op_info.mpi_name, " is not defined for datatype ", type_info.name,
      type_info.mpi_name.empty() ? "" : absl::StrCat(" (", type_info.mpi_name, ")"), ", a ",
      DataTypeGroupName(type_info.group), " type; ", op_info.mpi_name, " accepts only ",
      AllowedGroupsText(op_info.allowed_groups), " types"));
}

}  // namespace zcoll
