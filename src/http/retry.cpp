#include "http/retry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <random>
#include <thread>

namespace hcprp::http {

bool IsRetryable(const Result<Response>& result, bool retry_timeouts) {
  if (!result.ok()) {
    if (result.error().Is(ErrorCode::kUnavailable)) return true;
    return retry_timeouts && result.error().Is(ErrorCode::kTimeout);
  }
  auto code = static_cast<unsigned>(result->result_int());
  if (code == 429) return true;
  return code >= 500 && code != 501 && code != 505;
}

namespace {

double DefaultRandom() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

std::optional<std::chrono::milliseconds> RetryAfter(const Response& res) {
  auto it = res.find(Field::retry_after);
  if (it == res.end()) return std::nullopt;
  std::string_view v = it->value();
  unsigned secs = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return std::chrono::seconds(secs);
}

}  // namespace

std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int retry) {
  double cap = static_cast<double>(policy.max_backoff.count());
  double base = static_cast<double>(policy.initial_backoff.count()) *
                std::pow(policy.multiplier, std::max(0, retry - 1));
  double r = policy.random ? policy.random() : DefaultRandom();
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(cap, base) * r));
}

Result<Response> SendWithRetry(Client& client, const Endpoint& endpoint, const Request& request,
                               std::chrono::milliseconds timeout, const RetryPolicy& policy) {
  const bool may_retry = policy.retry_non_idempotent || IsIdempotent(request.method());
  for (int attempt = 1;; ++attempt) {
    auto res = client.Send(endpoint, request, timeout);
    if (!may_retry || attempt >= policy.max_attempts || !IsRetryable(res, policy.retry_timeouts)) return res;
    auto delay = BackoffDelay(policy, attempt);
    if (res.ok()) {
      if (auto ra = RetryAfter(*res)) delay = std::min(*ra, policy.max_backoff);
    }
    if (policy.sleep) {
      policy.sleep(delay);
    } else {
      std::this_thread::sleep_for(delay);
    }
  }
}

}  // namespace hcprp::http
