// What a tenant's deploys may make a node spend: compiles queued round-robin between tenants (one
// tenant's slow deploys never hold another's back), cancelled at shutdown and compiled again at
// the next start, a compile that was running when gpuwasm died failed rather than retried, and
// caps on the versions and module bytes a tenant keeps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../common/guests.h"
#include "../common/temp_dir.h"
#include "../common/wasm_bytes.h"
#include "runtime/runtime.h"

namespace gpuwasm::runtime {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::Cpu;
using gpuwasm::testing::Leb;
using gpuwasm::testing::Section;
using gpuwasm::testing::Span;
using gpuwasm::testing::TempDir;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A module whose one function () -> () is exported as _start and as `name` (so each name is a
// distinct module, and the C compiler sees the name).
std::string Module(const std::string& name) {
  std::string body = Leb(0) + "\x0b";
  std::string exports = Leb(2) + Leb(6) + "_start" + std::string(1, '\0') + Leb(0) + Leb(name.size()) + name +
                        std::string(1, '\0') + Leb(0);
  return std::string("\0asm\1\0\0\0", 8) + Section(1, Leb(1) + std::string("\x60\x00\x00", 3)) +
         Section(3, Leb(1) + Leb(0)) + Section(7, exports) + Section(10, Leb(1) + Leb(body.size()) + body);
}

class CompileBounds : public ::testing::Test {
 protected:
  // A C compiler that takes `slow_seconds` longer for a module with an export named slow_*.
  fs::path SlowCc(int slow_seconds) {
    fs::path p = dir_.path() / ("cc-slow-" + std::to_string(slow_seconds));
    std::ofstream(p) << "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.c) if grep -q slow_ \"$a\"; then sleep "
                     << slow_seconds << "; fi;; esac; done\nexec cc \"$@\"\n";
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }

  std::unique_ptr<Runtime> Make(const std::string& cc, std::vector<TenantConfig> tenants = {}) {
    RuntimeConfig c;
    c.store_dir = dir_.path() / "store";
    c.workers = 2;
    c.compile_workers = 1;  // one compile at a time on this "node"
    if (tenants.empty()) {
      for (const char* name : {"acme", "beta"}) {
        TenantConfig t;
        t.name = name;
        tenants.push_back(t);
      }
    }
    c.tenants = std::move(tenants);
    RuntimeOptions o;
    o.device = Cpu();
    o.engine.cache_dir = cache_;
    o.engine.cc = cc;
    auto rt = Runtime::Create(std::move(c), std::move(o));
    EXPECT_TRUE(rt.ok()) << rt.status();
    return rt.ok() ? std::move(*rt) : nullptr;
  }

  store::FunctionRecord Deploy(Runtime& rt, const std::string& tenant, const std::string& name) {
    std::string bytes = Module(name);
    auto rec = rt.Deploy(tenant, name, Span(bytes));
    EXPECT_TRUE(rec.ok()) << rec.status();
    return rec.ok() ? *rec : store::FunctionRecord{};
  }

  fs::path Marker(const std::string& id) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return cache_ / "compiling" / host / id;
  }

  TempDir dir_;
  fs::path cache_ = dir_.path() / "cache";  // nothing compiled before
};

TEST_F(CompileBounds, one_tenants_slow_deploys_do_not_hold_back_anothers) {
  auto rt = Make(SlowCc(1).string());
  std::vector<store::FunctionRecord> slow;
  for (int i = 0; i < 4; ++i) slow.push_back(Deploy(*rt, "acme", "slow_" + std::to_string(i)));
  std::this_thread::sleep_for(milliseconds(100));
  auto t0 = Clock::now();
  store::FunctionRecord quick = Deploy(*rt, "beta", "quick");
  auto ready = rt->WaitReady("beta", quick.id, milliseconds(60'000));
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(ready->status, store::DeployStatus::kReady) << ready->error;
  auto beta_took = Clock::now() - t0;
  // beta's compile ran after the one of acme's running then (and at most one more, taken in the
  // same round), not after all four (first come, first served: 4 s of acme's first).
  int acme_ready = 0;
  for (const auto& f : slow) {
    auto r = rt->GetFunction("acme", f.id);
    ASSERT_TRUE(r.ok());
    acme_ready += r->status == store::DeployStatus::kReady ? 1 : 0;
  }
  EXPECT_LE(acme_ready, 2) << "beta waited " << std::chrono::duration_cast<milliseconds>(beta_took).count() << " ms";
  for (const auto& f : slow) {
    auto r = rt->WaitReady("acme", f.id, milliseconds(60'000));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, store::DeployStatus::kReady) << r->error;
  }
}

TEST_F(CompileBounds, shutdown_cancels_compiles_and_the_next_start_compiles_them) {
  std::vector<store::FunctionRecord> slow;
  {
    auto rt = Make(SlowCc(30).string());
    for (int i = 0; i < 3; ++i) slow.push_back(Deploy(*rt, "acme", "slow_" + std::to_string(i)));
    // The first one's compile runs, and says so on this host.
    auto until = Clock::now() + std::chrono::seconds(10);
    while (!fs::exists(Marker(slow[0].id)) && Clock::now() < until) std::this_thread::sleep_for(milliseconds(10));
    EXPECT_TRUE(fs::exists(Marker(slow[0].id)));
    auto t0 = Clock::now();
    rt->Shutdown(milliseconds(100));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));  // not 30 s of compiler, nor 90 s of queue
    for (const auto& f : slow) {
      auto r = rt->GetFunction("acme", f.id);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->status, store::DeployStatus::kCompiling);  // not failed: it was not the module's fault
    }
    EXPECT_FALSE(fs::exists(Marker(slow[0].id)));
  }
  auto rt = Make("cc");
  for (const auto& f : slow) {
    auto r = rt->WaitReady("acme", f.id, milliseconds(60'000));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, store::DeployStatus::kReady) << r->error;
  }
  EXPECT_EQ(rt->Stats().compiles_crashed, 0u);
}

TEST_F(CompileBounds, a_compile_running_when_gpuwasm_died_is_failed_not_retried) {
  store::FunctionRecord crashed, queued;
  {
    auto rt = Make(SlowCc(30).string());
    crashed = Deploy(*rt, "acme", "slow_crashed");
    queued = Deploy(*rt, "acme", "slow_queued");
    rt->Shutdown(milliseconds(0));
  }
  // What a crash in the middle of the first compile leaves: its marker.
  fs::create_directories(Marker(crashed.id).parent_path());
  std::ofstream(Marker(crashed.id)) << "acme\n";
  auto rt = Make("cc");
  auto r = rt->WaitReady("acme", crashed.id, milliseconds(60'000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, store::DeployStatus::kFailed);
  EXPECT_NE(r->error.find("ended unexpectedly"), std::string::npos) << r->error;
  EXPECT_NE(r->error.find("not tried again"), std::string::npos) << r->error;
  EXPECT_FALSE(fs::exists(Marker(crashed.id)));
  EXPECT_EQ(rt->Stats().compiles_crashed, 1u);
  // The other was only queued: compiled now, and the node serves.
  r = rt->WaitReady("acme", queued.id, milliseconds(60'000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, store::DeployStatus::kReady) << r->error;
  auto inv = rt->Invoke("acme", queued.id, {});
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->status, InvocationStatus::kOk) << inv->error;
}

TEST_F(CompileBounds, a_tenant_keeps_at_most_its_versions_and_bytes) {
  TenantConfig acme, beta;
  acme.name = "acme";
  acme.max_versions = 2;
  beta.name = "beta";
  beta.max_stored_bytes = Module("b_0").size() * 3 / 2;
  auto rt = Make("cc", {acme, beta});
  store::FunctionRecord first = Deploy(*rt, "acme", "a_0");
  Deploy(*rt, "acme", "a_1");
  std::string bytes = Module("a_2");
  auto refused = rt->Deploy("acme", "a_2", Span(bytes));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.status().message(),
            "tenant 'acme' keeps 2 deployed versions, its limit (max_versions 2): delete old versions first");
  // beta is not concerned by acme's count; its own limit is on bytes.
  Deploy(*rt, "beta", "b_0");
  bytes = Module("b_1");
  refused = rt->Deploy("beta", "b_1", Span(bytes));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("would pass its limit (max_stored_bytes "), std::string::npos)
      << refused.status();
  RuntimeStats s = rt->Stats();
  for (const TenantStats& t : s.tenants) EXPECT_EQ(t.totals.deploys_refused, 1u) << t.tenant;
  // Deleting a version makes room.
  ASSERT_TRUE(rt->WaitReady("acme", first.id, milliseconds(60'000)).ok());
  ASSERT_TRUE(rt->DeleteFunction("acme", first.id).ok());
  bytes = Module("a_2");
  EXPECT_TRUE(rt->Deploy("acme", "a_2", Span(bytes)).ok());
}

}  // namespace
}  // namespace gpuwasm::runtime
