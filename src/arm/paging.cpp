#include "arm/paging.h"

#include "core/base64.h"
#include "core/url_encoding.h"

namespace hcprp::arm {

std::string EncodeSkipToken(std::string_view continuation) { return Base64UrlEncode(continuation); }

Result<std::string> DecodeSkipToken(std::string_view token) {
  auto bytes = Base64UrlDecode(token);
  if (token.empty() || !bytes.ok()) return Error::InvalidArgument("malformed $skipToken");
  return bytes;
}

std::string NextLink(std::string_view base_url, std::string_view path, std::string_view api_version,
                     std::optional<size_t> top, std::string_view skip_token) {
  std::string link(base_url);
  link += path;
  link += "?api-version=" + EncodeQueryComponent(api_version);
  if (top) link += "&$top=" + std::to_string(*top);
  link += "&$skipToken=" + EncodeQueryComponent(skip_token);
  return link;
}

}  // namespace hcprp::arm
