#include "transport/bootstrap/bootstrap.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/config.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "transport/bootstrap/pmix_bootstrap.h"

namespace zcoll {
namespace {

class StoreBootstrap : public Bootstrap {
 public:
  StoreBootstrap(std::unique_ptr<KeyValueStore> store, int rank, int size, std::string scope)
      : store_(std::move(store)), rank_(rank), size_(size), scope_(std::move(scope)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override { return store_->url(); }

  absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view value,
                                                     absl::Time deadline) override {
    // Keys of one round are never reused: a rank that runs ahead into the next round
    // cannot overwrite what a slower rank still has to read.
    const uint64_t round = round_++;
    RETURN_IF_ERROR(Annotate(store_->Set(Key(round, rank_), value, deadline)));
    std::vector<std::string> values(size_);
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) {
        values[peer] = std::string(value);
        continue;
      }
      absl::StatusOr<std::string> got = store_->Get(Key(round, peer), deadline);
      if (absl::IsDeadlineExceeded(got.status())) {
        return absl::DeadlineExceededError(absl::StrCat(
            "rank ", rank_, ": rank ", peer, " of ", size_, " did not arrive at the store ",
            store_->url(), " before the deadline (it may not have started, or died)"));
      }
      if (!got.ok()) return Annotate(got.status());
      values[peer] = std::move(*got);
    }
    return values;
  }

  absl::Status Barrier(absl::Time deadline) override { return AllGather("", deadline).status(); }

  std::optional<std::string> HowRankEnded(int rank, absl::Time deadline) override {
    // Only a launcher that said it would record the ends is waited for.
    {
      MutexLock lock(&ends_mutex_);
      if (!records_ends_.has_value()) {
        records_ends_ = store_->Get(kLauncherRecordsEndsKey, absl::Now()).ok();
      }
      if (!*records_ends_) return std::nullopt;
    }
    absl::StatusOr<std::string> ended = store_->Get(RankEndKey(rank), deadline);
    if (!ended.ok()) return std::nullopt;
    return *std::move(ended);
  }

  absl::Status Claim(absl::Time deadline) {
    ASSIGN_OR_RETURN(const int64_t claims,
                     store_->Add(absl::StrCat(scope_, ".claim.", rank_), 1, deadline));
    if (claims != 1) {
      return absl::AlreadyExistsError(
          absl::StrCat("rank ", rank_, ": another process already joined the job at ",
                       store_->url(), " as rank ", rank_, " (ZCOLL_RANK set twice?)"));
    }
    return absl::OkStatus();
  }

 private:
  std::string Key(uint64_t round, int rank) const {
    return absl::StrCat(scope_, ".gather.", round, ".", rank);
  }
  absl::Status Annotate(const absl::Status& status) const {
    if (status.ok()) return status;
    return absl::Status(status.code(), absl::StrCat("rank ", rank_, ": ", status.message()));
  }

  std::unique_ptr<KeyValueStore> store_;
  int rank_, size_;
  std::string scope_;
  uint64_t round_ = 0;
  Mutex ends_mutex_;
  std::optional<bool> records_ends_ ABSL_GUARDED_BY(ends_mutex_);
};

absl::StatusOr<int> IntegerVariable(const char* name) {
  const std::string text = EnvironmentValue(name);
  int value = 0;
  if (text.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, " is not set: start the job with zcoll_run, mpirun or srun, or set ",
                     "ZCOLL_RANK, ZCOLL_SIZE and ZCOLL_STORE"));
  }
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(name, "='", text, "' is not an integer"));
  }
  return value;
}

}  // namespace

std::string RankEndKey(int rank) { return absl::StrCat("job.end.", rank); }

absl::StatusOr<std::unique_ptr<Bootstrap>> CreateStoreBootstrap(
    std::unique_ptr<KeyValueStore> store, int rank, int size, absl::string_view scope,
    absl::Time deadline) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, ": job size ", size, " is not positive"));
  }
  if (rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in [0, ", size, ") (ZCOLL_RANK, ZCOLL_SIZE)"));
  }
  RETURN_IF_ERROR(CheckStoreKey(scope));
  auto bootstrap =
      std::make_unique<StoreBootstrap>(std::move(store), rank, size, std::string(scope));
  RETURN_IF_ERROR(bootstrap->Claim(deadline));
  return bootstrap;
}

absl::StatusOr<std::unique_ptr<Bootstrap>> BootstrapFromEnvironment(absl::Time deadline) {
  const std::string choice = EnvironmentValue("ZCOLL_BOOTSTRAP");
  if (choice != "auto" && choice != "pmix" && choice != "store") {
    return absl::InvalidArgumentError(
        absl::StrCat("ZCOLL_BOOTSTRAP='", choice, "' is not auto, pmix or store"));
  }
  if (choice == "pmix" || (choice == "auto" && StartedByPmix())) return CreatePmixBootstrap();
  ASSIGN_OR_RETURN(const int rank, IntegerVariable("ZCOLL_RANK"));
  ASSIGN_OR_RETURN(const int size, IntegerVariable("ZCOLL_SIZE"));
  const std::string url = EnvironmentValue("ZCOLL_STORE");
  if (url.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank ", rank, ": ZCOLL_STORE is not set (tcp://HOST:PORT or file:///DIR)"));
  }
  absl::StatusOr<std::unique_ptr<KeyValueStore>> store =
      ConnectStore(url, EnvironmentValue("ZCOLL_JOB_KEY"), deadline);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat("rank ", rank, ": ", store.status().message()));
  }
  return CreateStoreBootstrap(std::move(*store), rank, size, "job", deadline);
}

}  // namespace zcoll
