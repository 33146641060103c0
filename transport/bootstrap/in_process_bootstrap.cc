#include "transport/bootstrap/in_process_bootstrap.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/mutex.h"
#include "transport/bootstrap/store.h"

namespace zcoll {
namespace {

// The meeting point of the ranks. Round n is every rank's n-th AllGather (a Barrier
// is an AllGather of nothing); a round is forgotten once every rank has read it.
class InProcessGroup {
 public:
  explicit InProcessGroup(int size) : size_(size) {}

  absl::StatusOr<std::vector<std::string>> AllGather(int rank, uint64_t round,
                                                     absl::string_view value, absl::Time deadline) {
    MutexLock lock(&mu_);
    Round& entry = rounds_[round];
    if (entry.values.empty()) {
      entry.values.resize(size_);
      entry.present.assign(size_, false);
    }
    entry.values[rank] = std::string(value);
    entry.present[rank] = true;
    ++entry.arrived;
    arrived_.SignalAll();
    while (entry.arrived < size_) {
      if (arrived_.WaitWithDeadline(&mu_, deadline) && entry.arrived < size_) {
        std::vector<int> missing;
        for (int peer = 0; peer < size_; ++peer) {
          if (!entry.present[peer]) missing.push_back(peer);
        }
        return absl::DeadlineExceededError(
            absl::StrCat("rank ", rank, ": in-process bootstrap round ", round, ": rank(s) ",
                         absl::StrJoin(missing, ", "), " did not arrive before the deadline"));
      }
    }
    std::vector<std::string> all = entry.values;
    if (++entry.left == size_) rounds_.erase(round);
    return all;
  }

 private:
  struct Round {
    std::vector<std::string> values;
    std::vector<bool> present;
    int arrived = 0;
    int left = 0;
  };

  const int size_;
  Mutex mu_;
  CondVar arrived_;
  std::map<uint64_t, Round> rounds_ ABSL_GUARDED_BY(mu_);
};

class InProcessBootstrap final : public Bootstrap {
 public:
  InProcessBootstrap(std::shared_ptr<InProcessGroup> group, int rank, int size)
      : group_(std::move(group)), rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view value,
                                                     absl::Time deadline) override {
    if (value.size() > kMaxStoreValueBytes) {
      return absl::InvalidArgumentError(absl::StrCat("rank ", rank_, ": AllGather value of ",
                                                     value.size(), " bytes exceeds the ",
                                                     kMaxStoreValueBytes, "-byte limit"));
    }
    return group_->AllGather(rank_, next_round_++, value, deadline);
  }

  absl::Status Barrier(absl::Time deadline) override { return AllGather("", deadline).status(); }

  std::string description() const override { return "in-process"; }

 private:
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  int size_;
  uint64_t next_round_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Bootstrap>>> CreateInProcessBootstraps(int size) {
  if (size < 1 || size > 65536) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateInProcessBootstraps: size ", size, " is not in 1..65536"));
  }
  auto group = std::make_shared<InProcessGroup>(size);
  std::vector<std::unique_ptr<Bootstrap>> bootstraps;
  for (int rank = 0; rank < size; ++rank) {
    bootstraps.push_back(std::make_unique<InProcessBootstrap>(group, rank, size));
  }
  return bootstraps;
}

}  // namespace zcoll
