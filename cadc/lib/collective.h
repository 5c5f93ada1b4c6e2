// collective.h - the collectives, with MPI's meaning: the buffers each rank
// has, their sizes in elements (n is the count per rank), and what
// MPI_IN_PLACE means for each.  Instantiation binds an algorithm's buffer
// names through this table; the postcondition checks against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cad {

#define CAD_COLLECTIVE_LIST(X)                          \
  X(Bcast, "bcast", CAD_COLL_BCAST)                     \
  X(Reduce, "reduce", CAD_COLL_REDUCE)                  \
  X(Allreduce, "allreduce", CAD_COLL_ALLREDUCE)         \
  X(Gather, "gather", CAD_COLL_GATHER)                  \
  X(Scatter, "scatter", CAD_COLL_SCATTER)               \
  X(Allgather, "allgather", CAD_COLL_ALLGATHER)         \
  X(Alltoall, "alltoall", CAD_COLL_ALLTOALL)            \
  X(ReduceScatterBlock, "reduce_scatter_block", CAD_COLL_REDUCE_SCATTER_BLOCK) \
  X(Barrier, "barrier", CAD_COLL_BARRIER)

enum class Collective {
#define CAD_X(name, str, abi) name,
  CAD_COLLECTIVE_LIST(CAD_X)
#undef CAD_X
};

// A buffer of the collective at one rank.
struct CollBuffer {
  const char *name;
  bool send;          // the caller's send buffer: read-only
  bool times_p;       // P * n elements, else n
  bool root_only;     // only the root has it (0 elements elsewhere)
};

struct CollectiveInfo {
  const char *name;
  unsigned abi;       // CAD_COLL_*
  bool rooted;
  bool reducing;      // takes an op
  bool inplace_ok;    // MPI_IN_PLACE exists for it
  std::vector<CollBuffer> buffers;
};

const CollectiveInfo &collective_info(Collective c);
// By name; false if unknown.
bool collective_by_name(const std::string &name, Collective *out);
std::vector<std::string> collective_names();

// Where a buffer lives at one rank of one instance: its own ABI buffer, or
// (MPI_IN_PLACE) inside another one at an element offset.
struct Binding {
  uint64_t elems = 0;   // size in elements (0: absent at this rank)
  int alias_of = -1;    // index of the collective buffer it lives in, or -1
  uint64_t offset = 0;  // element offset inside that buffer
};

// The bindings of a collective's buffers at rank r.
std::vector<Binding> bind_buffers(Collective c, uint64_t P, uint64_t n, uint64_t rank,
                                  uint64_t root, bool inplace);

}  // namespace cad
