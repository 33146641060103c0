#include "transport/bootstrap/bootstrap.h"

#include <stdlib.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"
#include "transport/bootstrap/in_process_bootstrap.h"
#include "transport/bootstrap/tcp_store.h"

namespace zcoll {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::Time Soon() { return absl::Now() + absl::Seconds(20); }

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = TcpStoreServer::Start("127.0.0.1", 0, key_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  absl::StatusOr<std::unique_ptr<Bootstrap>> Join(int rank, int size, absl::Time deadline) {
    absl::StatusOr<std::unique_ptr<KeyValueStore>> store =
        ConnectStore(server_->url(), key_, deadline);
    if (!store.ok()) return store.status();
    return CreateStoreBootstrap(std::move(*store), rank, size, "job", deadline);
  }

  // Runs `body` as every rank of a `size`-rank job, one thread each.
  template <typename Body>
  void RunRanks(int size, Body body) {
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size; ++rank) threads.emplace_back([&, rank] { body(rank); });
    for (std::thread& thread : threads) thread.join();
  }

  std::string key_ = NewJobKey();
  std::unique_ptr<TcpStoreServer> server_;
};

TEST_F(BootstrapTest, AllGatherReturnsEveryRanksValueRoundAfterRound) {
  constexpr int kSize = 5;
  std::vector<std::vector<std::string>> first(kSize), second(kSize);
  RunRanks(kSize, [&](int rank) {
    absl::StatusOr<std::unique_ptr<Bootstrap>> bootstrap = Join(rank, kSize, Soon());
    ASSERT_TRUE(bootstrap.ok()) << bootstrap.status();
    EXPECT_EQ((*bootstrap)->rank(), rank);
    EXPECT_EQ((*bootstrap)->size(), kSize);
    auto a = (*bootstrap)->AllGather(absl::StrCat("address-of-", rank), Soon());
    ASSERT_TRUE(a.ok()) << a.status();
    first[rank] = *a;
    ASSERT_OK((*bootstrap)->Barrier(Soon()));
    auto b = (*bootstrap)->AllGather(std::string(rank, 'x'), Soon());
    ASSERT_TRUE(b.ok()) << b.status();
    second[rank] = *b;
  });
  for (int rank = 0; rank < kSize; ++rank) {
    EXPECT_THAT(first[rank], ElementsAre("address-of-0", "address-of-1", "address-of-2",
                                         "address-of-3", "address-of-4"));
    EXPECT_THAT(second[rank], ElementsAre("", "x", "xx", "xxx", "xxxx"));
  }
}

TEST_F(BootstrapTest, ARankThatNeverArrivesIsNamedAtTheDeadline) {
  std::vector<absl::Status> results(2);
  const absl::Time start = absl::Now();
  RunRanks(2, [&](int rank) {
    auto bootstrap = Join(rank, 3, Soon());  // rank 2 never starts
    ASSERT_TRUE(bootstrap.ok()) << bootstrap.status();
    results[rank] = (*bootstrap)->Barrier(absl::Now() + absl::Milliseconds(500));
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(absl::IsDeadlineExceeded(results[rank])) << results[rank];
    EXPECT_THAT(results[rank].message(), HasSubstr("rank 2 of 3 did not arrive"));
    EXPECT_THAT(results[rank].message(), HasSubstr(absl::StrCat("rank ", rank, ":")));
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(BootstrapTest, RanksOutOfRangeOrClaimedTwiceAreRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(Join(3, 3, Soon()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Join(-1, 3, Soon()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Join(0, 0, Soon()).status()));
  auto first = Join(1, 3, Soon());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::Status twice = Join(1, 3, Soon()).status();
  EXPECT_TRUE(absl::IsAlreadyExists(twice)) << twice;
  EXPECT_THAT(twice.message(), HasSubstr("as rank 1"));
}

TEST(InProcessBootstrapTest, ThreadsGatherAndAMissingOneIsNamed) {
  EXPECT_EQ(CreateInProcessBootstraps(0).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<std::unique_ptr<Bootstrap>>> bootstraps = CreateInProcessBootstraps(3);
  ASSERT_OK(bootstraps);
  std::vector<std::vector<std::string>> gathered(3);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      Bootstrap& mine = *(*bootstraps)[rank];
      absl::StatusOr<std::vector<std::string>> all =
          mine.AllGather(absl::StrCat("r", rank), absl::Now() + absl::Seconds(30));
      ASSERT_TRUE(all.ok()) << all.status();
      gathered[rank] = *all;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(gathered[rank], (std::vector<std::string>{"r0", "r1", "r2"}));
  }
  // Only rank 1 comes to the next round.
  absl::StatusOr<std::vector<std::string>> alone =
      (*bootstraps)[1]->AllGather("late", absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(alone.status().message(), HasSubstr("rank(s) 0, 2 did not arrive"));
}

TEST(BootstrapEnvironmentTest, MissingOrMalformedVariablesAreNamed) {
  unsetenv("ZCOLL_RANK");
  unsetenv("ZCOLL_SIZE");
  unsetenv("ZCOLL_STORE");
  absl::Status status = BootstrapFromEnvironment(Soon()).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("ZCOLL_RANK is not set"));
  setenv("ZCOLL_RANK", "one", 1);
  setenv("ZCOLL_SIZE", "2", 1);
  status = BootstrapFromEnvironment(Soon()).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("ZCOLL_RANK='one'"));
  setenv("ZCOLL_RANK", "1", 1);
  status = BootstrapFromEnvironment(Soon()).status();
  EXPECT_THAT(status.message(), HasSubstr("ZCOLL_STORE is not set"));
  setenv("ZCOLL_STORE", "tcp://127.0.0.1:1", 1);
  setenv("ZCOLL_JOB_KEY", "", 1);
  status = BootstrapFromEnvironment(Soon()).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(),
              HasSubstr("rank 1: the TCP store tcp://127.0.0.1:1 needs the job key"));
}

TEST(BootstrapEnvironmentTest, JoinsThroughAFileStore) {
  char pattern[] = "/tmp/zcoll-bootstrap-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  setenv("ZCOLL_STORE", absl::StrCat("file://", pattern).c_str(), 1);
  setenv("ZCOLL_SIZE", "1", 1);
  setenv("ZCOLL_RANK", "0", 1);
  auto bootstrap = BootstrapFromEnvironment(Soon());
  ASSERT_TRUE(bootstrap.ok()) << bootstrap.status();
  auto values = (*bootstrap)->AllGather("alone", Soon());
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre("alone"));
  std::system(absl::StrCat("rm -rf ", pattern).c_str());
}

}  // namespace
}  // namespace zcoll
