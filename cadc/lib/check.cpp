// check.cpp - semantic analysis (see check.h).
#include "check.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "../../kmod/core/cad_core.h"
#include "domain.h"
#include "eval.h"
#include "parser.h"
#include "userop.h"

namespace cad {

namespace {

const char *type_name(Type t) {
  switch (t) {
    case Type::Int: return "an integer";
    case Type::Bool: return "a boolean";
    case Type::Level: return "a topology level";
    default: return "nothing";
  }
}

struct Builtin {
  const char *name;
  int slot;
  Type type;
};
const Builtin kNames[] = {
    {"P", kSlotP, Type::Int},          {"rank", kSlotRank, Type::Int},
    {"root", kSlotRoot, Type::Int},    {"n", kSlotN, Type::Int},
    {"esize", kSlotEsize, Type::Int},  {"commutative", kSlotCommutative, Type::Bool},
    {"inplace", kSlotInplace, Type::Bool},
};

class Checker {
 public:
  Checker(Algorithm &a, Diagnostics *diags, const UserOps &ops) : a_(a), diags_(diags), ops_(ops) {}

  bool run() {
    const size_t errors = diags_->error_count();
    const CollectiveInfo &info = collective_info(a_.collective);
    scopes_.emplace_back();
    for (const Builtin &b : kNames) declare(b.name, b.slot, b.type, Loc());
    next_slot_ = kBuiltinSlots;
    for (size_t i = 0; i < info.buffers.size(); i++) {
      BufferInfo bi;
      bi.name = info.buffers[i].name;
      bi.collective_index = static_cast<int>(i);
      a_.buffers.push_back(bi);
    }
    for (size_t i = 0; i < a_.scratch.size(); i++) {
      Scratch &s = a_.scratch[i];
      if (buffer_index(s.name) >= 0 || lookup(s.name))
        diags_->error(Code::Redefined, s.loc, "'" + s.name + "' is already a buffer or a name");
      BufferInfo bi;
      bi.name = s.name;
      bi.scratch = true;
      bi.scratch_index = static_cast<int>(i);
      a_.buffers.push_back(bi);
    }
    for (Param &p : a_.params) {
      expect(*p.value, Type::Int, "a parameter's default");
      if (buffer_index(p.name) >= 0) diags_->error(Code::Redefined, p.loc, "'" + p.name + "' is a buffer");
      p.slot = declare(p.name, next_slot_++, Type::Int, p.loc);
    }
    for (Scratch &s : a_.scratch) expect(*s.size, Type::Int, "a scratch size");
    for (Requirement &r : a_.requires_) expect(*r.cond, Type::Bool, "a requirement");
    if (a_.inplace && !info.inplace_ok)
      diags_->error(Code::Type, a_.inplace_loc, std::string(info.name) + " has no in-place form in MPI");
    declared_op(info);
    check_sweep();
    body(a_.body, false);
    check_requirements_agree(info);
    a_.nslots = max_slot_ > next_slot_ ? max_slot_ : next_slot_;
    return diags_->error_count() == errors;
  }

 private:
  struct Var {
    int slot;
    Type type;
  };

  int declare(const std::string &name, int slot, Type type, const Loc &loc) {
    if (loc.valid() && lookup(name))
      diags_->error(Code::Redefined, loc, "'" + name + "' is already defined here: choose another name");
    scopes_.back()[name] = {slot, type};
    max_slot_ = std::max(max_slot_, slot + 1);
    return slot;
  }
  const Var *lookup(const std::string &name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }
  int buffer_index(const std::string &name) const {
    for (size_t i = 0; i < a_.buffers.size(); i++)
      if (a_.buffers[i].name == name) return static_cast<int>(i);
    return -1;
  }

  // Whether e reads a slot marked in vary.
  static bool reads_any(const Expr &e, const std::vector<bool> &vary) {
    if (e.kind == ExprKind::Name && e.slot >= 0 && static_cast<size_t>(e.slot) < vary.size() && vary[e.slot])
      return true;
    for (const ExprPtr &x : e.args)
      if (x && reads_any(*x, vary)) return true;
    return false;
  }

  // A call's algorithm is selected by evaluating the requirements once,
  // alike at every rank (cadrt, select_algorithm): each rank selects on
  // its own, and they must all select the same.  So a requirement cannot
  // read what differs between ranks -- rank itself, or in place for a
  // rooted collective, which only the root calls in place -- directly or
  // through a parameter's default.
  void check_requirements_agree(const CollectiveInfo &info) {
    if (a_.requires_.empty()) return;
    for (int what = 0; what < 2; what++) {
      if (what == 1 && !(info.rooted && a_.inplace)) break;  // (without `inplace`: always false)
      std::vector<bool> vary(static_cast<size_t>(std::max(max_slot_, next_slot_)) + kBuiltinSlots, false);
      vary[what == 0 ? kSlotRank : kSlotInplace] = true;
      for (const Param &p : a_.params)
        if (p.slot >= 0 && p.value && reads_any(*p.value, vary)) vary[p.slot] = true;
      for (const Requirement &r : a_.requires_)
        if (reads_any(*r.cond, vary)) {
          diags_->error(Code::RankDependent, start_of(*r.cond),
                        what == 0 ? std::string("a requirement decides for every rank at once, so it cannot depend "
                                                "on rank: every rank must select the same algorithm")
                                  : std::string("a requirement of a ") + info.name +
                                        " cannot depend on inplace: only the root calls it in place, and every "
                                        "rank must select the same algorithm (decide inside the body instead)");
          return;
        }
    }
  }

  std::string unknown_op(const std::string &name) const {
    std::string user;
    for (const auto &u : ops_) user += (user.empty() ? "" : ", ") + u->name;
    return "unknown op '" + name +
           "' (built-in: sum, prod, min, max, band, bor, bxor, land, lor, lxor, minloc, maxloc; user-defined: " +
           (user.empty() ? "none loaded (cadc ... --ops FILE)" : user) + ")";
  }

  // `op NAME`: only where there is an op; a built-in, or one of the
  // user-defined operators (then the algorithm's, as naming it in a
  // reduction makes it).
  void declared_op(const CollectiveInfo &info) {
    if (a_.op.empty()) return;
    if (!info.reducing) {
      diags_->error(Code::Type, a_.op_loc, std::string("a ") + info.name + " has no op to be written for");
      return;
    }
    if (builtin_op(a_.op) != CAD_OP_NONE) return;
    for (const auto &u : ops_)
      if (u->name == a_.op) {
        a_.user_op = u;
        a_.user_op_loc = a_.op_loc;
      }
    if (!a_.user_op) diags_->error(Code::UnknownName, a_.op_loc, unknown_op(a_.op));
  }

  void check_sweep() {
    const Sweep &s = a_.sweep;
    if (!s.present) return;
    for (const auto &r : s.ranks.ranges)
      if (r.first < 1) diags_->error(Code::Sweep, s.ranks.loc, "the sweep's ranks start at 1");
    if (s.roots.present() && !collective_info(a_.collective).rooted)
      diags_->error(Code::Sweep, s.roots.loc, std::string(collective_info(a_.collective).name) + " has no root");
    for (const auto &p : s.params) {
      bool known = false;
      for (const Param &q : a_.params) known |= q.name == p.first;
      if (!known) diags_->error(Code::Sweep, p.second.loc, "the sweep sets '" + p.first + "', which is not a parameter");
    }
  }

  // ---- expressions ----
  Type expr(Expr &e) {
    switch (e.kind) {
      case ExprKind::Int: return e.type = Type::Int;
      case ExprKind::Bool: return e.type = Type::Bool;
      case ExprKind::Level: return e.type = Type::Level;
      case ExprKind::Name: {
        const Var *v = lookup(e.name);
        if (!v) {
          std::string hint = buffer_index(e.name) >= 0 ? " ('" + e.name + "' is a buffer: name a range of it in an operation)" : "";
          diags_->error(Code::UnknownName, e.loc, "unknown name '" + e.name + "'" + hint);
          return e.type = Type::Unknown;
        }
        e.slot = v->slot;
        return e.type = v->type;
      }
      case ExprKind::Cond: {
        expect(*e.args[0], Type::Bool, "the condition of '?:'");
        Type t1 = expr(*e.args[1]), t2 = expr(*e.args[2]);
        if (t1 != Type::Unknown && t2 != Type::Unknown && t1 != t2)
          diags_->error(Code::Type, e.loc, std::string("the branches of '?:' differ: ") + type_name(t1) + " and " + type_name(t2));
        return e.type = t1;
      }
      case ExprKind::Unary: {
        Op op;
        op_lookup(e.op, true, &op);
        e.fn = static_cast<int>(op);
        if (op == Op::Not) {
          expect(*e.args[0], Type::Bool, "the operand of '!'");
          return e.type = Type::Bool;
        }
        expect(*e.args[0], Type::Int, ("the operand of '" + e.op + "'").c_str());
        return e.type = Type::Int;
      }
      case ExprKind::Binary: {
        Op op;
        op_lookup(e.op, false, &op);
        e.fn = static_cast<int>(op);
        const std::string what = "the operands of '" + e.op + "'";
        if (op == Op::And || op == Op::Or) {
          expect(*e.args[0], Type::Bool, what.c_str());
          expect(*e.args[1], Type::Bool, what.c_str());
          return e.type = Type::Bool;
        }
        if (op == Op::Eq || op == Op::Ne) {
          Type t1 = expr(*e.args[0]), t2 = expr(*e.args[1]);
          if (t1 == Type::Level || t2 == Type::Level || (t1 != Type::Unknown && t2 != Type::Unknown && t1 != t2))
            diags_->error(Code::Type, e.loc, "'" + e.op + "' compares " + type_name(t1) + " with " + type_name(t2));
          return e.type = Type::Bool;
        }
        expect(*e.args[0], Type::Int, what.c_str());
        expect(*e.args[1], Type::Int, what.c_str());
        return e.type = op >= Op::Lt ? Type::Bool : Type::Int;
      }
      case ExprKind::Call: {
        const int fn = builtin_lookup(e.name);
        if (fn < 0) {
          diags_->error(Code::UnknownName, e.loc, "unknown function '" + e.name + "'");
          for (ExprPtr &a : e.args) expr(*a);
          return e.type = Type::Unknown;
        }
        e.fn = fn;
        const BuiltinInfo &bi = builtin_info(static_cast<Fn>(fn));
        const int n = static_cast<int>(e.args.size());
        if (n < bi.min_args || n > bi.max_args) {
          diags_->error(Code::Arity, e.loc, std::string(bi.name) + " takes " +
                        (bi.min_args == bi.max_args ? std::to_string(bi.min_args) : std::to_string(bi.min_args) + " or more") +
                        " arguments, not " + std::to_string(n) + ": " + bi.signature);
          return e.type = bi.ret;
        }
        for (int i = 0; i < n; i++) {
          const bool level = i == 0 && builtin_takes_level(static_cast<Fn>(fn));
          if (level && e.args[0]->kind != ExprKind::Level) {
            expr(*e.args[0]);
            diags_->error(Code::Type, e.args[0]->loc, std::string(bi.name) + " takes a level first: node, package, numa or l3");
            continue;
          }
          expect(*e.args[i], level ? Type::Level : Type::Int, ("an argument of " + std::string(bi.name)).c_str());
        }
        return e.type = bi.ret;
      }
    }
    return Type::Unknown;
  }

  void expect(Expr &e, Type want, const char *what) {
    Type t = expr(e);
    if (t != Type::Unknown && t != want)
      diags_->error(Code::Type, start_of(e), std::string(what) + " must be " + type_name(want) + ", not " + type_name(t));
  }

  // ---- statements ----
  void ref(BufRef &r) {
    r.buffer = buffer_index(r.name);
    if (r.buffer < 0) {
      const CollectiveInfo &info = collective_info(a_.collective);
      std::string have;
      for (const BufferInfo &b : a_.buffers) have += (have.empty() ? "" : ", ") + b.name;
      diags_->error(Code::UnknownBuffer, r.loc,
                    "unknown buffer '" + r.name + "': a " + info.name + " algorithm has " +
                        (have.empty() ? std::string("no buffers") : have) +
                        (info.buffers.empty() ? "" : " (declare more with 'scratch')"));
    }
    if (r.lo) expect(*r.lo, Type::Int, "a range bound");
    if (r.hi) expect(*r.hi, Type::Int, "a range bound");
  }

  void body(std::vector<StmtPtr> &stmts, bool in_parallel) {
    scopes_.emplace_back();
    for (StmtPtr &s : stmts) stmt(*s, in_parallel);
    scopes_.pop_back();
  }

  void stmt(Stmt &s, bool in_parallel) {
    switch (s.kind) {
      case StmtKind::Let: {
        Type t = expr(*s.value);  // an integer or a boolean
        if (t == Type::Level) {
          diags_->error(Code::Type, start_of(*s.value), "a 'let' value must be an integer or a boolean, not a topology level");
          t = Type::Unknown;
        }
        if (buffer_index(s.name) >= 0) diags_->error(Code::Redefined, s.loc, "'" + s.name + "' is a buffer");
        s.slot = declare(s.name, next_slot_++, t, s.loc);
        break;
      }
      case StmtKind::For: {
        expect(*s.value, Type::Int, "a loop bound");
        expect(*s.hi, Type::Int, "a loop bound");
        if (s.step) expect(*s.step, Type::Int, "a loop step");
        scopes_.emplace_back();
        if (buffer_index(s.name) >= 0) diags_->error(Code::Redefined, s.loc, "'" + s.name + "' is a buffer");
        s.slot = declare(s.name, next_slot_++, Type::Int, s.loc);
        body(s.body, in_parallel);
        scopes_.pop_back();
        break;
      }
      case StmtKind::If:
        expect(*s.value, Type::Bool, "an 'if' condition");
        body(s.body, in_parallel);
        body(s.orelse, in_parallel);
        break;
      case StmtKind::Parallel:
        body(s.body, true);
        break;
      case StmtKind::Fence:
        if (in_parallel) diags_->error(Code::Type, s.loc, "'fence' inside 'parallel' orders nothing");
        break;
      case StmtKind::Send:
      case StmtKind::Recv:
        ref(s.kind == StmtKind::Send ? s.src : s.dst);
        expect(*s.value, Type::Int, s.kind == StmtKind::Send ? "the destination rank" : "the source rank");
        if (s.tag) expect(*s.tag, Type::Int, "a tag");
        break;
      case StmtKind::Copy:
      case StmtKind::Reduce:
        ref(s.dst);
        ref(s.src);
        if (s.kind == StmtKind::Reduce) {
          s.user_op = nullptr;
          if (!s.redop.empty()) {
            if (builtin_op(s.redop) == CAD_OP_NONE) {
              user_op(s);
            } else if (collective_info(a_.collective).reducing && s.redop != a_.op) {
              // The call's op is whatever the application passes: a fixed
              // op would compute something else for every other one.
              Diagnostic &d = diags_->error(
                  Code::FixedOp, s.loc,
                  a_.op.empty() ? "reduce with op " + s.redop + ", but " + a_.name +
                                      " reduces with the call's op, whatever it is: write 'reduce' without 'op', or "
                                      "declare 'op " + s.redop + "' after the collective if the algorithm is written "
                                      "for " + s.redop + " alone"
                                : "reduce with op " + s.redop + ", but " + a_.name + " is written for " + a_.op);
              if (!a_.op.empty()) d.notes.push_back({a_.op_loc, "declared here"});
            }
          } else if (!collective_info(a_.collective).reducing) {
            diags_->error(Code::Type, s.loc, std::string("a ") + collective_info(a_.collective).name +
                          " has no op: name one with 'op' (reduce ... op sum)");
          }
        }
        break;
    }
  }

  // `op NAME` where NAME is not a built-in: one of the user-defined
  // operators; the algorithm names at most one of them.
  void user_op(Stmt &s) {
    for (const auto &u : ops_)
      if (u->name == s.redop) s.user_op = u;
    if (!s.user_op) {
      diags_->error(Code::UnknownName, s.loc, unknown_op(s.redop));
      return;
    }
    if (!a_.op.empty() && a_.op != s.redop) {
      Diagnostic &d = diags_->error(Code::FixedOp, s.loc, "reduce with op " + s.redop + ", but " + a_.name +
                                                              " is written for " + a_.op);
      d.notes.push_back({a_.op_loc, "declared here"});
    } else if (!a_.user_op) {
      a_.user_op = s.user_op;
      a_.user_op_loc = s.loc;
    } else if (a_.user_op->name != s.redop) {
      Diagnostic &d = diags_->error(Code::Type, s.loc, "a second user-defined operator, '" + s.redop + "': " + a_.name +
                                    " already names '" + a_.user_op->name + "', and an algorithm is for one operator");
      d.notes.push_back({a_.user_op_loc, "'" + a_.user_op->name + "' is named here"});
    }
  }

  Algorithm &a_;
  Diagnostics *diags_;
  const UserOps &ops_;
  std::vector<std::unordered_map<std::string, Var>> scopes_;
  int next_slot_ = 0;
  int max_slot_ = 0;
};

// Whether the requirements hold for some P (1..64 and powers of two to
// 2^16), root 0, n in {0, 1, 1000}, op commutative or not, in place or not.
void check_satisfiable(Algorithm &a, Diagnostics *diags) {
  if (a.requires_.empty()) return;
  std::vector<int64_t> Ps;
  for (int64_t p = 1; p <= 64; p++) Ps.push_back(p);
  for (int64_t p = 128; p <= 65536; p *= 2) Ps.push_back(p);
  std::vector<bool> ever(a.requires_.size(), false);
  bool together = false;
  for (int64_t P : Ps) {
    auto topo = Topology::flat(P);
    for (int64_t n : {0, 1, 1000})
      for (int comm = 0; comm < 2; comm++)
        for (int inplace = 0; inplace <= (a.inplace ? 1 : 0); inplace++) {
          Frame f;
          f.topo = topo.get();
          f.slots.assign(a.nslots, 0);
          f.slots[kSlotP] = P;
          f.slots[kSlotN] = n;
          f.slots[kSlotEsize] = 4;
          f.slots[kSlotCommutative] = comm;
          f.slots[kSlotInplace] = inplace;
          bool all = true;
          try {
            for (const Param &p : a.params) f.slots[p.slot] = eval(*p.value, f);
          } catch (const EvalError &) {
            continue;
          }
          for (size_t i = 0; i < a.requires_.size(); i++) {
            bool ok = false;
            try {
              ok = eval(*a.requires_[i].cond, f) != 0;
            } catch (const EvalError &) {
            }
            ever[i] = ever[i] || ok;
            all = all && ok;
          }
          together = together || all;
        }
  }
  for (size_t i = 0; i < a.requires_.size(); i++)
    if (!ever[i]) {
      diags->error(Code::NeverHolds, a.requires_[i].cond->loc,
                   "this requirement holds for no number of ranks from 1 to 65536: the algorithm could never run");
      return;
    }
  if (!together)
    diags->error(Code::NeverHolds, a.requires_[0].cond->loc,
                 "these requirements never hold together: the algorithm could never run");
}

}  // namespace

bool check_algorithm(Algorithm &a, Diagnostics *diags, const UserOps &ops) {
  a.buffers.clear();
  a.user_op = nullptr;
  a.user_op_loc = Loc();
  const size_t errors = diags->error_count();
  Checker c(a, diags, ops);
  if (c.run()) check_satisfiable(a, diags);
  a.checked = diags->error_count() == errors;
  if (a.checked) analyse_reads(a);
  return a.checked;
}

bool check_module(Module &m, Diagnostics *diags, const UserOps &ops) {
  bool ok = true;
  std::map<std::string, const Algorithm *> names;
  for (Algorithm &a : m.algorithms) {
    if (names.count(a.name)) {
      diags->error(Code::Redefined, a.loc, "a second algorithm named '" + a.name + "' in this file");
      ok = false;
    }
    names[a.name] = &a;
    ok = check_algorithm(a, diags, ops) && ok;
  }
  return ok;
}

}  // namespace cad
