#include "transport/bootstrap/pmix_bootstrap.h"

#include <pmix.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zcoll {
namespace {

absl::Status PmixError(int rank, absl::string_view what, pmix_status_t status) {
  return absl::UnavailableError(
      absl::StrCat("rank ", rank, ": ", what, " failed: ", PMIx_Error_string(status)));
}

class PmixBootstrap : public Bootstrap {
 public:
  PmixBootstrap(const pmix_proc_t& self, int size, std::optional<std::string> host)
      : self_(self), size_(size), host_(std::move(host)) {}
  ~PmixBootstrap() override { PMIx_Finalize(nullptr, 0); }

  int rank() const override { return static_cast<int>(self_.rank); }
  int size() const override { return size_; }
  std::string description() const override { return absl::StrCat("PMIx ", self_.nspace); }
  std::optional<std::string> host_name() const override { return host_; }

  absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view value,
                                                     absl::Time deadline) override {
    const std::string key = absl::StrCat("zcoll.gather.", round_++);
    if (key.size() > PMIX_MAX_KEYLEN) {
      return absl::InternalError(absl::StrCat("PMIx key ", key, " is too long"));
    }
    pmix_value_t put{};
    put.type = PMIX_BYTE_OBJECT;
    put.data.bo.bytes = const_cast<char*>(value.data());
    put.data.bo.size = value.size();
    if (pmix_status_t s = PMIx_Put(PMIX_GLOBAL, key.c_str(), &put); s != PMIX_SUCCESS) {
      return PmixError(rank(), "PMIx_Put", s);
    }
    if (pmix_status_t s = PMIx_Commit(); s != PMIX_SUCCESS) {
      return PmixError(rank(), "PMIx_Commit", s);
    }
    if (absl::Status fenced = Fence(true, deadline); !fenced.ok()) return fenced;
    std::vector<std::string> values(size_);
    for (int peer = 0; peer < size_; ++peer) {
      pmix_proc_t proc;
      PMIX_PROC_CONSTRUCT(&proc);
      std::memcpy(proc.nspace, self_.nspace, sizeof(proc.nspace));
      proc.rank = static_cast<pmix_rank_t>(peer);
      pmix_value_t* got = nullptr;
      if (pmix_status_t s = PMIx_Get(&proc, key.c_str(), nullptr, 0, &got); s != PMIX_SUCCESS) {
        return PmixError(rank(), absl::StrCat("PMIx_Get of rank ", peer, "'s ", key), s);
      }
      if (got->type == PMIX_BYTE_OBJECT) {
        values[peer].assign(got->data.bo.bytes, got->data.bo.size);
      }
      PMIX_VALUE_RELEASE(got);
    }
    return values;
  }

  absl::Status Barrier(absl::Time deadline) override { return Fence(false, deadline); }

 private:
  absl::Status Fence(bool collect, absl::Time deadline) {
    // PMIx's timeout is whole seconds; at least one.
    int seconds = static_cast<int>(
        std::max<int64_t>(1, absl::ToInt64Seconds(deadline - absl::Now() + absl::Seconds(1))));
    bool collect_data = collect;
    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect_data, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
    pmix_proc_t everyone;
    PMIX_PROC_CONSTRUCT(&everyone);
    std::memcpy(everyone.nspace, self_.nspace, sizeof(everyone.nspace));
    everyone.rank = PMIX_RANK_WILDCARD;
    const pmix_status_t s = PMIx_Fence(&everyone, 1, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (s == PMIX_ERR_TIMEOUT) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rank ", rank(), ": not every rank reached the PMIx fence before the deadline"));
    }
    if (s != PMIX_SUCCESS) return PmixError(rank(), "PMIx_Fence", s);
    return absl::OkStatus();
  }

  pmix_proc_t self_;
  int size_;
  std::optional<std::string> host_;
  uint64_t round_ = 0;
};

}  // namespace

bool StartedByPmix() {
  return std::getenv("PMIX_RANK") != nullptr && std::getenv("PMIX_NAMESPACE") != nullptr;
}

absl::StatusOr<std::unique_ptr<Bootstrap>> CreatePmixBootstrap() {
  pmix_proc_t self;
  PMIX_PROC_CONSTRUCT(&self);
  if (pmix_status_t s = PMIx_Init(&self, nullptr, 0); s != PMIX_SUCCESS) {
    return absl::UnavailableError(absl::StrCat(
        "PMIx_Init failed (", PMIx_Error_string(s),
        "): PMIX_RANK is set but no PMIx server answers; was the launcher's PMIx too old?"));
  }
  pmix_proc_t job;
  PMIX_PROC_CONSTRUCT(&job);
  std::memcpy(job.nspace, self.nspace, sizeof(job.nspace));
  job.rank = PMIX_RANK_WILDCARD;
  pmix_value_t* value = nullptr;
  if (pmix_status_t s = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &value); s != PMIX_SUCCESS) {
    PMIx_Finalize(nullptr, 0);
    return PmixError(static_cast<int>(self.rank), "PMIx_Get(PMIX_JOB_SIZE)", s);
  }
  uint32_t size = 0;
  if (value->type == PMIX_UINT32) size = value->data.uint32;
  PMIX_VALUE_RELEASE(value);
  if (size == 0 || self.rank >= size) {
    PMIx_Finalize(nullptr, 0);
    return absl::UnavailableError(
        absl::StrCat("PMIx reports rank ", self.rank, " of a job of ", size, " ranks"));
  }
  // The node as the launcher knows it (its locality is what placed the ranks); a
  // launcher that does not say leaves the choice to the process's own host name.
  std::optional<std::string> host;
  if (PMIx_Get(&self, PMIX_HOSTNAME, nullptr, 0, &value) == PMIX_SUCCESS) {
    if (value->type == PMIX_STRING && value->data.string != nullptr) host = value->data.string;
    PMIX_VALUE_RELEASE(value);
  }
  return std::make_unique<PmixBootstrap>(self, static_cast<int>(size), std::move(host));
}

}  // namespace zcoll
