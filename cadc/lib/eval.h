// eval.h - built-in functions and operators, and the evaluator of checked
// expressions: 64-bit integers with checked overflow, floor division and
// modulo (so (rank - 1) % P is P - 1 at rank 0), booleans, topology queries.
// An error (overflow, division by zero, a query out of range) is reported
// at the expression's location and unwinds with EvalError.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ast.h"
#include "diag.h"
#include "topology.h"

namespace cad {

#define CAD_BUILTIN_FUNCTIONS(X)                                                        \
  X(Min, "min", 2, 16, Int, "min(a, b, ...)")                                           \
  X(Max, "max", 2, 16, Int, "max(a, b, ...)")                                           \
  X(CeilDiv, "ceil_div", 2, 2, Int, "ceil_div(a, b): a / b rounded up, b > 0")          \
  X(Log2, "log2", 1, 1, Int, "log2(x): floor, x >= 1")                                  \
  X(CeilLog2, "ceil_log2", 1, 1, Int, "ceil_log2(x): x >= 1")                           \
  X(Pow2, "pow2", 1, 1, Int, "pow2(k) = 2^k, 0 <= k <= 62")                             \
  X(IsPow2, "is_pow2", 1, 1, Bool, "is_pow2(x)")                                        \
  X(Abs, "abs", 1, 1, Int, "abs(x)")                                                    \
  X(Domain, "domain", 2, 2, Int, "domain(level, r): r's domain at level")               \
  X(Ndomains, "ndomains", 1, 1, Int, "ndomains(level)")                                 \
  X(Leader, "leader", 2, 2, Int, "leader(level, r): lowest rank of r's domain")         \
  X(LocalRank, "local_rank", 2, 2, Int, "local_rank(level, r): r's index in its domain") \
  X(LocalSize, "local_size", 2, 2, Int, "local_size(level, r): ranks in r's domain")    \
  X(DomainSize, "domain_size", 2, 2, Int, "domain_size(level, d)")                      \
  X(DomainRank, "domain_rank", 3, 3, Int, "domain_rank(level, d, i): i-th rank of d")

enum class Fn {
#define CAD_X(id, name, lo, hi, ret, sig) id,
  CAD_BUILTIN_FUNCTIONS(CAD_X)
#undef CAD_X
};

struct BuiltinInfo {
  const char *name;
  int min_args, max_args;
  Type ret;
  const char *signature;
};
const BuiltinInfo &builtin_info(Fn f);
// -1 if unknown.
int builtin_lookup(const std::string &name);
// Topology functions take a level as their first argument.
bool builtin_takes_level(Fn f);

enum class Op {
  Neg, Not, BitNot,                          // unary
  Add, Sub, Mul, Div, Mod, Shl, Shr, BitAnd, BitOr, BitXor,
  Eq, Ne, Lt, Le, Gt, Ge, And, Or,
};
// The operator of a canonical spelling, unary or binary; false if none.
bool op_lookup(const std::string &spelling, bool unary, Op *out);

struct EvalError {};

// The values of an algorithm's slots for one rank of one instance.
struct Frame {
  std::vector<int64_t> slots;
  const Topology *topo = nullptr;
  Diagnostics *diags = nullptr;  // null: errors unwind without a diagnostic
  std::string instance;          // for diagnostics
  int rank = -1;
  // Not null: the values of size_boundary expressions go here (a probe).
  std::vector<int64_t> *boundaries = nullptr;
};

int64_t eval(const Expr &e, Frame &f);
// Reports an evaluation error at loc and unwinds.
[[noreturn]] void eval_fail(Frame &f, Code code, const Loc &loc, const std::string &message);

// Checked arithmetic; false on overflow.
bool add_ok(int64_t a, int64_t b, int64_t *r);
bool mul_ok(int64_t a, int64_t b, int64_t *r);

}  // namespace cad
