// sweep.h - sweeps of instances: planning them from an algorithm's
// declared sweep or from explicit settings, and verifying them on several
// threads.  Used by cadc verify and cadc build.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ast.h"
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
  unsigned dtype = 3, op = 1;        // CAD_DT_INT32, CAD_OP_SUM
  // A user-defined operator (op, dtype ignored): taken as commutative or
  // not as it declares.  Without one, an algorithm that names a
  // user-defined operator is verified with that operator.
  std::shared_ptr<const UserOp> user_op;
};

// At most this many instances in one sweep.
constexpr size_t kMaxSweepInstances = size_t{1} << 22;

// The instances to verify.  Without ranks the algorithm's sweep decides;
// roots default to every root up to P = 17 and 0, 1, P/2, P-1 beyond;
// reducing collectives get a non-commutative op unless the algorithm
// requires a commutative one (a user-defined operator: as declared).  Topology files of the sweep are relative
// to the algorithm's file.  False with *error set on bad settings.
// Errors in the algorithm's own sweep (a topology file it names) are
// reported as diagnostics at the sweep; bad settings set *error.  Either
// way the result is false.
bool plan_sweep(const Algorithm &a, const std::string &file, const SweepSettings &s,
                std::vector<InstanceSpec> *out, std::string *error, Diagnostics *diags);

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
SweepOutcome run_sweep(const Algorithm &a, std::vector<InstanceSpec> &instances, const SourceManager &sm,
                       unsigned jobs, int max_failures,
                       const std::function<void(size_t, size_t)> &progress = nullptr);

}  // namespace cad
