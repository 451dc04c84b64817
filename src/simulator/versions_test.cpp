#include "simulator/versions.h"

#include <gtest/gtest.h>

#include <fstream>

#include "simulator/test_util.h"

namespace hcprp::simulator {
namespace {

using namespace std::chrono_literals;

TEST(VersionCatalogue, TheBuiltInCatalogueHasEveryZStream) {
  auto file = VersionCatalogue::Load(HCPRP_SIMULATOR_VERSIONS_JSON);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  const VersionCatalogue& cat = VersionCatalogue::BuiltIn();
  ASSERT_EQ(cat.versions().size(), file->versions().size());
  struct Minor {
    const char* minor;
    int last;
  };
  for (Minor m :
       {Minor{"4.18", 30}, Minor{"4.19", 25}, Minor{"4.20", 15}, Minor{"4.21", 5}, Minor{"4.22", 4}}) {
    for (int z = 0; z <= m.last; ++z) {
      const std::string id = "openshift-v" + std::string(m.minor) + "." + std::to_string(z) + "-fast";
      EXPECT_NE(cat.Find(id), nullptr) << id;
    }
    EXPECT_EQ(cat.Find("openshift-v" + std::string(m.minor) + "." + std::to_string(m.last + 1) + "-fast"),
              nullptr);
  }
  const CatalogueVersion* v = cat.Find("openshift-v4.20.8");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->raw_id, "4.20.8");
  EXPECT_EQ(v->channel_group, "stable");
  EXPECT_TRUE(v->enabled);
  EXPECT_EQ(v->end_of_life, "2027-05-21T00:00:00Z");
  EXPECT_EQ(cat.Find("openshift-v4.21.5"), nullptr);  // not yet in stable
  EXPECT_NE(cat.Find("openshift-v4.21.5-candidate"), nullptr);
  EXPECT_FALSE(cat.Find("openshift-v4.18.0")->enabled);
  EXPECT_EQ(cat.default_version().id(), "openshift-v4.20.15");
  int defaults = 0;
  for (const auto& x : cat.versions()) defaults += x.is_default ? 1 : 0;
  EXPECT_EQ(defaults, 1);
}

TEST(VersionCatalogue, RefusalNamesTheProblem) {
  const VersionCatalogue& cat = VersionCatalogue::BuiltIn();
  EXPECT_EQ(cat.Refusal("openshift-v4.20.8", "stable"), std::nullopt);
  EXPECT_EQ(cat.Refusal("4.20.8", ""), std::nullopt);
  EXPECT_EQ(cat.Refusal("openshift-v4.19", ""), std::nullopt);
  EXPECT_EQ(cat.Refusal("openshift-v4.21.5", "fast"), std::nullopt);
  EXPECT_EQ(cat.Refusal("openshift-v4.21.5-fast", ""), std::nullopt);
  EXPECT_EQ(cat.Refusal("openshift-v4.20.99", "stable"), "version 'openshift-v4.20.99' is not supported");
  EXPECT_EQ(cat.Refusal("openshift-v4.17", "stable"), "version 'openshift-v4.17' is not supported");
  EXPECT_EQ(cat.Refusal("openshift-v4.21.5", "stable"),
            "version 'openshift-v4.21.5' is not available in channel group 'stable'");
  EXPECT_EQ(cat.Refusal("openshift-v4.21.5-fast", "stable"),
            "version 'openshift-v4.21.5-fast' belongs to channel group 'fast', not 'stable'");
  EXPECT_EQ(cat.Refusal("openshift-v4.18.1", "stable"), "version 'openshift-v4.18.1' is disabled");
}

TEST(VersionCatalogue, BadDocumentsAreRefused) {
  EXPECT_FALSE(VersionCatalogue::Parse("[]").ok());
  EXPECT_FALSE(VersionCatalogue::Parse(R"({"minors":[]})").ok());
  EXPECT_FALSE(
      VersionCatalogue::Parse(
          R"({"default":{"version":"4.1.0"},"minors":[{"minor":"4.1","channel_groups":{"stable":1}}]})")
          .ok());  // no end_of_life
  EXPECT_FALSE(
      VersionCatalogue::Parse(R"({"default":{"version":"4.1.9"},"minors":[{"minor":"4.1",)"
                              R"("end_of_life":"2030-01-01T00:00:00Z","channel_groups":{"stable":1}}]})")
          .ok());  // default not in the catalogue
  auto ok =
      VersionCatalogue::Parse(R"({"default":{"version":"4.1.1"},"minors":[{"minor":"4.1",)"
                              R"("end_of_life":"2030-01-01T00:00:00Z","channel_groups":{"stable":1}}]})");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok->versions().size(), 2u);
  EXPECT_FALSE(VersionCatalogue::Load("/nonexistent/versions.json").ok());
}

class SimulatorVersionsTest : public SimulatorTest {};

TEST_F(SimulatorVersionsTest, VersionsEndpointServesTheCatalogue) {
  StartSim(Profile::kInstant);
  auto list = Call(*sim_, Verb::get, kBase + "/versions");
  ASSERT_EQ(list.status, 200u);
  EXPECT_EQ(static_cast<size_t>(*GetInt(list.obj(), "total")), VersionCatalogue::BuiltIn().versions().size());
  auto one = Call(*sim_, Verb::get, kBase + "/versions/openshift-v4.20.8-fast");
  ASSERT_EQ(one.status, 200u);
  EXPECT_EQ(one.str("raw_id"), "4.20.8");
  EXPECT_EQ(one.str("channel_group"), "fast");
  EXPECT_EQ(one.str("end_of_life_timestamp"), "2027-05-21T00:00:00Z");
  EXPECT_EQ(*GetBool(one.obj(), "enabled"), true);
  auto search = Call(*sim_, Verb::get, kBase + "/versions?search=channel_group%20%3D%20%27stable%27");
  EXPECT_EQ(*GetInt(search.obj(), "total"), 31 + 26 + 16 + 4 + 3 + 2 + 2 + 1);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/versions/openshift-v4.99.0").status, 404u);
}

TEST_F(SimulatorVersionsTest, NodePoolAtARealZStream) {
  StartSim(Profile::kInstant);
  const std::string href = CreateCluster("zs");
  sim_->RunDueForTest();
  auto np =
      Call(*sim_, Verb::post, href + "/node_pools",
           R"({"name":"np1","replicas":1,"version":{"id":"openshift-v4.20.8","channel_group":"stable"}})");
  ASSERT_EQ(np.status, 201u) << ToJson(np.body);
  auto bad = Call(*sim_, Verb::post, href + "/node_pools",
                  R"({"name":"np2","version":{"id":"openshift-v4.20.99","channel_group":"stable"}})");
  EXPECT_EQ(bad.status, 400u);
  EXPECT_EQ(bad.str("reason"), "version 'openshift-v4.20.99' is not supported");
  auto group = Call(*sim_, Verb::post, href + "/node_pools",
                    R"({"name":"np3","version":{"id":"openshift-v4.21.5","channel_group":"stable"}})");
  EXPECT_EQ(group.status, 400u);
  EXPECT_EQ(group.str("reason"), "version 'openshift-v4.21.5' is not available in channel group 'stable'");
  // A cluster without a version gets the default.
  auto c = Call(*sim_, Verb::post, kBase + "/clusters",
                R"({"name":"dflt","azure":{"subscription_id":"s","resource_group_name":"r"}})");
  ASSERT_EQ(c.status, 201u);
  EXPECT_EQ(*GetString(*GetObject(c.obj(), "version"), "id"), "openshift-v4.20.15");
}

TEST_F(SimulatorVersionsTest, AVersionsFileReplacesTheCatalogue) {
  TempDir dir;
  std::filesystem::create_directories(dir.str());
  versions_file_ = dir.str() + "/versions.json";
  std::ofstream(versions_file_) << R"({"default":{"version":"4.22.1"},"minors":[{"minor":"4.22",)"
                                   R"("end_of_life":"2028-01-01T00:00:00Z","channel_groups":{"stable":1}}]})";
  StartSim(Profile::kInstant);
  auto list = Call(*sim_, Verb::get, kBase + "/versions");
  EXPECT_EQ(*GetInt(list.obj(), "total"), 2);
  auto c = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("v"));  // asks for 4.19
  EXPECT_EQ(c.status, 400u);
  EXPECT_EQ(c.str("reason"), "version 'openshift-v4.19' is not supported");

  SimulatorOptions o;
  o.serve_http = false;
  o.versions_file = dir.str() + "/missing.json";
  EXPECT_FALSE(Simulator::Start(o).ok());
}

}  // namespace
}  // namespace hcprp::simulator
