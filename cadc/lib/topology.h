// topology.h - where each rank of an instance runs: its node, package, NUMA
// domain and L3 at levels 0..3, from a topology file (a machine and a
// mapping, or an explicit list of places) or flat (one of each).  Answers
// the language's topology queries; domains are numbered densely in the
// order of their first rank.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace cad {

enum Level { kNode = 0, kPackage = 1, kNuma = 2, kL3 = 3, kLevels = 4 };

// A machine, as a topology file describes it.
struct Machine {
  std::string name = "flat";
  bool flat = true;  // one domain at every level, whatever P
  // A regular machine: counts per enclosing level, ranks placed by mapping.
  int64_t nodes = 1, packages_per_node = 1, numa_per_package = 1, l3_per_numa = 1,
          cores_per_l3 = 1;
  std::string mapping = "block";  // "block" or "cyclic" (across nodes)
  // Or explicit places, one per rank: {node, package, numa, l3}.
  std::vector<std::vector<int64_t>> places;

  // The most cores a regular machine may have (the product of its counts).
  static constexpr int64_t kMaxCores = int64_t{1} << 30;
  // Parses and validates a topology document; false with *error set.
  static bool from_json(const nlohmann::json &j, Machine *out, std::string *error);
  nlohmann::ordered_json to_json() const;
  // The largest P it can place (explicit places), or 0 for any.
  int64_t max_ranks() const { return places.empty() ? 0 : static_cast<int64_t>(places.size()); }
};

// The placement of P ranks.
class Topology {
 public:
  // Places P ranks on machine; false with *error (too few places).
  static bool make(const Machine &m, int64_t P, std::shared_ptr<const Topology> *out,
                   std::string *error);
  static std::shared_ptr<const Topology> flat(int64_t P);

  // Queries; ranks and domain numbers must be in range (the evaluator
  // checks).  A flat topology answers without per-rank tables.
  int64_t size() const { return P_; }
  int64_t ndomains(int level) const { return flat_ ? 1 : static_cast<int64_t>(members_[level].size()); }
  int64_t domain(int level, int64_t rank) const { return flat_ ? 0 : dom_[level][rank]; }
  int64_t local_rank(int level, int64_t rank) const { return flat_ ? rank : local_[level][rank]; }
  int64_t domain_size(int level, int64_t d) const {
    return flat_ ? P_ : static_cast<int64_t>(members_[level][d].size());
  }
  // The i-th rank (in rank order) of domain d.
  int64_t domain_rank(int level, int64_t d, int64_t i) const { return flat_ ? i : members_[level][d][i]; }
  int64_t leader(int level, int64_t rank) const { return domain_rank(level, domain(level, rank), 0); }
  int64_t local_size(int level, int64_t rank) const { return domain_size(level, domain(level, rank)); }
  bool is_flat() const { return flat_; }
  const std::string &name() const { return name_; }
  // The machine it places the ranks on (flat: the default Machine).
  const Machine &machine() const { return machine_; }

 private:
  int64_t P_ = 0;
  bool flat_ = true;
  std::string name_ = "flat";
  Machine machine_;
  std::vector<int64_t> dom_[kLevels];    // rank -> domain
  std::vector<int64_t> local_[kLevels];  // rank -> index in its domain
  std::vector<std::vector<int64_t>> members_[kLevels];
};

}  // namespace cad
