// The join record's fields as Create exchanges them: its host's cores among them (the
// job's agreed "hosts oversubscribed", SelectionInputs::hosts_oversubscribed), and a
// record whose cores are missing or negative refused by name.

#include "collectives/control_records.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

TEST(JoinRecordTest, TheHostsCoresRoundTrip) {
  const JoinRecord sent{.package = 1,
                        .numa = 2,
                        .l3 = 3,
                        .settings = "ZCOLL_CHUNK_BYTES=\nemulated nodes=2",
                        .host = "node 17",
                        .cores = 64};
  const absl::StatusOr<JoinRecord> got = ParseJoinRecord(EncodeJoinRecord(sent));
  ASSERT_OK(got);
  EXPECT_EQ(got->package, 1);
  EXPECT_EQ(got->numa, 2);
  EXPECT_EQ(got->l3, 3);
  EXPECT_EQ(got->cores, 64);
  EXPECT_EQ(got->settings, sent.settings);
  EXPECT_EQ(got->host, "node 17");
}

TEST(JoinRecordTest, MissingOrNegativeCoresAreRefused) {
  // (The fields: package, NUMA domain, L3, cores, settings in hex, host.)
  for (const char* entry : {"0 0 0 -1 41 node17", "0 0 0 41 node17", "0 0 0 many 41 node17"}) {
    const absl::StatusOr<JoinRecord> got = ParseJoinRecord(entry);
    ASSERT_FALSE(got.ok()) << entry;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << entry;
    EXPECT_THAT(got.status().message(), HasSubstr("a malformed location")) << entry;
  }
  ASSERT_OK(ParseJoinRecord("0 0 0 0 41 node17"));  // 0: unknown, accepted
}

}  // namespace
}  // namespace zcoll
