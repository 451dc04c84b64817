// The event log's REST side: the long-polled event stream.
#include <algorithm>

#include "http/url.h"
#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;

namespace {

// An EventList of recorded events (never changed once recorded, so read without the service's lock).
std::string EventListJson(const std::vector<std::shared_ptr<const json::object>>& items, uint64_t last) {
  std::string text = R"({"kind":"EventList","items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += ',';
    text += json::serialize(*items[i]);  // not ToJson: it would copy the object into a value
  }
  text += R"(],"last_sequence":)" + std::to_string(last) + "}";
  return text;
}

}  // namespace

http::Response Service::WatchEvents(std::string_view query) {
  std::optional<uint64_t> after;
  bool latest = false;
  std::chrono::milliseconds timeout{0};
  size_t limit = 1000;
  for (const auto& p : http::ParseQuery(query)) {
    if (p.name == "after") {
      if (p.value == "latest") {
        latest = true;
      } else if (auto v = ParseInt(p.value); v && *v >= 0) {
        after = static_cast<uint64_t>(*v);
      } else {
        return OcmError(StatusCode::bad_request, "after must be a sequence number or 'latest'");
      }
    } else if (p.name == "timeout") {
      auto v = ParseInt(p.value);
      if (!v || *v < 0)
        return OcmError(StatusCode::bad_request, "timeout must be a non-negative number of milliseconds");
      timeout = std::min(std::chrono::milliseconds(*v), options_.max_watch);
    } else if (p.name == "limit") {
      auto v = ParseInt(p.value);
      if (!v || *v < 1) return OcmError(StatusCode::bad_request, "limit must be a positive integer");
      limit = static_cast<size_t>(*v);
    }
  }
  std::vector<std::shared_ptr<const json::object>> items;
  uint64_t last = 0;
  {
    MutexLock lock(mu_);
    if (latest) {
      return Ocm(
          StatusCode::ok,
          json::object{{"kind", "EventList"}, {"items", json::array{}}, {"last_sequence", last_sequence_}});
    }
    const uint64_t from = after.value_or(0);
    auto gone = [&]() HCPRP_REQUIRES(mu_) {
      json::object body{
          {"kind", "Error"},
          {"id", "410"},
          {"href", std::string(kApiPrefix) + "/errors/410"},
          {"code", "CLUSTERS-MGMT-410"},
          {"reason", "Events after sequence " + std::to_string(from) +
                         " are no longer available; list the objects and resume from last_sequence"},
          {"last_sequence", last_sequence_}};
      return Ocm(StatusCode::gone, body);
    };
    if (from > last_sequence_ || from < first_retained_) return gone();
    events_cv_.WaitFor(lock, timeout,
                       [&]() HCPRP_REQUIRES(mu_) { return last_sequence_ > from || shutdown_.load(); });
    if (from < first_retained_) return gone();
    last = from;
    // history_ is ordered by sequence: find the first event after `from`.
    auto it = std::lower_bound(history_.begin(), history_.end(), from + 1,
                               [](const EventRecord& e, uint64_t s) { return e.sequence < s; });
    for (; it != history_.end() && items.size() < limit; ++it) {
      items.push_back(it->item);
      last = it->sequence;
    }
  }
  // Written out after the lock is released: a large page must not hold up the service's writes.
  return http::JsonResponse(StatusCode::ok, EventListJson(items, last));
}

}  // namespace hcprp::simulator
