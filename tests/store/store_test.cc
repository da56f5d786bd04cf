// The function store: blobs, SQLite metadata, and recovery after a crash at any point of a deploy.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "../common/temp_dir.h"
#include "common/sha256.h"
#include "store/local_store.h"
#include "store/sqlite_store.h"
#include "store_contract.h"

namespace gpuwasm::store {
namespace {
namespace fs = std::filesystem;
using gpuwasm::testing::ReadFile;
using gpuwasm::testing::Span;
using gpuwasm::testing::TempDir;

TEST(BlobStore, put_get_round_trip_is_content_addressed) {
  TempDir dir;
  auto blobs = BlobStore::Open(dir.path());
  ASSERT_TRUE(blobs.ok()) << blobs.status();
  std::string data("module\0bytes", 12);
  auto sha = blobs->Put(Span(data));
  ASSERT_TRUE(sha.ok()) << sha.status();
  EXPECT_EQ(*sha, Sha256Hex(data));
  EXPECT_EQ(*blobs->Get(*sha), data);
  EXPECT_EQ(*blobs->Put(Span(data)), *sha);  // storing again is a no-op
  EXPECT_EQ(blobs->List()->size(), 1u);
  EXPECT_TRUE(fs::is_empty(dir.path() / "tmp"));
  ASSERT_TRUE(blobs->Remove(*sha).ok());
  EXPECT_EQ(blobs->Get(*sha).status().code(), StatusCode::kNotFound);
}

TEST(BlobStore, damaged_blob_is_reported_not_returned) {
  TempDir dir;
  auto blobs = BlobStore::Open(dir.path());
  std::string sha = *blobs->Put(Span("original"));
  std::ofstream(dir.path() / "blobs" / sha, std::ios::trunc) << "tampered";
  auto got = blobs->Get(sha);
  EXPECT_EQ(got.status().code(), StatusCode::kIoError);
  EXPECT_NE(got.status().message().find("damaged"), std::string::npos);
}

TEST(BlobStore, names_that_are_not_hashes_are_refused) {
  TempDir dir;
  auto blobs = BlobStore::Open(dir.path());
  EXPECT_EQ(blobs->Get("../gpuwasm.db").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(blobs->Remove("../../etc/passwd").code(), StatusCode::kInvalidArgument);
}

// A full disk (here: the file-size limit) while a blob is written fails that deploy with the
// operating system's reason and leaves no partial file; the store keeps working.
TEST(LocalStore, full_disk_during_deploy_fails_cleanly) {
  TempDir dir;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead of killing us
    auto store = LocalStore::Open(dir.path());
    if (!store.ok()) ::_exit(10);
    auto small = (*store)->AddFunction({"t", "small", "", 0, ""}, Span("fits"));
    if (!small.ok()) ::_exit(11);
    rlimit limit{64 * 1024, 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string big(1 << 20, 'x');
    auto r = (*store)->AddFunction({"t", "big", "", 0, ""}, Span(big));
    if (r.ok()) ::_exit(12);
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    if (r.status().code() != StatusCode::kIoError) ::_exit(13);
    if (r.status().message().find("File too large") == std::string::npos) ::_exit(14);
    if (!fs::is_empty(dir.path() / "tmp")) ::_exit(15);
    if ((*store)->metadata().Versions("t", "big")->size() != 0) ::_exit(16);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto store = LocalStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->metadata().ListFunctions(std::nullopt)->size(), 1u);
  EXPECT_EQ((*store)->recovery().orphan_blobs_removed, 0u);
}

TEST(SqliteStore, versions_count_up_and_are_never_reused) {
  TempDir dir;
  auto db = OpenSqliteStore(dir.path() / "db");
  ASSERT_TRUE(db.ok()) << db.status();
  testing::ExpectVersioning(**db);
}

TEST(SqliteStore, status_list_and_tenant_filter) {
  TempDir dir;
  auto db = OpenSqliteStore(dir.path() / "db");
  ASSERT_TRUE(db.ok()) << db.status();
  testing::ExpectStatusAndLists(**db);
}

TEST(SqliteStore, garbage_database_is_a_clear_error) {
  TempDir dir;
  std::ofstream(dir.path() / "db") << "this is not a database, it is just text long enough to have a header";
  auto db = OpenSqliteStore(dir.path() / "db");
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("store database"), std::string::npos) << db.status();
}

TEST(LocalStore, one_process_at_a_time) {
  TempDir dir;
  auto first = LocalStore::Open(dir.path());
  ASSERT_TRUE(first.ok()) << first.status();
  // flock locks belong to the open file description: a second open in this process conflicts
  // exactly as another process would.
  auto second = LocalStore::Open(dir.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use by another gpuwasm process"), std::string::npos);
  first->reset();
  EXPECT_TRUE(LocalStore::Open(dir.path()).ok());
}

TEST(LocalStore, delete_removes_the_blob_only_when_unshared) {
  TempDir dir;
  auto store = std::move(*LocalStore::Open(dir.path()));
  auto a = *store->AddFunction({"t", "a", "", 0, ""}, Span("same bytes"));
  auto b = *store->AddFunction({"t", "b", "", 0, ""}, Span("same bytes"));
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_EQ(a.size, 10u);
  EXPECT_TRUE(*store->DeleteFunction(a.id));
  EXPECT_TRUE(store->blobs().Has(a.sha256));
  EXPECT_TRUE(*store->DeleteFunction(b.id));
  EXPECT_FALSE(store->blobs().Has(a.sha256));
  EXPECT_FALSE(*store->DeleteFunction(b.id));
}

TEST(LocalStore, open_cleans_up_what_a_crash_left) {
  TempDir dir;
  std::string kept_id, missing_id, compiling_id;
  {
    auto store = std::move(*LocalStore::Open(dir.path()));
    auto kept = *store->AddFunction({"t", "kept", "", 0, ""}, Span("kept module"));
    ASSERT_TRUE(store->metadata().SetStatus(kept.id, DeployStatus::kReady, "").ok());
    kept_id = kept.id;
    compiling_id = store->AddFunction({"t", "half", "", 0, ""}, Span("never compiled"))->id;
    auto missing = *store->AddFunction({"t", "gone", "", 0, ""}, Span("lost bytes"));
    missing_id = missing.id;
    ASSERT_TRUE(store->metadata().SetStatus(missing.id, DeployStatus::kReady, "").ok());
    ASSERT_TRUE(store->blobs().Remove(missing.sha256).ok());
    // A blob written but never recorded, and a write cut short.
    ASSERT_TRUE(store->blobs().Put(Span("orphan")).ok());
    std::ofstream(dir.path() / "tmp" / "abc.123.0") << "half a blob";
  }
  auto store = LocalStore::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  const RecoveryReport& r = (*store)->recovery();
  EXPECT_EQ(r.temporary_files_removed, 1u);
  EXPECT_EQ(r.orphan_blobs_removed, 1u);
  EXPECT_EQ(r.interrupted_compiles, std::vector<std::string>{compiling_id});
  EXPECT_EQ(r.failed_missing_blob, std::vector<std::string>{missing_id});
  auto missing = *(*store)->metadata().GetFunction(missing_id);
  EXPECT_EQ(missing.status, DeployStatus::kFailed);
  EXPECT_NE(missing.error.find("missing"), std::string::npos);
  EXPECT_EQ((*store)->metadata().GetFunction(kept_id)->status, DeployStatus::kReady);
  EXPECT_EQ((*store)->blobs().List()->size(), 2u);  // kept + compiling
}

// A child process deploys in a loop and reports each acknowledged id; it is killed (SIGKILL) at
// a random moment, several times. After each kill the store must open consistent: every
// acknowledged deploy is there with its bytes, no temporary file or orphan blob survives.
TEST(LocalStore, deploys_killed_at_random_moments_leave_a_consistent_store) {
  TempDir dir;
  std::mt19937 rng(7);
  std::set<std::string> acknowledged;
  for (int round = 0; round < 6; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto store = LocalStore::Open(dir.path());
      if (!store.ok()) ::_exit(3);
      for (int i = 0;; ++i) {
        std::string bytes = "module " + std::to_string(round) + "." + std::to_string(i) + std::string(4096 + i, 'x');
        auto rec = (*store)->AddFunction({"t", "f" + std::to_string(i % 5), "", 0, ""}, Span(bytes));
        if (!rec.ok()) {
          std::fprintf(stderr, "child: %s\n", rec.status().ToString().c_str());
          ::_exit(4);
        }
        bool remove = i % 3 == 0;  // deletes race the kill too
        std::string line = (remove ? "D " : "K ") + rec->id + "\n";
        if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(5);
        if (remove) (void)(*store)->DeleteFunction(rec->id);
      }
    }
    ::close(fds[1]);
    // Wait until the child has acknowledged its first deploy (a loaded machine may take a while
    // to get there), then kill it at a random moment after.
    std::string text;
    char buf[4096];
    while (text.find('\n') == std::string::npos) {
      ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 60));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child stopped by itself with " << WEXITSTATUS(status);
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    size_t lines = 0;
    for (size_t p = 0, q; (q = text.find('\n', p)) != std::string::npos; p = q + 1, ++lines) {
      if (text[p] == 'K') acknowledged.insert(text.substr(p + 2, q - p - 2));
    }
    EXPECT_GT(lines, 0u) << "round " << round;

    auto store = LocalStore::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE(fs::is_empty(dir.path() / "tmp"));
    auto functions = *(*store)->metadata().ListFunctions(std::nullopt);
    std::set<std::string> ids, referenced;
    for (const FunctionRecord& f : functions) {
      ids.insert(f.id);
      referenced.insert(f.sha256);
      auto bytes = (*store)->blobs().Get(f.sha256);
      ASSERT_TRUE(bytes.ok()) << f.id << ": " << bytes.status();
      EXPECT_EQ(bytes->size(), f.size);
    }
    std::vector<std::string> blobs = *(*store)->blobs().List();
    for (const std::string& sha : blobs) EXPECT_TRUE(referenced.count(sha)) << "orphan " << sha;
    // Every acknowledged deploy the child did not go on to delete survives, in every round.
    for (const std::string& id : acknowledged) EXPECT_TRUE(ids.count(id)) << "lost " << id << " in round " << round;
  }
  EXPECT_GT(acknowledged.size(), 6u);
}

}  // namespace
}  // namespace gpuwasm::store
