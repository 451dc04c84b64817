// Break-glass credentials with certificates: signing by the cluster's CA, the kubeconfig, the list of
// issued certificates, revocation, the check endpoint, and all of it across a restart.
#include <gtest/gtest.h>

#include "core/base64.h"
#include "pki/x509.h"
#include "simulator/test_util.h"

namespace hcprp::simulator {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kCn = "system:customer-break-glass:system-admin";

// The base64 value of `key` in a kubeconfig, decoded ("" when absent or not base64).
std::string KubeconfigData(const std::string& kubeconfig, const std::string& key) {
  auto at = kubeconfig.find(key + ": ");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return Base64Decode(kubeconfig.substr(at, kubeconfig.find('\n', at) - at)).value_or("");
}

// The PEM of the certificate a credential answer carries.
std::string CertPem(const Answer& a) {
  const json::object* c = GetObject(a.obj(), "certificate");
  return c ? std::string(GetString(*c, "pem").value_or("")) : "";
}

std::string CsrBody(const std::string& csr_pem) {
  return ToJson(json::object{{"certificate_signing_request", csr_pem}});
}

class SimulatorCredentialsTest : public SimulatorTest {
 protected:
  std::string ReadyCluster(const std::string& name) {
    std::string href = CreateCluster(name);
    sim_->RunDueForTest();
    EXPECT_EQ(State(href), "ready");
    return href;
  }
  Answer Check(const std::string& cluster, const std::string& pem) {
    return Call(*sim_, Verb::post, cluster + "/credentials/check", pem);
  }
};

TEST_F(SimulatorCredentialsTest, SignsACsrWithTheClusterCa) {
  StartSim(Profile::kInstant);
  const std::string href = ReadyCluster("c1");
  auto kc = pki::NewCsr(kCn, {"system:masters"});
  ASSERT_TRUE(kc.ok());
  auto cred = Call(*sim_, Verb::post, href + "/request_admin_credential", CsrBody(kc->csr_pem));
  ASSERT_EQ(cred.status, 201u) << ToJson(cred.body);
  const json::object* cert = GetObject(cred.obj(), "certificate");
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(*GetString(*cert, "subject"), "/O=system:masters/CN=" + std::string(kCn));
  EXPECT_EQ(*GetString(*cert, "not_after"), cred.str("expiration_timestamp"));
  sim_->RunDueForTest();
  auto issued = Call(*sim_, Verb::get, cred.str("href"));
  ASSERT_EQ(issued.str("status"), "issued");
  const std::string kubeconfig = issued.str("kubeconfig");
  const std::string cert_pem = KubeconfigData(kubeconfig, "client-certificate-data");
  const std::string ca_pem = KubeconfigData(kubeconfig, "certificate-authority-data");
  EXPECT_EQ(cert_pem, *GetString(*cert, "pem"));
  EXPECT_EQ(kubeconfig.find("client-key-data"), std::string::npos);  // the caller has the key
  // The certificate chains to the CA in the kubeconfig, and to no other.
  auto verified = pki::VerifyCertificate({"", ca_pem}, cert_pem, clock_.Now());
  ASSERT_TRUE(verified.ok()) << verified.error().ToString();
  EXPECT_EQ(verified->serial, *GetString(*cert, "serial"));
  EXPECT_EQ(verified->not_after, clock_.Now() + 24h);

  // A second credential uses the same CA; another cluster has its own.
  auto again = Call(*sim_, Verb::post, href + "/request_admin_credential", CsrBody(kc->csr_pem));
  ASSERT_EQ(again.status, 201u);
  const std::string other = ReadyCluster("c2");
  auto foreign = Call(*sim_, Verb::post, other + "/request_admin_credential", CsrBody(kc->csr_pem));
  ASSERT_EQ(foreign.status, 201u);
  const std::string foreign_pem = CertPem(foreign);
  EXPECT_TRUE(pki::VerifyCertificate({"", ca_pem}, CertPem(again), clock_.Now()).ok());
  EXPECT_FALSE(pki::VerifyCertificate({"", ca_pem}, foreign_pem, clock_.Now()).ok());
  auto refused = Check(href, foreign_pem);
  EXPECT_EQ(refused.status, 403u);
  EXPECT_NE(refused.str("reason").find("Certificate refused"), std::string::npos) << refused.str("reason");
}

TEST_F(SimulatorCredentialsTest, WithoutACsrTheSimulatorMakesTheKey) {
  StartSim(Profile::kInstant);
  const std::string href = ReadyCluster("c1");
  auto cred = Call(*sim_, Verb::post, href + "/request_admin_credential");
  ASSERT_EQ(cred.status, 201u);
  sim_->RunDueForTest();
  const std::string kubeconfig = Call(*sim_, Verb::get, cred.str("href")).str("kubeconfig");
  EXPECT_NE(KubeconfigData(kubeconfig, "client-key-data").find("PRIVATE KEY"), std::string::npos);
  auto info = pki::VerifyCertificate({"", KubeconfigData(kubeconfig, "certificate-authority-data")},
                                     KubeconfigData(kubeconfig, "client-certificate-data"), clock_.Now());
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_EQ(info->subject, "/O=system:masters/CN=" + cred.str("username"));
}

TEST_F(SimulatorCredentialsTest, BadRequestsAreRefused) {
  StartSim(Profile::kInstant);
  const std::string href = ReadyCluster("c1");
  auto not_pem = Call(*sim_, Verb::post, href + "/request_admin_credential", CsrBody("hello"));
  EXPECT_EQ(not_pem.status, 400u);
  EXPECT_EQ(not_pem.str("reason"),
            "certificate_signing_request: failed to decode PEM block as CERTIFICATE REQUEST");
  auto not_string =
      Call(*sim_, Verb::post, href + "/request_admin_credential", R"({"certificate_signing_request":42})");
  EXPECT_EQ(not_string.status, 400u);
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/credentials/certificates").obj().at("total").as_int64(), 0);
  EXPECT_EQ(Check(href, "junk").status, 403u);  // nothing issued yet
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/credentials/check").status, 405u);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/clusters/nope/credentials/certificates").status, 404u);
}

TEST_F(SimulatorCredentialsTest, RevocationRevokesEveryCertificateAndSurvivesARestart) {
  TempDir dir;
  StartSim(Profile::kDemo, dir.str());
  const std::string href = CreateCluster("c1");
  Advance(10s);
  ASSERT_EQ(State(href), "ready");
  auto kc = pki::NewCsr(kCn, {"system:masters"});
  ASSERT_TRUE(kc.ok());
  auto first = Call(*sim_, Verb::post, href + "/request_admin_credential", CsrBody(kc->csr_pem));
  auto second = Call(*sim_, Verb::post, href + "/request_admin_credential");
  ASSERT_EQ(first.status, 201u);
  ASSERT_EQ(second.status, 201u);
  Advance(1s);
  const std::string first_pem = CertPem(first);
  const std::string second_pem = CertPem(second);
  auto ok = Check(href, first_pem);
  ASSERT_EQ(ok.status, 200u) << ToJson(ok.body);
  EXPECT_EQ(*GetBool(ok.obj(), "valid"), true);
  EXPECT_EQ(ok.str("credential"), first.str("href"));
  EXPECT_EQ(Check(href, ToJson(json::object{{"certificate", second_pem}})).status, 200u);

  auto list = Call(*sim_, Verb::get, href + "/credentials/certificates");
  ASSERT_EQ(list.status, 200u);
  EXPECT_EQ(list.str("kind"), "IssuedCertificateList");
  const json::array& items = *GetArray(list.obj(), "items");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(*GetString(items[0].as_object(), "serial"),
            *GetString(*GetObject(first.obj(), "certificate"), "serial"));
  EXPECT_EQ(*GetBool(items[0].as_object(), "revoked"), false);
  const std::string ca_pem = list.str("certificate_authority");
  EXPECT_NE(ca_pem.find("BEGIN CERTIFICATE"), std::string::npos);

  // Restart before revoking: the CA and the certificates come back.
  sim_->Stop();
  sim_.reset();
  StartSim(Profile::kDemo, dir.str());
  EXPECT_EQ(Check(href, first_pem).status, 200u);
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/credentials/certificates").str("certificate_authority"), ca_pem);

  ASSERT_EQ(Call(*sim_, Verb::post, href + "/revoke_credentials").status, 202u);
  auto revoking = Check(href, first_pem);
  EXPECT_EQ(revoking.status, 403u);
  EXPECT_NE(revoking.str("reason").find("has been revoked"), std::string::npos) << revoking.str("reason");
  Advance(2s);
  ASSERT_EQ(Call(*sim_, Verb::get, href + "/revoke_credentials").str("state"), "revoked");

  // Restart after revoking: still revoked; a new certificate from the same CA is accepted.
  sim_->Stop();
  sim_.reset();
  StartSim(Profile::kDemo, dir.str());
  EXPECT_EQ(Check(href, first_pem).status, 403u);
  EXPECT_EQ(Check(href, second_pem).status, 403u);
  auto after = Call(*sim_, Verb::get, href + "/credentials/certificates");
  for (const auto& item : *GetArray(after.obj(), "items")) {
    EXPECT_EQ(*GetBool(item.as_object(), "revoked"), true);
    EXPECT_EQ(*GetString(item.as_object(), "credential_status"), "revoked");
    EXPECT_NE(GetString(item.as_object(), "revocation_timestamp"), std::nullopt);
  }
  auto third = Call(*sim_, Verb::post, href + "/request_admin_credential", CsrBody(kc->csr_pem));
  ASSERT_EQ(third.status, 201u);
  auto fresh = Check(href, CertPem(third));
  EXPECT_EQ(fresh.status, 200u);
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/credentials/certificates").str("certificate_authority"), ca_pem);

  // Expired certificates are refused too.
  Advance(25h);
  EXPECT_EQ(Check(href, CertPem(third)).status, 403u);
}

}  // namespace
}  // namespace hcprp::simulator
