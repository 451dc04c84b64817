// Version controller benchmark: how fast a new z-stream published to the update service reaches every
// eligible cluster's desired version (issue "Scale and speed": 10,000 clusters within 2 s of a resync
// pass, and within 200 ms p99 of the publication when the simulator announces it as an event).
//
// One process: the Cluster Service simulator (instant profile, in memory, serving HTTP), N clusters
// created in it at openshift-v4.20.15-fast (channel group "fast", so that one publication moves the
// tip) across S subscriptions, and a real backend::Backend over a SQLite store in a temporary folder,
// holding its shard leases and reaching the simulator through clusterservice::HttpClient.
//
// The backend keeps each cluster's desired version in its store (a service provider cluster
// document, committed in batches) and then asks the Cluster Service for the upgrade (a PATCH of
// version.id). Each round publishes two z-streams:
//   resync path: the backend does not see the release events (the client below hides them); one
//     version pass (Backend::VersionPassOnce, what the periodic resync runs) is timed: for each
//     cluster, the time from the pass's start to the store commit of its new desired version, and
//     to the Cluster Service's answer to the PATCH that triggered its upgrade;
//   event path: the release is announced on the event stream as usual; for each cluster, the time
//     from the publication to the store commit of its new desired version, and to the Cluster
//     Service's answer to the triggering PATCH.
// Baseline in the same run: one bare List of every cluster and one round of no-op PATCHes (the
// cluster's own version.id), one at a time, through the same client.
//
// Prints figures only; never asserts a timing.
//
//   version_bench [--clusters 10000] [--subscriptions 100] [--rounds 1] [--page-size 500]
//                 [--concurrency K]   (BackendOptions::version_concurrency; default: the backend's)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/documents.h"
#include "bench_setup.h"
#include "clusterservice/forwarding_client.h"
#include "clusterservice/http_client.h"
#include "clusterservice/update_graph.h"
#include "core/json.h"
#include "core/log.h"
#include "simulator/simulator.h"
#include "store/forwarding_store.h"

using namespace hcprp;
using namespace hcprp::bench;

namespace {

[[noreturn]] void Die(const std::string& what) { bench::Die("version_bench", what); }

struct Flags {
  size_t clusters = 10'000;
  size_t subscriptions = 100;
  size_t rounds = 1;
  size_t page_size = 500;
  std::optional<size_t> concurrency;
  std::chrono::microseconds rtt{0};
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: version_bench [--clusters 10000] [--subscriptions 100] [--rounds 1] [--page-size 500] "
          "[--concurrency K] [--rtt-us 0]\n");
      std::exit(0);
    }
    if (i + 1 >= argc) Die("expected --flag value, got " + a);
    const size_t v = std::strtoull(argv[++i], nullptr, 10);
    if (a == "--clusters") {
      f.clusters = v;
    } else if (a == "--subscriptions") {
      f.subscriptions = std::max<size_t>(v, 1);
    } else if (a == "--rounds") {
      f.rounds = v;
    } else if (a == "--page-size") {
      f.page_size = std::max<size_t>(v, 1);
    } else if (a == "--concurrency") {
      f.concurrency = std::max<size_t>(v, 1);
    } else if (a == "--rtt-us") {
      f.rtt = std::chrono::microseconds(v);
    } else {
      Die("unknown flag " + a);
    }
  }
  return f;
}

// The backend's view of the Cluster Service, with two additions: it can hide the update service's
// events (Version, UpgradeEdge) from the event stream, and it notes when the PATCH that set each
// cluster's version.id to the expected ID was answered.
class TimedClient final : public clusterservice::ForwardingClient {
 public:
  // `rtt`: added to every PATCH, as a network round trip to a remote Cluster Service would.
  TimedClient(clusterservice::Client* inner, std::chrono::microseconds rtt)
      : clusterservice::ForwardingClient(inner), rtt_(rtt) {}

  void HideReleaseEvents(bool hide) {
    std::lock_guard lock(mu_);
    hide_ = hide;
  }
  // Forgets what was noted and notes raises to `version_id` from now on.
  void Expect(std::string version_id) {
    std::lock_guard lock(mu_);
    expected_ = std::move(version_id);
    raised_at_.clear();
    list_noted_ = false;
  }
  // Waits until `n` clusters were raised or `timeout` passed; the answer times noted so far.
  std::vector<SteadyTime> WaitRaised(size_t n, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return raised_at_.size() >= n; });
    std::vector<SteadyTime> out;
    out.reserve(raised_at_.size());
    for (const auto& [href, at] : raised_at_) out.push_back(at);
    return out;
  }
  // See FollowerPosition::WaitCaughtUp: a round starts with no events of the round before to read.
  double WaitFollowerCaughtUp() { return followed_.WaitCaughtUp(*target()); }
  // When the first List of the clusters since Expect() started, and how long it took.
  std::pair<SteadyTime, double> FirstClusterList() const {
    std::lock_guard lock(mu_);
    return {last_list_start_, last_list_seconds_};
  }

  Result<json::object> Update(std::string_view href, const json::object& patch) override {
    if (rtt_.count() > 0) std::this_thread::sleep_for(rtt_);
    auto r = target()->Update(href, patch);
    if (r.ok()) Note(href, patch);
    return r;
  }
  Result<json::array> List(std::string_view collection_href, std::string_view search) override {
    const SteadyTime start = std::chrono::steady_clock::now();
    auto r = target()->List(collection_href, search);
    if (collection_href == kClusters && search.empty()) {
      std::lock_guard lock(mu_);
      if (list_noted_) return r;
      list_noted_ = true;
      last_list_start_ = start;
      last_list_seconds_ = Seconds(std::chrono::steady_clock::now() - start);
    }
    return r;
  }
  // Only the follower's long-polls count as caught up: its reads without a wait position it on the
  // stream, passing over the events they read (as in rollout_bench).
  Result<clusterservice::EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override {
    if (timeout.count() > 0) followed_.Note(after);
    auto page = target()->WatchEvents(after, timeout);
    std::lock_guard lock(mu_);
    if (page.ok() && hide_) {
      std::erase_if(page->events, [](const clusterservice::Event& e) {
        return e.kind == clusterservice::kVersionEventKind || e.kind == clusterservice::kUpgradeEdgeEventKind;
      });
    }
    return page;
  }

 private:
  void Note(std::string_view href, const json::object& patch) {
    const json::object* version = GetObject(patch, "version");
    auto id = version != nullptr ? GetString(*version, "id") : std::nullopt;
    const SteadyTime now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    if (!id || *id != expected_) return;
    raised_at_.try_emplace(std::string(href), now);
    cv_.notify_all();
  }

  const std::chrono::microseconds rtt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool hide_ = false;
  std::string expected_;
  std::unordered_map<std::string, SteadyTime> raised_at_;
  FollowerPosition followed_;
  bool list_noted_ = false;
  SteadyTime last_list_start_{};
  double last_list_seconds_ = 0;
};

// The backend's store, noting when the batch that set each cluster's stored desired version
// (backend::ServiceProviderCluster) to the expected one committed.
class CommitTimes final : public store::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  // Forgets what was noted and notes commits of `raw` ("4.20.16") from now on.
  void Expect(std::string raw) {
    std::lock_guard lock(mu_);
    expected_ = std::move(raw);
    committed_at_.clear();
  }
  // Waits until `n` clusters' desired versions committed or `timeout` passed; the times noted so far.
  std::vector<SteadyTime> WaitCommitted(size_t n, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return committed_at_.size() >= n; });
    std::vector<SteadyTime> out;
    out.reserve(committed_at_.size());
    for (const auto& [href, at] : committed_at_) out.push_back(at);
    return out;
  }
  size_t batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }

  Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                   std::vector<store::WriteOp> ops, const store::Lease* fence) override {
    std::vector<std::string> hrefs;
    {
      std::lock_guard lock(mu_);
      for (const store::WriteOp& op : ops) {
        auto spc = backend::ServiceProviderCluster::FromBody(op.body);
        if (spc && spc->desired_version == expected_) hrefs.push_back(spc->href);
      }
    }
    auto r = ForwardingStore::Batch(container, pk, std::move(ops), fence);
    if (!r.ok() || hrefs.empty()) return r;
    const SteadyTime now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    ++batches_;
    for (std::string& h : hrefs) committed_at_.try_emplace(std::move(h), now);
    cv_.notify_all();
    return r;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string expected_;
  size_t batches_ = 0;
  std::unordered_map<std::string, SteadyTime> committed_at_;
};

struct Spread {
  double first = 0, p50 = 0, p99 = 0, max = 0;
};

Spread SpreadOf(std::vector<SteadyTime> times, SteadyTime from) {
  Spread s;
  if (times.empty()) return s;
  std::sort(times.begin(), times.end());
  auto at = [&](double q) {
    const auto i = static_cast<size_t>(std::llround(q * static_cast<double>(times.size() - 1)));
    return Seconds(times[std::min(i, times.size() - 1)] - from);
  };
  s.first = Seconds(times.front() - from);
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  s.max = Seconds(times.back() - from);
  return s;
}

// The baseline's bare PATCH round; returns the process CPU of one no-op PATCH (both sides of the call).
double Baseline(TimedClient& client, const std::vector<std::string>& hrefs) {
  const double cpu0 = CpuSeconds();
  const SteadyTime t0 = std::chrono::steady_clock::now();
  auto listed = client.List(kClusters, "");
  const double list_s = Seconds(std::chrono::steady_clock::now() - t0);
  if (!listed.ok()) Die("list: " + listed.error().ToString());
  const double cpu1 = CpuSeconds();
  // The cluster's own version: the simulator validates and merges it, and answers without a change.
  const json::object noop{
      {"version", json::object{{"id", VersionIdOfZ(kStartZ)}, {"channel_group", kGroup}}}};
  const SteadyTime t1 = std::chrono::steady_clock::now();
  for (const std::string& href : hrefs) {
    if (auto r = client.Update(href, noop); !r.ok()) Die("patch: " + r.error().ToString());
  }
  const double patch_s = Seconds(std::chrono::steady_clock::now() - t1);
  std::printf(
      "baseline: bare list of %zu clusters %s (CPU %.2f s); bare PATCH round (%zu no-op, one at a time) "
      "%s, %.0f us each (CPU %.2f s)\n",
      listed->size(), Ms(list_s).c_str(), cpu1 - cpu0, hrefs.size(), Ms(patch_s).c_str(),
      patch_s * 1e6 / static_cast<double>(std::max<size_t>(hrefs.size(), 1)), CpuSeconds() - cpu1);
  return (CpuSeconds() - cpu1) / static_cast<double>(std::max<size_t>(hrefs.size(), 1));
}

std::string Figures(const Spread& s) {
  return "first " + Ms(s.first) + ", p50 " + Ms(s.p50) + ", p99 " + Ms(s.p99) + ", max " + Ms(s.max);
}

void ResyncPath(simulator::Simulator& sim, backend::Backend& backend, TimedClient& client, CommitTimes& st,
                size_t n, int z) {
  const std::string raw = "4.20." + std::to_string(z);
  const std::string id = clusterservice::VersionIdOf(raw, kGroup);
  client.HideReleaseEvents(true);
  client.Expect(id);
  st.Expect(raw);
  Publish(sim, raw);
  // The event follower reads past the (hidden) announcement, so no pass is requested, and has no
  // events of earlier rounds left to read.
  client.WaitFollowerCaughtUp();
  const double cpu0 = CpuSeconds();
  const size_t batches0 = st.batches();
  const SteadyTime t0 = std::chrono::steady_clock::now();
  auto pass = backend.VersionPassOnce();
  const double pass_s = Seconds(std::chrono::steady_clock::now() - t0);
  if (!pass.ok()) Die("version pass: " + pass.error().ToString());
  const double cpu = CpuSeconds() - cpu0;
  const Spread stored = SpreadOf(st.WaitCommitted(n, std::chrono::seconds(0)), t0);
  const std::vector<SteadyTime> triggered = client.WaitRaised(n, std::chrono::seconds(0));
  const Spread trig = SpreadOf(triggered, t0);
  auto [list_start, list_s] = client.FirstClusterList();
  const int64_t at = CountWhere(sim, "version.id = '" + id + "'");
  std::printf(
      "  resync path (%s): pass %s (list %s; CPU %.2f s), recorded %zu in %zu batches, raised %zu, "
      "triggered %zu, failed %zu\n"
      "    desired version committed in the store, %zu clusters, from the pass's start: %s\n"
      "    upgrade triggered (PATCH answered), %zu clusters: %s; simulator: %lld/%zu at %s\n",
      raw.c_str(), Ms(pass_s).c_str(), Ms(list_s).c_str(), cpu, pass->recorded, st.batches() - batches0,
      pass->raised, pass->triggered, pass->failed, st.WaitCommitted(0, std::chrono::seconds(0)).size(),
      Figures(stored).c_str(), triggered.size(), Figures(trig).c_str(), static_cast<long long>(at), n,
      id.c_str());
  client.HideReleaseEvents(false);
}

// `patch_cpu`: the baseline's CPU of one bare PATCH.
void EventPath(simulator::Simulator& sim, TimedClient& client, CommitTimes& st, size_t n, int z,
               double patch_cpu) {
  const std::string raw = "4.20." + std::to_string(z);
  const std::string id = clusterservice::VersionIdOf(raw, kGroup);
  client.Expect(id);
  st.Expect(raw);
  const double cpu0 = CpuSeconds();
  const double idle0 = MachineIdleSeconds();
  const size_t batches0 = st.batches();
  const SteadyTime t0 = std::chrono::steady_clock::now();
  Publish(sim, raw);
  const std::vector<SteadyTime> committed = st.WaitCommitted(n, std::chrono::seconds(120));
  const double stored_cpu = CpuSeconds() - cpu0;
  const double stored_wall = Seconds(std::chrono::steady_clock::now() - t0);
  const double stored_usable = std::clamp((stored_cpu + MachineIdleSeconds() - idle0) / stored_wall, 0.01,
                                          double(std::max(1U, std::thread::hardware_concurrency())));
  const std::vector<SteadyTime> raised = client.WaitRaised(n, std::chrono::seconds(120));
  const double cpu = CpuSeconds() - cpu0;
  const Spread stored = SpreadOf(committed, t0);
  const Spread trig = SpreadOf(raised, t0);
  const int64_t at = CountWhere(sim, "version.id = '" + id + "'");
  std::printf(
      "  event path (%s): publication to desired version committed in the store, %zu clusters in %zu "
      "batches: %s (CPU %.2f s)\n"
      "    publication to upgrade triggered (PATCH answered), %zu clusters: %s (CPU %.2f s); simulator: "
      "%lld/%zu at %s\n",
      raw.c_str(), committed.size(), st.batches() - batches0, Figures(stored).c_str(), stored_cpu,
      raised.size(), Figures(trig).c_str(), cpu, static_cast<long long>(at), n, id.c_str());
  std::printf(
      "  CPU a cluster: to the store commit %.1f us, to the trigger %.0f us, a bare no-op PATCH (baseline) "
      "%.0f us; %zu clusters within 200 ms on the %.2f cores the run could have had leaves %.0f us a "
      "cluster\n",
      stored_cpu * 1e6 / static_cast<double>(std::max<size_t>(n, 1)),
      cpu * 1e6 / static_cast<double>(std::max<size_t>(n, 1)), patch_cpu * 1e6, n, stored_usable,
      0.2 * stored_usable * 1e6 / static_cast<double>(std::max<size_t>(n, 1)));
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  SystemClock clock;
  Logger logger(std::make_shared<StreamLogSink>(), &clock, LogLevel::kWarn);

  simulator::SimulatorOptions so;
  so.profile = simulator::Profile::kInstant;
  so.seed = 1;
  so.logger = &logger;
  // Every event of the run stays in the history: a backend that starts (or falls) behind the history
  // never resumes following the stream (EventFollower retries the same sequence after a 410).
  so.event_history = (4 + 4 * f.rounds) * f.clusters + 10'000;
  auto sim = simulator::Simulator::Start(so);
  if (!sim.ok()) Die("simulator: " + sim.error().ToString());

  const SteadyTime setup = std::chrono::steady_clock::now();
  std::vector<std::string> hrefs = CreateClusters(**sim, f.clusters, f.subscriptions);
  const double create_s = Seconds(std::chrono::steady_clock::now() - setup);

  {
    TempStore temp(&clock);
    CommitTimes st(temp.get());
    clusterservice::HttpClientOptions co;
    co.base_url = (*sim)->base_url();
    co.page_size = f.page_size;
    auto http = clusterservice::HttpClient::Create(co);
    if (!http.ok()) Die("client: " + http.error().ToString());
    TimedClient client(http->get(), f.rtt);

    backend::BackendOptions bo;
    bo.gc_enabled = false;  // the clusters have no resource documents: all would be orphans
    bo.version_resync = std::chrono::hours(1);
    if (f.concurrency) bo.version_concurrency = *f.concurrency;
    StartedBackend be = StartBackend(bo, &st, &client, &clock, logger, f.clusters);
    const double shards_s = be.shards_seconds;

    std::printf(
        "version_bench: %zu clusters (%s, channel group %s) in %zu subscriptions; page size %zu; "
        "version concurrency %zu; PATCH round trip + %lld us\n",
        f.clusters, VersionIdOfZ(kStartZ).c_str(), std::string(kGroup).c_str(), f.subscriptions, f.page_size,
        bo.version_concurrency, static_cast<long long>(f.rtt.count()));
    std::printf("setup: clusters created and ready in %.1f s; backend holding %u shards after %s\n", create_s,
                bo.shards, Ms(shards_s).c_str());
    const double patch_cpu = Baseline(client, hrefs);
    int z = kStartZ;
    for (size_t round = 1; round <= f.rounds; ++round) {
      std::printf("round %zu:\n", round);
      WaitAllReady(**sim, f.clusters);
      ResyncPath(**sim, *be.backend, client, st, f.clusters, ++z);
      WaitAllReady(**sim, f.clusters);
      std::printf("  the backend read the resync round's events %s after every cluster was ready\n",
                  Ms(client.WaitFollowerCaughtUp()).c_str());
      EventPath(**sim, client, st, f.clusters, ++z, patch_cpu);
    }
    std::fflush(stdout);
    be.backend->Stop();
  }
  (*sim)->Stop();
  return 0;
}
