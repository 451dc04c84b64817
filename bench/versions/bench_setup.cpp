#include "bench_setup.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "arm/store_indexes.h"
#include "clusterservice/update_graph.h"
#include "core/uuid.h"

namespace hcprp::bench {

const std::string kClusters = std::string(clusterservice::kApiPrefix) + "/clusters";

std::string VersionIdOfZ(int z) { return clusterservice::VersionIdOf("4.20." + std::to_string(z), kGroup); }

void Die(std::string_view program, const std::string& what) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(), what.c_str());
  std::exit(1);
}

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double MachineIdleSeconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  // cpu  user nice system idle iowait ...
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait) || cpu != "cpu") return 0;
  return static_cast<double>(idle + iowait) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void FollowerPosition::Note(uint64_t after) {
  if (after == clusterservice::kLatestEvents) return;
  std::lock_guard lock(mu_);
  if (after <= after_) return;
  after_ = after;
  cv_.notify_all();
}

double FollowerPosition::WaitCaughtUp(clusterservice::Client& cs) {
  const auto t0 = std::chrono::steady_clock::now();
  auto newest = cs.WatchEvents(clusterservice::kLatestEvents, std::chrono::milliseconds(0));
  if (!newest.ok()) Die("bench", "event stream: " + newest.error().ToString());
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::seconds(600), [&] { return after_ >= newest->last_sequence; })) {
    Die("bench", "the backend's event follower did not catch up within 600 s");
  }
  return Seconds(std::chrono::steady_clock::now() - t0);
}

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1000);
  return buf;
}

json::value Call(simulator::Simulator& sim, http::Verb verb, const std::string& target,
                 const std::string& body) {
  http::Response res = sim.Handle(http::MakeRequest(verb, target, body));
  if (res.result_int() >= 300) {
    Die("bench", std::string(http::beast_http::to_string(verb)) + " " + target + ": " +
                     std::to_string(res.result_int()) + " " + res.body());
  }
  auto v = ParseJson(res.body());
  if (!v.ok()) Die("bench", target + ": " + v.error().ToString());
  return std::move(*v);
}

namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_') {
      out += c;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  return out;
}

std::string SubscriptionOf(size_t s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012zu", s % 1'000'000'000'000);
  return buf;
}

}  // namespace

int64_t CountWhere(simulator::Simulator& sim, std::string_view search) {
  json::value page = Call(sim, http::Verb::get, kClusters + "?size=1&search=" + Escape(search));
  return GetInt(page.as_object(), "total").value_or(-1);
}

json::object ClusterBody(size_t c, size_t subscriptions) {
  const std::string name = "c" + std::to_string(c);
  const std::string sub = SubscriptionOf(c % subscriptions);
  const std::string rg = "rg" + std::to_string(c);
  const std::string providers = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/";
  return json::object{
      {"name", name},
      {"region", json::object{{"id", "westus3"}}},
      {"version", json::object{{"id", VersionIdOfZ(kStartZ)}, {"channel_group", kGroup}}},
      {"azure",
       json::object{
           {"subscription_id", sub},
           {"resource_group_name", rg},
           {"resource_name", name},
           {"subnet_resource_id", providers + "Microsoft.Network/virtualNetworks/vnet/subnets/nodes"},
           {"operators_authentication",
            json::object{
                {"managed_identities",
                 json::object{
                     {"control_plane_operators_managed_identities",
                      json::object{
                          {"cluster-api-azure",
                           json::object{{"resource_id", providers + "Microsoft.ManagedIdentity/"
                                                                    "userAssignedIdentities/capz"}}}}}}}}}}}};
}

void WaitAllReady(simulator::Simulator& sim, size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (CountWhere(sim, "status.state = 'ready'") != static_cast<int64_t>(n)) {
    if (std::chrono::steady_clock::now() > deadline) Die("bench", "clusters did not become ready");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<std::string> CreateClusters(simulator::Simulator& sim, size_t n, size_t subscriptions) {
  std::vector<std::string> hrefs;
  hrefs.reserve(n);
  for (size_t c = 0; c < n; ++c) {
    json::value created = Call(sim, http::Verb::post, kClusters, ToJson(ClusterBody(c, subscriptions)));
    hrefs.emplace_back(GetString(created.as_object(), "href").value_or(""));
  }
  WaitAllReady(sim, n);
  return hrefs;
}

void Publish(simulator::Simulator& sim, const std::string& raw) {
  Call(sim, http::Verb::post, "/control/versions",
       R"({"version":")" + raw + R"(","channel_groups":["candidate","fast","stable"]})");
}

TempStore::TempStore(const Clock* clock)
    : dir_(std::filesystem::temp_directory_path() / ("version-bench-" + NewUuidV4())) {
  std::filesystem::create_directories(dir_);
  store::OpenOptions oo;
  oo.clock = clock;
  oo.indexes = arm::StoreIndexes();
  auto st = store::OpenStore("sqlite://" + (dir_ / "hcprp.db").string(), oo);
  if (!st.ok()) Die("bench", "store: " + st.error().ToString());
  store_ = std::move(*st);
}

TempStore::~TempStore() {
  store_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

StartedBackend StartBackend(const backend::BackendOptions& options, store::Store* store,
                            clusterservice::Client* client, const Clock* clock, const Logger& logger,
                            size_t clusters) {
  auto be = backend::Backend::Create(options, store, client, clock, logger.WithComponent("backend"), nullptr);
  if (!be.ok()) Die("bench", "backend: " + be.error().ToString());
  if (auto s = (*be)->Start(); !s.ok()) Die("bench", "backend start: " + s.error().ToString());
  const SteadyTime started = std::chrono::steady_clock::now();
  while ((*be)->Stats().shards_held < options.shards) {
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(30))
      Die("bench", "shards not acquired");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  StartedBackend out{std::move(*be), Seconds(std::chrono::steady_clock::now() - started)};
  auto warm = out.backend->VersionPassOnce();
  if (!warm.ok() || warm->clusters != clusters) Die("bench", "the backend does not see every cluster");
  return out;
}

}  // namespace hcprp::bench
