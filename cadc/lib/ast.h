// ast.h - the algorithm AST, shared by the DSL and its JSON form.
//
// One Module per file; one or more Algorithms per module.  The parser and
// the JSON reader build it with locations; check() resolves names to
// environment slots, buffers to indexes and functions to ids, and types
// every expression, so that instantiation never looks anything up by name.
// Leading comment lines are kept on the item they precede, so that
// `cadc fmt` can round-trip through JSON.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collective.h"
#include "source.h"

namespace cad {

struct UserOp;  // userop.h
using UserOps = std::vector<std::shared_ptr<const UserOp>>;

enum class Type { Unknown, Int, Bool, Level };

enum class ExprKind {
  Int,     // value
  Bool,    // value 0 / 1
  Name,    // name -> slot
  Level,   // a topology level name (node, package, numa, l3) -> value
  Unary,   // op args[0]
  Binary,  // args[0] op args[1]
  Cond,    // args[0] ? args[1] : args[2]
  Call,    // name(args) -> fn
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// The deepest expression (as a tree) and the deepest nesting of statements
// either form accepts: the compiler walks both recursively, and untrusted
// input must not exhaust its stack.
constexpr uint32_t kMaxNesting = 128;

struct Expr {
  ExprKind kind = ExprKind::Int;
  Loc loc;
  int64_t value = 0;
  std::string name;  // Name, Level, Call
  std::string op;    // Unary, Binary: canonical spelling ("+", "&&", "!", ...)
  std::vector<ExprPtr> args;
  uint32_t depth = 1;  // height of the tree, set by the readers
  // Resolved by check().
  int slot = -1;     // Name
  int fn = -1;       // Call: builtin function; Unary, Binary: operator
  Type type = Type::Unknown;
  // Set by analyse_reads (domain.h): where the size n meets a value that
  // does not depend on it -- the divisor of a value that does, or what n
  // itself is compared with or taken the min or max of.  The sweep probes
  // those values to choose its size classes.
  bool size_boundary = false;
};

ExprPtr clone(const Expr &e);
// Where an expression starts (its leftmost operand), for messages about it
// as a whole.
const Loc &start_of(const Expr &e);

// A range of elements of a buffer: name[lo:hi], or the whole buffer.
struct BufRef {
  std::string name;
  ExprPtr lo, hi;  // both null: the whole buffer
  Loc loc;
  int buffer = -1;  // resolved: index in Algorithm::buffers
};

enum class StmtKind { Let, For, If, Parallel, Fence, Send, Recv, Copy, Reduce };

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Stmt {
  StmtKind kind = StmtKind::Fence;
  Loc loc;
  std::vector<std::string> comments;  // leading comment lines, without '#'
  std::string name;   // Let, For: the variable
  int slot = -1;      //   resolved
  ExprPtr value;      // Let: value; If: condition; For: lo; Send, Recv: peer
  ExprPtr hi, step;   // For: hi (exclusive), step (null = 1)
  ExprPtr tag;        // Send, Recv: explicit tag, null = assigned by cadc
  std::string by;     // Send, Recv: "", "sender" or "receiver" (who copies)
  std::string redop;  // Reduce: explicit op (built-in or user-defined), "" = the collective's op
  std::shared_ptr<const UserOp> user_op;  // resolved: redop names a user-defined operator
  BufRef dst, src;    // Recv: dst; Send: src; Copy, Reduce: both
  std::vector<StmtPtr> body, orelse;  // For, If, Parallel body; If else
  std::string trailing;               // a comment after it on its last line
  bool blank = false;                 // a blank line before it (kept by fmt)
  uint32_t id = 0;                    // resolved: its index in the algorithm (coverage)
  std::vector<std::string> body_end, orelse_end;  // comments before a '}'
};

struct Param {
  std::string name;
  ExprPtr value;  // the default
  Loc loc;
  std::vector<std::string> comments;
  std::string trailing;
  int slot = -1;
};

struct Requirement {
  ExprPtr cond;
  Loc loc;
  std::vector<std::string> comments;
  std::string trailing;
};

struct Scratch {
  std::string name;
  ExprPtr size;  // elements
  Loc loc;
  std::vector<std::string> comments;
  std::string trailing;
};

// Values for one sweep dimension: inclusive ranges [first, last].
struct SweepSpec {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  bool all = false;  // roots: every rank
  Loc loc;
  bool present() const { return all || !ranges.empty(); }
  std::vector<int64_t> values() const;
};

struct Sweep {
  bool present = false;
  Loc loc;
  std::vector<std::string> comments;
  std::string trailing;
  SweepSpec ranks, sizes, roots;
  std::vector<std::pair<std::string, SweepSpec>> params;
  std::vector<std::string> topologies;  // topology files, relative to the algorithm; "flat": flat
};

// A buffer an algorithm can name: the collective's, then its scratch.
struct BufferInfo {
  std::string name;
  bool scratch = false;
  int collective_index = -1;  // index in the collective's buffer table
  int scratch_index = -1;
};

// What an algorithm's text reads (its parameters' defaults, requirements,
// scratch sizes and body), each where it is first read (invalid: never).
// What it never reads, its programs cannot depend on (domain.h).
struct Reads {
  Loc esize, commutative, inplace, root, topology;
  uint32_t levels = 0;  // topology levels queried, a bit per Level (all when one is not a literal)
};

struct Algorithm {
  std::string name;
  Collective collective = Collective::Bcast;
  Loc loc;
  std::vector<std::string> comments;
  std::vector<Param> params;
  std::vector<Requirement> requires_;
  std::vector<Scratch> scratch;
  bool inplace = false;  // supports MPI_IN_PLACE
  Loc inplace_loc;
  // `op NAME` (reducing collectives): the algorithm is written for that
  // op alone, built-in or user-defined; its reductions may name it, and
  // the runtime selects it only for calls with it.  "": the call's op.
  std::string op;
  Loc op_loc;
  std::string op_trailing;
  Sweep sweep;
  std::vector<StmtPtr> body;
  std::vector<std::string> body_end;  // comments before the closing '}'
  std::string inplace_trailing;
  // Resolved by check().
  std::vector<BufferInfo> buffers;
  // The user-defined operator the algorithm names in its reductions (at
  // most one; null: none): an algorithm written for that operator, so its
  // instances, and the calls it is selected for, use it.
  std::shared_ptr<const UserOp> user_op;
  Loc user_op_loc;
  int nslots = 0;
  Reads reads;
  uint32_t nstmts = 0;  // statements, numbered by Stmt::id
  bool checked = false;
};

struct Module {
  uint32_t file = 0;
  std::vector<std::string> comments;  // the file's header comment; "\n": a blank line
  std::vector<Algorithm> algorithms;
};

// Environment slots of the built-in names, then the parameters, then locals.
enum BuiltinSlot {
  kSlotP,
  kSlotRank,
  kSlotRoot,
  kSlotN,
  kSlotEsize,
  kSlotCommutative,
  kSlotInplace,
  kBuiltinSlots
};

}  // namespace cad
