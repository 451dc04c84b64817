#include "store/metrics_store.h"

#include <gtest/gtest.h>

#include "core/clock.h"

namespace hcprp::store {
namespace {

TEST(MetricsStore, CountsCallsByOutcomeAndTimesThem) {
  FakeClock clock;
  OpenOptions o;
  o.clock = &clock;
  auto inner = OpenStore("sqlite::memory:", o);
  ASSERT_TRUE(inner.ok()) << inner.error().message();
  metrics::Registry registry;
  MetricsStore s(inner->get(), &registry, EngineOfUrl("sqlite::memory:"));

  ASSERT_TRUE(s.Create(kResources, "p", "a", json::object{{"x", 1}}).ok());
  EXPECT_TRUE(s.Create(kResources, "p", "a", json::object{{"x", 1}}).error().IsAlreadyExists());
  EXPECT_TRUE(s.Read(kResources, "p", "missing").error().IsNotFound());
  ASSERT_TRUE(s.Read(kResources, "p", "a").ok());

  std::string text = registry.Expose();
  EXPECT_NE(text.find("hcprp_store_calls_total{engine=\"sqlite\",operation=\"create\",outcome=\"ok\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("hcprp_store_calls_total{engine=\"sqlite\",operation=\"create\",outcome=\"conflict\"} 1\n"),
      std::string::npos);
  EXPECT_NE(
      text.find("hcprp_store_calls_total{engine=\"sqlite\",operation=\"read\",outcome=\"not_found\"} 1\n"),
      std::string::npos);
  EXPECT_NE(text.find("hcprp_store_call_duration_seconds_count{engine=\"sqlite\",operation=\"read\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(
      text.find("hcprp_store_call_duration_seconds_count{engine=\"sqlite\",operation=\"wait_for_changes\"}"),
      std::string::npos);
}

TEST(MetricsStore, EngineOfUrl) {
  EXPECT_EQ(EngineOfUrl("sqlite:///tmp/x.db"), "sqlite");
  EXPECT_EQ(EngineOfUrl("postgresql://u@h:5432/d"), "postgresql");
  EXPECT_EQ(EngineOfUrl("mysql://x"), "other");
}

}  // namespace
}  // namespace hcprp::store
