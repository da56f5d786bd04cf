#include "host/guest_io.h"

#include <cstring>

namespace gpuwasm::host {

void GuestIo::AppendStdout(const uint8_t* p, uint64_t n) {
  uint64_t room = options_.max_stdout - std::min<uint64_t>(options_.max_stdout, stdout_.size());
  if (n > room) stdout_truncated_ = true;
  stdout_.append(reinterpret_cast<const char*>(p), std::min(n, room));
}

void GuestIo::AppendStderr(const uint8_t* p, uint64_t n) {
  uint64_t room = options_.max_stderr - std::min<uint64_t>(options_.max_stderr, stderr_.size());
  if (n > room) stderr_truncated_ = true;
  stderr_.append(reinterpret_cast<const char*>(p), std::min(n, room));
}

bool GuestIo::AppendOutput(const uint8_t* p, uint64_t n) {
  if (output_.size() + n > options_.max_output) return false;
  output_.append(reinterpret_cast<const char*>(p), n);
  return true;
}

}  // namespace gpuwasm::host

