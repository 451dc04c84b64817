// Expected failures as values. A call that can fail in a way its caller must handle returns
// Result<T> (or Status, which is Result<void>); exceptions are kept for programming errors.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hcprp {

enum class ErrorCode {
  kNotFound,
  kAlreadyExists,
  kPreconditionFailed,
  kConflict,
  kInvalidArgument,
  kUnavailable,  // a dependency is down or refused; retrying later may succeed
  kTimeout,
  kIoError,
  kCorruption,
  kThrottled,
  kCanceled,
  kOutOfRange,  // a position that is no longer valid (a change feed continuation past its retention)
  kInternal,
};

std::string_view ErrorCodeName(ErrorCode code);

// An error: a machine-readable code and a message for logs. What a client sees is decided where
// errors are mapped to responses, not here.
class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Error NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Error AlreadyExists(std::string m) { return {ErrorCode::kAlreadyExists, std::move(m)}; }
  static Error PreconditionFailed(std::string m) { return {ErrorCode::kPreconditionFailed, std::move(m)}; }
  static Error Conflict(std::string m) { return {ErrorCode::kConflict, std::move(m)}; }
  static Error InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
  static Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
  static Error Timeout(std::string m) { return {ErrorCode::kTimeout, std::move(m)}; }
  static Error IoError(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
  static Error Corruption(std::string m) { return {ErrorCode::kCorruption, std::move(m)}; }
  static Error Throttled(std::string m) { return {ErrorCode::kThrottled, std::move(m)}; }
  static Error Canceled(std::string m) { return {ErrorCode::kCanceled, std::move(m)}; }
  static Error OutOfRange(std::string m) { return {ErrorCode::kOutOfRange, std::move(m)}; }
  static Error Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  bool Is(ErrorCode c) const { return code_ == c; }
  bool IsNotFound() const { return code_ == ErrorCode::kNotFound; }
  bool IsAlreadyExists() const { return code_ == ErrorCode::kAlreadyExists; }
  bool IsPreconditionFailed() const { return code_ == ErrorCode::kPreconditionFailed; }
  bool IsConflict() const { return code_ == ErrorCode::kConflict; }
  // "code: message", for logs and test failure output.
  std::string ToString() const;

 private:
  ErrorCode code_;
  std::string message_;
};

// Either a T or an Error. Accessing the wrong alternative is a programming error (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  T value_or(T fallback) const& { return ok() ? std::get<0>(v_) : std::move(fallback); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  static Result Ok() { return {}; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace hcprp

// Returns the error of a Result-valued expression from the enclosing function.
#define HCPRP_RETURN_IF_ERROR(expr)                        \
  do {                                                     \
    auto hcprp_status_ = (expr);                           \
    if (!hcprp_status_.ok()) return hcprp_status_.error(); \
  } while (0)

// Declares `lhs` from the value of a Result-valued expression, or returns its error from the enclosing
// function: HCPRP_ASSIGN_OR_RETURN(auto doc, store.Read(...)); `lhs` may also be an existing variable.
#define HCPRP_ASSIGN_OR_RETURN(lhs, expr) \
  HCPRP_ASSIGN_OR_RETURN_IMPL_(HCPRP_RESULT_CONCAT_(hcprp_result_, __LINE__), lhs, expr)
#define HCPRP_RESULT_CONCAT_INNER_(a, b) a##b
#define HCPRP_RESULT_CONCAT_(a, b) HCPRP_RESULT_CONCAT_INNER_(a, b)
#define HCPRP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.error();                 \
  lhs = std::move(tmp).value()
