// The PostgreSQL store against a real server (tests/common/postgres.h): a database per test.
#include "store/postgres_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "../common/postgres.h"
#include "../common/temp_dir.h"
#include "store/local_store.h"
#include "store_contract.h"

namespace gpuwasm::store {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::Span;
using gpuwasm::testing::TempDir;

class Postgres : public gpuwasm::testing::PostgresTest {
 protected:
  std::unique_ptr<Store> Open() {
    auto db = OpenPostgresStore(conninfo_);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
};

TEST_F(Postgres, versions_count_up_and_are_never_reused) {
  auto db = Open();
  ASSERT_NE(db, nullptr);
  testing::ExpectVersioning(*db);
}

TEST_F(Postgres, status_list_and_tenant_filter) {
  auto db = Open();
  ASSERT_NE(db, nullptr);
  testing::ExpectStatusAndLists(*db);
  EXPECT_TRUE(db->shared());
  EXPECT_EQ(db->description().rfind("postgresql ", 0), 0u) << db->description();
}

// Two nodes (two stores on one database) deploying the same name from several threads each:
// every version is handed out exactly once, with no gaps.
TEST_F(Postgres, concurrent_deploys_from_two_nodes_get_distinct_versions) {
  // Both nodes start at once: creating the schema is serialized among them.
  std::unique_ptr<Store> nodes[2];
  std::thread starters[2];
  for (int n = 0; n < 2; ++n) starters[n] = std::thread([&, n] { nodes[n] = Open(); });
  for (auto& t : starters) t.join();
  ASSERT_TRUE(nodes[0] && nodes[1]);
  constexpr int kThreads = 4, kEach = 10;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<int64_t> versions;
  std::atomic<int> errors{0};
  for (int t = 0; t < 2 * kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto r = nodes[t % 2]->CreateFunction({"acme", "hot", std::string(64, 'e'), 1, ""});
        if (!r.ok()) {
          ++errors;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        versions.insert(r->version);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(versions.size(), size_t{2 * kThreads * kEach});
  EXPECT_EQ(*versions.begin(), 1);
  EXPECT_EQ(*versions.rbegin(), 2 * kThreads * kEach);
  EXPECT_EQ(nodes[1]->Versions("acme", "hot")->size(), size_t{2 * kThreads * kEach});
}

TEST_F(Postgres, a_lock_excludes_other_nodes_until_released) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  auto held = a->Lock("compile:x");
  ASSERT_TRUE(held.ok()) << held.status();
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto l = b->Lock("compile:x");
    EXPECT_TRUE(l.ok()) << l.status();
    got = true;
  });
  auto other = b->Lock("compile:y");  // another name is free
  EXPECT_TRUE(other.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(got.load());
  held->reset();
  waiter.join();
  EXPECT_TRUE(got.load());
}

// A node killed while it holds a lock (mid-compile, say) releases it: its connection closes.
TEST_F(Postgres, a_node_that_dies_releases_its_locks) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto db = OpenPostgresStore(conninfo_);
    if (!db.ok()) _exit(1);
    auto l = (*db)->Lock("compile:z");
    if (!l.ok()) _exit(2);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    _exit(0);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the child could not take the lock";
  ::close(ready[0]);
  auto db = Open();
  ASSERT_NE(db, nullptr);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto start = std::chrono::steady_clock::now();
  auto l = db->Lock("compile:z");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Connections dropped under the store (a server restart, a proxy timeout) are re-established.
TEST_F(Postgres, dropped_connections_are_reestablished) {
  auto db = Open();
  ASSERT_NE(db, nullptr);
  auto f = *db->CreateFunction({"acme", "a", std::string(64, 'a'), 1, ""});
  std::string err =
      gpuwasm::testing::PgExec(admin_, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" +
                                           name_ + "' AND pid <> pg_backend_pid()");
  ASSERT_EQ(err, "");
  auto again = db->GetFunction(f.id);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, f);
}

TEST_F(Postgres, unreachable_server_is_a_clear_error_without_the_password) {
  auto db = OpenPostgresStore("host=/nonexistent-gpuwasm-dir port=5432 user=u password=hunter2 dbname=d");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(db.status().message().find("cannot connect"), std::string::npos) << db.status();
  EXPECT_EQ(db.status().message().find("hunter2"), std::string::npos) << db.status();
}

TEST(PostgresConninfo, passwords_are_redacted) {
  EXPECT_EQ(RedactConninfo("postgresql://gw:s3cret@db.example:5432/gpuwasm"),
            "postgresql://gw:***@db.example:5432/gpuwasm");
  EXPECT_EQ(RedactConninfo("postgres://gw@db/gpuwasm?sslmode=require&password=x1"),
            "postgres://gw@db/gpuwasm?sslmode=require&password=***");
  EXPECT_EQ(RedactConninfo("host=db user=gw password=s3cret dbname=g"), "host=db user=gw password=*** dbname=g");
  EXPECT_EQ(RedactConninfo("host=db password = 'a b\\'c' dbname=g"), "host=db password=*** dbname=g");
  EXPECT_EQ(RedactConninfo("host=db dbname=g"), "host=db dbname=g");
}

// Two nodes sharing the database and one directory: what one deploys the other sees and can
// delete, blobs go with their last record, and a starting node leaves alone a temporary file
// another node may still be writing.
TEST_F(Postgres, two_local_stores_share_functions_and_blobs) {
  TempDir dir;
  auto a = LocalStore::Open(StoreOptions{dir.path(), conninfo_});
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = LocalStore::Open(StoreOptions{dir.path(), conninfo_});  // no file lock: both open
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE((*a)->shared());
  auto f = (*a)->AddFunction({"t", "f", "", 0, ""}, Span("module bytes"));
  ASSERT_TRUE(f.ok()) << f.status();
  auto seen = (*b)->metadata().GetFunction(f->id);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*(*b)->blobs().Get(seen->sha256), "module bytes");
  EXPECT_TRUE(*(*b)->DeleteFunction(f->id));
  EXPECT_EQ((*a)->metadata().GetFunction(f->id).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE((*a)->blobs().Has(f->sha256));

  std::ofstream(dir.path() / "tmp" / "fresh.part") << "being written by another node";
  std::ofstream(dir.path() / "tmp" / "stale.part") << "left by a crash";
  fs::last_write_time(dir.path() / "tmp" / "stale.part",
                      fs::file_time_type::clock::now() - kSharedTemporaryGrace - std::chrono::minutes(1));
  ASSERT_TRUE((*a)->blobs().Put(Span("orphan")).ok());
  auto c = LocalStore::Open(StoreOptions{dir.path(), conninfo_});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->recovery().temporary_files_removed, 1u);
  EXPECT_EQ((*c)->recovery().orphan_blobs_removed, 1u);
  EXPECT_TRUE(fs::exists(dir.path() / "tmp" / "fresh.part"));
  EXPECT_FALSE(fs::exists(dir.path() / "tmp" / "stale.part"));
}

}  // namespace
}  // namespace gpuwasm::store
