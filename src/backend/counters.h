// The backend's event counters (private to src/backend), shared by its parts and read by Stats().
#pragma once

#include <atomic>
#include <cstdint>

namespace hcprp::backend {

struct Counters {
  std::atomic<uint64_t> full_resyncs{0}, feed_changes{0}, events_received{0}, events_applied{0}, checks{0},
      cs_creates{0}, cs_deletes{0}, transitions{0}, terminal{0}, deadline_failures{0}, recovered_creates{0},
      implicit_deletes{0}, resources_deleted{0}, gc_deleted{0}, gc_held{0}, fence_refusals{0},
      write_conflicts{0}, errors{0}, idle_condition_syncs{0}, checks_running{0}, sweeps_finished{0},
      recovered_updates{0};
};

}  // namespace hcprp::backend
