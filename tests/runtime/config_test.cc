// The TOML configuration: every key read, typos and bad values refused with the line.
#include "runtime/config.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/duration.h"
#include "runtime/toml.h"
#include "runtime/worker_protocol.h"
#include "wasm/backtrace.h"

namespace gpuwasm::runtime {
namespace {

TEST(Config, reads_every_key) {
  std::string token_line = HashToken("s3cret");
  auto c = ParseConfig(R"(
[runtime]
store = "/srv/gpuwasm"
device = "cpu"
workers = 6
compile_workers = 2
default_deadline = "10s"
shutdown_grace = "3s"
loaded_modules = 40

[server]
listen = "0.0.0.0:9000"
max_body = "8MiB"
read_timeout = "5s"
idle_timeout = "20s"
io_threads = 3
metrics_token = ")" + HashToken("scrape") +
                       R"("
admin_token = ")" + HashToken("ops") +
                       R"("

[[tenants]]
name = "acme"
tokens = [")" + token_line +
                       R"("]
gpu = false
instrument_ptx = false
device_bytes = "256MiB"
concurrent_invocations = 3
inflight_launches = 8
max_deadline = "20s"
max_module_size = 1048576
max_input_size = "1KiB"
max_output_size = "2MB"
max_memory = "64MiB"
rate_limit = 2.5
rate_burst = 5

[[tenants]]
name = "beta"
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->store_dir, "/srv/gpuwasm");
  EXPECT_EQ(c->device, "cpu");
  EXPECT_EQ(c->workers, 6u);
  EXPECT_EQ(c->compile_workers, 2u);
  EXPECT_EQ(c->default_deadline, std::chrono::seconds(10));
  EXPECT_EQ(c->shutdown_grace, std::chrono::seconds(3));
  EXPECT_EQ(c->loaded_modules, 40u);
  EXPECT_EQ(c->server.listen, "0.0.0.0:9000");
  EXPECT_EQ(c->server.max_body, 8u << 20);
  EXPECT_EQ(c->server.read_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c->server.idle_timeout, std::chrono::seconds(20));
  EXPECT_EQ(c->server.io_threads, 3u);
  EXPECT_EQ("sha256:" + c->server.metrics_token_sha256, HashToken("scrape"));
  EXPECT_EQ("sha256:" + c->server.admin_token_sha256, HashToken("ops"));
  ASSERT_EQ(c->tenants.size(), 2u);
  const TenantConfig& a = c->tenants[0];
  EXPECT_EQ(a.name, "acme");
  EXPECT_FALSE(a.gpu);
  EXPECT_FALSE(a.instrument_ptx);
  EXPECT_TRUE(c->tenants[1].instrument_ptx);  // every tenant's PTX is instrumented unless it opts out
  EXPECT_EQ(a.device_bytes, 256u << 20);
  EXPECT_EQ(a.concurrent_invocations, 3u);
  EXPECT_EQ(a.inflight_launches, 8u);
  EXPECT_EQ(a.max_deadline, std::chrono::seconds(20));
  EXPECT_EQ(a.max_module_size, 1048576u);
  EXPECT_EQ(a.max_input_size, 1024u);
  EXPECT_EQ(a.max_output_size, 2000000u);
  EXPECT_EQ(a.max_memory, 64u << 20);
  EXPECT_EQ(a.rate_limit, 2.5);
  EXPECT_EQ(a.rate_burst, 5u);
  EXPECT_EQ(c->tenants[1].device_bytes, TenantConfig{}.device_bytes);  // defaults
  EXPECT_EQ(c->FindTenantByToken("s3cret"), &c->tenants[0]);
  EXPECT_EQ(c->FindTenantByToken("s3cret "), nullptr);
  EXPECT_EQ(c->FindTenantByToken(""), nullptr);
  EXPECT_TRUE(c->tokens_configured());
  EXPECT_EQ(c->FindTenant("beta"), &c->tenants[1]);
}

TEST(Config, a_tenant_reaches_its_worker_whole_and_a_result_comes_back_whole) {
  TenantConfig t;
  t.name = "trusted";
  t.instrument_ptx = false;
  t.device_bytes = 3u << 20;
  auto back = worker::TenantFromJson(worker::TenantToJson(t));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->instrument_ptx);
  EXPECT_EQ(back->device_bytes, 3u << 20);
  InvokeResult r;
  r.metrics.kernels_launched = 5;
  r.metrics.kernel_faults = 1;
  r.metrics.quota_refusals = 2;
  InvokeResult got;
  r.discarded_launches = 3;
  r.backtrace = {"leaf", "main"};
  ASSERT_TRUE(worker::DecodeResult(worker::EncodeResult(7, r), &got).ok());
  EXPECT_EQ(got.metrics, r.metrics);
  EXPECT_EQ(got.discarded_launches, 3u);
  EXPECT_EQ(got.backtrace, r.backtrace);
  // A worker's result is bounded like everything else it sends: no more frames than a trap records.
  r.backtrace.assign(wasm::kMaxTrapAddresses + 1, "f");
  InvokeResult too_long;
  EXPECT_FALSE(worker::DecodeResult(worker::EncodeResult(7, r), &too_long).ok());
  worker::RunHeader h;
  h.args = {"blur"};
  h.env = {"MODE=fast", "X="};
  auto run = worker::DecodeRun(worker::EncodeRun(h));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->args, h.args);
  EXPECT_EQ(run->env, h.env);
}

TEST(Config, empty_file_is_the_default_single_tenant) {
  auto c = ParseConfig("");
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->tenants.size(), 1u);
  EXPECT_EQ(c->tenants[0].name, "default");
  EXPECT_FALSE(c->tokens_configured());
  EXPECT_EQ(c->default_deadline, std::chrono::seconds(30));
}

void ExpectError(const std::string& text, const std::string& fragment) {
  auto c = ParseConfig(text, "gpuwasm.toml");
  ASSERT_FALSE(c.ok()) << text;
  EXPECT_NE(c.status().message().find(fragment), std::string::npos) << c.status();
}

TEST(Config, mistakes_are_errors_with_the_line) {
  ExpectError("[runtime]\nworkerz = 4\n", "gpuwasm.toml:2: unknown key 'workerz' in [runtime]");
  ExpectError("[[tenants]]\nname = \"a\"\ndevice_byte = 5\n", "gpuwasm.toml:3: unknown key 'device_byte'");
  ExpectError("[[tenants]]\nname = \"a\"\ntokens = [\"plain-token\"]\n", "tokens must be written hashed");
  ExpectError("[server]\nadmin_token = \"plain\"\n", "[server].admin_token must be written hashed");
  ExpectError("[server]\nmetrics_token = \"sha256:00\"\n", "[server].metrics_token must be written hashed");
  ExpectError("[[tenants]]\nname = \"a\"\n[[tenants]]\nname = \"a\"\n", "tenant 'a' is defined twice");
  ExpectError("[[tenants]]\nname = \"Not Valid\"\n", "tenant name 'Not Valid' must be");
  ExpectError("[[tenants]]\nname = \"a\"\ndevice_bytes = \"12 parsecs\"\n", "invalid size unit 'parsecs'");
  ExpectError("[[tenants]]\nname = \"a\"\nmax_deadline = 30\n", "must be a duration string");
  ExpectError("[[tenants]]\nname = \"a\"\nconcurrent_invocations = 0\n", "must be between 1 and");
  ExpectError("[runtime]\ndevice = \"tpu\"\n", "must be auto, cpu or cuda:N");
  ExpectError("[runtime]\nloaded_modules = 0\n", "must be between 1 and");
  ExpectError("[runtime\n", "gpuwasm.toml:1:");
  ExpectError("colour = \"blue\"\n", "unknown key 'colour' in the top level");
  std::string h = HashToken("x");
  ExpectError(
      "[[tenants]]\nname = \"a\"\ntokens = [\"" + h + "\"]\n[[tenants]]\nname = \"b\"\ntokens = [\"" + h + "\"]\n",
      "a token is given to two tenants");
}

// What `serve` would refuse, the configuration refuses (with the line); what surely is not meant
// is a warning.
TEST(Config, listen_addresses_are_checked_and_unreachable_tenants_warned_about) {
  ExpectError("[server]\nmax_body = 5\nlisten = \"8080\"\n",
              "gpuwasm.toml:3: [server].listen: listen address '8080' must be host:port");
  ExpectError("[server]\nlisten = \"example.com:80\"\n", "'example.com' is not an IPv4 address");
  ExpectError("[server]\nlisten = \"[::1]\"\n", "no valid port");
  for (auto [text, host, port] :
       std::vector<std::tuple<std::string, std::string, int>>{{"localhost:0", "127.0.0.1", 0},
                                                              {":8080", "0.0.0.0", 8080},
                                                              {"[::1]:65535", "::1", 65535},
                                                              {"10.1.2.3:80", "10.1.2.3", 80}}) {
    Result<ListenAddress> a = ParseListen(text);
    ASSERT_TRUE(a.ok()) << text << ": " << a.status();
    EXPECT_EQ(a->host, host) << text;
    EXPECT_EQ(a->port, port) << text;
  }
  EXPECT_FALSE(ParseListen("::1:80").ok());  // IPv6 only in brackets: which colon ends the host?
  EXPECT_FALSE(ParseListen("127.0.0.1:-1").ok());
  EXPECT_FALSE(ParseListen("127.0.0.1:").ok());

  std::string h = HashToken("x");
  auto c = ParseConfig("[[tenants]]\nname = \"a\"\ntokens = [\"" + h + "\"]\n[[tenants]]\nname = \"b\"\n");
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> w = ConfigWarnings(*c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("tenant 'b' has no tokens"), std::string::npos) << w[0];
  auto open = ParseConfig("[[tenants]]\nname = \"a\"\n[[tenants]]\nname = \"b\"\n");
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_TRUE(ConfigWarnings(*open).empty());  // no tokens anywhere: every tenant is open
}

TEST(Config, non_ascii_only_in_strings_and_comments) {
  auto ok = ParseConfig(
      "# caf\xc3\xa9\n[runtime]\nstore = \"/srv/caf\xc3\xa9\" # \xc3\xbcn\xc3\xaf"
      "code\n[server]\nlisten = '127.0.0.1:0'\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->store_dir, "/srv/caf\xc3\xa9");
  // Outside them it is invalid TOML, and toml++ 3.3 would reach undefined behaviour on it.
  ExpectError("[runtime]\nworkers = 4\nst\xef\xb6\xbfore = 1\n",
              "gpuwasm.toml:3: a non-ASCII character outside a string");
  ExpectError("[runtime]\n\xc2\xa1 = 1\n", "gpuwasm.toml:2: a non-ASCII character");
  // toml++ itself no longer reaches undefined behaviour on those characters (runtime/toml.h).
  EXPECT_FALSE(toml::impl::is_non_ascii_horizontal_whitespace(U'\u00e9'));
  EXPECT_FALSE(toml::impl::is_non_ascii_horizontal_whitespace(U'\u2c10'));
  EXPECT_FALSE(toml::impl::is_non_ascii_horizontal_whitespace(U'\ufebf'));
  EXPECT_TRUE(toml::impl::is_non_ascii_horizontal_whitespace(U'\u3000'));
  // A quote inside a bare value opens no string: what follows is still outside one.
  ExpectError("nap=3s3'\xcf\xbb\x1c'\n", "gpuwasm.toml:1: a non-ASCII character outside a string");
  // Strings everywhere TOML has them: values, arrays, inline tables, quoted and dotted keys, headers.
  auto strings =
      ParseConfig("[runtime]\n\"store\" = '/a/\xc3\xa9'\n[[tenants]]\nname = \"t\"\ntokens = [\n  \"sha256:" +
                      std::string(64, 'a') + "\", # \xc3\xa9\n]\n",
                  "gpuwasm.toml");
  EXPECT_TRUE(strings.ok()) << strings.status();
}

TEST(Config, load_names_a_missing_file) {
  auto c = LoadConfig("/nonexistent/gpuwasm.toml");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/gpuwasm.toml"), std::string::npos);
}

TEST(ParseSize, units) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("64KiB"), 65536u);
  EXPECT_EQ(*ParseSize("1.5GiB"), 3ull << 29);
  EXPECT_EQ(*ParseSize("2 MB"), 2000000u);
  EXPECT_FALSE(ParseSize("-1").ok());
  EXPECT_FALSE(ParseSize("1.5").ok());  // not whole bytes
  EXPECT_FALSE(ParseSize("1e30TiB").ok());
  EXPECT_FALSE(ParseSize("").ok());
}

}  // namespace
}  // namespace gpuwasm::runtime
