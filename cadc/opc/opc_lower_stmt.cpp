// opc_lower_stmt.cpp - lowering of statements: blocks, if/else converted to
// selects, early returns, loops unrolled, declarations.
#include "opc_priv.h"

namespace cad {
namespace opc {

std::vector<const Stmt *> Lowering::as_list(const Stmt *s) {
  if (!s) return {};
  if (const auto *cs = dyn_cast<CompoundStmt>(s)) return {cs->body_begin(), cs->body_end()};
  return {s};
}

bool Lowering::has_return(const Stmt *s) {
  if (!s) return false;
  if (isa<ReturnStmt>(s)) return true;
  for (const Stmt *c : s->children())
    if (has_return(c)) return true;
  return false;
}

Lowering::Flow Lowering::block(const std::vector<const Stmt *> &list, size_t from, const Cont *k) {
  for (size_t i = from; i < list.size(); i++) {
    const Cont rest{&list, i + 1, k};
    if (stmt(list[i], &rest) == kLeft) return kLeft;
  }
  if (k) return block(*k->list, k->from, k->next);
  return kFalls;
}

Lowering::Flow Lowering::stmt(const Stmt *s, const Cont *rest) {
  if (++steps_ > 1u << 20)
    fail(Code::OpTooBig, s->getBeginLoc(), "the operator is too large to unroll");
  if (isa<NullStmt>(s)) return kFalls;
  if (!isa<CompoundStmt>(s)) stmt_loc_ = s->getBeginLoc();
  if (const auto *cs = dyn_cast<CompoundStmt>(s)) {
    std::vector<const Stmt *> list(cs->body_begin(), cs->body_end());
    if (!has_return(cs)) return block(list, 0, nullptr);
    return block(list, 0, rest);
  }
  if (const auto *r = dyn_cast<ReturnStmt>(s)) {
    if (frames_.empty() || !r->getRetValue()) {
      if (r->getRetValue()) fail(Code::OpSignature, s->getBeginLoc(), "an operator returns nothing");
      return kLeft;
    }
    const Frame f = frames_.back();  // a copy: the value may inline calls, which grow frames_
    VK k;
    const std::vector<int32_t> vals =
        scalar_kind(f.ret_type, &k) ? std::vector<int32_t>{rv(r->getRetValue())} : agg(r->getRetValue());
    store_leaves({f.ret_space, 0, f.ret_type}, vals, s->getBeginLoc());
    return kLeft;
  }
  if (const auto *d = dyn_cast<DeclStmt>(s)) {
    for (const Decl *x : d->decls())
      if (const auto *v = dyn_cast<VarDecl>(x)) declare(v);
    return kFalls;
  }
  if (const auto *e = dyn_cast<Expr>(s)) {
    rv_any(e);
    return kFalls;
  }
  if (const auto *i = dyn_cast<IfStmt>(s)) {
    if (i->getInit() || i->getConditionVariable())
      fail(Code::OpUnsupported, s->getBeginLoc(), "declarations in an if condition are not supported");
    const int32_t c = truth(rv(i->getCond()), kind(i->getCond()->getType(), i->getCond()->getBeginLoc()));
    const std::vector<const Stmt *> then_list = as_list(i->getThen()), else_list = as_list(i->getElse());
    if (is_const(c)) {
      const std::vector<const Stmt *> &taken = cval(c) ? then_list : else_list;
      return block(taken, 0, has_return(s) ? rest : nullptr);
    }
    const bool ret = has_return(s);
    const Cont *k = ret ? rest : nullptr;
    const auto saved = env_;
    const auto saved_locals = locals_;
    block(then_list, 0, k);
    auto then_env = std::move(env_);
    env_ = saved;
    locals_ = saved_locals;
    block(else_list, 0, k);
    merge(c, then_env);
    locals_ = saved_locals;
    return ret ? kLeft : kFalls;
  }
  if (isa<ForStmt>(s) || isa<WhileStmt>(s) || isa<DoStmt>(s)) {
    if (has_return(s))
      fail(Code::OpUnsupported, s->getBeginLoc(), "return inside a loop is not supported");
    loop(s);
    return kFalls;
  }
  fail(Code::OpUnsupported, s->getBeginLoc(), std::string("this statement (") + s->getStmtClassName() + ") is not in the operator subset");
}

// env_ becomes: c ? then_env : env_.
void Lowering::merge(int32_t c, const std::map<Key, int32_t> &then_env) {
  std::set<Key> keys;
  for (auto &[k, v] : then_env) keys.insert(k);
  for (auto &[k, v] : env_) keys.insert(k);
  std::map<Key, int32_t> out;
  for (const Key &k : keys) {
    const auto a = then_env.find(k);
    const auto b = env_.find(k);
    int32_t va, vb;
    if (k.first == kInout) {
      const VK kk = kinds_.at(k);
      va = a != then_env.end() ? a->second : original(kInout, k.second, kk);
      vb = b != env_.cend() ? b->second : original(kInout, k.second, kk);
    } else {
      if (a == then_env.end() || b == env_.cend()) continue;  // assigned on one path only
      va = a->second;
      vb = b->second;
    }
    out[k] = node(CAD_VM_SEL, c, va, vb);
  }
  env_ = std::move(out);
}

void Lowering::loop(const Stmt *s) {
  const Stmt *init = nullptr, *body = nullptr;
  const Expr *cond = nullptr, *inc = nullptr;
  bool body_first = false;
  if (const auto *f = dyn_cast<ForStmt>(s)) {
    init = f->getInit();
    cond = f->getCond();
    inc = f->getInc();
    body = f->getBody();
    if (f->getConditionVariable()) fail(Code::OpUnsupported, s->getBeginLoc(), "declarations in a loop condition are not supported");
  } else if (const auto *w = dyn_cast<WhileStmt>(s)) {
    cond = w->getCond();
    body = w->getBody();
  } else {
    const auto *d = cast<DoStmt>(s);
    cond = d->getCond();
    body = d->getBody();
    body_first = true;
  }
  const auto saved_locals = locals_;
  Expr::EvalResult always;
  if (cond && !cond->HasSideEffects(ctx_) && cond->EvaluateAsInt(always, ctx_) && always.Val.getInt() != 0)
    fail(Code::OpLoop, s->getBeginLoc(),
         "this loop never ends: its condition is always true (loops need a constant bound; break is not supported)");
  if (init) stmt(init, nullptr);
  const std::vector<const Stmt *> list = as_list(body);
  // The scalars the condition reads: if an iteration leaves them all as
  // they were and the condition held, it holds for ever.
  std::vector<const VarDecl *> cond_vars;
  bool cond_scalars = cond != nullptr;
  // (A call's callee is a reference to a function: no longer scalars.)
  for (const DeclRefExpr *d : nodes_under<DeclRefExpr>(cond)) {
    const auto *v = dyn_cast<VarDecl>(d->getDecl());
    VK k;
    if (v && locals_.count(v) && scalar_kind(v->getType(), &k)) cond_vars.push_back(v);
    else if (!isa<EnumConstantDecl>(d->getDecl())) cond_scalars = false;
  }
  std::vector<int32_t> before;
  auto cond_state = [&] {
    std::vector<int32_t> st;
    for (const VarDecl *v : cond_vars) {
      auto it = env_.find({locals_.at(v), 0});
      st.push_back(it == env_.end() ? -1 : it->second);
    }
    return st;
  };
  for (unsigned n = 0;; n++) {
    if (!body_first || n > 0) {
      if (cond) {
        const int32_t c = truth(rv(cond), kind(cond->getType(), cond->getBeginLoc()));
        if (!is_const(c))
          fail(Code::OpLoop, cond->getBeginLoc(),
               "the loop condition depends on the data: loops need a constant bound (they are unrolled)");
        if (!cval(c)) break;
        const std::vector<int32_t> now = cond_state();
        if (cond_scalars && n > 0 && now == before)
          fail(Code::OpLoop, s->getBeginLoc(),
               "this loop never ends: an iteration leaves its condition's variables unchanged and the condition "
               "true (loops need a constant bound; break is not supported)");
        before = now;
      } else {
        fail(Code::OpLoop, s->getBeginLoc(), "a loop without a condition never ends: loops need a constant bound");
      }
    }
    if (n >= kMaxIterations)
      fail(Code::OpTooBig, s->getBeginLoc(),
           "the loop runs more than " + std::to_string(kMaxIterations) + " iterations");
    if (++unrolled_ > kMaxUnrolled)
      fail(Code::OpTooBig, s->getBeginLoc(),
           "unrolling runs more than " + std::to_string(kMaxUnrolled) +
               " loop iterations in all (loops are unrolled, nested ones multiply)");
    const auto body_locals = locals_;
    block(list, 0, nullptr);
    locals_ = body_locals;
    if (inc) rv_any(inc);
  }
  locals_ = saved_locals;
}

void Lowering::declare(const VarDecl *v) {
  const uint64_t bytes = static_cast<uint64_t>(ctx_.getTypeSizeInChars(v->getType()).getQuantity());
  if (bytes > kMaxLocalBytes)
    fail(Code::OpTooBig, v->getLocation(),
         "the local " + v->getNameAsString() + " is " + std::to_string(bytes) + " bytes: locals are values in the VM's " +
             "registers and spill slots, at most " + std::to_string(kMaxLocalBytes) + " bytes each");
  const int space = next_space_++;
  locals_[v] = space;
  const Place p{space, 0, v->getType()};
  const Expr *init = v->getInit();
  if (!init) return;
  VK k;
  if (scalar_kind(v->getType(), &k)) {
    store(p, rv(init), init->getBeginLoc());
    return;
  }
  initialise(p, init);
}

void Lowering::initialise(const Place &p, const Expr *init) {
  init = init->IgnoreParens();
  VK k;
  if (scalar_kind(p.type, &k)) {
    if (isa<ImplicitValueInitExpr>(init)) {
      store(p, konst(0), init->getBeginLoc());
      return;
    }
    store(p, rv(init), init->getBeginLoc());
    return;
  }
  if (isa<ImplicitValueInitExpr>(init)) {
    std::vector<std::pair<uint32_t, QualType>> ls;
    leaves(ctx_, p.type, 0, &ls);
    for (auto &[off, t] : ls) store({p.space, p.off + off, t}, konst(0), init->getBeginLoc());
    return;
  }
  if (const auto *il = dyn_cast<InitListExpr>(init)) {
    const QualType t = p.type.getCanonicalType();
    if (const auto *at = ctx_.getAsConstantArrayType(t)) {
      const uint32_t es = static_cast<uint32_t>(ctx_.getTypeSizeInChars(at->getElementType()).getQuantity());
      const uint64_t n = at->getSize().getZExtValue();
      for (uint64_t i = 0; i < n; i++) {
        const Place e{p.space, p.off + static_cast<uint32_t>(i) * es, at->getElementType()};
        if (i < il->getNumInits())
          initialise(e, il->getInit(static_cast<unsigned>(i)));
        else if (il->hasArrayFiller())
          initialise(e, il->getArrayFiller());
        else
          zero(e, init->getBeginLoc());
      }
      return;
    }
    if (const auto *rt = t->getAs<RecordType>()) {
      unsigned i = 0;
      for (const FieldDecl *f : rt->getDecl()->fields()) {
        const Place e{p.space, p.off + static_cast<uint32_t>(ctx_.getFieldOffset(f) / 8), f->getType()};
        if (i < il->getNumInits())
          initialise(e, il->getInit(i));
        else
          zero(e, init->getBeginLoc());
        i++;
      }
      return;
    }
  }
  // A struct initialised from a struct value: *in, a local, a field, ?:,
  // a helper's result.
  store_leaves(p, agg(init), init->getBeginLoc());
}

void Lowering::zero(const Place &p, SourceLocation where) {
  std::vector<std::pair<uint32_t, QualType>> ls;
  leaves(ctx_, p.type, 0, &ls);
  for (auto &[off, t] : ls) store({p.space, p.off + off, t}, konst(0), where);
}

}  // namespace opc
}  // namespace cad
