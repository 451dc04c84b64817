#include "core/url_encoding.h"

#include <gtest/gtest.h>

#include <string>

namespace hcprp {
namespace {

TEST(UrlEncoding, EncodeKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(EncodeQueryComponent("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(EncodeQueryComponent("a b/'=%+"), "a%20b%2F%27%3D%25%2B");
  EXPECT_EQ(EncodeQueryComponent(std::string("\0\xff", 2)), "%00%FF");
  EXPECT_EQ(DecodeQueryComponent(EncodeQueryComponent("a b/'=%")), "a b/'=%");
}

TEST(UrlEncoding, QueryComponentDecodingIsLenient) {
  EXPECT_EQ(DecodeQueryComponent("a+b%20c%2fd"), "a b c/d");
  EXPECT_EQ(DecodeQueryComponent("%41"), "A");
  EXPECT_EQ(DecodeQueryComponent("100%"), "100%");
  EXPECT_EQ(DecodeQueryComponent("%4"), "%4");
  EXPECT_EQ(DecodeQueryComponent("%zz%4g"), "%zz%4g");
}

TEST(UrlEncoding, PercentDecodeIsStrict) {
  EXPECT_EQ(PercentDecode("a+b%20c%2Fd").value_or("?"), "a+b c/d");
  EXPECT_EQ(PercentDecode("%00").value_or("?"), std::string(1, '\0'));
  EXPECT_EQ(PercentDecode("").value_or("?"), "");
  EXPECT_FALSE(PercentDecode("100%").ok());
  EXPECT_FALSE(PercentDecode("%4").ok());
  EXPECT_FALSE(PercentDecode("a%zzb").ok());
  EXPECT_FALSE(PercentDecode("%4g").ok());
}

TEST(UrlEncoding, Query) {
  auto params = ParseQuery("x=1&search=name%3D%27a+b%27&&flag&=v&x=2");
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(params[0].name, "x");
  EXPECT_EQ(params[0].value, "1");
  EXPECT_EQ(params[1].value, "name='a b'");
  EXPECT_EQ(params[2].name, "flag");
  EXPECT_EQ(params[2].value, "");
  EXPECT_EQ(params[3].name, "");
  EXPECT_EQ(params[3].value, "v");
  EXPECT_TRUE(ParseQuery("").empty());
  EXPECT_EQ(FindQueryParam("x=1&x=2", "x"), "1");
  EXPECT_EQ(FindQueryParam("a%20b=c", "a b"), "c");
  EXPECT_EQ(FindQueryParam("x=1", "nope"), std::nullopt);
}

}  // namespace
}  // namespace hcprp
