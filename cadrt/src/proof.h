// proof.h - the gate between selection and execution.  The invariant it
// keeps: no instance of a library's algorithm reaches an application's
// buffers unless it was proven -- inside the domain cadc build proved
// (cadc/lib/domain.h), or proven on arrival.  CADRT_PROOF chooses what
// happens to an instance outside its algorithm's domain:
//   online (the default): it is proven when it first arrives, by the
//     global verification of cadc verify at its key's size classes (the
//     key: the instance but n), and the verdict kept per key, in memory
//     and, with CADRT_PROOF_CACHE=FILE, in a file later jobs read; one
//     that does not verify is refused, and selection goes on to the next
//     rule;
//   exact: as online, and n too is proven: a call whose size no proof
//     verified (the build's or an earlier one's: each key's size classes)
//     is verified as that exact instance before it runs, rather than
//     taken on the size-class argument (cadc/lib/domain.h);
//   strict: it is refused, with no proof on arrival;
//   off: no gate at all (cadrt_init warns): what the rules select runs.
// Every rank decides alone, the same way: the proof is deterministic in
// the library, the instance and the placement, which the ranks share.
// A proof on arrival holds at most CADRT_PROOF_MAX_OPS operations of all
// ranks (default kProofMaxOps): a larger instance would stall the call
// for a long time, and is refused instead (CAD-E026 in its note).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "domain.h"
#include "library.h"

namespace cadrt {

enum class ProofPolicy { Online, Exact, Strict, Off };

// About 4 M operations: a few seconds of verification here.
constexpr uint64_t kProofMaxOps = uint64_t{1} << 22;

// What the gate did, counted (cadrt's tests read them back).
struct ProofCounts {
  uint64_t inside = 0;   // instances inside their domain
  uint64_t proven = 0;   // keys proven on arrival by this process
  uint64_t refused = 0;  // instances refused (outside and not proven)
  uint64_t exact = 0;    // sizes verified as exact instances (CADRT_PROOF=exact)
  uint64_t cached = 0;   // verdicts taken from memory or the cache file
  double prove_ms = 0;   // time spent proving on arrival
};

class ProofGate {
 public:
  // From the values of CADRT_PROOF, CADRT_PROOF_CACHE and
  // CADRT_PROOF_MAX_OPS (null: unset); "" or what is wrong with them.
  // library_hash keys the cache file's verdicts: another library's are
  // not this one's.
  std::string configure(const char *policy, const char *cache_file, const char *max_ops,
                        const std::string &library_hash);
  ProofPolicy policy() const { return policy_; }
  const std::string &cache_file() const { return cache_file_; }

  // Whether the instance spec of algorithm a (its parameters, placement
  // and program's in-place as selection made them) may run, with the
  // note for CADRT_EXPLAIN.
  cad::GateVerdict decide(const cad::Library &lib, const cad::Algorithm &a, const cad::InstanceSpec &spec);

  const ProofCounts &counts() const { return counts_; }

 private:
  struct Verdict {
    bool proven = false;
    std::string note;
  };
  Verdict prove(const std::string &key, const std::string &outside, const cad::Library &lib, const cad::Algorithm &a,
                const cad::InstanceSpec &spec, bool exact_only);
  void load_cache_file();
  void append_cache_file(const std::string &key, const Verdict &v) const;

  ProofPolicy policy_ = ProofPolicy::Online;
  uint64_t max_ops_ = kProofMaxOps;
  std::string cache_file_, library_hash_;
  bool cache_loaded_ = false;
  std::unordered_map<std::string, Verdict> verdicts_;  // by cad::proof_key
  // exact: each key's size classes (a probe of every rank), by proof_key.
  std::unordered_map<std::string, std::vector<int64_t>> classes_;
  ProofCounts counts_;
};

}  // namespace cadrt
