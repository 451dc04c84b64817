// Following ARM's client-certificate metadata endpoint. ARM publishes the certificates it calls
// resource providers with (https://management.azure.com/metadata/authentication in the public cloud,
// in the shape arm_trust.h parses) and rotates them: a new certificate appears there before ARM uses it,
// the old one disappears later. The follower fetches the document periodically and keeps its last good
// copy in the file the ArmAuthenticator reads, so that the trusted set follows the rotation, and a
// restart while the endpoint is unreachable starts from that copy.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"

namespace hcprp::tls {

// Thread-safe. Stops (and joins its thread) when destroyed.
class ArmMetadataFollower {
 public:
  // Returns the metadata document's text; called on the follower's thread.
  using Fetch = std::function<Result<std::string>()>;

  // Fetches once; when that fails, `cache_file` must already hold a document in the metadata's shape
  // (the last good copy), else the error is returned. Then refreshes every `interval` on a thread of its
  // own. `fetch` must bound its own waits.
  static Result<std::unique_ptr<ArmMetadataFollower>> Start(Fetch fetch, std::string cache_file,
                                                            Duration interval, Logger logger);
  ~ArmMetadataFollower();

  // One refresh: fetches, checks the document's shape, and replaces the cache file (atomically) when the
  // document differs. On any error the cache file is left as it was.
  Status RefreshOnce();

 private:
  ArmMetadataFollower(Fetch fetch, std::string cache_file, Duration interval, Logger logger);
  void Run();

  // Constant after construction.
  const Fetch fetch_;
  const std::string cache_file_;
  const Duration interval_;
  const Logger logger_;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ HCPRP_GUARDED_BY(mu_) = false;
  bool failing_ HCPRP_GUARDED_BY(mu_) = false;  // the last refresh failed (logged once per outage)
  std::thread thread_;
};

}  // namespace hcprp::tls
