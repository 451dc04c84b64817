// Splitting URLs and listen addresses into their parts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/url_encoding.h"

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

// Query strings are decoded and encoded by core/url_encoding.h, which modules without an HTTP transport
// (the frontend's router) share; they are part of this module's vocabulary too.
using hcprp::DecodeQueryComponent;
using hcprp::EncodeQueryComponent;
using hcprp::FindQueryParam;
using hcprp::ParseQuery;
using hcprp::QueryParam;

}  // namespace hcprp::http
