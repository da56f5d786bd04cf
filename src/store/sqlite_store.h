// The SQLite implementation of Store: one database file, WAL journal with synchronous=FULL, so a
// committed deploy survives a crash or power loss and an interrupted one leaves no trace.
#pragma once

#include <filesystem>
#include <memory>

#include "store/store.h"

namespace gpuwasm::store {

// Opens (creating when missing) the database at `path` and brings its schema up to date.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& path);

}  // namespace gpuwasm::store
