// Paging of ARM list responses: {"value": [...], "nextLink": "<absolute URL>"}. The $skipToken is the
// store's continuation, base64url-encoded so that it is safe in a URL.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace hcprp::arm {

inline constexpr size_t kDefaultPageSize = 100;
inline constexpr size_t kMaxPageSize = 1000;

std::string EncodeSkipToken(std::string_view continuation);
// InvalidArgument for anything EncodeSkipToken did not produce.
Result<std::string> DecodeSkipToken(std::string_view token);

// {base_url}{path}?api-version=..&$top=..&$skipToken=.. (query values percent-encoded).
std::string NextLink(std::string_view base_url, std::string_view path, std::string_view api_version,
                     std::optional<size_t> top, std::string_view skip_token);

}  // namespace hcprp::arm
