// Splitting URLs and listen addresses into their parts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace hcprp::http {

// Where to connect: a host name or IP literal (without brackets) and a port.
struct Endpoint {
  std::string host;
  uint16_t port = 0;

  // "host:port", with brackets around IPv6 literals; usable as a Host header.
  std::string ToString() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// An absolute http URL split into what a client needs.
struct Url {
  std::string scheme;  // "http" (lower case)
  Endpoint endpoint;   // port defaults to 80 for http, 443 for https
  std::string target;  // origin-form: path (at least "/") plus "?query" when present
};

// Parses "http://host[:port][/path][?query]". Anything that is not an absolute http(s) URL with a
// host is InvalidArgument. Fragments are dropped.
Result<Url> ParseUrl(std::string_view url);

// Parses a --listen value: "HOST:PORT", "[IPv6]:PORT", ":PORT" (all interfaces, "0.0.0.0") or
// "PORT". Port 0 asks for an ephemeral port. Out-of-range or missing ports are InvalidArgument.
Result<Endpoint> ParseListenAddress(std::string_view text);

// Splits an origin-form target into path and query ("/a/b?x=1" -> "/a/b", "x=1").
struct Target {
  std::string_view path;
  std::string_view query;
};
Target SplitTarget(std::string_view target);

// Percent-decodes a query component ('+' becomes a space). Invalid escapes are kept as they are.
std::string DecodeQueryComponent(std::string_view s);
// Percent-encodes everything except RFC 3986 unreserved characters.
std::string EncodeQueryComponent(std::string_view s);

struct QueryParam {
  std::string name;
  std::string value;
};
// All parameters of a query string in order, decoded.
std::vector<QueryParam> ParseQuery(std::string_view query);
// The first value of query parameter `name` (decoded), or nullopt.
std::optional<std::string> FindQueryParam(std::string_view query, std::string_view name);

}  // namespace hcprp::http
