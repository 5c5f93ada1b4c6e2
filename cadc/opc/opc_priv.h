// opc_priv.h - what the files of the operator compiler share (opc.h
// describes the compiler and its pipeline):
//   opc.cpp          the front-end action and the entry point: finds the
//                    operators, runs the checks, lowers each one;
//   opc_limits.cpp   bounds on the input, checked before clang parses it;
//   opc_check.cpp    the types, the allowed builtins and the checker (what
//                    C an operator may use, with its diagnostics);
//   opc_lower.cpp    lowering: the value graph, places, conversions;
//   opc_lower_expr.cpp  lowering of expressions and helper calls;
//   opc_lower_stmt.cpp  lowering of statements (if-conversion, unrolling);
//   opc_regalloc.cpp the schedule, register allocation and spilling, and
//                    the emitted UserOp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>
#include <clang/AST/Stmt.h>
#include <clang/Basic/FileManager.h>
#include <clang/Basic/SourceLocation.h>

#include "cad_core.h"
#include "opc.h"

namespace cad {
namespace opc {

using namespace clang;

// An error in an operator: thrown to the top of its compilation.
struct OpError {
  Code code;
  SourceLocation where;
  std::string message;
};

[[noreturn]] void fail(Code code, SourceLocation where, std::string message);

// ---------------------------------------------------------------------
// Types (opc_check.cpp)

enum class VK : uint8_t { I8, U8, I16, U16, I32, U32, I64, U64, F32, F64 };

inline bool is_float(VK k) { return k == VK::F32 || k == VK::F64; }
inline bool is_signed(VK k) { return k == VK::I8 || k == VK::I16 || k == VK::I32 || k == VK::I64; }
unsigned bytes_of(VK k);
// The kind of a scalar type; false if it is not one the VM has.
bool scalar_kind(QualType t, VK *out);
bool is_bool(QualType t);
// Why a type cannot be an element or a local ("" if it can).
std::string type_problem(ASTContext &ctx, QualType t);
// The scalar leaves of a type at a byte offset.
void leaves(ASTContext &ctx, QualType t, uint32_t off, std::vector<std::pair<uint32_t, QualType>> *out);

// ---------------------------------------------------------------------
// The allowed builtins (opc_check.cpp)

enum class Builtin { None, Fabs, Fmin, Fmax, Sqrt, IsNan, IsInf, IsInfSign, IsFinite };

// The builtin a call to fd is, or Builtin::None (a helper, or not allowed).
Builtin builtin_of(const FunctionDecl *fd);
extern const char *const kBuiltinList;
// A call that clang evaluates to a constant (INFINITY, NAN...).
bool constant_builtin(const CallExpr *c, const ASTContext &ctx);
// The definition a call inlines, or null (a builtin, or no direct callee).
const FunctionDecl *helper_of(const CallExpr *c);

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
// The checker (opc_check.cpp)

// Checks the body of op (an operator or a helper it calls) against the
// subset of C an operator may use; each error goes to errors.
void check_body(ASTContext &ctx, const FunctionDecl *op, std::vector<OpError> *errors);
// The helpers an operator calls, each once, callees first; recursion
// (direct or through other helpers) is an error at the call that closes
// the cycle.
void helpers_of(const FunctionDecl *f, std::vector<const FunctionDecl *> *path, std::set<const FunctionDecl *> *done,
                std::vector<const FunctionDecl *> *order, std::vector<OpError> *errors);

// ---------------------------------------------------------------------
// Lowering (opc_lower.cpp, opc_lower_expr.cpp, opc_lower_stmt.cpp,
// opc_regalloc.cpp)

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

// A store of the operator's result: a value to a scalar field of inout.
struct Store {
  uint32_t off;
  VK kind;
  int32_t value;
};

// The emitted order: a value to compute, or a store.
struct SeqItem {
  int32_t value;   // >= 0: compute this node
  int store = -1;  // >= 0: the store of stores[store]
};

// The VM code of an operator, from its schedule (opc_regalloc.cpp).
struct Emitted {
  std::vector<cad_vm_insn> code;
  std::vector<uint64_t> consts;
};
Emitted allocate_registers(const std::vector<Node> &nodes, const std::vector<SourceLocation> &node_loc,
                           const std::vector<SeqItem> &seq, const std::vector<Store> &stores, SourceLocation at);

// One operator lowered to VM code: symbolic execution of its body into a
// value graph (nodes_), then the schedule and register allocation.
class Lowering {
 public:
  Lowering(ASTContext &ctx, const FunctionDecl *fd);
  UserOp run();

 private:
  // ---- the value graph ----

  int32_t node(uint8_t code, int32_t a = -1, int32_t b = -1, int32_t c = -1, int64_t imm = 0, uint8_t space = 0);

  int32_t konst(uint64_t v) { return node(kConst, -1, -1, -1, static_cast<int64_t>(v)); }
  bool is_const(int32_t v) const { return v >= 0 && nodes_[v].code == kConst; }
  uint64_t cval(int32_t v) const { return static_cast<uint64_t>(nodes_[v].imm); }

  bool fold(uint8_t code, int32_t a, int32_t b, int32_t c, uint64_t *out) const;
  bool fold_float(uint8_t code, int32_t a, int32_t b, uint64_t *out);

  // ---- places and the environment ----

  Place place(const Expr *e);
  PtrBind ptr(const Expr *e);
  VK kind(QualType t, SourceLocation where);
  int32_t original(int space, uint32_t off, VK k);
  int32_t load(const Place &p, SourceLocation where, const std::string &what);
  void store(const Place &p, int32_t v, SourceLocation where);
  std::string name_of(const Expr *e);
  std::string path_of(QualType t, uint32_t off);

  // ---- conversions ----

  unsigned sbits(int32_t v, int depth = 0) const;
  int32_t normalize(int32_t v, VK k);
  int32_t convert(int32_t v, VK from, VK to);
  static uint64_t fbits(double d);
  static uint64_t sbits(float f);
  int32_t fconst(double d, VK k) { return konst(k == VK::F64 ? fbits(d) : sbits(static_cast<float>(d))); }

  bool is_boolean(int32_t v) const;
  int32_t truth(int32_t v, VK k);

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

  int32_t arith(BinaryOperatorKind op, int32_t a, int32_t b, VK k, SourceLocation where);
  int32_t compare(BinaryOperatorKind op, int32_t a, int32_t b, VK k);
  int32_t rv(const Expr *e);
  int32_t constant(const CallExpr *c);
  int32_t cast_expr(const CastExpr *c);
  void rv_any(const Expr *e);
  int32_t unary(const UnaryOperator *u);
  std::vector<int32_t> agg(const Expr *e);
  void store_leaves(const Place &dst, const std::vector<int32_t> &vals, SourceLocation where);
  std::vector<int32_t> inline_call(const CallExpr *call);
  int32_t binary(const BinaryOperator *b);
  int32_t builtin(const CallExpr *call);

  // ---- statements ----

  // The statements after the current one, up to the end of the function.
  struct Cont {
    const std::vector<const Stmt *> *list;
    size_t from;
    const Cont *next;
  };
  enum Flow { kFalls, kLeft };  // kLeft: the function has been run to its end

  static std::vector<const Stmt *> as_list(const Stmt *s);
  static bool has_return(const Stmt *s);
  Flow block(const std::vector<const Stmt *> &list, size_t from, const Cont *k);
  Flow stmt(const Stmt *s, const Cont *rest);
  void merge(int32_t c, const std::map<Key, int32_t> &then_env);
  void loop(const Stmt *s);
  void declare(const VarDecl *v);
  void initialise(const Place &p, const Expr *init);
  void zero(const Place &p, SourceLocation where);

  // ---- scheduling, register allocation, emission ----

  UserOp emit();
  std::vector<Store> stores_to_emit();
  std::vector<SeqItem> schedule(const std::vector<Store> &stores) const;
  UserOp finish(Emitted e) const;
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
// Bounds on the input (opc_limits.cpp)

// The deepest statement or expression an operator may have (checked
// after the parse, for chains of binary operators).
constexpr unsigned kMaxDepth = 1024;

// The pre-pass over the file's tokens, in a child process; empty if the
// file is within the limits, else the error.
std::optional<std::pair<Loc, std::string>> prepass(const std::vector<std::string> &args, FileManager *files,
                                                   uint32_t file);
// The depth of the deepest statement or expression under s, and the
// statement it is in.
unsigned tree_depth(const Stmt *s, SourceLocation *deepest);
// Runs f on a thread with a large stack; false if none could be made.
bool run_on_big_stack(const std::function<void()> &f);

}  // namespace opc
}  // namespace cad
