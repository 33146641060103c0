#include "testing/communicator_harness.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "transport/bootstrap/fork_meeting_bootstrap.h"
#include "transport/bootstrap/forked_job.h"
#include "transport/bootstrap/in_process_bootstrap.h"
#include "transport/loopback/loopback_transport.h"

namespace zcoll::testing {
namespace {

// A Die()d process exits with this, so that the parent can tell it from a failure.
constexpr int kDiedOnPurpose = 77;

class ThreadRank final : public RankControl {
 public:
  bool is_process() const override { return false; }
  [[noreturn]] void Die() override {
    std::fprintf(stderr, "RankControl::Die is for processes only\n");
    std::abort();
  }
};

class ProcessRank final : public RankControl {
 public:
  bool is_process() const override { return true; }
  [[noreturn]] void Die() override {
    std::fflush(nullptr);
    _exit(kDiedOnPurpose);
  }
};

absl::Status RunThreads(const CommunicatorJob& job,
                        const std::function<void(Communicator&, RankControl&)>& body) {
  absl::StatusOr<std::vector<std::unique_ptr<Bootstrap>>> bootstraps =
      CreateInProcessBootstraps(job.size);
  if (!bootstraps.ok()) return bootstraps.status();
  const std::shared_ptr<LoopbackFabric> fabric = LoopbackFabric::Create(job.size);
  std::vector<std::string> errors(job.size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < job.size; ++rank) {
    threads.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<Transport>> transport = fabric->CreateTransport(rank);
      if (!transport.ok()) {
        errors[rank] = transport.status().ToString();
        return;
      }
      CommunicatorOptions options;
      options.timeout = job.communicator_timeout;
      options.bootstrap = std::move((*bootstraps)[rank]);
      options.transport = std::move(*transport);
      options.emulated_nodes = job.nodes;
      options.emulated_numa_domains = job.numa_domains;
      options.emulated_l3_groups = job.l3_groups;
      absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
      if (!comm.ok()) {
        errors[rank] = comm.status().ToString();
        return;
      }
      ThreadRank control;
      body(*comm, control);
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::string> failed;
  for (int rank = 0; rank < job.size; ++rank) {
    if (!errors[rank].empty()) failed.push_back(absl::StrCat("rank ", rank, ": ", errors[rank]));
  }
  if (!failed.empty()) return absl::InternalError(absl::StrJoin(failed, "; "));
  return absl::OkStatus();
}

int RunChild(const CommunicatorJob& job, int rank, ForkMeeting& meeting,
             const std::function<void(Communicator&, RankControl&)>& body) {
  setenv("ZCOLL_LOCAL_PROVIDER", job.local_provider.c_str(), 1);
  setenv("ZCOLL_PROVIDER", job.network_provider.c_str(), 1);
  // libfabric's rxm (under ofi:tcp) zeroes its bounce buffers when an endpoint is
  // enabled: 16 KiB each by default, 0.3 s of page faults a rank here and 1-2 s under
  // ThreadSanitizer, whose memset marks every byte (an 8-rank job 2.3 s -> 1.1 s with
  // 4 KiB). The collectives only see a smaller inject size, which zcoll reads from the
  // provider; transport/conformance_test keeps the provider's defaults, and a variable
  // already set wins.
  if (absl::StartsWith(job.network_provider, "ofi:")) {
    setenv("FI_OFI_RXM_BUFFER_SIZE", "4096", /*overwrite=*/0);
  }
  CommunicatorOptions options;
  options.timeout = job.communicator_timeout;
  options.bootstrap = std::make_unique<ForkMeetingBootstrap>(meeting, rank, job.size);
  options.emulated_nodes = job.nodes;
  options.emulated_numa_domains = job.numa_domains;
  options.emulated_l3_groups = job.l3_groups;
  absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: Create: %s\n", rank, comm.status().ToString().c_str());
    return 2;
  }
  ProcessRank control;
  body(*comm, control);
  return ::testing::Test::HasFailure() ? 1 : 0;
}

absl::Status RunProcesses(const CommunicatorJob& job,
                          const std::function<void(Communicator&, RankControl&)>& body) {
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      job.size, [&](int rank, ForkMeeting& meeting) { return RunChild(job, rank, meeting, body); },
      job.job_timeout);
  if (!outcomes.ok()) return outcomes.status();
  std::vector<std::string> failures;
  for (int rank = 0; rank < job.size; ++rank) {
    const RankOutcome& outcome = (*outcomes)[rank];
    if (!outcome.finished) {
      failures.push_back(absl::StrCat("rank ", rank, " did not finish within ",
                                      absl::FormatDuration(job.job_timeout)));
    } else if (outcome.signal != 0) {
      failures.push_back(absl::StrCat("rank ", rank, " died of signal ", outcome.signal));
    } else if (outcome.exit_code != 0 && outcome.exit_code != kDiedOnPurpose) {
      failures.push_back(absl::StrCat("rank ", rank, " failed (exit ", outcome.exit_code, ")"));
    }
  }
  if (!failures.empty()) return absl::InternalError(absl::StrJoin(failures, "; "));
  return absl::OkStatus();
}

}  // namespace

std::string CommunicatorJob::Name() const {
  std::string providers = local_provider;
  if (nodes > 1 && !in_process()) absl::StrAppend(&providers, "_", network_provider);
  return absl::StrCat(absl::StrReplaceAll(providers, {{":", "_"}, {";", "_"}, {",", "_"}}), "_",
                      size, "x", nodes, numa_domains > 0 ? absl::StrCat("_numa", numa_domains) : "",
                      l3_groups > 0 ? absl::StrCat("_l3x", l3_groups) : "");
}

absl::Status RunCommunicatorJob(const CommunicatorJob& job,
                                const std::function<void(Communicator&, RankControl&)>& body) {
  if (job.in_process()) return RunThreads(job, body);
  return RunProcesses(job, body);
}

}  // namespace zcoll::testing
