#include "store/document_logic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace hcprp::store::internal {
namespace {

json::value J(std::string_view text) { return *ParseJson(text); }

TEST(JsonPointer, ParsesAndUnescapes) {
  EXPECT_EQ(*ParseJsonPointer(""), std::vector<std::string>{});
  EXPECT_EQ(*ParseJsonPointer("/"), std::vector<std::string>{""});
  EXPECT_EQ(*ParseJsonPointer("/a/b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*ParseJsonPointer("/a~1b/c~0d/"), (std::vector<std::string>{"a/b", "c~d", ""}));
  EXPECT_FALSE(ParseJsonPointer("a").ok());
  EXPECT_FALSE(ParseJsonPointer("/a~").ok());
  EXPECT_FALSE(ParseJsonPointer("/a~2").ok());
}

TEST(Patch, ArraysAndObjects) {
  json::value v = J(R"({"a":[1,2,3],"o":{}})");
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kAdd, "/a/0", 0}}).ok());
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kSet, "/a/4", 4}}).ok());  // append at size
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kSet, "/a/-", 5}}).ok());
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kRemove, "/a/1", nullptr}}).ok());
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kReplace, "/a/0", "zero"}}).ok());
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kIncrement, "/a/1", 10}}).ok());
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kSet, "/o/", "empty key"}}).ok());
  EXPECT_EQ(v, J(R"({"a":["zero",12,3,4,5],"o":{"":"empty key"}})"));
  EXPECT_FALSE(ApplyPatch(v, {{PatchOp::Kind::kSet, "/a/9", 1}}).ok());
  EXPECT_FALSE(ApplyPatch(v, {{PatchOp::Kind::kReplace, "/a/-", 1}}).ok());
  EXPECT_FALSE(ApplyPatch(v, {{PatchOp::Kind::kRemove, "/a/01", nullptr}}).ok());  // leading zero
  EXPECT_FALSE(ApplyPatch(v, {{PatchOp::Kind::kIncrement, "/a/0", 1}}).ok());
  json::value arr = J("[1]");
  EXPECT_FALSE(ApplyPatch(arr, {{PatchOp::Kind::kSet, "/0", 2}}).ok());  // the body must be an object
}

TEST(Patch, IncrementTypes) {
  json::value v = J(R"({"i":1,"d":1.5,"u":18446744073709551615,"min":-9223372036854775808})");
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kIncrement, "/i", -3}}).ok());
  EXPECT_EQ(v.at("i"), json::value(-2));
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kIncrement, "/i", 0.5}}).ok());
  EXPECT_EQ(v.at("i"), json::value(-1.5));
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kIncrement, "/d", 1}}).ok());
  EXPECT_EQ(v.at("d"), json::value(2.5));
  ASSERT_TRUE(ApplyPatch(v, {{PatchOp::Kind::kIncrement, "/u", 1}}).ok());  // beyond int64: double
  EXPECT_TRUE(v.at("u").is_double());
  auto st = ApplyPatch(v, {{PatchOp::Kind::kIncrement, "/min", -1}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
}

TEST(ValidateBody, RejectsWhatCannotBeStored) {
  EXPECT_TRUE(ValidateBody(J(R"({"a":[1,{"b":1.5}]})")).ok());
  EXPECT_FALSE(ValidateBody(J("[]")).ok());
  for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    json::object o;
    o["deep"] = json::array{1, json::object{{"x", bad}}};
    auto st = ValidateBody(o);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  }
  json::value deep = json::object();
  json::value* cur = &deep;
  for (size_t i = 0; i < kMaxBodyDepth; ++i) cur = &(cur->as_object()["d"] = json::object());
  EXPECT_FALSE(ValidateBody(deep).ok());
  json::value ok = J(R"({"n":1e308})");
  EXPECT_FALSE(ApplyPatch(ok, {{PatchOp::Kind::kIncrement, "/n", 1e308}}).ok());  // the result is infinite
}

TEST(Conditions, EqualityAndAbsence) {
  json::value v = J(R"({"a":{"b":[10,{"c":null}]}})");
  EXPECT_TRUE(CheckConditions(&v, {{"/a/b/0", json::value(10)}}).ok());
  EXPECT_TRUE(CheckConditions(&v, {{"/a/b/1/c", json::value(nullptr)}}).ok());  // present and null
  EXPECT_FALSE(CheckConditions(&v, {{"/a/b/1/c", std::nullopt}}).ok());
  EXPECT_TRUE(CheckConditions(&v, {{"/a/x", std::nullopt}}).ok());
  EXPECT_TRUE(CheckConditions(&v, {{"/a/b/2", std::nullopt}}).ok());
  EXPECT_EQ(CheckConditions(&v, {{"/a/b/0", json::value(11)}}).error().code(),
            ErrorCode::kPreconditionFailed);
  EXPECT_EQ(CheckConditions(nullptr, {{"/a", json::value(1)}}).error().code(),
            ErrorCode::kPreconditionFailed);
  EXPECT_TRUE(CheckConditions(nullptr, {{"/a", std::nullopt}}).ok());
  EXPECT_EQ(CheckConditions(&v, {{"a", std::nullopt}}).error().code(), ErrorCode::kInvalidArgument);
}

TEST(IfMatch, Rules) {
  std::string etag = "e1";
  EXPECT_TRUE(CheckIfMatch(std::nullopt, nullptr).ok());
  EXPECT_TRUE(CheckIfMatch("e1", &etag).ok());
  EXPECT_TRUE(CheckIfMatch("*", &etag).ok());
  EXPECT_FALSE(CheckIfMatch("e2", &etag).ok());
  EXPECT_FALSE(CheckIfMatch("*", nullptr).ok());
}

TEST(IndexedFields, Extraction) {
  auto ix = DocumentIndexer::Make({.resource_type = "/resourceType",
                                   .resource_id = "/properties/resourceId",
                                   .status = "/properties/status",
                                   .terminal_statuses = {"Succeeded", "Failed", "Canceled"}});
  ASSERT_TRUE(ix.ok());
  auto f = ix->Extract(J(R"({"resourceType":"A/B","properties":{"resourceId":"/X/Y","status":"Accepted"}})"));
  EXPECT_EQ(f.resource_type, "a/b");
  EXPECT_EQ(f.resource_id, "/x/y");
  EXPECT_EQ(f.status, "Accepted");
  EXPECT_TRUE(f.non_terminal);
  for (const char* s : {"Succeeded", "failed", "CANCELED"}) {
    json::object o;
    o["properties"] = json::object{{"status", s}};
    EXPECT_FALSE(ix->Extract(o).non_terminal) << s;
  }
  auto none = ix->Extract(J(R"({"resourceType":1,"properties":"x"})"));
  EXPECT_FALSE(none.resource_type);
  EXPECT_FALSE(none.resource_id);
  EXPECT_FALSE(none.non_terminal);
}

TEST(IndexedFields, OnlyTheNamedMembers) {
  auto ix = DocumentIndexer::Make({.resource_id = "/a~1b/0", .status = "/s", .terminal_statuses = {"end"}});
  ASSERT_TRUE(ix.ok());
  auto f = ix->Extract(J(R"({"resourceType":"t","a/b":["K"],"s":"End"})"));
  EXPECT_FALSE(f.resource_type);
  EXPECT_EQ(f.resource_id, "k");
  EXPECT_EQ(f.status, "End");
  EXPECT_FALSE(f.non_terminal);
  EXPECT_TRUE(ix->Extract(J(R"({"s":"going"})")).non_terminal);
  EXPECT_TRUE(DocumentIndexer().Extract(J(R"({"resourceType":"t"})")).resource_type == std::nullopt);

  QueryOptions q{.container = "c", .partition_key = "p"};
  q.resource_id_prefix = "k";
  EXPECT_TRUE(ix->CheckQuery(q).ok());
  q.resource_type = "t";
  EXPECT_EQ(ix->CheckQuery(q).error().code(), ErrorCode::kInvalidArgument);

  EXPECT_EQ(DocumentIndexer::Make({.resource_type = "resourceType"}).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(DocumentIndexer::Make({.status = "/bad~2"}).error().code(), ErrorCode::kInvalidArgument);
}

TEST(Tokens, RoundTrip) {
  std::string pk("\0\xff/", 3), id("a.b", 3);
  auto q = DecodeQueryContinuation(EncodeQueryContinuation(pk, id));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->first, pk);
  EXPECT_EQ(q->second, id);
  EXPECT_FALSE(DecodeQueryContinuation("q1.zz.00").ok());
  EXPECT_FALSE(DecodeQueryContinuation("q1.0").ok());
  EXPECT_FALSE(DecodeQueryContinuation("").ok());
  EXPECT_EQ(*DecodePartitionContinuation(EncodePartitionContinuation(pk)), pk);
  EXPECT_FALSE(DecodePartitionContinuation("q1.00").ok());
  EXPECT_EQ(**DecodeChangeContinuation("42"), 42u);
  EXPECT_EQ(**DecodeChangeContinuation(""), 0u);
  EXPECT_FALSE(DecodeChangeContinuation("now")->has_value());
  EXPECT_FALSE(DecodeChangeContinuation("4x").ok());
  EXPECT_FALSE(DecodeChangeContinuation("99999999999999999999999").ok());
}

TEST(PrefixUpperBound, Bytes) {
  EXPECT_EQ(PrefixUpperBound("abc"), "abd");
  EXPECT_EQ(PrefixUpperBound(std::string("a\xff", 2)), "b");
  EXPECT_FALSE(PrefixUpperBound("\xff\xff"));
  EXPECT_FALSE(PrefixUpperBound(""));
}

TEST(Etag, UniqueAndShaped) {
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    std::string e = NewEtag();
    ASSERT_EQ(e.size(), 36u);
    EXPECT_EQ(e[8], '-');
    EXPECT_TRUE(seen.insert(e).second);
  }
}

TEST(BatchErrors, IndexRoundTrip) {
  Error e = BatchOperationError(3, Error::NotFound("document x does not exist"));
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_EQ(e.message(), "operation 3: document x does not exist");
  EXPECT_EQ(FailedBatchIndex(e), 3u);
  EXPECT_FALSE(FailedBatchIndex(Error::NotFound("operation x: y")).has_value());
  EXPECT_FALSE(FailedBatchIndex(Error::NotFound("operation 3 without colon")).has_value());
  EXPECT_FALSE(FailedBatchIndex(Error::IoError("disk")).has_value());
}

// Every engine reads back what ValidateBody lets it write, and refuses what is nested deeper than
// the one limit (kMaxBodyDepth objects and arrays).
TEST(StoredBodies, ReadBackAcceptsWhatWritesAcceptUpToTheOneLimit) {
  for (size_t depth = kMaxBodyDepth - 2; depth <= kMaxBodyDepth + 3; ++depth) {
    for (bool scalar_leaf : {false, true}) {
      json::value v = scalar_leaf ? json::value(json::object{{"leaf", 1}}) : json::value(json::object{});
      for (size_t i = 1; i < depth; ++i) v = json::object{{"n", std::move(v)}};  // `depth` objects
      const bool writable = ValidateBody(v).ok();
      auto read = ParseStoredBody(json::serialize(v));
      if (writable) {
        ASSERT_TRUE(read.ok()) << "depth " << depth;
        EXPECT_EQ(*read, v);
      }
      EXPECT_EQ(read.ok(), depth <= kMaxBodyDepth) << "depth " << depth;
      EXPECT_EQ(writable, depth + (scalar_leaf ? 1 : 0) <= kMaxBodyDepth) << "depth " << depth;
    }
  }
  EXPECT_EQ(ParseStoredBody("{\"a\":").error().code(), ErrorCode::kCorruption);
}

TEST(StoredBodies, NamesInMessagesEscapeEveryByte) {
  EXPECT_EQ(DocName("c", std::string("p\0", 2),
                    "i\x01"
                    "d"),
            "document \"i\\x01d\" in c/\"p\\x00\"");
  EXPECT_EQ(Printable(std::string(300, 'a')).size(), 203u);
}

TEST(OpenStore, RejectsUnknownUrlsAndMissingClock) {
  FakeClock clock;
  OpenOptions o;
  EXPECT_EQ(OpenStore("sqlite::memory:", o).error().code(), ErrorCode::kInvalidArgument);  // no clock
  o.clock = &clock;
  EXPECT_EQ(OpenStore("mysql://x", o).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("sqlite:relative.db", o).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(OpenStore("sqlite::memory:", o).ok());
}

}  // namespace
}  // namespace hcprp::store::internal
