#include "http/bearer.h"

#include <boost/beast/core/string.hpp>

namespace hcprp::http {

std::string_view BearerToken(const Request& request) {
  auto it = request.find(Field::authorization);
  if (it == request.end()) return {};
  std::string_view v = it->value();
  constexpr std::string_view kScheme = "bearer";
  if (v.size() <= kScheme.size() || !boost::beast::iequals(v.substr(0, kScheme.size()), kScheme)) return {};
  v.remove_prefix(kScheme.size());
  if (v.front() != ' ') return {};
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace hcprp::http
