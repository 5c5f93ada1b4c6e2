// eval.cpp - see eval.h.
#include "eval.h"

#include "parser.h"

namespace cad {

namespace {

const BuiltinInfo kBuiltins[] = {
#define CAD_X(id, name, lo, hi, ret, sig) {name, lo, hi, Type::ret, sig},
    CAD_BUILTIN_FUNCTIONS(CAD_X)
#undef CAD_X
};

struct OpName {
  const char *spelling;
  bool unary;
  Op op;
};
const OpName kOps[] = {
    {"-", true, Op::Neg},      {"!", true, Op::Not},      {"~", true, Op::BitNot},
    {"+", false, Op::Add},     {"-", false, Op::Sub},     {"*", false, Op::Mul},
    {"/", false, Op::Div},     {"%", false, Op::Mod},     {"<<", false, Op::Shl},
    {">>", false, Op::Shr},    {"&", false, Op::BitAnd},  {"|", false, Op::BitOr},
    {"^", false, Op::BitXor},  {"==", false, Op::Eq},     {"!=", false, Op::Ne},
    {"<", false, Op::Lt},      {"<=", false, Op::Le},     {">", false, Op::Gt},
    {">=", false, Op::Ge},     {"&&", false, Op::And},    {"||", false, Op::Or},
};

}  // namespace

const BuiltinInfo &builtin_info(Fn f) { return kBuiltins[static_cast<int>(f)]; }

int builtin_lookup(const std::string &name) {
  for (size_t i = 0; i < sizeof(kBuiltins) / sizeof(kBuiltins[0]); i++)
    if (name == kBuiltins[i].name) return static_cast<int>(i);
  return -1;
}

bool builtin_takes_level(Fn f) { return f >= Fn::Domain; }

bool op_lookup(const std::string &spelling, bool unary, Op *out) {
  for (const OpName &o : kOps)
    if (o.unary == unary && spelling == o.spelling) {
      *out = o.op;
      return true;
    }
  return false;
}

bool add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

void eval_fail(Frame &f, Code code, const Loc &loc, const std::string &message) {
  if (f.diags) {
    Diagnostic &d = f.diags->error(code, loc, message);
    d.instance = f.instance;
    d.rank = f.rank;
  }
  throw EvalError();
}

namespace {

std::string num(int64_t v) { return std::to_string(v); }

int64_t floor_div(Frame &f, const Expr &e, int64_t a, int64_t b) {
  if (b == 0) eval_fail(f, Code::DivZero, e.loc, "division by zero (" + num(a) + " / 0)");
  if (a == INT64_MIN && b == -1) eval_fail(f, Code::Overflow, e.loc, "integer overflow in " + num(a) + " / -1");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

int64_t floor_mod(Frame &f, const Expr &e, int64_t a, int64_t b) {
  if (b == 0) eval_fail(f, Code::DivZero, e.loc, "modulo by zero (" + num(a) + " % 0)");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

void need_rank(Frame &f, const Expr &e, int64_t r, const char *what) {
  if (r < 0 || r >= f.topo->size())
    eval_fail(f, Code::BadPeer, e.loc,
              std::string(what) + " " + num(r) + " is not a rank (P = " + num(f.topo->size()) + ")");
}

int64_t call(const Expr &e, Frame &f) {
  const Fn fn = static_cast<Fn>(e.fn);
  std::vector<int64_t> a;
  a.reserve(e.args.size());
  for (const ExprPtr &arg : e.args) a.push_back(eval(*arg, f));
  const Loc &loc = e.loc;
  if (e.size_boundary && f.boundaries) {
    if (fn == Fn::CeilDiv) f.boundaries->push_back(a[1]);
    else f.boundaries->insert(f.boundaries->end(), a.begin(), a.end());
  }
  switch (fn) {
    case Fn::Min: {
      int64_t m = a[0];
      for (int64_t v : a) m = v < m ? v : m;
      return m;
    }
    case Fn::Max: {
      int64_t m = a[0];
      for (int64_t v : a) m = v > m ? v : m;
      return m;
    }
    case Fn::CeilDiv: {
      if (a[1] <= 0) eval_fail(f, Code::DivZero, loc, "ceil_div by " + num(a[1]) + ": the divisor must be positive");
      int64_t q = floor_div(f, e, a[0], a[1]);
      return q + (q * a[1] != a[0]);
    }
    case Fn::Log2:
    case Fn::CeilLog2: {
      if (a[0] < 1) eval_fail(f, Code::Overflow, loc, std::string(builtin_info(fn).name) + "(" + num(a[0]) + ") is undefined: the argument must be at least 1");
      int64_t l = 63 - __builtin_clzll(static_cast<uint64_t>(a[0]));
      return fn == Fn::Log2 ? l : l + ((int64_t{1} << l) != a[0]);
    }
    case Fn::Pow2:
      if (a[0] < 0 || a[0] > 62) eval_fail(f, Code::Overflow, loc, "pow2(" + num(a[0]) + ") does not fit in 64 bits (0 <= k <= 62)");
      return int64_t{1} << a[0];
    case Fn::IsPow2:
      return a[0] > 0 && (a[0] & (a[0] - 1)) == 0;
    case Fn::Abs:
      if (a[0] == INT64_MIN) eval_fail(f, Code::Overflow, loc, "integer overflow in abs");
      return a[0] < 0 ? -a[0] : a[0];
    case Fn::Ndomains:
      return f.topo->ndomains(static_cast<int>(a[0]));
    case Fn::Domain:
    case Fn::Leader:
    case Fn::LocalRank:
    case Fn::LocalSize: {
      need_rank(f, e, a[1], "the rank");
      const int lv = static_cast<int>(a[0]);
      return fn == Fn::Domain ? f.topo->domain(lv, a[1])
             : fn == Fn::Leader ? f.topo->leader(lv, a[1])
             : fn == Fn::LocalRank ? f.topo->local_rank(lv, a[1])
                                   : f.topo->local_size(lv, a[1]);
    }
    case Fn::DomainSize:
    case Fn::DomainRank: {
      const int lv = static_cast<int>(a[0]);
      if (a[1] < 0 || a[1] >= f.topo->ndomains(lv))
        eval_fail(f, Code::BadPeer, loc, "domain " + num(a[1]) + " does not exist at level " + level_name(lv) + " (" + num(f.topo->ndomains(lv)) + " domains)");
      if (fn == Fn::DomainSize) return f.topo->domain_size(lv, a[1]);
      if (a[2] < 0 || a[2] >= f.topo->domain_size(lv, a[1]))
        eval_fail(f, Code::BadPeer, loc, "domain " + num(a[1]) + " at level " + level_name(lv) + " has " + num(f.topo->domain_size(lv, a[1])) + " ranks, not " + num(a[2] + 1));
      return f.topo->domain_rank(lv, a[1], a[2]);
    }
  }
  return 0;
}

}  // namespace

int64_t eval(const Expr &e, Frame &f) {
  switch (e.kind) {
    case ExprKind::Int:
    case ExprKind::Bool:
    case ExprKind::Level:
      return e.value;
    case ExprKind::Name:
      return f.slots[e.slot];
    case ExprKind::Cond:
      return eval(*e.args[0], f) ? eval(*e.args[1], f) : eval(*e.args[2], f);
    case ExprKind::Call:
      return call(e, f);
    case ExprKind::Unary: {
      const int64_t a = eval(*e.args[0], f);
      switch (static_cast<Op>(e.fn)) {
        case Op::Neg:
          if (a == INT64_MIN) eval_fail(f, Code::Overflow, e.loc, "integer overflow in -(" + num(a) + ")");
          return -a;
        case Op::Not: return !a;
        default: return ~a;
      }
    }
    case ExprKind::Binary: {
      const Op op = static_cast<Op>(e.fn);
      const int64_t a = eval(*e.args[0], f);
      if (op == Op::And) return a && eval(*e.args[1], f);
      if (op == Op::Or) return a || eval(*e.args[1], f);
      const int64_t b = eval(*e.args[1], f);
      if (e.size_boundary && f.boundaries) {
        f.boundaries->push_back(b);
        if (op != Op::Div && op != Op::Mod) f.boundaries->push_back(a);
      }
      int64_t r;
      switch (op) {
        case Op::Add:
          if (!add_ok(a, b, &r)) eval_fail(f, Code::Overflow, e.loc, "integer overflow in " + num(a) + " + " + num(b));
          return r;
        case Op::Sub:
          if (__builtin_sub_overflow(a, b, &r)) eval_fail(f, Code::Overflow, e.loc, "integer overflow in " + num(a) + " - " + num(b));
          return r;
        case Op::Mul:
          if (!mul_ok(a, b, &r)) eval_fail(f, Code::Overflow, e.loc, "integer overflow in " + num(a) + " * " + num(b));
          return r;
        case Op::Div: return floor_div(f, e, a, b);
        case Op::Mod: return floor_mod(f, e, a, b);
        case Op::Shl:
          r = b >= 0 && b <= 62 ? static_cast<int64_t>(static_cast<uint64_t>(a) << b) : 0;
          if (b < 0 || b > 62 || (r >> b) != a)
            eval_fail(f, Code::Overflow, e.loc, "integer overflow in " + num(a) + " << " + num(b));
          return r;
        case Op::Shr:
          if (b < 0 || b > 63) eval_fail(f, Code::Overflow, e.loc, "shift count " + num(b) + " is outside 0..63");
          return a >> b;
        case Op::BitAnd: return a & b;
        case Op::BitOr: return a | b;
        case Op::BitXor: return a ^ b;
        case Op::Eq: return a == b;
        case Op::Ne: return a != b;
        case Op::Lt: return a < b;
        case Op::Le: return a <= b;
        case Op::Gt: return a > b;
        case Op::Ge: return a >= b;
        default: return 0;
      }
    }
  }
  return 0;
}

}  // namespace cad
