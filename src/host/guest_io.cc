#include "host/guest_io.h"

#include <cstring>

namespace gpuwasm::host {

namespace {

// Appends what fits of [p, p + n) under `cap` to `text` (and hands it to `on_write`).
void Capture(std::string& text, bool& truncated, uint64_t cap, int fd, const uint8_t* p, uint64_t n,
             const std::function<void(int, std::string_view)>& on_write) {
  uint64_t room = cap - std::min<uint64_t>(cap, text.size());
  if (n > room) truncated = true;
  const std::string_view kept(reinterpret_cast<const char*>(p), std::min(n, room));
  text.append(kept);
  if (on_write && !kept.empty()) on_write(fd, kept);
}

}  // namespace

void GuestIo::AppendStdout(const uint8_t* p, uint64_t n) {
  Capture(stdout_, stdout_truncated_, options_.max_stdout, 1, p, n, options_.on_write);
}

void GuestIo::AppendStderr(const uint8_t* p, uint64_t n) {
  Capture(stderr_, stderr_truncated_, options_.max_stderr, 2, p, n, options_.on_write);
}

bool GuestIo::AppendOutput(const uint8_t* p, uint64_t n) {
  if (output_.size() + n > options_.max_output) {
    output_refusals_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  output_.append(reinterpret_cast<const char*>(p), n);
  return true;
}

}  // namespace gpuwasm::host
