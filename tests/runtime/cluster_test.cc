// Several runtimes ("nodes") sharing one PostgreSQL database and one store directory: a function
// deployed on one runs on the other, a delete on one is seen by the other, a module is compiled
// once among them, and a compile left unfinished by a node that died is taken over.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "../common/guests.h"
#include "../common/postgres.h"
#include "../common/temp_dir.h"
#include "runtime/runtime.h"

namespace gpuwasm::runtime {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::Cpu;
using gpuwasm::testing::Example;
using gpuwasm::testing::ReadFile;
using gpuwasm::testing::Span;
using gpuwasm::testing::TempDir;
using std::chrono::milliseconds;

class Cluster : public gpuwasm::testing::PostgresTest {
 protected:
  // A node: the shared database, the shared directory (its artifacts/ is the shared cache).
  std::unique_ptr<Runtime> Node() {
    RuntimeConfig c;
    c.store_dir = dir_.path();
    c.database = conninfo_;
    c.workers = 4;
    TenantConfig t;
    t.name = "acme";
    c.tenants = {t};
    RuntimeOptions o;
    o.device = Cpu();
    auto rt = Runtime::Create(std::move(c), std::move(o));
    EXPECT_TRUE(rt.ok()) << rt.status();
    return rt.ok() ? std::move(*rt) : nullptr;
  }
  static uint64_t Compiles(Runtime& rt) { return rt.Stats().module_compiles; }
  static uint64_t CacheLoads(Runtime& rt) { return rt.Stats().module_cache_loads; }

  TempDir dir_;
};

TEST_F(Cluster, deploy_on_one_node_invoke_and_delete_on_the_other) {
  auto a = Node();
  auto b = Node();
  ASSERT_TRUE(a && b);
  std::string hello = ReadFile(Example("hello"));
  auto rec = a->Deploy("acme", "hello", Span(hello));
  ASSERT_TRUE(rec.ok()) << rec.status();
  auto ready = b->WaitReady("acme", rec->id, milliseconds(120'000));  // B sees A's compile finish
  ASSERT_TRUE(ready.ok()) << ready.status();
  ASSERT_EQ(ready->status, store::DeployStatus::kReady) << ready->error;
  auto r = b->Invoke("acme", "hello", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, InvocationStatus::kOk) << r->error;
  EXPECT_NE(r->stdout_text.find("hello"), std::string::npos) << r->stdout_text;
  EXPECT_EQ(Compiles(*a), 1u);
  EXPECT_EQ(Compiles(*b), 0u);  // loaded A's artifact from the shared directory
  EXPECT_EQ(CacheLoads(*b), 1u);
  EXPECT_EQ(b->ListFunctions("acme")->size(), 1u);

  ASSERT_TRUE(b->DeleteFunction("acme", rec->id).ok());
  EXPECT_EQ(a->GetFunction("acme", rec->id).status().code(), StatusCode::kNotFound);
  auto gone = a->Invoke("acme", "hello", {});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
}

TEST_F(Cluster, the_same_module_deployed_on_two_nodes_at_once_is_compiled_once) {
  auto a = Node();
  auto b = Node();
  ASSERT_TRUE(a && b);
  std::string bytes = ReadFile(Example("vector_add"));
  Result<store::FunctionRecord> ra = Status::Internal("unset"), rb = Status::Internal("unset");
  std::thread ta([&] { ra = a->Deploy("acme", "va-a", Span(bytes)); });
  std::thread tb([&] { rb = b->Deploy("acme", "va-b", Span(bytes)); });
  ta.join();
  tb.join();
  ASSERT_TRUE(ra.ok() && rb.ok()) << ra.status() << " " << rb.status();
  EXPECT_EQ(a->WaitReady("acme", ra->id, milliseconds(120'000))->status, store::DeployStatus::kReady);
  EXPECT_EQ(b->WaitReady("acme", rb->id, milliseconds(120'000))->status, store::DeployStatus::kReady);
  EXPECT_EQ(Compiles(*a) + Compiles(*b), 1u) << "a " << Compiles(*a) << ", b " << Compiles(*b);
  for (auto* node : {a.get(), b.get()}) {
    for (const char* name : {"va-a", "va-b"}) {
      auto r = node->Invoke("acme", name, {});
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->status, InvocationStatus::kOk) << r->error << r->stderr_text;
    }
  }
  size_t artifacts = 0, temporaries = 0;
  for (const auto& e : fs::directory_iterator(dir_.path() / "artifacts")) {
    artifacts += e.path().extension() == ".so";
    temporaries += e.path().filename().string().rfind("tmp-", 0) == 0;
  }
  EXPECT_EQ(artifacts, 1u);
  EXPECT_EQ(temporaries, 0u);
}

// A node recorded a deploy and died before compiling it: the record stays "compiling". Another
// node invoked for it says so, takes the compile over, and then runs it.
TEST_F(Cluster, a_compile_left_by_a_dead_node_is_taken_over) {
  std::string hello = ReadFile(Example("hello"));
  std::string id;
  {
    auto s = store::LocalStore::Open(store::StoreOptions{dir_.path(), conninfo_});
    ASSERT_TRUE(s.ok()) << s.status();
    auto rec = (*s)->AddFunction({"acme", "orphaned", "", 0, ""}, Span(hello));
    ASSERT_TRUE(rec.ok()) << rec.status();
    id = rec->id;
  }
  auto b = Node();  // started before the "dead" node's deploy would be recovered at start
  ASSERT_TRUE(b);
  // Node() recovers interrupted compiles at start; wait for whichever path compiles it.
  auto first = b->Invoke("acme", "orphaned", {});
  if (!first.ok()) {
    EXPECT_EQ(first.status().code(), StatusCode::kUnavailable) << first.status();
  }
  auto ready = b->WaitReady("acme", id, milliseconds(120'000));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, store::DeployStatus::kReady) << ready->error;
  auto r = b->Invoke("acme", "orphaned", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, InvocationStatus::kOk);
}

// Without a start-time recovery (the node was already running when the other died), the
// invocation itself starts the compile.
TEST_F(Cluster, an_invocation_takes_over_a_stuck_compile) {
  auto b = Node();
  ASSERT_TRUE(b);
  std::string hello = ReadFile(Example("hello"));
  auto s = store::LocalStore::Open(store::StoreOptions{dir_.path(), conninfo_});
  ASSERT_TRUE(s.ok()) << s.status();
  auto rec = (*s)->AddFunction({"acme", "stuck", "", 0, ""}, Span(hello));  // recorded, never compiled
  ASSERT_TRUE(rec.ok()) << rec.status();
  auto first = b->Invoke("acme", "stuck", {});
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(first.status().message().find("still compiling"), std::string::npos) << first.status();
  auto ready = b->WaitReady("acme", rec->id, milliseconds(120'000));
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, store::DeployStatus::kReady) << ready->error;
  auto r = b->Invoke("acme", "stuck", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, InvocationStatus::kOk);
}

}  // namespace
}  // namespace gpuwasm::runtime
