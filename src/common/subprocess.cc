#include "common/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string_view>

#include "common/unique_fd.h"

namespace gpuwasm {

namespace {

// This process's environment with each of `set` ("NAME=value") put in place of NAME's entry.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& s : set) {
      std::string_view name = std::string_view(s).substr(0, s.find('=') + 1);
      replaced = replaced || entry.starts_with(name);
    }
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

}  // namespace

Result<ProcessResult> RunLimited(const std::vector<std::string>& argv, const ProcessLimits& limits,
                                 const ProcessInput& input) {
  if (argv.empty()) return Status::InvalidArgument("RunLimited: empty argv");
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls are allowed in a multi-threaded process.
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const char* program = input.program.empty() ? cargv[0] : input.program.c_str();
  std::vector<std::string> env_strings = EnvironmentWith(input.set_env);
  std::vector<char*> cenv;
  for (std::string& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  // The child's stdin: a socket (send() with MSG_NOSIGNAL: a child that exits early raises no
  // SIGPIPE here) when there is input, else /dev/null.
  UniqueFd feed, child_stdin;
  if (!input.stdin_bytes.empty()) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return Status::IoError(std::string("socketpair: ") + strerror(errno));
    }
    feed.Reset(sv[0]);
    child_stdin.Reset(sv[1]);
  }
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + strerror(errno));
  rlimit cpu{limits.cpu_seconds, limits.cpu_seconds + 1};
  rlimit as{limits.address_space_bytes, limits.address_space_bytes};

  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return Status::IoError(std::string("fork: ") + strerror(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
    ::setrlimit(RLIMIT_CPU, &cpu);
    if (as.rlim_cur != 0) ::setrlimit(RLIMIT_AS, &as);
    if (limits.nice != 0) (void)::setpriority(PRIO_PROCESS, 0, limits.nice);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    int in = child_stdin.valid() ? child_stdin.get() : ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);  // nothing else of the parent goes across
    if (input.program.empty()) {
      ::execvpe(program, cargv.data(), cenv.data());
    } else {
      ::execve(program, cargv.data(), cenv.data());
    }
    static const char kMsg[] = "exec failed\n";
    (void)!::write(2, kMsg, sizeof kMsg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the group exists before any kill
  ::close(pipefd[1]);
  child_stdin.Reset();
  size_t fed = 0;

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + limits.wall;
  char buf[4096];
  bool open = true;
  while (open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    if (limits.cancel != nullptr && limits.cancel->load()) {
      result.cancelled = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p[2] = {{pipefd[0], POLLIN, 0}, {feed.get(), POLLOUT, 0}};  // fd -1: not polled
    int n = ::poll(p, 2, static_cast<int>(std::min<int64_t>(left.count(), limits.cancel != nullptr ? 100 : 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (feed.valid() && p[1].revents != 0) {
      ssize_t w = ::send(feed.get(), input.stdin_bytes.data() + fed, input.stdin_bytes.size() - fed,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) fed += static_cast<size_t>(w);
      // All of it given, or the child stopped reading (its status says why): its stdin ends.
      if (fed == input.stdin_bytes.size() || (w < 0 && errno != EAGAIN && errno != EINTR)) feed.Reset();
    }
    if (p[0].revents == 0) continue;
    ssize_t r = ::read(pipefd[0], buf, sizeof buf);
    if (r <= 0) {
      open = false;
    } else if (result.output.size() < limits.max_output_bytes) {
      result.output.append(buf, std::min<size_t>(r, limits.max_output_bytes - result.output.size()));
    }
  }
  ::close(pipefd[0]);
  feed.Reset();
  int wstatus = 0;
  rusage usage{};
  while (::wait4(pid, &wstatus, 0, &usage) < 0 && errno == EINTR) {
  }
  auto ns = [](const timeval& t) { return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec); };
  result.cpu_time = ns(usage.ru_utime) + ns(usage.ru_stime);
  ::kill(-pid, SIGKILL);  // children the compiler left behind (cc1, as) die with it
  if (WIFEXITED(wstatus)) {
    result.exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    result.signaled = true;
    result.signal = WTERMSIG(wstatus);
    result.cpu_limit = result.signal == SIGXCPU || (result.signal == SIGKILL && !result.timed_out && !result.cancelled);
  }
  return result;
}

}  // namespace gpuwasm
