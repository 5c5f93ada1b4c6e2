// ast.cpp - the AST's few functions (see ast.h).
#include "ast.h"

namespace cad {

ExprPtr clone(const Expr &e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->loc = e.loc;
  c->value = e.value;
  c->name = e.name;
  c->op = e.op;
  for (const ExprPtr &a : e.args) c->args.push_back(clone(*a));
  c->slot = e.slot;
  c->fn = e.fn;
  c->type = e.type;
  c->depth = e.depth;
  return c;
}

const Loc &start_of(const Expr &e) {
  if ((e.kind == ExprKind::Binary || e.kind == ExprKind::Cond) && !e.args.empty()) return start_of(*e.args[0]);
  return e.loc;
}

std::vector<int64_t> SweepSpec::values() const {
  std::vector<int64_t> v;
  for (const auto &r : ranges)
    for (int64_t x = r.first; x <= r.second; x++) v.push_back(x);
  return v;
}

}  // namespace cad
