// Reads the JSON snapshots that older versions of the engine and the simulated Azure wrote
// (engine.json, azure.json), imported once into the simulator's database.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"

namespace hcprp::provisioning {

// The file's content, or nullopt when it does not exist.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path);

}  // namespace hcprp::provisioning
