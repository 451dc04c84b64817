// What the version benchmarks share: the Cluster Service simulator's clusters they create and
// upgrade, calls through the simulator's handler, a SQLite store in a temporary folder and a started
// backend::Backend (the programs' README.md says how each uses them).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "http/message.h"
#include "simulator/simulator.h"
#include "store/store.h"

namespace hcprp::bench {

using SteadyTime = std::chrono::steady_clock::time_point;

// The collection every cluster is created in, its channel group ("fast", so that one publication
// moves the tip) and the catalogue's newest 4.20 z-stream, which every cluster starts at.
extern const std::string kClusters;
inline constexpr std::string_view kGroup = "fast";
inline constexpr int kStartZ = 15;

// The Cluster Service's version.id of 4.20.<z> in kGroup.
std::string VersionIdOfZ(int z);

// Prints "<program>: <what>" to stderr and exits 1.
[[noreturn]] void Die(std::string_view program, const std::string& what);

double Seconds(std::chrono::steady_clock::duration d);
double CpuSeconds();  // user + system of the process
// Idle time of all the machine's cores together (/proc/stat; 0 where there is none): what other
// processes left unused. CPU of the process plus the idle time it saw, over the wall time, is how many
// cores the process could have had.
double MachineIdleSeconds();
std::string Ms(double);  // "123 ms"

// A call through the simulator's handler, without a socket; dies on an answer of 300 or above.
json::value Call(simulator::Simulator& sim, http::Verb verb, const std::string& target,
                 const std::string& body = "");
// How many clusters the simulator holds that match an OCM search.
int64_t CountWhere(simulator::Simulator& sim, std::string_view search);
// Cluster `c` of a run as the resource provider creates it, at 4.20.<kStartZ> in kGroup, in
// subscription c % subscriptions.
json::object ClusterBody(size_t c, size_t subscriptions);
// Creates `n` clusters (ClusterBody) and waits until all are ready; their hrefs.
std::vector<std::string> CreateClusters(simulator::Simulator& sim, size_t n, size_t subscriptions);
void WaitAllReady(simulator::Simulator& sim, size_t n);
// Publishes the release `raw` ("4.20.16") in every channel group (POST /control/versions).
void Publish(simulator::Simulator& sim, const std::string& raw);

// Where the backend's event follower has read the Cluster Service's event stream to, as its client
// sees the `after` of each WatchEvents call (the follower applies a page before it asks for the next).
// Thread-safe.
class FollowerPosition {
 public:
  void Note(uint64_t after);
  // Waits until the follower asked for events after the stream's newest event now (read through
  // `cs`), so that what is measured next has no earlier events still to read; the seconds it waited.
  // Dies after 600 s.
  double WaitCaughtUp(clusterservice::Client& cs);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t after_ = 0;
};

// A SQLite store (the RP's indexes) in a temporary folder removed with it.
class TempStore {
 public:
  explicit TempStore(const Clock* clock);
  ~TempStore();
  TempStore(const TempStore&) = delete;
  TempStore& operator=(const TempStore&) = delete;
  store::Store* get() const { return store_.get(); }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
};

// A started backend holding every shard, after one version pass that saw all `clusters` (none is
// raised: they run the tip). Dies when it cannot.
struct StartedBackend {
  std::unique_ptr<backend::Backend> backend;
  double shards_seconds = 0;  // from Start() to holding every shard
};
StartedBackend StartBackend(const backend::BackendOptions& options, store::Store* store,
                            clusterservice::Client* client, const Clock* clock, const Logger& logger,
                            size_t clusters);

}  // namespace hcprp::bench
