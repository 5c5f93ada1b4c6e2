// The rules that turn cadrt_init's measurements into the node's transfer
// decisions (cadrt/src/verdicts.h).
#include "verdicts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using cadrt::kNotMeasured;
constexpr int64_t N = kNotMeasured;

struct LaneCase {
  int64_t lane[4], read[4];
  bool ok;
  uint64_t limit;
};

// The smallest size from which on the lanes lose at every size, UINT64_MAX
// when they win at 1 MiB, 0 when they lose even at 16 KiB; a loss below a
// win is noise; a time not measured, or reads that failed, lose.
TEST(Verdicts, LanesLimit) {
  const LaneCase cases[] = {
      {{1, 1, 1, 1}, {2, 2, 2, 2}, true, UINT64_MAX},
      {{3, 3, 3, 3}, {2, 2, 2, 2}, true, 0},
      {{1, 3, 3, 3}, {2, 2, 2, 2}, true, 65536},
      {{1, 1, 3, 3}, {2, 2, 2, 2}, true, 262144},
      {{1, 1, 1, 3}, {2, 2, 2, 2}, true, 1048576},
      {{3, 3, 3, 1}, {2, 2, 2, 2}, true, UINT64_MAX},  // a win at 1 MiB serves every size
      {{3, 1, 3, 3}, {2, 2, 2, 2}, true, 262144},
      {{2, 2, 2, 2}, {2, 2, 2, 2}, true, 0},            // a tie loses
      {{1, 1, 1, N}, {2, 2, 2, 2}, true, 1048576},     // not measured: lost
      {{N, N, N, N}, {2, 2, 2, 2}, true, 0},
      {{1, 1, 1, 1}, {2, 2, 2, 2}, false, 0},          // the reads failed
  };
  for (const LaneCase &c : cases) {
    EXPECT_EQ(cadrt::lanes_limit(c.lane, c.read, c.ok), c.limit)
        << c.lane[0] << "," << c.lane[1] << "," << c.lane[2] << "," << c.lane[3] << " ok=" << c.ok;
  }
}

// Each rank publishes its limit plus one (UINT64_MAX for none), 0 if it
// did not measure; the node takes the least.
TEST(Verdicts, NodeLanesLimit) {
  bool any = true;
  EXPECT_EQ(cadrt::node_lanes_limit({}, &any), UINT64_MAX);
  EXPECT_FALSE(any);
  EXPECT_EQ(cadrt::node_lanes_limit({0, 0, 0}, &any), UINT64_MAX);
  EXPECT_FALSE(any);
  EXPECT_EQ(cadrt::node_lanes_limit({UINT64_MAX, 0, UINT64_MAX}, &any), UINT64_MAX);
  EXPECT_TRUE(any);
  EXPECT_EQ(cadrt::node_lanes_limit({UINT64_MAX, 65537, 262145, 0}, &any), 65536u);
  EXPECT_TRUE(any);
  EXPECT_EQ(cadrt::node_lanes_limit({1, 65537}, &any), 0u);  // one pair found them slower at 16 KiB
  EXPECT_TRUE(any);
}

// A push wins unless the read is more than 10 % faster; a class either
// time of which was not measured is lost; 0x100 says measured.
TEST(Verdicts, PushWins) {
  const int64_t read[4] = {1000, 1000, 1000, 1000};
  const int64_t even[4] = {1000, 1099, 1100, 2000};
  EXPECT_EQ(cadrt::push_wins(even, read), 0x100u | 0x1 | 0x2);
  const int64_t gone[4] = {N, 10, 10, 10};
  const int64_t half[4] = {10, N, 10, 10};
  EXPECT_EQ(cadrt::push_wins(gone, read), 0x100u | 0x2 | 0x4 | 0x8);
  const int64_t fast[4] = {1, 1, 1, 1};
  EXPECT_EQ(cadrt::push_wins(fast, half), 0x100u | 0x1 | 0x4 | 0x8);
  const int64_t none[4] = {N, N, N, N};
  EXPECT_EQ(cadrt::push_wins(none, none), 0x100u);
}

}  // namespace
