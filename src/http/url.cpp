#include "http/url.h"

#include <boost/url/parse.hpp>
#include <charconv>

#include "core/json.h"

namespace hcprp::http {

std::string Endpoint::ToString() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

namespace {

Result<uint16_t> ParsePort(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v > 65535) {
    return Error::InvalidArgument("invalid port '" + std::string(s) + "'");
  }
  return static_cast<uint16_t>(v);
}

}  // namespace

Result<Url> ParseUrl(std::string_view text) {
  auto r = boost::urls::parse_uri(text);
  if (!r) return Error::InvalidArgument("invalid URL '" + std::string(text) + "': " + r.error().message());
  const auto& u = *r;
  Url out;
  out.scheme = ToLower(u.scheme());
  if (out.scheme != "http" && out.scheme != "https") {
    return Error::InvalidArgument("unsupported URL scheme '" + out.scheme + "'");
  }
  if (!u.has_authority() || u.encoded_host().empty()) {
    return Error::InvalidArgument("URL without host '" + std::string(text) + "'");
  }
  if (u.host_type() == boost::urls::host_type::ipv6) {
    out.endpoint.host = std::string(u.encoded_host_address());
  } else {
    out.endpoint.host = std::string(u.encoded_host());
  }
  if (u.has_port()) {
    HCPRP_ASSIGN_OR_RETURN(auto p, ParsePort(u.port()));
    out.endpoint.port = p;
  } else {
    out.endpoint.port = out.scheme == "https" ? 443 : 80;
  }
  out.target = std::string(u.encoded_path());
  if (out.target.empty()) out.target = "/";
  if (u.has_query()) {
    out.target += '?';
    out.target.append(u.encoded_query().data(), u.encoded_query().size());
  }
  return out;
}

Result<Endpoint> ParseListenAddress(std::string_view text) {
  Endpoint ep;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Error::InvalidArgument("invalid listen address '" + std::string(text) + "'");
    }
    ep.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) {
      return Error::InvalidArgument("IPv6 listen addresses need brackets: '" + std::string(text) + "'");
    }
    ep.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  } else {
    port = text;
  }
  if (ep.host.empty()) ep.host = "0.0.0.0";
  auto p = ParsePort(port);
  if (!p.ok()) {
    return Error::InvalidArgument("invalid listen address '" + std::string(text) +
                                  "': " + p.error().message());
  }
  ep.port = *p;
  return ep;
}

Target SplitTarget(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

}  // namespace hcprp::http
