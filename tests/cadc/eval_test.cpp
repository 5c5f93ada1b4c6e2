// eval_test.cpp - the language's arithmetic: floor division and modulo,
// checked overflow, built-in functions, short-circuit logic.
#include "eval.h"
#include "helpers.h"

namespace {

// The value of expr for P = 8, n = 100, rank 3, or the error's code.
struct Result {
  bool ok;
  int64_t value;
  cad::Code code;
};

Result value_of(const std::string &expr) {
  cad_test::Compiled c("algorithm t : bcast\n  param v = " + expr + "\n{\n}\n");
  EXPECT_TRUE(c.ok()) << c.errors();
  if (!c.ok()) return {false, 0, cad::Code::Syntax};
  auto topo = cad::Topology::flat(8);
  cad::Frame f;
  f.topo = topo.get();
  f.diags = &c.diags;
  f.slots.assign(c.alg().nslots, 0);
  f.slots[cad::kSlotP] = 8;
  f.slots[cad::kSlotN] = 100;
  f.slots[cad::kSlotRank] = 3;
  try {
    return {true, cad::eval(*c.alg().params[0].value, f), cad::Code::Syntax};
  } catch (const cad::EvalError &) {
    return {false, 0, c.diags.list().back().code};
  }
}

int64_t v(const std::string &expr) {
  Result r = value_of(expr);
  EXPECT_TRUE(r.ok) << expr;
  return r.value;
}

cad::Code err(const std::string &expr) {
  Result r = value_of(expr);
  EXPECT_FALSE(r.ok) << expr << " evaluated to " << r.value;
  return r.code;
}

}  // namespace

TEST(Eval, FloorDivisionAndModulo) {
  EXPECT_EQ(v("-7 / 2"), -4);
  EXPECT_EQ(v("-7 % 2"), 1);
  EXPECT_EQ(v("7 % -2"), -1);
  EXPECT_EQ(v("7 / -2"), -4);
  EXPECT_EQ(v("(rank - 4) % P"), 7);  // rank 3: the previous-but-one rank wraps
  EXPECT_EQ(v("(0 - 1) % 5"), 4);
  EXPECT_EQ(v("-9223372036854775807 % -1"), 0);
}

TEST(Eval, OverflowAndDivisionByZeroAreErrors) {
  EXPECT_EQ(err("pow2(62) * 4"), cad::Code::Overflow);
  EXPECT_EQ(err("9223372036854775807 + 1"), cad::Code::Overflow);
  EXPECT_EQ(err("(-9223372036854775807 - 1) / -1"), cad::Code::Overflow);
  EXPECT_EQ(err("1 << 63"), cad::Code::Overflow);
  EXPECT_EQ(err("-1 << 63"), cad::Code::Overflow);
  EXPECT_EQ(err("pow2(63)"), cad::Code::Overflow);
  EXPECT_EQ(err("log2(0)"), cad::Code::Overflow);
  EXPECT_EQ(err("n / (P - P)"), cad::Code::DivZero);
  EXPECT_EQ(err("n % 0"), cad::Code::DivZero);
  EXPECT_EQ(err("ceil_div(7, 0)"), cad::Code::DivZero);
  EXPECT_EQ(err("abs(-9223372036854775807 - 1)"), cad::Code::Overflow);
}

TEST(Eval, BuiltinFunctions) {
  EXPECT_EQ(v("min(5, 2, 9)"), 2);
  EXPECT_EQ(v("max(5, 2, 9)"), 9);
  EXPECT_EQ(v("ceil_div(7, 2)"), 4);
  EXPECT_EQ(v("ceil_div(8, 2)"), 4);
  EXPECT_EQ(v("ceil_div(0, 3)"), 0);
  EXPECT_EQ(v("log2(1)"), 0);
  EXPECT_EQ(v("log2(9)"), 3);
  EXPECT_EQ(v("ceil_log2(8)"), 3);
  EXPECT_EQ(v("ceil_log2(9)"), 4);
  EXPECT_EQ(v("pow2(10)"), 1024);
  EXPECT_EQ(v("is_pow2(P) ? 1 : 0"), 1);
  EXPECT_EQ(v("is_pow2(0) ? 1 : 0"), 0);
  EXPECT_EQ(v("abs(-4)"), 4);
  EXPECT_EQ(v("rank ^ 1"), 2);
  EXPECT_EQ(v("-16 >> 2"), -4);
}

TEST(Eval, LogicShortCircuits) {
  EXPECT_EQ(v("false && n / 0 == 1 ? 1 : 2"), 2);
  EXPECT_EQ(v("true || n / 0 == 1 ? 1 : 2"), 1);
}
