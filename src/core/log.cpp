#include "core/log.h"

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
  json::object line;
  line["time"] = FormatRfc3339(clock_->Now(), true);
  line["level"] = LogLevelName(level);
  if (!component_.empty()) line["component"] = component_;
  line["msg"] = msg;
  for (auto& kv : fields) line[kv.key()] = std::move(kv.value());
  sink_->Write(json::serialize(line));
}

}  // namespace hcprp
