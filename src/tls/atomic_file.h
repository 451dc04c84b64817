// Writing a file so that no reader ever sees half of it and no one else can read a secret at any
// moment: the data goes to a new temporary file in the same folder, created with its final mode (never
// widened afterwards), synced, then renamed over the path.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace hcprp::tls {

enum class FileSecrecy { kPublic, kSecret };  // mode 0644 or 0600 (the process's umask may narrow both)

// Replaces `path` with `data`. The temporary file has a random name and is created exclusively
// (O_EXCL, O_NOFOLLOW), so a file or link planted beside `path` is never written through; a reader that
// opened the old file keeps seeing the old content. IoError when the folder cannot be written.
Status WriteFileAtomically(const std::string& path, std::string_view data, FileSecrecy secrecy);

}  // namespace hcprp::tls
