#include "common/subprocess.h"

#include <gtest/gtest.h>

#include <chrono>

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

TEST(RunLimited, empty_argv_is_an_error) {
  EXPECT_EQ(RunLimited({}, {}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuwasm
