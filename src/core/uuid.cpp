#include "core/uuid.h"

#include <algorithm>
#include <array>
#include <boost/uuid/uuid.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <cstdint>
#include <cstring>
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

namespace {

// SHA-1 (FIPS 180-4), one message at a time. Every request that names a resource derives its
// document ID with it; Boost's generic generator cost about a sixth of the instructions of a GET.
class Sha1 {
 public:
  void Update(std::string_view data) {
    length_ += data.size();
    while (!data.empty()) {
      const size_t n = std::min(data.size(), 64 - filled_);
      std::memcpy(block_.data() + filled_, data.data(), n);
      filled_ += n;
      data.remove_prefix(n);
      if (filled_ == 64) Compress();
    }
  }
  std::array<uint8_t, 20> Final() {
    const uint64_t bits = length_ * 8;
    block_[filled_++] = 0x80;
    if (filled_ > 56) {
      std::fill(block_.begin() + static_cast<std::ptrdiff_t>(filled_), block_.end(), 0);
      Compress();
    }
    std::fill(block_.begin() + static_cast<std::ptrdiff_t>(filled_), block_.begin() + 56, 0);
    for (int i = 0; i < 8; ++i) block_[56 + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    Compress();
    std::array<uint8_t, 20> out{};
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
    }
    return out;
  }

 private:
  static uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
  // Four runs of 20 rounds, each with its own function and constant, over a 16-word window of the
  // message schedule.
  void Compress() {
    std::array<uint32_t, 16> w{};
    for (int i = 0; i < 16; ++i) {
      w[i] = static_cast<uint32_t>(block_[4 * i]) << 24 | static_cast<uint32_t>(block_[4 * i + 1]) << 16 |
             static_cast<uint32_t>(block_[4 * i + 2]) << 8 | static_cast<uint32_t>(block_[4 * i + 3]);
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    auto word = [&w](int i) {
      if (i < 16) return w[i];
      uint32_t x = Rotl(w[(i - 3) & 15] ^ w[(i - 8) & 15] ^ w[(i - 14) & 15] ^ w[i & 15], 1);
      w[i & 15] = x;
      return x;
    };
    auto round = [&](uint32_t f, uint32_t k, int i) {
      const uint32_t t = Rotl(a, 5) + f + e + k + word(i);
      e = d;
      d = c;
      c = Rotl(b, 30);
      b = a;
      a = t;
    };
    for (int i = 0; i < 20; ++i) round((b & c) | (~b & d), 0x5A827999, i);
    for (int i = 20; i < 40; ++i) round(b ^ c ^ d, 0x6ED9EBA1, i);
    for (int i = 40; i < 60; ++i) round((b & c) | (b & d) | (c & d), 0x8F1BBCDC, i);
    for (int i = 60; i < 80; ++i) round(b ^ c ^ d, 0xCA62C1D6, i);
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    filled_ = 0;
  }

  std::array<uint32_t, 5> h_{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::array<uint8_t, 64> block_{};
  size_t filled_ = 0;
  uint64_t length_ = 0;
};

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
  Sha1 sha;
  sha.Update(ns);
  sha.Update(name);
  std::array<uint8_t, 20> digest = sha.Final();
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
