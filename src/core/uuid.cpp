#include "core/uuid.h"

#include <openssl/evp.h>
#include <algorithm>
#include <array>
#include <boost/uuid/string_generator.hpp>
#include <boost/uuid/uuid.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>

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

namespace {

// The SHA-1 of `a` then `b`. Every request that names a resource derives its document ID with it:
// OpenSSL's takes about half the instructions of Boost's generic generator. The digest is fetched
// once and each thread keeps its context.
std::array<uint8_t, 20> Sha1(std::string_view a, std::string_view b) {
  static EVP_MD* const kFetched = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  const EVP_MD* md = kFetched != nullptr ? kFetched : EVP_sha1();
  struct CtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  std::array<uint8_t, 20> out{};
  unsigned int size = 0;
  if (ctx == nullptr || EVP_DigestInit_ex2(ctx.get(), md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), a.data(), a.size()) != 1 ||
      EVP_DigestUpdate(ctx.get(), b.data(), b.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &size) != 1 || size != out.size()) {
    throw std::runtime_error("SHA-1 digest failed");  // out of memory: the request fails, not the ID
  }
  return out;
}

}  // namespace

std::string UuidV5(std::string_view namespace_uuid, std::string_view name) {
  const boost::uuids::uuid ns_uuid = boost::uuids::string_generator()(std::string(namespace_uuid));
  const std::string_view ns(reinterpret_cast<const char*>(ns_uuid.data), sizeof ns_uuid.data);
  const std::array<uint8_t, 20> digest = Sha1(ns, name);
  boost::uuids::uuid u{};
  std::copy_n(digest.begin(), sizeof u.data, u.data);
  u.data[6] = static_cast<uint8_t>((u.data[6] & 0x0F) | 0x50);  // version 5
  u.data[8] = static_cast<uint8_t>((u.data[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return boost::uuids::to_string(u);
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
