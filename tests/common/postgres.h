// A database of its own for one test, on the PostgreSQL server named by $GPUWASM_TEST_POSTGRES
// (a key=value libpq string; scripts/with-postgres.sh, which `make test` and CI use, starts a
// private server and sets it). Tests skip, saying why, when it is unset. Link with libpq.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <string>

#include "common/unique_name.h"

namespace gpuwasm::testing {

// Runs SQL on a connection; returns the error text, "" on success.
inline std::string PgExec(const std::string& conninfo, const std::string& sql) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  std::string err;
  if (PQstatus(c) != CONNECTION_OK) {
    err = PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) err = PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(c);
  return err;
}

class PostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("GPUWASM_TEST_POSTGRES");
    if (base == nullptr || *base == '\0') {
      GTEST_SKIP() << "no PostgreSQL server: run under scripts/with-postgres.sh (make test does)";
    }
    admin_ = base;
    name_ = "gpuwasm_test_" + UniqueSuffix();
    ASSERT_EQ(PgExec(admin_, "CREATE DATABASE " + name_), "") << "cannot create a test database";
    conninfo_ = admin_ + " dbname=" + name_;  // a later keyword wins in libpq's key=value form
  }
  void TearDown() override {
    if (!name_.empty()) PgExec(admin_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }

  std::string admin_;     // the server's maintenance database
  std::string name_;      // this test's database
  std::string conninfo_;  // connection string of this test's database
};

}  // namespace gpuwasm::testing
