// instance.h - instantiation: one rank's CAD program for one instance of a
// checked algorithm.
//
// An instance fixes P, n, the root, the parameters, the topology, whether
// the call is in place, and the op (its datatype and whether it is
// commutative).  Instantiating rank r runs the algorithm's body for r only
// (time proportional to r's program, not to P), binds buffer names through
// the collective's table (MPI_IN_PLACE included), checks every range and
// peer, assigns tags (the k-th message from s to d carries tag k, so
// matching is never ambiguous), infers dependencies from the bytes each
// operation reads and writes (RAW, WAR, WAW in program order; none inside a
// `parallel` block; `fence` orders everything before it before everything
// after it) and removes the transitively implied edges.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ast.h"
#include "diag.h"
#include "topology.h"
#include "userop.h"

namespace cad {

// Limits of one rank's program (those of the core verifier's defaults).
constexpr uint64_t kMaxOpsPerRank = 1u << 21;
// Limits that keep untrusted algorithms and settings from exhausting time
// or memory (each a CAD-E026 or a usage error, never a hang or a crash):
// ranks of an instance; statements and loop iterations run for one rank
// (16 per operation of the largest program); operations of all ranks of an
// instance verified together (about 100 bytes of verifier state each,
// 3.5 GB at the limit; an alltoall at P = 4096 fits).
constexpr int64_t kMaxRanks = 1 << 20;
constexpr uint64_t kMaxStepsPerRank = uint64_t{1} << 25;
constexpr uint64_t kMaxOpsPerInstance = uint64_t{1} << 25;

// The limits an instance is held to; the defaults above unless a caller
// wants less (the fuzzer, to stay fast).
struct Limits {
  uint64_t steps_per_rank = kMaxStepsPerRank;
  uint64_t ops_per_rank = kMaxOpsPerRank;
  uint64_t ops_per_instance = kMaxOpsPerInstance;
};

struct InstanceSpec {
  int64_t P = 1;
  int64_t n = 0;
  int64_t root = 0;
  bool inplace = false;
  bool commutative = true;     // false: the order of contributions is checked
  unsigned dtype = 3;          // CAD_DT_INT32: what REDUCE nodes are emitted with
  unsigned op = 1;             // CAD_OP_SUM; CAD_OP_USER with user_op
  // A user-defined operator (op = CAD_OP_USER, dtype = CAD_DT_USER): its
  // element size is the element size, its bytecode goes into the program.
  std::shared_ptr<const UserOp> user_op;
  // Bytes per element of a collective without an op, when not the
  // datatype's (0): the sweep's struct-sized elements.
  uint32_t esize = 0;
  std::vector<std::pair<std::string, int64_t>> params;  // overrides of defaults
  std::shared_ptr<const Topology> topo;                  // null: flat
  Limits limits;

// "P=4 n=7 root=1 seg=2 inplace noncommutative topology=two-socket"
  std::string describe(const Algorithm &a) const;
};

// The name of the call's op.
inline std::string op_name(const InstanceSpec &spec) { return op_name(spec.op, spec.user_op.get()); }

// Bytes per element of an instance: the datatype's, or the user op's.
uint32_t element_size(const InstanceSpec &spec);

// An ABI buffer of a rank's program.
struct AbiBuffer {
  unsigned kind;        // CAD_BUF_*
  unsigned access;      // CAD_ACC_*
  uint64_t elems;
  std::string name;
  int collective = -1;  // index in the collective's buffers, -1: scratch
};

// One operation, in program order, with byte ranges of ABI buffers.
// The fields in an order without padding (64 bytes): verifying an
// instance holds one per operation of every rank.
struct RankOp {
  uint8_t kind = 0;     // CAD_NODE_*
  uint8_t flags = 0;    // CAD_XFER_*
  uint8_t op = 0;       // REDUCE: CAD_OP_*
  bool fence = false;   // a NOP from `fence`
  uint32_t group = 0;   // `parallel` block, 0 = none
  uint32_t peer = 0, tag = 0;
  int32_t dst = -1, src = -1;  // ABI buffers
  uint64_t dst_off = 0, src_off = 0, len = 0;  // bytes
  const Stmt *stmt = nullptr;  // where it comes from
  const UserOp *uop = nullptr;  // REDUCE with CAD_OP_USER: the operator
};
static_assert(sizeof(RankOp) <= 64, "RankOp grew");

struct RankProgram {
  uint32_t rank = 0;
  uint32_t esize = 1;
  std::vector<AbiBuffer> buffers;
  std::vector<RankOp> ops;
  std::vector<uint32_t> edge_first;  // successors of op i: edges[edge_first[i] .. edge_first[i + 1])
  std::vector<uint32_t> edges;
  uint64_t scratch_bytes = 0;
};

// What an instantiation can report besides the program (domain.h): the
// values n meets (size_boundary expressions), the branches taken.
class BranchCoverage;
struct Observer {
  std::vector<int64_t> *boundaries = nullptr;
  BranchCoverage *branches = nullptr;
};

class Instantiator {
 public:
  // Evaluates the parameters and requirements; errors are reported.
  Instantiator(const Algorithm &a, const InstanceSpec &spec, Diagnostics *diags);
  bool ok() const { return ok_; }
  // Whether the requirements hold; if not, which does not.
  bool applicable() const { return applicable_; }
  const Requirement *failed_requirement() const { return failed_; }
  // Instantiates rank r; false (reported) on an error in the algorithm.
  bool rank(uint32_t r, RankProgram *out, const Observer *obs = nullptr) const;
  // The i-th parameter's value in this instance, and its default's (ok()).
  int64_t param_value(size_t i) const { return values_[i]; }
  int64_t param_default(size_t i) const { return defaults_[i]; }
  const Algorithm &algorithm() const { return a_; }
  const InstanceSpec &spec() const { return spec_; }
  const Topology &topology() const { return *topo_; }

 private:
  const Algorithm &a_;
  InstanceSpec spec_;
  Diagnostics *diags_;
  std::shared_ptr<const Topology> topo_;
  std::string described_;
  std::vector<std::pair<int, int64_t>> overrides_;  // param slot, value
  std::vector<int64_t> values_, defaults_;          // by parameter
  bool ok_ = true;
  bool applicable_ = true;
  const Requirement *failed_ = nullptr;
};

// The ABI image of a rank program (8-byte words), checked by the core
// verifier; false (reported as CAD-E027 with its message) if rejected.
bool emit_image(const Algorithm &a, const InstanceSpec &spec, const RankProgram &rp,
                const SourceManager &sm, std::vector<uint64_t> *image, uint32_t *size,
                Diagnostics *diags);

}  // namespace cad
