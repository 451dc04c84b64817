#include "tls/arm_metadata.h"

#include <fstream>
#include <sstream>

#include "tls/arm_trust.h"
#include "tls/atomic_file.h"

namespace hcprp::tls {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

ArmMetadataFollower::ArmMetadataFollower(Fetch fetch, std::string cache_file, Duration interval,
                                         Logger logger)
    : fetch_(std::move(fetch)),
      cache_file_(std::move(cache_file)),
      interval_(interval),
      logger_(std::move(logger)) {}

Result<std::unique_ptr<ArmMetadataFollower>> ArmMetadataFollower::Start(Fetch fetch, std::string cache_file,
                                                                        Duration interval, Logger logger) {
  std::unique_ptr<ArmMetadataFollower> f(
      new ArmMetadataFollower(std::move(fetch), std::move(cache_file), interval, std::move(logger)));
  if (Status first = f->RefreshOnce(); !first.ok()) {
    if (!ParseTrustedSet(ReadText(f->cache_file_)).ok()) {
      return Error(first.error().code(), "ARM metadata: " + first.error().message() + ", and " +
                                             f->cache_file_ + " holds no last good copy");
    }
    f->logger_.Warn("ARM metadata unreachable: the last good copy is used",
                    {{"error", first.error().ToString()}, {"file", f->cache_file_}});
  }
  f->thread_ = std::thread([p = f.get()] { p->Run(); });
  return f;
}

ArmMetadataFollower::~ArmMetadataFollower() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

Status ArmMetadataFollower::RefreshOnce() {
  Status result = [&]() -> Status {
    HCPRP_ASSIGN_OR_RETURN(auto text, fetch_());
    auto parsed = ParseTrustedSet(text);
    if (!parsed.ok()) return Error::InvalidArgument("the metadata document: " + parsed.error().message());
    if (ReadText(cache_file_) == text) return Status::Ok();
    HCPRP_RETURN_IF_ERROR(WriteFileAtomically(cache_file_, text, FileSecrecy::kPublic));
    logger_.Info("ARM client certificates updated from the metadata endpoint",
                 {{"certificates", static_cast<int64_t>(parsed->size())}});
    return Status::Ok();
  }();
  MutexLock lock(mu_);
  if (!result.ok() && !failing_) {
    logger_.Warn("ARM metadata refresh failed: the last good copy stays in use",
                 {{"error", result.error().ToString()}});
  }
  failing_ = !result.ok();
  return result;
}

void ArmMetadataFollower::Run() {
  for (;;) {
    {
      MutexLock lock(mu_);
      if (cv_.WaitFor(lock, interval_, [this]() HCPRP_REQUIRES(mu_) { return stopping_; })) return;
    }
    (void)RefreshOnce();
  }
}

}  // namespace hcprp::tls
