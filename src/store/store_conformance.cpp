// The store conformance suite: the semantics of store.h, run against every engine.
#include "store/store_conformance.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <time.h>

#include "core/json.h"

namespace hcprp::store::testing {

IndexSpec TestIndexes() {
  return IndexSpec{.resource_type = "/resourceType",
                   .resource_id = "/properties/resourceId",
                   .status = "/properties/status",
                   .terminal_statuses = {"Succeeded", "Failed", "Canceled"}};
}

void StoreConformanceTest::SetUp() {
  env_ = GetParam().make();
  ASSERT_NE(env_, nullptr);
  store_ = OpenAnother();
  ASSERT_NE(store_, nullptr);
}

void StoreConformanceTest::TearDown() {
  store_.reset();
  env_.reset();
}

std::unique_ptr<Store> StoreConformanceTest::OpenAnother(OpenOptions options) {
  if (options.clock == nullptr) options.clock = &clock_;
  const IndexSpec& ix = options.indexes;
  if (ix.resource_type.empty() && ix.resource_id.empty() && ix.status.empty())
    options.indexes = TestIndexes();
  auto s = env_->Open(options);
  EXPECT_TRUE(s.ok()) << s.error().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

namespace {

using namespace std::chrono_literals;

template <typename R>
::testing::AssertionResult IsOk(const R& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.error().ToString();
}

template <typename R>
::testing::AssertionResult HasCode(const R& r, ErrorCode code) {
  if (r.ok()) return ::testing::AssertionFailure() << "succeeded, expected " << ErrorCodeName(code);
  if (r.error().code() == code) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << r.error().ToString() << ", expected " << ErrorCodeName(code);
}

json::value J(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? std::move(*v) : json::value();
}

json::value Res(std::string_view type, std::string_view rid,
                std::optional<std::string_view> status = std::nullopt) {
  json::object props;
  props["resourceId"] = rid;
  if (status) props["status"] = *status;
  json::object o;
  o["resourceType"] = type;
  o["properties"] = std::move(props);
  return o;
}

constexpr std::string_view kC = "resources";

// Every change after `cont` (advanced), in pages of `page`.
std::vector<Change> Drain(Store& s, std::string_view container, std::string& cont, size_t page = 100) {
  std::vector<Change> out;
  while (true) {
    auto r = s.ReadChanges(container, cont, page);
    EXPECT_TRUE(IsOk(r));
    if (!r.ok()) return out;
    cont = r->continuation;
    if (r->changes.empty()) return out;
    for (auto& c : r->changes) out.push_back(std::move(c));
  }
}

std::string Now(Store& s, std::string_view container = kC) {
  auto r = s.ReadChanges(container, kChangeFeedNow, 1);
  EXPECT_TRUE(IsOk(r));
  return r.ok() ? r->continuation : "";
}

// ------------------------------------------------------------------------------------------------
// Point operations

TEST_P(StoreConformanceTest, CreateThenRead) {
  auto c = store_->Create(kC, "sub1", "doc1", J(R"({"a":1,"b":{"c":[1,2,"x"]}})"));
  ASSERT_TRUE(IsOk(c));
  EXPECT_EQ(c->id, "doc1");
  EXPECT_EQ(c->partition_key, "sub1");
  EXPECT_FALSE(c->etag.empty());
  EXPECT_EQ(c->timestamp_ms, clock_.NowMillis());
  EXPECT_FALSE(c->ttl_seconds);
  EXPECT_EQ(c->body, J(R"({"a":1,"b":{"c":[1,2,"x"]}})"));

  auto r = store_->Read(kC, "sub1", "doc1");
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->id, "doc1");
  EXPECT_EQ(r->partition_key, "sub1");
  EXPECT_EQ(r->etag, c->etag);
  EXPECT_EQ(r->timestamp_ms, c->timestamp_ms);
  EXPECT_EQ(r->body, c->body);
  EXPECT_FALSE(r->ttl_seconds);
}

TEST_P(StoreConformanceTest, ReadTextGivesTheStoredBodyUnparsed) {
  auto c = store_->Create(kC, "sub1", "doc1", J(R"({"a":1,"s":"x\"y","n":{"m":[true,null]}})"), 30);
  ASSERT_TRUE(IsOk(c));
  auto r = store_->ReadText(kC, "sub1", "doc1");
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->id, "doc1");
  EXPECT_EQ(r->partition_key, "sub1");
  EXPECT_EQ(r->etag, c->etag);
  EXPECT_EQ(r->timestamp_ms, c->timestamp_ms);
  EXPECT_EQ(r->ttl_seconds, 30);
  EXPECT_TRUE(r->body.is_null());
  auto body = ParseBodyText(r->body_text);
  ASSERT_TRUE(IsOk(body));
  EXPECT_EQ(*body, c->body);
  // A plain read still parses, and an absent or expired document is not found either way.
  EXPECT_TRUE(store_->Read(kC, "sub1", "doc1")->body_text.empty());
  EXPECT_TRUE(HasCode(store_->ReadText(kC, "sub1", "nope"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->ReadText("no-such-container", "sub1", "doc1"), ErrorCode::kNotFound));
  clock_.Advance(std::chrono::seconds(31));
  EXPECT_TRUE(HasCode(store_->ReadText(kC, "sub1", "doc1"), ErrorCode::kNotFound));
}

TEST_P(StoreConformanceTest, CreateOfExistingIsAlreadyExists) {
  auto first = store_->Create(kC, "p", "x", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(first));
  EXPECT_TRUE(HasCode(store_->Create(kC, "p", "x", J(R"({"v":2})")), ErrorCode::kAlreadyExists));
  auto r = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->body, J(R"({"v":1})"));
  EXPECT_EQ(r->etag, first->etag);
  // The same id in another partition or container is another document.
  EXPECT_TRUE(IsOk(store_->Create(kC, "q", "x", J("{}"))));
  EXPECT_TRUE(IsOk(store_->Create(kLocks, "p", "x", J("{}"))));
}

TEST_P(StoreConformanceTest, ReadOfMissingIsNotFound) {
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "nope"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Read("no-such-container", "p", "nope"), ErrorCode::kNotFound));
}

TEST_P(StoreConformanceTest, ArbitraryBytesInIdsAndPartitionKeysRoundTrip) {
  const std::vector<std::string> pks = {"", std::string("\0", 1), "pk", "\xff", "Sub/With'Quote"};
  const std::vector<std::string> ids = {
      "plain",
      std::string("nul\0inside", 10),
      "nul",
      "\xff\xfe\x80",
      "",
      "\xc3\xbc\xc3\xb1/?&%=#",
      "'; DROP TABLE documents; --",
      "X",
      "x",
      std::string(1000, 'z'),
      "100%",
      "a_b",
  };
  for (const auto& pk : pks) {
    for (size_t i = 0; i < ids.size(); ++i) {
      json::object body;
      body["i"] = i;
      ASSERT_TRUE(IsOk(store_->Create(kC, pk, ids[i], body))) << i;
    }
  }
  for (const auto& pk : pks) {
    for (size_t i = 0; i < ids.size(); ++i) {
      auto r = store_->Read(kC, pk, ids[i]);
      ASSERT_TRUE(IsOk(r));
      EXPECT_EQ(r->id, ids[i]);
      EXPECT_EQ(r->partition_key, pk);
      EXPECT_EQ(r->body.as_object().at("i").to_number<size_t>(), i);
    }
    // A query returns them all, ordered bytewise by id.
    QueryOptions q{.container = std::string(kC), .partition_key = pk};
    q.max_items = 5;
    std::vector<std::string> got;
    while (true) {
      auto page = store_->Query(q);
      ASSERT_TRUE(IsOk(page));
      for (auto& d : page->documents) {
        EXPECT_EQ(d.partition_key, pk);
        got.push_back(d.id);
      }
      if (page->continuation.empty()) break;
      q.continuation = page->continuation;
    }
    auto sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(got, sorted);
  }
  auto parts = store_->ListPartitions(kC, 100, "");
  ASSERT_TRUE(IsOk(parts));
  std::vector<std::string> got_pks;
  for (auto& d : parts->documents) got_pks.push_back(d.partition_key);
  auto sorted_pks = pks;
  std::sort(sorted_pks.begin(), sorted_pks.end());
  EXPECT_EQ(got_pks, sorted_pks);

  std::string cont;
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), pks.size() * ids.size());
  size_t k = 0;
  for (const auto& pk : pks) {
    for (const auto& id : ids) {
      EXPECT_EQ(changes[k].document.partition_key, pk);
      EXPECT_EQ(changes[k].document.id, id);
      ++k;
    }
  }
  // Deleting with binary keys works too.
  EXPECT_TRUE(IsOk(store_->Delete(kC, std::string("\0", 1), std::string("nul\0inside", 10))));
  EXPECT_TRUE(
      HasCode(store_->Read(kC, std::string("\0", 1), std::string("nul\0inside", 10)), ErrorCode::kNotFound));
  EXPECT_TRUE(IsOk(store_->Read(kC, std::string("\0", 1), "nul")));
}

TEST_P(StoreConformanceTest, EtagAndTimestampChangeOnEveryWrite) {
  std::set<std::string> etags;
  auto d = store_->Create(kC, "p", "x", J(R"({"n":0})"));
  ASSERT_TRUE(IsOk(d));
  etags.insert(d->etag);
  int64_t last_ts = d->timestamp_ms;
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(1s);
    Result<Document> r = Error::Internal("unset");
    switch (i % 3) {
      case 0:
        r = store_->Replace(kC, "p", "x", J(R"({"n":1})"));
        break;
      case 1:
        r = store_->Upsert(kC, "p", "x", J(R"({"n":2})"));
        break;
      default:
        r = store_->Patch(kC, "p", "x", {{PatchOp::Kind::kIncrement, "/n", 1}});
        break;
    }
    ASSERT_TRUE(IsOk(r));
    EXPECT_TRUE(etags.insert(r->etag).second) << "etag reused: " << r->etag;
    EXPECT_EQ(r->timestamp_ms, clock_.NowMillis());
    EXPECT_GT(r->timestamp_ms, last_ts);
    last_ts = r->timestamp_ms;
    auto read = store_->Read(kC, "p", "x");
    ASSERT_TRUE(IsOk(read));
    EXPECT_EQ(read->etag, r->etag);
    EXPECT_EQ(read->timestamp_ms, r->timestamp_ms);
  }
}

TEST_P(StoreConformanceTest, ReplaceWithIfMatch) {
  EXPECT_TRUE(HasCode(store_->Replace(kC, "p", "x", J("{}")), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Replace(kC, "p", "x", J("{}"), "some-etag"), ErrorCode::kNotFound));
  auto d = store_->Create(kC, "p", "x", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(d));
  EXPECT_TRUE(
      HasCode(store_->Replace(kC, "p", "x", J(R"({"v":2})"), "wrong"), ErrorCode::kPreconditionFailed));
  auto unchanged = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(unchanged));
  EXPECT_EQ(unchanged->etag, d->etag);
  EXPECT_EQ(unchanged->body, J(R"({"v":1})"));

  auto r = store_->Replace(kC, "p", "x", J(R"({"v":2})"), d->etag);
  ASSERT_TRUE(IsOk(r));
  EXPECT_NE(r->etag, d->etag);
  // The old etag no longer matches.
  EXPECT_TRUE(
      HasCode(store_->Replace(kC, "p", "x", J(R"({"v":3})"), d->etag), ErrorCode::kPreconditionFailed));
  // "*" matches any existing document; no if-match replaces unconditionally.
  EXPECT_TRUE(IsOk(store_->Replace(kC, "p", "x", J(R"({"v":4})"), "*")));
  auto last = store_->Replace(kC, "p", "x", J(R"({"v":5})"), std::nullopt, 60);
  ASSERT_TRUE(IsOk(last));
  EXPECT_EQ(last->ttl_seconds, 60);
  auto read = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(read->body, J(R"({"v":5})"));
  EXPECT_EQ(read->ttl_seconds, 60);
  // A replace without ttl removes it.
  ASSERT_TRUE(IsOk(store_->Replace(kC, "p", "x", J(R"({"v":6})"))));
  read = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(read));
  EXPECT_FALSE(read->ttl_seconds);
}

TEST_P(StoreConformanceTest, UpsertCreatesOrReplaces) {
  std::string cont = Now(*store_);
  EXPECT_TRUE(HasCode(store_->Upsert(kC, "p", "x", J("{}"), "any-etag"), ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(HasCode(store_->Upsert(kC, "p", "x", J("{}"), "*"), ErrorCode::kPreconditionFailed));
  auto a = store_->Upsert(kC, "p", "x", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(a));
  auto b = store_->Upsert(kC, "p", "x", J(R"({"v":2})"));
  ASSERT_TRUE(IsOk(b));
  EXPECT_NE(a->etag, b->etag);
  EXPECT_TRUE(
      HasCode(store_->Upsert(kC, "p", "x", J(R"({"v":3})"), a->etag), ErrorCode::kPreconditionFailed));
  auto c = store_->Upsert(kC, "p", "x", J(R"({"v":3})"), b->etag, 30);
  ASSERT_TRUE(IsOk(c));
  EXPECT_EQ(c->ttl_seconds, 30);
  // The feed keeps the latest version only: the create and the first replace were superseded.
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::kReplace);
  EXPECT_EQ(changes[0].document.etag, c->etag);
  EXPECT_EQ(changes[0].document.body, J(R"({"v":3})"));
  EXPECT_EQ(changes[0].document.ttl_seconds, 30);
}

TEST_P(StoreConformanceTest, DeleteWithIfMatch) {
  EXPECT_TRUE(HasCode(store_->Delete(kC, "p", "x"), ErrorCode::kNotFound));
  auto d = store_->Create(kC, "p", "x", J(R"({"v":1})"), 100);
  ASSERT_TRUE(IsOk(d));
  std::string cont = Now(*store_);
  EXPECT_TRUE(HasCode(store_->Delete(kC, "p", "x", "wrong"), ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(IsOk(store_->Read(kC, "p", "x")));
  EXPECT_TRUE(IsOk(store_->Delete(kC, "p", "x", d->etag)));
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "x"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Delete(kC, "p", "x"), ErrorCode::kNotFound));
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::kDelete);
  EXPECT_EQ(changes[0].document.id, "x");
  EXPECT_EQ(changes[0].document.body, J(R"({"v":1})"));  // the tombstone carries the last version
  EXPECT_EQ(changes[0].document.etag, d->etag);
  EXPECT_EQ(changes[0].document.ttl_seconds, 100);
  // Recreating after a delete works; "*" deletes any.
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "x", J("{}"))));
  EXPECT_TRUE(IsOk(store_->Delete(kC, "p", "x", "*")));
}

TEST_P(StoreConformanceTest, PatchOperations) {
  ASSERT_TRUE(IsOk(
      store_->Create(kC, "p", "x", J(R"({"a":1,"s":"x","o":{"k":"v"},"arr":[1,2,3],"f":1.5,"gone":true})"))));
  std::vector<PatchOp> ops = {
      {PatchOp::Kind::kSet, "/new", J(R"({"deep":[]})")},
      {PatchOp::Kind::kSet, "/s", "y"},
      {PatchOp::Kind::kAdd, "/o/k2", 2},
      {PatchOp::Kind::kAdd, "/arr/1", 9},  // insert
      {PatchOp::Kind::kAdd, "/arr/-", 4},  // append
      {PatchOp::Kind::kSet, "/arr/0", 0},  // overwrite
      {PatchOp::Kind::kRemove, "/gone", nullptr},
      {PatchOp::Kind::kReplace, "/o/k", "w"},
      {PatchOp::Kind::kIncrement, "/a", 41},
      {PatchOp::Kind::kIncrement, "/f", 1},
      {PatchOp::Kind::kAdd, "/new/deep/-", "z"},
      {PatchOp::Kind::kSet, "/with~1slash", 1},
      {PatchOp::Kind::kRemove, "/arr/4", nullptr},
  };
  auto r = store_->Patch(kC, "p", "x", ops);
  ASSERT_TRUE(IsOk(r));
  json::value want = J(R"({"a":42,"s":"y","o":{"k":"w","k2":2},"arr":[0,9,2,3],"f":2.5,
                          "new":{"deep":["z"]},"with/slash":1})");
  EXPECT_EQ(r->body, want);
  auto read = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(read->body, want);
  EXPECT_EQ(read->etag, r->etag);
}

TEST_P(StoreConformanceTest, PatchErrorsAreInvalidArgumentAndChangeNothing) {
  auto d = store_->Create(kC, "p", "x", J(R"({"a":1,"s":"x","arr":[1],"big":9223372036854775807})"));
  ASSERT_TRUE(IsOk(d));
  std::string cont = Now(*store_);
  const std::vector<PatchOp> bad = {
      {PatchOp::Kind::kSet, "/missing/child", 1},  // parent absent
      {PatchOp::Kind::kRemove, "/nope", nullptr}, {PatchOp::Kind::kReplace, "/nope", 1},
      {PatchOp::Kind::kIncrement, "/nope", 1},    {PatchOp::Kind::kIncrement, "/s", 1},  // not a number
      {PatchOp::Kind::kIncrement, "/a", "one"},                                          // delta not a number
      {PatchOp::Kind::kIncrement, "/big", 1},                                            // overflow
      {PatchOp::Kind::kSet, "no-slash", 1},                                              // bad pointer
      {PatchOp::Kind::kSet, "/bad~2escape", 1},   {PatchOp::Kind::kSet, "", J("{}")},    // root
      {PatchOp::Kind::kAdd, "/arr/5", 1},                                                // index out of range
      {PatchOp::Kind::kAdd, "/arr/x", 1},                                                // not an index
      {PatchOp::Kind::kSet, "/s/x", 1},                                                  // parent is a string
  };
  for (const auto& op : bad) {
    // A good op first: the whole patch must still change nothing.
    auto r = store_->Patch(kC, "p", "x", {{PatchOp::Kind::kSet, "/ok", 1}, op});
    EXPECT_TRUE(HasCode(r, ErrorCode::kInvalidArgument)) << op.path;
  }
  auto read = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(read->etag, d->etag);
  EXPECT_EQ(read->body, d->body);
  EXPECT_TRUE(Drain(*store_, kC, cont).empty());
  EXPECT_TRUE(
      HasCode(store_->Patch(kC, "p", "absent", {{PatchOp::Kind::kSet, "/a", 1}}), ErrorCode::kNotFound));
}

TEST_P(StoreConformanceTest, PatchConditionsAndIfMatch) {
  auto d = store_->Create(kC, "p", "x", J(R"({"properties":{"activeOperationId":"op1","n":1}})"));
  ASSERT_TRUE(IsOk(d));
  PatchOp set{PatchOp::Kind::kSet, "/properties/provisioningState", "Succeeded"};
  // Condition holds.
  auto r = store_->Patch(kC, "p", "x", {set}, {{"/properties/activeOperationId", json::value("op1")}});
  ASSERT_TRUE(IsOk(r));
  // Condition on another value, and on absence.
  EXPECT_TRUE(
      HasCode(store_->Patch(kC, "p", "x", {set}, {{"/properties/activeOperationId", json::value("op2")}}),
              ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(HasCode(store_->Patch(kC, "p", "x", {set}, {{"/properties/activeOperationId", std::nullopt}}),
                      ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(IsOk(store_->Patch(kC, "p", "x", {set}, {{"/properties/absent", std::nullopt}})));
  // Number equality and nested values.
  EXPECT_TRUE(IsOk(store_->Patch(kC, "p", "x", {set}, {{"/properties/n", json::value(1)}})));
  EXPECT_TRUE(HasCode(store_->Patch(kC, "p", "x", {set}, {{"/properties/n", json::value(2)}}),
                      ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(HasCode(store_->Patch(kC, "p", "x", {set}, {{"bad pointer", json::value(2)}}),
                      ErrorCode::kInvalidArgument));
  // If-Match.
  auto cur = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(cur));
  EXPECT_TRUE(HasCode(store_->Patch(kC, "p", "x", {set}, {}, d->etag), ErrorCode::kPreconditionFailed));
  auto ok = store_->Patch(kC, "p", "x", {set}, {}, cur->etag);
  ASSERT_TRUE(IsOk(ok));
  EXPECT_NE(ok->etag, cur->etag);
  // Failed preconditions changed nothing.
  auto after = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(after));
  EXPECT_EQ(after->etag, ok->etag);
}

TEST_P(StoreConformanceTest, PatchKeepsTtlAndRestartsIt) {
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "x", J(R"({"n":1})"), 10)));
  clock_.Advance(8s);
  auto r = store_->Patch(kC, "p", "x", {{PatchOp::Kind::kIncrement, "/n", 1}});
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->ttl_seconds, 10);
  clock_.Advance(8s);  // 16 s after create, 8 s after the patch
  auto read = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(read->ttl_seconds, 10);
  clock_.Advance(2s);
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "x"), ErrorCode::kNotFound));
}

TEST_P(StoreConformanceTest, BodiesMustBeObjects) {
  for (const auto& body : {J("[1,2]"), J("\"text\""), J("null"), J("42"), J("true")}) {
    EXPECT_TRUE(HasCode(store_->Create(kC, "p", "x", body), ErrorCode::kInvalidArgument));
    EXPECT_TRUE(HasCode(store_->Upsert(kC, "p", "x", body), ErrorCode::kInvalidArgument));
    EXPECT_TRUE(HasCode(store_->Replace(kC, "p", "x", body), ErrorCode::kInvalidArgument));
    auto b = store_->Batch(kC, "p", {WriteOp::Create("y", J("{}")), WriteOp::Create("x", body)});
    EXPECT_TRUE(HasCode(b, ErrorCode::kInvalidArgument));
    if (!b.ok()) {
      EXPECT_EQ(FailedBatchIndex(b.error()), 1u);
    }
  }
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "x"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "y"), ErrorCode::kNotFound));
}

TEST_P(StoreConformanceTest, BodiesThatCannotBeStoredAreInvalidArgument) {
  json::object nan;
  nan["x"] = json::array{1.0, std::nan("")};
  EXPECT_TRUE(HasCode(store_->Create(kC, "p", "x", nan), ErrorCode::kInvalidArgument));
  json::object inf;
  inf["x"] = HUGE_VAL;
  EXPECT_TRUE(HasCode(store_->Upsert(kC, "p", "x", inf), ErrorCode::kInvalidArgument));
  json::value deep = json::object();
  json::value* cur = &deep;
  for (int i = 0; i < 5000; ++i) cur = &(cur->as_object()["d"] = json::object());
  EXPECT_TRUE(HasCode(store_->Create(kC, "p", "x", deep), ErrorCode::kInvalidArgument));
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "x", J(R"({"n":1e308})"))));
  EXPECT_TRUE(HasCode(store_->Patch(kC, "p", "x", {{PatchOp::Kind::kIncrement, "/n", 1e308}}),
                      ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->Patch(kC, "p", "x", {{PatchOp::Kind::kSet, "/m", std::nan("")}}),
                      ErrorCode::kInvalidArgument));
  auto r = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->body, J(R"({"n":1e308})"));
  // Strings are bytes: invalid UTF-8 inside a string is stored and read back as given.
  json::object bytes;
  bytes["s"] = std::string("\xff\xfe\x00z", 4);
  auto b = store_->Create(kC, "p", "bytes", bytes);
  if (b.ok()) {
    auto rb = store_->Read(kC, "p", "bytes");
    ASSERT_TRUE(IsOk(rb));
    EXPECT_EQ(rb->body, json::value(bytes));
  } else {
    EXPECT_TRUE(HasCode(b, ErrorCode::kInvalidArgument));  // an engine may refuse invalid UTF-8
  }
}

TEST_P(StoreConformanceTest, BodiesRoundTripExactly) {
  json::value body = J(R"({"int":-9223372036854775808,"max":9223372036854775807,"u":18446744073709551615,
     "d":0.1,"e":1e300,"neg":-0.5,"s":"quote\" backslash\\ newline\n tab\t unicode \u00e9 \ud83d\ude00 nul \u0000",
     "empty":{},"arr":[],"nested":[[[[{"a":[null,true,false]}]]]]})");
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "x", body)));
  auto r = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->body, body);
  // A large document.
  json::object big;
  for (int i = 0; i < 2000; ++i)
    big["key" + std::to_string(i)] = std::string(500, static_cast<char>('a' + i % 26));
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "big", big)));
  auto rb = store_->Read(kC, "p", "big");
  ASSERT_TRUE(IsOk(rb));
  EXPECT_EQ(rb->body, json::value(big));
}

TEST_P(StoreConformanceTest, InvalidArguments) {
  EXPECT_TRUE(HasCode(store_->Create("", "p", "x", J("{}")), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->Read("", "p", "x"), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->Create(kC, "p", "x", J("{}"), 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->Create(kC, "p", "x", J("{}"), -5), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->Upsert(kC, "p", "x", J("{}"), std::nullopt, int64_t{1} << 62),
                      ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->Query({.container = std::string(kC)}), ErrorCode::kInvalidArgument));
  QueryOptions zero{.container = std::string(kC), .partition_key = "p"};
  zero.max_items = 0;
  EXPECT_TRUE(HasCode(store_->Query(zero), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->ReadChanges(kC, "garbage", 10), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->ReadChanges(kC, "-1", 10), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->ReadChanges(kC, "", 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->WaitForChanges(kC, "garbage", 1ms), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->ListPartitions(kC, 10, "garbage"), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(store_->AcquireLease(kLocks, "p", "l", "me", 0ms), ErrorCode::kInvalidArgument));
  auto batch = store_->Batch(kC, "p", {WriteOp::Create("a", J("{}")), WriteOp::Create("b", J("{}"), 0)});
  EXPECT_TRUE(HasCode(batch, ErrorCode::kInvalidArgument));
  if (!batch.ok()) {
    EXPECT_EQ(FailedBatchIndex(batch.error()), 1u);
  }
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "a"), ErrorCode::kNotFound));
}

// ------------------------------------------------------------------------------------------------
// Queries

constexpr std::string_view kClusterType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters";
constexpr std::string_view kPoolType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools";
constexpr std::string_view kOpType = "Microsoft.RedHatOpenShift/hcpOperationsStatus";
const std::string kRg = "/subscriptions/sub1/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/";

class QueryFixture {
 public:
  static void Fill(Store& s) {
    auto put = [&](std::string_view pk, std::string_view id, json::value body) {
      ASSERT_TRUE(IsOk(s.Create(kC, pk, id, std::move(body)))) << id;
    };
    put("sub1", "c1", Res(kClusterType, kRg + "hcpOpenShiftClusters/c1"));
    put("sub1", "c10", Res(kClusterType, kRg + "hcpOpenShiftClusters/c10"));
    put("sub1", "np1", Res(kPoolType, kRg + "hcpOpenShiftClusters/c1/nodePools/np1"));
    put("sub1", "np2", Res(kPoolType, kRg + "hcpOpenShiftClusters/c1/nodePools/np2"));
    put("sub1", "np3", Res(kPoolType, kRg + "hcpOpenShiftClusters/c10/nodePools/np3"));
    put("sub1", "op1", Res(kOpType, "op-1", "Accepted"));
    put("sub1", "op2", Res(kOpType, "op-2", "Succeeded"));
    put("sub1", "op3", Res(kOpType, "op-3", "failed"));
    put("sub1", "op4", Res(kOpType, "op-4", "Deleting"));
    put("sub1", "op5", Res(kOpType, "op-5", "Canceled"));
    put("sub1", "plain", J(R"({"no":"indexed fields"})"));
    put("sub2", "c1", Res(kClusterType, "/subscriptions/sub2/resourceGroups/rg/providers/x/c1"));
    put("sub0", "zz", Res(kClusterType, "/subscriptions/sub0/zz"));
  }
};

std::vector<std::string> QueryAll(Store& s, QueryOptions q, size_t page = 100,
                                  std::vector<std::string>* pks = nullptr) {
  q.max_items = page;
  std::vector<std::string> out;
  for (int guard = 0; guard < 1000; ++guard) {
    auto r = s.Query(q);
    EXPECT_TRUE(IsOk(r));
    if (!r.ok()) break;
    EXPECT_LE(r->documents.size(), page);
    for (auto& d : r->documents) {
      out.push_back(d.id);
      if (pks != nullptr) pks->push_back(d.partition_key);
    }
    if (r->continuation.empty()) break;
    q.continuation = r->continuation;
  }
  return out;
}

using V = std::vector<std::string>;

TEST_P(StoreConformanceTest, QueryByResourceType) {
  QueryFixture::Fill(*store_);
  QueryOptions q{.container = std::string(kC), .partition_key = "sub1"};
  q.resource_type = ToLower(kClusterType);
  EXPECT_EQ(QueryAll(*store_, q), (V{"c1", "c10"}));
  q.resource_type = "MICROSOFT.REDHATOPENSHIFT/HCPOPENSHIFTCLUSTERS";  // case-insensitive
  EXPECT_EQ(QueryAll(*store_, q), (V{"c1", "c10"}));
  q.resource_type = std::string(kPoolType);
  EXPECT_EQ(QueryAll(*store_, q, 1), (V{"np1", "np2", "np3"}));
  q.resource_type = "unknown/type";
  EXPECT_EQ(QueryAll(*store_, q), V{});
  // Everything in the partition.
  QueryOptions all{.container = std::string(kC), .partition_key = "sub1"};
  EXPECT_EQ(QueryAll(*store_, all, 4).size(), 11u);
}

TEST_P(StoreConformanceTest, QueryByResourceIdCaseInsensitive) {
  QueryFixture::Fill(*store_);
  QueryOptions q{.container = std::string(kC), .partition_key = "sub1"};
  q.resource_id = ToLower(kRg + "hcpOpenShiftClusters/C1");
  EXPECT_EQ(QueryAll(*store_, q), V{"c1"});
  std::string upper = kRg + "HCPOPENSHIFTCLUSTERS/c1";
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  q.resource_id = upper;
  EXPECT_EQ(QueryAll(*store_, q), V{"c1"});
  q.resource_id = kRg + "hcpOpenShiftClusters/c";
  EXPECT_EQ(QueryAll(*store_, q), V{});
}

TEST_P(StoreConformanceTest, QueryByResourceIdPrefix) {
  QueryFixture::Fill(*store_);
  QueryOptions q{.container = std::string(kC), .partition_key = "sub1"};
  // Children of c1: prefix + "/" (c10's children must not match).
  q.resource_id_prefix = kRg + "HCPOpenShiftClusters/C1/";
  EXPECT_EQ(QueryAll(*store_, q, 1), (V{"np1", "np2"}));
  q.resource_id_prefix = kRg + "hcpopenshiftclusters/c1";
  EXPECT_EQ(QueryAll(*store_, q), (V{"c1", "c10", "np1", "np2", "np3"}));
  q.resource_type = std::string(kPoolType);
  EXPECT_EQ(QueryAll(*store_, q), (V{"np1", "np2", "np3"}));
  q.resource_type.reset();
  q.resource_id_prefix = "OP-";
  EXPECT_EQ(QueryAll(*store_, q), (V{"op1", "op2", "op3", "op4", "op5"}));
  q.resource_id_prefix = "\xff\xff";  // no upper bound
  EXPECT_EQ(QueryAll(*store_, q), V{});
  // Deleting a child removes it from the index.
  ASSERT_TRUE(IsOk(store_->Delete(kC, "sub1", "np1")));
  q.resource_id_prefix = kRg + "hcpOpenShiftClusters/c1/";
  EXPECT_EQ(QueryAll(*store_, q), V{"np2"});
}

TEST_P(StoreConformanceTest, QueryNonTerminal) {
  QueryFixture::Fill(*store_);
  QueryOptions q{.container = std::string(kC), .partition_key = "sub1"};
  q.non_terminal_only = true;
  EXPECT_EQ(QueryAll(*store_, q), (V{"op1", "op4"}));
  q.resource_type = std::string(kOpType);
  EXPECT_EQ(QueryAll(*store_, q, 1), (V{"op1", "op4"}));
  // The indexed fields follow every write.
  ASSERT_TRUE(
      IsOk(store_->Patch(kC, "sub1", "op1", {{PatchOp::Kind::kSet, "/properties/status", "Succeeded"}})));
  ASSERT_TRUE(IsOk(store_->Replace(kC, "sub1", "op2", Res(kOpType, "op-2", "Provisioning"))));
  ASSERT_TRUE(IsOk(store_->Batch(kC, "sub1", {WriteOp::Upsert("op6", Res(kOpType, "op-6", "Accepted"))})));
  EXPECT_EQ(QueryAll(*store_, q), (V{"op2", "op4", "op6"}));
  ASSERT_TRUE(
      IsOk(store_->Patch(kC, "sub1", "op4", {{PatchOp::Kind::kRemove, "/properties/status", nullptr}})));
  EXPECT_EQ(QueryAll(*store_, q), (V{"op2", "op6"}));
}

TEST_P(StoreConformanceTest, QueryAcrossPartitionsByType) {
  QueryFixture::Fill(*store_);
  QueryOptions q{.container = std::string(kC)};
  q.resource_type = std::string(kClusterType);
  std::vector<std::string> pks;
  EXPECT_EQ(QueryAll(*store_, q, 1, &pks), (V{"zz", "c1", "c10", "c1"}));
  EXPECT_EQ(pks, (V{"sub0", "sub1", "sub1", "sub2"}));
  pks.clear();
  EXPECT_EQ(QueryAll(*store_, q, 3, &pks), (V{"zz", "c1", "c10", "c1"}));
  // Other containers are separate.
  q.container = std::string(kBilling);
  EXPECT_EQ(QueryAll(*store_, q), V{});
}

// The store indexes the members its caller names, whatever the body's shape, and only those.
TEST_P(StoreConformanceTest, IndexesTheMembersTheCallerNames) {
  store_.reset();
  store_ = OpenAnother({.indexes = {.resource_type = "/kind",
                                    .resource_id = "/meta/name",
                                    .status = "/meta/phase",
                                    .terminal_statuses = {"Done"}}});
  ASSERT_NE(store_, nullptr);
  auto doc = [](std::string_view kind, std::string_view name, std::string_view phase) {
    json::object meta;
    meta["name"] = name;
    meta["phase"] = phase;
    return json::value(json::object{{"kind", kind}, {"meta", std::move(meta)}});
  };
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "a", doc("Job", "Alpha/1", "Running"))));
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "b", doc("job", "alpha/2", "done"))));
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "c", doc("Task", "beta", "Running"))));
  // The members of the suite's usual documents are not indexed by this store.
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "d", Res(kClusterType, "alpha/3", "Accepted"))));
  QueryOptions q{.container = std::string(kC), .partition_key = "p"};
  q.resource_type = "JOB";
  EXPECT_EQ(QueryAll(*store_, q), (V{"a", "b"}));
  q.resource_type.reset();
  q.resource_id_prefix = "ALPHA/";
  EXPECT_EQ(QueryAll(*store_, q), (V{"a", "b"}));
  q.resource_id_prefix.reset();
  q.non_terminal_only = true;
  EXPECT_EQ(QueryAll(*store_, q), (V{"a", "c"}));
  QueryOptions across{.container = std::string(kC)};
  across.resource_type = std::string(kClusterType);
  EXPECT_EQ(QueryAll(*store_, across), V{});
}

TEST_P(StoreConformanceTest, FiltersOnMembersNotIndexedAreInvalid) {
  store_.reset();
  store_ = OpenAnother({.indexes = {.resource_id = "/id"}});
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "a", J(R"({"id":"X"})"))));
  QueryOptions q{.container = std::string(kC), .partition_key = "p"};
  q.resource_id = "x";
  EXPECT_EQ(QueryAll(*store_, q), V{"a"});
  QueryOptions by_type = q;
  by_type.resource_type = "t";
  EXPECT_TRUE(HasCode(store_->Query(by_type), ErrorCode::kInvalidArgument));
  QueryOptions active = q;
  active.non_terminal_only = true;
  EXPECT_TRUE(HasCode(store_->Query(active), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(env_->Open({.clock = &clock_, .indexes = {.status = "status"}}),
                      ErrorCode::kInvalidArgument));  // not a JSON pointer
}

TEST_P(StoreConformanceTest, QueryPagingIsStableUnderWrites) {
  for (int i = 0; i < 25; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "d%02d", i);
    ASSERT_TRUE(IsOk(store_->Create(kC, "p", id, J("{}"))));
  }
  QueryOptions q{.container = std::string(kC), .partition_key = "p"};
  q.max_items = 10;
  auto p1 = store_->Query(q);
  ASSERT_TRUE(IsOk(p1));
  ASSERT_EQ(p1->documents.size(), 10u);
  ASSERT_FALSE(p1->continuation.empty());
  // A document inserted before the continuation point is not returned again or skipped after it.
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "d00a", J("{}"))));
  ASSERT_TRUE(IsOk(store_->Delete(kC, "p", "d15")));
  q.continuation = p1->continuation;
  auto rest = QueryAll(*store_, q, 10);
  EXPECT_EQ(rest.size(), 14u);
  EXPECT_EQ(rest.front(), "d10");
  EXPECT_EQ(std::count(rest.begin(), rest.end(), "d15"), 0);
  // Exactly max_items left gives no empty trailing page.
  QueryOptions exact{.container = std::string(kC), .partition_key = "p"};
  exact.max_items = 25;
  auto all = store_->Query(exact);
  ASSERT_TRUE(IsOk(all));
  EXPECT_EQ(all->documents.size(), 25u);
  EXPECT_TRUE(all->continuation.empty());
  // Continuations are checked.
  QueryOptions bad{.container = std::string(kC), .partition_key = "p"};
  bad.continuation = "garbage";
  EXPECT_TRUE(HasCode(store_->Query(bad), ErrorCode::kInvalidArgument));
  bad.partition_key = "other";
  bad.continuation = p1->continuation;
  EXPECT_TRUE(HasCode(store_->Query(bad), ErrorCode::kInvalidArgument));
}

TEST_P(StoreConformanceTest, QueryWithBodyTextGivesTheSamePagesWithUnparsedBodies) {
  QueryFixture::Fill(*store_);
  ASSERT_TRUE(IsOk(store_->Create(kC, "sub1", "ttl", J(R"({"a":[1,"\u00e9",{"b":null}],"c":2.5})"), 3600)));
  QueryOptions parsed{.container = std::string(kC), .partition_key = "sub1", .max_items = 3};
  QueryOptions text = parsed;
  text.body_text = true;
  size_t pages = 0, documents = 0;
  while (true) {
    auto a = store_->Query(parsed);
    auto b = store_->Query(text);
    ASSERT_TRUE(IsOk(a));
    ASSERT_TRUE(IsOk(b));
    ASSERT_EQ(a->documents.size(), b->documents.size());
    EXPECT_EQ(a->continuation, b->continuation);
    for (size_t i = 0; i < a->documents.size(); ++i) {
      const Document& x = a->documents[i];
      const Document& y = b->documents[i];
      EXPECT_EQ(x.id, y.id);
      EXPECT_EQ(x.partition_key, y.partition_key);
      EXPECT_EQ(x.etag, y.etag);
      EXPECT_EQ(x.timestamp_ms, y.timestamp_ms);
      EXPECT_EQ(x.ttl_seconds, y.ttl_seconds);
      EXPECT_TRUE(x.body_text.empty());
      EXPECT_TRUE(y.body.is_null());
      auto body = ParseBodyText(y.body_text);
      ASSERT_TRUE(IsOk(body));
      EXPECT_EQ(*body, x.body) << y.id;
    }
    ++pages;
    documents += a->documents.size();
    if (a->continuation.empty()) break;
    parsed.continuation = a->continuation;
    text.continuation = b->continuation;
  }
  EXPECT_EQ(documents, 12u);
  EXPECT_EQ(pages, 4u);
  EXPECT_TRUE(HasCode(ParseBodyText("{\"unterminated"), ErrorCode::kCorruption));
}

TEST_P(StoreConformanceTest, ListPartitions) {
  for (std::string pk : {"d", "a", "c", "b", "e"}) {
    ASSERT_TRUE(IsOk(store_->Create(kC, pk, "x", J("{}"))));
    ASSERT_TRUE(IsOk(store_->Create(kC, pk, "y", J("{}"))));
  }
  ASSERT_TRUE(IsOk(store_->Create(kLocks, "other", "x", J("{}"))));
  auto p1 = store_->ListPartitions(kC, 3, "");
  ASSERT_TRUE(IsOk(p1));
  V got;
  for (auto& d : p1->documents) got.push_back(d.partition_key);
  EXPECT_EQ(got, (V{"a", "b", "c"}));
  ASSERT_FALSE(p1->continuation.empty());
  auto p2 = store_->ListPartitions(kC, 3, p1->continuation);
  ASSERT_TRUE(IsOk(p2));
  got.clear();
  for (auto& d : p2->documents) got.push_back(d.partition_key);
  EXPECT_EQ(got, (V{"d", "e"}));
  EXPECT_TRUE(p2->continuation.empty());
  // Partitions without live documents disappear.
  ASSERT_TRUE(IsOk(store_->Delete(kC, "b", "x")));
  ASSERT_TRUE(IsOk(store_->Delete(kC, "b", "y")));
  ASSERT_TRUE(IsOk(store_->Delete(kC, "d", "x")));
  auto p3 = store_->ListPartitions(kC, 100, "");
  ASSERT_TRUE(IsOk(p3));
  got.clear();
  for (auto& d : p3->documents) got.push_back(d.partition_key);
  EXPECT_EQ(got, (V{"a", "c", "d", "e"}));
}

// ------------------------------------------------------------------------------------------------
// Batches

TEST_P(StoreConformanceTest, BatchAppliesInOrderAndReturnsEveryDocument) {
  auto a = store_->Create(kC, "p", "a", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(a));
  std::string cont = Now(*store_);
  auto r = store_->Batch(kC, "p",
                         {
                             WriteOp::Create("n", J(R"({"v":0})")),
                             WriteOp::Patch("n", {{PatchOp::Kind::kIncrement, "/v", 5}}),  // sees the create
                             WriteOp::Read("n"),
                             WriteOp::Replace("a", J(R"({"v":2})"), a->etag),
                             WriteOp::Delete("a"),
                             WriteOp::Upsert("a", J(R"({"v":3})")),
                         });
  ASSERT_TRUE(IsOk(r));
  ASSERT_EQ(r->documents.size(), 6u);
  EXPECT_EQ(r->documents[0].body, J(R"({"v":0})"));
  EXPECT_EQ(r->documents[1].body, J(R"({"v":5})"));
  EXPECT_EQ(r->documents[2].body, J(R"({"v":5})"));
  EXPECT_EQ(r->documents[2].etag, r->documents[1].etag);
  EXPECT_EQ(r->documents[3].body, J(R"({"v":2})"));
  EXPECT_EQ(r->documents[4].id, "a");
  EXPECT_EQ(r->documents[4].partition_key, "p");
  EXPECT_EQ(r->documents[5].body, J(R"({"v":3})"));
  for (size_t i = 0; i < r->documents.size(); ++i) {
    if (i != 4) {
      EXPECT_EQ(r->documents[i].timestamp_ms, clock_.NowMillis()) << i;
    }
  }
  // The read is not a change; superseded versions (n's create, a's replace) are left out.
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].kind, Change::Kind::kReplace);
  EXPECT_EQ(changes[0].document.id, "n");
  EXPECT_EQ(changes[0].document.etag, r->documents[1].etag);
  EXPECT_EQ(changes[1].kind, Change::Kind::kDelete);
  EXPECT_EQ(changes[1].document.body, J(R"({"v":2})"));  // the tombstone carries the last version
  EXPECT_EQ(changes[2].kind, Change::Kind::kCreate);
  EXPECT_EQ(changes[2].document.etag, r->documents[5].etag);
  // An empty batch is fine.
  auto empty = store_->Batch(kC, "p", {});
  ASSERT_TRUE(IsOk(empty));
  EXPECT_TRUE(empty->documents.empty());
}

TEST_P(StoreConformanceTest, BatchIsAtomicWhicheverOperationFails) {
  auto a = store_->Create(kC, "p", "a", J(R"({"v":1})"));
  auto b = store_->Create(kC, "p", "b", J(R"({"v":1})"));
  auto c = store_->Create(kC, "p", "c", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(a) && IsOk(b) && IsOk(c));
  auto ops = [&](int fail_at) {
    std::vector<WriteOp> v = {
        WriteOp::Create("new1", J(R"({"v":0})")),
        WriteOp::Replace("a", J(R"({"v":2})"), a->etag),
        WriteOp::Upsert("b", J(R"({"v":2})"), b->etag),
        WriteOp::Patch("c", {{PatchOp::Kind::kSet, "/v", 2}}, {{"/v", json::value(1)}}),
        WriteOp::Delete("b"),
        WriteOp::Read("a"),
        WriteOp::Create("new2", J("{}")),
    };
    switch (fail_at) {
      case 0:
        v[0] = WriteOp::Create("a", J("{}"));
        break;
      case 1:
        v[1].if_match = "bogus";
        break;
      case 2:
        v[2].if_match = "bogus";
        break;
      case 3:
        v[3].conditions[0].equals = json::value(99);
        break;
      case 4:
        v[4] = WriteOp::Delete("zzz");
        break;
      case 5:
        v[5].if_match = "bogus";
        break;
      case 6:
        v[6] = WriteOp::Create("new1", J("{}"));
        break;  // created earlier in this batch
      default:
        break;
    }
    return v;
  };
  const ErrorCode want[] = {ErrorCode::kAlreadyExists,      ErrorCode::kPreconditionFailed,
                            ErrorCode::kPreconditionFailed, ErrorCode::kPreconditionFailed,
                            ErrorCode::kNotFound,           ErrorCode::kPreconditionFailed,
                            ErrorCode::kAlreadyExists};
  std::string cont = Now(*store_);
  for (int i = 0; i < 7; ++i) {
    auto r = store_->Batch(kC, "p", ops(i));
    ASSERT_TRUE(HasCode(r, want[i])) << "failing op " << i;
    EXPECT_EQ(FailedBatchIndex(r.error()), static_cast<size_t>(i)) << r.error().message();
    EXPECT_TRUE(r.error().message().find("operation " + std::to_string(i) + ": ") == 0)
        << r.error().message();
    // Nothing of the batch is visible and the feed did not move.
    const std::vector<std::pair<std::string, const Document*>> before = {{"a", &*a}, {"b", &*b}, {"c", &*c}};
    for (const auto& [id, d] : before) {
      auto cur = store_->Read(kC, "p", id);
      ASSERT_TRUE(IsOk(cur));
      EXPECT_EQ(cur->etag, d->etag) << id << " after failure at " << i;
      EXPECT_EQ(cur->body, d->body);
    }
    EXPECT_TRUE(HasCode(store_->Read(kC, "p", "new1"), ErrorCode::kNotFound));
    EXPECT_TRUE(HasCode(store_->Read(kC, "p", "new2"), ErrorCode::kNotFound));
    std::string probe = cont;
    EXPECT_TRUE(Drain(*store_, kC, probe).empty()) << "failure at " << i;
  }
  auto ok = store_->Batch(kC, "p", ops(-1));
  ASSERT_TRUE(IsOk(ok));
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), 5u);  // b's upsert was superseded by its delete
  EXPECT_EQ(changes[0].document.id, "new1");
  EXPECT_EQ(changes[1].document.id, "a");
  EXPECT_EQ(changes[2].document.id, "c");
  EXPECT_EQ(changes[3].kind, Change::Kind::kDelete);
  EXPECT_EQ(changes[3].document.body, J(R"({"v":2})"));
  EXPECT_EQ(changes[4].document.id, "new2");
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "b"), ErrorCode::kNotFound));
}

// An operation naming another container writes there, in the batch's partition and transaction.
TEST_P(StoreConformanceTest, BatchAcrossContainersOfOnePartitionIsAtomic) {
  constexpr std::string_view kOther = "billing";
  std::string cont = Now(*store_);
  std::string other_cont = Now(*store_, kOther);
  ASSERT_TRUE(IsOk(store_->Create(kOther, "p", "taken", J(R"({"v":0})"))));
  // A failure in the other container undoes the write in the batch's own container, and the reverse.
  auto failed = store_->Batch(
      kC, "p",
      {WriteOp::Create("op", J(R"({"v":1})")), WriteOp::Create("taken", J(R"({"v":1})")).In(kOther)});
  ASSERT_TRUE(HasCode(failed, ErrorCode::kAlreadyExists));
  EXPECT_EQ(FailedBatchIndex(failed.error()), 1u);
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "op"), ErrorCode::kNotFound));
  failed = store_->Batch(kC, "p",
                         {WriteOp::Create("rec", J(R"({"v":1})")).In(kOther),
                          WriteOp::Patch("absent", {{PatchOp::Kind::kSet, "/v", 2}})});
  ASSERT_TRUE(HasCode(failed, ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Read(kOther, "p", "rec"), ErrorCode::kNotFound));

  auto r = store_->Batch(
      kC, "p",
      {WriteOp::Create("op", J(R"({"v":1})")), WriteOp::Create("rec", J(R"({"v":2})")).In(kOther),
       WriteOp::Patch("taken", {{PatchOp::Kind::kIncrement, "/v", 5}}).In(kOther), WriteOp::Read("op")});
  ASSERT_TRUE(IsOk(r));
  ASSERT_EQ(r->documents.size(), 4u);
  EXPECT_EQ(r->documents[1].body, J(R"({"v":2})"));
  EXPECT_EQ(r->documents[2].body, J(R"({"v":5})"));
  EXPECT_EQ(r->documents[3].etag, r->documents[0].etag);
  auto rec = store_->Read(kOther, "p", "rec");
  ASSERT_TRUE(IsOk(rec));
  EXPECT_EQ(rec->etag, r->documents[1].etag);
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "rec"), ErrorCode::kNotFound));
  // Each container's feed has its own changes.
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].document.id, "op");
  auto other = Drain(*store_, kOther, other_cont);
  ASSERT_EQ(other.size(), 2u);  // the create of "taken" was superseded by the patch
  EXPECT_EQ(other[0].document.id, "rec");
  EXPECT_EQ(other[1].document.id, "taken");
  EXPECT_EQ(other[1].kind, Change::Kind::kReplace);
}

TEST_P(StoreConformanceTest, LargeBatchCommitsTogether) {
  std::vector<WriteOp> ops;
  for (int i = 0; i < 1000; ++i) ops.push_back(WriteOp::Create("id" + std::to_string(i), J(R"({"x":1})")));
  std::string cont = Now(*store_);
  auto r = store_->Batch(kC, "p", std::move(ops));
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->documents.size(), 1000u);
  EXPECT_EQ(Drain(*store_, kC, cont).size(), 1000u);
  // The same batch again fails on its first operation and adds nothing.
  std::vector<WriteOp> again;
  for (int i = 999; i >= 0; --i) again.push_back(WriteOp::Create("new" + std::to_string(i), J("{}")));
  again.push_back(WriteOp::Create("id0", J("{}")));
  auto f = store_->Batch(kC, "p", std::move(again));
  ASSERT_TRUE(HasCode(f, ErrorCode::kAlreadyExists));
  EXPECT_EQ(FailedBatchIndex(f.error()), 1000u);
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "new5"), ErrorCode::kNotFound));
  EXPECT_TRUE(Drain(*store_, kC, cont).empty());
}

TEST_P(StoreConformanceTest, BatchWithLeaseFence) {
  auto lease = store_->AcquireLease(kLocks, "p", "owner-lock", "me", 10s);
  ASSERT_TRUE(IsOk(lease));
  EXPECT_TRUE(IsOk(store_->Batch(kC, "p", {WriteOp::Create("a", J("{}"))}, &*lease)));
  // A renewed lease keeps its fencing token: the old copy still fences.
  auto renewed = store_->RenewLease(*lease, 10s);
  ASSERT_TRUE(IsOk(renewed));
  EXPECT_TRUE(IsOk(store_->Batch(kC, "p", {WriteOp::Create("b", J("{}"))}, &*lease)));
  // Expired: stale.
  clock_.Advance(11s);
  auto r = store_->Batch(kC, "p", {WriteOp::Create("c", J("{}"))}, &*renewed);
  ASSERT_TRUE(HasCode(r, ErrorCode::kPreconditionFailed));
  EXPECT_FALSE(FailedBatchIndex(r.error()).has_value());
  // Taken over by someone else: stale for the old holder, good for the new one.
  auto other = store_->AcquireLease(kLocks, "p", "owner-lock", "other", 10s);
  ASSERT_TRUE(IsOk(other));
  EXPECT_TRUE(HasCode(store_->Batch(kC, "p", {WriteOp::Create("c", J("{}"))}, &*lease),
                      ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "c"), ErrorCode::kNotFound));
  EXPECT_TRUE(IsOk(store_->Batch(kC, "p", {WriteOp::Create("c", J("{}"))}, &*other)));
  // Released: stale.
  ASSERT_TRUE(IsOk(store_->ReleaseLease(*other)));
  EXPECT_TRUE(HasCode(store_->Batch(kC, "p", {WriteOp::Create("d", J("{}"))}, &*other),
                      ErrorCode::kPreconditionFailed));
  Lease never{.container = std::string(kLocks), .partition_key = "p", .name = "never", .owner = "me"};
  EXPECT_TRUE(HasCode(store_->Batch(kC, "p", {WriteOp::Create("d", J("{}"))}, &never),
                      ErrorCode::kPreconditionFailed));
}

// ------------------------------------------------------------------------------------------------
// TTL

TEST_P(StoreConformanceTest, ExpiredDocumentsAreInvisibleAtOnce) {
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "t", Res(kOpType, "op-t", "Accepted"), 10)));
  ASSERT_TRUE(IsOk(store_->Create(kC, "q", "t", Res(kOpType, "op-t", "Accepted"), 10)));
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "keep", J("{}"))));
  clock_.Advance(9999ms);
  EXPECT_TRUE(IsOk(store_->Read(kC, "p", "t")));
  clock_.Advance(1ms);  // exactly ttl later
  EXPECT_TRUE(HasCode(store_->Read(kC, "p", "t"), ErrorCode::kNotFound));
  QueryOptions q{.container = std::string(kC), .partition_key = "p"};
  EXPECT_EQ(QueryAll(*store_, q), V{"keep"});
  q.non_terminal_only = true;
  EXPECT_EQ(QueryAll(*store_, q), V{});
  QueryOptions cross{.container = std::string(kC)};
  cross.resource_type = std::string(kOpType);
  EXPECT_EQ(QueryAll(*store_, cross), V{});
  auto parts = store_->ListPartitions(kC, 10, "");
  ASSERT_TRUE(IsOk(parts));
  ASSERT_EQ(parts->documents.size(), 1u);
  EXPECT_EQ(parts->documents[0].partition_key, "p");
  EXPECT_TRUE(HasCode(store_->Replace(kC, "p", "t", J("{}")), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Patch(kC, "p", "t", {}), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Delete(kC, "p", "t"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Batch(kC, "p", {WriteOp::Read("t")}), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store_->Upsert(kC, "p", "t", J("{}"), "*"), ErrorCode::kPreconditionFailed));
  // A create over an expired document succeeds; the feed records the expiry first.
  std::string cont = Now(*store_);
  auto created = store_->Create(kC, "p", "t", J(R"({"new":true})"));
  ASSERT_TRUE(IsOk(created));
  auto upserted = store_->Upsert(kC, "q", "t", J(R"({"new":true})"));
  ASSERT_TRUE(IsOk(upserted));
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[0].kind, Change::Kind::kExpire);
  EXPECT_EQ(changes[0].document.body, Res(kOpType, "op-t", "Accepted"));
  EXPECT_EQ(changes[1].kind, Change::Kind::kCreate);
  EXPECT_EQ(changes[2].kind, Change::Kind::kExpire);
  EXPECT_EQ(changes[2].document.partition_key, "q");
  EXPECT_EQ(changes[3].kind, Change::Kind::kCreate);
  auto r = store_->Read(kC, "p", "t");
  ASSERT_TRUE(IsOk(r));
  EXPECT_FALSE(r->ttl_seconds);
  EXPECT_EQ(*store_->PurgeExpired(), 0u);
}

TEST_P(StoreConformanceTest, PurgeExpiredRecordsExpiries) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(IsOk(store_->Create(kC, "p", "t" + std::to_string(i), J(R"({"i":1})"), 5)));
  ASSERT_TRUE(IsOk(store_->Create(kLocks, "p", "lock", J("{}"), 5)));
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "long", J("{}"), 500)));
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "forever", J("{}"))));
  std::string cont = Now(*store_);
  std::string lock_cont = Now(*store_, kLocks);
  EXPECT_EQ(*store_->PurgeExpired(), 0u);
  clock_.Advance(6s);
  auto n = store_->PurgeExpired();
  ASSERT_TRUE(IsOk(n));
  EXPECT_EQ(*n, 4u);
  EXPECT_EQ(*store_->PurgeExpired(), 0u);
  auto changes = Drain(*store_, kC, cont);
  ASSERT_EQ(changes.size(), 3u);
  std::set<std::string> ids;
  for (auto& c : changes) {
    EXPECT_EQ(c.kind, Change::Kind::kExpire);
    EXPECT_EQ(c.document.body, J(R"({"i":1})"));
    EXPECT_EQ(c.document.ttl_seconds, 5);
    ids.insert(c.document.id);
  }
  EXPECT_EQ(ids, (std::set<std::string>{"t0", "t1", "t2"}));
  auto lock_changes = Drain(*store_, kLocks, lock_cont);
  ASSERT_EQ(lock_changes.size(), 1u);
  EXPECT_EQ(lock_changes[0].kind, Change::Kind::kExpire);
  EXPECT_TRUE(IsOk(store_->Read(kC, "p", "long")));
  EXPECT_TRUE(IsOk(store_->Read(kC, "p", "forever")));
}

TEST_P(StoreConformanceTest, RetentionRemovesOldChangesAndFailsPositionsBehindThem) {
  store_.reset();
  OpenOptions o;
  o.change_retention = 60s;
  store_ = OpenAnother(o);
  ASSERT_NE(store_, nullptr);
  std::string before = Now(*store_);
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "old", J("{}"))));
  auto read_old = store_->ReadChanges(kC, before, 10);
  ASSERT_TRUE(IsOk(read_old));
  ASSERT_EQ(read_old->changes.size(), 1u);
  std::string after_old = read_old->continuation;
  clock_.Advance(30s);
  EXPECT_TRUE(IsOk(store_->PurgeExpired()));
  std::string from = before;
  EXPECT_EQ(Drain(*store_, kC, from).size(), 1u);  // not old enough yet
  clock_.Advance(31s);
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "new", J("{}"))));
  ASSERT_TRUE(IsOk(store_->PurgeExpired()));

  // A reader that had not seen "old" is told so; one that had goes on; an empty continuation reads
  // what is kept; documents are untouched.
  EXPECT_TRUE(HasCode(store_->ReadChanges(kC, before, 10), ErrorCode::kOutOfRange));
  auto next = store_->ReadChanges(kC, after_old, 10);
  ASSERT_TRUE(IsOk(next));
  ASSERT_EQ(next->changes.size(), 1u);
  EXPECT_EQ(next->changes[0].document.id, "new");
  auto kept = store_->ReadChanges(kC, "", 10);
  ASSERT_TRUE(IsOk(kept));
  ASSERT_EQ(kept->changes.size(), 1u);
  EXPECT_EQ(kept->changes[0].document.id, "new");
  EXPECT_TRUE(IsOk(store_->Read(kC, "p", "old")));

  // "now" stays after everything, also once every change of the container is gone.
  clock_.Advance(61s);
  ASSERT_TRUE(IsOk(store_->PurgeExpired()));
  std::string now = Now(*store_);
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "later", J("{}"))));
  auto later = store_->ReadChanges(kC, now, 10);
  ASSERT_TRUE(IsOk(later));
  ASSERT_EQ(later->changes.size(), 1u);
  EXPECT_EQ(later->changes[0].document.id, "later");
  EXPECT_GT(later->changes[0].sequence, next->changes[0].sequence);
}

// Retention by size: the feed keeps the newest changes up to the bound, whatever their age.
TEST_P(StoreConformanceTest, RetentionBySizeKeepsTheNewestChanges) {
  store_.reset();
  OpenOptions o;
  o.change_retention_changes = 3;
  store_ = OpenAnother(o);
  ASSERT_NE(store_, nullptr);
  std::string before = Now(*store_);
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(IsOk(store_->Create(kC, "p", "d" + std::to_string(i), J("{}"))));
  auto first_four = store_->ReadChanges(kC, before, 4);
  ASSERT_TRUE(IsOk(first_four));
  ASSERT_EQ(first_four->changes.size(), 4u);
  ASSERT_TRUE(IsOk(store_->PurgeExpired()));  // no time passed: only the size bound applies
  EXPECT_TRUE(HasCode(store_->ReadChanges(kC, before, 10), ErrorCode::kOutOfRange));
  auto kept = store_->ReadChanges(kC, "", 10);
  ASSERT_TRUE(IsOk(kept));
  ASSERT_EQ(kept->changes.size(), 3u);
  EXPECT_EQ(kept->changes[0].document.id, "d4");
  EXPECT_EQ(kept->changes[2].document.id, "d6");
  auto rest = store_->ReadChanges(kC, first_four->continuation, 10);  // had read up to d3: goes on
  ASSERT_TRUE(IsOk(rest));
  ASSERT_EQ(rest->changes.size(), 3u);
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(IsOk(store_->Read(kC, "p", "d" + std::to_string(i))));
}

TEST_P(StoreConformanceTest, PurgeHandlesMoreThanOneChunk) {
  std::vector<WriteOp> ops;
  for (int i = 0; i < 1300; ++i) ops.push_back(WriteOp::Create("t" + std::to_string(i), J("{}"), 1));
  ASSERT_TRUE(IsOk(store_->Batch(kC, "p", std::move(ops))));
  std::string cont = Now(*store_);
  clock_.Advance(2s);
  auto n = store_->PurgeExpired();
  ASSERT_TRUE(IsOk(n));
  EXPECT_EQ(*n, 1300u);
  EXPECT_EQ(Drain(*store_, kC, cont, 1000).size(), 1300u);
}

TEST_P(StoreConformanceTest, BackgroundSweeperPurgesAndStopsCleanly) {
  store_.reset();
  OpenOptions o;
  o.purge_interval = 5ms;
  store_ = OpenAnother(o);
  ASSERT_NE(store_, nullptr);
  std::string cont = Now(*store_);
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "t", J("{}"), 1)));
  Drain(*store_, kC, cont);
  clock_.Advance(2s);
  std::vector<Change> seen;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
    auto w = store_->WaitForChanges(kC, cont, 1s);
    ASSERT_TRUE(IsOk(w));
    seen = Drain(*store_, kC, cont);
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, Change::Kind::kExpire);
  store_.reset();  // joins the sweeper
}

// ------------------------------------------------------------------------------------------------
// Change feed

// The feed lists the latest version of every document written and a tombstone per delete, in
// commit order; a version superseded before it is read is left out (its document's later change
// follows), so the feed does not keep a copy of every version.
TEST_P(StoreConformanceTest, ChangeFeedListsLatestVersionsInOrder) {
  auto c = store_->Create(kC, "p", "a", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(c));
  // Read while current, a version is in the feed with its body.
  auto early = store_->ReadChanges(kC, "", 100);
  ASSERT_TRUE(IsOk(early));
  ASSERT_EQ(early->changes.size(), 1u);
  EXPECT_EQ(early->changes[0].kind, Change::Kind::kCreate);
  EXPECT_EQ(early->changes[0].document.etag, c->etag);
  EXPECT_EQ(early->changes[0].document.body, J(R"({"v":1})"));
  auto r = store_->Replace(kC, "p", "a", J(R"({"v":2})"));
  ASSERT_TRUE(IsOk(r));
  auto u = store_->Upsert(kC, "q", "b", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(u));
  auto pt = store_->Patch(kC, "p", "a", {{PatchOp::Kind::kSet, "/v", 3}});
  ASSERT_TRUE(IsOk(pt));
  // The reader that saw the create resumes with the latest version of "a" and the create of "b".
  auto resumed = store_->ReadChanges(kC, early->continuation, 100);
  ASSERT_TRUE(IsOk(resumed));
  ASSERT_EQ(resumed->changes.size(), 2u);
  EXPECT_EQ(resumed->changes[0].document.id, "b");
  EXPECT_EQ(resumed->changes[1].kind, Change::Kind::kReplace);
  EXPECT_EQ(resumed->changes[1].document.etag, pt->etag);
  EXPECT_EQ(resumed->changes[1].document.body, J(R"({"v":3})"));
  ASSERT_TRUE(IsOk(store_->Delete(kC, "p", "a")));
  ASSERT_TRUE(IsOk(store_->Create(kBilling, "p", "other-container", J("{}"))));
  // Failed writes are not changes.
  EXPECT_FALSE(store_->Create(kC, "q", "b", J("{}")).ok());
  EXPECT_FALSE(store_->Replace(kC, "q", "b", J("{}"), "bad").ok());

  const std::vector<std::pair<Change::Kind, std::string>> want = {// kind, etag
                                                                  {Change::Kind::kCreate, u->etag},
                                                                  {Change::Kind::kDelete, pt->etag}};
  auto all = store_->ReadChanges(kC, "", 100);
  ASSERT_TRUE(IsOk(all));
  ASSERT_EQ(all->changes.size(), want.size());
  uint64_t last = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(all->changes[i].kind, want[i].first) << i;
    EXPECT_EQ(all->changes[i].document.etag, want[i].second) << i;
    EXPECT_GT(all->changes[i].sequence, last);
    last = all->changes[i].sequence;
  }
  EXPECT_EQ(all->changes[1].document.body, J(R"({"v":3})"));  // the tombstone keeps the last version
  EXPECT_EQ(all->changes[1].document.id, "a");
  EXPECT_EQ(all->changes[0].document.partition_key, "q");
  EXPECT_EQ(all->changes[0].document.timestamp_ms, u->timestamp_ms);

  // Paging: the continuation resumes exactly after what was returned.
  std::string cont;
  std::vector<Change> paged;
  for (int i = 0; i < 10; ++i) {
    auto p = store_->ReadChanges(kC, cont, 2);
    ASSERT_TRUE(IsOk(p));
    EXPECT_LE(p->changes.size(), 2u);
    EXPECT_NE(p->continuation, kChangeFeedNow);
    cont = p->continuation;
    if (p->changes.empty()) break;
    for (auto& ch : p->changes) paged.push_back(ch);
  }
  ASSERT_EQ(paged.size(), want.size());
  for (size_t i = 0; i < paged.size(); ++i) EXPECT_EQ(paged[i].sequence, all->changes[i].sequence);
  // Reading at the end returns nothing and keeps the position.
  auto end = store_->ReadChanges(kC, cont, 10);
  ASSERT_TRUE(IsOk(end));
  EXPECT_TRUE(end->changes.empty());
  EXPECT_EQ(end->continuation, cont);
  // "now" starts after everything so far.
  std::string now = Now(*store_);
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "later", J("{}"))));
  auto after_now = Drain(*store_, kC, now);
  ASSERT_EQ(after_now.size(), 1u);
  EXPECT_EQ(after_now[0].document.id, "later");
  auto more = Drain(*store_, kC, cont);
  ASSERT_EQ(more.size(), 1u);
  // Other containers have their own feed.
  auto billing = store_->ReadChanges(kBilling, "", 10);
  ASSERT_TRUE(IsOk(billing));
  ASSERT_EQ(billing->changes.size(), 1u);
  auto empty = store_->ReadChanges("never-written", "", 10);
  ASSERT_TRUE(IsOk(empty));
  EXPECT_TRUE(empty->changes.empty());
}

TEST_P(StoreConformanceTest, WaitForChangesTimesOutAndWakes) {
  std::string now = Now(*store_);
  auto t0 = std::chrono::steady_clock::now();
  auto w = store_->WaitForChanges(kC, now, 100ms);
  ASSERT_TRUE(IsOk(w));
  EXPECT_FALSE(*w);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 90ms);
  EXPECT_FALSE(*store_->WaitForChanges(kC, now, 0ms));
  // A write to another container does not count.
  ASSERT_TRUE(IsOk(store_->Create(kLocks, "p", "x", J("{}"))));
  EXPECT_FALSE(*store_->WaitForChanges(kC, now, 50ms));

  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(IsOk(store_->Create(kC, "p", "x", J("{}"))));
  });
  t0 = std::chrono::steady_clock::now();
  w = store_->WaitForChanges(kC, now, 30s);
  auto waited = std::chrono::steady_clock::now() - t0;
  writer.join();
  ASSERT_TRUE(IsOk(w));
  EXPECT_TRUE(*w);
  EXPECT_LT(waited, 10s);
  // Changes already there: at once.
  EXPECT_TRUE(*store_->WaitForChanges(kC, "", 0ms));
  EXPECT_TRUE(*store_->WaitForChanges(kC, now, 30s));
}

TEST_P(StoreConformanceTest, WaitForChangesDoesNotSpin) {
  std::string now = Now(*store_);
  auto cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  };
  auto cpu0 = cpu();
  auto t0 = std::chrono::steady_clock::now();
  auto w = store_->WaitForChanges(kC, now, 1s);
  auto wall = std::chrono::steady_clock::now() - t0;
  auto used = cpu() - cpu0;
  ASSERT_TRUE(IsOk(w));
  EXPECT_FALSE(*w);
  EXPECT_GE(wall, 900ms);
  EXPECT_LT(used, 100ms) << "the waiting thread burnt "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(used).count()
                         << " ms of CPU";
}

TEST_P(StoreConformanceTest, ChangeFeedIsCompleteWithConcurrentWritersAndReaders) {
  constexpr int kWriters = 4, kOps = 45, kReaders = 3;
  std::string start = Now(*store_);
  std::vector<std::vector<std::string>> committed(kWriters);  // per writer, in commit order
  std::atomic<bool> writers_done{false};

  auto key_of = [](const Change& c) {
    switch (c.kind) {
      case Change::Kind::kCreate:
        return "c:" + c.document.etag;
      case Change::Kind::kReplace:
        return "r:" + c.document.etag;
      default:
        return "d:" + c.document.id;
    }
  };
  std::vector<std::vector<Change>> seen(kReaders);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      std::string cont = start;
      size_t page = 3 + static_cast<size_t>(r) * 4;
      while (true) {
        bool done = writers_done.load();
        auto p = store_->ReadChanges(kC, cont, page);
        ASSERT_TRUE(IsOk(p));
        cont = p->continuation;
        for (auto& c : p->changes) seen[r].push_back(c);
        if (p->changes.empty()) {
          if (done) return;
          ASSERT_TRUE(IsOk(store_->WaitForChanges(kC, cont, 200ms)));
        }
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::string pk = "p" + std::to_string(w % 2);
      for (int i = 0; i < kOps; ++i) {
        std::string id = "w" + std::to_string(w) + "-" + std::to_string(i / 3);
        json::object body;
        body["i"] = i;
        switch (i % 3) {
          case 0: {
            auto d = store_->Create(kC, pk, id, body);
            ASSERT_TRUE(IsOk(d));
            committed[w].push_back("c:" + d->etag);
            break;
          }
          case 1: {
            auto d = store_->Batch(kC, pk, {WriteOp::Replace(id, body)});
            ASSERT_TRUE(IsOk(d));
            committed[w].push_back("r:" + d->documents[0].etag);
            break;
          }
          default:
            ASSERT_TRUE(IsOk(store_->Delete(kC, pk, id)));
            committed[w].push_back("d:" + id);
            break;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  writers_done = true;
  for (auto& t : readers) t.join();

  std::set<std::string> all, tombstones;
  for (auto& c : committed) {
    all.insert(c.begin(), c.end());
    for (const std::string& k : c) {
      if (k.rfind("d:", 0) == 0) tombstones.insert(k);
    }
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(kWriters * kOps));
  // Each reader saw every delete (the latest version of every document) and otherwise only
  // versions that were committed, each once, in each writer's commit order: a version superseded
  // before the reader got to it is left out, never reordered or repeated.
  for (int r = 0; r < kReaders; ++r) {
    std::set<std::string> keys, seen_tombstones;
    std::vector<std::vector<std::string>> per_writer(kWriters);
    uint64_t last = 0;
    for (auto& c : seen[r]) {
      EXPECT_GT(c.sequence, last);
      last = c.sequence;
      std::string k = key_of(c);
      EXPECT_TRUE(keys.insert(k).second) << "seen twice: " << k;
      EXPECT_TRUE(all.count(k)) << "never committed: " << k;
      if (k.rfind("d:", 0) == 0) seen_tombstones.insert(k);
      int w = c.document.id[1] - '0';
      per_writer[w].push_back(k);
    }
    EXPECT_EQ(seen_tombstones, tombstones) << "reader " << r;
    for (int w = 0; w < kWriters; ++w) {
      size_t at = 0;  // per_writer[w] is a subsequence of committed[w]
      for (const std::string& k : per_writer[w]) {
        while (at < committed[w].size() && committed[w][at] != k) ++at;
        EXPECT_LT(at, committed[w].size())
            << "reader " << r << " writer " << w << ": " << k << " out of order";
        ++at;
      }
    }
  }
  // Read afterwards, the feed holds the tombstones only: every earlier version was superseded.
  std::string from = start;
  auto final_feed = Drain(*store_, kC, from);
  std::set<std::string> final_keys;
  for (auto& c : final_feed) final_keys.insert(key_of(c));
  EXPECT_EQ(final_keys, tombstones);
}

// ------------------------------------------------------------------------------------------------
// Races

TEST_P(StoreConformanceTest, IfMatchRaceHasExactlyOneWinnerPerEtag) {
  constexpr int kThreads = 8, kRounds = 15;
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "counter", J(R"({"n":0})"))));
  std::barrier sync(kThreads);
  std::atomic<int> wins[kRounds] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (std::atomic<int>& round_wins : wins) {
        sync.arrive_and_wait();  // nobody writes before everyone has read
        auto d = store_->Read(kC, "p", "counter");
        ASSERT_TRUE(IsOk(d));
        sync.arrive_and_wait();
        json::value body = d->body;
        body.as_object()["n"] = body.as_object()["n"].as_int64() + 1;
        auto r = store_->Replace(kC, "p", "counter", std::move(body), d->etag);
        if (r.ok()) {
          round_wins.fetch_add(1);
        } else {
          EXPECT_TRUE(HasCode(r, ErrorCode::kPreconditionFailed));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int round = 0; round < kRounds; ++round) EXPECT_EQ(wins[round].load(), 1) << "round " << round;
  auto d = store_->Read(kC, "p", "counter");
  ASSERT_TRUE(IsOk(d));
  EXPECT_EQ(d->body.as_object().at("n").as_int64(), kRounds);
}

TEST_P(StoreConformanceTest, OptimisticRetryLoopsLoseNoUpdate) {
  constexpr int kThreads = 6, kPerThread = 12;
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "counter", J(R"({"n":0})"))));
  std::mutex mu;
  std::set<std::string> replaced_etags;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kPerThread;) {
        auto d = store_->Read(kC, "p", "counter");
        ASSERT_TRUE(IsOk(d));
        json::value body = d->body;
        body.as_object()["n"] = body.as_object()["n"].as_int64() + 1;
        auto r = store_->Replace(kC, "p", "counter", std::move(body), d->etag);
        if (!r.ok()) {
          ASSERT_TRUE(HasCode(r, ErrorCode::kPreconditionFailed));
          continue;
        }
        ++done;
        std::lock_guard lk(mu);
        EXPECT_TRUE(replaced_etags.insert(d->etag).second) << "two winners for etag " << d->etag;
      }
    });
  }
  for (auto& t : threads) t.join();
  auto d = store_->Read(kC, "p", "counter");
  ASSERT_TRUE(IsOk(d));
  EXPECT_EQ(d->body.as_object().at("n").as_int64(), kThreads * kPerThread);
}

TEST_P(StoreConformanceTest, ConcurrentPatchIncrementsAreSerialised) {
  constexpr int kThreads = 6, kPerThread = 15;
  ASSERT_TRUE(IsOk(store_->Create(kC, "p", "counter", J(R"({"n":0})"))));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(IsOk(store_->Patch(kC, "p", "counter", {{PatchOp::Kind::kIncrement, "/n", 1}})));
      }
    });
  }
  for (auto& t : threads) t.join();
  auto d = store_->Read(kC, "p", "counter");
  ASSERT_TRUE(IsOk(d));
  EXPECT_EQ(d->body.as_object().at("n").as_int64(), kThreads * kPerThread);
}

TEST_P(StoreConformanceTest, ConcurrentCreatesHaveOneWinner) {
  constexpr int kThreads = 8, kIds = 10;
  std::barrier sync(kThreads);
  std::atomic<int> wins[kIds] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIds; ++i) {
        sync.arrive_and_wait();
        json::object body;
        body["t"] = t;
        auto r = store_->Create(kC, "p", "id" + std::to_string(i), body);
        if (r.ok()) {
          wins[i].fetch_add(1);
        } else {
          EXPECT_TRUE(HasCode(r, ErrorCode::kAlreadyExists));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kIds; ++i) EXPECT_EQ(wins[i].load(), 1) << i;
}

// ------------------------------------------------------------------------------------------------
// Leases

TEST_P(StoreConformanceTest, LeaseLifecycle) {
  auto a = store_->AcquireLease(kLocks, "sub1", "sub1", "pod-a", 10s);
  ASSERT_TRUE(IsOk(a));
  EXPECT_EQ(a->container, kLocks);
  EXPECT_EQ(a->partition_key, "sub1");
  EXPECT_EQ(a->name, "sub1");
  EXPECT_EQ(a->owner, "pod-a");
  EXPECT_FALSE(a->etag.empty());
  EXPECT_EQ(a->expires_at, clock_.Now() + 10s);
  EXPECT_GE(a->fencing_token, 1u);
  // Held: nobody else, not even the same owner, can acquire it.
  EXPECT_TRUE(HasCode(store_->AcquireLease(kLocks, "sub1", "sub1", "pod-b", 10s), ErrorCode::kConflict));
  EXPECT_TRUE(HasCode(store_->AcquireLease(kLocks, "sub1", "sub1", "pod-a", 10s), ErrorCode::kConflict));
  // Other names and partitions are other leases.
  EXPECT_TRUE(IsOk(store_->AcquireLease(kLocks, "sub1", "other", "pod-b", 10s)));
  EXPECT_TRUE(IsOk(store_->AcquireLease(kLocks, "sub2", "sub1", "pod-b", 10s)));
  // Leases are not documents.
  EXPECT_TRUE(HasCode(store_->Read(kLocks, "sub1", "sub1"), ErrorCode::kNotFound));
  // Renew: new etag and expiry, same fencing token; the old etag is stale.
  clock_.Advance(5s);
  auto renewed = store_->RenewLease(*a, 20s);
  ASSERT_TRUE(IsOk(renewed));
  EXPECT_NE(renewed->etag, a->etag);
  EXPECT_EQ(renewed->fencing_token, a->fencing_token);
  EXPECT_EQ(renewed->expires_at, clock_.Now() + 20s);
  EXPECT_TRUE(HasCode(store_->RenewLease(*a, 10s), ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(HasCode(store_->ReleaseLease(*a), ErrorCode::kPreconditionFailed));
  clock_.Advance(15s);  // past the first expiry, within the renewed one
  EXPECT_TRUE(HasCode(store_->AcquireLease(kLocks, "sub1", "sub1", "pod-b", 10s), ErrorCode::kConflict));
  // Release, then anyone can take it with a higher fencing token.
  ASSERT_TRUE(IsOk(store_->ReleaseLease(*renewed)));
  EXPECT_TRUE(HasCode(store_->ReleaseLease(*renewed), ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(HasCode(store_->RenewLease(*renewed, 10s), ErrorCode::kPreconditionFailed));
  auto b = store_->AcquireLease(kLocks, "sub1", "sub1", "pod-b", 10s);
  ASSERT_TRUE(IsOk(b));
  EXPECT_GT(b->fencing_token, a->fencing_token);
  // Expiry: the holder loses it without releasing; a takeover gets a higher token.
  clock_.Advance(10s);
  EXPECT_TRUE(HasCode(store_->RenewLease(*b, 10s), ErrorCode::kPreconditionFailed));
  auto c = store_->AcquireLease(kLocks, "sub1", "sub1", "pod-c", 10s);
  ASSERT_TRUE(IsOk(c));
  EXPECT_GT(c->fencing_token, b->fencing_token);
  EXPECT_TRUE(HasCode(store_->ReleaseLease(*b), ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(IsOk(store_->RenewLease(*c, 10s)));
}

TEST_P(StoreConformanceTest, FencingTokensGrowAcrossAcquisitions) {
  uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    auto l = store_->AcquireLease(kLocks, "p", "lease", "owner" + std::to_string(i % 3), 1s);
    ASSERT_TRUE(IsOk(l));
    EXPECT_GT(l->fencing_token, last);
    last = l->fencing_token;
    if (i % 2 == 0) {
      ASSERT_TRUE(IsOk(store_->ReleaseLease(*l)));
    } else {
      clock_.Advance(1s);  // let it expire
    }
  }
}

TEST_P(StoreConformanceTest, ConcurrentLeaseAcquisitionHasOneWinner) {
  constexpr int kThreads = 8, kRounds = 8;
  std::barrier sync(kThreads);
  std::atomic<int> wins[kRounds] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        sync.arrive_and_wait();
        auto l = store_->AcquireLease(kLocks, "p", "lease" + std::to_string(round), "pod" + std::to_string(t),
                                      30s);
        if (l.ok()) {
          wins[round].fetch_add(1);
        } else {
          EXPECT_TRUE(HasCode(l, ErrorCode::kConflict));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int round = 0; round < kRounds; ++round) EXPECT_EQ(wins[round].load(), 1) << round;
}

// ------------------------------------------------------------------------------------------------
// Several handles on one database (another process's view)

TEST_P(StoreConformanceTest, SecondHandleSeesWritesAndChanges) {
  if (!env_->SupportsMultipleHandles()) GTEST_SKIP() << "engine environment has one handle per database";
  auto other = OpenAnother();
  ASSERT_NE(other, nullptr);
  std::string cont = Now(*other);
  auto d = store_->Create(kC, "p", "x", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(d));
  auto r = other->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->etag, d->etag);
  // If-Match across handles.
  auto o = other->Replace(kC, "p", "x", J(R"({"v":2})"), d->etag);
  ASSERT_TRUE(IsOk(o));
  EXPECT_TRUE(
      HasCode(store_->Replace(kC, "p", "x", J(R"({"v":3})"), d->etag), ErrorCode::kPreconditionFailed));
  // A waiter on one handle wakes on a commit through the other.
  std::string now = Now(*other);
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(IsOk(store_->Create(kC, "p", "y", J("{}"))));
  });
  auto t0 = std::chrono::steady_clock::now();
  auto w = other->WaitForChanges(kC, now, 30s);
  auto waited = std::chrono::steady_clock::now() - t0;
  writer.join();
  ASSERT_TRUE(IsOk(w));
  EXPECT_TRUE(*w);
  EXPECT_LT(waited, 5s);
  auto changes = Drain(*other, kC, cont);
  ASSERT_EQ(changes.size(), 2u);  // x's create was superseded by the replace through the other handle
  EXPECT_EQ(changes[0].document.etag, o->etag);
  EXPECT_EQ(changes[1].document.id, "y");
  // Leases are shared too.
  auto l = store_->AcquireLease(kLocks, "p", "l", "a", 10s);
  ASSERT_TRUE(IsOk(l));
  EXPECT_TRUE(HasCode(other->AcquireLease(kLocks, "p", "l", "b", 10s), ErrorCode::kConflict));
}

TEST_P(StoreConformanceTest, DataSurvivesReopen) {
  if (!env_->SupportsMultipleHandles()) GTEST_SKIP() << "engine environment has one handle per database";
  auto d = store_->Create(kC, "p", "x", J(R"({"v":1})"));
  ASSERT_TRUE(IsOk(d));
  auto l = store_->AcquireLease(kLocks, "p", "l", "a", 10s);
  ASSERT_TRUE(IsOk(l));
  ASSERT_TRUE(IsOk(store_->ReleaseLease(*l)));
  store_.reset();
  store_ = OpenAnother();
  ASSERT_NE(store_, nullptr);
  auto r = store_->Read(kC, "p", "x");
  ASSERT_TRUE(IsOk(r));
  EXPECT_EQ(r->etag, d->etag);
  auto changes = store_->ReadChanges(kC, "", 10);
  ASSERT_TRUE(IsOk(changes));
  EXPECT_EQ(changes->changes.size(), 1u);
  auto l2 = store_->AcquireLease(kLocks, "p", "l", "b", 10s);
  ASSERT_TRUE(IsOk(l2));
  EXPECT_GT(l2->fencing_token, l->fencing_token);
}

}  // namespace
}  // namespace hcprp::store::testing
