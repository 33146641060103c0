// Point-to-point latency and bandwidth of one transport provider between two forked
// ranks on this host.
//
//   bazel run -c opt //transport:pingpong_benchmark -- --provider=shm
//
// Prints `provider,bytes,latency_us,bandwidth_MBps` for 8 B .. 64 MiB by powers of 4
// (and 4 MiB and 64 MiB):
//   latency_us      one-way latency: half of the mean round trip of a ping-pong
//                   (what fi_pingpong reports as usec/xfer and ucx_perftest tag_lat);
//   bandwidth_MBps  10^6 bytes per second of a stream: rank 0 keeps a window of sends
//                   in flight, rank 1 receives them and answers each window with one
//                   small message (like ucx_perftest tag_bw).
// transport/compare_pingpong.sh runs fi_pingpong and ucx_perftest next to it.
// --through=communicator goes through the view every communicator uses
// (collectives/communicator_transport.h), to show what it adds.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "collectives/communicator_transport.h"
#include "transport/bootstrap/forked_job.h"
#include "transport/transport.h"
#include "transport/transport_factory.h"

namespace zcoll {
namespace {

constexpr size_t kMaxBytes = size_t{64} << 20;
constexpr uint64_t kPingTag = 1, kStreamTag = 2, kAckTag = 3;

struct Options {
  std::string provider = "shm";
  // Through a communicator's view of the transport (its ranks, tags, lock and
  // failure checks), to show what that costs.
  bool through_communicator = false;
  size_t min_bytes = 8;
  size_t max_bytes = kMaxBytes;
};

std::vector<size_t> Sizes(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
    sizes.push_back(bytes);
  }
  // 4 MiB is where the issue compares bandwidth; the largest size is always measured.
  for (size_t extra : {size_t{4} << 20, options.max_bytes}) {
    if (options.min_bytes <= extra && extra <= options.max_bytes &&
        std::find(sizes.begin(), sizes.end(), extra) == sizes.end()) {
      sizes.push_back(extra);
    }
  }
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

// Enough repetitions that one measurement takes 0.05-0.3 s here: long enough that a
// scheduler tick or a page fault does not decide it.
int Iterations(size_t bytes) {
  return static_cast<int>(
      std::clamp<size_t>((size_t{1} << 30) / std::max<size_t>(bytes, 4096), 20, 200000));
}

int Window(size_t bytes) {
  return bytes <= (size_t{64} << 10) ? 64 : (bytes <= (1 << 20) ? 16 : 4);
}

// One deadline per measured size: reading the clock in every iteration would add its
// cost to the latency, and the tools compared with have no deadlines at all.
absl::Time DeadlineForOneSize() { return absl::Now() + absl::Seconds(120); }

#define CHECK_OK_OR_RETURN(expression)                                         \
  do {                                                                         \
    const absl::Status check_status = (expression);                            \
    if (!check_status.ok()) {                                                  \
      std::fprintf(stderr, "pingpong: %s\n", check_status.ToString().c_str()); \
      return 1;                                                                \
    }                                                                          \
  } while (false)

int RankMain(const Options& options, int rank, ForkMeeting& meeting) {
  absl::StatusOr<std::unique_ptr<Transport>> created = CreateTransport(options.provider, rank, 2);
  CHECK_OK_OR_RETURN(created.status());
  CHECK_OK_OR_RETURN((*created)->Connect(meeting.AllGather(rank, (*created)->address())));
  std::unique_ptr<Transport> view;
  if (options.through_communicator) {
    absl::StatusOr<std::shared_ptr<JobConnection>> job = JobConnection::Create(std::move(*created));
    CHECK_OK_OR_RETURN(job.status());
    absl::StatusOr<uint32_t> context = (*job)->AllocateContext();
    CHECK_OK_OR_RETURN(context.status());
    view = std::make_unique<CommunicatorTransport>(*job, rank, std::vector<int>{0, 1},
                                                   std::vector<uint32_t>{*context, *context});
  }
  Transport& transport = view != nullptr ? *view : **created;
  const int peer = 1 - rank;
  const size_t buffer_bytes = options.max_bytes * 1;
  std::vector<uint8_t> send(buffer_bytes, static_cast<uint8_t>(rank)), recv(buffer_bytes);
  absl::StatusOr<std::unique_ptr<MemoryRegion>> send_region =
      transport.RegisterMemory(send.data(), send.size(), MemoryAccess::kLocal);
  absl::StatusOr<std::unique_ptr<MemoryRegion>> recv_region =
      transport.RegisterMemory(recv.data(), recv.size(), MemoryAccess::kLocal);
  CHECK_OK_OR_RETURN(send_region.status());
  CHECK_OK_OR_RETURN(recv_region.status());
  uint32_t ack = 0;
  for (size_t bytes : Sizes(options)) {
    // Latency: ping-pong, receives posted before each send.
    const int iterations = Iterations(bytes), warm_up = std::max(2, iterations / 10);
    const absl::Time deadline = DeadlineForOneSize();
    absl::Time start;
    for (int i = 0; i < warm_up + iterations; ++i) {
      if (i == warm_up) {
        meeting.Barrier(2);
        start = absl::Now();
      }
      Completion sent, received;
      CHECK_OK_OR_RETURN(
          transport.PostRecv(peer, kPingTag, recv.data(), bytes, &received, recv_region->get()));
      if (rank == 0) {
        CHECK_OK_OR_RETURN(
            transport.PostSend(peer, kPingTag, send.data(), bytes, &sent, send_region->get()));
        CHECK_OK_OR_RETURN(transport.Wait(received, deadline));
        CHECK_OK_OR_RETURN(transport.Wait(sent, deadline));
      } else {
        CHECK_OK_OR_RETURN(transport.Wait(received, deadline));
        CHECK_OK_OR_RETURN(
            transport.PostSend(peer, kPingTag, send.data(), bytes, &sent, send_region->get()));
        CHECK_OK_OR_RETURN(transport.Wait(sent, deadline));
      }
    }
    const double latency_us = absl::ToDoubleMicroseconds(absl::Now() - start) / iterations / 2;

    // Bandwidth: windows of sends, each acknowledged by one small message. Every
    // message of a window reuses the same buffer, as the tools do.
    const absl::Time stream_deadline = DeadlineForOneSize();
    const int window = Window(bytes);
    const int rounds = std::max(4, iterations / window);
    std::vector<Completion> completions(window);
    for (int round = 0; round < rounds + 1; ++round) {
      if (round == 1) {
        meeting.Barrier(2);
        start = absl::Now();
      }
      Completion ack_done;
      if (rank == 0) {
        CHECK_OK_OR_RETURN(transport.PostRecv(peer, kAckTag, &ack, sizeof(ack), &ack_done));
        for (Completion& completion : completions) {
          completion.Reset();
          CHECK_OK_OR_RETURN(transport.PostSend(peer, kStreamTag, send.data(), bytes, &completion,
                                                send_region->get()));
        }
        for (Completion& completion : completions) {
          CHECK_OK_OR_RETURN(transport.Wait(completion, stream_deadline));
        }
        CHECK_OK_OR_RETURN(transport.Wait(ack_done, stream_deadline));
      } else {
        for (Completion& completion : completions) {
          completion.Reset();
          CHECK_OK_OR_RETURN(transport.PostRecv(peer, kStreamTag, recv.data(), bytes, &completion,
                                                recv_region->get()));
        }
        for (Completion& completion : completions) {
          CHECK_OK_OR_RETURN(transport.Wait(completion, stream_deadline));
        }
        CHECK_OK_OR_RETURN(transport.PostSend(peer, kAckTag, &ack, sizeof(ack), &ack_done));
        CHECK_OK_OR_RETURN(transport.Wait(ack_done, stream_deadline));
      }
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    const double bandwidth = static_cast<double>(bytes) * window * rounds / seconds / 1e6;
    if (rank == 0) {
      std::printf("%s%s,%zu,%.3f,%.1f\n", options.provider.c_str(),
                  options.through_communicator ? " (communicator)" : "", bytes, latency_us,
                  bandwidth);
      std::fflush(stdout);
    }
  }
  meeting.Barrier(2);
  return 0;
}

int Main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::string> parts = absl::StrSplit(argv[i], absl::MaxSplits('=', 1));
    bool ok = parts.size() == 2;
    if (ok && parts[0] == "--provider") {
      options.provider = parts[1];
    } else if (ok && parts[0] == "--through") {
      ok = parts[1] == "communicator" || parts[1] == "transport";
      options.through_communicator = parts[1] == "communicator";
    } else if (ok && parts[0] == "--min") {
      ok = absl::SimpleAtoi(parts[1], &options.min_bytes) && options.min_bytes > 0;
    } else if (ok && parts[0] == "--max") {
      ok = absl::SimpleAtoi(parts[1], &options.max_bytes) && options.max_bytes <= kMaxBytes;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "pingpong_benchmark: bad argument '%s'\n"
                   "usage: pingpong_benchmark [--provider=shm|ofi|ofi:NAME|ucx|ucx:TLS] "
                   "[--through=transport|communicator] [--min=8] [--max=67108864]\n",
                   argv[i]);
      return 2;
    }
  }
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      2, [&](int rank, ForkMeeting& meeting) { return RankMain(options, rank, meeting); },
      absl::Minutes(10));
  if (!outcomes.ok()) {
    std::fprintf(stderr, "pingpong_benchmark: %s\n", outcomes.status().ToString().c_str());
    return 1;
  }
  for (const RankOutcome& outcome : *outcomes) {
    if (!outcome.finished || outcome.exit_code != 0) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) { return zcoll::Main(argc, argv); }
