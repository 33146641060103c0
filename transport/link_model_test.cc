#include "transport/link_model.h"

#include <stdlib.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"
#include "testing/transport_harness.h"
#include "transport/loopback/loopback_transport.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

class LinkModelEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("ZCOLL_LINK_LATENCY_US");
    unsetenv("ZCOLL_LINK_GBITS");
  }
};

TEST_F(LinkModelEnvironmentTest, UnsetMeansNoModel) {
  absl::StatusOr<LinkModel> model = LinkModelFromEnvironment();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->enabled());
}

TEST_F(LinkModelEnvironmentTest, ReadsLatencyAndBandwidth) {
  setenv("ZCOLL_LINK_LATENCY_US", "2.5", 1);
  setenv("ZCOLL_LINK_GBITS", "100", 1);
  absl::StatusOr<LinkModel> model = LinkModelFromEnvironment();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->enabled());
  EXPECT_EQ(model->latency, absl::Nanoseconds(2500));
  EXPECT_EQ(model->bits_per_second, 100e9);
  EXPECT_EQ(model->ToString(), "latency 2.5us, 100 Gbit/s");
}

TEST_F(LinkModelEnvironmentTest, RefusesWhatIsNotANonNegativeNumber) {
  for (const char* bad : {"-1", "fast", "nan", "1e13"}) {
    setenv("ZCOLL_LINK_GBITS", bad, 1);
    absl::StatusOr<LinkModel> model = LinkModelFromEnvironment();
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(model.status().message(), HasSubstr("ZCOLL_LINK_GBITS"));
  }
}

// Ten 125 kB messages over a 1 Gbit/s link (1 ms each) with 3 ms latency cannot all
// arrive sooner than 13 ms after the first was posted, and arrive intact, in order.
TEST(LinkModelTransportTest, DelaysByLatencyPlusSerialisationAndKeepsOrder) {
  constexpr int kMessages = 10;
  constexpr size_t kBytes = 125000;
  std::shared_ptr<LoopbackFabric> fabric = LoopbackFabric::Create(2);
  absl::StatusOr<std::unique_ptr<Transport>> sender = fabric->CreateTransport(0);
  absl::StatusOr<std::unique_ptr<Transport>> receiver = fabric->CreateTransport(1);
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  LinkModel model;
  model.latency = absl::Milliseconds(3);
  model.bits_per_second = 1e9;
  std::unique_ptr<Transport> modelled = CreateLinkModelTransport(std::move(*sender), model);
  EXPECT_THAT(std::string(modelled->provider_name()), HasSubstr("modelled link"));
  const std::vector<std::string> addresses = {modelled->address(), (*receiver)->address()};
  ASSERT_OK(modelled->Connect(addresses));
  ASSERT_OK((*receiver)->Connect(addresses));

  std::vector<std::vector<uint8_t>> sent(kMessages, std::vector<uint8_t>(kBytes));
  for (int m = 0; m < kMessages; ++m) {
    for (size_t i = 0; i < kBytes; ++i) sent[m][i] = static_cast<uint8_t>(m * 31 + i);
  }
  std::vector<std::vector<uint8_t>> received(kMessages, std::vector<uint8_t>(kBytes));
  const absl::Time start = absl::Now();
  absl::Time last_arrival;
  std::thread receiving([&] {
    std::vector<Completion> done(kMessages);
    for (int m = 0; m < kMessages; ++m) {
      ASSERT_OK((*receiver)->PostRecv(0, 5, received[m].data(), kBytes, &done[m]));
    }
    for (int m = 0; m < kMessages; ++m) {
      ASSERT_OK((*receiver)->Wait(done[m], absl::Now() + absl::Seconds(30)));
    }
    last_arrival = absl::Now();
  });
  std::vector<Completion> posted(kMessages);
  for (int m = 0; m < kMessages; ++m) {
    ASSERT_OK(modelled->PostSend(1, 5, sent[m].data(), kBytes, &posted[m]));
  }
  for (int m = 0; m < kMessages; ++m) {
    ASSERT_OK(modelled->Wait(posted[m], absl::Now() + absl::Seconds(30)));
  }
  receiving.join();
  EXPECT_GE(last_arrival - start, absl::Milliseconds(13));
  EXPECT_EQ(received, sent);
}

TEST(LinkModelTransportTest, PostsStillHeldEndAbortedWhenTheTransportGoes) {
  std::shared_ptr<LoopbackFabric> fabric = LoopbackFabric::Create(2);
  absl::StatusOr<std::unique_ptr<Transport>> sender = fabric->CreateTransport(0);
  absl::StatusOr<std::unique_ptr<Transport>> receiver = fabric->CreateTransport(1);
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  LinkModel model;
  model.latency = absl::Seconds(60);
  std::unique_ptr<Transport> modelled = CreateLinkModelTransport(std::move(*sender), model);
  ASSERT_OK(modelled->Connect({modelled->address(), (*receiver)->address()}));
  uint64_t value = 1;
  Completion held;
  ASSERT_OK(modelled->PostSend(1, 5, &value, sizeof(value), &held));
  EXPECT_FALSE(held.done());
  modelled.reset();
  ASSERT_TRUE(held.done());
  EXPECT_EQ(held.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(held.status().message(), HasSubstr("before the modelled link delivered"));
}

// Through the factory, as zcoll_run jobs get it: only traffic between nodes pays.
TEST(LinkModelTransportTest, AppliesBetweenEmulatedNodes) {
  setenv("ZCOLL_LINK_LATENCY_US", "5000", 1);
  const absl::Status status = testing::RunRanks("shm+ofi:tcp/2", 2, [](testing::RankContext& rank) {
    Transport& transport = rank.transport();
    const int peer = 1 - rank.rank();
    uint64_t ball = 7;
    Completion sent, received;
    const absl::Time start = absl::Now();
    if (rank.rank() == 0) {
      ASSERT_OK(transport.PostSend(peer, 1, &ball, sizeof(ball), &sent));
      ASSERT_OK(transport.Wait(sent, absl::Now() + absl::Seconds(30)));
      ASSERT_OK(transport.PostRecv(peer, 2, &ball, sizeof(ball), &received));
      ASSERT_OK(transport.Wait(received, absl::Now() + absl::Seconds(30)));
      // There and back: two modelled latencies at least.
      EXPECT_GE(absl::Now() - start, absl::Milliseconds(10));
    } else {
      ASSERT_OK(transport.PostRecv(peer, 1, &ball, sizeof(ball), &received));
      ASSERT_OK(transport.Wait(received, absl::Now() + absl::Seconds(30)));
      ASSERT_OK(transport.PostSend(peer, 2, &ball, sizeof(ball), &sent));
      ASSERT_OK(transport.Wait(sent, absl::Now() + absl::Seconds(30)));
    }
    EXPECT_EQ(ball, 7u);
  });
  unsetenv("ZCOLL_LINK_LATENCY_US");
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace zcoll
