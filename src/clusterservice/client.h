// The Cluster Service as the resource provider sees it: an OCM-style REST service under
// /api/aro_hcp/v1alpha1. Objects are JSON with "kind", "id" and "href"; an object's href is what the
// RP stores as its "internal ID" (e.g. /api/aro_hcp/v1alpha1/clusters/{id}/node_pools/{id}).
//
// Implementations: HttpClient (http_client.h) talks to a real service or the simulator; tests use
// an in-memory fake. All methods are thread-safe and blocking.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clusterservice/event.h"
#include "core/json.h"
#include "core/result.h"

namespace hcprp::clusterservice {

inline constexpr std::string_view kApiPrefix = "/api/aro_hcp/v1alpha1";

// Errors: kNotFound for 404; kInvalidArgument for 400 (message carries the OCM reason);
// kConflict for 409; kUnavailable for 5xx and connection failures after retries; kTimeout.
class Client {
 public:
  virtual ~Client() = default;

  // POST to a collection (".../clusters", ".../clusters/{id}/node_pools",
  // ".../clusters/{id}/external_auth_configs"). A repeated call with the same idempotency key
  // returns the object the first call created instead of creating another.
  virtual Result<json::object> Create(std::string_view collection_href, const json::object& body,
                                      std::string_view idempotency_key) = 0;
  virtual Result<json::object> Get(std::string_view href) = 0;
  // GET {href}/status: {"state": ..., "provision_error_code": ..., "provision_error_message": ...}.
  virtual Result<json::object> GetStatus(std::string_view href) = 0;
  virtual Result<json::object> Update(std::string_view href, const json::object& patch) = 0;
  virtual Status Delete(std::string_view href) = 0;
  // POST {href}/{action} (e.g. "request_admin_credential", "revoke_credentials").
  virtual Result<json::object> Action(std::string_view href, std::string_view action,
                                      const json::object& body) = 0;
  // GET on a collection with OCM paging and an optional search expression.
  virtual Result<json::array> List(std::string_view collection_href, std::string_view search = "") = 0;

  // Events after `after`, waiting up to `timeout` for the first one (an empty page when none came).
  // A Cluster Service without an event stream answers kUnavailable; callers then fall back to
  // polling. kPreconditionFailed means `after` is no longer in the service's history (the caller
  // fell too far behind, or the service restarted): resync by calling WatchEvents(kLatestEvents, 0)
  // for a starting sequence, then listing, then continuing from that sequence.
  virtual Result<EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) = 0;
};

}  // namespace hcprp::clusterservice
