// opc.cpp - see opc.h.
#include "opc.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecordLayout.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/FileManager.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include "cad_core.h"

#ifndef CAD_CLANG_RESOURCE_DIR
#error "CAD_CLANG_RESOURCE_DIR must name clang's resource directory"
#endif

namespace cad {

namespace {

using namespace clang;

// Where clang locations map to in our SourceManager: the operator file,
// and headers registered when a message points into one.
class Locations {
 public:
  Locations(SourceManager &sm, uint32_t main_file, std::string main_path)
      : sm_(sm), main_(main_file), main_path_(std::move(main_path)) {}

  Loc at_start() const { return Loc{main_, 1, 1, ""}; }

  Loc at(const clang::SourceManager &csm, SourceLocation l) {
    Loc loc;
    if (l.isInvalid()) {
      loc.file = main_;
      return loc;
    }
    const PresumedLoc p = csm.getPresumedLoc(csm.getExpansionLoc(l));
    if (p.isInvalid()) {
      loc.file = main_;
      return loc;
    }
    const std::string name = p.getFilename();
    loc.file = file_of(name);
    loc.line = p.getLine();
    loc.col = p.getColumn();
    return loc;
  }

 private:
  uint32_t file_of(const std::string &name) {
    if (name == main_path_) return main_;
    auto it = others_.find(name);
    if (it != others_.end()) return it->second;
    std::string error;
    uint32_t f = sm_.load(name, &error);
    if (!f) f = sm_.add(name, "");
    others_[name] = f;
    return f;
  }

  SourceManager &sm_;
  uint32_t main_;
  std::string main_path_;
  std::map<std::string, uint32_t> others_;
};

// clang's own warnings and errors, as CAD-E050.
class Collect : public DiagnosticConsumer {
 public:
  Collect(Locations &locs, Diagnostics *diags) : locs_(locs), diags_(diags) {}
  void HandleDiagnostic(DiagnosticsEngine::Level level, const clang::Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level != DiagnosticsEngine::Warning && level != DiagnosticsEngine::Error &&
        level != DiagnosticsEngine::Fatal)
      return;
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    Loc loc;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      loc = locs_.at(info.getSourceManager(), info.getLocation());
    } else {
      // clang's "too many errors emitted": the errors before it say where.
      if (diags_->error_count() > 0) return;
      loc = locs_.at_start();
    }
    if (level == DiagnosticsEngine::Warning)
      diags_->warning(Code::OpSyntax, loc, text.str().str());
    else
      diags_->error(Code::OpSyntax, loc, text.str().str());
  }

 private:
  Locations &locs_;
  Diagnostics *diags_;
};

// An error in an operator: thrown to the top of its compilation.
struct OpError {
  Code code;
  SourceLocation where;
  std::string message;
};

[[noreturn]] void fail(Code code, SourceLocation where, std::string message) {
  throw OpError{code, where, std::move(message)};
}

// ---------------------------------------------------------------------
// Types

enum class VK : uint8_t { I8, U8, I16, U16, I32, U32, I64, U64, F32, F64 };

bool is_float(VK k) { return k == VK::F32 || k == VK::F64; }
bool is_signed(VK k) { return k == VK::I8 || k == VK::I16 || k == VK::I32 || k == VK::I64; }
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

enum class Builtin { None, Fabs, Fmin, Fmax, Sqrt, IsNan, IsInf, IsInfSign, IsFinite };

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

const char *kBuiltinList =
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

// The nodes under s of class T (and T's subclasses), without recursion:
// the tree may be deep.
template <typename T>
std::vector<const T *> nodes_under(const Stmt *s) {
  std::vector<const T *> out;
  std::vector<const Stmt *> stack{s};
  while (!stack.empty()) {
    const Stmt *x = stack.back();
    stack.pop_back();
    if (!x) continue;
    if (const auto *t = dyn_cast<T>(x)) out.push_back(t);
    for (const Stmt *c : x->children()) stack.push_back(c);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

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

// ---------------------------------------------------------------------
// Lowering

constexpr int kIn = 0, kInout = 1;  // spaces; locals are 2, 3, ...
constexpr uint8_t kConst = 0xff;    // pseudo-opcode of a constant node
constexpr size_t kMaxNodes = 1u << 16;
constexpr unsigned kMaxIterations = 4096;      // of one loop
constexpr uint64_t kMaxUnrolled = 1u << 16;    // of all loops, nested ones multiplied
constexpr unsigned kMaxInline = 64;            // helper calls nested in one another
// Locals are values in registers and spill slots, not memory: a local of
// more bytes than this could never be held at once.
constexpr uint64_t kMaxLocalBytes = 4096;

struct Node {
  uint8_t code = 0;
  int32_t a = -1, b = -1, c = -1;
  int64_t imm = 0;   // LD: byte offset; constant: its bits
  uint8_t space = 0; // LD: kIn or kInout
};

using Key = std::pair<int, uint32_t>;  // (space, byte offset) of a scalar leaf

struct Place {
  int space;
  uint32_t off;
  QualType type;
};

// What a pointer designates: count objects of type elem from a place (in
// and inout: their element; a helper's pointer parameter: its argument).
struct PtrBind {
  int space;
  uint32_t off;
  QualType elem;
  uint64_t count;
};

class Lowering {
 public:
  Lowering(ASTContext &ctx, const FunctionDecl *fd) : ctx_(ctx), fd_(fd) {
    in_ = fd->getParamDecl(0);
    inout_ = fd->getParamDecl(1);
    elem_ = in_->getType()->getPointeeType().getUnqualifiedType();
    ptrs_[in_] = {kIn, 0, elem_, 1};
    ptrs_[inout_] = {kInout, 0, elem_, 1};
    stmt_loc_ = fd->getLocation();
  }

  UserOp run() {
    const auto *body = cast<CompoundStmt>(fd_->getBody());
    std::vector<const Stmt *> list(body->body_begin(), body->body_end());
    block(list, 0, nullptr);
    return emit();
  }

 private:
  // ---- the value graph ----

  int32_t node(uint8_t code, int32_t a = -1, int32_t b = -1, int32_t c = -1, int64_t imm = 0, uint8_t space = 0) {
    uint64_t folded;
    if (fold(code, a, b, c, &folded) || (code != kConst && fold_float(code, a, b, &folded))) return konst(folded);
    if (code == CAD_VM_SEL && b == c) return b;
    auto key = std::make_tuple(code, a, b, c, imm, space);
    auto it = cse_.find(key);
    if (it != cse_.end()) return it->second;
    if (nodes_.size() >= kMaxNodes) fail(Code::OpTooBig, stmt_loc_, "the operator is too large (more than 65536 values)");
    Node n;
    n.code = code;
    n.a = a;
    n.b = b;
    n.c = c;
    n.imm = imm;
    n.space = space;
    nodes_.push_back(n);
    node_loc_.push_back(stmt_loc_);
    const int32_t id = static_cast<int32_t>(nodes_.size() - 1);
    cse_[key] = id;
    return id;
  }

  int32_t konst(uint64_t v) { return node(kConst, -1, -1, -1, static_cast<int64_t>(v)); }
  bool is_const(int32_t v) const { return v >= 0 && nodes_[v].code == kConst; }
  uint64_t cval(int32_t v) const { return static_cast<uint64_t>(nodes_[v].imm); }

  // Integer constant folding with the VM's semantics (vm.c).
  bool fold(uint8_t code, int32_t a, int32_t b, int32_t c, uint64_t *out) const {
    if (code == kConst) return false;
    if (code == CAD_VM_SEL) {
      if (!is_const(a)) return false;
      if (cval(a) ? !is_const(b) : !is_const(c)) return false;
      *out = cval(a) ? cval(b) : cval(c);
      return true;
    }
    const cad_vm_format f = cad_vm_opcode_format(code);
    if (f == CAD_VMF_UN) {
      if (!is_const(a)) return false;
      const uint64_t x = cval(a);
      switch (code) {
        case CAD_VM_MOV: *out = x; return true;
        case CAD_VM_NEG: *out = 0 - x; return true;
        case CAD_VM_NOT: *out = ~x; return true;
        case CAD_VM_SEXT8: *out = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(x))); return true;
        case CAD_VM_SEXT16: *out = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(x))); return true;
        case CAD_VM_SEXT32: *out = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(x))); return true;
        case CAD_VM_ZEXT8: *out = x & 0xff; return true;
        case CAD_VM_ZEXT16: *out = x & 0xffff; return true;
        case CAD_VM_ZEXT32: *out = x & 0xffffffffu; return true;
        default: return false;
      }
    }
    if (f != CAD_VMF_BIN && f != CAD_VMF_CMP) return false;
    if (!is_const(a) || !is_const(b)) return false;
    const uint64_t x = cval(a), y = cval(b);
    const int64_t sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
    const uint64_t kSign = uint64_t{1} << 63;
    switch (code) {
      case CAD_VM_ADD: *out = x + y; return true;
      case CAD_VM_SUB: *out = x - y; return true;
      case CAD_VM_MUL: *out = x * y; return true;
      case CAD_VM_DIV_S: *out = y == 0 ? 0 : (x == kSign && y == ~0ull) ? x : static_cast<uint64_t>(sx / sy); return true;
      case CAD_VM_DIV_U: *out = y == 0 ? 0 : x / y; return true;
      case CAD_VM_MOD_S: *out = y == 0 ? x : y == ~0ull ? 0 : static_cast<uint64_t>(sx % sy); return true;
      case CAD_VM_MOD_U: *out = y == 0 ? x : x % y; return true;
      case CAD_VM_AND: *out = x & y; return true;
      case CAD_VM_OR: *out = x | y; return true;
      case CAD_VM_XOR: *out = x ^ y; return true;
      case CAD_VM_SHL: *out = x << (y & 63); return true;
      case CAD_VM_SHR_U: *out = x >> (y & 63); return true;
      case CAD_VM_SHR_S: *out = static_cast<uint64_t>(sx >> (y & 63)); return true;
      case CAD_VM_EQ: *out = x == y; return true;
      case CAD_VM_NE: *out = x != y; return true;
      case CAD_VM_LT_S: *out = sx < sy; return true;
      case CAD_VM_LE_S: *out = sx <= sy; return true;
      case CAD_VM_LT_U: *out = x < y; return true;
      case CAD_VM_LE_U: *out = x <= y; return true;
      default: return false;  // floating point: fold_float
    }
  }

  // Floating-point constant folding (a loop with a double counter must
  // fold to be unrolled): the VM itself computes the instruction on the
  // constants, so that a folded value is the one the code would compute.
  // fmin and fmax, sqrt and the conversions to integers are left to run
  // time (their special values are the VM's business).
  bool fold_float(uint8_t code, int32_t a, int32_t b, uint64_t *out) {
    const cad_vm_format f = cad_vm_opcode_format(code);
    if (code < CAD_VM_FADD || code == CAD_VM_FMIN || code == CAD_VM_FMAX || code == CAD_VM_FSQRT ||
        code == CAD_VM_SMIN || code == CAD_VM_SMAX || code == CAD_VM_SSQRT || code == CAD_VM_SEL)
      return false;
    if (f != CAD_VMF_UN && f != CAD_VMF_BIN && f != CAD_VMF_CMP) return false;
    if (!is_const(a) || (f != CAD_VMF_UN && !is_const(b))) return false;
    const uint64_t x = cval(a), y = f == CAD_VMF_UN ? 0 : cval(b);
    const auto key = std::make_tuple(code, x, y);
    auto it = folded_.find(key);
    if (it == folded_.end()) {
      UserOp one;
      one.name = "fold";
      one.elem_size = 8;
      one.consts = {x, y};
      auto insn = [](uint8_t c, uint8_t dst, uint8_t ra, uint8_t rb, int32_t imm) {
        cad_vm_insn i{};
        i.code = c;
        i.dst = dst;
        i.a = ra;
        i.b = rb;
        i.imm = imm;
        return i;
      };
      one.code = {insn(CAD_VM_LDK, 0, 0, 0, 0), insn(CAD_VM_LDK, 1, 0, 0, 1),
                  insn(code, 2, 0, f == CAD_VMF_UN ? 0 : 1, 0), insn(CAD_VM_ST_64, 0, 2, 0, 0),
                  insn(CAD_VM_EXIT, 0, 0, 0, 0)};
      uint64_t io = 0, in = 0;
      userop_apply(one, &io, &in, 1);
      it = folded_.emplace(key, io).first;
    }
    *out = it->second;
    return true;
  }

  // ---- places and the environment ----

  Place place(const Expr *e) {
    e = e->IgnoreParens();
    if (const auto *ic = dyn_cast<ImplicitCastExpr>(e))
      if (ic->getCastKind() == CK_NoOp || ic->getCastKind() == CK_LValueToRValue) return place(ic->getSubExpr());
    if (const auto *d = dyn_cast<DeclRefExpr>(e)) {
      if (const auto *v = dyn_cast<VarDecl>(d->getDecl())) {
        if (ptrs_.count(v)) {
          const std::string n = v->getNameAsString();
          fail(Code::OpPointer, e->getBeginLoc(),
               "the pointer " + n + " used as a value: write *" + n + ", " + n + "->field or " + n + "[0]");
        }
        auto it = locals_.find(v);
        if (it == locals_.end()) fail(Code::OpUnsupported, e->getBeginLoc(), "unknown variable " + v->getNameAsString());
        return {it->second, 0, v->getType()};
      }
      fail(Code::OpUnsupported, e->getBeginLoc(), "not a variable");
    }
    if (const auto *u = dyn_cast<UnaryOperator>(e)) {
      if (u->getOpcode() == UO_Deref) {
        const PtrBind b = ptr(u->getSubExpr());
        return {b.space, b.off, b.elem};
      }
    }
    if (const auto *m = dyn_cast<MemberExpr>(e)) {
      const auto *f = dyn_cast<FieldDecl>(m->getMemberDecl());
      if (!f) fail(Code::OpUnsupported, e->getBeginLoc(), "not a field");
      const uint32_t off = static_cast<uint32_t>(ctx_.getFieldOffset(f) / 8);
      if (m->isArrow()) {
        const PtrBind b = ptr(m->getBase());
        return {b.space, b.off + off, m->getType()};
      }
      Place base = place(m->getBase());
      return {base.space, base.off + off, m->getType()};
    }
    if (const auto *s = dyn_cast<ArraySubscriptExpr>(e)) {
      const PtrBind b = ptr(s->getBase());
      const int32_t k = rv(s->getIdx());
      if (!is_const(k))
        fail(Code::OpUnsupported, s->getIdx()->getBeginLoc(),
             "the index is not a constant (loops are unrolled: use the loop variable of a constant-bound loop)");
      if (cval(k) >= b.count) {
        if (b.count == 1 && (b.space == kIn || b.space == kInout) && b.off == 0)
          fail(Code::OpPointer, s->getIdx()->getBeginLoc(),
               "an operator reaches only element 0 of in and inout: the index must be 0");
        fail(Code::OpPointer, s->getIdx()->getBeginLoc(),
             "index " + std::to_string(static_cast<int64_t>(cval(k))) + " is outside the array of " +
                 std::to_string(b.count));
      }
      const uint32_t es = static_cast<uint32_t>(ctx_.getTypeSizeInChars(b.elem).getQuantity());
      return {b.space, b.off + static_cast<uint32_t>(cval(k)) * es, b.elem};
    }
    fail(Code::OpUnsupported, e->getBeginLoc(), "this expression is not a place an operator can read or assign");
  }

  // What a pointer-valued expression designates: in, inout, a helper's
  // pointer parameter, &place or an array (as a helper's argument).
  PtrBind ptr(const Expr *e) {
    e = e->IgnoreParens();
    if (const auto *ic = dyn_cast<ImplicitCastExpr>(e)) {
      if (ic->getCastKind() == CK_NoOp || ic->getCastKind() == CK_LValueToRValue) return ptr(ic->getSubExpr());
      if (ic->getCastKind() == CK_ArrayToPointerDecay) {
        const Place arr = place(ic->getSubExpr());
        const auto *at = ctx_.getAsConstantArrayType(arr.type);
        if (!at) fail(Code::OpUnsupported, e->getBeginLoc(), "not an array of constant size");
        return {arr.space, arr.off, at->getElementType(), at->getSize().getZExtValue()};
      }
    }
    if (const auto *d = dyn_cast<DeclRefExpr>(e))
      if (const auto *v = dyn_cast<VarDecl>(d->getDecl())) {
        auto it = ptrs_.find(v);
        if (it != ptrs_.end()) return it->second;
      }
    if (const auto *u = dyn_cast<UnaryOperator>(e))
      if (u->getOpcode() == UO_AddrOf) {
        const Place p = place(u->getSubExpr());
        return {p.space, p.off, p.type, 1};
      }
    fail(Code::OpPointer, e->getBeginLoc(),
         "an operator dereferences only in, inout and the pointer parameters of its helper functions");
  }

  VK kind(QualType t, SourceLocation where) {
    VK k;
    if (!scalar_kind(t, &k)) fail(Code::OpUnsupported, where, "the type " + t.getAsString() + " is not a scalar the VM has");
    return k;
  }

  // The element as it was on entry: a load (one per place).
  int32_t original(int space, uint32_t off, VK k) {
    static const uint8_t ld[] = {CAD_VM_LD_I8, CAD_VM_LD_U8, CAD_VM_LD_I16, CAD_VM_LD_U16, CAD_VM_LD_I32,
                                 CAD_VM_LD_U32, CAD_VM_LD_64, CAD_VM_LD_64, CAD_VM_LD_U32, CAD_VM_LD_64};
    return node(ld[static_cast<int>(k)], -1, -1, -1, off, static_cast<uint8_t>(space));
  }

  int32_t load(const Place &p, SourceLocation where, const std::string &what) {
    const VK k = kind(p.type, where);
    auto it = env_.find({p.space, p.off});
    if (it != env_.end()) return it->second;
    if (p.space == kIn || p.space == kInout) return original(p.space, p.off, k);
    fail(Code::OpUndefined, where, what + " may be read before it is assigned");
  }

  void store(const Place &p, int32_t v, SourceLocation where) {
    if (p.space == kIn) fail(Code::OpPointer, where, "in is read-only: an operator writes only inout");
    // Both sides of ?:, && and || are evaluated: only what they declare
    // themselves (a helper's locals) may be assigned there.
    if (pure_ && p.space < pure_floor_)
      fail(Code::OpUnsupported, where, "an assignment inside ?:, && or || is not supported: write it as a statement");
    kinds_[{p.space, p.off}] = kind(p.type, where);
    env_[{p.space, p.off}] = v;
  }

  // The source text of an expression, for messages: "p.y", "in->v[2]".
  std::string name_of(const Expr *e) {
    std::string text;
    llvm::raw_string_ostream os(text);
    e->IgnoreParenImpCasts()->printPretty(os, nullptr, ctx_.getPrintingPolicy());
    os.flush();
    return text.size() > 60 || text.empty() ? "the value" : text;
  }

  // The C path of the scalar at byte off of type t: ".y", "[2].re".
  std::string path_of(QualType t, uint32_t off) {
    VK k;
    if (scalar_kind(t, &k)) return "";
    t = t.getCanonicalType();
    if (const auto *at = ctx_.getAsConstantArrayType(t)) {
      const uint32_t es = static_cast<uint32_t>(ctx_.getTypeSizeInChars(at->getElementType()).getQuantity());
      const uint32_t i = es ? off / es : 0;
      return "[" + std::to_string(i) + "]" + path_of(at->getElementType(), off - i * es);
    }
    if (const auto *rt = t->getAs<RecordType>()) {
      const FieldDecl *best = nullptr;
      uint32_t best_off = 0;
      for (const FieldDecl *f : rt->getDecl()->fields()) {
        const uint32_t fo = static_cast<uint32_t>(ctx_.getFieldOffset(f) / 8);
        if (fo <= off) {
          best = f;
          best_off = fo;
        }
      }
      if (best) return "." + best->getNameAsString() + path_of(best->getType(), off - best_off);
    }
    return "";
  }

  // ---- conversions ----

  // Signed bits a value needs at most (64 if unknown): lets normalize()
  // drop an extension that cannot change the value.
  unsigned sbits(int32_t v, int depth = 0) const {
    if (v < 0 || depth > 8) return 64;
    const Node &n = nodes_[v];
    if (n.code == kConst) {
      const int64_t x = n.imm;
      unsigned b = 1;
      while (b < 64 && (x < -(int64_t{1} << (b - 1)) || x >= (int64_t{1} << (b - 1)))) b++;
      return b;
    }
    switch (n.code) {
      case CAD_VM_LD_I8: return 8;
      case CAD_VM_LD_U8: return 9;
      case CAD_VM_LD_I16: return 16;
      case CAD_VM_LD_U16: return 17;
      case CAD_VM_LD_I32: return 32;
      case CAD_VM_LD_U32: return 33;
      case CAD_VM_SEXT8: return std::min(8u, sbits(n.a, depth + 1));
      case CAD_VM_SEXT16: return std::min(16u, sbits(n.a, depth + 1));
      case CAD_VM_SEXT32: return std::min(32u, sbits(n.a, depth + 1));
      case CAD_VM_ZEXT8: return 9;
      case CAD_VM_ZEXT16: return 17;
      case CAD_VM_ZEXT32: return 33;
      case CAD_VM_ADD:
      case CAD_VM_SUB: return std::min(64u, std::max(sbits(n.a, depth + 1), sbits(n.b, depth + 1)) + 1);
      case CAD_VM_SEL: return std::max(sbits(n.b, depth + 1), sbits(n.c, depth + 1));
      default: return cad_vm_opcode_format(n.code) == CAD_VMF_CMP ? 2 : 64;
    }
  }

  int32_t normalize(int32_t v, VK k) {
    if ((k == VK::I8 && sbits(v) <= 8) || (k == VK::I16 && sbits(v) <= 16) || (k == VK::I32 && sbits(v) <= 32))
      return v;
    switch (k) {
      case VK::I8: return node(CAD_VM_SEXT8, v);
      case VK::U8: return node(CAD_VM_ZEXT8, v);
      case VK::I16: return node(CAD_VM_SEXT16, v);
      case VK::U16: return node(CAD_VM_ZEXT16, v);
      case VK::I32: return node(CAD_VM_SEXT32, v);
      case VK::U32: return node(CAD_VM_ZEXT32, v);
      default: return v;
    }
  }

  int32_t convert(int32_t v, VK from, VK to) {
    if (from == to) return v;
    if (!is_float(from) && !is_float(to)) return bytes_of(to) == 8 ? v : normalize(v, to);
    if (!is_float(from)) {
      const bool u = from == VK::U64;
      if (to == VK::F64) return node(u ? CAD_VM_CVT_F64_U64 : CAD_VM_CVT_F64_S64, v);
      return node(u ? CAD_VM_CVT_F32_U64 : CAD_VM_CVT_F32_S64, v);
    }
    if (is_float(to)) return node(to == VK::F64 ? CAD_VM_CVT_F64_F32 : CAD_VM_CVT_F32_F64, v);
    const bool d = from == VK::F64;
    // As gcc on x86-64: 32-bit cvttsd2si for int and narrower signed or
    // unsigned types, 64-bit for long and unsigned int, gcc's sequence for
    // unsigned long.
    switch (to) {
      case VK::I64: return node(d ? CAD_VM_CVT_S64_F64 : CAD_VM_CVT_S64_F32, v);
      case VK::U64: return node(d ? CAD_VM_CVT_U64_F64 : CAD_VM_CVT_U64_F32, v);
      case VK::U32: return normalize(node(d ? CAD_VM_CVT_S64_F64 : CAD_VM_CVT_S64_F32, v), VK::U32);
      case VK::I32: return node(d ? CAD_VM_CVT_S32_F64 : CAD_VM_CVT_S32_F32, v);
      default: return normalize(node(d ? CAD_VM_CVT_S32_F64 : CAD_VM_CVT_S32_F32, v), to);
    }
  }

  static uint64_t fbits(double d) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
  }
  static uint64_t sbits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  int32_t fconst(double d, VK k) { return konst(k == VK::F64 ? fbits(d) : sbits(static_cast<float>(d))); }

  bool is_boolean(int32_t v) const {
    if (is_const(v)) return cval(v) <= 1;
    return cad_vm_opcode_format(nodes_[v].code) == CAD_VMF_CMP ||
           ((nodes_[v].code == CAD_VM_AND || nodes_[v].code == CAD_VM_OR) && is_boolean(nodes_[v].a) &&
            is_boolean(nodes_[v].b));
  }

  // 0 or 1: whether v (of kind k) is non-zero, as C's truth.
  int32_t truth(int32_t v, VK k) {
    if (is_float(k)) return node(k == VK::F64 ? CAD_VM_FNE : CAD_VM_SNE, v, fconst(0.0, k));
    if (is_boolean(v)) return v;
    return node(CAD_VM_NE, v, konst(0));
  }

  // ---- expressions ----

  // Side effects are allowed only where C sequences them for us: not in
  // the operands of ?:, && and ||, which are evaluated eagerly here.
  struct Pure {
    Lowering &l;
    bool saved;
    int saved_floor;
    explicit Pure(Lowering &x) : l(x), saved(x.pure_), saved_floor(x.pure_floor_) {
      if (!l.pure_) l.pure_floor_ = l.next_space_;
      l.pure_ = true;
    }
    ~Pure() {
      l.pure_ = saved;
      l.pure_floor_ = saved_floor;
    }
  };

  int32_t arith(BinaryOperatorKind op, int32_t a, int32_t b, VK k, SourceLocation where) {
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

  int32_t compare(BinaryOperatorKind op, int32_t a, int32_t b, VK k) {
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
  int32_t rv(const Expr *e) {
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
  int32_t constant(const CallExpr *c) {
    Expr::EvalResult r;
    c->EvaluateAsRValue(r, ctx_);
    const VK k = kind(c->getType(), c->getBeginLoc());
    if (r.Val.isFloat())
      return konst(r.Val.getFloat().bitcastToAPInt().getZExtValue() & (k == VK::F32 ? 0xffffffffull : ~0ull));
    return normalize(konst(r.Val.getInt().getZExtValue()), k);
  }

  int32_t cast_expr(const CastExpr *c) {
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
  void rv_any(const Expr *e) {
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

  int32_t unary(const UnaryOperator *u) {
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
  std::vector<int32_t> agg(const Expr *e) {
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

  void store_leaves(const Place &dst, const std::vector<int32_t> &vals, SourceLocation where) {
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
  std::vector<int32_t> inline_call(const CallExpr *call) {
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

  int32_t binary(const BinaryOperator *b) {
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

  int32_t builtin(const CallExpr *call) {
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

  // ---- statements ----

  // The statements after the current one, up to the end of the function.
  struct Cont {
    const std::vector<const Stmt *> *list;
    size_t from;
    const Cont *next;
  };
  enum Flow { kFalls, kLeft };  // kLeft: the function has been run to its end

  static std::vector<const Stmt *> as_list(const Stmt *s) {
    if (!s) return {};
    if (const auto *cs = dyn_cast<CompoundStmt>(s)) return {cs->body_begin(), cs->body_end()};
    return {s};
  }

  static bool has_return(const Stmt *s) {
    if (!s) return false;
    if (isa<ReturnStmt>(s)) return true;
    for (const Stmt *c : s->children())
      if (has_return(c)) return true;
    return false;
  }

  Flow block(const std::vector<const Stmt *> &list, size_t from, const Cont *k) {
    for (size_t i = from; i < list.size(); i++) {
      const Cont rest{&list, i + 1, k};
      if (stmt(list[i], &rest) == kLeft) return kLeft;
    }
    if (k) return block(*k->list, k->from, k->next);
    return kFalls;
  }

  Flow stmt(const Stmt *s, const Cont *rest) {
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
  void merge(int32_t c, const std::map<Key, int32_t> &then_env) {
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

  void loop(const Stmt *s) {
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

  void declare(const VarDecl *v) {
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

  void initialise(const Place &p, const Expr *init) {
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

  void zero(const Place &p, SourceLocation where) {
    std::vector<std::pair<uint32_t, QualType>> ls;
    leaves(ctx_, p.type, 0, &ls);
    for (auto &[off, t] : ls) store({p.space, p.off + off, t}, konst(0), where);
  }

  // ---- scheduling, register allocation, emission ----

  struct Store {
    uint32_t off;
    VK kind;
    int32_t value;
  };

  UserOp emit() {
    std::vector<Store> stores;
    for (auto [k, v] : env_) {
      if (k.first != kInout) continue;
      const VK kk = kinds_.at(k);
      if (v == original(kInout, k.second, kk)) continue;  // unchanged
      // A store writes the low bytes only: an extension from at least as
      // many bits right before it changes nothing.
      static const uint8_t ext_bits[][2] = {{CAD_VM_SEXT8, 8},   {CAD_VM_ZEXT8, 8},   {CAD_VM_SEXT16, 16},
                                            {CAD_VM_ZEXT16, 16}, {CAD_VM_SEXT32, 32}, {CAD_VM_ZEXT32, 32}};
      for (const auto &e : ext_bits)
        if (nodes_[v].code == e[0] && e[1] >= 8 * bytes_of(kk)) v = nodes_[v].a;
      stores.push_back({k.second, kk, v});
    }
    // Order: the values in a depth-first order from each store, each store
    // after every load it may overlap (in and inout may be one element).
    std::vector<char> emitted(nodes_.size(), 0), live(nodes_.size(), 0);
    std::vector<int32_t> stack;
    for (const Store &s : stores) stack.push_back(s.value);
    while (!stack.empty()) {
      const int32_t v = stack.back();
      stack.pop_back();
      if (v < 0 || live[v]) continue;
      live[v] = 1;
      stack.push_back(nodes_[v].a);
      stack.push_back(nodes_[v].b);
      stack.push_back(nodes_[v].c);
    }
    struct Item {
      int32_t value;   // >= 0: compute this node
      int store = -1;  // >= 0: the store of stores[store]
    };
    std::vector<Item> seq;
    std::function<void(int32_t)> visit = [&](int32_t v) {
      if (v < 0 || emitted[v]) return;
      const Node &n = nodes_[v];
      if (n.code == CAD_VM_SEL) {
        visit(n.b);
        visit(n.c);
        visit(n.a);  // the condition last: a compare right before its select
      } else {
        visit(n.a);
        visit(n.b);
        visit(n.c);
      }
      emitted[v] = 1;
      seq.push_back({v});
    };
    for (size_t i = 0; i < stores.size(); i++) {
      visit(stores[i].value);
      const uint32_t lo = stores[i].off, hi = lo + bytes_of(stores[i].kind);
      for (size_t v = 0; v < nodes_.size(); v++) {
        const Node &n = nodes_[v];
        if (!live[v] || emitted[v] || cad_vm_opcode_format(n.code) != CAD_VMF_LD) continue;
        const uint32_t nlo = static_cast<uint32_t>(n.imm), nhi = nlo + cad_vm_opcode_width(n.code);
        if (nlo < hi && lo < nhi) visit(static_cast<int32_t>(v));
      }
      seq.push_back({-1, static_cast<int>(i)});
    }
    return allocate(seq, stores);
  }

  template <typename Item>
  UserOp allocate(const std::vector<Item> &seq, const std::vector<Store> &stores) {
    // Uses of each value, by position in seq.
    std::unordered_map<int32_t, std::vector<size_t>> uses;
    for (size_t p = 0; p < seq.size(); p++) {
      if (seq[p].value >= 0) {
        const Node &n = nodes_[seq[p].value];
        for (int32_t x : {n.a, n.b, n.c})
          if (x >= 0) uses[x].push_back(p);
      } else {
        uses[stores[seq[p].store].value].push_back(p);
      }
    }
    auto next_use = [&](int32_t v, size_t after) -> size_t {
      auto it = uses.find(v);
      if (it == uses.end()) return SIZE_MAX;
      auto u = std::upper_bound(it->second.begin(), it->second.end(), after);
      return u == it->second.end() ? SIZE_MAX : *u;
    };
    std::vector<int32_t> reg_of(nodes_.size(), -1), slot_of(nodes_.size(), -1);
    int32_t holder[CAD_VM_NREGS], slot_holder[CAD_VM_NSLOTS];
    // freed[r]: how many instructions had been emitted when register r was
    // last released; -1 while it has never held a value.
    long freed[CAD_VM_NREGS];
    std::fill(std::begin(holder), std::end(holder), -1);
    std::fill(std::begin(freed), std::end(freed), -1L);
    std::fill(std::begin(slot_holder), std::end(slot_holder), -1);
    SourceLocation at = fd_->getLocation();  // of the statement whose code is emitted
    std::vector<cad_vm_insn> code;
    std::vector<uint64_t> consts;
    std::map<uint64_t, int32_t> const_index;

    // A value that can be computed again instead of kept: a constant, or a
    // load of bytes that no store of the operator overwrites.
    auto remat_ok = [&](int32_t v) {
      const Node &n = nodes_[v];
      if (n.code == kConst) return true;
      if (cad_vm_opcode_format(n.code) != CAD_VMF_LD) return false;
      const uint32_t lo = static_cast<uint32_t>(n.imm), hi = lo + cad_vm_opcode_width(n.code);
      for (const Store &s : stores)
        if (lo < s.off + bytes_of(s.kind) && s.off < hi) return false;
      return true;
    };
    auto push = [&](const cad_vm_insn &in) {
      if (code.size() + 1 >= CAD_VM_MAX_INSNS)
        fail(Code::OpTooBig, at,
             "the operator needs more than " + std::to_string(CAD_VM_MAX_INSNS) + " VM instructions");
      code.push_back(in);
    };
    // Register r's value leaves it (it stays in its slot, if spilled).
    auto release = [&](int r) {
      reg_of[holder[r]] = -1;
      holder[r] = -1;
      freed[r] = static_cast<long>(code.size());
    };
    // A free register at position p; never one of keep.  When all are
    // taken, the value used furthest ahead leaves its register (Belady):
    // a constant or a load that no store overwrites is computed again
    // when it is next needed, any other value is spilled to a slot (once:
    // values never change) and filled back.  On a tie, the value that
    // needs no spill goes.  With `avoid` (a floating-point result), the
    // free register released longest ago is taken, never avoid itself
    // when another is free: reusing a register just read would make the
    // result overwrite an operand that the interpreter's fused plans (a
    // deferred product, the NaN check) still need.
    auto grab = [&](size_t p, std::initializer_list<int32_t> keep, int avoid = -1) -> int {
      int oldest = -1;
      for (int r = 0; r < CAD_VM_NREGS; r++)
        if (holder[r] < 0 && r != avoid) {
          if (avoid < 0) return r;
          if (oldest < 0 || freed[r] < freed[oldest]) oldest = r;
        }
      if (oldest >= 0) return oldest;
      if (avoid >= 0 && holder[avoid] < 0) return avoid;
      int best = -1;
      size_t best_use = 0;
      bool best_cheap = false;
      for (int r = 0; r < CAD_VM_NREGS; r++) {
        const int32_t v = holder[r];
        if (std::find(keep.begin(), keep.end(), v) != keep.end()) continue;
        const size_t u = next_use(v, p - 1);
        const bool cheap = remat_ok(v) || slot_of[v] >= 0;
        if (best < 0 || u > best_use || (u == best_use && cheap && !best_cheap)) {
          best = r;
          best_use = u;
          best_cheap = cheap;
        }
      }
      if (best < 0)
        fail(Code::OpTooBig, at, "an instruction needs more than " + std::to_string(CAD_VM_NREGS) + " registers");
      const int32_t v = holder[best];
      if (!remat_ok(v) && slot_of[v] < 0 && best_use != SIZE_MAX) {
        int slot = -1;
        for (int k = 0; k < CAD_VM_NSLOTS && slot < 0; k++)
          if (slot_holder[k] < 0) slot = k;
        if (slot < 0)
          fail(Code::OpTooBig, at,
               "the operator needs more than " + std::to_string(CAD_VM_NREGS + CAD_VM_NSLOTS) +
                   " values at once (the VM's registers and spill slots)");
        cad_vm_insn in{};
        in.code = CAD_VM_SPILL;
        in.a = static_cast<uint8_t>(best);
        in.imm = slot;
        push(in);
        slot_of[v] = slot;
        slot_holder[slot] = v;
      }
      release(best);
      return best;
    };
    std::function<void(int32_t, size_t, std::initializer_list<int32_t>)> materialise;
    auto define = [&](int32_t v, int r) {
      holder[r] = v;
      reg_of[v] = r;
    };
    auto emit_leaf = [&](int32_t v, int r) {
      const Node &n = nodes_[v];
      cad_vm_insn in{};
      in.dst = static_cast<uint8_t>(r);
      if (n.code == kConst) {
        const uint64_t k = static_cast<uint64_t>(n.imm);
        if (static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(k))) == k) {
          in.code = CAD_VM_MOVI;
          in.imm = static_cast<int32_t>(k);
        } else {
          auto it = const_index.find(k);
          if (it == const_index.end()) {
            it = const_index.emplace(k, static_cast<int32_t>(consts.size())).first;
            consts.push_back(k);
          }
          in.code = CAD_VM_LDK;
          in.imm = it->second;
        }
      } else {
        in.code = n.code;
        in.a = n.space;
        in.imm = static_cast<int32_t>(n.imm);
      }
      push(in);
    };
    materialise = [&](int32_t v, size_t p, std::initializer_list<int32_t> keep) {
      if (reg_of[v] >= 0) return;
      const int r = grab(p, keep);
      if (slot_of[v] >= 0) {
        cad_vm_insn in{};
        in.code = CAD_VM_FILL;
        in.dst = static_cast<uint8_t>(r);
        in.imm = slot_of[v];
        push(in);
      } else {
        emit_leaf(v, r);
      }
      define(v, r);
    };
    auto release_dead = [&](size_t p) {
      for (int r = 0; r < CAD_VM_NREGS; r++)
        if (holder[r] >= 0 && next_use(holder[r], p) == SIZE_MAX) release(r);
      for (int k = 0; k < CAD_VM_NSLOTS; k++)
        if (slot_holder[k] >= 0 && next_use(slot_holder[k], p) == SIZE_MAX) {
          slot_of[slot_holder[k]] = -1;
          slot_holder[k] = -1;
        }
    };

    for (size_t p = 0; p < seq.size(); p++) {
      at = node_loc_[seq[p].value >= 0 ? seq[p].value : stores[seq[p].store].value];
      if (seq[p].value < 0) {
        const Store &s = stores[seq[p].store];
        materialise(s.value, p, {s.value});
        cad_vm_insn in{};
        static const uint8_t st[] = {0, CAD_VM_ST_8, CAD_VM_ST_16, 0, CAD_VM_ST_32, 0, 0, 0, CAD_VM_ST_64};
        in.code = st[bytes_of(s.kind)];
        in.a = static_cast<uint8_t>(reg_of[s.value]);
        in.imm = static_cast<int32_t>(s.off);
        push(in);
        release_dead(p);
        continue;
      }
      const int32_t v = seq[p].value;
      const Node &n = nodes_[v];
      if (n.code == kConst || cad_vm_opcode_format(n.code) == CAD_VMF_LD) {
        if (next_use(v, p) == SIZE_MAX) continue;
        materialise(v, p, {v});
        continue;
      }
      for (int32_t x : {n.a, n.b, n.c})
        if (x >= 0) materialise(x, p, {n.a, n.b, n.c});
      cad_vm_insn in{};
      in.code = n.code;
      in.a = static_cast<uint8_t>(reg_of[n.a]);
      if (n.b >= 0) in.b = static_cast<uint8_t>(reg_of[n.b]);
      if (n.code == CAD_VM_SEL) in.imm = reg_of[n.c];
      // Operands whose last use this is free their registers first, so
      // that the result may take one of them.
      release_dead(p);
      // A floating-point result written over its first operand makes the
      // interpreter take its exact two-NaN path for every element (it
      // needs the operand after the result): another register if one is
      // free.
      const bool fp = n.code >= CAD_VM_FADD && n.code <= CAD_VM_SSQRT &&
                      cad_vm_opcode_format(n.code) == CAD_VMF_BIN;
      const int r = grab(p + 1, {n.a, n.b, n.c}, fp ? static_cast<int>(in.a) : -1);
      in.dst = static_cast<uint8_t>(r);
      push(in);
      define(v, r);
      if (next_use(v, p) == SIZE_MAX) release(r);
    }
    cad_vm_insn exit_insn{};
    exit_insn.code = CAD_VM_EXIT;
    code.push_back(exit_insn);

    UserOp op;
    op.name = fd_->getNameAsString();
    op.elem_size = static_cast<uint32_t>(ctx_.getTypeSizeInChars(elem_).getQuantity());
    op.code = std::move(code);
    op.consts = std::move(consts);
    op.type = elem_.getAsString();
    std::vector<std::pair<uint32_t, QualType>> ls;
    leaves(ctx_, elem_, 0, &ls);
    static const char *names[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64"};
    for (auto &[off, t] : ls) {
      VK k;
      scalar_kind(t, &k);
      op.fields.push_back({off, is_bool(t) ? "bool" : names[static_cast<int>(k)]});
    }
    return op;
  }

  ASTContext &ctx_;
  const FunctionDecl *fd_;
  const ParmVarDecl *in_ = nullptr, *inout_ = nullptr;
  QualType elem_;
  std::vector<Node> nodes_;
  std::map<std::tuple<uint8_t, int32_t, int32_t, int32_t, int64_t, uint8_t>, int32_t> cse_;
  std::map<Key, int32_t> env_;
  std::map<Key, VK> kinds_;
  std::map<const VarDecl *, int> locals_;
  std::map<const VarDecl *, PtrBind> ptrs_;
  std::map<std::tuple<uint8_t, uint64_t, uint64_t>, uint64_t> folded_;
  struct Frame {
    int ret_space;  // -1: void
    QualType ret_type;
  };
  std::vector<Frame> frames_;  // the helpers being inlined
  int next_space_ = 2;
  bool pure_ = false;
  int pure_floor_ = 0;  // under pure_, the first space that may be assigned
  uint64_t steps_ = 0;
  uint64_t unrolled_ = 0;
  SourceLocation stmt_loc_;  // of the statement being lowered
  std::vector<SourceLocation> node_loc_;  // per node: the statement that made it
};

// ---------------------------------------------------------------------
// Bounds on the input, checked before clang parses it.
//
// clang's parser recurses once per nested unary operator, parenthesis and
// right-associative operator (?:, =), and its semantic checks and ours
// recurse over the tree it builds, so a few kilobytes of nesting overflow
// a thread's stack.  The compilation runs on a thread of its own with a
// large stack (kStackBytes), and a pre-pass over the preprocessed tokens
// of the file (before any parse) enforces two limits that keep every
// recursion far inside it: the tokens of the file after macro expansion
// (kMaxTokens, which also stops a macro that expands exponentially), and
// the length of a run of prefix operators and opening parentheses
// (kMaxPrefixRun, like clang's own -fbracket-depth, which stays 256).
// The tree depth is checked again after the parse (kMaxDepth, for chains
// of binary operators).
constexpr size_t kStackBytes = size_t{1} << 30;
constexpr size_t kMaxTokens = size_t{1} << 16;
constexpr unsigned kMaxPrefixRun = 256;
constexpr unsigned kMaxDepth = 1024;

// What the pre-pass found, in memory shared with the child that runs it.
struct TokenLimit {
  int state = 0;  // 0: running, 1: within the limits, 2: a limit exceeded
  char message[160] = {};
  unsigned line = 0, col = 0;            // where the limit was exceeded
  unsigned last_line = 0, last_col = 0;  // the last place of the file expanded
};

void note_place(const clang::SourceManager &csm, SourceLocation at, unsigned *line, unsigned *col) {
  const PresumedLoc p = csm.getPresumedLoc(at);
  if (p.isValid()) {
    *line = p.getLine();
    *col = p.getColumn();
  }
}

// Where the file's macros are expanded: the last place reached, so that a
// macro whose expansion exhausts the child's limits can be pointed at.
class ExpansionPlace : public PPCallbacks {
 public:
  ExpansionPlace(const clang::SourceManager &csm, TokenLimit *out) : csm_(csm), out_(out) {}
  void MacroExpands(const Token &name, const MacroDefinition &, SourceRange, const MacroArgs *) override {
    const SourceLocation at = csm_.getExpansionLoc(name.getLocation());
    if (csm_.isWrittenInMainFile(at)) note_place(csm_, at, &out_->last_line, &out_->last_col);
  }

 private:
  const clang::SourceManager &csm_;
  TokenLimit *out_;
};

class TokenGuard : public PreprocessorFrontendAction {
 public:
  explicit TokenGuard(TokenLimit *out) : out_(out) {}

 protected:
  void ExecuteAction() override {
    Preprocessor &pp = getCompilerInstance().getPreprocessor();
    const clang::SourceManager &csm = pp.getSourceManager();
    pp.addPPCallbacks(std::make_unique<ExpansionPlace>(csm, out_));
    pp.EnterMainSourceFile();
    Token tok;
    size_t count = 0;
    unsigned run = 0;
    for (;;) {
      pp.Lex(tok);
      if (tok.is(tok::eof)) break;
      const SourceLocation at = csm.getExpansionLoc(tok.getLocation());
      if (!csm.isWrittenInMainFile(at)) continue;
      const bool prefix = tok.isOneOf(tok::minus, tok::plus, tok::exclaim, tok::tilde, tok::star, tok::amp,
                                      tok::plusplus, tok::minusminus, tok::l_paren) ||
                          tok.isOneOf(tok::l_square, tok::l_brace, tok::question, tok::colon, tok::equal);
      run = prefix ? run + 1 : 0;
      const char *why = nullptr;
      if (++count > kMaxTokens)
        why = "the file has more than 65536 tokens after macro expansion: an operator is a small function";
      else if (run > kMaxPrefixRun)
        why = "the expression is nested more than 256 levels deep (unary operators, parentheses, ?:)";
      if (why) {
        note_place(csm, at, &out_->line, &out_->col);
        std::strncpy(out_->message, why, sizeof(out_->message) - 1);
        out_->state = 2;
        return;
      }
    }
    out_->state = 1;
  }

 private:
  TokenLimit *out_;
};

// Runs the pre-pass in a child process with bounded memory and CPU time:
// one macro can expand to more tokens than memory holds inside a single
// call of clang's lexer, which nothing in this process could interrupt.
// Empty if the file is within the limits, else the error.
constexpr unsigned kPrepassSeconds = 5;
constexpr size_t kPrepassBytes = size_t{1} << 30;

std::optional<std::pair<Loc, std::string>> prepass(const std::vector<std::string> &args, FileManager *files,
                                                   uint32_t file) {
  void *page = mmap(nullptr, sizeof(TokenLimit), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return std::make_pair(Loc{file, 1, 1, ""}, std::string("cannot map memory for the pre-pass"));
  auto *limit = new (page) TokenLimit();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    long pages = 0;
    if (FILE *f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t as = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + kPrepassBytes;
    const struct rlimit mem = {as, as}, cpu = {kPrepassSeconds, kPrepassSeconds + 1};
    setrlimit(RLIMIT_AS, &mem);
    setrlimit(RLIMIT_CPU, &cpu);
    IgnoringDiagConsumer quiet;  // clang's own errors are reported by the parse
    tooling::ToolInvocation pre(args, std::make_unique<TokenGuard>(limit), files);
    pre.setDiagnosticConsumer(&quiet);
    pre.run();
    _exit(0);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  std::optional<std::pair<Loc, std::string>> result;
  if (pid < 0) {
    result = std::make_pair(Loc{file, 1, 1, ""}, "cannot start the pre-pass (" + std::string(std::strerror(errno)) + ")");
  } else if (limit->state == 2) {
    result = std::make_pair(Loc{file, limit->line, limit->col, ""}, std::string(limit->message));
  } else if (limit->state != 1) {
    // Killed by its limits (or clang failed): a macro expanded too far.
    const unsigned line = limit->last_line ? limit->last_line : 1, col = limit->last_line ? limit->last_col : 1;
    result = std::make_pair(Loc{file, line, col, ""},
                            "expanding the file's macros exceeds the compiler's limits (" +
                                std::to_string(kPrepassBytes >> 30) + " GiB, " + std::to_string(kPrepassSeconds) +
                                " s of CPU): a macro expands too much");
  }
  munmap(page, sizeof(TokenLimit));
  return result;
}

// The depth of the deepest statement or expression under s, and the
// statement it is in (no recursion: the tree may be deep).
unsigned tree_depth(const Stmt *s, SourceLocation *deepest) {
  unsigned best = 0;
  struct Item {
    const Stmt *x;
    unsigned depth;
    SourceLocation stmt;  // of the statement it is in, if an expression
    bool in_expr;
  };
  std::vector<Item> stack{{s, 1, s->getBeginLoc(), false}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    if (!it.x) continue;
    const SourceLocation at = it.in_expr ? it.stmt : it.x->getBeginLoc();
    if (it.depth > best) {
      best = it.depth;
      *deepest = at;
    }
    if (it.depth > kMaxDepth) return it.depth;
    for (const Stmt *c : it.x->children()) stack.push_back({c, it.depth + 1, at, isa<Expr>(it.x)});
  }
  return best;
}

// Runs f on a thread with a stack of kStackBytes (reserved, committed as
// it is touched).  False if no such thread could be made.
bool run_on_big_stack(const std::function<void()> &f) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setstacksize(&attr, kStackBytes);
  pthread_t t;
  auto thunk = [](void *arg) -> void * {
    (*static_cast<const std::function<void()> *>(arg))();
    return nullptr;
  };
  const bool made = pthread_create(&t, &attr, thunk, const_cast<std::function<void()> *>(&f)) == 0;
  pthread_attr_destroy(&attr);
  if (made) pthread_join(t, nullptr);
  return made;
}

// ---------------------------------------------------------------------
// The front-end action

class OpFinder : public ast_matchers::MatchFinder::MatchCallback {
 public:
  void run(const ast_matchers::MatchFinder::MatchResult &r) override {
    if (const auto *f = r.Nodes.getNodeAs<FunctionDecl>("op")) found.push_back(f);
  }
  std::vector<const FunctionDecl *> found;
};

// The marker's argument, or "" if fd has no CAD_OP marker.
std::string marker(const FunctionDecl *fd, SourceLocation *where) {
  for (const auto *a : fd->specific_attrs<AnnotateAttr>()) {
    const std::string s = a->getAnnotation().str();
    if (s.rfind("cad_op:", 0) == 0) {
      *where = a->getLocation();
      return s.substr(7);
    }
  }
  return "";
}

struct Shared {
  Locations *locs;
  Diagnostics *diags;
  std::vector<UserOp> *out;
};

class OpConsumer : public ASTConsumer {
 public:
  explicit OpConsumer(Shared s) : s_(s) {}

  void HandleTranslationUnit(ASTContext &ctx) override {
    if (ctx.getDiagnostics().hasErrorOccurred()) return;
    using namespace ast_matchers;
    OpFinder finder_cb;
    MatchFinder finder;
    finder.addMatcher(functionDecl(hasAttr(attr::Annotate)).bind("op"), &finder_cb);
    finder.matchAST(ctx);
    const clang::SourceManager &csm = ctx.getSourceManager();
    std::set<const FunctionDecl *> seen;
    std::map<std::string, SourceLocation> names;
    for (const FunctionDecl *f : finder_cb.found) {
      SourceLocation mloc;
      const std::string order = marker(f, &mloc);
      if (order.empty()) continue;
      const FunctionDecl *def = f->getDefinition();
      if (!def) {
        error(csm, Code::OpSignature, f->getLocation(), "operator " + f->getNameAsString() + " is declared but not defined");
        continue;
      }
      if (!seen.insert(def->getCanonicalDecl()).second) continue;
      if (order != "commutative" && order != "noncommutative") {
        error(csm, Code::OpSignature, mloc, "CAD_OP takes commutative or noncommutative, not '" + order + "'");
        continue;
      }
      if (names.count(def->getNameAsString())) {
        error(csm, Code::OpNone, def->getLocation(), "a second operator named " + def->getNameAsString());
        continue;
      }
      names[def->getNameAsString()] = def->getLocation();
      if (!signature(ctx, def)) continue;
      SourceLocation deep;
      if (tree_depth(def->getBody(), &deep) > kMaxDepth) {
        error(csm, Code::OpTooBig, deep,
              "the code is nested more than " + std::to_string(kMaxDepth) + " levels deep: split the expression into statements");
        continue;
      }
      std::vector<OpError> errors;
      std::vector<const FunctionDecl *> path, bodies;
      std::set<const FunctionDecl *> done{def};
      helpers_of(def, &path, &done, &bodies, &errors);
      for (const FunctionDecl *h : bodies) {
        if (h != def && tree_depth(h->getBody(), &deep) > kMaxDepth)
          errors.push_back({Code::OpTooBig, deep, "the code is nested more than " + std::to_string(kMaxDepth) +
                                                      " levels deep: split the expression into statements"});
        Checker(ctx, h, &errors).TraverseStmt(h->getBody());
      }
      for (const OpError &e : errors) error(csm, e.code, e.where, e.message);
      if (!errors.empty()) continue;
      try {
        UserOp op = Lowering(ctx, def).run();
        op.commutative = order == "commutative";
        const Loc at = s_.locs->at(csm, def->getLocation());
        op.line = at.line;
        op.col = at.col;
        const std::string why = userop_verify(op);
        if (!why.empty()) {
          error(csm, Code::CoreReject, def->getLocation(), "the core verifier rejects the code emitted for " + op.name + ": " + why);
          continue;
        }
        s_.out->push_back(std::move(op));
      } catch (const OpError &e) {
        error(csm, e.code, e.where, e.message);
      }
    }
  }

 private:
  void error(const clang::SourceManager &csm, Code code, SourceLocation l, const std::string &m) {
    if (!reported_.insert({l.getRawEncoding(), m}).second) return;
    s_.diags->error(code, s_.locs->at(csm, l), m);
  }

  bool signature(ASTContext &ctx, const FunctionDecl *f) {
    const clang::SourceManager &csm = ctx.getSourceManager();
    const std::string form = "an operator is void " + f->getNameAsString() + "(const T *in, T *inout)";
    if (f->isVariadic() || f->getNumParams() != 2 || !f->getReturnType()->isVoidType()) {
      error(csm, Code::OpSignature, f->getLocation(), form);
      return false;
    }
    const QualType p0 = f->getParamDecl(0)->getType(), p1 = f->getParamDecl(1)->getType();
    if (!p0->isPointerType() || !p1->isPointerType()) {
      error(csm, Code::OpSignature, f->getLocation(), form);
      return false;
    }
    const QualType t0 = p0->getPointeeType(), t1 = p1->getPointeeType();
    if (t0.isVolatileQualified() || t1.isVolatileQualified() || p0.isVolatileQualified() || p1.isVolatileQualified()) {
      error(csm, Code::OpVolatile, f->getLocation(), "volatile is not allowed in an operator");
      return false;
    }
    if (!t0.isConstQualified() || t1.isConstQualified() ||
        !ctx.hasSameUnqualifiedType(t0, t1)) {
      error(csm, Code::OpSignature, f->getParamDecl(0)->getLocation(),
            form + ": in points to const T and inout to the same T, not const");
      return false;
    }
    const std::string p = type_problem(ctx, t1);
    if (!p.empty()) {
      error(csm, Code::OpSignature, f->getParamDecl(1)->getLocation(),
            "the element type " + t1.getAsString() + " has " + p + ": it must be a scalar or a struct of scalars");
      return false;
    }
    const int64_t size = ctx.getTypeSizeInChars(t1).getQuantity();
    if (size < 1 || size > CAD_VM_MAX_ELEM) {
      error(csm, Code::OpSignature, f->getParamDecl(1)->getLocation(),
            "the element type is " + std::to_string(size) + " bytes: at most " + std::to_string(CAD_VM_MAX_ELEM));
      return false;
    }
    return true;
  }

  Shared s_;
  std::set<std::pair<unsigned, std::string>> reported_;  // a helper's error, once for all its callers
};

class OpAction : public ASTFrontendAction {
 public:
  explicit OpAction(Shared s) : s_(s) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &, llvm::StringRef) override {
    return std::make_unique<OpConsumer>(s_);
  }

 private:
  Shared s_;
};


bool compile_on_this_thread(const std::string &path, const OpcOptions &opts, SourceManager &sm, Diagnostics *diags,
                            std::vector<UserOp> *out);

}  // namespace

bool compile_op_file(const std::string &path, const OpcOptions &opts, SourceManager &sm, Diagnostics *diags,
                     std::vector<UserOp> *out) {
  bool ok = false;
  if (!run_on_big_stack([&] { ok = compile_on_this_thread(path, opts, sm, diags, out); })) {
    diags->error(Code::Io, Loc{}, "cannot start the compiler's thread (" + std::string(std::strerror(errno)) + ")");
    return false;
  }
  return ok;
}

namespace {

bool compile_on_this_thread(const std::string &path, const OpcOptions &opts, SourceManager &sm, Diagnostics *diags,
                            std::vector<UserOp> *out) {
  std::string error;
  const uint32_t file = sm.load(path, &error);
  if (!file) {
    diags->error(Code::Io, Loc{}, error);
    return false;
  }
  const std::string &text = sm.file(file).text;
  const size_t before_errors = diags->error_count();
  Locations locs(sm, file, path);
  std::vector<UserOp> ops;

  llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> ofs(
      new llvm::vfs::OverlayFileSystem(llvm::vfs::getRealFileSystem()));
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> mfs(new llvm::vfs::InMemoryFileSystem);
  ofs->pushOverlay(mfs);
  mfs->addFile(path, 0, llvm::MemoryBuffer::getMemBufferCopy(text, path));
  llvm::IntrusiveRefCntPtr<FileManager> files(new FileManager(FileSystemOptions(), ofs));
  std::vector<std::string> args = {"cadc-op", "-fsyntax-only", "-x", "c", "-std=gnu11", "-D__CAD_OPC__=1",
                                   "-resource-dir", CAD_CLANG_RESOURCE_DIR, "-ferror-limit=20", "-fno-caret-diagnostics",
                                   "-Wno-unused-function"};
  for (const std::string &d : opts.include_dirs) args.push_back("-I" + d);
  for (const std::string &d : opts.defines) args.push_back("-D" + d);
  args.push_back(path);
  if (auto over = prepass(args, files.get(), file)) {
    diags->error(Code::OpTooBig, over->first, over->second);
    return false;
  }
  Collect collect(locs, diags);
  Shared shared{&locs, diags, &ops};
  tooling::ToolInvocation inv(args, std::make_unique<OpAction>(shared), files.get());
  inv.setDiagnosticConsumer(&collect);
  const bool ran = inv.run();
  if (!ran && diags->error_count() == before_errors)
    diags->error(Code::OpSyntax, Loc{file, 1, 1, ""}, "clang could not parse the file");
  if (diags->error_count() == before_errors && ops.empty())
    diags->error(Code::OpNone, Loc{file, 1, 1, ""},
                 "no operator in this file: mark one with CAD_OP(commutative) or CAD_OP(noncommutative) "
                 "(algorithms/ops/cad_op.h)");
  const std::string base = path.substr(path.find_last_of('/') + 1);
  for (UserOp &op : ops) op.file = base;
  if (diags->error_count() != before_errors) return false;
  for (UserOp &op : ops) out->push_back(std::move(op));
  return true;
}

}  // namespace

}  // namespace cad

extern "C" {
const unsigned long long cad_opc_abi = cad::opc_abi();
const cad::CompileOpFile cad_opc_compile_op_file = cad::compile_op_file;
}
