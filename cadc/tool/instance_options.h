// instance_options.h - the options that describe instances, shared by
// compile, verify and dot: --ranks, --size(s), --root(s), --param k=v,
// --topology, --inplace, --dtype, --op, --algorithm.
#pragma once

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
  std::string dtype = "i32", op = "sum";
  bool inplace = false;
  bool noncommutative = false;
};

// single: --size/--root take one value (compile, dot); else lists (verify).
void add_instance_options(CLI::App *cmd, InstanceOptions *o, bool single);

// The algorithms of a module that --algorithm selects (all if unset);
// throws UsageError if the name matches none.
std::vector<const Algorithm *> select(const Module &m, const std::string &name);

// One instance from single-valued options (compile, dot).
InstanceSpec single_instance(const InstanceOptions &o, const Algorithm &a);

// The op and datatype of --dtype, --op; throws UsageError.
void parse_op(const InstanceOptions &o, InstanceSpec *spec);

// The machine of --topology (flat if unset); throws UsageError.
Machine load_topology_option(const std::string &path);

}  // namespace cad::tool
