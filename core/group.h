// Group: an ordered set of the job's processes (MPI_Group), a plain value.
//
// A group's members are the job ranks of its processes (the ranks of the job's first
// communicator, Communicator::Create), in the group's order: member i has rank i in
// the group. Communicator::group() gives a communicator's; the operations here make
// new groups from old ones without communication, as MPI's group calls do, and
// Communicator::Create(group) / CreateGroup(group, tag) make communicators of them.
//
//   zcoll::Group evens = *comm.group().RangeIncl({{0, comm.size() - 1, 2}});
//   absl::StatusOr<std::optional<zcoll::Communicator>> made = comm.Create(evens);
//
// A group remembers which process holds it (its job rank), so that rank() can say
// where that process lies in it (kUndefinedRank, MPI_UNDEFINED, when it is not a
// member). Groups derived from one another keep that process.

#ifndef ZCOLL_CORE_GROUP_H_
#define ZCOLL_CORE_GROUP_H_

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace zcoll {

// "Not a member" (MPI_UNDEFINED): Group::rank() of a process outside the group, and
// TranslateRanks's answer for a process the other group lacks.
inline constexpr int kUndefinedRank = -1;
// MPI_PROC_NULL: "no process". TranslateRanks maps it to itself; on an
// intercommunicator, the root group's ranks other than the root pass it as `root`.
inline constexpr int kProcNull = -2;

// MPI_IDENT, MPI_SIMILAR, MPI_UNEQUAL.
enum class GroupComparison { kIdentical, kSimilar, kUnequal };

class Group {
 public:
  // The empty group (MPI_GROUP_EMPTY). (No default constructor: `{}` stays
  // CommunicatorOptions in Communicator::Create({}).)
  static Group Empty() { return Group({}, -1); }
  // `members` (distinct job ranks, each >= 0) in order, as held by job rank `self`
  // (-1: by no member in particular). InvalidArgument for a negative or repeated
  // member.
  static absl::StatusOr<Group> FromJobRanks(std::vector<int> members, int self = -1);

  int size() const { return static_cast<int>(members_.size()); }
  // The holding process's rank in the group, or kUndefinedRank.
  int rank() const;
  // The job rank of group rank `rank` (0 <= rank < size()).
  int job_rank(int rank) const { return members_[rank]; }
  absl::Span<const int> job_ranks() const { return members_; }
  // The group rank of job rank `job_rank`, or kUndefinedRank.
  int RankOf(int job_rank) const;

  // MPI_Group_incl: the members at `ranks`, in that order. InvalidArgument naming the
  // entry for a rank outside the group or one named twice.
  absl::StatusOr<Group> Incl(absl::Span<const int> ranks) const;
  // MPI_Group_excl: the members but those at `ranks`, in the group's order. Same
  // errors.
  absl::StatusOr<Group> Excl(absl::Span<const int> ranks) const;
  // A range of ranks (MPI_Group_range_incl's triplets): first, first + stride, ...
  // while not past `last` (stride may be negative, never 0).
  struct Range {
    int first = 0;
    int last = 0;
    int stride = 1;
  };
  // MPI_Group_range_incl / _excl: Incl / Excl of the ranks the ranges name, in order.
  // InvalidArgument for a zero stride, a rank outside the group, or a rank named
  // twice.
  absl::StatusOr<Group> RangeIncl(absl::Span<const Range> ranges) const;
  absl::StatusOr<Group> RangeExcl(absl::Span<const Range> ranges) const;

  // MPI_Group_union: `a`'s members, then `b`'s that `a` lacks, each in its order.
  static Group Union(const Group& a, const Group& b);
  // MPI_Group_intersection: `a`'s members that `b` has, in `a`'s order.
  static Group Intersection(const Group& a, const Group& b);
  // MPI_Group_difference: `a`'s members that `b` lacks, in `a`'s order.
  static Group Difference(const Group& a, const Group& b);

  // MPI_Group_translate_ranks: for each of `ranks` (of this group, or kProcNull), its
  // rank in `other` (kUndefinedRank where `other` lacks that process; kProcNull for
  // kProcNull). InvalidArgument naming the entry for a rank outside this group.
  absl::StatusOr<std::vector<int>> TranslateRanks(absl::Span<const int> ranks,
                                                  const Group& other) const;

  // MPI_Group_compare: identical (same members, same order), similar (same members),
  // or unequal.
  static GroupComparison Compare(const Group& a, const Group& b);

  friend bool operator==(const Group& a, const Group& b) { return a.members_ == b.members_; }

 private:
  Group(std::vector<int> members, int self) : members_(std::move(members)), self_(self) {}
  // The group of `ranks` of this one (already checked), holding self_.
  Group Pick(absl::Span<const int> ranks) const;
  // The ranks of this group that `ranges` name, or InvalidArgument.
  absl::StatusOr<std::vector<int>> Expand(absl::Span<const Range> ranges, const char* call) const;
  // `ranks` are ranks of this group, none twice; InvalidArgument naming `call` if not.
  absl::Status CheckRanks(absl::Span<const int> ranks, const char* call) const;

  std::vector<int> members_;
  int self_ = -1;
};

}  // namespace zcoll

#endif  // ZCOLL_CORE_GROUP_H_
