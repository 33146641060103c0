#include "core/group.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace zcoll {

namespace {

absl::flat_hash_set<int> MemberSet(const Group& group) {
  return absl::flat_hash_set<int>(group.job_ranks().begin(), group.job_ranks().end());
}

// Groups made of two keep the holder either one knows.
int Holder(int a, int b) { return a >= 0 ? a : b; }

}  // namespace

absl::StatusOr<Group> Group::FromJobRanks(std::vector<int> members, int self) {
  absl::flat_hash_set<int> seen;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Group: member ", i, " is ", members[i], "; a job rank is >= 0"));
    }
    if (!seen.insert(members[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Group: job rank ", members[i], " is listed twice (member ", i, ")"));
    }
  }
  return Group(std::move(members), self);
}

int Group::rank() const { return self_ < 0 ? kUndefinedRank : RankOf(self_); }

int Group::RankOf(int job_rank) const {
  const auto found = std::find(members_.begin(), members_.end(), job_rank);
  return found == members_.end() ? kUndefinedRank : static_cast<int>(found - members_.begin());
}

absl::Status Group::CheckRanks(absl::Span<const int> ranks, const char* call) const {
  std::vector<bool> named(members_.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int rank = ranks[i];
    if (rank < 0 || rank >= size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          call, ": ranks[", i, "] = ", rank, " is not a rank of this ", size(), "-process group"));
    }
    if (named[rank]) {
      return absl::InvalidArgumentError(
          absl::StrCat(call, ": rank ", rank, " is named twice (ranks[", i, "])"));
    }
    named[rank] = true;
  }
  return absl::OkStatus();
}

Group Group::Pick(absl::Span<const int> ranks) const {
  std::vector<int> picked;
  picked.reserve(ranks.size());
  for (int rank : ranks) picked.push_back(members_[rank]);
  return Group(std::move(picked), self_);
}

absl::StatusOr<Group> Group::Incl(absl::Span<const int> ranks) const {
  if (absl::Status checked = CheckRanks(ranks, "Group::Incl"); !checked.ok()) return checked;
  return Pick(ranks);
}

absl::StatusOr<Group> Group::Excl(absl::Span<const int> ranks) const {
  if (absl::Status checked = CheckRanks(ranks, "Group::Excl"); !checked.ok()) return checked;
  std::vector<bool> excluded(members_.size());
  for (int rank : ranks) excluded[rank] = true;
  std::vector<int> kept;
  for (int rank = 0; rank < size(); ++rank) {
    if (!excluded[rank]) kept.push_back(rank);
  }
  return Pick(kept);
}

absl::StatusOr<std::vector<int>> Group::Expand(absl::Span<const Range> ranges,
                                               const char* call) const {
  std::vector<int> ranks;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Range& range = ranges[i];
    if (range.stride == 0) {
      return absl::InvalidArgumentError(absl::StrCat(call, ": ranges[", i, "] has stride 0"));
    }
    // The ranks first + k * stride for k = 0 .. (last - first) / stride (none when that
    // is negative), counted first so that a range far outside the group is refused
    // without walking it.
    const int64_t steps = (int64_t{range.last} - range.first) / range.stride;
    if (steps < 0) continue;
    if (steps >= size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(call, ": ranges[", i, "] = (", range.first, ", ", range.last, ", ",
                       range.stride, ") names ", steps + 1, " ranks; this group has ", size()));
    }
    for (int64_t k = 0; k <= steps; ++k) {
      const int64_t rank = range.first + k * range.stride;
      if (rank < 0 || rank >= size()) {
        return absl::InvalidArgumentError(absl::StrCat(call, ": ranges[", i, "] reaches ", rank,
                                                       ", not a rank of this ", size(),
                                                       "-process group"));
      }
      ranks.push_back(static_cast<int>(rank));
    }
  }
  if (absl::Status checked = CheckRanks(ranks, call); !checked.ok()) return checked;
  return ranks;
}

absl::StatusOr<Group> Group::RangeIncl(absl::Span<const Range> ranges) const {
  absl::StatusOr<std::vector<int>> ranks = Expand(ranges, "Group::RangeIncl");
  if (!ranks.ok()) return ranks.status();
  return Pick(*ranks);
}

absl::StatusOr<Group> Group::RangeExcl(absl::Span<const Range> ranges) const {
  absl::StatusOr<std::vector<int>> ranks = Expand(ranges, "Group::RangeExcl");
  if (!ranks.ok()) return ranks.status();
  return Excl(*ranks);
}

Group Group::Union(const Group& a, const Group& b) {
  const absl::flat_hash_set<int> in_a = MemberSet(a);
  std::vector<int> members = a.members_;
  for (int member : b.members_) {
    if (!in_a.contains(member)) members.push_back(member);
  }
  return Group(std::move(members), Holder(a.self_, b.self_));
}

Group Group::Intersection(const Group& a, const Group& b) {
  const absl::flat_hash_set<int> in_b = MemberSet(b);
  std::vector<int> members;
  for (int member : a.members_) {
    if (in_b.contains(member)) members.push_back(member);
  }
  return Group(std::move(members), Holder(a.self_, b.self_));
}

Group Group::Difference(const Group& a, const Group& b) {
  const absl::flat_hash_set<int> in_b = MemberSet(b);
  std::vector<int> members;
  for (int member : a.members_) {
    if (!in_b.contains(member)) members.push_back(member);
  }
  return Group(std::move(members), Holder(a.self_, b.self_));
}

absl::StatusOr<std::vector<int>> Group::TranslateRanks(absl::Span<const int> ranks,
                                                       const Group& other) const {
  absl::flat_hash_map<int, int> rank_in_other;
  for (int r = 0; r < other.size(); ++r) rank_in_other[other.members_[r]] = r;
  std::vector<int> translated;
  translated.reserve(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int rank = ranks[i];
    if (rank == kProcNull) {
      translated.push_back(kProcNull);
      continue;
    }
    if (rank < 0 || rank >= size()) {
      return absl::InvalidArgumentError(absl::StrCat("Group::TranslateRanks: ranks[", i,
                                                     "] = ", rank, " is not a rank of this ",
                                                     size(), "-process group"));
    }
    const auto found = rank_in_other.find(members_[rank]);
    translated.push_back(found == rank_in_other.end() ? kUndefinedRank : found->second);
  }
  return translated;
}

GroupComparison Group::Compare(const Group& a, const Group& b) {
  if (a.members_ == b.members_) return GroupComparison::kIdentical;
  if (a.size() != b.size()) return GroupComparison::kUnequal;
  std::vector<int> sorted_a = a.members_, sorted_b = b.members_;
  std::sort(sorted_a.begin(), sorted_a.end());
  std::sort(sorted_b.begin(), sorted_b.end());
  return sorted_a == sorted_b ? GroupComparison::kSimilar : GroupComparison::kUnequal;
}

}  // namespace zcoll
