// diag.h - compiler diagnostics: a stable code, a location, a message,
// further located notes, the instance and rank they arose in, and a
// witness.  Library code only collects them; the tool prints them as
//   file:line:col: error: message [CAD-E034]
//       recv buf[lo:hi] from prev
//       ^
// or as JSON (--json).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "source.h"

namespace cad {

// The stable codes.  X(NAME, "CAD-Ennn", "what it means")
#define CAD_DIAG_CODES(X)                                                          \
  X(Syntax, "CAD-E001", "syntax error")                                            \
  X(Token, "CAD-E002", "invalid character or token")                               \
  X(UnknownName, "CAD-E003", "unknown name")                                       \
  X(Type, "CAD-E004", "type error")                                                \
  X(Redefined, "CAD-E005", "name defined twice")                                   \
  X(Collective, "CAD-E006", "unknown collective")                                  \
  X(UnknownBuffer, "CAD-E007", "buffer not defined for this collective")           \
  X(Arity, "CAD-E008", "wrong number of arguments")                                \
  X(NeverHolds, "CAD-E009", "a requirement that can never hold")                   \
  X(Sweep, "CAD-E010", "bad sweep, spec or parameter")                             \
  X(Schema, "CAD-E011", "JSON form does not follow schemas/algorithm.schema.json") \
  X(Topology, "CAD-E012", "bad topology")                                          \
  X(RankDependent, "CAD-E013", "a requirement that can differ between ranks")      \
  X(FixedOp, "CAD-E014", "a reduction with a fixed op where the call's op belongs") \
  X(Coverage, "CAD-E015", "the sweep does not reach what the algorithm reads")     \
  X(Overflow, "CAD-E020", "integer overflow")                                      \
  X(DivZero, "CAD-E021", "division by zero")                                       \
  X(OutOfRange, "CAD-E022", "access outside a buffer")                             \
  X(BadRange, "CAD-E023", "empty-reversed or misshapen range")                     \
  X(BadPeer, "CAD-E024", "peer rank out of range or self")                         \
  X(LengthMismatch, "CAD-E025", "copy or reduce of ranges of different lengths")   \
  X(TooBig, "CAD-E026", "program over a limit")                                    \
  X(CoreReject, "CAD-E027", "the core verifier rejected the emitted program")      \
  X(Unmatched, "CAD-E030", "send or receive without a partner")                    \
  X(Direction, "CAD-E031", "matched send and receive disagree on who copies")      \
  X(SizeMismatch, "CAD-E032", "matched send and receive of different sizes")       \
  X(Ambiguous, "CAD-E033", "ambiguous match")                                      \
  X(Deadlock, "CAD-E034", "deadlock")                                              \
  X(Race, "CAD-E035", "race: unordered conflicting accesses")                      \
  X(WrongResult, "CAD-E036", "the collective's result is wrong")                   \
  X(NotSynchronising, "CAD-E037", "a barrier that does not synchronise")           \
  X(AllSkipped, "CAD-E038", "every instance of the sweep is skipped")              \
  X(Library, "CAD-E040", "bad library or rules file")                              \
  X(OpSyntax, "CAD-E050", "C error in an operator file (reported by clang)")       \
  X(OpSignature, "CAD-E051", "not an operator: marker, signature or element type")  \
  X(OpPointer, "CAD-E052", "pointer use beyond in and inout")                      \
  X(OpCall, "CAD-E053", "call of a function that is not an allowed builtin")       \
  X(OpGlobal, "CAD-E054", "global or static variable")                             \
  X(OpLoop, "CAD-E055", "loop without a constant bound")                           \
  X(OpVolatile, "CAD-E056", "volatile")                                            \
  X(OpAsm, "CAD-E057", "inline assembly")                                          \
  X(OpVla, "CAD-E058", "variable-length array")                                    \
  X(OpUnsupported, "CAD-E059", "construct not in the operator subset of C")        \
  X(OpTooBig, "CAD-E060", "operator over a limit of the VM")                       \
  X(OpUndefined, "CAD-E061", "a local read before it is assigned")                 \
  X(OpNone, "CAD-E062", "no operator, or two with one name")                       \
  X(OpBytecode, "CAD-E063", "bad operator bytecode")                               \
  X(Io, "CAD-E090", "input or output error")                                       \
  X(NeverTaken, "CAD-W001", "a branch that no instance of the sweep takes")

enum class Code {
#define CAD_X(name, code, what) name,
  CAD_DIAG_CODES(CAD_X)
#undef CAD_X
};

const char *code_id(Code c);     // "CAD-E034"
const char *code_what(Code c);   // "deadlock"

enum class Severity { Error, Warning, Note };

struct Note {
  Loc loc;
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  Code code = Code::Syntax;
  Loc loc;
  std::string message;
  std::vector<Note> notes;   // the other operations involved
  std::string instance;      // "P=4 n=7 root=1 seg=2", empty outside an instance
  int rank = -1;             // the rank, -1 if none
  std::vector<std::string> witness;  // lines: the cycle, the wrong range ...
};

class Diagnostics {
 public:
  Diagnostic &error(Code code, Loc loc, std::string message);
  Diagnostic &warning(Code code, Loc loc, std::string message);
  void add(Diagnostic d) { list_.push_back(std::move(d)); }
  void append(const Diagnostics &other);
  bool has_errors() const;
  size_t error_count() const;
  const std::vector<Diagnostic> &list() const { return list_; }
  bool empty() const { return list_.empty(); }
  void clear() { list_.clear(); }

 private:
  std::vector<Diagnostic> list_;
};

// Compiler-style text, with the source line and a caret under the column.
std::string render_text(const SourceManager &sm, const Diagnostic &d);
nlohmann::json render_json(const SourceManager &sm, const Diagnostic &d);

}  // namespace cad
