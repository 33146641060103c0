#include "transport/bootstrap/store.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"
#include "transport/bootstrap/file_store.h"
#include "transport/bootstrap/store_wire.h"
#include "transport/bootstrap/tcp_store.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

absl::Time Soon() { return absl::Now() + absl::Seconds(20); }

// One store service per test: a TCP server, or a fresh directory.
class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") {
      absl::StatusOr<std::unique_ptr<TcpStoreServer>> server =
          TcpStoreServer::Start("127.0.0.1", 0, job_key_);
      ASSERT_TRUE(server.ok()) << server.status();
      server_ = std::move(*server);
      url_ = server_->url();
    } else {
      char pattern[] = "/tmp/zcoll-store-test-XXXXXX";
      ASSERT_NE(mkdtemp(pattern), nullptr);
      directory_ = pattern;
      url_ = absl::StrCat("file://", directory_);
    }
  }
  void TearDown() override {
    if (!directory_.empty()) std::system(absl::StrCat("rm -rf ", directory_).c_str());
  }

  std::unique_ptr<KeyValueStore> Connect() {
    absl::StatusOr<std::unique_ptr<KeyValueStore>> store = ConnectStore(url_, job_key_, Soon());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  std::string job_key_ = NewJobKey();
  std::unique_ptr<TcpStoreServer> server_;
  std::string directory_;
  std::string url_;
};

TEST_P(StoreTest, SetValuesAreSeenByEveryClientAndReplaced) {
  auto writer = Connect(), reader = Connect();
  ASSERT_TRUE(writer && reader);
  ASSERT_OK(writer->Set("address:0", "first", Soon()));
  EXPECT_EQ(*reader->Get("address:0", Soon()), "first");
  ASSERT_OK(writer->Set("address:0", "second", Soon()));
  EXPECT_EQ(*reader->Get("address:0", Soon()), "second");
  ASSERT_OK(writer->Set("empty", "", Soon()));
  EXPECT_EQ(*reader->Get("empty", Soon()), "");
  std::string large(kMaxStoreValueBytes, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7 + i / 251);
  ASSERT_OK(writer->Set("large", large, Soon()));
  EXPECT_EQ(*reader->Get("large", Soon()), large);
}

TEST_P(StoreTest, GetWaitsUntilTheKeyIsSet) {
  auto reader = Connect();
  ASSERT_TRUE(reader);
  std::thread late_writer([&] {
    absl::SleepFor(absl::Milliseconds(200));
    auto writer = Connect();
    ASSERT_TRUE(writer);
    ASSERT_OK(writer->Set("late", "here", Soon()));
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> value = reader->Get("late", Soon());
  late_writer.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "here");
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(150));
}

TEST_P(StoreTest, GetOfAKeyNeverSetEndsAtTheDeadline) {
  auto reader = Connect();
  ASSERT_TRUE(reader);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> value = reader->Get("never", start + absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(value.status())) << value.status();
  EXPECT_THAT(value.status().message(), HasSubstr("'never'"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(290));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // The connection is still good after a timeout.
  ASSERT_OK(reader->Set("after", "1", Soon()));
  EXPECT_EQ(*reader->Get("after", Soon()), "1");
}

TEST_P(StoreTest, AddIsAtomicAcrossClients) {
  constexpr int kClients = 6, kAdds = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&] {
      auto store = Connect();
      if (!store) return void(++failures);
      for (int i = 0; i < kAdds; ++i) {
        if (!store->Add("counter", 1, Soon()).ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  auto store = Connect();
  ASSERT_TRUE(store);
  EXPECT_EQ(*store->Add("counter", 0, Soon()), kClients * kAdds);
  EXPECT_EQ(*store->Add("counter", -kClients * kAdds - 5, Soon()), -5);
  EXPECT_EQ(*store->Get("counter", Soon()), "-5");
  ASSERT_OK(store->Set("word", "abc", Soon()));
  EXPECT_FALSE(store->Add("word", 1, Soon()).ok());
}

TEST_P(StoreTest, BadKeysAndValuesAreRefusedWithASentence) {
  auto store = Connect();
  ASSERT_TRUE(store);
  for (const std::string& key : {std::string(), std::string("a/b"), std::string("sp ace"),
                                 std::string(".hidden"), std::string(kMaxStoreKeyBytes + 1, 'k')}) {
    absl::Status status = store->Set(key, "v", Soon());
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << key << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr("store key")) << key;
    EXPECT_TRUE(absl::IsInvalidArgument(store->Get(key, Soon()).status())) << key;
  }
  absl::Status too_large = store->Set("big", std::string(kMaxStoreValueBytes + 1, 'x'), Soon());
  EXPECT_TRUE(absl::IsInvalidArgument(too_large)) << too_large;
  EXPECT_THAT(too_large.message(), HasSubstr("at most"));
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("tcp", "file"),
                         [](const auto& info) { return info.param; });

TEST(TcpStoreTest, AWrongJobKeyIsRefused) {
  auto server = TcpStoreServer::Start("127.0.0.1", 0, "the-right-key");
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<KeyValueStore>> intruder =
      ConnectStore((*server)->url(), "a-guess", Soon());
  EXPECT_TRUE(absl::IsPermissionDenied(intruder.status())) << intruder.status();
  EXPECT_THAT(intruder.status().message(), HasSubstr("job key"));
  absl::StatusOr<std::unique_ptr<KeyValueStore>> keyless =
      ConnectStore((*server)->url(), "", Soon());
  EXPECT_TRUE(absl::IsInvalidArgument(keyless.status())) << keyless.status();
  // The right key still works, and sees nothing an intruder could have set.
  auto member = ConnectStore((*server)->url(), "the-right-key", Soon());
  ASSERT_TRUE(member.ok()) << member.status();
  EXPECT_TRUE(
      absl::IsDeadlineExceeded((*member)->Get("x", absl::Now() + absl::Milliseconds(50)).status()));
}

TEST(TcpStoreTest, ConnectionsOverTheLimitAreRefusedWithASentence) {
  TcpStoreLimits limits;
  limits.max_connections = 2;
  auto server = TcpStoreServer::Start("127.0.0.1", 0, "key", limits);
  ASSERT_TRUE(server.ok()) << server.status();
  auto first = ConnectStore((*server)->url(), "key", Soon());
  auto second = ConnectStore((*server)->url(), "key", Soon());
  ASSERT_OK(first);
  ASSERT_OK(second);
  absl::StatusOr<std::unique_ptr<KeyValueStore>> third =
      ConnectStore((*server)->url(), "key", Soon());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted) << third.status();
  EXPECT_THAT(third.status().message(), HasSubstr("limit of 2 connections"));
  // Those served are unaffected, and a place that frees up is given again.
  EXPECT_OK((*first)->Set("a", "1", Soon()));
  first->reset();
  absl::StatusOr<std::unique_ptr<KeyValueStore>> again;
  for (int attempt = 0; attempt < 100; ++attempt) {
    again = ConnectStore((*server)->url(), "key", Soon());
    if (again.ok()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*(*again)->Get("a", Soon()), "1");
}

TEST(TcpStoreTest, AFullStoreRefusesSetsThatDoNotFit) {
  TcpStoreLimits limits;
  limits.max_stored_bytes = 1000;
  auto server = TcpStoreServer::Start("127.0.0.1", 0, "key", limits);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = ConnectStore((*server)->url(), "key", Soon());
  ASSERT_OK(client);
  // A key costs 128 bytes besides its key and value.
  ASSERT_OK((*client)->Set("a", std::string(600, 'a'), Soon()));
  const absl::Status full = (*client)->Set("b", std::string(600, 'b'), Soon());
  EXPECT_FALSE(full.ok());
  EXPECT_THAT(full.message(),
              HasSubstr("full (729 of 1000 bytes used, counting 128 bytes per key)"));
  // Replacing a value counts only the difference.
  auto fresh = ConnectStore((*server)->url(), "key", Soon());
  ASSERT_OK(fresh);
  EXPECT_OK((*fresh)->Set("a", std::string(800, 'c'), Soon()));
  EXPECT_EQ((*fresh)->Get("a", Soon())->size(), 800u);
  EXPECT_FALSE((*fresh)->Get("b", absl::Now() + absl::Milliseconds(50)).ok());
}

// Speaks the wire protocol by hand, as a stranger would.
int RawConnect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  return fd;
}

// Reads until the server closes; true if it did within 5 seconds (a close with our
// bytes unread arrives as a reset).
bool ServerCloses(int fd) {
  timeval limit{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  char buffer[4096];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

TEST(TcpStoreTest, StrangersCannotSetOrGrowTheServer) {
  auto server = TcpStoreServer::Start("127.0.0.1", 0, "key");
  ASSERT_TRUE(server.ok()) << server.status();
  // A Set before Hello: refused and closed.
  {
    const int fd = RawConnect((*server)->port());
    WireWriter set;
    set.U8(2);
    set.Bytes("address:0");
    set.Bytes("forged");
    const std::string payload = std::move(set).Finish();
    WireWriter frame;
    frame.U32(static_cast<uint32_t>(payload.size()));
    const std::string bytes = std::move(frame).Finish() + payload;
    ASSERT_EQ(send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    EXPECT_TRUE(ServerCloses(fd));
    close(fd);
  }
  // A huge frame announced before Hello: closed without reading it.
  {
    const int fd = RawConnect((*server)->port());
    WireWriter frame;
    frame.U32(1u << 30);
    const std::string bytes = std::move(frame).Finish();
    ASSERT_EQ(send(fd, bytes.data(), bytes.size(), 0), 4);
    EXPECT_TRUE(ServerCloses(fd));
    close(fd);
  }
  auto member = ConnectStore((*server)->url(), "key", Soon());
  ASSERT_TRUE(member.ok()) << member.status();
  EXPECT_TRUE(absl::IsDeadlineExceeded(
      (*member)->Get("address:0", absl::Now() + absl::Milliseconds(50)).status()));
}

// Issue 16: 300k Sets of empty values grew the store by 100 MB, as only value bytes
// counted. Every key now costs 128 bytes besides its bytes, so they fill it too.
TEST(TcpStoreTest, EmptyValuesUnderManyKeysFillTheStoreToo) {
  TcpStoreLimits limits;
  limits.max_stored_bytes = 100 * 1024;
  auto server = TcpStoreServer::Start("127.0.0.1", 0, "key", limits);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = ConnectStore((*server)->url(), "key", Soon());
  ASSERT_OK(client);
  int stored = 0;
  absl::Status refused;
  for (int i = 0; i < 10000 && refused.ok(); ++i) {
    refused = (*client)->Set(absl::StrCat("k", i), "", Soon());
    if (refused.ok()) ++stored;
  }
  EXPECT_THAT(refused.message(), HasSubstr("the store is full"));
  // 128 bytes and a key of 2-5 characters each.
  EXPECT_GT(stored, 700);
  EXPECT_LT(stored, 800);
}

// Speaks the protocol up to the Hello by hand; returns the authenticated socket.
int RawMember(int port, const std::string& job_key) {
  const int fd = RawConnect(port);
  const std::string hello =
      store_wire::Frame(store_wire::EncodeRequest({store_wire::Opcode::kHello, job_key, "", 0}));
  EXPECT_EQ(send(fd, hello.data(), hello.size(), 0), static_cast<ssize_t>(hello.size()));
  char reply[5];
  EXPECT_EQ(recv(fd, reply, sizeof(reply), MSG_WAITALL), 5);  // header + kOk
  return fd;
}

// Issue 16: 300 half-sent 1 MiB frames added 320 MB to the store. A frame is now taken
// whole from the buffer budget when its header arrives; past the budget a member's
// frame is refused and its connection closed, and the bytes of a frame that does not
// complete in time come back.
TEST(TcpStoreTest, HalfSentFramesCannotGrowTheServerPastItsBufferBudget) {
  TcpStoreLimits limits;
  limits.max_buffered_bytes = 3 * (kMaxStoreValueBytes + 1024);
  limits.frame_within = absl::Milliseconds(500);
  auto server = TcpStoreServer::Start("127.0.0.1", 0, "key", limits);
  ASSERT_TRUE(server.ok()) << server.status();
  // The header of a 1 MiB Set and a little of its payload.
  const std::string set = store_wire::EncodeRequest(
      {store_wire::Opcode::kSet, "big", std::string(kMaxStoreValueBytes, 'x'), 0});
  const std::string start = store_wire::Frame(set).substr(0, 1000);
  std::vector<int> members;
  for (int i = 0; i < 3; ++i) {
    members.push_back(RawMember((*server)->port(), "key"));
    ASSERT_EQ(send(members.back(), start.data(), start.size(), 0),
              static_cast<ssize_t>(start.size()));
  }
  // The fourth does not fit: refused, naming the budget, and closed.
  const int over = RawMember((*server)->port(), "key");
  ASSERT_EQ(send(over, start.data(), start.size(), 0), static_cast<ssize_t>(start.size()));
  std::string refusal(512, '\0');
  timeval limit{5, 0};
  setsockopt(over, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  const ssize_t got = recv(over, refusal.data(), refusal.size(), 0);
  ASSERT_GT(got, 4);
  EXPECT_THAT(refusal.substr(4, static_cast<size_t>(got) - 4), HasSubstr("are in use"));
  EXPECT_TRUE(ServerCloses(over));
  close(over);
  // The half-sent frames time out and are dropped; their space serves a member again.
  for (int fd : members) {
    EXPECT_TRUE(ServerCloses(fd));
    close(fd);
  }
  auto member = ConnectStore((*server)->url(), "key", Soon());
  ASSERT_TRUE(member.ok()) << member.status();
  EXPECT_OK((*member)->Set("big", std::string(kMaxStoreValueBytes, 'y'), Soon()));
  EXPECT_EQ((*member)->Get("big", Soon())->size(), kMaxStoreValueBytes);
}

// Issue 16: Create waited past its deadline in connect() while the store's accept
// queue was full (the kernel drops the handshake and retries for minutes). The
// connection is now attempted without blocking and given up at the deadline.
TEST(TcpStoreTest, AServerWhoseAcceptQueueIsFullIsADeadlineNotAHang) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 0), 0);  // never accepted
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);
  // Fill the queue: these handshakes complete, later ones are dropped.
  std::vector<int> fillers;
  for (int i = 0; i < 8; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    fillers.push_back(fd);
  }
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<KeyValueStore>> client =
      ConnectStore(absl::StrCat("tcp://127.0.0.1:", port), "key", absl::Now() + absl::Seconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(client.status())) << client.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  for (int fd : fillers) close(fd);
  close(listener);
}

TEST(TcpStoreTest, ClientsWaitForAServerThatStartsLate) {
  // Find a free port, then start the server on it after the client began trying.
  int port = 0;
  {
    auto probe = TcpStoreServer::Start("127.0.0.1", 0, "key");
    ASSERT_OK(probe);
    port = (*probe)->port();
  }
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&] {
    absl::SleepFor(absl::Milliseconds(300));
    auto started = TcpStoreServer::Start("127.0.0.1", port, "key");
    ASSERT_TRUE(started.ok()) << started.status();
    server = std::move(*started);
  });
  auto client = ConnectStore(absl::StrCat("tcp://127.0.0.1:", port), "key", Soon());
  starter.join();
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_OK((*client)->Set("k", "v", Soon()));
}

TEST(TcpStoreTest, AServerThatGoesAwayEndsWaitsWithUnavailable) {
  auto server = TcpStoreServer::Start("127.0.0.1", 0, "key");
  ASSERT_OK(server);
  auto client = ConnectStore((*server)->url(), "key", Soon());
  ASSERT_TRUE(client.ok()) << client.status();
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(200));
    server->reset();
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> value = (*client)->Get("never", Soon());
  stopper.join();
  EXPECT_TRUE(absl::IsUnavailable(value.status())) << value.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(TcpStoreTest, NoStoreThereIsADeadlineNotAHang) {
  int port = 0;
  {
    auto probe = TcpStoreServer::Start("127.0.0.1", 0, "key");
    ASSERT_OK(probe);
    port = (*probe)->port();
  }
  absl::StatusOr<std::unique_ptr<KeyValueStore>> client = ConnectStore(
      absl::StrCat("tcp://127.0.0.1:", port), "key", absl::Now() + absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(client.status())) << client.status();
  EXPECT_THAT(client.status().message(), HasSubstr("cannot reach the TCP store"));
}

TEST(StoreUrlTest, MalformedUrlsAreRefused) {
  for (const char* url :
       {"", "http://x:1", "tcp://nohost", "tcp://:12", "tcp://h:port", "file://relative/dir"}) {
    absl::StatusOr<std::unique_ptr<KeyValueStore>> store = ConnectStore(url, "key", Soon());
    EXPECT_TRUE(absl::IsInvalidArgument(store.status())) << url << ": " << store.status();
  }
}

}  // namespace
}  // namespace zcoll
