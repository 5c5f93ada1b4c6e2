// collective.cpp - see collective.h.
#include "collective.h"

#include "../../kmod/uapi/cad.h"

namespace cad {

namespace {

const CollectiveInfo kInfo[] = {
    // name, abi, rooted, reducing, inplace, buffers {name, send, times_p, root_only}
    {"bcast", CAD_COLL_BCAST, true, false, false, {{"buf", false, false, false}}},
    {"reduce", CAD_COLL_REDUCE, true, true, true,
     {{"sendbuf", true, false, false}, {"recvbuf", false, false, true}}},
    {"allreduce", CAD_COLL_ALLREDUCE, false, true, true,
     {{"sendbuf", true, false, false}, {"recvbuf", false, false, false}}},
    {"gather", CAD_COLL_GATHER, true, false, true,
     {{"sendbuf", true, false, false}, {"recvbuf", false, true, true}}},
    {"scatter", CAD_COLL_SCATTER, true, false, true,
     {{"sendbuf", true, true, true}, {"recvbuf", false, false, false}}},
    {"allgather", CAD_COLL_ALLGATHER, false, false, true,
     {{"sendbuf", true, false, false}, {"recvbuf", false, true, false}}},
    {"alltoall", CAD_COLL_ALLTOALL, false, false, true,
     {{"sendbuf", true, true, false}, {"recvbuf", false, true, false}}},
    {"reduce_scatter_block", CAD_COLL_REDUCE_SCATTER_BLOCK, false, true, true,
     {{"sendbuf", true, true, false}, {"recvbuf", false, false, false}}},
    {"barrier", CAD_COLL_BARRIER, false, false, false, {}},
};

}  // namespace

const CollectiveInfo &collective_info(Collective c) { return kInfo[static_cast<int>(c)]; }

bool collective_by_name(const std::string &name, Collective *out) {
  for (size_t i = 0; i < sizeof(kInfo) / sizeof(kInfo[0]); i++)
    if (name == kInfo[i].name) {
      *out = static_cast<Collective>(i);
      return true;
    }
  return false;
}

std::vector<std::string> collective_names() {
  std::vector<std::string> v;
  for (const CollectiveInfo &i : kInfo) v.push_back(i.name);
  return v;
}

std::vector<Binding> bind_buffers(Collective c, uint64_t P, uint64_t n, uint64_t rank,
                                  uint64_t root, bool inplace) {
  const CollectiveInfo &info = collective_info(c);
  std::vector<Binding> b(info.buffers.size());
  for (size_t i = 0; i < b.size(); i++) {
    const CollBuffer &cb = info.buffers[i];
    b[i].elems = cb.root_only && rank != root ? 0 : cb.times_p ? P * n : n;
  }
  if (!inplace) return b;
  // MPI_IN_PLACE: buffer 0 is sendbuf, buffer 1 recvbuf.
  switch (c) {
    case Collective::Reduce:       // at the root, the input is in recvbuf
      if (rank == root) b[0] = {n, 1, 0};
      break;
    case Collective::Allreduce:
      b[0] = {n, 1, 0};
      break;
    case Collective::Gather:       // the root's contribution is in place
      if (rank == root) b[0] = {n, 1, root * n};
      break;
    case Collective::Scatter:      // the root keeps its part in sendbuf
      if (rank == root) b[1] = {n, 0, root * n};
      break;
    case Collective::Allgather:
      b[0] = {n, 1, rank * n};
      break;
    case Collective::Alltoall:  // every block's input in recvbuf (MPI 2.2)
      b[0] = {P * n, 1, 0};
      break;
    case Collective::ReduceScatterBlock:  // input in recvbuf (P * n), result in its start
      b[1].elems = P * n;
      b[0] = {P * n, 1, 0};
      break;
    default:
      break;
  }
  return b;
}

}  // namespace cad
