#include "common/compile_slots.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace gpuwasm {
namespace {

struct Slots {
  std::mutex mu;
  std::condition_variable cv;
  std::filesystem::path dir;  // "" = this process's own count
  uint32_t count = std::max(1u, std::thread::hardware_concurrency() / 2);
  uint32_t busy = 0;  // of this process (with or without a directory)
};

Slots& Get() {
  static auto* s = new Slots();  // never destroyed: a compile thread may outlive main
  return *s;
}

}  // namespace

Status SetCompileSlots(const std::filesystem::path& dir, uint32_t slots) {
  Slots& s = Get();
  std::lock_guard<std::mutex> lock(s.mu);
  s.count = std::max(1u, slots);
  s.dir = dir;
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot create the compile slot directory " + dir.string() + ": " + ec.message());
  }
  return Status::Ok();
}

CompileSlot::~CompileSlot() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
  if (counted_) {
    Slots& s = Get();
    {
      std::lock_guard<std::mutex> lock(s.mu);
      --s.busy;
    }
    s.cv.notify_one();
  }
}

Result<std::unique_ptr<CompileSlot>> AcquireCompileSlot(std::chrono::steady_clock::time_point give_up,
                                                        const std::atomic<bool>* cancel) {
  Slots& s = Get();
  std::unique_ptr<CompileSlot> slot(new CompileSlot());
  std::filesystem::path dir;
  uint32_t count = 0;
  {
    // This process's own share first (with a directory too: its compiles never exceed the count).
    std::unique_lock<std::mutex> lock(s.mu);
    for (;;) {
      if (cancel != nullptr && cancel->load()) return Status::Cancelled("the compile was cancelled");
      if (s.busy < s.count) break;
      if (std::chrono::steady_clock::now() >= give_up) {
        return Status::Unavailable("no compile slot became free in time (" + std::to_string(s.count) +
                                   " compiles run at once on this node)");
      }
      s.cv.wait_for(lock, std::chrono::milliseconds(50));
    }
    ++s.busy;
    slot->counted_ = true;
    dir = s.dir;
    count = s.count;
  }
  if (dir.empty()) return slot;
  // The node's share: the first lock file free, starting at a random one (no slot is favoured).
  uint32_t start = std::random_device{}() % count;
  for (;;) {
    for (uint32_t i = 0; i < count; ++i) {
      std::string path = (dir / ("slot-" + std::to_string((start + i) % count))).string();
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0) return Status::IoError("cannot open compile slot " + path + ": " + std::strerror(errno));
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        slot->fd_ = fd;
        return slot;
      }
      ::close(fd);
    }
    if (cancel != nullptr && cancel->load()) return Status::Cancelled("the compile was cancelled");
    if (std::chrono::steady_clock::now() >= give_up) {
      return Status::Unavailable("no compile slot became free in time (" + std::to_string(count) +
                                 " compiles run at once on this node)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace gpuwasm
