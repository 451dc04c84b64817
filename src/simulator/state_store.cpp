#include "simulator/state_store.h"

#include <string_view>

#include "simulator/state_db.h"

namespace hcprp::simulator {
namespace {

constexpr std::string_view kObjectSpace = "object";
constexpr std::string_view kMetaSpace = "meta";
constexpr std::string_view kLastSequence = "last_sequence";
constexpr std::string_view kUpdateServiceSpace = "update_service";

class MemoryStateStore final : public StateStore {
 public:
  Result<Snapshot> Load() override { return Snapshot{}; }
  Status Commit(const Documents&, const std::vector<std::string>&, uint64_t, const Documents&) override {
    return Status::Ok();
  }
};

class DbStateStore final : public StateStore {
 public:
  explicit DbStateStore(StateDb* db) : db_(db) {}

  Result<Snapshot> Load() override {
    Snapshot snap;
    HCPRP_ASSIGN_OR_RETURN(auto docs, db_->Load(kObjectSpace));
    for (auto& [key, doc] : docs) snap.documents.push_back(std::move(doc));
    HCPRP_ASSIGN_OR_RETURN(auto meta, db_->Load(kMetaSpace));
    for (const auto& [key, value] : meta) {
      if (key == kLastSequence) snap.last_sequence = std::stoull(value);
    }
    HCPRP_ASSIGN_OR_RETURN(snap.update_service, db_->Load(kUpdateServiceSpace));
    return snap;
  }

  Status Commit(const Documents& puts, const std::vector<std::string>& deletes, uint64_t last_sequence,
                const Documents& update_service) override {
    StateBatch batch;
    for (const auto& [key, doc] : puts) batch.Put(std::string(kObjectSpace), key, doc);
    for (const auto& key : deletes) batch.Delete(std::string(kObjectSpace), key);
    for (const auto& [key, doc] : update_service) batch.Put(std::string(kUpdateServiceSpace), key, doc);
    batch.Put(std::string(kMetaSpace), std::string(kLastSequence), std::to_string(last_sequence));
    return db_->Commit(batch);
  }

 private:
  StateDb* db_;
};

}  // namespace

std::unique_ptr<StateStore> NewMemoryStateStore() { return std::make_unique<MemoryStateStore>(); }

std::unique_ptr<StateStore> NewStateStore(StateDb* state) { return std::make_unique<DbStateStore>(state); }

}  // namespace hcprp::simulator
