// sweep.h - sweeps of instances: planning them from an algorithm's
// declared sweep or from explicit settings, and verifying them on several
// threads.  Used by cadc verify and cadc build.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ast.h"
#include "domain.h"
#include "diag.h"
#include "instance.h"
#include "verify.h"

namespace cad {

// Explicit settings; empty ones fall back to the algorithm's sweep.
struct SweepSettings {
  std::string ranks, sizes, roots;   // SPEC text; roots may be "all"
  std::vector<std::string> params;   // name=SPEC
  std::string topology;              // a topology file
  bool inplace = false;              // also in place (always if the algorithm declares it)
  // The op and datatype; CAD_OP_NONE: the algorithm's (the op it is
  // written for, else sum), over i32 or the first type the op applies to,
  // and every element size if it reads esize (esizes_to_verify).
  unsigned dtype = 3, op = 0;        // CAD_DT_INT32, CAD_OP_NONE
  // A user-defined operator (op, dtype ignored): taken as commutative or
  // not as it declares.  Without one, an algorithm that names a
  // user-defined operator is verified with that operator.
  std::shared_ptr<const UserOp> user_op;
  Limits limits;                     // of every instance planned (and of the size-class probes)
  // No explicit ranks, sizes, roots, parameters or topology: the sweep is
  // the algorithm's own, the one cadc build proves.
  bool declared() const { return ranks.empty() && sizes.empty() && roots.empty() && params.empty() && topology.empty(); }
};

// At most this many instances in one sweep.
constexpr size_t kMaxSweepInstances = size_t{1} << 22;

// What a plan stands for besides its instances (the proven domain's
// sizes and roots, domain.h).
struct SweepPlan {
  std::vector<int64_t> sizes;        // the author's (or the settings') sizes
  bool size_classes = false;         // each key also at its size classes
  std::string roots = "all";         // "all", "default" or the SPEC
  std::vector<int64_t> root_values;  // the SPEC's
};

// The instances to verify.  Without ranks the algorithm's sweep decides.
// Without sizes, the algorithm's (else 0, 1, 7, 1000), each key (the
// instance but n) also at its size classes (domain.h).  Roots default to
// default_roots(P).  Reducing collectives get a non-commutative op unless
// the algorithm requires a commutative one, and both when the algorithm
// reads commutative (a user-defined operator: as declared); every element
// size of esizes_to_verify when it reads esize.  Topology files of the
// sweep are relative to the algorithm's file.  Errors in the algorithm's
// own sweep (a topology file it names; a topology query with only the flat
// machine to answer it, CAD-E015) are reported as diagnostics; bad
// settings set *error.  Either way the result is false.
bool plan_sweep(const Algorithm &a, const std::string &file, const SweepSettings &s,
                std::vector<InstanceSpec> *out, std::string *error, Diagnostics *diags,
                SweepPlan *plan = nullptr);

struct SweepOutcome {
  std::vector<InstanceResult> results;  // per instance, in plan order
  Diagnostics diags;                    // in plan order
  uint64_t verified = 0, skipped = 0, failed = 0;
  uint64_t not_run = 0;                 // after max_failures failures
  VerifyStats most;                     // the largest of each figure
  std::map<std::string, uint64_t> skip_reasons;
};

// Verifies the instances on `jobs` threads; stops after max_failures
// failing instances; progress(done, total) is called from time to time.
// branches (if not null) records the branches the instances take.
SweepOutcome run_sweep(const Algorithm &a, std::vector<InstanceSpec> &instances, const SourceManager &sm,
                       unsigned jobs, int max_failures,
                       const std::function<void(size_t, size_t)> &progress = nullptr,
                       BranchCoverage *branches = nullptr);

}  // namespace cad
