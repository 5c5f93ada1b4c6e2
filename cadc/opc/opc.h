// opc.h - the operator compiler: user-defined reduction operators written
// in a subset of C, parsed with Clang LibTooling and lowered to the
// reduction VM of the core (kmod/uapi/cad.h).  A module only the cadc
// tool loads (below); everything else sees operators as UserOp
// (cadc/lib/userop.h).
//
// Pipeline, per file (on a thread with a 1 GiB stack):
// (The files of each step: opc_priv.h.)
//   0. a pre-pass in a child process with bounded memory and CPU lexes the
//      preprocessed file and enforces the limits on tokens and nesting
//      before clang's parser (which recurses per nesting level) sees it.
//   1. clang parses the file as C11 (gnu11) with __CAD_OPC__ defined, so
//      that CAD_OP(...) of algorithms/ops/cad_op.h becomes an annotation;
//      clang's own errors are CAD-E050.
//   2. an AST matcher finds the functions annotated "cad_op:..."; their
//      signature must be void f(const T *in, T *inout) with T a scalar or a
//      struct of scalars (CAD-E051).  The helper functions they call (any
//      function the file defines: calls are resolved by Sema, never by
//      name) are collected, recursion rejected (E053).
//   3. a RecursiveASTVisitor walks each body and rejects what is outside
//      the subset, each at its line and column with its own code: pointers
//      beyond the parameters (E052), calls other than the math builtins
//      and helpers (E053), globals and statics (E054), volatile (E056),
//      inline assembly (E057), variable-length arrays (E058), goto, switch,
//      break, continue and the like (E059).
//   4. lowering: symbolic execution of the body into a value graph with
//      constant folding and common subexpressions; helpers are inlined;
//      loops are unrolled (their conditions must fold to constants: E055);
//      if/else and ?: are if-converted to compare + select, so the code has
//      no jumps and every element runs the same instructions; an early
//      return is handled by running the rest of the body under each
//      branch.  Reads of *inout see the element as it was on entry (stores
//      are placed after every load they could overlap), so the result is
//      the same when in and inout are the same element.
//   5. scheduling and register allocation over the 16 registers, spilling
//      to the VM's slots (constants and loads are computed again instead),
//      then the core verifier checks what was emitted.
#pragma once

#include <string>
#include <vector>

#include "../lib/diag.h"
#include "../lib/source.h"
#include "../lib/userop.h"

namespace cad {

struct OpcOptions {
  std::vector<std::string> include_dirs;   // -I
  std::vector<std::string> defines;        // -D
};

// Compiles the operators of a C file; its text is registered in sm so that
// diagnostics can quote it.  False if there are errors (in diags).
bool compile_op_file(const std::string &path, const OpcOptions &opts, SourceManager &sm, Diagnostics *diags,
                     std::vector<UserOp> *out);

// The compiler is a module of its own, libcadc-opc.so beside the cadc
// tool's libraries (build/lib), which the tool loads only when it compiles
// a C file (cmd_op.cpp): linking libclang-cpp and libLLVM into the tool
// cost every cadc command about 40 ms of their static constructors before
// main (44 ms for `cadc --version`, against 4 ms without them).  The
// module links its own copy of libcadc: the objects that cross (the
// tool's SourceManager and Diagnostics, the UserOps it fills) are used by
// both copies, which is sound only for the same layout, i.e. the same
// build.  Its entry, found with dlsym, is compile_op_file; opc_abi(),
// computed on both sides from the version of this interface and the sizes
// of what crosses it, tells a module of another build apart (cad_opc_abi
// holds the module's).
constexpr int kOpcAbi = 1;
constexpr unsigned long long opc_abi() {
  return (((kOpcAbi * 1000003ull ^ sizeof(OpcOptions)) * 1000003ull ^ sizeof(SourceManager)) * 1000003ull ^
          sizeof(Diagnostics)) * 1000003ull ^ sizeof(UserOp);
}
using CompileOpFile = bool (*)(const std::string &, const OpcOptions &, SourceManager &, Diagnostics *,
                               std::vector<UserOp> *);

}  // namespace cad

extern "C" {
// (C names, for dlsym.)
extern const unsigned long long cad_opc_abi;
extern const cad::CompileOpFile cad_opc_compile_op_file;
}
