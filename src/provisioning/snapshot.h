// Small file helpers for the JSON snapshots of the simulated Azure and the engine.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"

namespace hcprp::provisioning {

// Writes `content` to `path` through a temporary file in the same directory, fsynced and renamed over
// the old file, so that a reader sees either the old or the new content, never a mix.
Status WriteFileAtomically(const std::string& path, const std::string& content);
// The file's content, or nullopt when it does not exist.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path);

}  // namespace hcprp::provisioning
