// HostEnv: everything the host keeps for one guest instance. A pointer to it is what wasm2c
// passes as the first argument of every import function.
#pragma once

#include "host/guest_io.h"

namespace gpuwasm::host {

struct HostEnv {
  explicit HostEnv(GuestIoOptions io_options) : io(std::move(io_options)) {}
  GuestIo io;
};

}  // namespace gpuwasm::host
