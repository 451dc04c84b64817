#include "metrics/registry.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace hcprp::metrics {

namespace {

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// {a="x",b="y"} with an optional extra label (le of a bucket) at the end; "" when there is none.
std::string LabelText(const std::vector<std::string>& names, const LabelValues& values,
                      std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return {};
  std::string out = "{";
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out.push_back('"');
  }
  if (!extra_name.empty()) {
    if (!names.empty()) out.push_back(',');
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

void Header(const FamilyBase& f, std::string* out) {
  *out += "# HELP " + f.name() + " " + EscapeHelp(f.help()) + "\n";
  *out += "# TYPE " + f.name() + " " + TypeName(f.type()) + "\n";
}

void Line(std::string* out, const std::string& name, const std::string& labels, double value) {
  *out += name;
  *out += labels;
  out->push_back(' ');
  *out += FormatValue(value);
  out->push_back('\n');
}

class CallbackFamily final : public FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, Type type, std::vector<std::string> label_names,
                 std::function<std::vector<Sample>()> read)
      : FamilyBase(std::move(name), std::move(help), type, std::move(label_names), 0, nullptr),
        read_(std::move(read)) {}
  void Expose(std::string* out) const override {
    Header(*this, out);
    for (const Sample& s : read_()) {
      if (s.labels.size() != label_names_.size()) continue;
      Line(out, name_, LabelText(label_names_, s.labels), s.value);
    }
  }

 private:
  std::function<std::vector<Sample>()> read_;
};

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text that reads back as v
  return std::string(buf, r.ptr);
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                               0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return kBuckets;
}

const std::vector<double>& DurationBuckets() {
  static const std::vector<double> kBuckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1,   2.5,  5,
                                               10,   30,   60,  120,  300, 600, 1800, 7200};
  return kBuckets;
}

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_->size() && v > (*bounds_)[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> out(bounds_->size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    out[i] = running;
  }
  return out;
}

FamilyBase::FamilyBase(std::string name, std::string help, Type type, std::vector<std::string> label_names,
                       size_t max_series, std::atomic<uint64_t>* overflow)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      max_series_(max_series),
      overflow_(overflow) {}

LabelValues FamilyBase::Bound(LabelValues values, size_t series) const {
  if (values.size() == label_names_.size() && series < max_series_) return values;
  if (overflow_ != nullptr) overflow_->fetch_add(1, std::memory_order_relaxed);
  return LabelValues(label_names_.size(), "other");
}

template <class M>
M* Family<M>::Make() {
  if constexpr (std::is_same_v<M, Histogram>) {
    return new Histogram(&bounds_);
  } else {
    return new M();
  }
}

template <class M>
M* Family<M>::With(const LabelValues& values) {
  {
    ReaderMutexLock lock(mu_);
    auto it = series_.find(values);
    if (it != series_.end()) return it->second.get();
  }
  WriterMutexLock lock(mu_);
  auto it = series_.find(values);
  if (it != series_.end()) return it->second.get();
  LabelValues key = Bound(values, series_.size());
  auto& slot = series_[key];
  if (!slot) slot.reset(Make());
  return slot.get();
}

template <class M>
void Family<M>::Expose(std::string* out) const {
  Header(*this, out);
  ReaderMutexLock lock(mu_);
  for (const auto& [labels, m] : series_) {
    if constexpr (std::is_same_v<M, Histogram>) {
      std::vector<uint64_t> counts = m->CumulativeCounts();
      for (size_t i = 0; i < counts.size(); ++i) {
        std::string le = i < bounds_.size() ? FormatValue(bounds_[i]) : "+Inf";
        Line(out, name_ + "_bucket", LabelText(label_names_, labels, "le", le),
             static_cast<double>(counts[i]));
      }
      Line(out, name_ + "_sum", LabelText(label_names_, labels), m->Sum());
      Line(out, name_ + "_count", LabelText(label_names_, labels), static_cast<double>(counts.back()));
    } else {
      Line(out, name_, LabelText(label_names_, labels), m->Value());
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Registry::Registry() {
  AddCallback("hcprp_metrics_series_overflow_total",
              "Label sets folded into the \"other\" set because their family was full", Type::kCounter, {},
              [this] {
                return std::vector<Sample>{{{}, static_cast<double>(overflow_.load())}};
              });
}

template <class F, class... A>
F& Registry::Add(std::string name, A&&... args) {
  MutexLock lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) return dynamic_cast<F&>(*it->second);
  auto f = std::make_unique<F>(name, std::forward<A>(args)...);
  F& ref = *f;
  families_.emplace(std::move(name), std::move(f));
  return ref;
}

Family<Counter>& Registry::AddCounter(std::string name, std::string help,
                                      std::vector<std::string> label_names, size_t max_series) {
  return Add<Family<Counter>>(std::move(name), std::move(help), Type::kCounter, std::move(label_names),
                              max_series, &overflow_);
}

Family<Gauge>& Registry::AddGauge(std::string name, std::string help, std::vector<std::string> label_names,
                                  size_t max_series) {
  return Add<Family<Gauge>>(std::move(name), std::move(help), Type::kGauge, std::move(label_names),
                            max_series, &overflow_);
}

Family<Histogram>& Registry::AddHistogram(std::string name, std::string help,
                                          std::vector<std::string> label_names,
                                          const std::vector<double>& bounds, size_t max_series) {
  return Add<Family<Histogram>>(std::move(name), std::move(help), Type::kHistogram, std::move(label_names),
                                max_series, &overflow_, bounds);
}

void Registry::AddCallback(std::string name, std::string help, Type type,
                           std::vector<std::string> label_names, std::function<std::vector<Sample>()> read) {
  Add<CallbackFamily>(std::move(name), std::move(help), type, std::move(label_names), std::move(read));
}

std::string Registry::Expose() const {
  std::string out;
  MutexLock lock(mu_);
  for (const auto& [name, family] : families_) family->Expose(&out);
  return out;
}

}  // namespace hcprp::metrics
