#include "core/uuid.h"

#include <openssl/evp.h>
#include <algorithm>
#include <array>
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
// OpenSSL's is less than half the instructions of Boost's generic generator. The digest is fetched
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

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string UuidV5(std::string_view namespace_uuid, std::string_view name) {
  // The namespace's 16 bytes (its hex digits; a malformed one hashes what it has, as a fixed input).
  std::string ns;
  ns.reserve(16);
  int high = -1;
  for (char c : namespace_uuid) {
    const int v = HexValue(c);
    if (v < 0) continue;
    if (high < 0) {
      high = v;
    } else {
      ns += static_cast<char>(high << 4 | v);
      high = -1;
    }
  }
  std::array<uint8_t, 20> digest = Sha1(ns, name);
  digest[6] = static_cast<uint8_t>((digest[6] & 0x0F) | 0x50);  // version 5
  digest[8] = static_cast<uint8_t>((digest[8] & 0x3F) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0x0F];
  }
  return out;
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
