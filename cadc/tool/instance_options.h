// instance_options.h - the options that describe instances, shared by
// compile, verify, dot and simulate: --ranks, --size(s), --root(s), --param k=v,
// --topology, --inplace, --dtype, --op, --algorithm.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../lib/instance.h"
#include "../lib/topology.h"
#include "common.h"

namespace cad::tool {

struct InstanceOptions {
  std::string ranks, sizes, roots;   // SPEC text
  std::vector<std::string> params;   // name=SPEC
  std::string topology;              // a topology file
  std::string algorithm;             // which algorithm of a file
  std::string dtype, op;             // "": i32, and sum (or the algorithm's user-defined operator)
  bool inplace = false;
  bool noncommutative = false;
  std::vector<std::string> op_files; // --ops: .c or .cadop files
  UserOps ops;                       // what they hold, loaded by load_instance_ops
};

// Loads the --ops files into o->ops (names must be unique); false with
// diagnostics in s.
bool load_instance_ops(Session &s, InstanceOptions *o);

// single: --size/--root take one value (compile, dot); else lists (verify).
void add_instance_options(CLI::App *cmd, InstanceOptions *o, bool single);

// The algorithms of a module that --algorithm selects (all if unset);
// throws UsageError if the name matches none.
std::vector<const Algorithm *> select(const Module &m, const std::string &name);

// One instance from single-valued options (compile, dot, simulate).
InstanceSpec single_instance(const InstanceOptions &o, const Algorithm &a);

// One instance of the one algorithm of a file (compile, dot, simulate):
// the --ops operators and the file loaded, the algorithm --algorithm
// selects, its instance from the single-valued options.
struct SingleInstance {
  Module m;
  const Algorithm *alg = nullptr;
  InstanceSpec spec;
  std::unique_ptr<Instantiator> in;
};

// false (reported into s) on errors in the files, or when the instance's
// requirements do not hold (CAD-E009 at the one that does not); throws
// UsageError on bad options, or if the file defines several algorithms
// and --algorithm names none.
bool load_single_instance(Session &s, const std::string &file, InstanceOptions *o, SingleInstance *out);

// An operation as text: "send buf[0:8] → 1", "reduce sum recvbuf[0:4] ← tmp[4:8]".
std::string op_text(const RankProgram &p, const RankOp &o);

// The op and datatype of --dtype, --op for algorithm a: a built-in op, or
// a user-defined operator of --ops (commutative or not as it declares);
// without --op, the operator a names if it names one, else sum.  Throws
// UsageError, e.g. when --op differs from the operator a is written for.
void parse_op(const InstanceOptions &o, const Algorithm &a, InstanceSpec *spec);

// What parse_op and cadc select share: the call's element type and op --
// user, a user-defined operator (commutative or not as it declares), or
// the built-in --dtype (i32 if empty) and --op (sum if empty); an unknown
// --op name is an error whose message ends with user_ops_hint (where
// user-defined ones come from); check_op: the op must apply to the type.
// Throws UsageError.
void parse_type_and_op(const std::string &dtype, const std::string &op, bool noncommutative,
                       std::shared_ptr<const UserOp> user, const std::string &user_ops_hint, bool check_op,
                       InstanceSpec *spec);

// The machine of --topology (flat if unset); throws UsageError.
Machine load_topology_option(const std::string &path);

}  // namespace cad::tool
