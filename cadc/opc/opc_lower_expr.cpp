// opc_lower_expr.cpp - lowering of expressions: arithmetic, compares, casts,
// aggregates, the builtins, and helper calls inlined.
#include "opc_priv.h"

namespace cad {
namespace opc {

int32_t Lowering::arith(BinaryOperatorKind op, int32_t a, int32_t b, VK k, SourceLocation where) {
  if (is_float(k)) {
    const bool d = k == VK::F64;
    switch (op) {
      case BO_Add: return node(d ? CAD_VM_FADD : CAD_VM_SADD, a, b);
      case BO_Sub: return node(d ? CAD_VM_FSUB : CAD_VM_SSUB, a, b);
      case BO_Mul: return node(d ? CAD_VM_FMUL : CAD_VM_SMUL, a, b);
      case BO_Div: return node(d ? CAD_VM_FDIV : CAD_VM_SDIV, a, b);
      default: fail(Code::OpUnsupported, where, "this operator does not apply to floating point");
    }
  }
  const bool s = is_signed(k);
  const uint64_t width_mask = bytes_of(k) == 8 ? 63 : 31;
  switch (op) {
    case BO_Add: return normalize(node(CAD_VM_ADD, a, b), k);
    case BO_Sub: return normalize(node(CAD_VM_SUB, a, b), k);
    case BO_Mul: return normalize(node(CAD_VM_MUL, a, b), k);
    case BO_Div: return normalize(node(s ? CAD_VM_DIV_S : CAD_VM_DIV_U, a, b), k);
    case BO_Rem: return normalize(node(s ? CAD_VM_MOD_S : CAD_VM_MOD_U, a, b), k);
    case BO_And: return node(CAD_VM_AND, a, b);
    case BO_Or: return node(CAD_VM_OR, a, b);
    case BO_Xor: return node(CAD_VM_XOR, a, b);
    case BO_Shl: return normalize(node(CAD_VM_SHL, a, node(CAD_VM_AND, b, konst(width_mask))), k);
    case BO_Shr: return node(s ? CAD_VM_SHR_S : CAD_VM_SHR_U, a, node(CAD_VM_AND, b, konst(width_mask)));
    default: fail(Code::OpUnsupported, where, "unsupported operator");
  }
}

int32_t Lowering::compare(BinaryOperatorKind op, int32_t a, int32_t b, VK k) {
  uint8_t eq, ne, lt, le;
  if (k == VK::F64) {
    eq = CAD_VM_FEQ, ne = CAD_VM_FNE, lt = CAD_VM_FLT, le = CAD_VM_FLE;
  } else if (k == VK::F32) {
    eq = CAD_VM_SEQ, ne = CAD_VM_SNE, lt = CAD_VM_SLT, le = CAD_VM_SLE;
  } else if (is_signed(k)) {
    eq = CAD_VM_EQ, ne = CAD_VM_NE, lt = CAD_VM_LT_S, le = CAD_VM_LE_S;
  } else {
    eq = CAD_VM_EQ, ne = CAD_VM_NE, lt = CAD_VM_LT_U, le = CAD_VM_LE_U;
  }
  switch (op) {
    case BO_EQ: return node(eq, a, b);
    case BO_NE: return node(ne, a, b);
    case BO_LT: return node(lt, a, b);
    case BO_LE: return node(le, a, b);
    case BO_GT: return node(lt, b, a);
    default: return node(le, b, a);  // BO_GE
  }
}

// The value of a scalar expression.
int32_t Lowering::rv(const Expr *e) {
  e = e->IgnoreParens();
  const SourceLocation where = e->getBeginLoc();
  if (const auto *il = dyn_cast<IntegerLiteral>(e)) {
    const VK k = kind(e->getType(), where);
    return normalize(konst(il->getValue().getZExtValue()), k);
  }
  if (const auto *cl = dyn_cast<CharacterLiteral>(e)) {
    const VK k = kind(e->getType(), where);
    return normalize(konst(static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(cl->getValue())))), k);
  }
  if (const auto *fl = dyn_cast<FloatingLiteral>(e)) {
    const VK k = kind(e->getType(), where);
    return konst(fl->getValue().bitcastToAPInt().getZExtValue() & (k == VK::F32 ? 0xffffffffull : ~0ull));
  }
  if (const auto *ce = dyn_cast<ConstantExpr>(e)) return rv(ce->getSubExpr());
  if (isa<UnaryExprOrTypeTraitExpr>(e) || isa<OffsetOfExpr>(e)) {
    Expr::EvalResult r;
    if (!e->EvaluateAsInt(r, ctx_)) fail(Code::OpUnsupported, where, "not a constant");
    return normalize(konst(r.Val.getInt().getZExtValue()), kind(e->getType(), where));
  }
  if (const auto *d = dyn_cast<DeclRefExpr>(e)) {
    if (const auto *ec = dyn_cast<EnumConstantDecl>(d->getDecl()))
      return normalize(konst(static_cast<uint64_t>(ec->getInitVal().getSExtValue())), kind(e->getType(), where));
    return load(place(e), where, name_of(e));
  }
  if (const auto *c = dyn_cast<CastExpr>(e)) return cast_expr(c);
  if (const auto *u = dyn_cast<UnaryOperator>(e)) return unary(u);
  if (const auto *b = dyn_cast<BinaryOperator>(e)) return binary(b);
  if (const auto *c = dyn_cast<ConditionalOperator>(e)) {
    const int32_t cond = truth(rv(c->getCond()), kind(c->getCond()->getType(), where));
    if (is_const(cond)) return rv(cval(cond) ? c->getTrueExpr() : c->getFalseExpr());
    kind(e->getType(), where);
    Pure p(*this);
    const int32_t t = rv(c->getTrueExpr()), f = rv(c->getFalseExpr());
    return node(CAD_VM_SEL, cond, t, f);
  }
  if (const auto *call = dyn_cast<CallExpr>(e)) {
    if (constant_builtin(call, ctx_)) return constant(call);
    if (helper_of(call)) {
      const std::vector<int32_t> r = inline_call(call);
      if (r.size() != 1) fail(Code::OpUnsupported, where, "this call has no scalar value");
      return r[0];
    }
    return builtin(call);
  }
  if (isa<MemberExpr>(e) || isa<ArraySubscriptExpr>(e)) return load(place(e), where, name_of(e));
  fail(Code::OpUnsupported, where, std::string("this expression (") + e->getStmtClassName() + ") is not in the operator subset");
}

// The value clang computes for a constant call (INFINITY, NAN, ...).
int32_t Lowering::constant(const CallExpr *c) {
  Expr::EvalResult r;
  c->EvaluateAsRValue(r, ctx_);
  const VK k = kind(c->getType(), c->getBeginLoc());
  if (r.Val.isFloat())
    return konst(r.Val.getFloat().bitcastToAPInt().getZExtValue() & (k == VK::F32 ? 0xffffffffull : ~0ull));
  return normalize(konst(r.Val.getInt().getZExtValue()), k);
}

int32_t Lowering::cast_expr(const CastExpr *c) {
  const Expr *sub = c->getSubExpr();
  const SourceLocation where = c->getBeginLoc();
  switch (c->getCastKind()) {
    case CK_LValueToRValue:
      return load(place(sub), where, name_of(sub));
    case CK_NoOp:
      return rv(sub);
    case CK_ToVoid:
      rv_any(sub);
      return konst(0);
    case CK_IntegralCast:
    case CK_IntegralToFloating:
    case CK_FloatingToIntegral:
    case CK_FloatingCast: {
      const VK from = kind(sub->getType(), where), to = kind(c->getType(), where);
      if (is_bool(c->getType())) return truth(rv(sub), from);
      return convert(rv(sub), from, to);
    }
    case CK_IntegralToBoolean:
    case CK_FloatingToBoolean:
      return truth(rv(sub), kind(sub->getType(), where));
    default:
      fail(Code::OpUnsupported, where, std::string("the conversion ") + c->getCastKindName() + " is not in the operator subset");
  }
}

// An expression evaluated for its effects.
void Lowering::rv_any(const Expr *e) {
  const Expr *x = e->IgnoreParens();
  if (const auto *ic = dyn_cast<ImplicitCastExpr>(x))
    if (ic->getCastKind() == CK_ToVoid) x = ic->getSubExpr()->IgnoreParens();
  if (const auto *call = dyn_cast<CallExpr>(x))
    if (helper_of(call)) {
      inline_call(call);
      return;
    }
  if (const auto *b = dyn_cast<BinaryOperator>(x))
    if (b->getOpcode() == BO_Assign && !b->getType()->isScalarType()) {
      binary(b);
      return;
    }
  rv(e);
}

int32_t Lowering::unary(const UnaryOperator *u) {
  const SourceLocation where = u->getBeginLoc();
  const Expr *sub = u->getSubExpr();
  switch (u->getOpcode()) {
    case UO_Plus:
      return rv(sub);
    case UO_Minus: {
      const VK k = kind(u->getType(), where);
      if (is_float(k)) return node(k == VK::F64 ? CAD_VM_FNEG : CAD_VM_SNEG, rv(sub));
      return normalize(node(CAD_VM_NEG, rv(sub)), k);
    }
    case UO_Not: {
      const VK k = kind(u->getType(), where);
      return normalize(node(CAD_VM_NOT, rv(sub)), k);
    }
    case UO_LNot: {
      const VK k = kind(sub->getType(), where);
      return node(CAD_VM_XOR, truth(rv(sub), k), konst(1));
    }
    case UO_Deref:
      return load(place(u), where, "the value");
    case UO_PreInc:
    case UO_PreDec:
    case UO_PostInc:
    case UO_PostDec: {
      const Place p = place(sub);
      const VK k = kind(p.type, where);
      if (is_bool(p.type)) fail(Code::OpUnsupported, where, "++ and -- on _Bool are not supported");
      const int32_t old = load(p, where, name_of(sub));
      const bool inc = u->getOpcode() == UO_PreInc || u->getOpcode() == UO_PostInc;
      int32_t now;
      if (is_float(k))
        now = node(k == VK::F64 ? (inc ? CAD_VM_FADD : CAD_VM_FSUB) : (inc ? CAD_VM_SADD : CAD_VM_SSUB), old, fconst(1.0, k));
      else
        now = normalize(node(inc ? CAD_VM_ADD : CAD_VM_SUB, old, konst(1)), k);
      store(p, now, where);
      return u->isPrefix() ? now : old;
    }
    default:
      fail(Code::OpUnsupported, where, "this operator is not in the operator subset");
  }
}

// The scalar leaves of a struct- or array-valued expression, in the
// order of leaves().
std::vector<int32_t> Lowering::agg(const Expr *e) {
  e = e->IgnoreParens();
  const SourceLocation where = e->getBeginLoc();
  if (const auto *ic = dyn_cast<ImplicitCastExpr>(e))
    if (ic->getCastKind() == CK_NoOp || ic->getCastKind() == CK_LValueToRValue) return agg(ic->getSubExpr());
  if (const auto *c = dyn_cast<ConditionalOperator>(e)) {
    const int32_t cond = truth(rv(c->getCond()), kind(c->getCond()->getType(), where));
    if (is_const(cond)) return agg(cval(cond) ? c->getTrueExpr() : c->getFalseExpr());
    Pure p(*this);
    const std::vector<int32_t> t = agg(c->getTrueExpr()), f = agg(c->getFalseExpr());
    std::vector<int32_t> out;
    for (size_t i = 0; i < t.size(); i++) out.push_back(node(CAD_VM_SEL, cond, t[i], f[i]));
    return out;
  }
  if (const auto *call = dyn_cast<CallExpr>(e)) {
    if (!helper_of(call)) fail(Code::OpUnsupported, where, "this call has no struct value");
    return inline_call(call);
  }
  if (const auto *b = dyn_cast<BinaryOperator>(e)) {
    if (b->getOpcode() == BO_Comma) {
      rv_any(b->getLHS());
      return agg(b->getRHS());
    }
    if (b->getOpcode() == BO_Assign) {
      binary(b);
      return agg(b->getLHS());
    }
  }
  const Place src = place(e);
  std::vector<std::pair<uint32_t, QualType>> ls;
  leaves(ctx_, src.type, 0, &ls);
  std::vector<int32_t> vals;
  const std::string name = name_of(e);
  for (auto &[off, t] : ls)
    vals.push_back(load({src.space, src.off + off, t}, where, name + path_of(src.type, off)));
  return vals;
}

void Lowering::store_leaves(const Place &dst, const std::vector<int32_t> &vals, SourceLocation where) {
  std::vector<std::pair<uint32_t, QualType>> ls;
  leaves(ctx_, dst.type, 0, &ls);
  for (size_t i = 0; i < ls.size() && i < vals.size(); i++)
    store({dst.space, dst.off + ls[i].first, ls[i].second}, vals[i], where);
}

// A call of a helper function, inlined: its parameters are bound in a
// scope of their own (values copied, pointers bound to the places they
// designate), its body runs like the operator's, and its value is what
// each path's return left in its result.  The leaves of the result
// (none for void, one for a scalar).
std::vector<int32_t> Lowering::inline_call(const CallExpr *call) {
  const FunctionDecl *fd = helper_of(call);
  const SourceLocation where = call->getBeginLoc();
  if (frames_.size() >= kMaxInline)
    fail(Code::OpTooBig, where, "helper calls nested more than " + std::to_string(kMaxInline) + " deep");
  if (fd->isVariadic() || fd->getNumParams() != call->getNumArgs())
    fail(Code::OpCall, where, "calls " + fd->getNameAsString() + ": a helper function cannot be variadic");
  // The arguments, in the caller's scope.
  std::vector<PtrBind> ptr_args(fd->getNumParams());
  std::vector<std::vector<int32_t>> val_args(fd->getNumParams());
  for (unsigned i = 0; i < fd->getNumParams(); i++) {
    const ParmVarDecl *pd = fd->getParamDecl(i);
    const Expr *arg = call->getArg(i);
    const QualType pt = pd->getType();
    if (pt->isPointerType()) {
      ptr_args[i] = ptr(arg);
      VK a, b;
      const QualType want = pt->getPointeeType().getUnqualifiedType(), got = ptr_args[i].elem.getUnqualifiedType();
      if (!ctx_.hasSameUnqualifiedType(want, got) &&
          !(scalar_kind(want, &a) && scalar_kind(got, &b) && a == b))
        fail(Code::OpPointer, arg->getBeginLoc(),
             "the argument points to " + got.getAsString() + ", the parameter " + pd->getNameAsString() + " to " +
                 want.getAsString());
    } else if (!type_problem(ctx_, pt).empty()) {
      fail(Code::OpUnsupported, pd->getLocation(),
           "the parameter " + pd->getNameAsString() + " has " + type_problem(ctx_, pt));
    } else {
      VK k;
      val_args[i] = scalar_kind(pt, &k) ? std::vector<int32_t>{rv(arg)} : agg(arg);
    }
  }
  const QualType rt = fd->getReturnType();
  if (!rt->isVoidType() && !type_problem(ctx_, rt).empty())
    fail(Code::OpUnsupported, fd->getLocation(), fd->getNameAsString() + " returns " + type_problem(ctx_, rt));
  // The helper's scope.
  const auto saved_locals = locals_;
  const auto saved_ptrs = ptrs_;
  const SourceLocation saved_loc = stmt_loc_;
  const int base = next_space_;
  for (unsigned i = 0; i < fd->getNumParams(); i++) {
    const ParmVarDecl *pd = fd->getParamDecl(i);
    if (pd->getType()->isPointerType()) {
      ptrs_[pd] = ptr_args[i];
    } else {
      const int space = next_space_++;
      locals_[pd] = space;
      store_leaves({space, 0, pd->getType()}, val_args[i], where);
    }
  }
  Frame f{rt->isVoidType() ? -1 : next_space_++, rt};
  frames_.push_back(f);
  const auto *body = cast<CompoundStmt>(fd->getBody());
  std::vector<const Stmt *> list(body->body_begin(), body->body_end());
  block(list, 0, nullptr);
  frames_.pop_back();
  std::vector<int32_t> result;
  if (f.ret_space >= 0) {
    std::vector<std::pair<uint32_t, QualType>> ls;
    leaves(ctx_, rt, 0, &ls);
    for (auto &[off, t] : ls) {
      auto it = env_.find({f.ret_space, off});
      if (it == env_.end())
        fail(Code::OpUndefined, where,
             fd->getNameAsString() + " may end without returning a value (every path of a helper that returns " +
                 rt.getAsString() + " ends with return)");
      result.push_back(it->second);
    }
  }
  // Its locals are gone.
  for (auto it = env_.lower_bound({base, 0}); it != env_.end();) it = env_.erase(it);
  locals_ = saved_locals;
  ptrs_ = saved_ptrs;
  stmt_loc_ = saved_loc;
  return result;
}

int32_t Lowering::binary(const BinaryOperator *b) {
  const SourceLocation where = b->getOperatorLoc();
  const BinaryOperatorKind op = b->getOpcode();
  if (op == BO_Comma) {
    rv_any(b->getLHS());
    return rv(b->getRHS());
  }
  if (op == BO_Assign) {
    if (!b->getType()->isScalarType()) {
      const std::vector<int32_t> vals = agg(b->getRHS());
      store_leaves(place(b->getLHS()), vals, b->getBeginLoc());
      return -1;
    }
    const int32_t v = rv(b->getRHS());
    const Place p = place(b->getLHS());
    kind(p.type, where);
    store(p, v, b->getBeginLoc());
    return v;
  }
  if (const auto *ca = dyn_cast<CompoundAssignOperator>(b)) {
    const Place p = place(b->getLHS());
    const VK lk = kind(p.type, where), ck = kind(ca->getComputationLHSType(), where),
             rk = kind(ca->getComputationResultType(), where);
    const int32_t r = rv(b->getRHS());
    const int32_t l = convert(load(p, where, name_of(b->getLHS())), lk, ck);
    const int32_t res = arith(BinaryOperator::getOpForCompoundAssignment(op), l, r, rk, where);
    const int32_t v = is_bool(p.type) ? truth(res, rk) : convert(res, rk, lk);
    store(p, v, b->getBeginLoc());
    return v;
  }
  if (op == BO_LAnd || op == BO_LOr) {
    const int32_t l = truth(rv(b->getLHS()), kind(b->getLHS()->getType(), where));
    if (is_const(l)) {
      if ((op == BO_LAnd) == (cval(l) == 0)) return konst(op == BO_LOr);
      return truth(rv(b->getRHS()), kind(b->getRHS()->getType(), where));
    }
    Pure p(*this);
    const int32_t r = truth(rv(b->getRHS()), kind(b->getRHS()->getType(), where));
    return node(op == BO_LAnd ? CAD_VM_AND : CAD_VM_OR, l, r);
  }
  const int32_t l = rv(b->getLHS()), r = rv(b->getRHS());
  const VK lk = kind(b->getLHS()->getType(), where);
  if (b->isComparisonOp()) return compare(op, l, r, lk);
  return arith(op, l, r, kind(b->getType(), where), where);
}

int32_t Lowering::builtin(const CallExpr *call) {
  const SourceLocation where = call->getBeginLoc();
  const Builtin which = builtin_of(call->getDirectCallee());
  std::vector<int32_t> args;
  std::vector<VK> kinds;
  for (const Expr *a : call->arguments()) {
    kinds.push_back(kind(a->getType(), a->getBeginLoc()));
    if (!is_float(kinds.back()))
      fail(Code::OpCall, a->getBeginLoc(), "the math builtins take float or double arguments");
    args.push_back(rv(a));
  }
  const size_t want = which == Builtin::Fmin || which == Builtin::Fmax ? 2 : 1;
  if (args.size() != want || (want == 2 && kinds[0] != kinds[1]))
    fail(Code::OpCall, where, "wrong arguments for " + call->getDirectCallee()->getNameAsString());
  const bool d = kinds[0] == VK::F64;
  const int32_t inf = konst(d ? fbits(__builtin_inf()) : sbits(__builtin_inff()));
  switch (which) {
    case Builtin::Fabs: return node(d ? CAD_VM_FABS : CAD_VM_SABS, args[0]);
    case Builtin::Fmin: return node(d ? CAD_VM_FMIN : CAD_VM_SMIN, args[0], args[1]);
    case Builtin::Fmax: return node(d ? CAD_VM_FMAX : CAD_VM_SMAX, args[0], args[1]);
    case Builtin::Sqrt: return node(d ? CAD_VM_FSQRT : CAD_VM_SSQRT, args[0]);
    case Builtin::IsNan: return node(d ? CAD_VM_FNE : CAD_VM_SNE, args[0], args[0]);
    case Builtin::IsInf: return node(d ? CAD_VM_FEQ : CAD_VM_SEQ, node(d ? CAD_VM_FABS : CAD_VM_SABS, args[0]), inf);
    case Builtin::IsFinite: return node(d ? CAD_VM_FLT : CAD_VM_SLT, node(d ? CAD_VM_FABS : CAD_VM_SABS, args[0]), inf);
    case Builtin::IsInfSign: {
      const int32_t is_inf = node(d ? CAD_VM_FEQ : CAD_VM_SEQ, node(d ? CAD_VM_FABS : CAD_VM_SABS, args[0]), inf);
      const int32_t neg = node(d ? CAD_VM_FLT : CAD_VM_SLT, args[0], konst(d ? fbits(0.0) : sbits(0.0f)));
      return node(CAD_VM_SEL, is_inf, node(CAD_VM_SEL, neg, konst(~0ull), konst(1)), konst(0));
    }
    default:
      fail(Code::OpCall, where, "calls " + call->getDirectCallee()->getNameAsString() + ": not an allowed builtin");
  }
}

}  // namespace opc
}  // namespace cad
