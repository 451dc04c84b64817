#include "tls/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/uuid.h"

namespace hcprp::tls {
namespace {

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::IoError(std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (::fsync(fd) != 0) return Error::IoError(std::strerror(errno));
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view data, FileSecrecy secrecy) {
  const std::string tmp = path + ".tmp-" + NewUuidV4();
  const mode_t mode = secrecy == FileSecrecy::kSecret ? 0600 : 0644;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return Error::IoError("cannot create " + tmp + ": " + std::strerror(errno));
  Status written = WriteAll(fd, data);
  ::close(fd);
  if (written.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    written = Error::IoError(std::strerror(errno));
  }
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return Error::IoError("cannot write " + path + ": " + written.error().message());
  }
  return Status::Ok();
}

}  // namespace hcprp::tls
