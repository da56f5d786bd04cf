// The WASI preview1 subset and the gpuwasm I/O module, driven by C guests.
#include <gtest/gtest.h>

#include "test_support.h"

namespace gpuwasm::testing {
namespace {

host::GuestIoOptions IoWith(std::string input, std::vector<std::string> args = {}) {
  host::GuestIoOptions io;
  io.input = std::move(input);
  io.args = std::move(args);
  return io;
}

TEST(Wasi, args_env_stdin_stdout_stderr_clock_random_and_exit_status) {
  auto module = CompileOrDie("guests/wasi_io.wasm");
  ASSERT_NE(module, nullptr);
  host::GuestIoOptions io;
  io.args = {"wasi_io", "7", "two words"};
  io.env = {"A=1", "B=2"};
  io.input = "hello stdin";
  GuestRun r = RunExport(module, "_start", io);
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
  EXPECT_TRUE(r.outcome->ok()) << wasm::TrapKindName(r.outcome->trap);
  EXPECT_TRUE(r.outcome->exited);  // main's return goes through proc_exit
  EXPECT_EQ(r.outcome->exit_code, 7);
  EXPECT_EQ(r.env->io.stdout_text(),
            "argc=3 [7] [two words]\n"
            "environ=2\n"
            "stdin=11:hello stdin\n"
            "monotonic_ok=1 realtime_after_2020=1\n"
            "random_differs=1\n");
  EXPECT_EQ(r.env->io.stderr_text(), "to stderr\n");
}

TEST(Wasi, a_program_linking_the_file_system_runs_and_each_call_fails_cleanly) {
  // fopen, opendir, open: no preopened directory (ENOTCAPABLE, from wasi-libc); fstat of a
  // descriptor that is not open: EBADF; lseek on stdout: ESPIPE; stdout and stderr are terminals.
  auto module = CompileOrDie("guests/files.wasm");
  ASSERT_NE(module, nullptr);
  GuestRun r = RunExport(module, "_start", IoWith("", {"files"}));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
  EXPECT_EQ(r.outcome->exit_code, 0);
  EXPECT_EQ(r.env->io.stdout_text(),
            "fopen=null errno=76\n"
            "opendir=null errno=76\n"
            "open=-1 errno=76\n"
            "fstat3=-1 errno=8\n"
            "lseek1=-1 errno=70\n"
            "isatty0=0 isatty1=1 isatty2=1\n");
}

TEST(Wasi, exit_status_zero_and_empty_stdin) {
  auto module = CompileOrDie("guests/wasi_io.wasm");
  GuestRun r = RunExport(module, "_start", IoWith("", {"wasi_io"}));
  ASSERT_TRUE(r.outcome.ok());
  EXPECT_EQ(r.outcome->exit_code, 0);
  EXPECT_NE(r.env->io.stdout_text().find("stdin=0:\n"), std::string::npos);
}

TEST(Wasi, stdout_is_capped_and_marked_truncated) {
  auto module = CompileOrDie("guests/wasi_io.wasm");
  host::GuestIoOptions io;
  io.args = {"wasi_io"};
  io.max_stdout = 10;
  GuestRun r = RunExport(module, "_start", io);
  ASSERT_TRUE(r.outcome.ok());
  EXPECT_EQ(r.env->io.stdout_text(), "argc=1\nenv");
  EXPECT_TRUE(r.env->io.stdout_truncated());
  EXPECT_FALSE(r.env->io.stderr_truncated());
}

TEST(Wasi, hello_example_prints_input_size_and_checksum) {
  std::string bytes = ReadFile(GPUWASM_HELLO_WASM);
  auto m = SharedEngine().Compile(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(m.ok()) << m.status();
  GuestRun r = RunExport(*m, "_start", IoWith("abc"));
  ASSERT_TRUE(r.outcome.ok());
  EXPECT_EQ(r.env->io.stdout_text(), "hello from a gpuwasm guest: 3 input bytes, checksum 00017862\n");
}

TEST(GpuwasmIo, input_read_output_write_and_bad_pointers) {
  auto module = CompileOrDie("guests/io_module.wasm");
  ASSERT_NE(module, nullptr);
  GuestRun r = RunExport(module, "run", IoWith("xxshout this"));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.status();
  ASSERT_TRUE(r.outcome->ok());
  EXPECT_EQ(r.outcome->exit_code, 12) << "100+ means a check inside the guest failed";
  EXPECT_EQ(r.env->io.output(), "SHOUT THIS");
}

TEST(GpuwasmIo, output_cap_refuses_with_quota_error) {
  auto module = CompileOrDie("guests/io_module.wasm");
  host::GuestIoOptions io = IoWith("xxshout this");
  io.max_output = 4;
  GuestRun r = RunExport(module, "run", io);
  ASSERT_TRUE(r.outcome.ok());
  EXPECT_EQ(r.outcome->exit_code, 100);  // output_write returned -8, not the length
  EXPECT_EQ(r.env->io.output(), "");
  // Every limit has a counter: the refusal is one of the instance's quota_refusals.
  EXPECT_EQ(r.env->io.output_refusals(), 1u);
  EXPECT_EQ(r.env->metrics().quota_refusals, 1u);
}

}  // namespace
}  // namespace gpuwasm::testing
