// requestAdminCredential with a certificate signing request (2026-09-01-preview and later), its
// validation, the body-less form of the older api-versions, and hcpOpenShiftVersions against the
// spec. The last tests run the frontend against the Cluster Service simulator: a CSR goes in, the
// result's certificate chains to the cluster's CA, and after revokeCredentials the simulator's check
// endpoint refuses it.
#include <gtest/gtest.h>

#include <thread>

#include "api/api.h"
#include "clusterservice/http_client.h"
#include "core/base64.h"
#include "core/time.h"
#include "frontend/testing/scenario.h"
#include "pki/x509.h"
#include "simulator/simulator.h"

namespace hcprp::frontend::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kCn = "system:customer-break-glass:system-admin";
// The served api-versions that take a CSR (2026-09-01-preview joins 2026-10-01 once it is served).
std::vector<std::string> CsrApiVersions() {
  std::vector<std::string> out;
  for (std::string v : {"2026-09-01-preview", "2026-10-01"}) {
    if (api::IsSupportedVersion(v)) out.push_back(v);
  }
  return out;
}
// The served api-versions with the body-less form.
std::vector<std::string> BodylessApiVersions() {
  std::vector<std::string> out;
  for (std::string v : {"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview"}) {
    if (api::IsSupportedVersion(v)) out.push_back(v);
  }
  return out;
}

std::string V(std::string_view version) { return "?api-version=" + std::string(version); }

std::string Header(const Response& r, std::string_view name) {
  auto it = r.find(name);
  return it == r.end() ? "" : std::string(it->value());
}

std::string CsrBody(std::string_view pem) {
  return ToJson(json::object{{"certificateSigningRequest", json::string(pem)}});
}

std::string GoodCsr() {
  auto kc = pki::NewCsr(kCn, {"system:masters"});
  EXPECT_TRUE(kc.ok());
  return kc.ok() ? kc->csr_pem : "";
}

// Every schema problem of a response body as read off the wire.
std::string SchemaProblems(std::string_view api_version, std::string_view definition, const Response& r) {
  auto body = ParseJson(r.body());
  if (!body.ok()) return "not JSON: " + r.body();
  std::string all;
  for (const auto& e : api::ValidateResponse(api_version, definition, *body).errors) {
    all += e.target + ": " + e.message + "\n";
  }
  return all;
}

class CredentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s.RegisterSubscription();
    auto r = s.Put(ClusterPath("cred") + V(kStable), ClusterBody());
    ASSERT_EQ(r.result_int(), 201u) << r.body();
    s.FinishOperation(OperationIdOf(Header(r, "Azure-AsyncOperation")));
  }
  std::string Action() { return ClusterPath("cred") + "/requestAdminCredential"; }

  Scenario s;
};

TEST_F(CredentialTest, ACsrGoesToTheClusterServiceAndTheResultConforms) {
  for (const std::string& version : CsrApiVersions()) {
    const std::string csr = GoodCsr();
    auto r = s.Post(Action() + V(version), CsrBody(csr));
    ASSERT_EQ(r.result_int(), 202u) << version << ": " << r.body();
    const std::string location = Header(r, "Location");
    auto op = s.Operation(OperationIdOf(location));
    ASSERT_TRUE(op);
    auto cs_cred = s.cs.Get(op->internal_id);
    ASSERT_TRUE(cs_cred.ok());
    EXPECT_EQ(GetString(*cs_cred, "csr"), csr) << "the CSR reaches the Cluster Service unchanged";
    s.FinishOperation(op->id);
    auto res = s.Get(TargetOf(location));
    ASSERT_EQ(res.result_int(), 200u) << res.body();
    EXPECT_EQ(SchemaProblems(version, "HcpOpenShiftClusterAdminCredential", res), "") << res.body();
  }
}

TEST_F(CredentialTest, TheCsrIsRequiredFrom20260901Preview) {
  const std::string before = s.DumpStore();
  for (const std::string& version : CsrApiVersions()) {
    for (const std::string& body : {std::string(), std::string("{}"), CsrBody("")}) {
      auto r = s.Post(Action() + V(version), body);
      ASSERT_EQ(r.result_int(), 400u) << version << " " << body << ": " << r.body();
      EXPECT_EQ(
          r.body(),
          R"({"error":{"code":"InvalidRequestContent","message":"Required value","target":"certificateSigningRequest"}})");
    }
  }
  EXPECT_EQ(s.DumpStore(), before);
}

TEST_F(CredentialTest, AMalformedOrForeignCsrIsRefusedBeforeAnythingIsStored) {
  const std::string before = s.DumpStore();
  auto expect_error = [&](const std::string& body, const std::string& message) {
    auto r = s.Post(Action() + V(kStable), body);
    ASSERT_EQ(r.result_int(), 400u) << r.body();
    auto b = BodyOf(r);
    EXPECT_EQ(*FindPointer(b, "/error/code"), "InvalidRequestContent") << r.body();
    EXPECT_EQ(*FindPointer(b, "/error/target"), "certificateSigningRequest") << r.body();
    EXPECT_EQ(*FindPointer(b, "/error/message"), json::value(message)) << r.body();
  };
  expect_error(CsrBody("not a certificate request"),
               R"(Invalid value: "": failed to decode PEM block as CERTIFICATE REQUEST)");
  auto ca = pki::NewCertificateAuthority("x", std::chrono::system_clock::now(), 1h);
  ASSERT_TRUE(ca.ok());
  expect_error(CsrBody(ca->cert_pem),
               R"(Invalid value: "": failed to decode PEM block as CERTIFICATE REQUEST)");
  auto garbage =
      s.Post(Action() + V(kStable),
             CsrBody("-----BEGIN CERTIFICATE REQUEST-----\ndGVzdA==\n-----END CERTIFICATE REQUEST-----\n"));
  ASSERT_EQ(garbage.result_int(), 400u);
  EXPECT_EQ(FindPointer(BodyOf(garbage), "/error/message")
                ->as_string()
                .find("Invalid value: \"\": failed to parse certificate request: "),
            0u)
      << garbage.body();

  // A signature that does not match: the last signature byte flipped.
  std::string csr = GoodCsr();
  const std::string end = "-----END CERTIFICATE REQUEST-----";
  size_t pos = csr.find(end) - 6;  // inside the last line of base64, before any padding
  while (csr[pos] == '=' || csr[pos] == '\n') --pos;
  csr[pos] = csr[pos] == 'A' ? 'B' : 'A';
  expect_error(CsrBody(csr), R"(Invalid value: "": certificate request signature is invalid)");

  auto wrong_cn = pki::NewCsr("alice", {"system:masters"});
  ASSERT_TRUE(wrong_cn.ok());
  expect_error(
      CsrBody(wrong_cn->csr_pem),
      R"(Invalid value: "alice": subject common name must be "system:customer-break-glass:system-admin")");
  auto wrong_o = pki::NewCsr(kCn, {"system:masters", "devs"});
  ASSERT_TRUE(wrong_o.ok());
  expect_error(
      CsrBody(wrong_o->csr_pem),
      R"(Invalid value: ["system:masters","devs"]: subject organization must be exactly ["system:masters"])");

  // Both wrong: one error per problem.
  auto both = pki::NewCsr("bob", {});
  ASSERT_TRUE(both.ok());
  auto r = s.Post(Action() + V(kStable), CsrBody(both->csr_pem));
  ASSERT_EQ(r.result_int(), 400u);
  auto b = BodyOf(r);
  EXPECT_EQ(*FindPointer(b, "/error/code"), "MultipleErrorsOccurred");
  EXPECT_EQ(
      *FindPointer(b, "/error/details/0/message"),
      R"(Invalid value: "bob": subject common name must be "system:customer-break-glass:system-admin")");
  EXPECT_EQ(*FindPointer(b, "/error/details/1/message"),
            R"(Invalid value: null: subject organization must be exactly ["system:masters"])");
  EXPECT_EQ(*FindPointer(b, "/error/details/1/target"), "certificateSigningRequest");
  EXPECT_EQ(s.DumpStore(), before);
  for (const auto& call : s.cs.Calls())
    EXPECT_EQ(call.find("request_admin_credential"), std::string::npos) << call;
}

TEST_F(CredentialTest, OlderApiVersionsTakeNoCsrAndIgnoreABody) {
  for (const std::string& version : BodylessApiVersions()) {
    for (const std::string& body : {std::string(), CsrBody(GoodCsr()), std::string("not json")}) {
      auto r = s.Post(Action() + V(version), body);
      ASSERT_EQ(r.result_int(), 202u) << body << ": " << r.body();
      auto op = s.Operation(OperationIdOf(Header(r, "Location")));
      ASSERT_TRUE(op);
      auto cs_cred = s.cs.Get(op->internal_id);
      ASSERT_TRUE(cs_cred.ok());
      EXPECT_FALSE(cs_cred->contains("csr")) << "a body-less request, whatever the body";
      s.FinishOperation(op->id);
      auto res = s.Get(TargetOf(Header(r, "Location")));
      ASSERT_EQ(res.result_int(), 200u);
      EXPECT_EQ(SchemaProblems(version, "HcpOpenShiftClusterAdminCredential", res), "") << res.body();
    }
  }
}

TEST(VersionsTest, EveryPropertyTheSpecRequires) {
  Scenario s;
  s.RegisterSubscription();
  s.cs.SetVersions(json::array{json::object{{"kind", "Version"},
                                            {"id", "openshift-v4.20.8"},
                                            {"raw_id", "4.20.8"},
                                            {"channel_group", "stable"},
                                            {"enabled", true},
                                            {"end_of_life_timestamp", "2027-05-21T00:00:00Z"}},
                               json::object{{"kind", "Version"},
                                            {"id", "openshift-v4.21.5-fast"},
                                            {"raw_id", "4.21.5"},
                                            {"channel_group", "fast"},
                                            {"enabled", false},
                                            {"end_of_life_timestamp", "2027-10-21T00:00:00Z"}}});
  const std::string loc =
      "/subscriptions/" + std::string(kSub) + "/providers/Microsoft.RedHatOpenShift/locations/eastus";
  for (const std::string& version : api::SupportedVersions()) {
    auto list = s.Get(loc + "/hcpOpenShiftVersions" + V(version));
    ASSERT_EQ(list.result_int(), 200u) << list.body();
    EXPECT_EQ(SchemaProblems(version, "HcpOpenShiftVersionListResult", list), "") << list.body();
    auto b = BodyOf(list);
    EXPECT_EQ(*FindPointer(b, "/value/0/name"), "4.20.8");
    EXPECT_EQ(*FindPointer(b, "/value/0/id"), json::value(loc + "/hcpOpenShiftVersions/4.20.8"));
    EXPECT_EQ(*FindPointer(b, "/value/0/properties/endOfLifeTimestamp"), "2027-05-21T00:00:00Z");
    EXPECT_EQ(*FindPointer(b, "/value/1/name"), "4.21.5-fast");
    EXPECT_EQ(*FindPointer(b, "/value/1/properties/channelGroup"), "fast");
    EXPECT_EQ(*FindPointer(b, "/value/1/properties/enabled"), false);
    auto one = s.Get(loc + "/hcpOpenShiftVersions/4.21.5-fast" + V(version));
    ASSERT_EQ(one.result_int(), 200u) << one.body();
    EXPECT_EQ(SchemaProblems(version, "HcpOpenShiftVersion", one), "") << one.body();
    EXPECT_EQ(s.Get(loc + "/hcpOpenShiftVersions/4.21.6" + V(version)).result_int(), 404u);
    EXPECT_EQ(s.Get(loc + "/hcpOpenShiftVersions/4.20.8%3Fx" + V(version)).result_int(), 404u);
  }
  // No Cluster Service, no list (there is no built-in one to fall back on).
  s.cs.FailWith(Error::Unavailable("down"));
  EXPECT_EQ(s.Get(loc + "/hcpOpenShiftVersions" + V(kStable)).result_int(), 503u);
}

// --- Against the simulator ---------------------------------------------------------------------

class SimulatedCredentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    simulator::SimulatorOptions o;
    o.profile = simulator::Profile::kInstant;
    auto sim = simulator::Simulator::Start(o);
    ASSERT_TRUE(sim.ok()) << sim.error().ToString();
    sim_ = std::move(*sim);
    auto client = clusterservice::HttpClient::Create({.base_url = sim_->base_url()});
    ASSERT_TRUE(client.ok()) << client.error().ToString();
    client_ = std::move(*client);
    s_ = std::make_unique<Scenario>(FrontendOptions{}, client_.get());
    s_->RegisterSubscription();
  }
  void TearDown() override {
    s_.reset();
    if (sim_) sim_->Stop();
  }
  // Waits until `check` holds of the Cluster Service object at `href`.
  bool WaitFor(const std::string& href, const std::function<bool(const json::object&)>& check) {
    for (int i = 0; i < 200; ++i) {
      auto o = client_->Get(href);
      if (o.ok() && check(*o)) return true;
      std::this_thread::sleep_for(25ms);
    }
    return false;
  }
  // POST {cluster}/credentials/check with a PEM certificate: the simulator's status code.
  unsigned CheckCertificate(const std::string& cluster_href, const std::string& pem) {
    http::Request req = http::MakeRequest(http::Verb::post, cluster_href + "/credentials/check", pem);
    return sim_->Handle(std::move(req)).result_int();
  }

  std::unique_ptr<simulator::Simulator> sim_;
  std::unique_ptr<clusterservice::HttpClient> client_;
  std::unique_ptr<Scenario> s_;
};

// The base64 value of `key` in a kubeconfig, decoded ("" when absent or not base64).
std::string KubeconfigData(const std::string& kubeconfig, const std::string& key) {
  auto at = kubeconfig.find(key + ": ");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return Base64Decode(kubeconfig.substr(at, kubeconfig.find('\n', at) - at)).value_or("");
}

TEST_F(SimulatedCredentialTest, CsrToSignedCertificateToRevocation) {
  Scenario& s = *s_;
  const std::string path = ClusterPath("sim");
  auto created = s.Put(path + V(kStable), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  s.FinishOperation(OperationIdOf(Header(created, "Azure-AsyncOperation")));
  const std::string cluster = s.Resource(path)->internal_id;
  ASSERT_TRUE(WaitFor(cluster, [](const json::object& o) {
    const json::object* st = GetObject(o, "status");
    return st && GetString(*st, "state") == "ready";
  }));

  const std::string csr = GoodCsr();
  auto r = s.Post(path + "/requestAdminCredential" + V(kStable), CsrBody(csr));
  ASSERT_EQ(r.result_int(), 202u) << r.body();
  const std::string location = Header(r, "Location");
  auto op = s.Operation(OperationIdOf(location));
  ASSERT_TRUE(op);
  ASSERT_TRUE(
      WaitFor(op->internal_id, [](const json::object& o) { return GetString(o, "status") == "issued"; }));
  s.FinishOperation(op->id);
  auto res = s.Get(TargetOf(location));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(SchemaProblems(kStable, "HcpOpenShiftClusterAdminCredential", res), "") << res.body();

  auto body = BodyOf(res);
  const std::string kubeconfig(FindPointer(body, "/kubeconfig")->as_string());
  const std::string cert = KubeconfigData(kubeconfig, "client-certificate-data");
  const std::string ca = KubeconfigData(kubeconfig, "certificate-authority-data");
  auto info = pki::VerifyCertificate({"", ca}, cert, std::chrono::system_clock::now());
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_EQ(info->subject, "/O=system:masters/CN=" + std::string(kCn));
  EXPECT_EQ(FindPointer(body, "/expirationTimestamp")->as_string(), FormatRfc3339(info->not_after));
  EXPECT_EQ(CheckCertificate(cluster, cert), 200u);

  auto revoke = s.Post(path + "/revokeCredentials" + V(kStable));
  ASSERT_EQ(revoke.result_int(), 202u) << revoke.body();
  EXPECT_EQ(CheckCertificate(cluster, cert), 403u);
  ASSERT_TRUE(
      WaitFor(op->internal_id, [](const json::object& o) { return GetString(o, "status") == "revoked"; }));
  EXPECT_EQ(CheckCertificate(cluster, cert), 403u);
}

}  // namespace
}  // namespace hcprp::frontend::testing
