// Two coupled models on one job, as climate codes couple an ocean and an atmosphere:
// each model runs on its own group of ranks and its own communicator, and an
// intercommunicator carries what one model hands the other. Every step each model
// reduces its boundary field onto the other model's ranks (an intercommunicator
// Allreduce: each group gets the other's sum), the ocean's rank 0 broadcasts a
// control value to every atmosphere rank (a rooted collective: kRoot / kProcNull in
// the root's group, the root's rank in the other), and at the end the two merge into
// one communicator for a joint checkpoint.
//
//   bazel build //examples:coupled_models
//   bazel run //tools:zcoll_run -- -n 5 bazel-bin/examples/coupled_models

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
  absl::StatusOr<zcoll::Communicator> world = zcoll::Communicator::Create({});
  if (!world.ok()) return Fail(-1, "Create", world.status());
  const int rank = world->rank(), size = world->size();
  if (size < 2) {
    std::printf("rank %d: coupled_models needs 2 ranks or more: ok (nothing to couple)\n", rank);
    return 0;
  }
  // The ocean: the first half of the ranks (rounded down, at least one); the rest is
  // the atmosphere.
  const int ocean_size = size / 2;
  const bool ocean = rank < ocean_size;
  absl::StatusOr<std::optional<zcoll::Communicator>> model = world->Split(ocean ? 0 : 1, rank);
  if (!model.ok()) return Fail(rank, "Split", model.status());
  // Each model's rank 0 leads it; the world communicator carries the leaders' meeting.
  absl::StatusOr<zcoll::Intercommunicator> coupler = zcoll::Intercommunicator::Create(
      **model, /*local_leader=*/0, *world, /*remote_leader=*/ocean ? ocean_size : 0, /*tag=*/1);
  if (!coupler.ok()) return Fail(rank, "Intercommunicator::Create", coupler.status());

  bool ok = true;
  for (int step = 0; step < 10; ++step) {
    // This rank's boundary values: its world rank plus the step.
    std::vector<double> boundary = {static_cast<double>(rank + step), 1.0}, from_other(2);
    absl::Status status = coupler->Allreduce(boundary.data(), from_other.data(), 2,
                                             zcoll::DataType::kDouble, zcoll::PredefinedOp::kSum);
    if (!status.ok()) return Fail(rank, "coupler Allreduce", status);
    // The other model's ranks, and the sum of their world ranks plus the step each.
    const int first = ocean ? ocean_size : 0, count = ocean ? size - ocean_size : ocean_size;
    double expected = 0;
    for (int r = first; r < first + count; ++r) expected += r + step;
    ok = ok && from_other[0] == expected && from_other[1] == count;

    // The ocean's rank 0 sends the atmosphere this step's control value.
    const int root = ocean ? (coupler->rank() == 0 ? zcoll::kRoot : zcoll::kProcNull) : 0;
    int control = ocean && coupler->rank() == 0 ? 100 + step : -1;
    status = coupler->Bcast(&control, 1, zcoll::DataType::kInt32, root);
    if (!status.ok()) return Fail(rank, "coupler Bcast", status);
    if (!ocean) ok = ok && control == 100 + step;
  }
  // One communicator for both, the atmosphere first (the ocean passes high = true).
  absl::StatusOr<zcoll::Communicator> joint = coupler->Merge(/*high=*/ocean);
  if (!joint.ok()) return Fail(rank, "Merge", joint.status());
  const int expected_rank = ocean ? (size - ocean_size) + rank : rank - ocean_size;
  ok = ok && joint->rank() == expected_rank;
  std::printf("rank %d (%s, joint rank %d): %s\n", rank, ocean ? "ocean" : "atmosphere",
              joint->rank(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
