// domain.h - what a proof covers.
//
// An instance of an algorithm is fixed by P, n, the root, in place, the op
// (with its commutativity and element size), the parameters and the
// topology.  The invariant this file serves: an instance runs only if it
// was proven -- by cadc build, whose proven domain a .cadlib records per
// algorithm, or on arrival (cadrt's gate proves the instance's key before
// it runs).  The domain is the set of instances the sweep verified,
// widened only by arguments that hold for every program:
//   - What an algorithm never reads, its programs cannot depend on.  Never
//     reading esize, the program at element size e is the one at size 1
//     with every offset and length scaled by e, and scaling preserves
//     every match, order, overlap and result: the proof holds at every
//     element size.  Never reading commutative, the program is the same
//     either way, and the non-commutative proof (every contribution once,
//     in rank order) implies the commutative one.  Never querying the
//     topology, it is the same on every machine.
//   - The op is a symbol.  A reduction without `op` uses the call's op,
//     and the verifier checks that every output holds exactly the
//     reduction of every input by that op, whatever it is; a fixed op is
//     an error (CAD-E014) unless the algorithm declares it is written for
//     it (`op NAME`), and is then selected only for calls with it.
//   - Sizes.  A key (everything but n) is verified at the size classes of
//     the program's arithmetic (size_classes): 0, 1, 2, and below, at and
//     above each value n is divided by or compared with, each parameter's
//     value, P, 8 and P times each parameter, and one more than twice
//     each (not a multiple, more than one block).  A program's shape
//     changes with n only where its integer arithmetic on n crosses such a
//     value, so a key proven at its classes stands for every n.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ast.h"
#include "diag.h"
#include "instance.h"
#include "topology.h"

namespace cad {

// Sets a.reads, the size boundaries of its expressions and its statements'
// ids.  check_algorithm calls it on an algorithm that checks.
void analyse_reads(Algorithm &a);

// Roots verified at P when the sweep names none: every root up to this
// P, and 0, 1, P / 2, P - 1 beyond.
constexpr int64_t kAllRootsUpTo = 17;
std::vector<int64_t> default_roots(int64_t P);

// The sizes at which to verify key (an instance whose n is ignored),
// sorted: the author's and the size classes above.  The values n meets
// are probed by instantiating every rank of the key at the largest of the
// author's sizes; a probe that fails (the instance does not instantiate)
// adds none.  Classes above max_size are left out.
std::vector<int64_t> size_classes(const Algorithm &a, const InstanceSpec &key, const std::vector<int64_t> &author,
                                  int64_t max_size = int64_t{1} << 40);

// Element sizes the sweep verifies an algorithm that reads esize at:
// non-reducing collectives 1, 2, 4, 8 and a 12-byte struct; reducing ones
// the built-in datatypes of 1, 2, 4 and 8 bytes (and 16 for minloc and
// maxloc).  cadrt moves non-reducing data as bytes (esize 1).
std::vector<uint32_t> esizes_to_verify(const Algorithm &a);

// Which branches the instances of a sweep took: per statement, bit 1 the
// body (an if's then, a loop's body at least once), bit 2 the other way
// (an if's else or its skip).  Shared by the threads of a sweep.
class BranchCoverage {
 public:
  explicit BranchCoverage(uint32_t statements) : taken_(statements) {}
  void mark(uint32_t id, uint8_t bits) {
    if (id < taken_.size() && (taken_[id].load(std::memory_order_relaxed) & bits) != bits)
      taken_[id].fetch_or(bits, std::memory_order_relaxed);
  }
  uint8_t taken(uint32_t id) const { return id < taken_.size() ? taken_[id].load() : 0; }

 private:
  std::vector<std::atomic<uint8_t>> taken_;
};

// A warning (CAD-W001) for each branch of a's body no instance took: an if
// whose condition was never true (or never false), a loop whose body never
// ran.  The proof of code no instance ran proves nothing about it.
void report_untaken(const Algorithm &a, const BranchCoverage &cov, Diagnostics *diags);

// The proven domain of an algorithm (schemas/cadlib.schema.json, "proven").
struct Domain {
  std::vector<int64_t> ranks;                // P values, sorted
  std::string roots = "all";                 // "all", "default" (default_roots), or a SPEC
  std::vector<int64_t> root_values;          // the SPEC's values
  std::vector<int64_t> sizes;                // the author's sizes (each key at its classes)
  std::vector<bool> inplace;                 // values verified
  bool any_commutative = true;               // or only those in commutative
  std::vector<bool> commutative;
  bool any_esize = true;                     // or only those in esizes
  std::vector<uint32_t> esizes;
  std::string op;                            // "": any (the call's op); else the op written for
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;  // swept; others at their default
  bool any_topology = true;                  // or only the machines (at levels)
  std::vector<Machine> machines;
  uint32_t levels = 0;
  uint64_t instances = 0;                    // verified by the build

  nlohmann::json to_json() const;
  static bool from_json(const nlohmann::json &j, Domain *out, std::string *error);
  // One line per dimension of a collective's algorithm, for people (cadc
  // lib show).
  std::vector<std::string> describe(const CollectiveInfo &info) const;
};

// The domain a sweep verifies: its plan (plan_sweep's, every instance
// verified or skipped by a requirement), the settings' sweep and what the
// algorithm reads.
Domain domain_of_sweep(const Algorithm &a, const std::vector<InstanceSpec> &plan, const std::vector<int64_t> &sizes,
                       const std::string &roots, const std::vector<int64_t> &root_values);

// Whether d covers spec (its n aside); if not, why ("P=64 is beyond
// 1..33").  The parameters are the instance's effective ones: a swept
// parameter's value must be one verified, any other must be at its
// default.  Null d: nothing is covered (a library without domains).
bool covers(const Domain &d, const Algorithm &a, const InstanceSpec &spec, std::string *why);

// The key of an instance for caches of proofs: spec.describe without n,
// with the element size, op and topology placement spelled out.
std::string proof_key(const Algorithm &a, const InstanceSpec &spec);

// Proves spec's key on arrival: the same global verification as cadc
// verify, at the key's size classes and spec.n.  Verified or not (then
// diags say why); Skipped when a requirement does not hold.
struct ArrivalProof {
  bool proven = false;
  uint64_t instances = 0;   // verified
  std::string why;          // not proven: the first diagnostic, as text
};
ArrivalProof prove_on_arrival(const Algorithm &a, const InstanceSpec &spec, const SourceManager &sm);

}  // namespace cad
