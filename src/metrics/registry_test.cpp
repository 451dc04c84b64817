#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <thread>

namespace hcprp::metrics {
namespace {

TEST(Registry, CounterExposition) {
  Registry r;
  auto& f = r.AddCounter("test_requests_total", "Requests\nanswered", {"route", "status"});
  f.With({"/a", "200"})->Inc();
  f.With({"/a", "200"})->Inc(2);
  f.With({"/b\"x\\", "500"})->Inc();
  f.With({"/a", "200"})->Inc(-5);  // counters never go down
  std::string text = r.Expose();
  EXPECT_NE(text.find("# HELP test_requests_total Requests\\nanswered\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE test_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("test_requests_total{route=\"/a\",status=\"200\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_requests_total{route=\"/b\\\"x\\\\\",status=\"500\"} 1\n"), std::string::npos)
      << text;
}

TEST(Registry, GaugeWithoutLabels) {
  Registry r;
  auto& g = r.AddGauge("test_in_flight", "In flight");
  g.With({})->Add(3);
  g.With({})->Add(-1);
  EXPECT_NE(r.Expose().find("\ntest_in_flight 2\n"), std::string::npos) << r.Expose();
  g.With({})->Set(0.25);
  EXPECT_NE(r.Expose().find("\ntest_in_flight 0.25\n"), std::string::npos) << r.Expose();
}

TEST(Registry, HistogramBucketsAreCumulative) {
  Registry r;
  auto& h = r.AddHistogram("test_latency_seconds", "Latency", {"route"}, {0.1, 1});
  auto* m = h.With({"/a"});
  m->Observe(0.05);
  m->Observe(0.1);  // on the bound: in it
  m->Observe(0.5);
  m->Observe(7);
  std::string text = r.Expose();
  EXPECT_NE(text.find("# TYPE test_latency_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("test_latency_seconds_bucket{route=\"/a\",le=\"0.1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_latency_seconds_bucket{route=\"/a\",le=\"1\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_latency_seconds_bucket{route=\"/a\",le=\"+Inf\"} 4\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("test_latency_seconds_sum{route=\"/a\"} 7.65\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_latency_seconds_count{route=\"/a\"} 4\n"), std::string::npos) << text;
}

TEST(Registry, LabelSetsAreBounded) {
  Registry r;
  auto& f = r.AddCounter("test_bounded_total", "Bounded", {"id"}, 2);
  f.With({"a"})->Inc();
  f.With({"b"})->Inc();
  f.With({"c"})->Inc();
  f.With({"d"})->Inc();
  f.With({"a"})->Inc();
  f.With({"x", "too many"})->Inc();  // wrong arity is folded too
  std::string text = r.Expose();
  EXPECT_NE(text.find("test_bounded_total{id=\"a\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("test_bounded_total{id=\"other\"} 3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("id=\"c\""), std::string::npos) << text;
  EXPECT_NE(text.find("hcprp_metrics_series_overflow_total 3\n"), std::string::npos) << text;
}

TEST(Registry, CallbackFamiliesAreReadAtScrape) {
  Registry r;
  double v = 1;
  r.AddCallback("test_from_elsewhere_total", "Read at scrape", Type::kCounter, {"kind"}, [&] {
    return std::vector<Sample>{{{"x"}, v}, {{"y", "bad arity"}, 9}};
  });
  EXPECT_NE(r.Expose().find("test_from_elsewhere_total{kind=\"x\"} 1\n"), std::string::npos);
  v = 5;
  std::string text = r.Expose();
  EXPECT_NE(text.find("test_from_elsewhere_total{kind=\"x\"} 5\n"), std::string::npos);
  EXPECT_EQ(text.find("bad arity"), std::string::npos);
}

TEST(Registry, AddingTwiceReturnsTheSameFamily) {
  Registry r;
  auto& a = r.AddCounter("test_same_total", "Same", {"l"});
  auto& b = r.AddCounter("test_same_total", "Same", {"l"});
  EXPECT_EQ(&a, &b);
}

TEST(Registry, ConcurrentIncrementsAreAllCounted) {
  Registry r;
  auto& f = r.AddCounter("test_concurrent_total", "Concurrent", {"t"});
  auto& h = r.AddHistogram("test_concurrent_seconds", "Concurrent", {}, LatencyBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        f.With({std::to_string(i % 3)})->Inc();
        h.With({})->Observe(0.001 * t);
      }
    });
  }
  for (auto& t : threads) t.join();
  double total = 0;
  for (int i = 0; i < 3; ++i) total += f.With({std::to_string(i)})->Value();
  EXPECT_EQ(total, 40000);
  EXPECT_EQ(h.With({})->Count(), 40000u);
}

TEST(FormatValue, IntegersAndSpecials) {
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-2), "-2");
  EXPECT_EQ(FormatValue(0.5), "0.5");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
}

}  // namespace
}  // namespace hcprp::metrics
