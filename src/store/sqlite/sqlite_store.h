// The SQLite engine of the store (see store.h for the semantics and the engine notes).
#pragma once

#include <memory>
#include <string_view>

#include "core/result.h"
#include "store/store.h"

namespace hcprp::store::sqlite {

// `url` is "sqlite:///abs/path.db[?vfs=NAME]" or "sqlite::memory:". Use OpenStore() in callers; this
// is the engine's entry point behind it.
Result<std::unique_ptr<Store>> OpenSqliteStore(std::string_view url, const OpenOptions& options);

}  // namespace hcprp::store::sqlite
