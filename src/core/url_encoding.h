// Percent-encoding (RFC 3986) and query strings: the one codec that URL paths, query parameters and
// store URLs share.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace hcprp {

// Percent-encodes everything except RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~), with
// upper-case hex digits.
std::string EncodeQueryComponent(std::string_view s);

// Decodes a query component as browsers send it: '+' becomes a space and an escape that is not '%'
// followed by two hex digits is kept as it is. Never fails.
std::string DecodeQueryComponent(std::string_view s);

// Decodes a path or URL part strictly: every '%' must start an escape of two hex digits, else
// InvalidArgument; '+' stays '+'. The caller judges the decoded bytes (such as a '/' or NUL).
Result<std::string> PercentDecode(std::string_view s);

struct QueryParam {
  std::string name;
  std::string value;
};
// All parameters of a query string ("a=1&b&c=%20") in order, decoded with DecodeQueryComponent;
// empty parts ("a=1&&b") are skipped, a part without '=' has an empty value.
std::vector<QueryParam> ParseQuery(std::string_view query);
// The first value of query parameter `name` (decoded), or nullopt.
std::optional<std::string> FindQueryParam(std::string_view query, std::string_view name);

}  // namespace hcprp
