// The Notifier that POSTs operation status resources over HTTP (src/http's client).
#pragma once

#include <chrono>

#include "backend/notifier.h"
#include "http/client.h"

namespace hcprp::backend {

// Thread-safe (http::Client is). A 2xx answer is success; anything else, or a transport error, is
// an error the NotificationQueue retries. Only http:// URIs are reachable with http::Client.
class HttpNotifier final : public Notifier {
 public:
  // `client` is not owned and must outlive the notifier.
  explicit HttpNotifier(http::Client* client, std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : client_(client), timeout_(timeout) {}

  Status Notify(std::string_view uri, const json::object& body) override;

 private:
  http::Client* const client_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace hcprp::backend
