// reduce_test.cpp - every built-in op on every type (reduce_cases.c, also
// run in the kernel), and the semantics people ask about, spelled out.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "suite_gtest.h"
#include "test_program.h"

CAD_GTEST_SUITE(ReduceTable, cad_suite_reduce);

namespace {

template <typename T>
void Reduce(unsigned op, unsigned dtype, std::vector<T> &inout, const std::vector<T> &in) {
  cad_test::OneReduce(inout.size() * sizeof(T), op, dtype).Run(inout.data(), in.data());
}

struct DoubleInt {
  double v;
  int32_t k;
};

}  // namespace

TEST(Reduce, IntegerSumAndProductWrap) {
  std::vector<int8_t> a{127, -128, 100}, b{1, -1, 3};
  Reduce(CAD_OP_SUM, CAD_DT_INT8, a, b);
  EXPECT_EQ(a, (std::vector<int8_t>{-128, 127, 103}));
  std::vector<uint16_t> c{65535}, d{65535};
  Reduce(CAD_OP_PROD, CAD_DT_UINT16, c, d);  // promoted to int in C: must not overflow
  EXPECT_EQ(c[0], 1);
  std::vector<int64_t> e{std::numeric_limits<int64_t>::max()}, f{1};
  Reduce(CAD_OP_SUM, CAD_DT_INT64, e, f);
  EXPECT_EQ(e[0], std::numeric_limits<int64_t>::min());
}

// Open MPI: max = inout > in ? inout : in, so a NaN already in inout is
// replaced and a NaN arriving in `in` is kept.
TEST(Reduce, MaxAndMinFollowOpenMpiOnNaN) {
  const double nan = std::nan("");
  std::vector<double> a{nan, 1.0}, b{2.0, nan};
  Reduce(CAD_OP_MAX, CAD_DT_DOUBLE, a, b);
  EXPECT_EQ(a[0], 2.0);
  EXPECT_TRUE(std::isnan(a[1]));
  std::vector<double> c{nan, 1.0}, d{2.0, nan};
  Reduce(CAD_OP_MIN, CAD_DT_DOUBLE, c, d);
  EXPECT_EQ(c[0], 2.0);
  EXPECT_TRUE(std::isnan(c[1]));
}

TEST(Reduce, LogicalOpsGiveZeroOrOne) {
  std::vector<int32_t> a{5, 0, 7, 0}, b{-3, 9, 0, 0};
  std::vector<int32_t> land = a, lor = a, lxor = a;
  Reduce(CAD_OP_LAND, CAD_DT_INT32, land, b);
  Reduce(CAD_OP_LOR, CAD_DT_INT32, lor, b);
  Reduce(CAD_OP_LXOR, CAD_DT_INT32, lxor, b);
  EXPECT_EQ(land, (std::vector<int32_t>{1, 0, 0, 0}));
  EXPECT_EQ(lor, (std::vector<int32_t>{1, 1, 1, 0}));
  EXPECT_EQ(lxor, (std::vector<int32_t>{0, 1, 1, 0}));
}

// On equal values MINLOC keeps inout's value (+0.0 here, though in holds
// -0.0) and takes the smaller index.
TEST(Reduce, MinlocTieKeepsInoutValueAndSmallerIndex) {
  std::vector<DoubleInt> a{{0.0, 5}, {1.0, 1}, {3.0, 9}}, b{{-0.0, 2}, {1.0, 4}, {2.0, 9}};
  Reduce(CAD_OP_MINLOC, CAD_DT_DOUBLE_INT, a, b);
  EXPECT_EQ(a[0].k, 2);
  EXPECT_FALSE(std::signbit(a[0].v));
  EXPECT_EQ(a[1].k, 1);
  EXPECT_EQ(a[2].v, 2.0);
  EXPECT_EQ(a[2].k, 9);
  std::vector<DoubleInt> c{{1.0, 3}}, d{{7.0, 8}};
  Reduce(CAD_OP_MAXLOC, CAD_DT_DOUBLE_INT, c, d);
  EXPECT_EQ(c[0].v, 7.0);
  EXPECT_EQ(c[0].k, 8);
}

TEST(Reduce, PairLayoutsAreCStructs) {
  struct FI { float v; int32_t k; };
  struct LI { int64_t v; int32_t k; };
  struct SI { int16_t v; int32_t k; };
  EXPECT_EQ(cad_dtype_size(CAD_DT_FLOAT_INT), sizeof(FI));
  EXPECT_EQ(cad_dtype_size(CAD_DT_DOUBLE_INT), sizeof(DoubleInt));
  EXPECT_EQ(cad_dtype_size(CAD_DT_LONG_INT), sizeof(LI));
  EXPECT_EQ(cad_dtype_size(CAD_DT_SHORT_INT), sizeof(SI));
}
