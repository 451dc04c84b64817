#include "store/postgres/pg_host_order.h"

#include <vector>

namespace hcprp::store::postgres {
namespace {

std::vector<std::string_view> SplitCommas(std::string_view s) {
  std::vector<std::string_view> parts;
  if (s.empty()) return parts;
  while (true) {
    size_t comma = s.find(',');
    parts.push_back(s.substr(0, comma));
    if (comma == std::string_view::npos) return parts;
    s = s.substr(comma + 1);
  }
}

enum class Place { kFirst, kLast };

// `parts` joined with commas, the one at `moved` put at `place` and the others in their order.
std::string JoinMoved(const std::vector<std::string_view>& parts, size_t moved, Place place) {
  std::string out;
  auto add = [&out](std::string_view part) {
    if (!out.empty()) out += ',';
    out += part;
  };
  if (place == Place::kFirst) add(parts[moved]);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i != moved) add(parts[i]);
  }
  if (place == Place::kLast) add(parts[moved]);
  return out;
}

std::optional<HostList> HostsWithMoved(const HostList& list, std::string_view host, std::string_view port,
                                       Place place) {
  auto hosts = SplitCommas(list.hosts);
  auto ports = SplitCommas(list.ports);
  const bool per_host = ports.size() > 1;
  if (hosts.size() < 2 || (per_host && ports.size() != hosts.size())) return std::nullopt;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i] != host || (per_host && ports[i] != port)) continue;
    return HostList{.hosts = JoinMoved(hosts, i, place),
                    .ports = per_host ? JoinMoved(ports, i, place) : list.ports};
  }
  return std::nullopt;
}

}  // namespace

std::optional<HostList> HostsWithFirst(const HostList& list, std::string_view host, std::string_view port) {
  return HostsWithMoved(list, host, port, Place::kFirst);
}

std::optional<HostList> HostsWithLast(const HostList& list, std::string_view host, std::string_view port) {
  return HostsWithMoved(list, host, port, Place::kLast);
}

HostOrder::HostOrder(const std::string& libpq_url) {
  PQconninfoOption* options = PQconninfoParse(libpq_url.c_str(), nullptr);
  if (options == nullptr) return;
  HostList list;
  bool hostaddr = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    std::string_view key = o->keyword;
    if (o->val == nullptr || *o->val == '\0') continue;
    if (key == "host") list.hosts = o->val;
    if (key == "port") list.ports = o->val;
    if (key == "hostaddr") hostaddr = true;
  }
  PQconninfoFree(options);
  if (!hostaddr && list.hosts.find(',') != std::string::npos) url_hosts_ = std::move(list);
}

std::optional<HostList> HostOrder::Preferred() const {
  MutexLock lk(mu_);
  return preferred_;
}

void HostOrder::Connected(PGconn* c) {
  const char* host = PQhost(c);
  const char* port = PQport(c);
  if (host != nullptr && port != nullptr) Connected(std::string_view(host), std::string_view(port));
}

void HostOrder::Unresponsive(PGconn* c) {
  const char* host = PQhost(c);
  const char* port = PQport(c);
  if (host != nullptr && port != nullptr) Unresponsive(std::string_view(host), std::string_view(port));
}

void HostOrder::Connected(std::string_view host, std::string_view port) {
  if (!url_hosts_) return;
  auto order = HostsWithFirst(*url_hosts_, host, port);
  MutexLock lk(mu_);
  preferred_ = std::move(order);
  if (unresponsive_ && unresponsive_->first == host && unresponsive_->second == port) unresponsive_.reset();
}

void HostOrder::Unresponsive(std::string_view host, std::string_view port) {
  if (!url_hosts_) return;
  MutexLock lk(mu_);
  // From the order in use, so that the server tried first after it is still the one that last worked.
  auto order = HostsWithLast(preferred_ ? *preferred_ : *url_hosts_, host, port);
  if (!order) return;
  preferred_ = std::move(order);
  unresponsive_.emplace(host, port);
}

bool HostOrder::Avoided(PGconn* c) const {
  const char* host = PQhost(c);
  const char* port = PQport(c);
  return host != nullptr && port != nullptr && Avoided(std::string_view(host), std::string_view(port));
}

bool HostOrder::Avoided(std::string_view host, std::string_view port) const {
  if (!url_hosts_) return false;  // one server: never avoided (every Release asks)
  MutexLock lk(mu_);
  return unresponsive_ && unresponsive_->first == host && unresponsive_->second == port;
}

}  // namespace hcprp::store::postgres
