// Experimental tags behind the experimental-features AFEC, the version rules it relaxes, and clusters
// created without operator identities (the real service's behaviour for both).
#include <gtest/gtest.h>

#include <set>

#include "api/api.h"
#include "api/experimental.h"
#include "api/rules.h"
#include "api/test_util.h"

namespace hcprp::api {
namespace {

using testing::Dump;
using testing::Erase;
using testing::ExampleOf;
using testing::ExamplePath;
using testing::FixExample;
using testing::LoadJson;
using testing::Parse;
using testing::Set;

json::value Example(std::string_view version, Kind kind) {
  json::value doc = LoadJson(ExamplePath(ExampleOf(version, kind), "CreateOrUpdate"));
  json::value body = *FindPointer(doc, "/parameters/resource");
  FixExample(kind, body);
  return body;
}

DecodeOptions WithAfec(bool registered) {
  DecodeOptions o;
  o.experimental_release_features = registered;
  return o;
}

std::vector<std::string> Problems(const Validated<Resource>& v) {
  std::vector<std::string> out;
  if (const auto* e = std::get_if<ValidationErrors>(&v)) {
    for (const auto& f : e->errors) out.push_back(f.target + ": " + f.message);
  }
  return out;
}

Resource Accepted(const Validated<Resource>& v) {
  EXPECT_TRUE(std::holds_alternative<Resource>(v)) << Dump(v);
  if (!std::holds_alternative<Resource>(v)) return Resource{Kind::kCluster, "", {}, std::nullopt, {}, {}};
  return std::get<Resource>(v);
}

TEST(GoDuration, ParsesWhatGoParses) {
  constexpr int64_t kSecond = 1000000000;
  EXPECT_EQ(ParseGoDuration("19m"), 19 * 60 * kSecond);
  EXPECT_EQ(ParseGoDuration("1h30m"), 90 * 60 * kSecond);
  EXPECT_EQ(ParseGoDuration("1.5h"), 90 * 60 * kSecond);
  EXPECT_EQ(ParseGoDuration("90s"), 90 * kSecond);
  EXPECT_EQ(ParseGoDuration("-2m"), -120 * kSecond);
  EXPECT_EQ(ParseGoDuration("0"), 0);
  EXPECT_EQ(ParseGoDuration("500ms"), kSecond / 2);
  for (std::string_view bad : {"", "10", "5x", "m", "1h 30m", ".h", "30 m"}) {
    EXPECT_EQ(ParseGoDuration(bad), std::nullopt) << bad;
  }
}

TEST(ExperimentalTags, IgnoredWithoutTheAfec) {
  json::value body = Example(kStableVersion, Kind::kCluster);
  Set(body, "/tags/aro-hcp.experimental.cluster.single-replica", "SingleReplica");
  Set(body, "/tags/aro-hcp.experimental.cluster.unknown-feature", "something");
  Resource r = Accepted(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(false)));
  EXPECT_TRUE(r.experimental.empty()) << json::serialize(r.experimental);
  EXPECT_TRUE(r.tags.contains("aro-hcp.experimental.cluster.unknown-feature"));
}

TEST(ExperimentalTags, UnknownTagIsRefusedWithTheAfec) {
  json::value body = Example(kStableVersion, Kind::kCluster);
  Set(body, "/tags/aro-hcp.experimental.cluster.single-replica", "SingleReplica");
  Set(body, "/tags/aro-hcp.experimental.cluster.unknown-feature", "something");
  auto decoded = DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(true));
  ASSERT_TRUE(std::holds_alternative<ValidationErrors>(decoded));
  const auto& errors = std::get<ValidationErrors>(decoded).errors;
  ASSERT_EQ(errors.size(), 1u) << Dump(decoded);
  EXPECT_EQ(errors[0].code, kInvalidRequestContent);
  EXPECT_EQ(errors[0].target, "tags[aro-hcp.experimental.cluster.unknown-feature]");
  EXPECT_EQ(errors[0].message,
            "Invalid value: \"aro-hcp.experimental.cluster.unknown-feature\": unrecognized experimental tag");
}

TEST(ExperimentalTags, KnownTagsTakeEffectWithTheAfec) {
  json::value body = Example(kStableVersion, Kind::kCluster);
  Set(body, "/tags/aro-hcp.experimental.cluster.single-replica", "SingleReplica");
  Set(body, "/tags/ARO-HCP.experimental.cluster.size-override", "Minimal");
  Set(body, "/tags/aro-hcp.experimental.cluster.control-plane-operator-image-override", " quay.io/cpo:1 ");
  Set(body, "/tags/aro-hcp.experimental.cluster.max-creation-duration", "19m");
  Set(body, "/tags/aro-hcp.experimental.cluster.max-deletion-duration", "1h");
  Resource r = Accepted(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(true)));
  EXPECT_EQ(r.experimental,
            Parse(R"({"controlPlaneAvailability":"SingleReplica","controlPlanePodSizing":"Minimal",
      "controlPlaneOperatorImage":"quay.io/cpo:1","createDeadlineSeconds":1140,"deleteDeadlineSeconds":3600})")
                .as_object());
  // A replace reads the creation deadline no more, the rest again.
  Resource replaced = Accepted(DecodeReplace(kStableVersion, Kind::kCluster, body, r, WithAfec(true)));
  EXPECT_FALSE(replaced.experimental.contains(kCreateDeadlineSeconds));
  EXPECT_EQ(replaced.experimental.at(kDeleteDeadlineSeconds), 3600);
  // Stored and read back.
  auto stored = FromStorage(ToStorage(r));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->experimental, r.experimental);
}

TEST(ExperimentalTags, ValuesTheServiceCannotUseAreRefused) {
  json::value body = Example(kStableVersion, Kind::kCluster);
  Set(body, "/tags/aro-hcp.experimental.cluster.single-replica", "yes");
  Set(body, "/tags/aro-hcp.experimental.cluster.size-override", "Large");
  Set(body, "/tags/aro-hcp.experimental.cluster.control-plane-operator-image-override", "  ");
  Set(body, "/tags/aro-hcp.experimental.cluster.max-creation-duration", "30s");
  Set(body, "/tags/aro-hcp.experimental.cluster.max-deletion-duration", "soon");
  Set(body, "/tags/aro-hcp.experimental.cluster.control-plane-exact-version", "4.20");
  const std::string tag = "tags[aro-hcp.experimental.cluster.";
  const std::vector<std::string> expected = {
      tag + R"(single-replica]: Invalid value: "yes": must be "SingleReplica" or empty)",
      tag + R"(size-override]: Invalid value: "Large": must be "Minimal" or empty)",
      tag + R"(control-plane-operator-image-override]: Invalid value: "  ": must not be blank when provided)",
      tag + R"(max-creation-duration]: Invalid value: "30s": must be at least 1m0s)",
      tag +
          R"(max-deletion-duration]: Invalid value: "soon": must be a valid Go duration string (e.g. "24m", "30m"))",
      tag +
          R"(control-plane-exact-version]: Invalid value: "4.20": must be a valid semantic version (e.g. "4.17.3"))",
  };
  EXPECT_EQ(Problems(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(true))), expected);
}

TEST(ExperimentalTags, NodePoolKnowsOnlyItsCreationDeadline) {
  json::value body = Example(kStableVersion, Kind::kNodePool);
  Set(body, "/tags/aro-hcp.experimental.nodepool.max-creation-duration", "25m");
  Resource r = Accepted(DecodeCreate(kStableVersion, Kind::kNodePool, body, WithAfec(true)));
  EXPECT_EQ(r.experimental, Parse(R"({"createDeadlineSeconds":1500})").as_object());
  Set(body, "/tags/aro-hcp.experimental.nodepool.marketplace-image", "x");
  EXPECT_EQ(Problems(DecodeCreate(kStableVersion, Kind::kNodePool, body, WithAfec(true))),
            (std::vector<std::string>{"tags[aro-hcp.experimental.nodepool.marketplace-image]: Invalid value: "
                                      "\"aro-hcp.experimental.nodepool.marketplace-image\": unrecognized "
                                      "experimental tag"}));
  EXPECT_TRUE(
      std::holds_alternative<Resource>(DecodeCreate(kStableVersion, Kind::kNodePool, body, WithAfec(false))));
}

TEST(ExperimentalVersions, PatchVersionPinsTheControlPlaneWithTheAfec) {
  json::value body = Example(kStableVersion, Kind::kCluster);
  Set(body, "/properties/version/id", "4.20.3");
  EXPECT_EQ(
      Problems(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(false))),
      (std::vector<std::string>{"properties.version.id: Invalid value: \"4.20.3\": must be specified as "
                                "MAJOR.MINOR; the PATCH value is managed"}));
  Resource r = Accepted(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(true)));
  EXPECT_EQ(*FindPointer(json::value(r.properties), "/version/id"), "4.20");
  EXPECT_EQ(r.experimental.at(kControlPlaneExactVersion), "4.20.3");
  // The tag wins over version.id.
  Set(body, "/tags/aro-hcp.experimental.cluster.control-plane-exact-version", "4.21.1");
  Resource tagged = Accepted(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(true)));
  EXPECT_EQ(*FindPointer(json::value(tagged.properties), "/version/id"), "4.21");
  EXPECT_EQ(tagged.experimental.at(kControlPlaneExactVersion), "4.21.1");
}

TEST(ExperimentalVersions, OpenShift5AndDevelopmentChannelsNeedTheAfec) {
  json::value body = Example(kStableVersion, Kind::kCluster);
  Set(body, "/properties/version/id", "5.0");
  Set(body, "/properties/version/channelGroup", "candidate");
  EXPECT_EQ(
      Problems(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(false))),
      (std::vector<std::string>{
          "properties.version.id: Invalid value: \"5.0\": OpenShift v5 and above is not supported",
          "properties.version.channelGroup: Unsupported value: \"candidate\": supported values: \"fast\", "
          "\"stable\""}));
  Accepted(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(true)));
  Set(body, "/properties/version/channelGroup", "beta");
  EXPECT_EQ(
      Problems(DecodeCreate(kStableVersion, Kind::kCluster, body, WithAfec(true))),
      (std::vector<std::string>{"properties.version.channelGroup: Unsupported value: \"beta\": supported "
                                "values: \"candidate\", \"fast\", \"nightly\", \"stable\""}));
}

TEST(ExperimentalVersions, NodePoolBelowTheMinimumAndNightlyNeedTheAfec) {
  json::value body = Example(kStableVersion, Kind::kNodePool);
  Set(body, "/properties/version/id", "4.20.0");
  Set(body, "/properties/version/channelGroup", "nightly");
  EXPECT_EQ(
      Problems(DecodeCreate(kStableVersion, Kind::kNodePool, body, WithAfec(false))),
      (std::vector<std::string>{
          "properties.version.channelGroup: Unsupported value: \"nightly\": supported values: \"fast\", "
          "\"stable\"",
          "properties.version.id: Invalid value: \"4.20.0\": must be at least 4.20.8"}));
  Accepted(DecodeCreate(kStableVersion, Kind::kNodePool, body, WithAfec(true)));
}

rules::Semver V(std::string_view text) { return *rules::ParseSemverTolerant(text).version; }

TEST(ExperimentalVersions, NodePoolMajorChangesFollowTheRealServicesPaths) {
  using rules::MajorVersionChangeProblem;
  // Within one major next to a control plane of the same major: nothing to say.
  EXPECT_EQ(MajorVersionChangeProblem(V("4.21.0"), V("4.20.8"), V("4.21.2"), false), std::nullopt);
  EXPECT_EQ(MajorVersionChangeProblem(V("5.0.0"), V("4.21.0"), V("5.0.0"), false),
            "major version changes are not supported");
  EXPECT_EQ(MajorVersionChangeProblem(V("5.0.0"), V("4.21.0"), V("5.0.0"), true),
            "invalid upgrade path from 4.21.0 to 5.0.0: major version upgrades are not supported");
  EXPECT_EQ(MajorVersionChangeProblem(V("5.0.0"), V("4.22.0"), V("5.0.0"), true), std::nullopt);
  EXPECT_EQ(MajorVersionChangeProblem(V("5.1.0"), V("4.22.0"), V("5.1.0"), true),
            "invalid upgrade path from 4.22.0 to 5.1.0: 4.22 can only upgrade to 5.0");
  // A node pool that stays on 4 next to a control plane on 5.
  EXPECT_EQ(MajorVersionChangeProblem(V("4.22.1"), V("4.22.0"), V("5.0.0"), false),
            "node pool version changes are not supported while the control plane is on a different major "
            "version (node pool major version 4 vs control plane major version 5)");
  EXPECT_EQ(MajorVersionChangeProblem(V("4.22.1"), V("4.22.0"), V("5.1.0"), true), std::nullopt);
  EXPECT_EQ(MajorVersionChangeProblem(V("4.21.1"), V("4.21.0"), V("5.1.0"), true),
            "node pool version 4.21.1 cannot coexist with control plane version 5.1.0");
  EXPECT_EQ(MajorVersionChangeProblem(V("4.20.9"), V("4.20.8"), V("5.0.0"), true),
            "node pool version 4.20.9 is not allowed to coexist with a different-major control plane");
  // Back from 5 to 4.
  EXPECT_EQ(MajorVersionChangeProblem(V("4.22.0"), V("5.0.0"), V("5.0.0"), true), std::nullopt);
}

// --- Clusters without operator identities ----------------------------------------------------------

// What a GET through each api-version of `r` lacks that the version's document requires: the
// targets of its response-schema violations.
std::set<std::string> ResponseViolations(std::string_view version, const Resource& r,
                                         const Envelope& envelope) {
  json::value body = testing::OnTheWire(EncodeResource(version, r, envelope));
  std::set<std::string> out;
  for (const auto& e : ValidateResponse(version, "HcpOpenShiftCluster", body).errors)
    out.insert(e.target + ": " + e.message);
  return out;
}

// A 2024-06-10-preview cluster as its example creates it, the observed values the service sets
// taken from the example's response, after `edit` of the request body.
template <typename Edit>
testing::Created CreateFirstPreviewCluster(Edit edit) {
  testing::Example e = ExampleOf(kFirstPreview, Kind::kCluster);
  json::value doc = LoadJson(ExamplePath(e, "CreateOrUpdate"));
  json::value body = *FindPointer(doc, "/parameters/resource");
  FixExample(Kind::kCluster, body);
  edit(body);
  Resource created = Accepted(DecodeCreate(kFirstPreview, Kind::kCluster, body));
  const json::value& response = *FindPointer(doc, "/responses/200/body");
  created.observed = ObservedFromWire(kFirstPreview, Kind::kCluster, response);
  return {created, testing::EnvelopeOf(response)};
}

TEST(OperatorIdentities, ClusterWithoutThemIsAcceptedAndShownWithoutThem) {
  testing::Created c = CreateFirstPreviewCluster([](json::value& body) {
    Erase(body, "/properties/platform/operatorsAuthentication");
    Set(body, "/identity/userAssignedIdentities", json::object());
  });
  EXPECT_EQ(FindPointer(json::value(c.resource.properties), "/platform/operatorsAuthentication"), nullptr);
  // Exactly what docs/validation.md lists as the specification's inconsistency, in every version.
  for (const ApiVersion& v : ApiVersions()) {
    EXPECT_EQ(ResponseViolations(v.name, c.resource, c.envelope),
              (std::set<std::string>{"properties.platform.operatorsAuthentication: Required value"}))
        << v.name;
  }
}

TEST(OperatorIdentities, ClusterWithOnlyTheServiceIdentityIsAcceptedAndShownSo) {
  testing::Created c = CreateFirstPreviewCluster([](json::value& body) {
    Erase(body, "/properties/platform/operatorsAuthentication/userAssignedIdentities/controlPlaneOperators");
    Erase(body, "/properties/platform/operatorsAuthentication/userAssignedIdentities/dataPlaneOperators");
  });
  const std::string uai = "properties.platform.operatorsAuthentication.userAssignedIdentities";
  for (const ApiVersion& v : ApiVersions()) {
    EXPECT_EQ(ResponseViolations(v.name, c.resource, c.envelope),
              (std::set<std::string>{uai + ".controlPlaneOperators: Required value",
                                     uai + ".dataPlaneOperators: Required value"}))
        << v.name;
  }
}

TEST(OperatorIdentities, ClusterWithoutTheServiceIdentityIsAcceptedInEveryVersion) {
  for (const ApiVersion& v : ApiVersions()) {
    json::value body = Example(v.name, Kind::kCluster);
    Erase(body, "/properties/platform/operatorsAuthentication/userAssignedIdentities/serviceManagedIdentity");
    Set(body, "/identity/userAssignedIdentities", json::object());
    auto decoded = DecodeCreate(v.name, Kind::kCluster, body);
    EXPECT_TRUE(std::holds_alternative<Resource>(decoded)) << v.name << "\n" << Dump(decoded);
  }
}

}  // namespace
}  // namespace hcprp::api
