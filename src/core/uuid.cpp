#include "core/uuid.h"

#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/string_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <random>

namespace hcprp {

std::string NewUuidV4() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  boost::uuids::uuid u{};
  uint64_t a = rng();
  uint64_t b = rng();
  for (int i = 0; i < 8; ++i) {
    u.data[i] = static_cast<uint8_t>(a >> (i * 8));
    u.data[8 + i] = static_cast<uint8_t>(b >> (i * 8));
  }
  u.data[6] = static_cast<uint8_t>((u.data[6] & 0x0F) | 0x40);  // version 4
  u.data[8] = static_cast<uint8_t>((u.data[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return boost::uuids::to_string(u);
}

std::string UuidV5(std::string_view namespace_uuid, std::string_view name) {
  boost::uuids::string_generator parse;
  boost::uuids::name_generator_sha1 gen(parse(std::string(namespace_uuid)));
  return boost::uuids::to_string(gen(name.data(), name.size()));
}

bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace hcprp
