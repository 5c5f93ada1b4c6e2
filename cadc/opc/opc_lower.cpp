// opc_lower.cpp - lowering an operator to the VM (opc.h, step 4): the value
// graph with constant folding and common subexpressions, the places of
// values (fields of in and inout, locals), conversions between kinds.
#include "opc_priv.h"

#include <cmath>
#include <cstring>

namespace cad {
namespace opc {

Lowering::Lowering(ASTContext &ctx, const FunctionDecl *fd) : ctx_(ctx), fd_(fd) {
  in_ = fd->getParamDecl(0);
  inout_ = fd->getParamDecl(1);
  elem_ = in_->getType()->getPointeeType().getUnqualifiedType();
  ptrs_[in_] = {kIn, 0, elem_, 1};
  ptrs_[inout_] = {kInout, 0, elem_, 1};
  stmt_loc_ = fd->getLocation();
}

UserOp Lowering::run() {
  const auto *body = cast<CompoundStmt>(fd_->getBody());
  std::vector<const Stmt *> list(body->body_begin(), body->body_end());
  block(list, 0, nullptr);
  return emit();
}

int32_t Lowering::node(uint8_t code, int32_t a, int32_t b, int32_t c, int64_t imm, uint8_t space) {
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

// Integer constant folding with the VM's semantics (vm.c).
bool Lowering::fold(uint8_t code, int32_t a, int32_t b, int32_t c, uint64_t *out) const {
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
bool Lowering::fold_float(uint8_t code, int32_t a, int32_t b, uint64_t *out) {
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

Place Lowering::place(const Expr *e) {
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
PtrBind Lowering::ptr(const Expr *e) {
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

VK Lowering::kind(QualType t, SourceLocation where) {
  VK k;
  if (!scalar_kind(t, &k)) fail(Code::OpUnsupported, where, "the type " + t.getAsString() + " is not a scalar the VM has");
  return k;
}

// The element as it was on entry: a load (one per place).
int32_t Lowering::original(int space, uint32_t off, VK k) {
  static const uint8_t ld[] = {CAD_VM_LD_I8, CAD_VM_LD_U8, CAD_VM_LD_I16, CAD_VM_LD_U16, CAD_VM_LD_I32,
                               CAD_VM_LD_U32, CAD_VM_LD_64, CAD_VM_LD_64, CAD_VM_LD_U32, CAD_VM_LD_64};
  return node(ld[static_cast<int>(k)], -1, -1, -1, off, static_cast<uint8_t>(space));
}

int32_t Lowering::load(const Place &p, SourceLocation where, const std::string &what) {
  const VK k = kind(p.type, where);
  auto it = env_.find({p.space, p.off});
  if (it != env_.end()) return it->second;
  if (p.space == kIn || p.space == kInout) return original(p.space, p.off, k);
  fail(Code::OpUndefined, where, what + " may be read before it is assigned");
}

void Lowering::store(const Place &p, int32_t v, SourceLocation where) {
  if (p.space == kIn) fail(Code::OpPointer, where, "in is read-only: an operator writes only inout");
  // Both sides of ?:, && and || are evaluated: only what they declare
  // themselves (a helper's locals) may be assigned there.
  if (pure_ && p.space < pure_floor_)
    fail(Code::OpUnsupported, where, "an assignment inside ?:, && or || is not supported: write it as a statement");
  kinds_[{p.space, p.off}] = kind(p.type, where);
  env_[{p.space, p.off}] = v;
}

// The source text of an expression, for messages: "p.y", "in->v[2]".
std::string Lowering::name_of(const Expr *e) {
  std::string text;
  llvm::raw_string_ostream os(text);
  e->IgnoreParenImpCasts()->printPretty(os, nullptr, ctx_.getPrintingPolicy());
  os.flush();
  return text.size() > 60 || text.empty() ? "the value" : text;
}

// The C path of the scalar at byte off of type t: ".y", "[2].re".
std::string Lowering::path_of(QualType t, uint32_t off) {
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

// Signed bits a value needs at most (64 if unknown): lets normalize()
// drop an extension that cannot change the value.
unsigned Lowering::sbits(int32_t v, int depth) const {
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

int32_t Lowering::normalize(int32_t v, VK k) {
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

int32_t Lowering::convert(int32_t v, VK from, VK to) {
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

uint64_t Lowering::fbits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

uint64_t Lowering::sbits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

bool Lowering::is_boolean(int32_t v) const {
  if (is_const(v)) return cval(v) <= 1;
  return cad_vm_opcode_format(nodes_[v].code) == CAD_VMF_CMP ||
         ((nodes_[v].code == CAD_VM_AND || nodes_[v].code == CAD_VM_OR) && is_boolean(nodes_[v].a) &&
          is_boolean(nodes_[v].b));
}

// 0 or 1: whether v (of kind k) is non-zero, as C's truth.
int32_t Lowering::truth(int32_t v, VK k) {
  if (is_float(k)) return node(k == VK::F64 ? CAD_VM_FNE : CAD_VM_SNE, v, fconst(0.0, k));
  if (is_boolean(v)) return v;
  return node(CAD_VM_NE, v, konst(0));
}

}  // namespace opc
}  // namespace cad
