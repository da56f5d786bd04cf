// What every metadata Store must do, checked the same way on SQLite and PostgreSQL.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/store.h"

namespace gpuwasm::store::testing {

// Versions count up per (tenant, name) and are never reused after a delete.
inline void ExpectVersioning(Store& db) {
  NewFunction f{"acme", "resize", std::string(64, 'a'), 10, ""};
  auto v1 = db.CreateFunction(f);
  auto v2 = db.CreateFunction(f);
  ASSERT_TRUE(v1.ok() && v2.ok()) << v1.status() << " " << v2.status();
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v2->version, 2);
  EXPECT_NE(v1->id, v2->id);
  EXPECT_EQ(v1->status, DeployStatus::kCompiling);
  EXPECT_EQ(*db.GetFunction(v1->id), *v1);
  ASSERT_TRUE(*db.DeleteFunction(v2->id));
  EXPECT_FALSE(*db.DeleteFunction(v2->id));
  EXPECT_EQ(db.GetFunction(v2->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(db.CreateFunction(f)->version, 3);
  f.tenant = "other";
  EXPECT_EQ(db.CreateFunction(f)->version, 1);  // versions are per (tenant, name)
}

// Status changes, listing with and without a tenant filter, blob references, tenants.
inline void ExpectStatusAndLists(Store& db) {
  auto a = *db.CreateFunction({"acme", "a", std::string(64, 'a'), 1, "run"});
  auto b = *db.CreateFunction({"beta", "b", std::string(64, 'b'), 2, ""});
  ASSERT_TRUE(db.SetStatus(a.id, DeployStatus::kFailed, "no export named run").ok());
  EXPECT_EQ(db.SetStatus("fn_0000000000000000", DeployStatus::kReady, "").code(), StatusCode::kNotFound);
  auto got = *db.GetFunction(a.id);
  EXPECT_EQ(got.status, DeployStatus::kFailed);
  EXPECT_EQ(got.error, "no export named run");
  EXPECT_EQ(got.entry, "run");
  EXPECT_EQ(db.ListFunctions("acme")->size(), 1u);
  EXPECT_EQ(db.ListFunctions(std::nullopt)->size(), 2u);
  EXPECT_EQ(db.Versions("beta", "b")->front(), b);
  EXPECT_TRUE(*db.BlobReferenced(std::string(64, 'b')));
  EXPECT_FALSE(*db.BlobReferenced(std::string(64, 'c')));
  ASSERT_TRUE(db.AddTenant("acme").ok());
  ASSERT_TRUE(db.AddTenant("acme").ok());
  ASSERT_TRUE(db.AddTenant("beta").ok());
  EXPECT_EQ(*db.ListTenants(), (std::vector<std::string>{"acme", "beta"}));
  // Text is stored as given, quotes and all.
  auto q = *db.CreateFunction({"acme", "q", std::string(64, 'd'), 3, "it's \"odd\"; DROP TABLE x"});
  EXPECT_EQ(db.GetFunction(q.id)->entry, "it's \"odd\"; DROP TABLE x");
}

}  // namespace gpuwasm::store::testing
