// Base64 (RFC 4648): the standard alphabet with padding, for certificates and kubeconfig *-data fields,
// and the URL-safe alphabet without padding, for tokens carried in URLs. Decoding is strict: only text
// the matching encoder could have produced decodes.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace hcprp {

// Standard alphabet (A-Z a-z 0-9 + /), padded with '=' to a multiple of 4 characters.
std::string Base64Encode(std::string_view bytes);
// The bytes of standard, padded base64; InvalidArgument for anything else (whitespace included).
Result<std::string> Base64Decode(std::string_view text);

// URL-safe alphabet (A-Z a-z 0-9 - _), without padding.
std::string Base64UrlEncode(std::string_view bytes);
// The bytes of URL-safe, unpadded base64; InvalidArgument for anything else.
Result<std::string> Base64UrlDecode(std::string_view text);

}  // namespace hcprp
