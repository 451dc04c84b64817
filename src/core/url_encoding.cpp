#include "core/url_encoding.h"

namespace hcprp {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of the escape at s[i] ('%'), or -1 when s[i + 1] and s[i + 2] are not two hex digits.
int EscapeAt(std::string_view s, size_t i) {
  if (i + 2 >= s.size()) return -1;
  const int hi = HexValue(s[i + 1]);
  const int lo = HexValue(s[i + 2]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

}  // namespace

std::string EncodeQueryComponent(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (IsUnreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string DecodeQueryComponent(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const int byte = c == '%' ? EscapeAt(s, i) : -1;
    if (c == '+') {
      out += ' ';
    } else if (byte >= 0) {
      out += static_cast<char>(byte);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int byte = EscapeAt(s, i);
    if (byte < 0) return Error::InvalidArgument("bad percent-escape in URL");
    out += static_cast<char>(byte);
    i += 2;
  }
  return out;
}

std::vector<QueryParam> ParseQuery(std::string_view query) {
  std::vector<QueryParam> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      out.push_back({DecodeQueryComponent(part), ""});
    } else {
      out.push_back({DecodeQueryComponent(part.substr(0, eq)), DecodeQueryComponent(part.substr(eq + 1))});
    }
  }
  return out;
}

std::optional<std::string> FindQueryParam(std::string_view query, std::string_view name) {
  for (auto& p : ParseQuery(query)) {
    if (p.name == name) return std::move(p.value);
  }
  return std::nullopt;
}

}  // namespace hcprp
