// The PostgreSQL metadata store: the same tables as the SQLite one, in a database that every
// gpuwasm node of a cluster shares. Connections come from a small pool and are re-established
// when the server restarts or a connection drops; Lock() is a session advisory lock on a
// connection of its own, so a node that dies releases its locks with its connections.
#pragma once

#include <memory>
#include <string>

#include "store/store.h"

namespace gpuwasm::store {

// `conninfo`: a libpq connection string, "postgresql://user@host:5432/db" or "host=... dbname=...";
// a password may come from it, from $PGPASSWORD or from ~/.pgpass. Creates the schema when missing
// (several nodes may start at once).
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo);

// The connection string without its password, for logs and errors.
std::string RedactConninfo(const std::string& conninfo);

}  // namespace gpuwasm::store
