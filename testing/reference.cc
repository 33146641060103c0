#include "testing/reference.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/reduce.h"

namespace zcoll::testing {

ReduceOp DigitsInRankOrder() {
  static const ReduceOp op = *ReduceOp::CreateUser(
      [](const void* in, void* inout, size_t count, DataType) {
        const auto* left = static_cast<const int64_t*>(in);
        auto* right = static_cast<int64_t*>(inout);
        for (size_t i = 0; i < count; ++i) {
          int64_t scale = 1;
          while (scale <= right[i]) scale *= 10;
          right[i] = left[i] * scale + right[i];
        }
      },
      /*commutative=*/false, "digits");
  return op;
}
namespace {

absl::Status CheckInputs(absl::string_view what, DataType type, const RankBytes& inputs,
                         size_t count) {
  if (inputs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": no ranks"));
  }
  const size_t bytes = count * DataTypeSize(type);
  for (size_t rank = 0; rank < inputs.size(); ++rank) {
    if (inputs[rank].size() < bytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": rank ", rank, " has ",
                                                     inputs[rank].size(), " bytes, fewer than ",
                                                     count, " elements of ", DataTypeName(type)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCounts(absl::string_view what, size_t ranks, absl::Span<const size_t> counts) {
  if (counts.size() != ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", counts.size(), " counts for ", ranks, " ranks"));
  }
  return absl::OkStatus();
}

// acc = acc op next, the accumulated lower ranks on the left.
absl::Status Fold(const ReduceOp& op, DataType type, Bytes& acc, const char* next, size_t count) {
  if (count == 0) return absl::OkStatus();
  return ReduceTwo(op, type, acc.data(), next, acc.data(), count);
}

// Folds ranks [0, ranks) of `inputs`; AVG sums and divides once.
absl::StatusOr<Bytes> FoldRanks(const ReduceOp& op, DataType type, const RankBytes& inputs,
                                size_t ranks, size_t count) {
  const bool average = op.is_predefined() && op.predefined() == PredefinedOp::kAvg;
  const ReduceOp folding = average ? ReduceOp(PredefinedOp::kSum) : op;
  Bytes acc(inputs[0].begin(), inputs[0].begin() + count * DataTypeSize(type));
  for (size_t rank = 1; rank < ranks; ++rank) {
    RETURN_IF_ERROR(Fold(folding, type, acc, inputs[rank].data(), count));
  }
  if (average && count > 0) RETURN_IF_ERROR(FinishAverage(type, acc.data(), count, ranks));
  return acc;
}

}  // namespace

absl::StatusOr<Bytes> ReferenceReduce(const ReduceOp& op, DataType type, const RankBytes& inputs,
                                      size_t count) {
  RETURN_IF_ERROR(CheckInputs("ReferenceReduce", type, inputs, count));
  return FoldRanks(op, type, inputs, inputs.size(), count);
}

absl::StatusOr<RankBytes> ReferenceReduceScatter(const ReduceOp& op, DataType type,
                                                 const RankBytes& inputs,
                                                 absl::Span<const size_t> counts) {
  RETURN_IF_ERROR(CheckCounts("ReferenceReduceScatter", inputs.size(), counts));
  size_t total = 0;
  for (size_t count : counts) total += count;
  ASSIGN_OR_RETURN(const Bytes reduced, ReferenceReduce(op, type, inputs, total));
  const size_t element = DataTypeSize(type);
  RankBytes results(inputs.size());
  size_t offset = 0;
  for (size_t rank = 0; rank < inputs.size(); ++rank) {
    results[rank].assign(reduced.begin() + offset * element,
                         reduced.begin() + (offset + counts[rank]) * element);
    offset += counts[rank];
  }
  return results;
}

absl::StatusOr<RankBytes> ReferenceScatterv(DataType type, const Bytes& root_send,
                                            absl::Span<const size_t> counts,
                                            absl::Span<const size_t> displs) {
  RETURN_IF_ERROR(CheckCounts("ReferenceScatterv", counts.size(), displs));
  const size_t element = DataTypeSize(type);
  RankBytes results(counts.size());
  for (size_t rank = 0; rank < counts.size(); ++rank) {
    if ((displs[rank] + counts[rank]) * element > root_send.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ReferenceScatterv: rank ", rank, "'s slice [", displs[rank], ", ",
                       displs[rank] + counts[rank], ") lies outside the root's ",
                       root_send.size() / element, " elements"));
    }
    results[rank].assign(root_send.begin() + displs[rank] * element,
                         root_send.begin() + (displs[rank] + counts[rank]) * element);
  }
  return results;
}

absl::StatusOr<Bytes> ReferenceGatherv(DataType type, const RankBytes& inputs,
                                       absl::Span<const size_t> counts,
                                       absl::Span<const size_t> displs, const Bytes& initial) {
  RETURN_IF_ERROR(CheckCounts("ReferenceGatherv", inputs.size(), counts));
  RETURN_IF_ERROR(CheckCounts("ReferenceGatherv", inputs.size(), displs));
  const size_t element = DataTypeSize(type);
  Bytes gathered = initial;
  for (size_t rank = 0; rank < inputs.size(); ++rank) {
    const size_t bytes = counts[rank] * element;
    if (inputs[rank].size() < bytes || displs[rank] * element + bytes > gathered.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ReferenceGatherv: rank ", rank, "'s ", counts[rank], " elements at ", displs[rank],
          " do not fit its buffer or the root's ", gathered.size() / element, " elements"));
    }
    if (bytes > 0)
      std::memcpy(gathered.data() + displs[rank] * element, inputs[rank].data(), bytes);
  }
  return gathered;
}

absl::StatusOr<RankBytes> ReferenceAlltoall(DataType type, const RankBytes& inputs, size_t count) {
  RETURN_IF_ERROR(CheckInputs("ReferenceAlltoall", type, inputs, count * inputs.size()));
  const size_t block = count * DataTypeSize(type);
  const size_t ranks = inputs.size();
  RankBytes results(ranks, Bytes(block * ranks));
  for (size_t to = 0; to < ranks; ++to) {
    for (size_t from = 0; from < ranks; ++from) {
      if (block > 0) {
        std::memcpy(results[to].data() + from * block, inputs[from].data() + to * block, block);
      }
    }
  }
  return results;
}

absl::StatusOr<RankBytes> ReferenceScan(const ReduceOp& op, DataType type, const RankBytes& inputs,
                                        size_t count, bool exclusive) {
  RETURN_IF_ERROR(
      CheckInputs(exclusive ? "ReferenceExscan" : "ReferenceScan", type, inputs, count));
  RankBytes results(inputs.size());
  for (size_t rank = exclusive ? 1 : 0; rank < inputs.size(); ++rank) {
    ASSIGN_OR_RETURN(results[rank],
                     FoldRanks(op, type, inputs, exclusive ? rank : rank + 1, count));
  }
  return results;
}

}  // namespace zcoll::testing
