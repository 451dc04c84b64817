#include "backend/subscription_sweeper.h"

#include <utility>
#include <vector>

#include "backend/documents.h"

namespace hcprp::backend {

void SubscriptionSweeper::OnDeleted(const std::string& pk) {
  MutexLock lock(mu_);
  sweeps_.try_emplace(pk, Sweep{});
}

size_t SubscriptionSweeper::Active() const {
  MutexLock lock(mu_);
  return sweeps_.size();
}

void SubscriptionSweeper::Run(bool exhaustive) {
  TimePoint now = clock_->Now();
  std::vector<std::pair<std::string, Sweep>> due;
  {
    MutexLock lock(mu_);
    for (const auto& [pk, s] : sweeps_) {
      if (exhaustive || s.due <= now) due.emplace_back(pk, s);
    }
  }
  for (auto& [pk, sweep] : due) {
    if (!ownership_->FenceFor(pk)) continue;  // its shard's owner sweeps it
    bool failed = false;
    do {
      if (Status st = Page(pk, &sweep); !st.ok()) {
        ++counters_->errors;
        failed = true;
        break;
      }
    } while (exhaustive && !sweep.continuation.empty());
    MutexLock lock(mu_);
    if (!failed && sweep.continuation.empty()) {
      if (!sweep.found_any) {
        sweeps_.erase(pk);
        ++counters_->sweeps_finished;
        logger_->Info("deleted subscription is empty", {{"subscription", pk}});
        continue;
      }
      sweep.found_any = false;
      sweep.due = now + options_.revisit;  // look again for stragglers later
    }
    sweeps_[pk] = sweep;
  }
}

Status SubscriptionSweeper::Page(const std::string& pk, Sweep* sweep) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = pk;
  q.resource_id_prefix = "/subscriptions/";
  q.max_items = options_.page_size;
  q.continuation = sweep->continuation;
  HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, store_->Query(q));
  for (const store::Document& doc : page.documents) {
    if (!IsResourceDocument(doc.body)) continue;
    sweep->found_any = true;
    ensure_delete_(doc);
  }
  sweep->continuation = page.continuation;
  return Status::Ok();
}

}  // namespace hcprp::backend
