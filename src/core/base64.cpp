#include "core/base64.h"

#include <array>
#include <cstdint>

namespace hcprp {
namespace {

constexpr std::string_view kStandard = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr uint8_t kNotInAlphabet = 0xff;

// The value of each byte in `alphabet`, kNotInAlphabet for bytes outside it.
constexpr std::array<uint8_t, 256> ValuesOf(std::string_view alphabet) {
  std::array<uint8_t, 256> values{};
  values.fill(kNotInAlphabet);
  for (size_t i = 0; i < alphabet.size(); ++i) {
    values[static_cast<unsigned char>(alphabet[i])] = static_cast<uint8_t>(i);
  }
  return values;
}
constexpr std::array<uint8_t, 256> kStandardValues = ValuesOf(kStandard);
constexpr std::array<uint8_t, 256> kUrlSafeValues = ValuesOf(kUrlSafe);

std::string Encode(std::string_view bytes, std::string_view alphabet, bool pad) {
  std::string out;
  out.reserve(4 * ((bytes.size() + 2) / 3));
  uint32_t buf = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buf = (buf << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(buf >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += alphabet[(buf << (6 - bits)) & 0x3f];
  if (pad) {
    while (out.size() % 4 != 0) out += '=';
  }
  return out;
}

// Decodes unpadded text; the bits left over after the last whole byte must be zero.
Result<std::string> Decode(std::string_view text, const std::array<uint8_t, 256>& values) {
  if (text.size() % 4 == 1) return Error::InvalidArgument("not base64: a length of 4n+1 characters");
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t buf = 0;
  int bits = 0;
  for (char c : text) {
    const uint8_t v = values[static_cast<unsigned char>(c)];
    if (v == kNotInAlphabet) return Error::InvalidArgument("not base64: a character outside its alphabet");
    buf = (buf << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buf >> bits) & 0xff);
    }
  }
  if ((buf & ((1U << bits) - 1)) != 0) return Error::InvalidArgument("not base64: nonzero padding bits");
  return out;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) { return Encode(bytes, kStandard, true); }

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return Error::InvalidArgument("base64 text of a length not a multiple of 4");
  std::string_view unpadded = text;
  for (int i = 0; i < 2 && !unpadded.empty() && unpadded.back() == '='; ++i) unpadded.remove_suffix(1);
  return Decode(unpadded, kStandardValues);
}

std::string Base64UrlEncode(std::string_view bytes) { return Encode(bytes, kUrlSafe, false); }

Result<std::string> Base64UrlDecode(std::string_view text) { return Decode(text, kUrlSafeValues); }

}  // namespace hcprp
