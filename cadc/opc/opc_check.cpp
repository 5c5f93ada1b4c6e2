// opc_check.cpp - the operator compiler's types, its allowed builtins and
// the checker: what C an operator may use, each error at its place with
// its own code (opc.h, step 3).
#include <clang/AST/RecordLayout.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include "opc_priv.h"

namespace cad {
namespace opc {

[[noreturn]] void fail(Code code, SourceLocation where, std::string message) {
  throw OpError{code, where, std::move(message)};
}

// ---------------------------------------------------------------------
// Types

unsigned bytes_of(VK k) {
  switch (k) {
    case VK::I8: case VK::U8: return 1;
    case VK::I16: case VK::U16: return 2;
    case VK::I32: case VK::U32: case VK::F32: return 4;
    default: return 8;
  }
}

// The kind of a scalar type; false if it is not one the VM has.
bool scalar_kind(QualType t, VK *out) {
  t = t.getCanonicalType();
  if (const auto *et = t->getAs<EnumType>()) t = et->getDecl()->getIntegerType().getCanonicalType();
  const auto *bt = t->getAs<BuiltinType>();
  if (!bt) return false;
  switch (bt->getKind()) {
    case BuiltinType::Bool: *out = VK::U8; return true;
    case BuiltinType::Char_S: case BuiltinType::SChar: *out = VK::I8; return true;
    case BuiltinType::Char_U: case BuiltinType::UChar: *out = VK::U8; return true;
    case BuiltinType::Short: *out = VK::I16; return true;
    case BuiltinType::UShort: *out = VK::U16; return true;
    case BuiltinType::Int: *out = VK::I32; return true;
    case BuiltinType::UInt: *out = VK::U32; return true;
    case BuiltinType::Long: case BuiltinType::LongLong: *out = VK::I64; return true;
    case BuiltinType::ULong: case BuiltinType::ULongLong: *out = VK::U64; return true;
    case BuiltinType::Float: *out = VK::F32; return true;
    case BuiltinType::Double: *out = VK::F64; return true;
    default: return false;
  }
}

bool is_bool(QualType t) { return t.getCanonicalType()->isBooleanType(); }

// Why a type cannot be an element or a local ("" if it can).
std::string type_problem(ASTContext &ctx, QualType t) {
  VK k;
  if (t.isVolatileQualified()) return "volatile";
  if (scalar_kind(t, &k)) return "";
  t = t.getCanonicalType();
  if (const auto *at = ctx.getAsConstantArrayType(t)) return type_problem(ctx, at->getElementType());
  if (t->isArrayType()) return "an array without a constant size";
  if (t->isPointerType()) return "a pointer";
  if (const auto *rt = t->getAs<RecordType>()) {
    const RecordDecl *rd = rt->getDecl();
    if (rd->isUnion()) return "a union";
    if (!rd->isCompleteDefinition()) return "an incomplete struct";
    for (const FieldDecl *f : rd->fields()) {
      if (f->isBitField()) return "a bit-field (" + f->getNameAsString() + ")";
      const std::string p = type_problem(ctx, f->getType());
      if (!p.empty()) return p + " (field " + f->getNameAsString() + ")";
    }
    if (rd->hasFlexibleArrayMember()) return "a flexible array member";
    return "";
  }
  return "the type " + t.getAsString() + " (scalars: the integer types, float, double)";
}

// The scalar leaves of a type at a byte offset.
void leaves(ASTContext &ctx, QualType t, uint32_t off, std::vector<std::pair<uint32_t, QualType>> *out) {
  VK k;
  if (scalar_kind(t, &k)) {
    out->push_back({off, t});
    return;
  }
  t = t.getCanonicalType();
  if (const auto *at = ctx.getAsConstantArrayType(t)) {
    const uint64_t n = at->getSize().getZExtValue();
    const uint32_t es = static_cast<uint32_t>(ctx.getTypeSizeInChars(at->getElementType()).getQuantity());
    for (uint64_t i = 0; i < n; i++) leaves(ctx, at->getElementType(), off + static_cast<uint32_t>(i) * es, out);
    return;
  }
  if (const auto *rt = t->getAs<RecordType>()) {
    const RecordDecl *rd = rt->getDecl();
    const ASTRecordLayout &lay = ctx.getASTRecordLayout(rd);
    unsigned i = 0;
    for (const FieldDecl *f : rd->fields())
      leaves(ctx, f->getType(), off + static_cast<uint32_t>(lay.getFieldOffset(i++) / 8), out);
  }
}

// ---------------------------------------------------------------------
// The allowed builtins

// Calls are resolved by clang's semantic analysis: a function that the
// file defines (static or not, whatever its name) is the user's and is
// inlined; an allowed name resolves to the builtin only when no
// definition of it is in the file, i.e. when the call is to the system
// header's (or cad_op.h's) declaration, which gcc links to libm.
Builtin builtin_of(const FunctionDecl *fd) {
  if (!fd || fd->isDefined()) return Builtin::None;
  std::string n = fd->getNameAsString();
  if (n.rfind("__builtin_", 0) == 0) n = n.substr(10);
  static const std::map<std::string, Builtin> names = {
      {"fabs", Builtin::Fabs},   {"fabsf", Builtin::Fabs},       {"fmin", Builtin::Fmin},
      {"fminf", Builtin::Fmin},  {"fmax", Builtin::Fmax},        {"fmaxf", Builtin::Fmax},
      {"sqrt", Builtin::Sqrt},   {"sqrtf", Builtin::Sqrt},       {"isnan", Builtin::IsNan},
      {"__isnan", Builtin::IsNan}, {"__isnanf", Builtin::IsNan}, {"isinf", Builtin::IsInf},
      {"__isinf", Builtin::IsInf}, {"__isinff", Builtin::IsInf}, {"isinf_sign", Builtin::IsInfSign},
      {"isfinite", Builtin::IsFinite}, {"__finite", Builtin::IsFinite}, {"__finitef", Builtin::IsFinite},
  };
  auto it = names.find(n);
  return it == names.end() ? Builtin::None : it->second;
}

const char *const kBuiltinList =
    "fabs, fmin, fmax, sqrt (and their f forms), isnan, isinf, isfinite and the helper functions the file defines";

// A call that clang evaluates to a constant: the builtins behind INFINITY,
// NAN, HUGE_VAL and the like (__builtin_inff(), __builtin_nanf("")...).
bool constant_builtin(const CallExpr *c, const ASTContext &ctx) {
  const FunctionDecl *fd = c->getDirectCallee();
  if (!fd || fd->isDefined() || !c->getBuiltinCallee()) return false;
  Expr::EvalResult r;
  return c->EvaluateAsRValue(r, ctx) && !r.HasSideEffects && (r.Val.isFloat() || r.Val.isInt());
}

// The definition a call inlines, or null (a builtin, or no direct callee).
const FunctionDecl *helper_of(const CallExpr *c) {
  const FunctionDecl *fd = c->getDirectCallee();
  return fd ? fd->getDefinition() : nullptr;
}

namespace {

// ---------------------------------------------------------------------
// The checker: what may appear in an operator's body.

class Checker : public RecursiveASTVisitor<Checker> {
 public:
  Checker(ASTContext &ctx, const FunctionDecl *op, std::vector<OpError> *errors)
      : ctx_(ctx), op_(op), errors_(errors) {}

  bool VisitStmt(Stmt *s) {
    switch (s->getStmtClass()) {
      case Stmt::GCCAsmStmtClass:
      case Stmt::MSAsmStmtClass:
        add(Code::OpAsm, s->getBeginLoc(), "inline assembly is not allowed in an operator");
        break;
      case Stmt::GotoStmtClass:
      case Stmt::IndirectGotoStmtClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "goto is not allowed in an operator (use if/else)");
        break;
      case Stmt::LabelStmtClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "labels are not allowed in an operator");
        break;
      case Stmt::SwitchStmtClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "switch is not allowed in an operator (use if/else)");
        break;
      case Stmt::BreakStmtClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "break is not allowed in an operator (loops run to their constant bound)");
        break;
      case Stmt::ContinueStmtClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "continue is not allowed in an operator (use if inside the loop)");
        break;
      case Stmt::StringLiteralClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "string literals are not allowed in an operator");
        break;
      case Stmt::StmtExprClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "statement expressions are not allowed in an operator");
        break;
      case Stmt::CompoundLiteralExprClass:
        add(Code::OpUnsupported, s->getBeginLoc(), "compound literals are not allowed in an operator");
        break;
      case Stmt::BlockExprClass:
      case Stmt::VAArgExprClass:
      case Stmt::AddrLabelExprClass:
      case Stmt::GenericSelectionExprClass:
      case Stmt::AtomicExprClass:
        add(Code::OpUnsupported, s->getBeginLoc(), std::string(s->getStmtClassName()) + " is not allowed in an operator");
        break;
      default:
        break;
    }
    return true;
  }

  // Reported once; the template string inside is not a second error.
  bool TraverseGCCAsmStmt(GCCAsmStmt *s) {
    VisitStmt(s);
    return true;
  }

  // INFINITY, NAN...: a constant, whose string argument is no string.
  bool TraverseCallExpr(CallExpr *c) {
    if (constant_builtin(c, ctx_)) return true;
    return RecursiveASTVisitor::TraverseCallExpr(c);
  }

  bool VisitCallExpr(CallExpr *c) {
    const FunctionDecl *fd = c->getDirectCallee();
    if (!fd) {
      add(Code::OpCall, c->getBeginLoc(), "calls through a pointer are not allowed in an operator");
    } else if (const FunctionDecl *def = fd->getDefinition()) {
      if (def->isVariadic())
        add(Code::OpCall, c->getBeginLoc(), "calls " + fd->getNameAsString() + ": a helper function cannot be variadic");
      // &x as an argument binds the helper's pointer parameter to x.
      for (const Expr *a : c->arguments())
        if (const auto *u = dyn_cast<UnaryOperator>(a->IgnoreParenImpCasts()))
          if (u->getOpcode() == UO_AddrOf) bound_addr_.insert(u);
    } else if (builtin_of(fd) == Builtin::None) {
      add(Code::OpCall, c->getBeginLoc(),
          "calls " + fd->getNameAsString() + ": an operator may call only " + kBuiltinList);
    }
    return true;
  }

  bool VisitDeclRefExpr(DeclRefExpr *e) {
    if (const auto *v = dyn_cast<VarDecl>(e->getDecl())) {
      if (v->hasGlobalStorage())
        add(Code::OpGlobal, e->getBeginLoc(),
            "uses " + std::string(v->isStaticLocal() ? "the static variable " : "the global ") + v->getNameAsString() +
                ": an operator sees only its two elements and its locals");
    }
    if (e->getType().isVolatileQualified())
      add(Code::OpVolatile, e->getBeginLoc(), "volatile is not allowed in an operator");
    return true;
  }

  bool VisitVarDecl(VarDecl *v) {
    if (isa<ParmVarDecl>(v)) return true;
    if (v->isStaticLocal() || v->hasExternalStorage()) {
      add(Code::OpGlobal, v->getLocation(), "static or extern variable " + v->getNameAsString() + " in an operator");
      return true;
    }
    QualType t = v->getType();
    if (t.isVolatileQualified() || (t->isArrayType() && ctx_.getBaseElementType(t).isVolatileQualified())) {
      add(Code::OpVolatile, v->getLocation(), "volatile is not allowed in an operator");
      return true;
    }
    if (t->isVariableArrayType()) {
      add(Code::OpVla, v->getLocation(), "variable-length array " + v->getNameAsString() + ": array sizes must be constants");
      return true;
    }
    if (t->isPointerType() || t->isReferenceType()) {
      add(Code::OpPointer, v->getLocation(),
          "pointer variable " + v->getNameAsString() + ": an operator uses no pointers but in and inout");
      return true;
    }
    const std::string p = type_problem(ctx_, t);
    if (!p.empty())
      add(Code::OpUnsupported, v->getLocation(), "local " + v->getNameAsString() + " has " + p);
    return true;
  }

  bool VisitUnaryOperator(UnaryOperator *u) {
    if (u->getOpcode() == UO_AddrOf && !bound_addr_.count(u))
      add(Code::OpPointer, u->getBeginLoc(),
          "taking an address (&) is allowed only as the argument of a helper function's pointer parameter");
    return true;
  }

  bool VisitBinaryOperator(BinaryOperator *b) {
    if (b->getLHS()->getType()->isPointerType() || b->getRHS()->getType()->isPointerType())
      add(Code::OpPointer, b->getOperatorLoc(),
          "pointer arithmetic or comparison: an operator reaches only in[0] and inout[0]");
    return true;
  }

  bool VisitCastExpr(CastExpr *c) {
    if (c->getType()->isPointerType() && c->getType()->getPointeeType().isVolatileQualified()) {
      add(Code::OpVolatile, c->getBeginLoc(), "volatile is not allowed in an operator (here through a cast)");
      return true;
    }
    switch (c->getCastKind()) {
      case CK_BitCast:
      case CK_IntegralToPointer:
      case CK_PointerToIntegral:
      case CK_PointerToBoolean:
      case CK_NullToPointer:
        add(Code::OpPointer, c->getBeginLoc(), "pointer conversion: an operator uses no pointers but in and inout");
        break;
      default:
        break;
    }
    return true;
  }

  bool VisitDeclStmt(DeclStmt *d) {
    for (Decl *x : d->decls())
      if (!isa<VarDecl>(x) && !isa<RecordDecl>(x) && !isa<TypedefNameDecl>(x) && !isa<EnumDecl>(x))
        add(Code::OpUnsupported, x->getLocation(), "this declaration is not allowed in an operator");
    return true;
  }

 private:
  void add(Code code, SourceLocation l, std::string m) { errors_->push_back({code, l, std::move(m)}); }

  ASTContext &ctx_;
  const FunctionDecl *op_;
  std::vector<OpError> *errors_;
  std::set<const UnaryOperator *> bound_addr_;
};

}  // namespace

void check_body(ASTContext &ctx, const FunctionDecl *op, std::vector<OpError> *errors) {
  Checker(ctx, op, errors).TraverseStmt(op->getBody());
}

// The helpers an operator calls, each once, callees first; recursion
// (direct or through other helpers) is an error at the call that closes
// the cycle.
void helpers_of(const FunctionDecl *f, std::vector<const FunctionDecl *> *path, std::set<const FunctionDecl *> *done,
                std::vector<const FunctionDecl *> *order, std::vector<OpError> *errors) {
  path->push_back(f);
  for (const CallExpr *c : nodes_under<CallExpr>(f->getBody())) {
    const FunctionDecl *h = helper_of(c);
    if (!h) continue;
    auto on_path = std::find(path->begin(), path->end(), h);
    if (on_path != path->end()) {
      std::string cycle;
      for (auto it = on_path; it != path->end(); ++it) cycle += (*it)->getNameAsString() + " calls ";
      errors->push_back({Code::OpCall, c->getBeginLoc(),
                         "recursion: " + cycle + h->getNameAsString() +
                             " (helpers are inlined: an operator cannot call itself, directly or not)"});
      continue;
    }
    if (done->insert(h).second) helpers_of(h, path, done, order, errors);
  }
  path->pop_back();
  order->push_back(f);
}

}  // namespace opc
}  // namespace cad
