#include "arm/paging.h"

#include <array>
#include <cstdint>

namespace hcprp::arm {
namespace {
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int DecodeChar(char c) {
  auto pos = kAlphabet.find(c);
  return pos == std::string_view::npos ? -1 : static_cast<int>(pos);
}
}  // namespace

std::string EncodeSkipToken(std::string_view in) {
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (unsigned char c : in) {
    buf = (buf << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(buf >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buf << (6 - bits)) & 0x3f]);
  return out;
}

Result<std::string> DecodeSkipToken(std::string_view token) {
  if (token.empty() || token.size() % 4 == 1) return Error::InvalidArgument("malformed $skipToken");
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (char c : token) {
    int v = DecodeChar(c);
    if (v < 0) return Error::InvalidArgument("malformed $skipToken");
    buf = (buf << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  // Leftover bits must be zero padding, or the token was not produced by EncodeSkipToken.
  if ((buf & ((1u << bits) - 1)) != 0) return Error::InvalidArgument("malformed $skipToken");
  return out;
}

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

std::string NextLink(std::string_view base_url, std::string_view path, std::string_view api_version,
                     std::optional<size_t> top, std::string_view skip_token) {
  std::string link(base_url);
  link += path;
  link += "?api-version=" + PercentEncode(api_version);
  if (top) link += "&$top=" + std::to_string(*top);
  link += "&$skipToken=" + PercentEncode(skip_token);
  return link;
}

}  // namespace hcprp::arm
