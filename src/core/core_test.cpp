#include <gtest/gtest.h>

#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/string_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <cstdio>
#include <ctime>
#include <random>
#include <set>

#include "core/clock.h"
#include "core/json.h"
#include "core/json_writer.h"
#include "core/log.h"
#include "core/result.h"
#include "core/time.h"
#include "core/uuid.h"

namespace hcprp {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Error::InvalidArgument("odd");
  return x / 2;
}

Status Chain(int x) {
  HCPRP_RETURN_IF_ERROR(Half(x));
  return Status::Ok();
}

TEST(Result, ValueAndError) {
  auto r = Half(4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 2);
  auto e = Half(3);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.error().ToString(), "InvalidArgument: odd");
  EXPECT_TRUE(Chain(2).ok());
  EXPECT_FALSE(Chain(1).ok());
}

TEST(Clock, FakeAdvances) {
  FakeClock c;
  auto t0 = c.Now();
  EXPECT_EQ(FormatRfc3339(t0), "2025-01-01T00:00:00Z");
  c.Advance(std::chrono::seconds(90));
  EXPECT_EQ(FormatRfc3339(c.Now()), "2025-01-01T00:01:30Z");
  EXPECT_EQ(
      c.NowMillis() - std::chrono::duration_cast<std::chrono::milliseconds>(t0.time_since_epoch()).count(),
      90000);
}

TEST(Uuid, V4IsRandomAndWellFormed) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto u = NewUuidV4();
    ASSERT_TRUE(IsUuid(u)) << u;
    EXPECT_EQ(u[14], '4');
    EXPECT_TRUE(u[19] == '8' || u[19] == '9' || u[19] == 'a' || u[19] == 'b');
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(Uuid, V5AgreesWithBoostsGeneratorAtEveryLength) {
  // Every padding case of SHA-1 (lengths around 55, 56, 63, 64 and beyond one block), checked
  // against Boost's name generator, which the IDs stored so far were made with.
  boost::uuids::string_generator parse;
  boost::uuids::name_generator_sha1 reference(parse(std::string(kResourceIdNamespace)));
  std::string name;
  for (size_t n = 0; n < 300; ++n) {
    ASSERT_EQ(UuidV5(kResourceIdNamespace, name),
              boost::uuids::to_string(reference(name.data(), name.size())))
        << n;
    name += static_cast<char>('a' + n % 26);
  }
}

TEST(Uuid, V5IsDeterministic) {
  // RFC 4122 appendix / Python uuid.uuid5(NAMESPACE_DNS, "python.org").
  EXPECT_EQ(UuidV5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "python.org"),
            "886313e1-3b8a-5372-9b90-0c9aee199e5d");
  auto a = UuidV5(kResourceIdNamespace, ToLower("/subscriptions/X/resourceGroups/RG"));
  auto b = UuidV5(kResourceIdNamespace, "/subscriptions/x/resourcegroups/rg");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[14], '5');
  EXPECT_FALSE(IsUuid("not-a-uuid"));
}

TEST(Time, RoundTrip) {
  auto t = ParseRfc3339("2025-03-14T01:59:26Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatRfc3339(*t), "2025-03-14T01:59:26Z");
  auto f = ParseRfc3339("2024-02-29T23:59:59.123456789+01:00");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(FormatRfc3339(*f, true), "2024-02-29T22:59:59.123456Z");
  EXPECT_EQ(FormatRfc3339(TimePoint{}), "1970-01-01T00:00:00Z");
  for (const char* bad : {"", "2025-13-01T00:00:00Z", "2025-03-14 01:59:26", "2025-03-14T01:59:26",
                          "x025-03-14T01:59:26Z", "2025-03-14T01:59:26.Z", "2025-03-14T01:59:26Zjunk"}) {
    EXPECT_FALSE(ParseRfc3339(bad).ok()) << bad;
  }
}

TEST(Time, FormatAgreesWithTheCLibrary) {
  // Every shape of date: leap days, month and year ends, before 1970, and the fraction's zeros.
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int64_t> seconds(-2208988800,
                                                 7258118399);  // 1900 to 2199 (TimePoint counts ns)
  for (int i = 0; i < 20000; ++i) {
    const int64_t s = i == 0 ? 951782400 : seconds(rng);  // 2000-02-29 first
    const int64_t micros = i % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 1000000);
    const TimePoint t{std::chrono::seconds(s) + std::chrono::microseconds(micros)};
    const std::time_t tt = static_cast<std::time_t>(s);
    std::tm tm{};
    ASSERT_NE(gmtime_r(&tt, &tm), nullptr);
    char want[64];
    ASSERT_GT(std::strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S", &tm), 0u);
    ASSERT_EQ(FormatRfc3339(t), std::string(want) + "Z") << s;
    char fraction[16];
    std::snprintf(fraction, sizeof fraction, ".%06lld", static_cast<long long>(micros));
    ASSERT_EQ(FormatRfc3339(t, true), std::string(want) + fraction + "Z") << s;
  }
}

TEST(Json, ParseAndPointer) {
  auto v = ParseJson(R"({"a":{"b/c":[1,{"d":"x"}]}})");
  ASSERT_TRUE(v.ok());
  const auto* d = FindPointer(*v, "/a/b~1c/1/d");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->as_string(), "x");
  EXPECT_EQ(FindPointer(*v, "/a/missing"), nullptr);
  EXPECT_EQ(FindPointer(*v, "/a/b~1c/9"), nullptr);
  EXPECT_FALSE(ParseJson("{\"a\":").ok());
  EXPECT_FALSE(ParseJson("[1,2]x").ok());
  std::string deep(100, '[');
  deep += std::string(100, ']');
  EXPECT_FALSE(ParseJson(deep).ok());
  EXPECT_TRUE(ParseJson(deep, 200).ok());
}

TEST(Json, CaseHelpers) {
  EXPECT_TRUE(EqualsIgnoreCase("ResourceGroups", "resourcegroups"));
  EXPECT_FALSE(EqualsIgnoreCase("a", "ab"));
  EXPECT_TRUE(StartsWithIgnoreCase("/Subscriptions/x", "/subscriptions/"));
}

TEST(Log, JsonLines) {
  auto sink = std::make_shared<MemoryLogSink>();
  FakeClock clock;
  Logger log(sink, &clock, LogLevel::kInfo, "test");
  log.Debug("hidden");
  log.Info("hello", {{"request_id", "r1"}});
  auto lines = sink->LinesForTest();
  ASSERT_EQ(lines.size(), 1u);
  auto v = ParseJson(lines[0]);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->at("msg").as_string(), "hello");
  EXPECT_EQ(v->at("request_id").as_string(), "r1");
  EXPECT_EQ(v->at("component").as_string(), "test");
  EXPECT_EQ(v->at("level").as_string(), "info");
}

TEST(Log, FieldsOfEveryKindAndEnvelopeOverrides) {
  auto sink = std::make_shared<MemoryLogSink>();
  FakeClock clock;
  Logger log(sink, &clock, LogLevel::kInfo, "test");
  log.Warn("odd \"line\"\n", {{"n", 42},
                              {"ratio", 0.5},
                              {"ok", true},
                              {"nothing", nullptr},
                              {"list", json::array{1, "two"}},
                              {"obj", json::object{{"k", "v"}}},
                              {"component", "override"}});
  auto lines = sink->LinesForTest();
  ASSERT_EQ(lines.size(), 1u);
  auto v = ParseJson(lines[0]);
  ASSERT_TRUE(v.ok()) << lines[0];
  const json::object& o = v->as_object();
  EXPECT_EQ(o.at("msg").as_string(), "odd \"line\"\n");
  EXPECT_EQ(o.at("level").as_string(), "warn");
  EXPECT_EQ(o.at("component").as_string(), "override");
  EXPECT_EQ(o.at("time").as_string(), FormatRfc3339(clock.Now(), true));
  EXPECT_EQ(o.at("n").as_int64(), 42);
  EXPECT_EQ(o.at("ratio").as_double(), 0.5);
  EXPECT_TRUE(o.at("ok").as_bool());
  EXPECT_TRUE(o.at("nothing").is_null());
  EXPECT_EQ(o.at("list"), (json::array{1, "two"}));
  EXPECT_EQ(o.at("obj"), (json::object{{"k", "v"}}));
  // The envelope first, each member once, then the fields in their order.
  std::vector<std::string> keys;
  for (const auto& kv : o) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"time", "level", "component", "msg", "n", "ratio", "ok",
                                            "nothing", "list", "obj"}));
}

}  // namespace
}  // namespace hcprp

namespace hcprp {
namespace {

TEST(JsonWriter, WritesWhatBoostJsonSerialises) {
  const std::string strings[] = {"",
                                 "plain",
                                 "quote\" and \\ backslash",
                                 "tab\tnew\nline\rret",
                                 std::string("nul\0x\x01\x1f", 7),
                                 "\b\f",
                                 "caf\xc3\xa9 \xe2\x82\xac"};
  for (const auto& s : strings) {
    std::string out;
    JsonWriter w(out);
    w.BeginObject()
        .Member("s", s)
        .Member("n", int64_t{-9007199254740993})
        .Member("i", 0)
        .Member("t", true)
        .Key("a")
        .BeginArray()
        .BeginObject()
        .Member("x", s)
        .EndObject()
        .BeginObject()
        .EndObject()
        .String(s)
        .Int(42)
        .Bool(false)
        .EndArray()
        .Key("e")
        .BeginArray()
        .EndArray()
        .Member("last", "z")
        .EndObject();
    json::object expected{
        {"s", s},
        {"n", int64_t{-9007199254740993}},
        {"i", 0},
        {"t", true},
        {"a", json::array{json::object{{"x", s}}, json::object{}, json::value(s), 42, false}},
        {"e", json::array{}},
        {"last", "z"}};
    EXPECT_EQ(out, json::serialize(expected)) << s;
    auto parsed = ParseJson(out);
    ASSERT_TRUE(parsed.ok()) << out;
    EXPECT_EQ(*parsed, json::value(expected));
  }
}

}  // namespace
}  // namespace hcprp
