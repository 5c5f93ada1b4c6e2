// verify.h - global verification of one instance of an algorithm, on the
// union of all ranks' programs:
//   1. every rank's program passes the core verifier;
//   2. matching: every send meets exactly one receive of the same size
//      (per source, destination and tag, in program order), unambiguously
//      (two sends or receives of one key must be ordered), agreeing on who
//      copies;
//   3. deadlock freedom: with each matched pair one rendezvous node, the
//      global graph is acyclic (witness: a cycle);
//   4. race freedom: within a rank, no two unordered operations touch
//      overlapping bytes where one writes (witness: the two operations);
//   5. the postcondition: running the data symbolically in a topological
//      order, every output element holds exactly what the collective
//      defines; a reduction holds every contribution exactly once, in rank
//      order for a non-commutative op (witness: the first wrong range and
//      what it holds); a barrier makes every rank's end wait for every
//      rank's start;
//   6. a report: messages, bytes, critical path, scratch.
#pragma once

#include <cstdint>
#include <string>

#include "ast.h"
#include "diag.h"
#include "instance.h"

namespace cad {

struct VerifyStats {
  uint64_t ops = 0;            // nodes, all ranks
  uint64_t messages = 0;       // matched pairs
  uint64_t bytes = 0;          // bytes moved by messages
  uint64_t critical_path = 0;  // messages on the longest chain of dependent operations
  uint64_t max_scratch = 0;    // bytes of scratch, the most any rank has
};

// Skipped: a `requires` does not hold for the instance.  NotRun: a sweep
// stopped after too many failures before it got there.
enum class Outcome { Verified, Skipped, Failed, NotRun };

struct InstanceResult {
  Outcome outcome = Outcome::Failed;
  VerifyStats stats;
  std::string skipped_because;  // the requirement that does not hold
};

// programs: when it verifies, every rank's program of the instance (for
// cadc simulate, which would otherwise instantiate them again).
// obs: what the instantiations report besides (instance.h).
InstanceResult verify_instance(const Algorithm &a, const InstanceSpec &spec,
                               const SourceManager &sm, Diagnostics *diags,
                               std::vector<RankProgram> *programs = nullptr, const Observer *obs = nullptr);

// Every rank's program of an instance, through the core verifier; false
// (reported) on an error in the algorithm.
bool instantiate_all(const Instantiator &in, const SourceManager &sm, Diagnostics *diags,
                     std::vector<RankProgram> *progs, const Observer *obs = nullptr);

// Sends and receives matched per (source, destination, tag) in program
// order.  Operations have global ids base[r] + i; partner[g] is the id of
// the operation g meets, or kUnmatched.
struct Matching {
  static constexpr uint64_t kUnmatched = ~uint64_t{0};
  std::vector<uint64_t> base;     // first id of each rank, then the total
  std::vector<uint64_t> partner;
};
Matching match_messages(const std::vector<RankProgram> &progs);

}  // namespace cad
