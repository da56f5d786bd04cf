#include <gtest/gtest.h>

#include "common/duration.h"
#include "common/names.h"
#include "common/sha256.h"

namespace gpuwasm {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, units) {
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("5s"), milliseconds(5000));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("2m"), milliseconds(120000));
  EXPECT_EQ(*ParseDuration("1h"), milliseconds(3600000));
  EXPECT_EQ(*ParseDuration("3"), milliseconds(3000));
  EXPECT_EQ(*ParseDuration("1500us"), milliseconds(2));
}

TEST(ParseDuration, rejects_garbage_with_a_clear_message) {
  EXPECT_EQ(ParseDuration("").status().message(), "empty duration");
  EXPECT_EQ(ParseDuration("fast").status().message(), "invalid duration 'fast' (examples: 250ms, 5s, 2m)");
  EXPECT_EQ(ParseDuration("5 days").status().message(),
            "invalid duration unit ' days' in '5 days' (use ms, s, m or h)");
  EXPECT_EQ(ParseDuration("-1s").status().code(), StatusCode::kInvalidArgument);
  // Not rounded to nothing: a deadline of zero would refuse every invocation.
  EXPECT_EQ(ParseDuration("100us").status().message(),
            "duration '100us' is shorter than 1 ms, the resolution of deadlines");
  EXPECT_EQ(*ParseDuration("0s"), milliseconds(0));
}

TEST(ListNames, sorted_and_capped) {
  EXPECT_EQ(ListNames({"b", "a", "c"}), "a, b, c");
  EXPECT_EQ(ListNames({}), "");
  EXPECT_EQ(ListNames({"d", "c", "b", "a"}, 2), "a, b, ... (4 in all)");
}

TEST(Sha256, known_vectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string_view parts[] = {"a", "bc"};
  EXPECT_EQ(Sha256Hex(parts), Sha256Hex("abc"));
}

}  // namespace
}  // namespace gpuwasm
