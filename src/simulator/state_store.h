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
  struct Snapshot {
    std::vector<std::string> documents;  // one JSON document per object
    uint64_t last_sequence = 0;
  };

  virtual ~StateStore() = default;
  virtual Result<Snapshot> Load() = 0;
  // One atomic change: documents to write (by key), keys to delete, and the event sequence reached.
  virtual Status Commit(const std::vector<std::pair<std::string, std::string>>& puts,
                        const std::vector<std::string>& deletes, uint64_t last_sequence) = 0;
};

// Keeps nothing: a simulator without --data-dir starts empty every time.
std::unique_ptr<StateStore> NewMemoryStateStore();

// The objects in space "object" of `state` (not owned), the event sequence in "meta".
std::unique_ptr<StateStore> NewStateStore(StateDb* state);

}  // namespace hcprp::simulator
