// Structured logging: one JSON object per line. A Logger is created in main() and handed to the
// parts that log; nothing reaches for a global logger.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/mutex.h"

namespace hcprp {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

std::string_view LogLevelName(LogLevel level);
// "debug", "info", "warn", "error"; anything else is InvalidArgument.
Result<LogLevel> ParseLogLevel(std::string_view name);

// Where log lines go. Write() receives one complete line without the newline. Thread-safe.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(std::string_view line) = 0;
};

// Writes to a stdio stream (stderr by default), one line per call, under a mutex.
class StreamLogSink final : public LogSink {
 public:
  explicit StreamLogSink(std::FILE* out = stderr) : out_(out) {}
  void Write(std::string_view line) override;

 private:
  Mutex mu_;
  std::FILE* out_ HCPRP_PT_GUARDED_BY(mu_);  // not owned
};

// Keeps every line in memory; for tests.
class MemoryLogSink final : public LogSink {
 public:
  void Write(std::string_view line) override;
  std::vector<std::string> LinesForTest() const;

 private:
  mutable Mutex mu_;
  std::vector<std::string> lines_ HCPRP_GUARDED_BY(mu_);
};

// Thread-safe. Each line is {"time","level","component","msg",...fields}. Fields usually carry
// request_id and correlation_id.
class Logger {
 public:
  Logger(std::shared_ptr<LogSink> sink, const Clock* clock, LogLevel min_level = LogLevel::kInfo,
         std::string component = "");

  // A logger for a sub-part that writes to the same sink with another component name.
  Logger WithComponent(std::string component) const;

  bool Enabled(LogLevel level) const { return level >= min_level_; }
  void Log(LogLevel level, std::string_view msg, json::object fields = {}) const;
  void Debug(std::string_view msg, json::object fields = {}) const {
    Log(LogLevel::kDebug, msg, std::move(fields));
  }
  void Info(std::string_view msg, json::object fields = {}) const {
    Log(LogLevel::kInfo, msg, std::move(fields));
  }
  void Warn(std::string_view msg, json::object fields = {}) const {
    Log(LogLevel::kWarn, msg, std::move(fields));
  }
  void Error(std::string_view msg, json::object fields = {}) const {
    Log(LogLevel::kError, msg, std::move(fields));
  }

 private:
  std::shared_ptr<LogSink> sink_;
  const Clock* clock_;  // not owned; outlives the logger
  LogLevel min_level_;
  std::string component_;
};

}  // namespace hcprp
