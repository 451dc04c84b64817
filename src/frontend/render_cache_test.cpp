#include "frontend/render_cache.h"

#include <gtest/gtest.h>

namespace hcprp::frontend {
namespace {

std::shared_ptr<const std::string> Text(size_t n, char c) {
  return std::make_shared<const std::string>(n, c);
}

TEST(RenderCacheTest, KeyNamesVersionAndApiVersion) {
  EXPECT_NE(RenderCache::Key("2026-10-01", "id", "e1", 1), RenderCache::Key("2026-10-01", "id", "e2", 1));
  EXPECT_NE(RenderCache::Key("2026-10-01", "id", "e1", 1), RenderCache::Key("2026-10-01", "id", "e1", 2));
  EXPECT_NE(RenderCache::Key("2026-10-01", "id", "e1", 1),
            RenderCache::Key("2024-06-10-preview", "id", "e1", 1));
  EXPECT_EQ(RenderCache::Key("2026-10-01", "id", "e1", 1), RenderCache::Key("2026-10-01", "id", "e1", 1));
}

TEST(RenderCacheTest, FindsWhatWasInsertedAndReplaces) {
  RenderCache cache(1 << 20);
  EXPECT_EQ(cache.Find("a"), nullptr);
  cache.Insert("a", Text(10, 'x'));
  ASSERT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(*cache.Find("a"), std::string(10, 'x'));
  cache.Insert("a", Text(20, 'y'));
  EXPECT_EQ(*cache.Find("a"), std::string(20, 'y'));
  EXPECT_EQ(cache.Entries(), 1u);
}

TEST(RenderCacheTest, DropsTheLeastRecentlyUsedBeyondTheBudget) {
  // Each entry costs its key, its text and 64 bytes: three of 1,000 fit in 3,300, four do not.
  RenderCache cache(3300);
  cache.Insert("a", Text(1000, 'a'));
  cache.Insert("b", Text(1000, 'b'));
  cache.Insert("c", Text(1000, 'c'));
  ASSERT_NE(cache.Find("a"), nullptr);  // "b" is now the least recently used
  cache.Insert("d", Text(1000, 'd'));
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("c"), nullptr);
  EXPECT_NE(cache.Find("d"), nullptr);
  EXPECT_LE(cache.Bytes(), 3300u);
  EXPECT_EQ(cache.Entries(), 3u);
}

TEST(RenderCacheTest, KeepsNothingLargerThanItsBudget) {
  RenderCache none(0);
  none.Insert("a", Text(1, 'a'));
  EXPECT_EQ(none.Find("a"), nullptr);
  EXPECT_EQ(none.Bytes(), 0u);
  RenderCache small(500);
  small.Insert("a", Text(100, 'a'));
  small.Insert("big", Text(1000, 'b'));
  EXPECT_EQ(small.Find("big"), nullptr);
  EXPECT_NE(small.Find("a"), nullptr);
}

}  // namespace
}  // namespace hcprp::frontend
