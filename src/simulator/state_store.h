// Where the simulator keeps its objects across restarts. Private to the simulator.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace hcprp::simulator {

class StateDb;

// Thread-compatible (the service calls it under its lock).
class StateStore {
 public:
  using Documents = std::vector<std::pair<std::string, std::string>>;  // (key, JSON document)
  struct Snapshot {
    std::vector<std::string> documents;  // one JSON document per object
    uint64_t last_sequence = 0;
    Documents update_service;  // the update service's published releases and withdrawn edges
  };

  virtual ~StateStore() = default;
  virtual Result<Snapshot> Load() = 0;
  // One atomic change: object documents to write (by key), keys to delete, the event sequence reached
  // and update service documents to write (by key).
  virtual Status Commit(const Documents& puts, const std::vector<std::string>& deletes,
                        uint64_t last_sequence, const Documents& update_service) = 0;
};

// Keeps nothing: a simulator without --data-dir starts empty every time.
std::unique_ptr<StateStore> NewMemoryStateStore();

// The objects in space "object" of `state` (not owned), the event sequence in "meta", the update
// service's documents in "update_service".
std::unique_ptr<StateStore> NewStateStore(StateDb* state);

}  // namespace hcprp::simulator
