// The order in which the servers of a multi-host URL are tried. libpq tries the hosts of
// postgresql://u@h1:p1,h2:p2/db in the order written and waits connect_timeout for each one that
// does not answer, so once h2 is the primary and h1's machine is gone or cut off (no refusal, just
// silence), every new connection would first wait connect_timeout for h1. HostOrder remembers the
// server that last gave a session and has it tried first; the others follow in the URL's order, so
// a later failover is still found. A server that stopped answering in the middle of a session (a
// query timed out: a primary cut off from its synchronous standby waits for it for ever) goes to the
// back instead, so that once the standby is promoted new sessions reach it before the old primary.
#pragma once

#include <libpq-fe.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/mutex.h"

namespace hcprp::store::postgres {

// libpq's comma-separated "host" and "port" values.
struct HostList {
  std::string hosts;
  std::string ports;  // one per host, or one (or none) for all
  bool operator==(const HostList&) const = default;
};

// `list` with the server `host` (at `port`, when the list names one port per host) moved to the
// front and the others in their order; nullopt when that server is not in the list, the list names
// one host only, or its ports do not pair up with its hosts.
std::optional<HostList> HostsWithFirst(const HostList& list, std::string_view host, std::string_view port);
// The same with that server moved to the back.
std::optional<HostList> HostsWithLast(const HostList& list, std::string_view host, std::string_view port);

// Thread-safe.
class HostOrder {
 public:
  // The hosts and ports of `libpq_url` as libpq reads them. A URL with one host, or with hostaddr,
  // keeps its own order.
  explicit HostOrder(const std::string& libpq_url);

  // The "host" and "port" values to give libpq after the URL, or nullopt for the URL's own order.
  std::optional<HostList> Preferred() const;
  // Records the server of a session just opened on `c`: it is tried first.
  void Connected(PGconn* c);
  // Records that the server of `c` did not answer a query in time: it is tried last.
  void Unresponsive(PGconn* c);
  // The same, by the server's host and port.
  void Connected(std::string_view host, std::string_view port);
  void Unresponsive(std::string_view host, std::string_view port);
  // True when `c`'s server is the one last found unresponsive and no session has opened on it since:
  // the pool then closes `c` instead of keeping it, so that the next session tries the others first.
  bool Avoided(PGconn* c) const;
  bool Avoided(std::string_view host, std::string_view port) const;

 private:
  std::optional<HostList> url_hosts_;  // constant after construction; nullopt: nothing to reorder

  mutable Mutex mu_;
  std::optional<HostList> preferred_ HCPRP_GUARDED_BY(mu_);
  std::optional<std::pair<std::string, std::string>> unresponsive_ HCPRP_GUARDED_BY(mu_);  // host, port
};

}  // namespace hcprp::store::postgres
