#include "core/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hcprp {
namespace {

TEST(Base64, StandardPaddedRoundTrips) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
  for (const std::string& s :
       std::vector<std::string>{"", "f", "fo", "foo", "foob", std::string("\0\xff\x10", 3)}) {
    auto back = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(back.ok()) << s;
    EXPECT_EQ(*back, s);
  }
}

TEST(Base64, StandardDecodeTakesOnlyWhatTheEncoderMakes) {
  EXPECT_FALSE(Base64Decode("Zm9").ok());
  EXPECT_FALSE(Base64Decode("Z!==").ok());
  EXPECT_FALSE(Base64Decode("Zg=a").ok());    // padding inside
  EXPECT_FALSE(Base64Decode("Z===").ok());    // three padding characters
  EXPECT_FALSE(Base64Decode("Zh==").ok());    // nonzero bits after the last byte
  EXPECT_FALSE(Base64Decode("Zm9v\n").ok());  // whitespace
  EXPECT_FALSE(Base64Decode("-_8=").ok());    // the URL-safe alphabet
}

TEST(Base64, UrlSafeUnpaddedRoundTrips) {
  EXPECT_EQ(Base64UrlEncode(""), "");
  EXPECT_EQ(Base64UrlEncode("f"), "Zg");
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");
  for (std::string s : {"a", "ab", "abc", "abcd", "{\"k\":\"\xff\x00z\"}", "0123456789"}) {
    auto back = Base64UrlDecode(Base64UrlEncode(s));
    ASSERT_TRUE(back.ok()) << s;
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(Base64UrlDecode("a").ok());     // 4n+1 characters
  EXPECT_FALSE(Base64UrlDecode("ab$d").ok());  // outside the alphabet
  EXPECT_FALSE(Base64UrlDecode("Zg==").ok());  // padded
  EXPECT_FALSE(Base64UrlDecode("+/8").ok());   // the standard alphabet
  EXPECT_FALSE(Base64UrlDecode("Zh").ok());    // nonzero bits after the last byte
}

}  // namespace
}  // namespace hcprp
