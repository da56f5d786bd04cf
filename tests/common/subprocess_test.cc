#include "common/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/compile_slots.h"

namespace gpuwasm {
namespace {

TEST(RunLimited, captures_merged_output_and_exit_code) {
  auto r = RunLimited({"sh", "-c", "echo out; echo err >&2; exit 3"}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->signaled);
  EXPECT_EQ(r->output, "out\nerr\n");
}

TEST(RunLimited, wall_clock_limit_kills_the_process_group) {
  ProcessLimits limits;
  limits.wall = std::chrono::milliseconds(200);
  auto t0 = std::chrono::steady_clock::now();
  // The child leaves a grandchild holding the pipe: the group kill must end both.
  auto r = RunLimited({"sh", "-c", "sleep 30 & sleep 30"}, limits);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_TRUE(r->signaled);
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(RunLimited, cpu_limit_stops_a_busy_child) {
  ProcessLimits limits;
  limits.cpu_seconds = 1;
  auto r = RunLimited({"sh", "-c", "while :; do :; done"}, limits);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cpu_limit);
  EXPECT_FALSE(r->timed_out);
}

TEST(RunLimited, reports_the_cpu_time_of_the_child_and_of_what_it_waited_for) {
  // The shell spins in a grandchild it waits for (as cc waits for cc1): its time counts too.
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunLimited({"sh", "-c", "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'"}, {});
  auto wall = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_GT(r->cpu_time, std::chrono::milliseconds(50));
  EXPECT_LE(r->cpu_time, wall + std::chrono::milliseconds(20));
  auto idle = RunLimited({"sleep", "0.3"}, {});
  ASSERT_TRUE(idle.ok());
  EXPECT_LT(idle->cpu_time, std::chrono::milliseconds(100));
}

TEST(RunLimited, output_is_truncated_to_its_cap) {
  ProcessLimits limits;
  limits.max_output_bytes = 10;
  auto r = RunLimited({"sh", "-c", "yes | head -c 100000"}, limits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->output, "y\ny\ny\ny\ny\n");
}

TEST(RunLimited, missing_program_exits_127) {
  auto r = RunLimited({"/nonexistent/program"}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_NE(r->output.find("exec failed"), std::string::npos);
}

TEST(RunLimited, stdin_bytes_reach_the_child_while_its_output_is_read) {
  // More than a socket buffer each way: feeding and reading must interleave, or both sides block.
  std::vector<uint8_t> data(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>('a' + i % 26);
  ProcessLimits limits;
  limits.max_output_bytes = data.size() + 1;
  limits.wall = std::chrono::milliseconds(20'000);
  ProcessInput input;
  input.stdin_bytes = data;
  auto r = RunLimited({"cat"}, limits, input);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->timed_out);
  ASSERT_EQ(r->output.size(), data.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), r->output.begin()));
}

TEST(RunLimited, a_child_that_reads_no_stdin_ends_normally) {
  std::vector<uint8_t> data(1 << 20, 'x');
  ProcessInput input;
  input.stdin_bytes = data;
  auto r = RunLimited({"true"}, {}, input);  // no SIGPIPE here either
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
}

TEST(RunLimited, set_env_replaces_a_variable_and_program_is_run_under_argv0) {
  ASSERT_EQ(setenv("GPUWASM_SUBPROCESS_TEST", "old", 1), 0);
  ProcessInput input;
  input.program = "/bin/sh";
  input.set_env = {"GPUWASM_SUBPROCESS_TEST=new", "GPUWASM_SUBPROCESS_TEST_ADDED=yes"};
  auto r =
      RunLimited({"named-child", "-c", "echo $0 $GPUWASM_SUBPROCESS_TEST $GPUWASM_SUBPROCESS_TEST_ADDED"}, {}, input);
  unsetenv("GPUWASM_SUBPROCESS_TEST");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->output, "named-child new yes\n");
}

TEST(RunLimited, the_child_inherits_no_descriptor_of_its_parent) {
  int fd = ::open("/dev/null", O_RDONLY);  // not close-on-exec, like a careless library's
  ASSERT_GE(fd, 3);
  auto r = RunLimited({"sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '"}, {});
  ::close(fd);
  ASSERT_TRUE(r.ok());
  // 0, 1, 2, and the descriptor ls reads its directory with (3): nothing of the parent's.
  EXPECT_EQ(r->output, "0 1 2 3 ") << r->output;
}

// A compiler never outlives the process that started it: killed with it (PR_SET_PDEATHSIG).
TEST(RunLimited, the_child_dies_with_the_process_that_started_it) {
  char path[] = "/tmp/gpuwasm-pdeath-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    (void)RunLimited({"sh", "-c", std::string("echo $$ > ") + path + "; exec sleep 30"}, {});
    ::_exit(0);
  }
  pid_t child = 0;
  for (int i = 0; i < 500 && child == 0; ++i) {
    std::ifstream(path) >> child;
    if (child == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(child, 0);
  ::kill(helper, SIGKILL);
  ::waitpid(helper, nullptr, 0);
  auto alive = [&] {  // a zombie waiting for its new parent to reap it is dead too
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    return static_cast<bool>(stat >> pid >> comm >> state) && state != "Z";
  };
  for (int i = 0; i < 200 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(alive()) << "the child " << child << " outlived the process that started it";
  if (alive()) ::kill(child, SIGKILL);
  ::unlink(path);
}

TEST(RunLimited, a_cancel_kills_the_child_at_once) {
  std::atomic<bool> cancel{false};
  ProcessLimits limits;
  limits.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    cancel = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunLimited({"sh", "-c", "sleep 30 & sleep 30"}, limits);
  auto took = std::chrono::steady_clock::now() - t0;
  t.join();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cancelled);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->cpu_limit);
  EXPECT_LT(took, std::chrono::seconds(2));
}

// The node's compile slots are lock files: another process holding them (here: other open files,
// which flock tells apart as it would processes) keeps this one waiting, then refused in time.
TEST(CompileSlots, held_by_another_process_they_make_a_compile_wait_then_give_up) {
  char tmpl[] = "/tmp/gpuwasm-slots-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::filesystem::path dir = tmpl;
  ASSERT_TRUE(SetCompileSlots(dir, 2).ok());
  std::vector<int> held;
  for (int i = 0; i < 2; ++i) {
    int fd = ::open((dir / ("slot-" + std::to_string(i))).c_str(), O_RDWR | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    held.push_back(fd);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto refused = AcquireCompileSlot(t0 + std::chrono::milliseconds(200));
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("2 compiles run at once on this node"), std::string::npos);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(190));
  // One is released (its holder ended): the next compile takes it.
  ::close(held.back());
  held.pop_back();
  auto got = AcquireCompileSlot(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(got.ok()) << got.status();
  // Both taken again; a cancel ends the wait.
  std::atomic<bool> cancel{true};
  EXPECT_EQ(AcquireCompileSlot(std::chrono::steady_clock::now() + std::chrono::seconds(5), &cancel).status().code(),
            StatusCode::kCancelled);
  got->reset();
  for (int fd : held) ::close(fd);
  ASSERT_TRUE(SetCompileSlots("", 1).ok());
  std::filesystem::remove_all(dir);
}

TEST(CompileSlots, without_a_directory_the_bound_is_this_process_own) {
  ASSERT_TRUE(SetCompileSlots("", 1).ok());
  auto first = AcquireCompileSlot(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(first.ok());
  auto second = AcquireCompileSlot(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    first->reset();
  });
  auto third = AcquireCompileSlot(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  release.join();
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST(RunLimited, empty_argv_is_an_error) {
  EXPECT_EQ(RunLimited({}, {}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuwasm
