// Runs a test body on every rank of a small job, each rank with a connected
// Transport of the provider under test.
//
// For "loopback" the ranks are threads of the test process. For every other
// provider they are processes forked from the test (the parent creates no transport
// before forking, so provider libraries start fresh in each child); a child's gtest
// failures make it exit non-zero, and the parent reports which rank failed. The
// ranks meet outside the transport through a shared anonymous mapping: Barrier() and
// AllGather() work even when the transport is broken, and the harness gives up (and
// kills the children) after a timeout instead of hanging.
//
//   RunRanks("shm", 2, [](RankContext& context) {
//     if (context.rank() == 0) { ... context.transport().PostSend(...) ... }
//     context.Barrier();
//   });
//
// A rank may die on purpose with context.Die() (SIGKILL for a process; for a thread
// its Transport is destroyed and the body must return right after); list it in
// RunOptions::ranks_that_die so the harness expects it.

#ifndef ZCOLL_TESTING_TRANSPORT_HARNESS_H_
#define ZCOLL_TESTING_TRANSPORT_HARNESS_H_

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/transport.h"

namespace zcoll::testing {

// How ranks of one job meet (implemented by the harness).
class RankMeeting {
 public:
  virtual ~RankMeeting() = default;
  virtual void Barrier(int rank) = 0;
  virtual std::vector<std::string> AllGather(int rank, const std::string& value) = 0;
};

class RankContext {
 public:
  RankContext(int rank, int size, std::unique_ptr<Transport> transport, RankMeeting* meeting,
              bool is_process)
      : rank_(rank),
        size_(size),
        transport_(std::move(transport)),
        meeting_(meeting),
        is_process_(is_process) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  Transport& transport() { return *transport_; }

  void Barrier() { meeting_->Barrier(rank_); }
  std::vector<std::string> AllGather(const std::string& value) {
    return meeting_->AllGather(rank_, value);
  }

  // Ends this rank abruptly (see the file comment).
  void Die();
  // Destroys this rank's transport now, while the others go on (the body must not
  // use it after).
  void DestroyTransport() { transport_.reset(); }

  // True when ranks are processes (so a test can skip what threads cannot do).
  bool is_process() const { return is_process_; }

 private:
  int rank_;
  int size_;
  std::unique_ptr<Transport> transport_;
  RankMeeting* meeting_;
  bool is_process_;
};

struct RunOptions {
  // The whole job must finish within this (a hang fails the test, never blocks it).
  absl::Duration timeout = absl::Seconds(120);
  std::set<int> ranks_that_die;
};

// Creates a connected transport of `provider` for each rank and runs `body` on all.
// OK when every rank finished without a test failure (and the listed ranks died);
// otherwise a status naming the ranks that failed.
absl::Status RunRanks(absl::string_view provider, int size,
                      const std::function<void(RankContext&)>& body,
                      const RunOptions& options = {});

// Creates the (unconnected) Transport of `rank` for a process-based provider.
// Exposed for the harness's own tests.
absl::StatusOr<std::unique_ptr<Transport>> CreateProcessTransport(absl::string_view provider,
                                                                  int rank, int size);

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_TRANSPORT_HARNESS_H_
