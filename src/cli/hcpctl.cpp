#include "cli/hcpctl.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>
#include <utility>

#include "api/api.h"
#include "api/api_version.h"
#include "api/rules_common.h"
#include "cli/arm_client.h"
#include "cli/table.h"
#include "core/base64.h"
#include "core/time.h"
#include "pki/x509.h"

namespace hcprp::cli {
namespace {

constexpr const char* kProvider = "/providers/Microsoft.RedHatOpenShift";
constexpr const char* kDefaultTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
constexpr const char* kDefaultClientObjectId = "00000000-0000-4000-8000-00000000c11e";

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

struct Globals {
  std::string endpoint = Env("HCPCTL_ENDPOINT", "https://127.0.0.1:8443");
  // TLS: the files of `hcprp serve --data-dir DIR` (DIR/tls/ca.pem, client.pem, client-key.pem) unless
  // given one by one.
  std::string data_dir = Env("HCPCTL_DATA_DIR", "");
  std::string ca = Env("HCPCTL_CA", "");
  std::string cert = Env("HCPCTL_CERT", "");
  std::string key = Env("HCPCTL_KEY", "");
  std::string subscription = Env("HCPCTL_SUBSCRIPTION", "00000000-0000-4000-8000-000000000001");
  std::string resource_group = Env("HCPCTL_RESOURCE_GROUP", "hcp-demo");
  std::string output = "table";
  std::string api_version = std::string(api::kStableVersion);
  std::string tenant = Env("HCPCTL_TENANT", kDefaultTenant);
  std::string client_object_id = Env("HCPCTL_CLIENT_OBJECT_ID", kDefaultClientObjectId);
  bool no_wait = false;
  double max_poll_seconds = 2;
};

// What one resource command needs to know.
struct Target {
  std::string name;
  std::string cluster;  // for children
  std::string location = "eastus";
  std::string file;
  std::vector<std::string> tags;
  std::string version;
  int replicas = -1;
  std::string vm_size = "Standard_D8s_v3";
  std::string issuer_url = "https://login.example.com/tenant/v2.0";
  std::string audience = "hcpctl";
  std::string state = "Registered";
  std::string operation_id;
  std::string csr_file;   // request-credential: a PEM certificate signing request
  bool all = false;       // cluster list: of the whole subscription
  bool no_watch = false;  // upgrade: end when the service accepted the version, not when it runs
  int watch_seconds = 7200;
};

class Program {
 public:
  Program(std::ostream& out, std::ostream& err, bool progress) : out_(out), err_(err), progress_(progress) {}

  int Run(int argc, char** argv);

 private:
  ArmClient MakeClient() const {
    ArmClientOptions o;
    o.endpoint = g_.endpoint;
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
    o.api_version = g_.api_version;
    o.tenant_id = g_.tenant;
    o.client_object_id = g_.client_object_id;
    o.max_poll_interval = std::chrono::milliseconds(static_cast<int64_t>(g_.max_poll_seconds * 1000));
    o.tls = tls_;
    return ArmClient(o);
  }

  // Loads the TLS files for an https endpoint; false (with a message) when they cannot be used.
  bool PrepareTls() {
    if (g_.endpoint.rfind("https://", 0) != 0) return true;
    const std::string dir = g_.data_dir.empty() ? "" : g_.data_dir + "/tls/";
    auto pick = [&](const std::string& given, const char* name) {
      return given.empty() && !dir.empty() ? dir + name : given;
    };
    tls::ClientContextOptions o{pick(g_.ca, "ca.pem"), pick(g_.cert, "client.pem"),
                                pick(g_.key, "client-key.pem")};
    if (o.cert_file.empty() || o.key_file.empty()) {
      err_ << "hcpctl: " << g_.endpoint
           << " is https: give --data-dir (of hcprp serve) or --cert and --key (and --ca)\n";
      return false;
    }
    auto ctx = tls::ClientContext::Load(o);
    if (!ctx.ok()) {
      err_ << "hcpctl: " << ctx.error().message() << "\n";
      return false;
    }
    tls_ = std::move(*ctx);
    return true;
  }

  std::string RgPath() const {
    return "/subscriptions/" + g_.subscription + "/resourceGroups/" + g_.resource_group;
  }
  std::string ClusterPath(const std::string& name) const {
    return RgPath() + kProvider + "/hcpOpenShiftClusters/" + name;
  }
  std::string ChildPath(const std::string& collection) const {
    return ClusterPath(t_.cluster) + "/" + collection + "/" + t_.name;
  }

  Result<json::value> BodyFromFile() const;
  // The body of a create or update: the JSON object in --file when given, else `generated`.
  Result<json::object> FileBodyOr(json::object generated) const;
  json::object DefaultClusterBody() const;
  json::object DefaultNodePoolBody() const;
  json::object DefaultExternalAuthBody() const;
  void ApplyCommonFlags(json::object& body) const;

  // The command line, one group of commands each; a command's callback chooses the action Run runs.
  void AddGlobalFlags(CLI::App& app);
  void AddResourceFlags(CLI::App* c, bool create);
  void AddWatchFlags(CLI::App* c);
  void OnRun(CLI::App* c, std::function<int()> run);
  void AddSubscriptionCommands(CLI::App& app);
  void AddClusterCommands(CLI::App& app);
  // Node pools and external auths share the same verbs.
  void AddChildCommands(CLI::App& app, const char* cmd, const char* help, const char* collection,
                        bool node_pool);
  void AddOperationCommands(CLI::App& app);

  int Report(const Result<ArmResponse>& r, const char* what);
  int PrintResource(const ArmResponse& r);
  int PrintList(const ArmResponse& r);
  int PrintError(const ArmResponse& r);
  int Finish(ArmClient& client, const Result<ArmResponse>& started, const std::string& read_back_path);

  int Put(const std::string& path, json::object body);
  int Patch(const std::string& path, json::object body);
  int Delete(const std::string& path);
  int Show(const std::string& path);
  int List(const std::string& path);
  int Action(const std::string& path, const std::string& action);
  int RequestCredential(const std::string& path);
  // PATCHes version.id and, unless --no-watch, prints the resource's status.activeVersions as they
  // change until `done` holds for them (the rollout finished).
  int Upgrade(const std::string& path, const std::function<bool(const std::vector<std::string>&)>& done);
  // The releases a cluster can move to: newer z-streams of its minor and the next minor's, in its
  // channel group, from the location's hcpOpenShiftVersions.
  int ClusterVersions(const std::string& path);
  int SubscriptionRegister();
  int SubscriptionShow();
  int OperationShow();

  std::ostream& out_;
  std::ostream& err_;
  bool progress_;
  Globals g_;
  Target t_;
  std::shared_ptr<tls::ClientContext> tls_;
  std::function<int()> action_;  // the command chosen on the command line
  // The private key of the CSR hcpctl made for a credential request: added to the kubeconfig it prints
  // unless the kubeconfig carries a key of its own (api-versions before 2026-09-01-preview).
  std::string credential_key_pem_;
};

Result<json::value> Program::BodyFromFile() const {
  std::ifstream in(t_.file, std::ios::binary);
  if (!in) return Error::InvalidArgument("cannot read " + t_.file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto v = ParseJson(ss.str());
  if (!v.ok()) return Error::InvalidArgument(t_.file + ": " + v.error().message());
  if (!v->is_object()) return Error::InvalidArgument(t_.file + ": the body must be a JSON object");
  return v;
}

Result<json::object> Program::FileBodyOr(json::object generated) const {
  if (t_.file.empty()) return generated;
  auto b = BodyFromFile();
  if (!b.ok()) return b.error();
  return std::move(b->as_object());
}

void Program::ApplyCommonFlags(json::object& body) const {
  if (!t_.tags.empty()) {
    json::object tags;
    for (const auto& kv : t_.tags) {
      auto eq = kv.find('=');
      tags[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    body["tags"] = std::move(tags);
  }
}

json::object Program::DefaultClusterBody() const {
  const std::string sub = "/subscriptions/" + g_.subscription + "/resourceGroups/" + g_.resource_group;
  const std::string vnet = sub + "/providers/Microsoft.Network/virtualNetworks/" + t_.name + "-vnet";
  const std::string mi = sub + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/" + t_.name + "-";
  json::object cp{{"cluster-api-azure", mi + "cluster-api-azure"},
                  {"control-plane", mi + "control-plane"},
                  {"cloud-controller-manager", mi + "cloud-controller-manager"},
                  {"ingress", mi + "ingress"},
                  {"disk-csi-driver", mi + "disk-csi-driver"},
                  {"file-csi-driver", mi + "file-csi-driver"},
                  {"image-registry", mi + "image-registry"},
                  {"cloud-network-config", mi + "cloud-network-config"},
                  {"kms", mi + "kms"}};
  json::object dp{{"disk-csi-driver", mi + "dp-disk-csi-driver"},
                  {"file-csi-driver", mi + "dp-file-csi-driver"},
                  {"image-registry", mi + "dp-image-registry"}};
  // The cluster's own identities: every control-plane operator and the service managed identity, each
  // once. Data-plane operator identities are federated workload identities, never assigned to it.
  json::object uai;
  for (const auto& kv : cp) uai[kv.value().as_string()] = json::object{};
  uai[mi + "service"] = json::object{};
  json::object body{
      {"location", t_.location},
      {"identity", {{"type", "UserAssigned"}, {"userAssignedIdentities", uai}}},
      {"properties",
       {{"version", {{"id", t_.version.empty() ? "4.20" : t_.version}, {"channelGroup", "stable"}}},
        {"network",
         {{"podCidr", "10.128.0.0/14"},
          {"serviceCidr", "172.30.0.0/16"},
          {"machineCidr", "10.0.0.0/16"},
          {"hostPrefix", 23}}},
        {"api", {{"visibility", "Public"}}},
        {"platform",
         {{"subnetId", vnet + "/subnets/workers"},
          {"vnetIntegrationSubnetId", vnet + "/subnets/integration"},
          {"networkSecurityGroupId",
           sub + "/providers/Microsoft.Network/networkSecurityGroups/" + t_.name + "-nsg"},
          {"operatorsAuthentication",
           {{"userAssignedIdentities",
             {{"controlPlaneOperators", cp},
              {"dataPlaneOperators", dp},
              {"serviceManagedIdentity", mi + "service"}}}}}}}}}};
  return body;
}

json::object Program::DefaultNodePoolBody() const {
  const std::string vnet = RgPath() + "/providers/Microsoft.Network/virtualNetworks/" + t_.cluster + "-vnet";
  json::object props{{"platform", {{"vmSize", t_.vm_size}, {"subnetId", vnet + "/subnets/workers"}}},
                     {"replicas", t_.replicas < 0 ? 2 : t_.replicas}};
  // The service requires a node pool version: MAJOR.MINOR.PATCH, at least 4.20.8.
  props["version"] = {{"id", t_.version.empty() ? "4.20.8" : t_.version}, {"channelGroup", "stable"}};
  return {{"location", t_.location}, {"properties", props}};
}

json::object Program::DefaultExternalAuthBody() const {
  return {{"properties",
           {{"issuer", {{"url", t_.issuer_url}, {"audiences", json::array{t_.audience}}}},
            {"claim", {{"mappings", {{"username", {{"claim", "email"}}}}}}}}}};
}

int Program::PrintError(const ArmResponse& r) {
  err_ << "error: HTTP " << r.status;
  if (const auto* o = r.body.if_object()) {
    if (const auto* e = GetObject(*o, "error")) {
      err_ << " " << GetString(*e, "code").value_or("") << ": " << GetString(*e, "message").value_or("");
      if (auto t = GetString(*e, "target"); t && !t->empty()) err_ << " (target " << *t << ")";
      if (const auto* details = GetArray(*e, "details")) {
        for (const auto& d : *details) {
          if (const auto* dobj = d.if_object()) {
            err_ << "\n  - " << GetString(*dobj, "code").value_or("") << ": "
                 << GetString(*dobj, "message").value_or("");
            if (auto t = GetString(*dobj, "target"); t && !t->empty()) err_ << " (target " << *t << ")";
          }
        }
      }
    }
  } else if (!r.body.is_null()) {
    err_ << " " << json::serialize(r.body);
  }
  err_ << "\n";
  return 1;
}

int Program::PrintResource(const ArmResponse& r) {
  if (g_.output == "json" || !r.body.is_object()) {
    if (!r.body.is_null()) out_ << json::serialize(r.body) << "\n";
    return 0;
  }
  Table t({"NAME", "TYPE", "LOCATION", "STATE", "DETAIL"});
  t.AddResource(r.body.as_object());
  t.Print(out_);
  Table conditions = Table::Conditions(r.body.as_object());
  if (!conditions.empty()) {
    out_ << "\n";
    conditions.Print(out_);
  }
  return 0;
}

int Program::PrintList(const ArmResponse& first) {
  // Follows nextLink to the end.
  json::array all;
  ArmResponse page = first;
  ArmClient client = MakeClient();
  while (true) {
    if (page.status != 200) return PrintError(page);
    const auto* o = page.body.if_object();
    if (!o) break;
    if (const auto* v = GetArray(*o, "value")) {
      for (const auto& item : *v) all.push_back(item);
    }
    auto next = GetString(*o, "nextLink");
    if (!next || next->empty()) break;
    auto r = client.GetUrl(std::string(*next));
    if (!r.ok()) {
      err_ << "error: " << r.error().message() << "\n";
      return 3;
    }
    page = *r;
  }
  if (g_.output == "json") {
    out_ << json::serialize(json::object{{"value", all}}) << "\n";
    return 0;
  }
  Table t({"NAME", "TYPE", "LOCATION", "STATE", "DETAIL"});
  for (const auto& item : all) {
    if (item.is_object()) t.AddResource(item.as_object());
  }
  t.Print(out_);
  return 0;
}

int Program::Report(const Result<ArmResponse>& r, const char* what) {
  if (!r.ok()) {
    err_ << "error: " << what << ": " << r.error().message() << "\n";
    return r.error().code() == ErrorCode::kUnavailable || r.error().code() == ErrorCode::kTimeout ? 3 : 1;
  }
  if (r->status >= 400) return PrintError(*r);
  return 0;
}

std::string FormatElapsed(std::chrono::steady_clock::duration d) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  std::ostringstream os;
  os << s / 60 << ":" << std::setw(2) << std::setfill('0') << s % 60;
  return os.str();
}

int Program::Finish(ArmClient& client, const Result<ArmResponse>& started,
                    const std::string& read_back_path) {
  if (int rc = Report(started, "request failed"); rc != 0) return rc;
  const ArmResponse& first = *started;
  if (first.status == 204) {
    if (g_.output != "json") out_ << "Nothing to do: the resource does not exist.\n";
    return 0;
  }
  std::string async = first.Header("azure-asyncoperation");
  if (g_.no_wait || (async.empty() && first.Header("location").empty())) {
    if (g_.output == "json") {
      if (!first.body.is_null()) out_ << json::serialize(first.body) << "\n";
    } else {
      out_ << "Accepted (HTTP " << first.status << ").";
      if (!async.empty()) {
        std::string id = async.substr(0, async.find('?'));  // the status URL ends in /{id}?api-version=...
        out_ << " Follow it with: hcpctl operation show " << id.substr(id.rfind('/') + 1);
      }
      out_ << "\n";
    }
    return 0;
  }
  std::string last_status;
  bool drew = false;
  auto on_progress = [&](const Progress& p) {
    if (progress_) {
      err_ << "\r\033[K  " << p.status << "  " << FormatElapsed(p.elapsed) << std::flush;
      drew = true;
    } else if (p.status != last_status) {
      err_ << p.status << " after " << FormatElapsed(p.elapsed) << "\n";
    }
    last_status = p.status;
  };
  auto done = client.Wait(first, on_progress);
  if (drew) err_ << "\n";
  if (!done.ok()) {
    auto v = ParseJson(done.error().message());
    if (v.ok() && v->is_object()) {
      ArmResponse failed;
      failed.status = 200;
      failed.body = *v;
      err_ << "operation " << GetString(v->as_object(), "status").value_or("failed") << "\n";
      PrintError(failed);
      return 1;
    }
    err_ << "error: " << done.error().message() << "\n";
    return done.error().code() == ErrorCode::kUnavailable ? 3 : 1;
  }
  if (read_back_path.empty()) {
    if (done->body.is_object() && done->body.as_object().contains("kubeconfig")) {
      if (g_.output == "json") {
        out_ << json::serialize(done->body) << "\n";
      } else {
        const auto& o = done->body.as_object();
        std::string kubeconfig(GetString(o, "kubeconfig").value_or(""));
        const std::string cert_field = "client-certificate-data: ";
        auto at = kubeconfig.find(cert_field);
        if (!credential_key_pem_.empty() && at != std::string::npos &&
            kubeconfig.find("client-key-data:") == std::string::npos) {
          const auto line_start = kubeconfig.rfind('\n', at) + 1;
          const auto line_end = kubeconfig.find('\n', at);
          kubeconfig.insert(line_end == std::string::npos ? kubeconfig.size() : line_end + 1,
                            kubeconfig.substr(line_start, at - line_start) +
                                "client-key-data: " + Base64Encode(credential_key_pem_) + "\n");
        }
        out_ << "# expires " << GetString(o, "expirationTimestamp").value_or("?") << "\n"
             << kubeconfig << "\n";
      }
    } else if (g_.output != "json") {
      out_ << "Succeeded.\n";
    }
    return 0;
  }
  auto r = client.Call(http::Verb::get, read_back_path);
  if (int rc = Report(r, "reading the resource back"); rc != 0) return rc;
  return PrintResource(*r);
}

int Program::Put(const std::string& path, json::object body) {
  ApplyCommonFlags(body);
  auto client = MakeClient();
  json::value v(std::move(body));
  return Finish(client, client.Call(http::Verb::put, path, &v), path);
}

int Program::Patch(const std::string& path, json::object body) {
  ApplyCommonFlags(body);
  auto client = MakeClient();
  json::value v(std::move(body));
  return Finish(client, client.Call(http::Verb::patch, path, &v), path);
}

int Program::Delete(const std::string& path) {
  auto client = MakeClient();
  return Finish(client, client.Call(http::Verb::delete_, path), "");
}

int Program::Show(const std::string& path) {
  auto client = MakeClient();
  auto r = client.Call(http::Verb::get, path);
  if (int rc = Report(r, "request failed"); rc != 0) return rc;
  return PrintResource(*r);
}

int Program::List(const std::string& path) {
  auto client = MakeClient();
  auto r = client.Call(http::Verb::get, path);
  if (int rc = Report(r, "request failed"); rc != 0) return rc;
  return PrintList(*r);
}

void Program::AddWatchFlags(CLI::App* c) {
  c->add_flag("--no-watch", t_.no_watch, "Return once the service accepted the version");
  c->add_option("--watch-seconds", t_.watch_seconds, "How long to watch the rollout")->capture_default_str();
}

namespace {

// status.activeVersions of a resource body (api-version 2026-10-01), newest first.
std::vector<std::string> ActiveVersionsOf(const json::value& body) {
  std::vector<std::string> out;
  const json::object* o = body.if_object();
  const json::object* props = o != nullptr ? GetObject(*o, "properties") : nullptr;
  const json::object* status = props != nullptr ? GetObject(*props, "status") : nullptr;
  const json::array* active = status != nullptr ? GetArray(*status, "activeVersions") : nullptr;
  if (active == nullptr) return out;
  for (const json::value& v : *active) {
    if (const json::object* e = v.if_object()) out.emplace_back(GetString(*e, "version").value_or(""));
  }
  return out;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none reported)" : out;
}

// "4.20" of "4.20.12", and the minor after it ("4.21"); empty when `v` is not a version.
std::string MinorOf(std::string_view v, int add = 0) {
  auto parsed = api::rules::ParseSemverTolerant(v).version;
  if (!parsed) return {};
  return std::to_string(parsed->major) + "." + std::to_string(parsed->minor + add);
}

bool Newer(std::string_view a, std::string_view b) {
  auto va = api::rules::ParseSemverTolerant(a).version;
  auto vb = api::rules::ParseSemverTolerant(b).version;
  return va && vb && api::rules::Compare(*va, *vb) > 0;
}

// The api-version that reports status.activeVersions.
constexpr std::string_view kVersionsApi = "2026-10-01";

}  // namespace

int Program::Upgrade(const std::string& path,
                     const std::function<bool(const std::vector<std::string>&)>& done) {
  json::object body{{"properties", json::object{{"version", json::object{{"id", t_.version}}}}}};
  if (int rc = Patch(path, std::move(body)); rc != 0 || t_.no_watch) return rc;
  auto client = MakeClient();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(t_.watch_seconds);
  std::vector<std::string> shown;
  while (true) {
    auto r = client.Call(http::Verb::get, path, nullptr, std::string(kVersionsApi));
    if (int rc = Report(r, "reading the resource"); rc != 0) return rc;
    std::vector<std::string> active = ActiveVersionsOf(r->body);
    if (active != shown) {
      out_ << "active versions: " << Joined(active) << (active.size() > 1 ? "  (upgrade in progress)" : "")
           << "\n"
           << std::flush;
      shown = active;
    }
    if (done(active)) {
      out_ << "upgrade complete: " << active[0] << "\n";
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      err_ << "error: the rollout did not finish within " << t_.watch_seconds
           << " s (still running: " << Joined(active) << ")\n";
      return 4;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

int Program::ClusterVersions(const std::string& path) {
  auto client = MakeClient();
  auto cluster = client.Call(http::Verb::get, path, nullptr, std::string(kVersionsApi));
  if (int rc = Report(cluster, "reading the cluster"); rc != 0) return rc;
  const json::object& c = cluster->body.as_object();
  std::string location(GetString(c, "location").value_or(t_.location));
  const json::object* cprops = GetObject(c, "properties");
  const json::object* version = cprops != nullptr ? GetObject(*cprops, "version") : nullptr;
  std::string group(version != nullptr ? GetString(*version, "channelGroup").value_or("stable") : "stable");
  std::vector<std::string> active = ActiveVersionsOf(cluster->body);
  std::string running = active.empty()
                            ? std::string(version != nullptr ? GetString(*version, "id").value_or("") : "")
                            : active.back();
  auto versions = client.Call(http::Verb::get, "/subscriptions/" + g_.subscription + kProvider +
                                                   "/locations/" + location + "/hcpOpenShiftVersions");
  if (int rc = Report(versions, "listing versions"); rc != 0) return rc;
  const std::string minor = MinorOf(running);
  const std::string next = MinorOf(running, 1);
  Table table({"VERSION", "KIND", "END OF LIFE"});
  const json::array* items = GetArray(versions->body.as_object(), "value");
  for (const json::value& v : items != nullptr ? *items : json::array{}) {
    const json::object& o = v.as_object();
    static const json::object kNone;
    const json::object* pp = GetObject(o, "properties");
    const json::object& p = pp != nullptr ? *pp : kNone;
    std::string name(GetString(o, "name").value_or(""));
    if (GetString(p, "channelGroup").value_or("") != group || !GetBool(p, "enabled").value_or(false))
      continue;
    std::string m = MinorOf(name);
    if (m == minor && Newer(name, running)) {
      table.AddRow({name, "z-stream", std::string(GetString(p, "endOfLifeTimestamp").value_or(""))});
    } else if (m == next) {
      table.AddRow({name, "next minor", std::string(GetString(p, "endOfLifeTimestamp").value_or(""))});
    }
  }
  out_ << "running " << Joined(active) << " in channel group " << group << "\n";
  table.Print(out_);
  return 0;
}

int Program::Action(const std::string& path, const std::string& action) {
  auto client = MakeClient();
  return Finish(client, client.Call(http::Verb::post, path + "/" + action), "");
}

// requestAdminCredential with a certificate signing request where the api-version takes one: the one
// in --csr, or one made here for the break-glass identity (its key then goes into the printed
// kubeconfig). Earlier api-versions take no body and answer a kubeconfig with a key of the service's
// making.
int Program::RequestCredential(const std::string& path) {
  const api::ApiVersion* version = api::FindApiVersion(g_.api_version);
  if (version == nullptr || !version->credential_request_takes_csr) {
    if (!t_.csr_file.empty()) {
      return err_ << "error: --csr needs an api-version that takes a certificate signing request\n", 2;
    }
    return Action(path, "requestAdminCredential");
  }
  std::string csr;
  if (!t_.csr_file.empty()) {
    std::ifstream in(t_.csr_file);
    if (!in) return err_ << "error: cannot read " << t_.csr_file << "\n", 2;
    std::stringstream ss;
    ss << in.rdbuf();
    csr = ss.str();
  } else {
    auto made = pki::NewCsr("system:customer-break-glass:system-admin", {"system:masters"});
    if (!made.ok()) return err_ << "error: " << made.error().message() << "\n", 1;
    csr = made->csr_pem;
    credential_key_pem_ = made->key_pem;
  }
  auto client = MakeClient();
  json::value body = json::object{{"certificateSigningRequest", csr}};
  return Finish(client, client.Call(http::Verb::post, path + "/requestAdminCredential", &body), "");
}

int Program::SubscriptionRegister() {
  auto client = MakeClient();
  json::value body =
      json::object{{"state", t_.state},
                   {"registrationDate", FormatRfc3339(std::chrono::system_clock::now())},
                   {"properties", {{"tenantId", g_.tenant}, {"registeredFeatures", json::array{}}}}};
  auto r = client.Call(http::Verb::put, "/subscriptions/" + g_.subscription, &body, "2.0");
  if (int rc = Report(r, "request failed"); rc != 0) return rc;
  if (g_.output == "json") {
    out_ << json::serialize(r->body) << "\n";
  } else {
    out_ << "Subscription " << g_.subscription << " is " << t_.state << ".\n";
  }
  return 0;
}

int Program::SubscriptionShow() {
  auto client = MakeClient();
  auto r = client.Call(http::Verb::get, "/subscriptions/" + g_.subscription, nullptr, "2.0");
  if (int rc = Report(r, "request failed"); rc != 0) return rc;
  out_ << json::serialize(r->body) << "\n";
  return 0;
}

int Program::OperationShow() {
  auto client = MakeClient();
  auto r = client.Call(http::Verb::get, "/subscriptions/" + g_.subscription + kProvider + "/locations/" +
                                            t_.location + "/hcpOperationStatuses/" + t_.operation_id);
  if (int rc = Report(r, "request failed"); rc != 0) return rc;
  if (g_.output == "json" || !r->body.is_object()) {
    out_ << json::serialize(r->body) << "\n";
    return 0;
  }
  const auto& o = r->body.as_object();
  Table t({"OPERATION", "STATUS", "START", "END", "ERROR"});
  std::string error;
  if (const auto* e = GetObject(o, "error")) {
    error = std::string(GetString(*e, "code").value_or("")) + ": " +
            std::string(GetString(*e, "message").value_or(""));
  }
  t.AddRow({std::string(GetString(o, "name").value_or("")), std::string(GetString(o, "status").value_or("")),
            std::string(GetString(o, "startTime").value_or("")),
            std::string(GetString(o, "endTime").value_or("")), error});
  t.Print(out_);
  return 0;
}

void Program::AddGlobalFlags(CLI::App& app) {
  app.add_option("--endpoint", g_.endpoint, "Frontend URL (env HCPCTL_ENDPOINT)")->capture_default_str();
  app.add_option("-s,--subscription", g_.subscription, "Subscription ID (env HCPCTL_SUBSCRIPTION)")
      ->capture_default_str();
  app.add_option("-g,--resource-group", g_.resource_group, "Resource group (env HCPCTL_RESOURCE_GROUP)")
      ->capture_default_str();
  app.add_option("-o,--output", g_.output, "Output format")
      ->check(CLI::IsMember({"json", "table"}))
      ->capture_default_str();
  app.add_option("--api-version", g_.api_version, "API version")
      ->check(CLI::IsMember(api::SupportedVersions()))
      ->capture_default_str();
  app.add_option("--tenant", g_.tenant, "Home tenant ID sent as x-ms-home-tenant-id (env HCPCTL_TENANT)");
  app.add_option("--client-object-id", g_.client_object_id, "Caller object ID sent as x-ms-client-object-id");
  app.add_flag("--no-wait", g_.no_wait, "Do not wait for long-running operations");
  app.add_option(
      "--data-dir", g_.data_dir,
      "Data directory of hcprp serve: its tls/ca.pem, tls/client.pem and tls/client-key.pem are used "
      "(env HCPCTL_DATA_DIR)");
  app.add_option("--ca", g_.ca,
                 "CA certificate (PEM) the frontend's certificate is verified against (env HCPCTL_CA)");
  app.add_option("--cert", g_.cert, "Client certificate (PEM) presented as ARM (env HCPCTL_CERT)");
  app.add_option("--key", g_.key, "Its private key (PEM) (env HCPCTL_KEY)");
  app.add_option("--max-poll-interval", g_.max_poll_seconds,
                 "Longest wait between two polls in seconds, whatever Retry-After says (0: obey it)")
      ->capture_default_str();
}

void Program::AddResourceFlags(CLI::App* c, bool create) {
  c->add_option("--file,-f", t_.file, "JSON body to send instead of the generated one");
  c->add_option("--tag", t_.tags, "Tag key=value (repeatable)");
  if (create) c->add_option("--location,-l", t_.location, "Azure region")->capture_default_str();
}

void Program::OnRun(CLI::App* c, std::function<int()> run) {
  c->callback([this, run = std::move(run)] { action_ = run; });
}

void Program::AddSubscriptionCommands(CLI::App& app) {
  auto* sub = app.add_subcommand("subscription", "ARM subscription lifecycle (as ARM sends it)");
  sub->require_subcommand(1);
  auto* reg = sub->add_subcommand("register", "PUT the subscription with a state");
  reg->add_option("--state", t_.state, "Registered, Warned, Suspended, Deleted or Unregistered")
      ->capture_default_str();
  OnRun(reg, [this] { return SubscriptionRegister(); });
  OnRun(sub->add_subcommand("show", "GET the subscription"), [this] { return SubscriptionShow(); });
}

void Program::AddClusterCommands(CLI::App& app) {
  auto* cl = app.add_subcommand("cluster", "hcpOpenShiftClusters");
  cl->require_subcommand(1);
  auto* cc = cl->add_subcommand("create", "Create (PUT) a cluster");
  cc->add_option("name", t_.name)->required();
  cc->add_option("--version", t_.version, "OpenShift X.Y version");
  AddResourceFlags(cc, true);
  OnRun(cc, [this] {
    auto body = FileBodyOr(DefaultClusterBody());
    if (!body.ok()) return err_ << "error: " << body.error().message() << "\n", 2;
    return Put(ClusterPath(t_.name), std::move(*body));
  });
  auto* cs = cl->add_subcommand("show", "GET a cluster");
  cs->add_option("name", t_.name)->required();
  OnRun(cs, [this] { return Show(ClusterPath(t_.name)); });
  auto* clist =
      cl->add_subcommand("list", "List clusters of the resource group (--all: of the subscription)");
  clist->add_flag("--all", t_.all, "Whole subscription");
  OnRun(clist, [this] {
    return List(t_.all ? "/subscriptions/" + g_.subscription + kProvider + "/hcpOpenShiftClusters"
                       : RgPath() + kProvider + "/hcpOpenShiftClusters");
  });
  auto* cu = cl->add_subcommand("update", "Update (PATCH) a cluster");
  cu->add_option("name", t_.name)->required();
  cu->add_option("--version", t_.version, "OpenShift X.Y version");
  AddResourceFlags(cu, false);
  OnRun(cu, [this] {
    auto body = FileBodyOr({});
    if (!body.ok()) return err_ << "error: " << body.error().message() << "\n", 2;
    if (!t_.version.empty()) (*body)["properties"] = {{"version", {{"id", t_.version}}}};
    return Patch(ClusterPath(t_.name), std::move(*body));
  });
  auto* cup =
      cl->add_subcommand("upgrade", "Upgrade a cluster to another minor (PATCH version.id) and watch it");
  cup->add_option("name", t_.name)->required();
  cup->add_option("--version", t_.version, "OpenShift X.Y version")->required();
  AddWatchFlags(cup);
  OnRun(cup, [this] {
    return Upgrade(ClusterPath(t_.name), [this](const std::vector<std::string>& active) {
      return active.size() == 1 && active[0].rfind(t_.version + ".", 0) == 0;
    });
  });
  auto* cv = cl->add_subcommand("versions", "Releases a cluster can upgrade to, from the update service");
  cv->add_option("name", t_.name)->required();
  OnRun(cv, [this] { return ClusterVersions(ClusterPath(t_.name)); });
  auto* cd = cl->add_subcommand("delete", "Delete a cluster and its node pools");
  cd->add_option("name", t_.name)->required();
  OnRun(cd, [this] { return Delete(ClusterPath(t_.name)); });
  auto* crc = cl->add_subcommand("request-credential", "Request an admin kubeconfig");
  crc->add_option("name", t_.name)->required();
  crc->add_option(
      "--csr", t_.csr_file,
      "PEM certificate signing request for CN=system:customer-break-glass:system-admin, "
      "O=system:masters (default: hcpctl makes a key and one, and puts the key in the kubeconfig)");
  OnRun(crc, [this] { return RequestCredential(ClusterPath(t_.name)); });
  auto* crv = cl->add_subcommand("revoke-credentials", "Revoke every admin credential");
  crv->add_option("name", t_.name)->required();
  OnRun(crv, [this] { return Action(ClusterPath(t_.name), "revokeCredentials"); });
}

void Program::AddChildCommands(CLI::App& app, const char* cmd, const char* help, const char* collection,
                               bool node_pool) {
  auto* c = app.add_subcommand(cmd, help);
  c->require_subcommand(1);
  auto with_cluster = [this](CLI::App* s) {
    s->add_option("--cluster,-c", t_.cluster, "Parent cluster")->required();
  };
  auto* create = c->add_subcommand("create", "Create (PUT)");
  create->add_option("name", t_.name)->required();
  with_cluster(create);
  AddResourceFlags(create, node_pool);
  if (node_pool) {
    create->add_option("--replicas", t_.replicas, "Node count");
    create->add_option("--vm-size", t_.vm_size, "VM size")->capture_default_str();
    create->add_option("--version", t_.version, "OpenShift X.Y.Z version");
  } else {
    create->add_option("--issuer-url", t_.issuer_url, "Token issuer URL")->capture_default_str();
    create->add_option("--audience", t_.audience, "Token audience")->capture_default_str();
  }
  OnRun(create, [this, collection, node_pool] {
    auto body = FileBodyOr(node_pool ? DefaultNodePoolBody() : DefaultExternalAuthBody());
    if (!body.ok()) return err_ << "error: " << body.error().message() << "\n", 2;
    return Put(ChildPath(collection), std::move(*body));
  });
  auto* show = c->add_subcommand("show", "GET");
  show->add_option("name", t_.name)->required();
  with_cluster(show);
  OnRun(show, [this, collection] { return Show(ChildPath(collection)); });
  auto* list = c->add_subcommand("list", "List under a cluster");
  with_cluster(list);
  OnRun(list, [this, collection] { return List(ClusterPath(t_.cluster) + "/" + collection); });
  auto* update = c->add_subcommand("update", "Update (PATCH)");
  update->add_option("name", t_.name)->required();
  with_cluster(update);
  AddResourceFlags(update, false);
  if (node_pool) update->add_option("--replicas", t_.replicas, "Node count");
  OnRun(update, [this, collection] {
    auto body = FileBodyOr({});
    if (!body.ok()) return err_ << "error: " << body.error().message() << "\n", 2;
    if (t_.replicas >= 0) (*body)["properties"] = {{"replicas", t_.replicas}};
    return Patch(ChildPath(collection), std::move(*body));
  });
  if (node_pool) {
    auto* up =
        c->add_subcommand("upgrade", "Upgrade the node pool (PATCH version.id) and watch its machines roll");
    up->add_option("name", t_.name)->required();
    with_cluster(up);
    up->add_option("--version", t_.version, "OpenShift X.Y.Z version")->required();
    AddWatchFlags(up);
    OnRun(up, [this, collection] {
      return Upgrade(ChildPath(collection), [this](const std::vector<std::string>& active) {
        return active.size() == 1 && active[0] == t_.version;
      });
    });
  }
  auto* del = c->add_subcommand("delete", "Delete");
  del->add_option("name", t_.name)->required();
  with_cluster(del);
  OnRun(del, [this, collection] { return Delete(ChildPath(collection)); });
}

void Program::AddOperationCommands(CLI::App& app) {
  auto* op = app.add_subcommand("operation", "Asynchronous operations");
  op->require_subcommand(1);
  auto* ops = op->add_subcommand("show", "GET an operation status");
  ops->add_option("id", t_.operation_id)->required();
  ops->add_option("--location,-l", t_.location, "Region of the operation")->capture_default_str();
  OnRun(ops, [this] { return OperationShow(); });
}

int Program::Run(int argc, char** argv) {
  CLI::App app{"hcpctl: manage hosted OpenShift clusters through the ARM API of an hcprp frontend"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the subcommand
  AddGlobalFlags(app);
  AddSubscriptionCommands(app);
  AddClusterCommands(app);
  AddChildCommands(app, "nodepool", "Node pools of a cluster", "nodePools", true);
  AddChildCommands(app, "externalauth", "External authentication providers of a cluster", "externalAuths",
                   false);
  AddOperationCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out_, err_) == 0 ? 0 : 2;
  }
  if (!action_) return 2;
  if (!PrepareTls()) return 2;
  return action_();
}

}  // namespace

int RunHcpctl(int argc, char** argv, std::ostream& out, std::ostream& err, bool progress_on_terminal) {
  Program p(out, err, progress_on_terminal);
  return p.Run(argc, argv);
}

}  // namespace hcprp::cli
