#include "clusterservice/update_graph.h"

#include <gtest/gtest.h>

#include "clusterservice/event.h"

namespace hcprp::clusterservice {
namespace {

json::object Obj(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok());
  return v->as_object();
}

// The graph of stable-4.21 lists the 4.20 releases that lead into 4.21 too.
const char* const kGraph = R"({"nodes":[
  {"version":"4.20.14","payload":"p","metadata":{}},{"version":"4.21.2","payload":"p","metadata":{}},
  {"version":"4.21.10","payload":"p","metadata":{}},{"version":"4.21.3","payload":"p","metadata":{}},
  {"version":"4.20.15","payload":"p","metadata":{}}],"edges":[[0,1],[4,2]]})";

TEST(UpdateGraph, Names) {
  EXPECT_EQ(ChannelOf("stable", "4.20.12"), "stable-4.20");
  EXPECT_EQ(ChannelOf("", "4.21"), "stable-4.21");
  EXPECT_EQ(ChannelOf("fast", "5.0.1"), "fast-5.0");
  EXPECT_EQ(GraphPath("fast-4.20"), "/api/upgrades_info/graph?channel=fast-4.20");
  EXPECT_EQ(VersionIdOf("4.20.12", "stable"), "openshift-v4.20.12");
  EXPECT_EQ(VersionIdOf("4.20.12", "candidate"), "openshift-v4.20.12-candidate");
  EXPECT_EQ(RawVersionOf("openshift-v4.20.12-candidate"), "4.20.12");
  EXPECT_EQ(RawVersionOf("openshift-v4.20.12"), "4.20.12");
  EXPECT_EQ(RawVersionOf("openshift-v4.21.0-rc.1"), "4.21.0-rc.1");
  EXPECT_EQ(RawVersionOf("4.20.3"), "4.20.3");
  EXPECT_EQ(MinorOf("4.20.3"), "4.20");
  EXPECT_EQ(MinorOf("nonsense"), "");
}

TEST(UpdateGraph, NewerComparesVersionsNotText) {
  EXPECT_TRUE(NewerThan("4.20.10", "4.20.9"));
  EXPECT_TRUE(NewerThan("4.21.0", "4.20.15"));
  EXPECT_FALSE(NewerThan("4.20.9", "4.20.9"));
  EXPECT_FALSE(NewerThan("4.20.9", "4.20.10"));
  EXPECT_FALSE(NewerThan("x", "4.20.10"));
}

TEST(UpdateGraph, ReleasesOfTheMinorNewestFirst) {
  EXPECT_EQ(ReleasesOfMinor(Obj(kGraph), "4.21"), (std::vector<std::string>{"4.21.10", "4.21.3", "4.21.2"}));
  EXPECT_EQ(ReleasesOfMinor(Obj(kGraph), "4.20"), (std::vector<std::string>{"4.20.15", "4.20.14"}));
  EXPECT_TRUE(ReleasesOfMinor(Obj(kGraph), "4.22").empty());
}

TEST(UpdateGraph, StableTakesTheReleaseBeforeTheTipOthersTheTip) {
  EXPECT_EQ(*SelectDesiredVersion(Obj(kGraph), "4.21", "stable", "g"), "4.21.3");
  EXPECT_EQ(*SelectDesiredVersion(Obj(kGraph), "4.21", "", "g"), "4.21.3");
  EXPECT_EQ(*SelectDesiredVersion(Obj(kGraph), "4.21", "fast", "g"), "4.21.10");
  EXPECT_EQ(*SelectDesiredVersion(Obj(kGraph), "4.21", "candidate", "g"), "4.21.10");
}

TEST(UpdateGraph, TooFewReleasesIsAnError) {
  auto none = SelectDesiredVersion(Obj(kGraph), "4.22", "fast", "/graph?channel=fast-4.22");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message(), "no releases found in /graph?channel=fast-4.22");
  auto one =
      SelectDesiredVersion(Obj(R"({"nodes":[{"version":"4.22.0"}],"edges":[]})"), "4.22", "stable", "G");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().message(), "1 releases found in G, which is not enough for the requested 1 offset");
}

TEST(UpdateGraph, ActiveVersionsStopAtTheFirstCompletedEntry) {
  auto history =
      ParseJson(R"([{"version":"4.21.3","state":"Partial"},{"version":"4.20.15","state":"Completed"},
      {"version":"4.20.14","state":"Completed"}])");
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(ToJson(json::value(ActiveVersions(history->as_array()))),
            R"([{"version":"4.21.3"},{"version":"4.20.15"}])");
  auto settled =
      ParseJson(R"([{"version":"4.20.15","state":"Completed"},{"version":"4.20.14","state":"Completed"}])");
  EXPECT_EQ(ToJson(json::value(ActiveVersions(settled->as_array()))), R"([{"version":"4.20.15"}])");
  EXPECT_TRUE(ActiveVersions(json::array{}).empty());
}

TEST(UpdateGraph, SyncedStatusFieldsCarryConditionsHistoryAndTheError) {
  auto s =
      ParseCsStatus(Obj(R"({"state":"ready","conditions":[],"version_history":[{"version":"4.20.1"}]})"));
  json::object fields = SyncedStatusFields(s);
  EXPECT_EQ(fields.size(), 3u);
  EXPECT_TRUE(fields.contains("version_history"));
  EXPECT_TRUE(fields.at("provision_error").is_null());  // a ready object clears an earlier error
  auto failed = SyncedStatusFields(
      ParseCsStatus(Obj(R"({"state":"error","provision_error_code":"OCM1","provision_error_message":"m"})")));
  EXPECT_EQ(ToJson(failed.at("provision_error")), R"({"code":"OCM1","message":"m"})");
  EXPECT_TRUE(SyncedStatusFields(ParseCsStatus(Obj(R"({})"))).empty());
}

}  // namespace
}  // namespace hcprp::clusterservice
