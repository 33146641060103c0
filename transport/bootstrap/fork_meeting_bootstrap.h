// A Bootstrap over a forked job's meeting place (forked_job.h): how the ranks of a
// job that one process forked (tests, zcoll_bench) meet without a store.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_FORK_MEETING_BOOTSTRAP_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_FORK_MEETING_BOOTSTRAP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/forked_job.h"

namespace zcoll {

// The forked job's meeting place as a Bootstrap (the meeting kills the job at its
// own deadline, so deadlines here need no enforcing).
class ForkMeetingBootstrap final : public Bootstrap {
 public:
  ForkMeetingBootstrap(ForkMeeting& meeting, int rank, int size)
      : meeting_(meeting), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view value, absl::Time) override {
    return meeting_.AllGather(rank_, std::string(value));
  }
  absl::Status Barrier(absl::Time) override {
    meeting_.Barrier(size_);
    return absl::OkStatus();
  }
  std::string description() const override { return "forked job"; }

 private:
  ForkMeeting& meeting_;
  int rank_;
  int size_;
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_FORK_MEETING_BOOTSTRAP_H_
