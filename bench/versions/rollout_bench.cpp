// Rollout benchmark: a z-stream rolled out to N clusters under the `instant` profile, against the
// critical path of one cluster alone, with the resource provider's durable commits per state change
// (issue "Scale and speed": within 1.2x of the critical path, at most one commit per state change).
//
// A rig is one process's Cluster Service simulator (instant profile, in memory, serving HTTP), clusters
// created in it at openshift-v4.20.15-fast, a resource document for each in a SQLite store in a
// temporary folder (as the frontend leaves it after the create: internalId, provisioningState
// Succeeded, the Cluster Service status fields synced), and a real backend::Backend over that store,
// reaching the simulator through clusterservice::HttpClient. A rollout publishes the next z-stream;
// the backend's version controller raises each cluster's version.id (the event path), the simulator
// runs the upgrade (a cluster's PATCH answers in updating, then ready; no time in the instant profile;
// node pools are not upgraded by a z-stream), and the backend copies each status change into the
// resource document. A cluster's rollout is done when its document's version history shows the new
// release Completed: what the API then renders as its one activeVersion.
//
// The baseline rig holds one cluster and rolls out --baseline-rounds z-streams one after the other:
// its median is the critical path, with two marks on the way (the PATCH that raised the cluster
// answered; the event whose version history shows the release Completed read by the backend). The
// measured rig holds N clusters and rolls out one z-stream.
//
// Commits: every successful write of the backend's store to the resources container during the
// rollout (each its own transaction from the caller's view, whatever group commit shares); lease and
// membership commits are counted apart. State changes: the clusters' events on the Cluster Service event
// stream that moved an object to another state (all events, also those that changed conditions only, are
// printed beside them).
//
// Prints figures only; never asserts a timing.
//
//   rollout_bench [--clusters 1000] [--subscriptions 100] [--baseline-rounds 5] [--page-size 500]
//                 [--event-page-size N]  (HttpClientOptions::event_page_size; default: the client's)
//                 [--concurrency K]   (BackendOptions::version_concurrency; default: the backend's)
//                 [--write-concurrency W]   (BackendOptions::version_write_concurrency; default:
//                                            the backend's)
//                 [--event-concurrency E]   (BackendOptions::event_concurrency; default: the backend's)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arm/documents.h"
#include "bench_setup.h"
#include "clusterservice/forwarding_client.h"
#include "clusterservice/http_client.h"
#include "store/forwarding_store.h"

using namespace hcprp;
using namespace hcprp::bench;

namespace {

[[noreturn]] void Die(const std::string& what) { bench::Die("rollout_bench", what); }

struct Flags {
  size_t clusters = 1'000;
  size_t subscriptions = 100;
  size_t baseline_rounds = 5;
  size_t page_size = 500;
  size_t event_page_size = clusterservice::HttpClientOptions{}.event_page_size;
  std::optional<size_t> concurrency;
  std::optional<size_t> write_concurrency;
  std::optional<size_t> event_concurrency;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: rollout_bench [--clusters 1000] [--subscriptions 100] [--baseline-rounds 5] "
          "[--page-size 500] [--event-page-size N] [--concurrency K] [--write-concurrency W] "
          "[--event-concurrency E]\n");
      std::exit(0);
    }
    if (i + 1 >= argc) Die("expected --flag value, got " + a);
    const size_t v = std::strtoull(argv[++i], nullptr, 10);
    if (a == "--clusters") {
      f.clusters = std::max<size_t>(v, 1);
    } else if (a == "--subscriptions") {
      f.subscriptions = std::max<size_t>(v, 1);
    } else if (a == "--baseline-rounds") {
      f.baseline_rounds = std::max<size_t>(v, 1);
    } else if (a == "--page-size") {
      f.page_size = std::max<size_t>(v, 1);
    } else if (a == "--event-page-size") {
      f.event_page_size = std::max<size_t>(v, 1);
    } else if (a == "--concurrency") {
      f.concurrency = std::max<size_t>(v, 1);
    } else if (a == "--write-concurrency") {
      f.write_concurrency = std::max<size_t>(v, 1);
    } else if (a == "--event-concurrency") {
      f.event_concurrency = std::max<size_t>(v, 1);
    } else {
      Die("unknown flag " + a);
    }
  }
  return f;
}

// When each object reached a mark, first time only; waits for a count of them.
class Marks {
 public:
  void Note(const std::string& key) {
    const SteadyTime now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    if (at_.try_emplace(key, now).second) cv_.notify_all();
  }
  void Clear() {
    std::lock_guard lock(mu_);
    at_.clear();
  }
  // Waits until `n` objects are marked or `timeout` passed; true when they are.
  bool Wait(size_t n, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return at_.size() >= n; });
  }
  std::unordered_map<std::string, SteadyTime> Snapshot() const {
    std::lock_guard lock(mu_);
    return at_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, SteadyTime> at_;
};

// The newest entry of a version history is `raw`, Completed.
bool CompletedAt(const json::array* history, const std::string& raw) {
  if (history == nullptr || history->empty() || !history->front().is_object()) return false;
  const json::object& newest = history->front().as_object();
  return GetString(newest, "version").value_or("") == raw &&
         GetString(newest, "state").value_or("") == "Completed";
}

// The backend's store, counting what it commits and noting when a resource document's version history
// shows the expected release Completed (by the resource's internalId, the cluster's href).
class CountingStore final : public store::ForwardingStore {
 public:
  explicit CountingStore(store::Store* target) : ForwardingStore(target) {}

  void Expect(std::string raw) {
    std::lock_guard lock(mu_);
    expected_ = std::move(raw);
    done_.Clear();
  }
  Marks& done() { return done_; }
  uint64_t resource_writes() const { return resource_writes_.load(); }
  // Writes to the other containers (the backend's membership documents) and lease commits.
  uint64_t other_commits() const { return other_commits_.load(); }

  Result<store::Document> Create(std::string_view container, std::string_view pk, std::string_view id,
                                 json::value body, std::optional<int64_t> ttl_seconds) override {
    return Counted(container, ForwardingStore::Create(container, pk, id, std::move(body), ttl_seconds));
  }
  Result<store::Document> Replace(std::string_view container, std::string_view pk, std::string_view id,
                                  json::value body, std::optional<std::string> if_match,
                                  std::optional<int64_t> ttl_seconds) override {
    return Counted(container, ForwardingStore::Replace(container, pk, id, std::move(body),
                                                       std::move(if_match), ttl_seconds));
  }
  Result<store::Document> Upsert(std::string_view container, std::string_view pk, std::string_view id,
                                 json::value body, std::optional<std::string> if_match,
                                 std::optional<int64_t> ttl_seconds) override {
    return Counted(container, ForwardingStore::Upsert(container, pk, id, std::move(body), std::move(if_match),
                                                      ttl_seconds));
  }
  Status Delete(std::string_view container, std::string_view pk, std::string_view id,
                std::optional<std::string> if_match) override {
    return Counted(container, ForwardingStore::Delete(container, pk, id, std::move(if_match)));
  }
  Result<store::Document> Patch(std::string_view container, std::string_view pk, std::string_view id,
                                std::vector<store::PatchOp> ops, std::vector<store::Condition> conditions,
                                std::optional<std::string> if_match) override {
    return Counted(container, ForwardingStore::Patch(container, pk, id, std::move(ops), std::move(conditions),
                                                     std::move(if_match)));
  }
  Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                   std::vector<store::WriteOp> ops, const store::Lease* fence) override {
    auto r = Counted(container, ForwardingStore::Batch(container, pk, std::move(ops), fence));
    if (!r.ok() || container != store::kResources) return r;
    std::string expected;
    {
      std::lock_guard lock(mu_);
      expected = expected_;
    }
    for (const store::Document& d : r->documents) {
      auto doc = arm::ResourceDocument::FromBody(d.body);
      if (doc.ok() && CompletedAt(GetArray(doc->service_status, "version_history"), expected)) {
        done_.Note(doc->internal_id);
      }
    }
    return r;
  }

 protected:
  Status Intercept(store::StoreMethod method, const Forward& forward) override {
    Status s = forward();
    if (s.ok() && store::MayCommit(method) && !store::WritesDocuments(method)) ++other_commits_;
    return s;
  }

 private:
  template <typename R>
  R Counted(std::string_view container, R r) {
    if (r.ok()) ++(container == store::kResources ? resource_writes_ : other_commits_);
    return r;
  }

  std::atomic<uint64_t> resource_writes_{0};
  std::atomic<uint64_t> other_commits_{0};
  std::mutex mu_;
  std::string expected_;
  Marks done_;
};

// The backend's view of the Cluster Service, noting the PATCH that raised each cluster to the expected
// version.id, the event that shows its upgrade Completed, and the clusters' events and state changes.
class WatchingClient final : public clusterservice::ForwardingClient {
 public:
  using clusterservice::ForwardingClient::ForwardingClient;

  void Expect(std::string raw, std::string version_id) {
    std::lock_guard lock(mu_);
    raw_ = std::move(raw);
    version_id_ = std::move(version_id);
    raised_.Clear();
    completed_.Clear();
  }
  Marks& raised() { return raised_; }
  Marks& completed() { return completed_; }
  uint64_t cluster_events() const { return cluster_events_.load(); }
  uint64_t state_changes() const { return state_changes_.load(); }

  Result<json::object> Update(std::string_view href, const json::object& patch) override {
    auto r = target()->Update(href, patch);
    const json::object* version = GetObject(patch, "version");
    auto id = version != nullptr ? GetString(*version, "id") : std::nullopt;
    if (r.ok() && id && *id == VersionId()) raised_.Note(std::string(href));
    return r;
  }
  // See FollowerPosition::WaitCaughtUp. Only the follower's long-polls count: its reads without a
  // wait position it on the stream (they pass over the events they read, unapplied), so a rollout
  // published while they run would start before the follower settled.
  double WaitFollowerCaughtUp() { return followed_.WaitCaughtUp(*target()); }

  // The backend's reads of the Cluster Service (its passes: resyncs, the orphan collector's listing of
  // every object), for WaitQuiet: each noted when it starts and when it ends.
  template <typename Read>
  auto Noted(Read read) {
    NoteRead();
    auto r = read();
    NoteRead();
    return r;
  }
  Result<json::array> List(std::string_view collection_href, std::string_view search) override {
    return Noted([&] { return target()->List(collection_href, search); });
  }
  Result<json::object> Get(std::string_view href) override {
    return Noted([&] { return target()->Get(href); });
  }
  Result<json::object> GetStatus(std::string_view href) override {
    return Noted([&] { return target()->GetStatus(href); });
  }
  // Waits until the backend has read nothing from the Cluster Service for `quiet` (its start-up passes
  // ended; `quiet` longer than the backend's timer tick, which starts a requested pass).
  void WaitQuiet(std::chrono::milliseconds quiet) {
    while (true) {
      const auto since =
          std::chrono::steady_clock::now() - SteadyTime(SteadyTime::duration(last_read_.load()));
      if (since >= quiet) return;
      std::this_thread::sleep_for(quiet - std::chrono::duration_cast<std::chrono::milliseconds>(since));
    }
  }
  Result<clusterservice::EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override {
    if (timeout.count() > 0) followed_.Note(after);
    auto page = target()->WatchEvents(after, timeout);
    if (!page.ok()) return page;
    std::lock_guard lock(mu_);
    for (const clusterservice::Event& e : page->events) {
      if (e.kind != "Cluster") continue;
      ++cluster_events_;
      auto [it, fresh] = last_state_.try_emplace(e.href, e.state);
      if (!fresh && it->second != e.state) {
        ++state_changes_;
        it->second = e.state;
      }
      if (e.object.status.version_history && CompletedAt(&*e.object.status.version_history, raw_)) {
        completed_.Note(e.href);
      }
    }
    return page;
  }

 private:
  void NoteRead() { last_read_ = std::chrono::steady_clock::now().time_since_epoch().count(); }
  std::string VersionId() const {
    std::lock_guard lock(mu_);
    return version_id_;
  }

  mutable std::mutex mu_;
  std::string raw_;
  std::string version_id_;
  std::unordered_map<std::string, std::string> last_state_;  // each cluster's state at its last event
  std::atomic<SteadyTime::rep> last_read_{0};
  std::atomic<uint64_t> cluster_events_{0};
  std::atomic<uint64_t> state_changes_{0};
  Marks raised_;
  Marks completed_;
  FollowerPosition followed_;
};

// The wall clock a day back. A z-stream reaches clusters that have run for weeks: the simulator keeps
// this time, so the clusters it creates are a day old to the backend, older than the window in which a
// backend asks whether an object was made by a create request that came late (late_objects.h, one
// store read an event), as the clusters of a real rollout are.
class DayBehindClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now() - std::chrono::hours(24); }
};

// A simulator with `clusters` clusters, their resource documents and a started backend.
class Rig {
 public:
  Rig(const Flags& f, size_t clusters, const Clock* clock, const Logger& logger)
      : clusters_(clusters), store_(clock), counting_(store_.get()) {
    simulator::SimulatorOptions so;
    so.profile = simulator::Profile::kInstant;
    so.seed = 1;
    so.logger = &logger;
    so.clock = &service_clock_;
    // Every event of the run stays in the history (creates, and up to 8 events an upgrade).
    so.event_history = 8 * (f.baseline_rounds + 2) * clusters + 10'000;
    auto sim = simulator::Simulator::Start(so);
    if (!sim.ok()) Die("simulator: " + sim.error().ToString());
    sim_ = std::move(*sim);
    const SteadyTime t0 = std::chrono::steady_clock::now();
    hrefs_ = CreateClusters(*sim_, clusters, f.subscriptions);
    WriteResourceDocuments();
    setup_seconds_ = Seconds(std::chrono::steady_clock::now() - t0);

    clusterservice::HttpClientOptions co;
    co.base_url = sim_->base_url();
    co.page_size = f.page_size;
    co.event_page_size = f.event_page_size;
    auto http = clusterservice::HttpClient::Create(co);
    if (!http.ok()) Die("client: " + http.error().ToString());
    http_ = std::move(*http);
    client_ = std::make_unique<WatchingClient>(http_.get());

    backend::BackendOptions bo;
    bo.version_resync = std::chrono::hours(1);  // the rollout runs on the release event
    if (f.write_concurrency) bo.version_write_concurrency = *f.write_concurrency;
    if (f.event_concurrency) bo.event_concurrency = *f.event_concurrency;
    if (f.concurrency) bo.version_concurrency = *f.concurrency;
    concurrency_ = "versions " + std::to_string(bo.version_concurrency) + " at once, their writes " +
                   std::to_string(bo.version_write_concurrency) + ", events " +
                   std::to_string(bo.event_concurrency);
    backend_ = StartBackend(bo, &counting_, client_.get(), clock, logger, clusters).backend;
    // The follower reads the creates' events (each a sync that changes nothing) before a rollout,
    // and the start-up passes (a resync, the orphan collector's listing of every object) end.
    client_->WaitFollowerCaughtUp();
    client_->WaitQuiet(std::chrono::milliseconds(1500));
  }
  ~Rig() {
    if (backend_) backend_->Stop();
    if (sim_) sim_->Stop();
  }
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  simulator::Simulator& sim() { return *sim_; }
  CountingStore& store() { return counting_; }
  WatchingClient& client() { return *client_; }
  size_t clusters() const { return clusters_; }
  double setup_seconds() const { return setup_seconds_; }
  const std::string& concurrency() const { return concurrency_; }

 private:
  // The documents as the frontend and the backend leave them after a create: the Cluster Service's
  // status fields already synced, so that a rollout's commits are its own.
  void WriteResourceDocuments() {
    for (const std::string& href : hrefs_) {
      json::value cluster = Call(*sim_, http::Verb::get, href);
      clusterservice::ServiceObject o = clusterservice::ParseServiceObject(cluster.as_object());
      if (!o.cluster_resource_id) Die(href + ": no ARM coordinates");
      arm::ResourceDocument d;
      d.resource_type = std::string(arm::kClusterDocType);
      d.resource_id = o.cluster_resource_id->ToString();
      d.internal_id = href;
      d.location = "westus3";
      d.provisioning_state = "Succeeded";
      d.service_status = clusterservice::SyncedStatusFields(o.status);
      const std::string pk = arm::PartitionKey(o.cluster_resource_id->subscription_id);
      auto r =
          store_.get()->Create(store::kResources, pk, arm::ResourceDocumentId(d.resource_id), d.ToBody());
      if (!r.ok()) Die("resource document: " + r.error().ToString());
    }
  }

  DayBehindClock service_clock_;
  const size_t clusters_;
  TempStore store_;
  CountingStore counting_;
  std::unique_ptr<simulator::Simulator> sim_;
  std::vector<std::string> hrefs_;
  std::unique_ptr<clusterservice::HttpClient> http_;
  std::unique_ptr<WatchingClient> client_;
  std::unique_ptr<backend::Backend> backend_;
  double setup_seconds_ = 0;
  std::string concurrency_;
};

struct Spread {
  double p50 = 0, p99 = 0, max = 0;
};

Spread SpreadOf(const std::unordered_map<std::string, SteadyTime>& marks, SteadyTime from) {
  std::vector<double> s;
  s.reserve(marks.size());
  for (const auto& [key, at] : marks) s.push_back(Seconds(at - from));
  Spread out;
  if (s.empty()) return out;
  std::sort(s.begin(), s.end());
  auto at = [&](double q) {
    return s[static_cast<size_t>(std::llround(q * static_cast<double>(s.size() - 1)))];
  };
  out.p50 = at(0.5);
  out.p99 = at(0.99);
  out.max = s.back();
  return out;
}

// One rollout of 4.20.<z>: the publication to every cluster's mark, and what it committed.
struct Rollout {
  Spread raised, completed, documented;  // from the publication
  bool finished = false;
  uint64_t resource_writes = 0, other_commits = 0, cluster_events = 0, state_changes = 0;
  double cpu_seconds = 0;
  double idle_seconds = 0;  // the machine's, while the rollout ran
};

Rollout RollOut(Rig& rig, int z) {
  rig.client().WaitFollowerCaughtUp();  // nothing of an earlier round is counted in this one
  const std::string raw = "4.20." + std::to_string(z);
  rig.client().Expect(raw, VersionIdOfZ(z));
  rig.store().Expect(raw);
  const uint64_t writes0 = rig.store().resource_writes(), other0 = rig.store().other_commits();
  const uint64_t events0 = rig.client().cluster_events(), changes0 = rig.client().state_changes();
  const double cpu0 = CpuSeconds();
  const double idle0 = MachineIdleSeconds();
  const SteadyTime t0 = std::chrono::steady_clock::now();
  Publish(rig.sim(), raw);
  Rollout r;
  r.finished = rig.store().done().Wait(rig.clusters(), std::chrono::seconds(300));
  r.cpu_seconds = CpuSeconds() - cpu0;
  r.idle_seconds = MachineIdleSeconds() - idle0;
  r.raised = SpreadOf(rig.client().raised().Snapshot(), t0);
  r.completed = SpreadOf(rig.client().completed().Snapshot(), t0);
  r.documented = SpreadOf(rig.store().done().Snapshot(), t0);
  // Whatever the rollout still commits after its last document (none expected) is counted too.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  r.resource_writes = rig.store().resource_writes() - writes0;
  r.other_commits = rig.store().other_commits() - other0;
  r.cluster_events = rig.client().cluster_events() - events0;
  r.state_changes = rig.client().state_changes() - changes0;
  WaitAllReady(rig.sim(), rig.clusters());
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Medians over the rounds, from the publication: the PATCH that raised the cluster answered; the event
// whose version history shows the release Completed read by the backend (the instant profile's
// upgrade steps take no time, so this can come before the PATCH's answer); the document committed.
struct CriticalPath {
  double total = 0, raised = 0, completed = 0;
  double min = 0, max = 0;
};

CriticalPath Baseline(const Flags& f, const Clock* clock, const Logger& logger) {
  Rig rig(f, 1, clock, logger);
  std::vector<double> total, raised, completed;
  for (size_t round = 0; round < f.baseline_rounds; ++round) {
    const Rollout r = RollOut(rig, kStartZ + 1 + static_cast<int>(round));
    if (!r.finished) Die("the baseline cluster did not finish its upgrade");
    total.push_back(r.documented.max);
    raised.push_back(r.raised.max);
    completed.push_back(r.completed.max);
    std::printf(
        "  baseline round %zu: document %s (raised %s, Completed on the event stream %s); %llu commits, %llu "
        "state changes, %llu events\n",
        round + 1, Ms(r.documented.max).c_str(), Ms(r.raised.max).c_str(), Ms(r.completed.max).c_str(),
        static_cast<unsigned long long>(r.resource_writes), static_cast<unsigned long long>(r.state_changes),
        static_cast<unsigned long long>(r.cluster_events));
  }
  CriticalPath c;
  c.min = *std::min_element(total.begin(), total.end());
  c.max = *std::max_element(total.begin(), total.end());
  c.total = Median(total);
  c.raised = Median(raised);
  c.completed = Median(completed);
  return c;
}

void PrintRollout(const Rollout& r, size_t n, const CriticalPath& c) {
  std::printf(
      "rollout of 4.20.%d to %zu clusters: %s every document shows it Completed (p50 %s, p99 %s)%s; "
      "raised p50 %s, max %s; upgrades Completed on the event stream p50 %s, max %s; CPU %.2f s\n",
      kStartZ + 1, n, Ms(r.documented.max).c_str(), Ms(r.documented.p50).c_str(),
      Ms(r.documented.p99).c_str(), r.finished ? "" : " (NOT ALL FINISHED within 300 s)",
      Ms(r.raised.p50).c_str(), Ms(r.raised.max).c_str(), Ms(r.completed.p50).c_str(),
      Ms(r.completed.max).c_str(), r.cpu_seconds);
  std::printf(
      "rollout / critical path: %.2f (against the baseline's median; %.2f against its fastest round)\n",
      r.documented.max / c.total, r.documented.max / c.min);
  // On P cores N independent chains cannot end before the longest chain, nor before their work has
  // had the cores: the rollout's critical path on this machine is the larger of the two. On a machine
  // shared with other work, P is the cores the process could have had: its CPU and the idle time.
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  const double wall = r.documented.max;
  const double usable = std::clamp((r.cpu_seconds + r.idle_seconds) / wall, 0.01, double(cores));
  const double bound = std::max(c.total, r.cpu_seconds / usable);
  std::printf(
      "critical path on this machine: %s (the larger of one cluster's %s and the rollout's CPU %.2f s, "
      "%.0f us a cluster, over the %.2f of %u cores it could have had); rollout / it: %.2f; the rollout "
      "kept %.2f cores busy\n",
      Ms(bound).c_str(), Ms(c.total).c_str(), r.cpu_seconds, 1e6 * r.cpu_seconds / static_cast<double>(n),
      usable, cores, wall / bound, r.cpu_seconds / wall);
  if (r.idle_seconds < 0.05 * wall) {
    std::printf(
        "  (the machine had no idle core time during the rollout: other work took every core the rollout "
        "did not, so this ratio is 1 by construction and says nothing)\n");
  }
  std::printf(
      "commits: %llu document writes for %llu state changes of the clusters (%llu events): %.2f a state "
      "change; %llu lease commits besides\n",
      static_cast<unsigned long long>(r.resource_writes), static_cast<unsigned long long>(r.state_changes),
      static_cast<unsigned long long>(r.cluster_events),
      r.state_changes == 0 ? 0.0
                           : static_cast<double>(r.resource_writes) / static_cast<double>(r.state_changes),
      static_cast<unsigned long long>(r.other_commits));
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  SystemClock clock;
  Logger logger(std::make_shared<StreamLogSink>(), &clock, LogLevel::kWarn);

  std::printf(
      "rollout_bench: instant profile, clusters at %s, %zu baseline rounds; page size %zu, event page size "
      "%zu\n",
      VersionIdOfZ(kStartZ).c_str(), f.baseline_rounds, f.page_size, f.event_page_size);
  const CriticalPath c = Baseline(f, &clock, logger);
  std::printf(
      "critical path (one cluster, median of %zu): %s (min %s, max %s); raised %s, Completed on the event "
      "stream %s\n",
      f.baseline_rounds, Ms(c.total).c_str(), Ms(c.min).c_str(), Ms(c.max).c_str(), Ms(c.raised).c_str(),
      Ms(c.completed).c_str());
  std::fflush(stdout);

  Rig rig(f, f.clusters, &clock, logger);
  std::printf(
      "setup: %zu clusters in %zu subscriptions created, ready and documented in %.1f s; backend: %s\n",
      f.clusters, f.subscriptions, rig.setup_seconds(), rig.concurrency().c_str());
  const Rollout r = RollOut(rig, kStartZ + 1);
  PrintRollout(r, f.clusters, c);
  std::fflush(stdout);
  return 0;
}
