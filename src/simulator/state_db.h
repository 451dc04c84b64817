// The one database of the Cluster Service simulator (DATA_DIR/simulator.db): the simulator's objects,
// the provisioning engine's objects and units, and the simulated Azure's resources and operations live
// in it as JSON documents keyed by (space, key). Whatever one step changes across them is written by one
// Commit(): one SQLite transaction, so that after a crash at any instant the parts agree.
// Not the RP's store: nothing outside the simulator reads it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace hcprp::simulator {

// The changes of one step, applied in order by StateDb::Commit.
class StateBatch {
 public:
  struct Change {
    std::string space, key;
    std::optional<std::string> doc;  // nullopt: delete
  };
  void Put(std::string space, std::string key, std::string doc) {
    changes_.push_back(Change{std::move(space), std::move(key), std::move(doc)});
  }
  void Delete(std::string space, std::string key) {
    changes_.push_back(Change{std::move(space), std::move(key), std::nullopt});
  }
  bool empty() const { return changes_.empty(); }
  const std::vector<Change>& changes() const { return changes_; }

 private:
  std::vector<Change> changes_;
};

// Thread-safe: one writing connection; concurrent commits share a transaction.
class StateDb {
 public:
  // Opens (creating when missing) DIR/simulator.db in WAL mode. A database written before the
  // engine's state moved into it (objects and meta tables) is converted in place.
  static Result<std::unique_ptr<StateDb>> Open(const std::string& dir);
  virtual ~StateDb() = default;

  // Every (key, doc) of a space, in key order.
  virtual Result<std::vector<std::pair<std::string, std::string>>> Load(std::string_view space) = 0;
  // Durable as one transaction (possibly shared with batches committed at the same time); nothing of
  // it is written when it fails. An empty batch is a no-op.
  virtual Status Commit(const StateBatch& batch) = 0;
  // Commits so far (for tests and benchmarks).
  virtual uint64_t commits() const = 0;
  const std::string& dir() const { return dir_; }

 protected:
  explicit StateDb(std::string dir) : dir_(std::move(dir)) {}

 private:
  std::string dir_;
};

}  // namespace hcprp::simulator
