// Prometheus metrics of one process: counters, gauges and histograms with fixed buckets, grouped in
// labelled families, and the text exposition format (version 0.0.4) of all of them.
//
//   metrics::Registry registry;                          // one per process, made in main()
//   auto& requests = registry.AddCounter("hcprp_frontend_requests_total", "Requests answered",
//                                        {"route", "method", "status"});
//   requests.With({"/subscriptions/{}", "GET", "200"})->Inc();
//   std::string text = registry.Expose();                // what GET /metrics answers
//
// Label sets are bounded by construction: a family holds at most `max_series` label sets; any
// further one is folded into the set whose every value is "other" (counted in
// hcprp_metrics_series_overflow_total). Callers must still pass only values from a bounded
// domain (route templates, verbs, states): never a resource ID.
//
// Callback families (AddCallback) are read at scrape time: they expose counts other parts already
// keep (backend statistics, the simulator's counters) without a second bookkeeping.
//
// Thread-safety: everything is safe from any thread. Increments, sets and observations are atomic
// operations on a metric already looked up; With() takes a shared lock (an exclusive one only the
// first time a label set is seen). Pointers returned by With() stay valid as long as the Registry.
// Families must be added before the registry is shared between threads (usually at start-up);
// adding one twice with the same name returns the first (the type and labels must agree).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"

namespace hcprp::metrics {

using LabelValues = std::vector<std::string>;

class Counter {
 public:
  void Inc(double v = 1) {
    if (v > 0) value_.fetch_add(v, std::memory_order_relaxed);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: upper bounds, strictly increasing, without +Inf (added implicitly).
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double v);
  // Cumulative counts per bound (the last is +Inf, equal to Count()).
  std::vector<uint64_t> CumulativeCounts() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  const std::vector<double>& bounds() const { return *bounds_; }

 private:
  const std::vector<double>* bounds_;                // owned by the family
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // one per bound, plus +Inf
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

enum class Type { kCounter, kGauge, kHistogram };

// Buckets for request and store latencies, in seconds (0.5 ms .. 10 s).
const std::vector<double>& LatencyBuckets();
// Buckets for durations of operations and propagation, in seconds (10 ms .. 2 h).
const std::vector<double>& DurationBuckets();

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, Type type, std::vector<std::string> label_names,
             size_t max_series, std::atomic<uint64_t>* overflow);
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  Type type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  virtual void Expose(std::string* out) const = 0;

 protected:
  // The key of `values` to store under: values as given, or every value "other" when the family is
  // full. Requires values.size() == label_names().size().
  LabelValues Bound(LabelValues values, size_t series) const;

  const std::string name_;
  const std::string help_;
  const Type type_;
  const std::vector<std::string> label_names_;
  const size_t max_series_;
  std::atomic<uint64_t>* const overflow_;
};

template <class M>
class Family final : public FamilyBase {
 public:
  using FamilyBase::FamilyBase;
  Family(std::string name, std::string help, Type type, std::vector<std::string> label_names,
         size_t max_series, std::atomic<uint64_t>* overflow, std::vector<double> bounds)
      : FamilyBase(std::move(name), std::move(help), type, std::move(label_names), max_series, overflow),
        bounds_(std::move(bounds)) {}

  // The metric of these label values (in the order of the family's label names), created at zero
  // the first time. A wrong number of values is folded into the "other" set.
  M* With(const LabelValues& values);
  M* With(std::initializer_list<std::string_view> values) {
    return With(LabelValues(values.begin(), values.end()));
  }
  void Expose(std::string* out) const override;

 private:
  M* Make();
  const std::vector<double> bounds_{};  // histograms only
  mutable SharedMutex mu_;
  std::map<LabelValues, std::unique_ptr<M>> series_ HCPRP_GUARDED_BY(mu_);
};

// One sample of a callback family.
struct Sample {
  LabelValues labels;
  double value = 0;
};

class Registry {
 public:
  Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Family<Counter>& AddCounter(std::string name, std::string help, std::vector<std::string> label_names = {},
                              size_t max_series = 1000);
  Family<Gauge>& AddGauge(std::string name, std::string help, std::vector<std::string> label_names = {},
                          size_t max_series = 1000);
  Family<Histogram>& AddHistogram(std::string name, std::string help, std::vector<std::string> label_names,
                                  const std::vector<double>& bounds, size_t max_series = 200);
  // A counter or gauge family whose samples `read` returns at every scrape (it must be thread-safe
  // and must not call the registry).
  void AddCallback(std::string name, std::string help, Type type, std::vector<std::string> label_names,
                   std::function<std::vector<Sample>()> read);

  // The text exposition of every family, sorted by name.
  std::string Expose() const;

 private:
  template <class F, class... A>
  F& Add(std::string name, A&&... args);

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>> families_ HCPRP_GUARDED_BY(mu_);
  std::atomic<uint64_t> overflow_{0};
};

// Content-Type of Registry::Expose().
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// Exposition helpers (also used by tests).
std::string EscapeLabelValue(std::string_view v);
std::string FormatValue(double v);

}  // namespace hcprp::metrics
