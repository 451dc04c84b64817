#include "core/log.h"

#include "core/json_writer.h"
#include "core/time.h"

namespace hcprp {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

Result<LogLevel> ParseLogLevel(std::string_view name) {
  for (auto l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (EqualsIgnoreCase(name, LogLevelName(l))) return l;
  }
  return Error::InvalidArgument("unknown log level '" + std::string(name) + "' (debug, info, warn, error)");
}

void StreamLogSink::Write(std::string_view line) {
  MutexLock lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

void MemoryLogSink::Write(std::string_view line) {
  MutexLock lock(mu_);
  lines_.emplace_back(line);
}

std::vector<std::string> MemoryLogSink::LinesForTest() const {
  MutexLock lock(mu_);
  return lines_;
}

Logger::Logger(std::shared_ptr<LogSink> sink, const Clock* clock, LogLevel min_level, std::string component)
    : sink_(std::move(sink)), clock_(clock), min_level_(min_level), component_(std::move(component)) {}

Logger Logger::WithComponent(std::string component) const {
  return Logger(sink_, clock_, min_level_, std::move(component));
}

void Logger::Log(LogLevel level, std::string_view msg, json::object fields) const {
  if (!Enabled(level) || !sink_) return;
  // Every request logs a line: written straight into the text rather than built as an object first.
  // A field named like a member of the envelope replaces it, in the envelope's place.
  std::string text;
  text.reserve(256);
  JsonWriter w(text);
  auto value = [&w](std::string_view key, const json::value& v) {
    if (const json::string* s = v.if_string()) {
      w.Member(key, std::string_view(*s));
    } else if (const int64_t* i = v.if_int64()) {
      w.Member(key, *i);
    } else if (const bool* b = v.if_bool()) {
      w.Member(key, *b);
    } else {
      w.Key(key).Raw(json::serialize(v));
    }
  };
  // An envelope member: the field of that name when there is one, else `write`.
  auto envelope = [&](std::string_view key, const auto& write) {
    if (const json::value* v = fields.if_contains(key)) {
      value(key, *v);
    } else {
      write();
    }
  };
  w.BeginObject();
  envelope("time", [&] { w.Member("time", FormatRfc3339(clock_->Now(), true)); });
  envelope("level", [&] { w.Member("level", LogLevelName(level)); });
  envelope("component", [&] {
    if (!component_.empty()) w.Member("component", component_);
  });
  envelope("msg", [&] { w.Member("msg", msg); });
  for (const auto& kv : fields) {
    const std::string_view key = kv.key();
    if (key == "time" || key == "level" || key == "component" || key == "msg") continue;
    value(key, kv.value());
  }
  w.EndObject();
  sink_->Write(text);
}

}  // namespace hcprp
