#include "simulator/update_service.h"

#include <gtest/gtest.h>

#include "simulator/scheduler.h"
#include "simulator/service.h"
#include "simulator/state_store.h"
#include "simulator/test_util.h"

namespace hcprp::simulator {
namespace {

using Strings = std::vector<std::string>;

const VersionCatalogue& Cat() { return VersionCatalogue::BuiltIn(); }

Release MakeRelease(std::string version, Strings groups) {
  Release r;
  r.version = std::move(version);
  r.channel_groups = std::move(groups);
  return r;
}

Strings NodeVersions(const json::object& graph) {
  Strings out;
  for (const auto& n : *GetArray(graph, "nodes")) out.emplace_back(*GetString(n.as_object(), "version"));
  return out;
}

// The edges of a graph as version pairs.
std::vector<std::pair<std::string, std::string>> EdgeVersions(const json::object& graph) {
  const Strings nodes = NodeVersions(graph);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : *GetArray(graph, "edges")) {
    const json::array& pair = e.as_array();
    const auto from = static_cast<size_t>(pair.at(0).as_int64());
    const auto to = static_cast<size_t>(pair.at(1).as_int64());
    EXPECT_LT(from, nodes.size());
    EXPECT_LT(to, nodes.size());
    if (from < nodes.size() && to < nodes.size()) out.emplace_back(nodes[from], nodes[to]);
  }
  return out;
}

TEST(VersionEdges, FollowTheRulesOfTheCatalogue) {
  EXPECT_TRUE(Cat().HasEdge("4.20.3", "4.20.15"));
  EXPECT_FALSE(Cat().HasEdge("4.20.15", "4.20.3"));
  EXPECT_FALSE(Cat().HasEdge("4.20.15", "4.20.15"));
  EXPECT_TRUE(Cat().HasEdge("4.20.8", "4.21.0"));    // 4.21: from_previous_minor.min_z 8
  EXPECT_FALSE(Cat().HasEdge("4.20.7", "4.21.5"));   // below min_z
  EXPECT_FALSE(Cat().HasEdge("4.19.25", "4.21.0"));  // no skipping a minor
  EXPECT_TRUE(Cat().HasEdge("4.24.1", "5.0.0"));     // into OpenShift 5
  EXPECT_FALSE(Cat().HasEdge("4.24.0", "5.0.2"));
  EXPECT_TRUE(Cat().HasEdge("4.18.0", "4.18.5"));     // away from a disabled release
  EXPECT_FALSE(Cat().HasEdge("4.18.0", "4.18.1"));    // never to one
  EXPECT_FALSE(Cat().HasEdge("4.20.15", "4.20.16"));  // not released
  EXPECT_FALSE(Cat().HasEdge("4.20", "4.21.0"));
  EXPECT_FALSE(Cat().HasEdge("4.20.08", "4.20.15"));  // raw IDs are written one way only
}

TEST(VersionEdges, UpgradesTipsAndChannels) {
  EXPECT_EQ(Cat().UpgradesFrom("4.20.15", "stable"), (Strings{"4.21.0", "4.21.1", "4.21.2", "4.21.3"}));
  EXPECT_EQ(Cat().UpgradesFrom("4.21.3", "fast"),
            (Strings{"4.21.4", "4.21.5", "4.22.0", "4.22.1", "4.22.2", "4.22.3", "4.22.4"}));
  EXPECT_EQ(Cat().UpgradesFrom("4.23.2", "candidate"), (Strings{"4.23.3", "4.24.0", "4.24.1", "4.24.2"}));
  EXPECT_EQ(Cat().UpgradesFrom("4.24.1", "candidate"), (Strings{"4.24.2", "5.0.0", "5.0.1", "5.0.2"}));
  EXPECT_TRUE(Cat().UpgradesFrom("9.9.9", "stable").empty());
  EXPECT_EQ(Cat().Tip("4.21", "stable"), "4.21.3");
  EXPECT_EQ(Cat().Tip("4.21", "candidate"), "4.21.5");
  EXPECT_EQ(Cat().Tip("5.0", "candidate"), "5.0.2");
  EXPECT_EQ(Cat().Tip("4.24", "stable"), "4.24.1");
  EXPECT_EQ(Cat().Tip("5.0", "stable"), "5.0.0");
  EXPECT_EQ(Cat().Tip("5.1", "stable"), std::nullopt);
  EXPECT_EQ(Cat().Tip("4.17", "stable"), std::nullopt);
  EXPECT_EQ(Cat().ChannelsOf("4.21.3"), (Strings{"candidate-4.21", "candidate-4.22", "fast-4.21", "fast-4.22",
                                                 "stable-4.21", "stable-4.22"}));
  EXPECT_EQ(Cat().ChannelsOf("4.21.5"),
            (Strings{"candidate-4.21", "candidate-4.22", "fast-4.21", "fast-4.22"}));
  EXPECT_EQ(Cat().ChannelsOf("4.20.7"), (Strings{"candidate-4.20", "fast-4.20", "stable-4.20"}));
  EXPECT_TRUE(Cat().ChannelsOf("4.18.1").empty());  // disabled
  json::object ocm = Cat().ToOcm(*Cat().Find("openshift-v4.20.15"));
  EXPECT_EQ(ToJson(ocm.at("available_upgrades")), R"(["4.21.0","4.21.1","4.21.2","4.21.3"])");
}

TEST(VersionEdges, TheDocumentKeepsChannelOrderAndMinorOrder) {
  auto doc = [](std::string_view minors) {
    return VersionCatalogue::Parse(R"({"default":{"version":"4.1.0"},"minors":[)" + std::string(minors) +
                                   "]}");
  };
  const std::string m41 =
      R"({"minor":"4.1","end_of_life":"2030-01-01T00:00:00Z","channel_groups":{"stable":1}})";
  const std::string m42 =
      R"({"minor":"4.2","end_of_life":"2030-01-01T00:00:00Z","channel_groups":{"stable":1},)"
      R"("from_previous_minor":{"min_z":1}})";
  EXPECT_TRUE(doc(m41 + "," + m42).ok());
  EXPECT_FALSE(doc(m42 + "," + m41).ok());  // descending, and a rule on the first minor
  EXPECT_FALSE(doc(R"({"minor":"4.1","end_of_life":"2030-01-01T00:00:00Z",)"
                   R"("channel_groups":{"stable":2,"fast":1,"candidate":2}})")
                   .ok());  // stable ahead of fast
  EXPECT_FALSE(doc(m41 +
                   R"(,{"minor":"4.2","end_of_life":"2030-01-01T00:00:00Z","channel_groups":{"stable":1},)"
                   R"("from_previous_minor":{"min_z":-1}})")
                   .ok());
}

TEST(VersionPublication, ANewZStreamEntersItsGroupsInOrder) {
  auto next = Cat().WithRelease(MakeRelease("4.20.16", {"candidate"}));
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_NE(next->Find("openshift-v4.20.16-candidate"), nullptr);
  EXPECT_EQ(next->Find("openshift-v4.20.16-fast"), nullptr);
  EXPECT_EQ(next->Tip("4.20", "candidate"), "4.20.16");
  EXPECT_EQ(next->Tip("4.20", "stable"), "4.20.15");
  EXPECT_TRUE(next->HasEdge("4.20.15", "4.20.16"));
  EXPECT_TRUE(next->HasEdge("4.20.16", "4.21.0"));  // >= min_z 8: the rule applies to new releases too
  auto promoted = next->WithRelease(MakeRelease("4.20.16", {"candidate", "fast"}));
  ASSERT_TRUE(promoted.ok()) << promoted.error().ToString();
  EXPECT_NE(promoted->Find("openshift-v4.20.16-fast"), nullptr);

  auto refusal = [](const Result<VersionCatalogue>& r) { return r.ok() ? "" : r.error().message(); };
  EXPECT_EQ(refusal(Cat().WithRelease(MakeRelease("4.20.17", {"candidate"}))),
            "4.20.17 is not the next z-stream of 4.20 (4.20.16)");
  EXPECT_EQ(refusal(Cat().WithRelease(MakeRelease("4.20.16", {"stable"}))),
            "minor 4.20: a release enters candidate before fast and fast before stable");
  EXPECT_EQ(refusal(Cat().WithRelease(MakeRelease("4.21.5", {"stable"}))),
            "4.21.5 cannot enter stable before 4.21.4");
  EXPECT_EQ(refusal(Cat().WithRelease(MakeRelease("4.17.3", {"candidate"}))),
            "minor 4.17 is neither an existing minor nor the next (5.1 or 6.0)");
}

TEST(VersionPublication, ANewMinorStartsAtZeroAfterTheLast) {
  Release r = MakeRelease("5.1.0", {"candidate"});
  r.from_previous_minor_min_z = 1;
  auto next = Cat().WithRelease(r);
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ(next->minors().back().minor, "5.1");
  EXPECT_EQ(next->minors().back().end_of_life, "2029-07-23T00:00:00Z");  // 183 days after 5.0's
  EXPECT_TRUE(next->HasEdge("5.0.1", "5.1.0"));
  EXPECT_FALSE(next->HasEdge("5.0.0", "5.1.0"));
  EXPECT_FALSE(Cat().WithRelease(MakeRelease("5.1.1", {"candidate"})).ok());
  EXPECT_FALSE(Cat().WithRelease(MakeRelease("5.2.0", {"candidate"})).ok());
  EXPECT_TRUE(Cat().WithRelease(MakeRelease("6.0.0", {"candidate"})).ok());
  Release other = r;
  other.version = "4.20.16";
  EXPECT_FALSE(Cat().WithRelease(other).ok());  // a rule for an existing minor that has another
}

TEST(VersionPublication, ReleaseBodiesAreChecked) {
  auto parse = [](std::string_view text) {
    auto r = Release::FromJson(ParseJson(text)->as_object());
    return r.ok() ? std::string("ok") : r.error().message();
  };
  EXPECT_EQ(parse(R"({"version":"4.20.16","channel_groups":["candidate","candidate"]})"), "ok");
  EXPECT_EQ(parse(R"({"version":"4.20","channel_groups":["candidate"]})"),
            "version must be a release number X.Y.Z");
  EXPECT_EQ(parse(R"({"version":"4.20.016","channel_groups":["candidate"]})"),
            "version must be a release number X.Y.Z");
  EXPECT_EQ(parse(R"({"version":"4.20.16"})"), "channel_groups must list candidate, fast or stable");
  EXPECT_EQ(parse(R"({"version":"4.20.16","channel_groups":["nightly"]})"),
            "channel_groups must list candidate, fast or stable");
  EXPECT_EQ(parse(R"({"version":"5.1.0","channel_groups":["candidate"],"from_previous_minor":3})"),
            R"(from_previous_minor must be {"min_z": N}, N a z-stream number)");
  EXPECT_EQ(parse(R"({"version":"5.1.0","channel_groups":["candidate"],"end_of_life":"soon"})"),
            "end_of_life must be an RFC 3339 time");
  auto r = Release::FromJson(
      ParseJson(R"({"version":"5.1.0","channel_groups":["candidate"],"from_previous_minor":{"min_z":2}})")
          ->as_object());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ToJson(r->ToJson()),
            R"({"version":"5.1.0","channel_groups":["candidate"],"from_previous_minor":{"min_z":2}})");
}

TEST(CincinnatiGraph, AChannelHoldsItsMinorAndThePreviousMinorsReleasesWithAnEdgeIntoIt) {
  json::object graph = CincinnatiGraph(Cat(), "stable-4.21");
  EXPECT_EQ(NodeVersions(graph), (Strings{"4.20.8", "4.20.9", "4.20.10", "4.20.11", "4.20.12", "4.20.13",
                                          "4.20.14", "4.20.15", "4.21.0", "4.21.1", "4.21.2", "4.21.3"}));
  auto edges = EdgeVersions(graph);
  EXPECT_EQ(edges.size(), 28u + 6u + 8u * 4u);  // within 4.20, within 4.21, across
  for (const auto& [from, to] : edges) EXPECT_TRUE(Cat().HasEdge(from, to)) << from << " -> " << to;
  const json::object& node = GetArray(graph, "nodes")->back().as_object();
  const std::string payload(*GetString(node, "payload"));
  ASSERT_EQ(payload.size(), std::string("quay.io/openshift-release-dev/ocp-release@sha256:").size() + 64);
  EXPECT_EQ(payload, ReleasePayload("4.21.3"));
  EXPECT_NE(payload, ReleasePayload("4.21.2"));
  const json::object& metadata = *GetObject(node, "metadata");
  EXPECT_EQ(*GetString(metadata, "io.openshift.upgrades.graph.release.channels"),
            "candidate-4.21,candidate-4.22,fast-4.21,fast-4.22,stable-4.21,stable-4.22");
  EXPECT_EQ("quay.io/openshift-release-dev/ocp-release@" +
                std::string(*GetString(metadata, "io.openshift.upgrades.graph.release.manifestref")),
            payload);
  EXPECT_EQ(ToJson(graph.at("conditionalEdges")), "[]");

  auto withdrawn = Cat().WithEdgeWithdrawn("4.20.15", "4.21.3", true);
  ASSERT_TRUE(withdrawn.ok());
  auto fewer = EdgeVersions(CincinnatiGraph(*withdrawn, "stable-4.21"));
  EXPECT_EQ(fewer.size(), edges.size() - 1);
  EXPECT_EQ(std::count(fewer.begin(), fewer.end(), std::pair<std::string, std::string>{"4.20.15", "4.21.3"}),
            0);
  EXPECT_FALSE(Cat().WithEdgeWithdrawn("4.20.15", "4.20.3", true).ok());
}

TEST(CincinnatiGraph, OtherChannels) {
  EXPECT_EQ(NodeVersions(CincinnatiGraph(Cat(), "candidate-5.0")),
            (Strings{"4.24.1", "4.24.2", "5.0.0", "5.0.1", "5.0.2"}));
  EXPECT_EQ(NodeVersions(CincinnatiGraph(Cat(), "stable-5.0")), (Strings{"4.24.1", "5.0.0"}));
  EXPECT_EQ(NodeVersions(CincinnatiGraph(Cat(), "stable-4.18")).size(), 29u);  // 4.18.0-1 are disabled
  for (std::string_view channel : {"stable-9.9", "nightly-4.21", "stable", "4.21", ""}) {
    json::object g = CincinnatiGraph(Cat(), channel);
    EXPECT_TRUE(GetArray(g, "nodes")->empty()) << channel;
    EXPECT_TRUE(GetArray(g, "edges")->empty()) << channel;
  }
  EXPECT_EQ(ParseChannel("fast-4.21"), (std::pair<std::string, std::string>{"fast", "4.21"}));
  EXPECT_EQ(ParseChannel("fast-4"), std::nullopt);
  EXPECT_EQ(ParseChannel("-4.21"), std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// Through the simulator.

class UpdateServiceTest : public SimulatorTest {
 protected:
  Answer Graph(const std::string& query) {
    return Call(*sim_, Verb::get, "/api/upgrades_info/graph" + query);
  }
  Answer Control(Verb verb, const std::string& path, const std::string& body = "") {
    return Call(*sim_, verb, "/control/versions" + path, body);
  }
};

TEST_F(UpdateServiceTest, TheGraphEndpointAnswersAsTheUpdateServiceDoes) {
  StartSim(Profile::kInstant);
  http::Response res =
      sim_->Handle(http::MakeRequest(Verb::get, "/api/upgrades_info/graph?channel=stable-4.21"));
  ASSERT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res[http::beast_http::field::content_type], "application/json");
  EXPECT_EQ(ToJson(*ParseJson(res.body())), ToJson(CincinnatiGraph(Cat(), "stable-4.21")));
  EXPECT_EQ(Call(*sim_, Verb::get, "/api/upgrades_info/v1/graph?channel=stable-4.21").status, 200u);

  EXPECT_EQ(sim_->updates().Tip("4.20", "stable"), "4.20.15");
  auto unknown = Graph("?channel=stable-9.9");
  EXPECT_EQ(unknown.status, 200u);
  EXPECT_EQ(ToJson(unknown.body), R"({"nodes":[],"edges":[],"conditionalEdges":[]})");
  auto missing = Graph("?arch=amd64");
  EXPECT_EQ(missing.status, 400u);
  EXPECT_EQ(missing.str("kind"), "missing_params");
  EXPECT_EQ(missing.str("value"), "mandatory client parameters missing: channel");
  auto invalid = Graph("?channel=Stable_4.21");
  EXPECT_EQ(invalid.status, 400u);
  EXPECT_EQ(invalid.str("kind"), "invalid_params");
  http::Request html = http::MakeRequest(Verb::get, "/api/upgrades_info/graph?channel=stable-4.21");
  html.set(http::beast_http::field::accept, "text/html");
  EXPECT_EQ(sim_->Handle(std::move(html)).result_int(), 406u);
  EXPECT_EQ(Call(*sim_, Verb::post, "/api/upgrades_info/graph?channel=stable-4.21").status, 405u);
}

TEST_F(UpdateServiceTest, APublishedReleaseIsListedGraphedAndAnnounced) {
  StartSim(Profile::kInstant);
  const uint64_t before =
      *GetInt(Call(*sim_, Verb::get, kBase + "/events?after=latest").obj(), "last_sequence");
  auto pub = Control(Verb::post, "", R"({"version":"4.20.16","channel_groups":["candidate"]})");
  ASSERT_EQ(pub.status, 201u) << ToJson(pub.body);
  EXPECT_EQ(ToJson(pub.obj().at("published")), R"(["openshift-v4.20.16-candidate"])");

  auto one = Call(*sim_, Verb::get, kBase + "/versions/openshift-v4.20.16-candidate");
  ASSERT_EQ(one.status, 200u);
  EXPECT_EQ(one.str("raw_id"), "4.20.16");
  EXPECT_EQ(ToJson(one.obj().at("available_upgrades")),
            R"(["4.21.0","4.21.1","4.21.2","4.21.3","4.21.4","4.21.5"])");
  auto older = Call(*sim_, Verb::get, kBase + "/versions/openshift-v4.20.15-candidate");
  EXPECT_EQ(ToJson(older.obj().at("available_upgrades").as_array().front()), R"("4.20.16")");
  EXPECT_EQ(*GetInt(Call(*sim_, Verb::get, kBase + "/versions").obj(), "total"),
            static_cast<int64_t>(Cat().versions().size() + 1));
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/versions/openshift-v4.20.16").status, 404u);  // not stable yet
  EXPECT_EQ(NodeVersions(Graph("?channel=candidate-4.20").obj()).back(), "4.20.16");
  auto cluster = Call(*sim_, Verb::post, kBase + "/clusters",
                      R"({"name":"c","azure":{"subscription_id":"s","resource_group_name":"r"},)"
                      R"("version":{"id":"openshift-v4.20.16","channel_group":"candidate"}})");
  EXPECT_EQ(cluster.status, 201u) << ToJson(cluster.body);

  auto events = Events(before);
  ASSERT_FALSE(events.empty());
  const json::object& e = events.front().as_object();
  EXPECT_EQ(*GetString(e, "kind"), "Version");
  EXPECT_EQ(*GetString(e, "state"), "published");
  EXPECT_EQ(*GetString(e, "href"), kBase + "/versions/openshift-v4.20.16-candidate");
  EXPECT_EQ(ToJson(e.at("object")), ToJson(one.body));

  auto promote = Control(Verb::post, "", R"({"version":"4.20.16","channel_groups":["candidate","fast"]})");
  EXPECT_EQ(promote.status, 201u);
  EXPECT_EQ(ToJson(promote.obj().at("published")), R"(["openshift-v4.20.16-fast"])");
  auto again = Control(Verb::post, "", R"({"version":"4.20.16","channel_groups":["fast"]})");
  EXPECT_EQ(again.status, 200u);
  EXPECT_EQ(ToJson(again.obj().at("published")), "[]");
  EXPECT_EQ(
      ToJson(Control(Verb::get, "").body),
      R"({"releases":[{"version":"4.20.16","channel_groups":["candidate","fast"]}],"withdrawn_edges":[]})");
}

TEST_F(UpdateServiceTest, AWithdrawnEdgeLeavesTheGraphAndComesBack) {
  StartSim(Profile::kInstant);
  const uint64_t before =
      *GetInt(Call(*sim_, Verb::get, kBase + "/events?after=latest").obj(), "last_sequence");
  auto w = Control(Verb::post, "/edges", R"({"from":"4.20.15","to":"4.21.3","withdrawn":true})");
  ASSERT_EQ(w.status, 200u) << ToJson(w.body);
  auto edges = EdgeVersions(Graph("?channel=stable-4.21").obj());
  EXPECT_EQ(std::count(edges.begin(), edges.end(), std::pair<std::string, std::string>{"4.20.15", "4.21.3"}),
            0);
  EXPECT_EQ(edges.size(), 65u);
  auto v = Call(*sim_, Verb::get, kBase + "/versions/openshift-v4.20.15");
  EXPECT_EQ(ToJson(v.obj().at("available_upgrades")), R"(["4.21.0","4.21.1","4.21.2"])");
  EXPECT_EQ(ToJson(Control(Verb::get, "").obj().at("withdrawn_edges")),
            R"([{"from":"4.20.15","to":"4.21.3"}])");
  auto restore = Control(Verb::post, "/edges", R"({"from":"4.20.15","to":"4.21.3","withdrawn":false})");
  ASSERT_EQ(restore.status, 200u);
  EXPECT_EQ(EdgeVersions(Graph("?channel=stable-4.21").obj()).size(), 66u);
  auto events = Events(before);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(*GetString(events[0].as_object(), "kind"), "UpgradeEdge");
  EXPECT_EQ(*GetString(events[0].as_object(), "state"), "withdrawn");
  EXPECT_EQ(*GetString(events[1].as_object(), "state"), "restored");
  // Restoring an edge that is not withdrawn changes nothing and announces nothing.
  EXPECT_EQ(Control(Verb::post, "/edges", R"({"from":"4.20.15","to":"4.21.3","withdrawn":false})").status,
            200u);
  EXPECT_EQ(Events(before).size(), 2u);
}

TEST_F(UpdateServiceTest, BadControlBodiesAreRefusedWithTheReason) {
  StartSim(Profile::kInstant);
  struct Case {
    std::string path, body, error;
  };
  for (const Case& c : std::vector<Case>{
           {"", "{", ""},
           {"", R"({"version":"4.20","channel_groups":["candidate"]})",
            "version must be a release number X.Y.Z"},
           {"", R"({"version":"4.20.18","channel_groups":["candidate"]})",
            "4.20.18 is not the next z-stream of 4.20 (4.20.16)"},
           {"", R"({"version":"4.20.16","channel_groups":["stable"]})",
            "minor 4.20: a release enters candidate before fast and fast before stable"},
           {"/edges", R"({"from":"4.20.15"})", "from and to must name releases (X.Y.Z)"},
           {"/edges", R"({"from":"4.20.15","to":"4.20.3"})", "no upgrade edge from '4.20.15' to '4.20.3'"},
           {"/edges", R"({"from":"4.20.15","to":"4.21.0","withdrawn":"yes"})",
            "withdrawn must be true or false"},
       }) {
    auto a = Control(Verb::post, c.path, c.body);
    EXPECT_EQ(a.status, 400u) << c.body;
    if (!c.error.empty()) {
      EXPECT_EQ(a.str("error"), c.error) << c.body;
    }
    EXPECT_FALSE(a.str("error").empty()) << c.body;
  }
  EXPECT_EQ(Control(Verb::delete_, "").status, 405u);
  EXPECT_EQ(ToJson(Control(Verb::get, "").body), R"({"releases":[],"withdrawn_edges":[]})");
}

TEST_F(UpdateServiceTest, PublicationsAndWithdrawnEdgesSurviveARestart) {
  TempDir dir;
  StartSim(Profile::kInstant, dir.str());
  ASSERT_EQ(Control(Verb::post, "", R"({"version":"4.21.6","channel_groups":["candidate","fast"]})").status,
            201u);
  ASSERT_EQ(Control(Verb::post, "",
                    R"({"version":"5.1.0","channel_groups":["candidate"],)"
                    R"("from_previous_minor":{"min_z":2},"end_of_life":"2029-09-01T00:00:00Z"})")
                .status,
            201u);
  ASSERT_EQ(Control(Verb::post, "/edges", R"({"from":"4.21.5","to":"4.21.6"})").status, 200u);
  const auto published = ToJson(Control(Verb::get, "").body);
  const uint64_t seq = *GetInt(Call(*sim_, Verb::get, kBase + "/events?after=latest").obj(), "last_sequence");
  EXPECT_EQ(seq, 4u);  // two Versions, then one, then the edge
  sim_->Stop();
  sim_.reset();

  StartSim(Profile::kInstant, dir.str());
  EXPECT_EQ(ToJson(Control(Verb::get, "").body), published);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/versions/openshift-v4.21.6-fast").status, 200u);
  EXPECT_EQ(
      Call(*sim_, Verb::get, kBase + "/versions/openshift-v5.1.0-candidate").str("end_of_life_timestamp"),
      "2029-09-01T00:00:00Z");
  auto edges = EdgeVersions(Graph("?channel=fast-4.21").obj());
  EXPECT_EQ(std::count(edges.begin(), edges.end(), std::pair<std::string, std::string>{"4.21.5", "4.21.6"}),
            0);
  EXPECT_EQ(std::count(edges.begin(), edges.end(), std::pair<std::string, std::string>{"4.21.4", "4.21.6"}),
            1);
  EXPECT_EQ(*GetInt(Call(*sim_, Verb::get, kBase + "/events?after=latest").obj(), "last_sequence"),
            static_cast<int64_t>(seq));
}

// A store whose commits fail while `fail` is set.
class FlakyStore final : public StateStore {
 public:
  Result<Snapshot> Load() override { return Snapshot{}; }
  Status Commit(const Documents&, const std::vector<std::string>&, uint64_t, const Documents&) override {
    return fail ? Status(Error::IoError("disk full")) : Status::Ok();
  }
  bool fail = false;
};

TEST(UpdateServiceCommit, APublicationThatCannotBePersistedIsNeitherMadeNorAnnounced) {
  FakeClock clock;
  TimedProvisioner prov(Timing{Profile::kInstant, 1.0}, 1);
  FlakyStore store;
  Scheduler scheduler(&clock);
  ServiceOptions o;
  o.clock = &clock;
  o.provisioner = &prov;
  o.store = &store;
  o.scheduler = &scheduler;
  auto svc = Service::Open(o);
  ASSERT_TRUE(svc.ok());
  const Release r = MakeRelease("4.20.16", {"candidate"});
  store.fail = true;
  EXPECT_FALSE((*svc)->PublishRelease(r).ok());
  EXPECT_FALSE((*svc)->SetEdgeWithdrawn("4.20.14", "4.20.15", true).ok());
  EXPECT_EQ((*svc)->updates().catalogue()->Find("openshift-v4.20.16-candidate"), nullptr);
  EXPECT_TRUE((*svc)->updates().HasEdge("4.20.14", "4.20.15"));
  EXPECT_EQ((*svc)->last_sequence(), 0u);
  store.fail = false;
  auto ids = (*svc)->PublishRelease(r);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, Strings{"openshift-v4.20.16-candidate"});
  EXPECT_EQ((*svc)->updates().Tip("4.20", "candidate"), "4.20.16");
  EXPECT_EQ((*svc)->updates().UpgradesFrom("4.20.15", "candidate").front(), "4.20.16");
  EXPECT_EQ((*svc)->last_sequence(), 1u);
  (*svc)->Shutdown();
}

}  // namespace
}  // namespace hcprp::simulator
