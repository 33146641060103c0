// Transport::WaitFor against a transport whose progress fails (its job failed): a wait
// whose operation completed meanwhile ends with it, one still pending with the failure.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/transport.h"

namespace zcoll {
namespace {

absl::Status Failed() { return absl::AbortedError("the job failed"); }

// Moves nothing; its progress reports the job's failure.
class FailedTransport final : public Transport {
 public:
  FailedTransport() : Transport(0, 2) {}
  absl::string_view provider_name() const override { return "failed"; }
  const std::string& address() const override { return address_; }
  absl::Status Connect(absl::Span<const std::string>) override { return Failed(); }
  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void*, size_t,
                                                               MemoryAccess) override {
    return Failed();
  }
  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int, absl::string_view) override {
    return Failed();
  }
  absl::Status PostSend(int, uint64_t, const void*, size_t, Completion*, const MemoryRegion*,
                        uint32_t) override {
    return Failed();
  }
  absl::Status PostRecv(int, uint64_t, void*, size_t, Completion*, const MemoryRegion*) override {
    return Failed();
  }
  absl::Status PostNotifyRecv(int, uint64_t, Completion*) override { return Failed(); }
  absl::Status Progress() override { return Failed(); }

 protected:
  absl::Status PostOneSided(MemoryAccess, void*, size_t, const RemoteRegion&, size_t, uint64_t,
                            Completion*, const MemoryRegion*) override {
    return Failed();
  }
  void Sleep(absl::Duration) override {}
  void OnFreeze(absl::Time) override {}

 private:
  std::string address_;
};

TEST(TransportWaitTest, AnOperationThatCompletedBeforeTheFailureWasSeenEndsTheWaitWithoutError) {
  FailedTransport transport;
  int polls = 0;
  // Pending at the first look, done by the second (its peer finished it, then failed).
  const absl::Status status = transport.WaitFor(
      [&] { return ++polls == 1 ? Transport::PollResult::kIdle : Transport::PollResult::kDone; },
      absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(polls, 2);
}

TEST(TransportWaitTest, AnOperationStillPendingEndsWithTheFailure) {
  FailedTransport transport;
  int polls = 0;
  const absl::Status status = transport.WaitFor(
      [&] {
        ++polls;
        return Transport::PollResult::kIdle;
      },
      absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(absl::IsAborted(status)) << status;
  EXPECT_THAT(status.message(), testing::HasSubstr("the job failed"));
  EXPECT_EQ(polls, 2);  // before the progress, and once more after it failed
}

}  // namespace
}  // namespace zcoll
