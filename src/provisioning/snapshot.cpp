#include "provisioning/snapshot.h"

#include <cerrno>
#include <fstream>
#include <sstream>

namespace hcprp::provisioning {

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
