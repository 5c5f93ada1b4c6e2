// builder.cpp - hand-built CADs, in the shape of the KACC paper's API
// (InitCAD, MakeSendNode, ConnectNode, IssueCAD, QueryCAD).  Issuing sorts
// the nodes topologically, writes a CAD program image and runs it through
// the core verifier like any compiled program: nothing unverified runs.
#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "runtime.h"

using cadrt::Entered;
using cadrt::rt;
using cadrt::set_error;

struct cadrt_cad_s {
  cadrt_comm comm = nullptr;
  struct Buf {
    unsigned char *base;
    uint64_t size;
    bool writable;
  };
  std::vector<Buf> bufs;
  std::vector<cad_node> nodes;
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // (from, to)
  std::vector<std::shared_ptr<const cad::UserOp>> ops;  // user-defined operators, cad_node.user_op
};

namespace {

int add_node(cadrt_cad cad, const cad_node &n, int *node, const char *fn) {
  if (!cad) return set_error(-EINVAL, std::string(fn) + ": NULL CAD");
  if (cad->nodes.size() >= cad_default_limits.max_nodes)
    return set_error(-E2BIG, std::string(fn) + ": more nodes than the verifier's limit");
  cad->nodes.push_back(n);
  if (node) *node = static_cast<int>(cad->nodes.size() - 1);
  return 0;
}

bool valid_buf(const cadrt_cad_s *cad, int buf) { return buf >= 0 && static_cast<size_t>(buf) < cad->bufs.size(); }

}  // namespace

extern "C" {

int cadrt_cad_new(cadrt_comm comm, cadrt_cad *cad) {
  if (!comm || !cad) return set_error(-EINVAL, "cadrt_cad_new: NULL argument");
  *cad = new cadrt_cad_s();
  (*cad)->comm = comm;
  return 0;
}

int cadrt_cad_buffer(cadrt_cad cad, void *base, size_t size, int writable, int *buf) {
  if (!cad || !buf) return set_error(-EINVAL, "cadrt_cad_buffer: NULL argument");
  if (!base && size) return set_error(-EINVAL, "cadrt_cad_buffer: NULL base for " + std::to_string(size) + " bytes");
  cad->bufs.push_back({static_cast<unsigned char *>(base), size, writable != 0});
  *buf = static_cast<int>(cad->bufs.size() - 1);
  return 0;
}

int cadrt_cad_send(cadrt_cad cad, int buf, size_t offset, size_t len, int peer, unsigned tag, int *node) {
  cad_node n = {};
  n.kind = CAD_NODE_SEND;
  n.src_buf = static_cast<uint32_t>(buf);
  n.src_off = offset;
  n.len = len;
  n.peer = static_cast<uint32_t>(peer);
  n.tag = tag;
  n.line = CAD_NO_LINE;
  return add_node(cad, n, node, "cadrt_cad_send");
}

int cadrt_cad_recv(cadrt_cad cad, int buf, size_t offset, size_t len, int peer, unsigned tag, int *node) {
  cad_node n = {};
  n.kind = CAD_NODE_RECV;
  n.dst_buf = static_cast<uint32_t>(buf);
  n.dst_off = offset;
  n.len = len;
  n.peer = static_cast<uint32_t>(peer);
  n.tag = tag;
  n.line = CAD_NO_LINE;
  return add_node(cad, n, node, "cadrt_cad_recv");
}

int cadrt_cad_copy(cadrt_cad cad, int dst_buf, size_t dst_offset, int src_buf, size_t src_offset, size_t len,
                   int *node) {
  cad_node n = {};
  n.kind = CAD_NODE_COPY;
  n.dst_buf = static_cast<uint32_t>(dst_buf);
  n.dst_off = dst_offset;
  n.src_buf = static_cast<uint32_t>(src_buf);
  n.src_off = src_offset;
  n.len = len;
  n.line = CAD_NO_LINE;
  return add_node(cad, n, node, "cadrt_cad_copy");
}

int cadrt_cad_reduce(cadrt_cad cad, int dst_buf, size_t dst_offset, int src_buf, size_t src_offset, size_t count,
                     cadrt_datatype dt, cadrt_op op, int *node) {
  if (!cad) return set_error(-EINVAL, "cadrt_cad_reduce: NULL CAD");
  cad_node n = {};
  size_t esize = cadrt_datatype_size(dt);
  if (op >= CADRT_USER_OP_FIRST) {  // a user-defined operator, over its own element type
    const size_t k = static_cast<size_t>(op - CADRT_USER_OP_FIRST);
    if (k >= rt().user_ops.size())
      return set_error(-EINVAL, "cadrt_cad_reduce: op " + std::to_string(op) + " is not an op cadrt_op_lookup gave");
    const std::shared_ptr<const cad::UserOp> &u = rt().user_ops[k];
    if (dt != CADRT_USER)
      return set_error(-EINVAL, "cadrt_cad_reduce: the user-defined op " + u->name + " takes CADRT_USER as its datatype");
    auto at = std::find(cad->ops.begin(), cad->ops.end(), u);
    n.user_op = static_cast<uint32_t>(at - cad->ops.begin());
    if (at == cad->ops.end()) cad->ops.push_back(u);
    esize = u->elem_size;
    n.dtype = CAD_DT_USER;
    n.op = CAD_OP_USER;
  } else {
    if (!esize) return set_error(-EINVAL, "cadrt_cad_reduce: not a datatype (CADRT_USER goes with a user-defined op)");
    n.dtype = static_cast<uint8_t>(dt);
    n.op = static_cast<uint8_t>(op);
  }
  if (count > UINT64_MAX / esize) return set_error(-EINVAL, "cadrt_cad_reduce: count * element size overflows");
  n.kind = CAD_NODE_REDUCE;
  n.dst_buf = static_cast<uint32_t>(dst_buf);
  n.dst_off = dst_offset;
  n.src_buf = static_cast<uint32_t>(src_buf);
  n.src_off = src_offset;
  n.len = count * esize;
  n.line = CAD_NO_LINE;
  return add_node(cad, n, node, "cadrt_cad_reduce");
}

int cadrt_cad_connect(cadrt_cad cad, int from, int to) {
  if (!cad) return set_error(-EINVAL, "cadrt_cad_connect: NULL CAD");
  const int n = static_cast<int>(cad->nodes.size());
  if (from < 0 || from >= n || to < 0 || to >= n)
    return set_error(-EINVAL, "cadrt_cad_connect: node " + std::to_string(from < 0 || from >= n ? from : to) +
                                  " does not exist");
  if (from == to) return set_error(-EINVAL, "cadrt_cad_connect: node " + std::to_string(from) + " cannot follow itself");
  cad->edges.push_back({static_cast<uint32_t>(from), static_cast<uint32_t>(to)});
  return 0;
}

int cadrt_cad_issue(cadrt_cad cad, cadrt_request *req) {
  Entered entered;
  cadrt::clear_error();
  if (!cad || !req) return set_error(-EINVAL, "cadrt_cad_issue: NULL argument");
  *req = nullptr;
  if (!rt().initialised()) return rt().not_initialised("cadrt_cad_issue");
  for (const cad_node &n : cad->nodes) {
    const bool bad = (n.kind != CAD_NODE_RECV && !valid_buf(cad, static_cast<int>(n.src_buf))) ||
                     (n.kind != CAD_NODE_SEND && !valid_buf(cad, static_cast<int>(n.dst_buf)));
    if (bad) return set_error(-EINVAL, "cadrt_cad_issue: a node names a buffer that was not declared");
  }
  // Buffers of one program may not overlap.
  std::vector<size_t> order(cad->bufs.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cad->bufs[a].base < cad->bufs[b].base; });
  for (size_t k = 1; k < order.size(); k++) {
    const auto &a = cad->bufs[order[k - 1]], &b = cad->bufs[order[k]];
    if (a.size && b.size && a.base + a.size > b.base)
      return set_error(-EINVAL, "cadrt_cad_issue: buffers " + std::to_string(order[k - 1]) + " and " +
                                    std::to_string(order[k]) + " overlap");
  }
  // Topological order (Kahn, lowest index first: a CAD built in order
  // keeps its numbering).
  const size_t N = cad->nodes.size();
  std::vector<std::vector<uint32_t>> succ(N);
  std::vector<uint32_t> indeg(N, 0);
  for (const auto &e : cad->edges) {
    succ[e.first].push_back(e.second);
    indeg[e.second]++;
  }
  std::vector<uint32_t> pos(N), sorted;
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < N; i++)
    if (!indeg[i]) ready.push_back(i);
  std::make_heap(ready.begin(), ready.end(), std::greater<uint32_t>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<uint32_t>());
    const uint32_t v = ready.back();
    ready.pop_back();
    pos[v] = static_cast<uint32_t>(sorted.size());
    sorted.push_back(v);
    for (uint32_t w : succ[v])
      if (--indeg[w] == 0) {
        ready.push_back(w);
        std::push_heap(ready.begin(), ready.end(), std::greater<uint32_t>());
      }
  }
  if (sorted.size() != N) return set_error(-EINVAL, "cadrt_cad_issue: the edges form a cycle");
  std::vector<cad_node> nodes(N);
  std::vector<cad_edge> edges;
  for (uint32_t k = 0; k < N; k++) {
    const uint32_t v = sorted[k];
    nodes[k] = cad->nodes[v];
    std::vector<uint32_t> to;
    for (uint32_t w : succ[v]) to.push_back(pos[w]);
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    nodes[k].edge_first = static_cast<uint32_t>(edges.size());
    nodes[k].edge_count = static_cast<uint32_t>(to.size());
    for (uint32_t t : to) edges.push_back({t});
  }
  std::string strings("\0hand-built\0buffer\0", 19);
  std::vector<cad_buffer> bufs;
  for (const auto &b : cad->bufs) {
    cad_buffer cb = {};
    cb.kind = b.writable ? CAD_BUF_RECV : CAD_BUF_SEND;
    cb.access = b.writable ? CAD_ACC_READ | CAD_ACC_WRITE : CAD_ACC_READ;
    cb.size = b.size;
    cb.name = 12;
    bufs.push_back(cb);
  }
  cad::OpSection ops;
  for (const auto &u : cad->ops) {
    ops.add(*u, static_cast<uint32_t>(strings.size()), CAD_NO_LINE);
    strings += u->name;
    strings += '\0';
  }
  cad_image_desc d = {};
  d.rank = static_cast<uint32_t>(cad->comm->rank);
  d.nranks = static_cast<uint32_t>(cad->comm->size);
  d.collective = CAD_COLL_CUSTOM;
  d.name = 1;
  d.buffers = bufs.data();
  d.n_buffers = static_cast<uint32_t>(bufs.size());
  d.nodes = nodes.data();
  d.n_nodes = static_cast<uint32_t>(nodes.size());
  d.edges = edges.data();
  d.n_edges = static_cast<uint32_t>(edges.size());
  ops.fill(&d);
  d.strings = strings.data();
  d.n_strings = static_cast<uint32_t>(strings.size());
  const uint64_t size = cad_image_size(&d);
  if (!size || size > cad_default_limits.max_image_size)
    return set_error(-E2BIG, "cadrt_cad_issue: the program is larger than the verifier's limit");
  auto inst = std::make_shared<cadrt::Instance>();
  inst->image.assign((size + 7) / 8, 0);
  if (int err = cad_image_write(&d, inst->image.data(), size))
    return set_error(err, "cadrt_cad_issue: writing the program failed");
  char msg[512];
  cad_log log;
  cad_log_init(&log, msg, sizeof msg);
  if (int err = cad_verify(inst->image.data(), static_cast<uint32_t>(size), nullptr, &inst->prog, &log))
    return set_error(err, std::string("cadrt_cad_issue: the verifier rejected the CAD: ") + msg);
  inst->index();
  inst->desc = "hand-built CAD of " + std::to_string(N) + " nodes";
  auto g = rt().guard();
  auto r = std::make_unique<cadrt_request_s>();
  r->comm = cad->comm;
  r->inst = inst;
  r->from_cad = true;
  r->bufs.clear();
  for (const auto &b : cad->bufs) r->bufs.push_back(b.base);
  r->exec_mem.assign((cad_exec_mem_size(&inst->prog) + 3) / 4, 0);
  r->xfer.assign(inst->prog.n_nodes, cadrt::Xfer());
  r->netwait.reserve(inst->prog.n_nodes);  // progress() must not allocate (Runtime::bind)
  r->outgoing.reserve(inst->prog.n_nodes);
  r->error.reserve(cadrt::kWhyBytes);
  r->aborted.reserve(static_cast<size_t>(r->comm->size));
  cad_exec_init(&r->ex, &inst->prog, r->exec_mem.data());
  rt().start(r.get());
  *req = r.release();
  return 0;
}

int cadrt_cad_query(cadrt_request *req, int *done) { return cadrt_test(req, done); }

int cadrt_cad_free(cadrt_cad *cad) {
  if (!cad) return set_error(-EINVAL, "cadrt_cad_free: NULL argument");
  delete *cad;
  *cad = nullptr;
  return 0;
}

}  // extern "C"
