// Retrying HTTP requests with exponential backoff and full jitter.
#pragma once

#include <chrono>
#include <functional>

#include "core/result.h"
#include "http/client.h"

namespace hcprp::http {

struct RetryPolicy {
  int max_attempts = 4;  // including the first
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{2'000};
  double multiplier = 2.0;
  // Retry non-idempotent methods too (POST/PATCH); set it only when the server deduplicates the
  // request, e.g. by an idempotency key.
  bool retry_non_idempotent = false;
  // Retry when the client gave up waiting (kTimeout). The server may have acted on the request.
  bool retry_timeouts = true;
  // Waits between attempts; tests replace it to avoid sleeping. Default: this_thread::sleep_for.
  std::function<void(std::chrono::milliseconds)> sleep;
  // Uniform random number in [0, 1) for the jitter; default: a thread-local engine.
  std::function<double()> random;
};

// True for answers worth retrying: 5xx other than 501/505, 429, and transport failures
// (kUnavailable; kTimeout when `retry_timeouts`).
bool IsRetryable(const Result<Response>& result, bool retry_timeouts = true);

// The delay before retry number `retry` (1-based): uniform in [0, min(max, initial*multiplier^(retry-1))].
std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int retry);

// Sends `request` up to policy.max_attempts times while the answer IsRetryable and the method may be
// retried. A Retry-After header (seconds) on the answer replaces the backoff, capped at max_backoff.
// Returns the last answer (a 5xx is returned as a Response, not an error).
Result<Response> SendWithRetry(Client& client, const Endpoint& endpoint, const Request& request,
                               std::chrono::milliseconds timeout, const RetryPolicy& policy = {});

}  // namespace hcprp::http
