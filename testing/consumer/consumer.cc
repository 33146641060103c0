// Builds against zcoll the way a user's project does and checks a few public facts.
// Exit status 0 only if they hold.

#include <cstdio>
#include <thread>
#include <vector>

#include "zcoll/zcoll.h"

// Two ranks as threads of this process: Create, Split, Barrier, a typed Allreduce
// (the public header's templates, built with this project's flags).
bool InProcessJobWorks() {
  constexpr int kRanks = 2;
  float sums_seen[kRanks][2] = {};
  absl::StatusOr<std::vector<std::unique_ptr<zcoll::Bootstrap>>> bootstraps =
      zcoll::CreateInProcessBootstraps(kRanks);
  if (!bootstraps.ok()) return false;
  std::shared_ptr<zcoll::LoopbackFabric> fabric = zcoll::LoopbackFabric::Create(kRanks);
  int sizes_seen[kRanks] = {};
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.emplace_back([&, rank] {
      zcoll::CommunicatorOptions options;
      options.bootstrap = std::move((*bootstraps)[rank]);
      absl::StatusOr<std::unique_ptr<zcoll::Transport>> transport = fabric->CreateTransport(rank);
      if (!transport.ok()) return;
      options.transport = std::move(*transport);
      absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create(std::move(options));
      if (!comm.ok()) return;
      absl::StatusOr<std::optional<zcoll::Communicator>> alone = comm->Split(rank, 0);
      if (!alone.ok() || !alone->has_value() || !comm->Barrier().ok()) return;
      sizes_seen[rank] = comm->size() * 10 + (*alone)->size();
      const std::vector<float> mine = {static_cast<float>(rank), 1.0f};
      if (!comm->Allreduce<float>(mine, absl::MakeSpan(sums_seen[rank]), zcoll::PredefinedOp::kSum)
               .ok()) {
        return;
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  return sizes_seen[0] == 21 && sizes_seen[1] == 21 && sums_seen[0][0] == 1 &&
         sums_seen[0][1] == 2 && sums_seen[1][0] == 1 && sums_seen[1][1] == 2;
}

int main() {
  std::printf("consumer linked zcoll %.*s\n", static_cast<int>(zcoll::kVersion.size()),
              zcoll::kVersion.data());
  const absl::Status refused =
      zcoll::CheckOpForDataType(zcoll::PredefinedOp::kMax, zcoll::DataType::kCFloatComplex);
  const absl::Status allowed =
      zcoll::CheckOpForDataType(zcoll::PredefinedOp::kSum, zcoll::kDataTypeOf<float>);
  absl::StatusOr<zcoll::Topology> topology = zcoll::Topology::Uniform(2, 2);
  float in[3] = {1, 2, 3}, inout[3] = {10, 20, 30};
  const absl::Status reduced =
      zcoll::ReduceLocal(zcoll::PredefinedOp::kSum, zcoll::DataType::kFloat, in, inout, 3);
  // Outside a launcher, Create says how to start a job instead of hanging.
  const absl::Status no_job = zcoll::Communicator::Create({}).status();
  if (no_job.ok() || no_job.message().find("ZCOLL_RANK") == absl::string_view::npos) {
    std::fprintf(stderr, "consumer: Create outside a job: %s\n", no_job.ToString().c_str());
    return 1;
  }
  if (!InProcessJobWorks()) {
    std::fprintf(stderr, "consumer: an in-process job of two ranks failed\n");
    return 1;
  }
  if (refused.ok() || !allowed.ok() || !topology.ok() || topology->num_nodes() != 2 ||
      !reduced.ok() || inout[2] != 33) {
    std::fprintf(stderr, "consumer: zcoll's public API misbehaves\n");
    return 1;
  }
  std::printf("MAX on complex: %s\n", refused.ToString().c_str());
  std::printf("topology: %s\n", topology->ToString().c_str());
  std::printf("ReduceLocal sum: %g %g %g on %.*s\n", inout[0], inout[1], inout[2],
              static_cast<int>(zcoll::ReduceKernelTarget().size()),
              zcoll::ReduceKernelTarget().data());
  return 0;
}
