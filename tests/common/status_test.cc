#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <sstream>
#include <string>

namespace gpuwasm {
namespace {

TEST(Status, default_is_ok_with_empty_message) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(Status, named_constructors_set_code_and_message) {
  Status s = Status::ResourceExhausted("device bytes quota of 1024 exceeded");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.ToString(), "resource_exhausted: device bytes quota of 1024 exceeded");
  EXPECT_EQ(Status::DeviceFault("x").code(), StatusCode::kDeviceFault);
  EXPECT_EQ(Status::DeadlineExceeded("x").code(), StatusCode::kDeadlineExceeded);
}

TEST(Status, every_code_has_a_distinct_stable_name) {
  std::set<std::string_view> names;
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    std::string_view n = StatusCodeName(static_cast<StatusCode>(c));
    EXPECT_NE(n, "unknown") << c;
    EXPECT_TRUE(names.insert(n).second) << n;
  }
  EXPECT_EQ(StatusCodeName(StatusCode::kInvalidArgument), "invalid_argument");
}

TEST(Status, with_context_prefixes_message_and_keeps_code) {
  Status s = Status::NotFound("kernel 'saxpy'").WithContext("function_get");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "function_get: kernel 'saxpy'");
  EXPECT_TRUE(Status::Ok().WithContext("anything").ok());
}

TEST(Status, equality_and_printing) {
  EXPECT_EQ(Status::Internal("a"), Status::Internal("a"));
  EXPECT_NE(Status::Internal("a"), Status::Internal("b"));
  EXPECT_NE(Status::Internal("a"), Status::IoError("a"));
  std::ostringstream os;
  os << Status::OutOfRange("offset 12 + 8 > 16");
  EXPECT_EQ(os.str(), "out_of_range: offset 12 + 8 > 16");
}

Result<int> ParsePositive(int v) {
  if (v <= 0) return Status::InvalidArgument("not positive: " + std::to_string(v));
  return v;
}

Result<int> DoubledPositive(int v) {
  GPUWASM_ASSIGN_OR_RETURN(int x, ParsePositive(v));
  return 2 * x;
}

Status CheckBoth(int a, int b) {
  GPUWASM_RETURN_IF_ERROR(ParsePositive(a).status());
  GPUWASM_RETURN_IF_ERROR(ParsePositive(b).status());
  return Status::Ok();
}

TEST(Result, holds_value_or_error) {
  Result<int> good = ParsePositive(7);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = ParsePositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status(), Status::InvalidArgument("not positive: -1"));
  EXPECT_EQ(bad.value_or(42), 42);
}

TEST(Result, macros_propagate_the_first_error) {
  EXPECT_EQ(*DoubledPositive(21), 42);
  EXPECT_EQ(DoubledPositive(0).status().message(), "not positive: 0");
  EXPECT_TRUE(CheckBoth(1, 2).ok());
  EXPECT_EQ(CheckBoth(1, -2).message(), "not positive: -2");
  EXPECT_EQ(CheckBoth(-1, -2).message(), "not positive: -1");
}

TEST(Result, move_only_values) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

}  // namespace
}  // namespace gpuwasm
