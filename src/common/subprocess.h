// Running a child process under resource limits: CPU seconds, address space and wall-clock time.
// Every short-lived child goes through here: the C compiler on code derived from untrusted
// modules, and the wasm reader child that reads a module before the server does. The child gets its own
// process group; on a wall-clock timeout or a cancel the whole group is killed. It inherits no
// descriptor but stdin/stdout/stderr, and dies with the thread that started it (PR_SET_PDEATHSIG):
// a compile never outlives its process. Thread-safe: any thread may run children concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpuwasm {

// Whether this program runs under a sanitizer, whose runtime reserves terabytes of address space
// at start: a child that is a copy of this program can then have no RLIMIT_AS.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

struct ProcessLimits {
  uint64_t cpu_seconds = 60;                  // RLIMIT_CPU
  uint64_t address_space_bytes = 4ull << 30;  // RLIMIT_AS; 0: none
  std::chrono::milliseconds wall{120'000};    // killed (SIGKILL to the group) after this
  uint64_t max_output_bytes = 64 << 10;       // stdout+stderr kept (the tail is dropped)
  const std::atomic<bool>* cancel = nullptr;  // when it turns true, the child is killed
  int nice = 0;                               // the child's niceness (19: only CPU others leave)
};

struct ProcessResult {
  int exit_code = -1;  // valid when !signaled
  bool signaled = false;
  int signal = 0;
  bool timed_out = false;  // killed by the wall-clock limit
  bool cpu_limit = false;  // killed by RLIMIT_CPU (SIGXCPU / SIGKILL after it)
  bool cancelled = false;  // killed because limits.cancel turned true
  std::string output;      // merged stdout and stderr, truncated to max_output_bytes
  // CPU time (user + system) of the child and of the descendants it waited for (cc's cc1, as, ld).
  std::chrono::nanoseconds cpu_time{0};
};

// What a child is given besides its arguments.
struct ProcessInput {
  std::string program;                   // the file executed; empty: argv[0], searched on PATH
  std::span<const uint8_t> stdin_bytes;  // fed to its stdin, which is then closed; empty: /dev/null
  std::vector<std::string> set_env;      // "NAME=value": set in its environment (replacing NAME)
};

// Runs the program with argv under `limits`. An error Status only when the child could not be
// started; a child that fails or hits a limit is reported in ProcessResult (one whose exec
// failed exits 127 with "exec failed" in its output).
Result<ProcessResult> RunLimited(const std::vector<std::string>& argv, const ProcessLimits& limits,
                                 const ProcessInput& input = {});

}  // namespace gpuwasm
