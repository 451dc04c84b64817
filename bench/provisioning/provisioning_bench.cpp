// Provisioning engine benchmark: N clusters with P node pools of M machines each, created at once under
// the realistic latency profile at a high time scale, against the real simulator Service (in memory).
// Prints the wall time until every object is ready against the critical path implied by the latencies
// the simulated Azure drew (per cluster: its control plane chain + its slowest machine chain; the
// largest over clusters), and the CPU time and memory of the process.
//
//   provisioning_bench [--clusters 100] [--pools 10] [--machines 20] [--time-scale 0.01] [--concurrency 10]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "provisioning/engine.h"
#include "simulator/scheduler.h"
#include "simulator/service.h"
#include "simulator/state_db.h"
#include "simulator/state_store.h"

using namespace hcprp;
using namespace hcprp::provisioning;

namespace {

class ReadySink final : public StateSink {
 public:
  simulator::Service* service = nullptr;
  std::atomic<int64_t> ready{0};
  std::atomic<int64_t> errors{0};
  std::chrono::steady_clock::time_point t0;
  double ReadyAt(const std::string& href) {
    std::lock_guard lock(mu_);
    auto it = ready_at_.find(href);
    return it == ready_at_.end() ? 0 : it->second;
  }
  Status Transition(const std::string& href, const std::string& state, const std::string& code,
                    const std::string& message) override {
    if (state == "ready") {
      {
        std::lock_guard lock(mu_);
        ready_at_.emplace(href, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      ready++;
    }
    if (state == "error") errors++;
    return service->Transition(href, state, code, message);
  }

 private:
  std::mutex mu_;
  std::map<std::string, double> ready_at_;  // href -> seconds after t0, when first ready
};

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long MaxRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

long RssKb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int Arg(int argc, char** argv, const std::string& name, int def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  }
  return def;
}

std::string ArgS(int argc, char** argv, const std::string& name) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return "";
}

double ArgD(int argc, char** argv, const std::string& name, double def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::atof(argv[i + 1]);
  }
  return def;
}

// The JSON of a cluster create as the Cluster Service takes it, in resource group rgN.
json::object ClusterCreateBody(int c) {
  const std::string name = "c" + std::to_string(c);
  const std::string rg = "/subscriptions/sub-1/resourceGroups/rg" + std::to_string(c) + "/providers/";
  return json::object{
      {"name", name},
      {"region", json::object{{"id", "westus3"}}},
      {"version", json::object{{"id", "openshift-v4.19"}}},
      {"azure",
       json::object{
           {"subscription_id", "sub-1"},
           {"resource_group_name", "rg" + std::to_string(c)},
           {"resource_name", name},
           {"subnet_resource_id", rg + "Microsoft.Network/virtualNetworks/vnet/subnets/nodes"},
           {"operators_authentication",
            json::object{
                {"managed_identities",
                 json::object{{"control_plane_operators_managed_identities",
                               json::object{{"cluster-api-azure",
                                             json::object{{"resource_id",
                                                           rg + "Microsoft.ManagedIdentity/"
                                                                "userAssignedIdentities/capz"}}}}}}}}}}}};
}

// Creates the clusters and their node pools through the service's REST API; returns the clusters'
// hrefs, or nothing (with a message) when a create is refused.
std::optional<std::vector<std::string>> SubmitClusters(simulator::Service& service, int clusters, int pools,
                                                       int machines) {
  std::vector<std::string> cluster_hrefs;
  const std::string base(simulator::kApiPrefix);
  for (int c = 0; c < clusters; ++c) {
    auto res =
        service.Handle(http::MakeRequest(http::Verb::post, base + "/clusters", ToJson(ClusterCreateBody(c))));
    auto parsed = ParseJson(res.body());
    if (res.result_int() != 201 || !parsed.ok()) {
      std::fprintf(stderr, "cluster create failed: %s\n", res.body().c_str());
      return std::nullopt;
    }
    const std::string href(GetString(parsed->as_object(), "href").value_or(""));
    cluster_hrefs.push_back(href);
    for (int p = 0; p < pools; ++p) {
      json::object np{{"name", "np" + std::to_string(p)}, {"replicas", machines}};
      auto r = service.Handle(http::MakeRequest(http::Verb::post, href + "/node_pools", ToJson(np)));
      if (r.result_int() != 201) {
        std::fprintf(stderr, "node pool create failed: %s\n", r.body().c_str());
        return std::nullopt;
      }
    }
  }
  return cluster_hrefs;
}

struct Progress {
  long peak_rss_kb = 0;
  // When half, 90% and 99% of the objects were ready: a uniform slowdown against a long tail.
  std::vector<std::pair<double, double>> marks = {{0.5, 0}, {0.9, 0}, {0.99, 0}};
};

// Waits until `want` objects are ready; false (with a message) after ten minutes.
bool WaitUntilReady(const ReadySink& sink, int64_t want, std::chrono::steady_clock::time_point t0,
                    Progress& progress) {
  while (sink.ready.load() < want) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    progress.peak_rss_kb = std::max(progress.peak_rss_kb, RssKb());
    for (auto& [share, at] : progress.marks) {
      if (at == 0 && static_cast<double>(sink.ready.load()) >= share * static_cast<double>(want))
        at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::minutes(10)) {
      std::fprintf(stderr, "timed out: %lld of %lld ready\n", static_cast<long long>(sink.ready.load()),
                   static_cast<long long>(want));
      return false;
    }
  }
  return true;
}

// The critical path implied by the drawn latencies, and the lateness: when each object was ready
// against its own chain (a cluster's control plane; a node pool's control plane plus its slowest
// machine), what the engine added to the latencies drawn.
struct Lateness {
  int64_t critical_ms = 0;
  std::vector<double> clusters, pools;
};

Lateness MeasureLateness(const SimulatedAzure& azure, const Engine& engine, ReadySink& sink,
                         const std::vector<std::string>& cluster_hrefs) {
  const auto drawn = azure.CreateDurationsMs();
  auto ms_of = [&](const json::value& svc) -> int64_t {
    auto it = drawn.find(ToLower(GetString(svc.as_object(), "id").value_or("")));
    return it == drawn.end() ? 0 : it->second;
  };
  auto chain = [&](const json::object& unit) {
    int64_t sum = 0;
    for (const auto& s : *GetArray(unit, "services")) sum += ms_of(s);
    return sum;
  };
  Lateness l;
  for (const auto& href : cluster_hrefs) {
    auto view = engine.ClusterView(href);
    if (!view.ok()) continue;
    const int64_t cp = chain(*GetObject(*view, "control_plane"));
    l.clusters.push_back(sink.ReadyAt(href) - static_cast<double>(cp) / 1000.0);
    for (const auto& np : *GetArray(*view, "node_pools")) {
      int64_t slowest = 0;
      for (const auto& m : *GetArray(np.as_object(), "machines"))
        slowest = std::max(slowest, chain(m.as_object()));
      const std::string pool(GetString(np.as_object(), "href").value_or(""));
      l.pools.push_back(sink.ReadyAt(pool) - static_cast<double>(cp + slowest) / 1000.0);
      l.critical_ms = std::max(l.critical_ms, cp + slowest);
    }
    l.critical_ms = std::max(l.critical_ms, cp);
  }
  return l;
}

void PrintLateness(const Lateness& l) {
  auto mean_max = [](const std::vector<double>& v) {
    double sum = 0, most = 0;
    for (double x : v) {
      sum += x;
      most = std::max(most, x);
    }
    return std::pair{v.empty() ? 0.0 : sum / static_cast<double>(v.size()), most};
  };
  const auto [cl_mean, cl_max] = mean_max(l.clusters);
  const auto [np_mean, np_max] = mean_max(l.pools);
  std::printf(
      "  lateness (ready - own chain): clusters mean %.3f s max %.3f s, node pools mean %.3f s max %.3f s\n",
      cl_mean, cl_max, np_mean, np_max);
}

}  // namespace

int main(int argc, char** argv) {
  const int clusters = Arg(argc, argv, "--clusters", 100);
  const int pools = Arg(argc, argv, "--pools", 10);
  const int machines = Arg(argc, argv, "--machines", 20);
  const double scale = ArgD(argc, argv, "--time-scale", 0.01);
  const int concurrency = Arg(argc, argv, "--concurrency", 10);
  // With a data dir every step commits to DIR/simulator.db as under `hcprp serve --data-dir`.
  const std::string data_dir = ArgS(argc, argv, "--data-dir");
  std::unique_ptr<simulator::StateDb> state;
  if (!data_dir.empty()) {
    auto db = simulator::StateDb::Open(data_dir);
    if (!db.ok()) {
      std::fprintf(stderr, "%s\n", db.error().ToString().c_str());
      return 1;
    }
    state = std::move(*db);
  }

  SystemClock clock;
  AzureOptions ao;
  ao.clock = &clock;
  ao.profile = LatencyProfile::kRealistic;
  ao.time_scale = scale;
  ao.seed = 11;
  ao.state = state.get();
  auto azure = SimulatedAzure::Open(ao);
  EngineOptions eo;
  eo.clock = &clock;
  eo.azure = azure->get();
  eo.time_scale = scale;
  eo.concurrency = concurrency;
  eo.state = state.get();
  auto engine = Engine::Open(eo);
  auto store = state ? simulator::NewStateStore(state.get()) : simulator::NewMemoryStateStore();
  simulator::Scheduler scheduler(&clock);
  simulator::ServiceOptions so;
  so.clock = &clock;
  so.provisioner = engine->get();
  so.store = store.get();
  so.scheduler = &scheduler;
  so.event_history = 1000;
  so.seed = 5;
  auto service = simulator::Service::Open(so);
  if (!azure.ok() || !engine.ok() || !service.ok()) {
    std::fprintf(stderr, "cannot open the parts\n");
    return 1;
  }
  ReadySink sink;
  sink.service = service->get();
  (*engine)->Attach(&sink);

  const double cpu0 = CpuSeconds();
  const long rss0 = RssKb();
  const auto t0 = std::chrono::steady_clock::now();
  sink.t0 = t0;
  (*engine)->Start();
  const auto cluster_hrefs = SubmitClusters(**service, clusters, pools, machines);
  if (!cluster_hrefs) return 1;
  const double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Progress progress;
  if (!WaitUntilReady(sink, static_cast<int64_t>(clusters) * (1 + pools), t0, progress)) return 1;
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu_s = CpuSeconds() - cpu0;

  const Lateness lateness = MeasureLateness(**azure, **engine, sink, *cluster_hrefs);
  const double critical_s = static_cast<double>(lateness.critical_ms) / 1000.0;
  const EngineMetrics m = (*engine)->metrics();
  (*engine)->Stop();

  std::printf(
      "provisioning bench: %d clusters x %d node pools x %d machines = %d machines (%zu Azure resources)\n",
      clusters, pools, machines, clusters * pools * machines, (*azure)->resource_count());
  std::printf("  profile realistic, time scale %.4g, concurrency %d, client timeout %.0f ms (scaled)\n",
              scale, concurrency, 2000 * scale);
  std::printf("  submit (REST creates)     %8.3f s\n", submit_s);
  std::printf("  wall time to all ready    %8.3f s\n", wall_s);
  std::printf("  critical path (drawn)     %8.3f s   (%.1f s unscaled)\n", critical_s, critical_s / scale);
  std::printf("  wall / critical path      %8.3f     (target <= 1.20)\n", wall_s / critical_s);
  std::printf("  objects ready: 50%% at %.3f s, 90%% at %.3f s, 99%% at %.3f s\n", progress.marks[0].second,
              progress.marks[1].second, progress.marks[2].second);
  PrintLateness(lateness);
  std::printf("  CPU (user+sys)            %8.3f s   (%.0f%% of one core over the run)\n", cpu_s,
              100.0 * cpu_s / wall_s);
  if (state) {
    std::printf("  state: %llu commits to %s/simulator.db\n",
                static_cast<unsigned long long>(state->commits()), data_dir.c_str());
  }
  std::printf("  memory: RSS before %ld MiB, peak during %ld MiB, max RSS %ld MiB\n", rss0 / 1024,
              progress.peak_rss_kb / 1024, MaxRssKb() / 1024);
  std::printf(
      "  engine: %lld reconciles, %lld Azure calls, %lld futures stored, %lld completed within timeout, "
      "%lld transitions, %lld errors\n",
      static_cast<long long>(m.reconciles), static_cast<long long>(m.calls),
      static_cast<long long>(m.futures_stored), static_cast<long long>(m.completed_within_timeout),
      static_cast<long long>(m.transitions), static_cast<long long>(sink.errors.load()));
  return 0;
}
