// Groups and the communicators made of them: a job's ranks split into teams by group
// arithmetic (MPI_Group_*), made into communicators at once with Create (every rank of
// the parent calls it), and a communicator of the team leaders made with CreateGroup
// (only the leaders call it; the others are busy elsewhere).
//
//   bazel build //examples:groups
//   bazel run //tools:zcoll_run -- -n 6 bazel-bin/examples/groups

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "zcoll/zcoll.h"

namespace {

int Fail(int rank, const char* what, const absl::Status& status) {
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main() {
  absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create({});
  if (!comm.ok()) return Fail(-1, "Create", comm.status());
  const int rank = comm->rank(), size = comm->size();
  const zcoll::Group world = comm->group();

  // Teams of (up to) three consecutive ranks, each team's group listed backwards (its
  // last rank leads it). Every rank passes its own team's group: Create makes every
  // team's communicator in one call.
  const int team = rank / 3, first = team * 3, last = std::min(size, first + 3) - 1;
  absl::StatusOr<zcoll::Group> mine = world.RangeIncl({{last, first, -1}});
  if (!mine.ok()) return Fail(rank, "RangeIncl", mine.status());
  absl::StatusOr<std::optional<zcoll::Communicator>> team_comm = comm->Create(*mine);
  if (!team_comm.ok()) return Fail(rank, "Create(group)", team_comm.status());
  zcoll::Communicator& members = **team_comm;

  // Each team sums its ranks.
  int team_sum = 0;
  absl::Status status =
      members.Allreduce(&rank, &team_sum, 1, zcoll::DataType::kInt32, zcoll::PredefinedOp::kSum);
  if (!status.ok()) return Fail(rank, "team Allreduce", status);

  // The leaders (rank 0 of each team communicator, its highest job rank) form their
  // own communicator; the other ranks do not take part in making it.
  std::vector<int> leaders;
  for (int r = size - 1; r >= 0; --r) {
    if (r == size - 1 || r % 3 == 2) leaders.push_back(r);
  }
  int total = -1;
  if (members.rank() == 0) {
    absl::StatusOr<zcoll::Group> leader_group = world.Incl(leaders);
    if (!leader_group.ok()) return Fail(rank, "Incl", leader_group.status());
    absl::StatusOr<std::optional<zcoll::Communicator>> leader_comm =
        comm->CreateGroup(*leader_group, /*tag=*/7);
    if (!leader_comm.ok()) return Fail(rank, "CreateGroup", leader_comm.status());
    status =
        (*leader_comm)
            ->Allreduce(&team_sum, &total, 1, zcoll::DataType::kInt32, zcoll::PredefinedOp::kSum);
    if (!status.ok()) return Fail(rank, "leaders' Allreduce", status);
  }
  // Each leader tells its team.
  status = members.Bcast(&total, 1, zcoll::DataType::kInt32, 0);
  if (!status.ok()) return Fail(rank, "team Bcast", status);

  int expected_team = 0;
  for (int r = first; r <= last; ++r) expected_team += r;
  const bool ok = team_sum == expected_team && total == size * (size - 1) / 2 &&
                  members.group().job_rank(0) == last;
  std::printf("rank %d: team %d (%d ranks) sums %d, all teams %d: %s\n", rank, team, members.size(),
              team_sum, total, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
