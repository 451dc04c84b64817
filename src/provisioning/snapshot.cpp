#include "provisioning/snapshot.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hcprp::provisioning {

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::IoError("cannot open " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Error::IoError("cannot write " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return Error::IoError("cannot sync " + tmp + ": " + why);
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Error::IoError("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Result<std::optional<std::string>> ReadFileIfExists(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return std::optional<std::string>();
    return Error::IoError("cannot open " + path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::optional<std::string>(ss.str());
}

}  // namespace hcprp::provisioning
