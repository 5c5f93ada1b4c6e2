// api.cpp - the C API of cadrt.h: argument checks, then runtime.h.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>

#include "runtime.h"

using cadrt::Entered;
using cadrt::rt;
using cadrt::set_error;

static_assert(int{CADRT_DOUBLE} == int{CAD_DT_DOUBLE} && int{CADRT_SHORT_INT} == int{CAD_DT_SHORT_INT}, "datatypes follow cad.h");
static_assert(int{CADRT_SUM} == int{CAD_OP_SUM} && int{CADRT_MAXLOC} == int{CAD_OP_MAXLOC}, "ops follow cad.h");

namespace {

struct Call {
  const char *fn;
  cad::Collective coll;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  cadrt_datatype dt;
  int op;
  int root;
  cadrt_comm comm;
  bool persistent;
};

// Checks a collective call, builds its request; runs it unless persistent.
CADRT_HOT int collective(const Call &c, cadrt_request *req) {
  Entered entered;
  cadrt::clear_error();
  const char *const fn = c.fn;  // (a std::string only for a message)
  if (!rt().initialised()) return rt().not_initialised(c.fn);
  if (!req) return set_error(-EINVAL, std::string(fn) + ": request is NULL");
  *req = nullptr;
  if (!c.comm) return set_error(-EINVAL, std::string(fn) + ": the communicator is NULL");
  const cad::CollectiveInfo &info = cad::collective_info(c.coll);
  const cadrt_comm_s &comm = *c.comm;
  // A user-defined op: its own element type, CADRT_USER.
  std::shared_ptr<const cad::UserOp> uop;
  if (info.reducing && c.op >= 256) {
    if (static_cast<size_t>(c.op - 256) >= rt().user_ops.size())
      return set_error(-EINVAL, std::string(fn) + ": op " + std::to_string(c.op) + " is not an op cadrt_op_lookup gave");
    uop = rt().user_ops[static_cast<size_t>(c.op - 256)];
    if (c.dt != CADRT_USER)
      return set_error(-EINVAL, std::string(fn) + ": the user-defined op " + uop->name +
                                    " takes CADRT_USER as its datatype (its own element type)");
  } else if (c.dt == CADRT_USER && c.coll != cad::Collective::Barrier) {
    return set_error(-EINVAL, std::string(fn) + ": CADRT_USER is the datatype of user-defined ops only");
  }
  const int64_t esize = uop ? uop->elem_size : cad_dtype_size(c.dt);
  if (c.coll != cad::Collective::Barrier && !uop && (c.dt < CADRT_BYTE || c.dt > CADRT_SHORT_INT || esize == 0))
    return set_error(-EINVAL, std::string(fn) + ": datatype " + std::to_string(c.dt) + " is not a cadrt_datatype");
  if (info.reducing && !uop && !cad_reduce_supported(static_cast<unsigned>(c.op), static_cast<unsigned>(c.dt)))
    return set_error(-EINVAL, std::string(fn) + ": op " + std::to_string(c.op) + " (" + cad_op_name(static_cast<unsigned>(c.op)) +
                                  ") does not apply to " + cad_dtype_name(c.dt) + " (as in MPI)");
  if (info.rooted && (c.root < 0 || c.root >= comm.size))
    return set_error(-EINVAL, std::string(fn) + ": root " + std::to_string(c.root) + " is not a rank of the " +
                                  std::to_string(comm.size) + " of the communicator");
  if (c.count > static_cast<size_t>(INT64_MAX / (esize ? esize : 1) / std::max(1, comm.size)))
    return set_error(-EOVERFLOW, std::string(fn) + ": count " + std::to_string(c.count) + " is too large");
  // MPI_IN_PLACE: where MPI has it, and (for rooted collectives) at the root.
  const bool in_send = c.sendbuf == CADRT_IN_PLACE, in_recv = c.recvbuf == CADRT_IN_PLACE;
  const bool inplace = c.coll == cad::Collective::Scatter ? in_recv : in_send;
  if ((c.coll == cad::Collective::Scatter ? in_send : in_recv) || (inplace && !info.inplace_ok))
    return set_error(-EINVAL, std::string(fn) + ": CADRT_IN_PLACE is not allowed there");
  if (inplace && info.rooted && comm.rank != c.root)
    return set_error(-EINVAL, std::string(fn) + ": only the root may pass CADRT_IN_PLACE");
  const cadrt_bound call{static_cast<uint8_t>(c.coll), c.sendbuf, c.recvbuf, c.count, c.dt, c.op, c.root, c.comm,
                         comm.ctx};
  auto g = rt().guard();
  // The call before, again: its request, bound as it was, if it is the
  // most recent spare (checked above like any call; what selection and
  // binding would give is what they gave then).  A 1-byte blocking
  // broadcast's root: about 300 instructions of 1700 fewer.
  if (cadrt_request_s *r = c.persistent ? nullptr : rt().reuse(call)) {
    r->comm = c.comm;
    r->persistent = false;
    rt().start(r);
    *req = r;
    return 0;
  }

  cad::InstanceSpec spec;
  spec.P = comm.size;
  spec.root = info.rooted ? c.root : 0;
  spec.inplace = inplace;
  spec.commutative = true;  // every built-in op is
  if (info.reducing) {
    spec.n = static_cast<int64_t>(c.count);
    spec.dtype = static_cast<unsigned>(c.dt);
    spec.op = static_cast<unsigned>(c.op);
    if (uop) {
      spec.dtype = CAD_DT_USER;
      spec.op = CAD_OP_USER;
      spec.user_op = uop;
      spec.commutative = uop->commutative;
    }
  } else {
    // Data is moved, not combined: bytes are bytes (one cached instance
    // serves every datatype of the same size).
    spec.n = c.coll == cad::Collective::Barrier ? 0 : static_cast<int64_t>(c.count) * esize;
    spec.dtype = CAD_DT_BYTE;
    spec.op = CAD_OP_NONE;
  }
  int err = 0;
  // (The cache's own pointer, good until the cache changes: a request
  // that ran this instance last keeps it without touching its count.)
  const std::shared_ptr<const cadrt::Instance> *inst = rt().instance(c.comm, c.coll, spec, &err);
  if (!inst) return err;
  cadrt_request_s *r = rt().new_request(inst->get());
  r->comm = c.comm;
  if (r->inst != *inst) {
    r->inst = *inst;
    r->exec_ready = false;
  }
  r->persistent = c.persistent;
  // In place with an algorithm that does not declare `inplace` (a
  // library's own algorithm, written for separate buffers only), the
  // program the library selected is its separate-buffers one
  // (Runtime::make_instance), proven only so: the request keeps a buffer
  // of its own, and each start copies the call's input from recvbuf into
  // it before the program runs with it as the send buffer (scatter's root:
  // the receive buffer its own block is copied to, and dropped).  Every
  // rank selects the same algorithm whether it passes CADRT_IN_PLACE or
  // not (a rooted collective's root alone does), so the choice of program
  // is the same on all.  An algorithm without `inplace` was never verified
  // on aliased buffers, so it never runs on them.  The copy is the one MPI
  // libraries make for an in-place call to an algorithm without an
  // in-place form (Open MPI's in-place alltoall goes through a temporary
  // buffer too).
  const bool by_copy = inplace && !(*inst)->alg->inplace;
  const size_t es = static_cast<size_t>(esize), cnt = c.count, P = static_cast<size_t>(comm.size);
  size_t copy_bytes = 0, copy_off = 0;
  if (by_copy) switch (c.coll) {
      case cad::Collective::Gather: copy_bytes = cnt * es, copy_off = static_cast<size_t>(c.root) * cnt * es; break;
      case cad::Collective::Allgather: copy_bytes = cnt * es, copy_off = static_cast<size_t>(comm.rank) * cnt * es; break;
      case cad::Collective::ReduceScatterBlock:
      case cad::Collective::Alltoall: copy_bytes = P * cnt * es; break;
      default: copy_bytes = cnt * es; break;  // reduce, allreduce; scatter's dropped block
    }
  const void *sendbuf = in_send ? nullptr : c.sendbuf;
  void *recvbuf = in_recv ? nullptr : c.recvbuf;
  r->copy_in_from = nullptr;
  // The request's own memory (that copy, the program's scratch) is
  // allocated here: a size the process cannot have (the verifier allows
  // 1 TiB a buffer) is -ENOMEM, not an exception through the C API.
  try {
    if (by_copy) {
      r->copy_in.resize(copy_bytes);
      if (c.coll == cad::Collective::Scatter) {
        recvbuf = r->copy_in.data();
      } else {
        r->copy_in_from = static_cast<const unsigned char *>(c.recvbuf) + copy_off;
        sendbuf = r->copy_in.data();
      }
    } else if (r->copy_in.capacity()) {
      std::vector<unsigned char>().swap(r->copy_in);  // (a spare of an in-place call)
    }
    err = rt().bind(r, sendbuf, recvbuf);
  } catch (const std::bad_alloc &) {
    err = set_error(-ENOMEM, std::string(fn) + ": out of memory for the request's " +
                                 (by_copy && r->copy_in.empty() ? "copy of the in-place buffer"
                                                                : "scratch buffers"));
    std::vector<unsigned char>().swap(r->copy_in);
    r->scratch.clear();
    r->scratch.shrink_to_fit();
  }
  if (err) {
    rt().recycle(r);
    return err;
  }
  r->bound = call;
  if (c.persistent)
    c.comm->persistent_requests++;
  else
    rt().start(r);
  *req = r;
  return 0;
}

// The result of a finished request; frees it unless persistent.
int conclude(cadrt_request *req) {
  cadrt_request r = *req;
  const int result = r->result;
  if (result) set_error(result, r->error.empty() ? std::string("the collective failed: ") + strerror(-result) : r->error);
  if (!r->persistent) {
    rt().recycle(r);
    *req = nullptr;
  }
  return result;
}

}  // namespace

extern "C" {

const char *cadrt_error_message(void) { return cadrt::error_message(); }

int cadrt_op_lookup(const char *lib, const char *name, cadrt_op *op) {
  Entered entered;
  cadrt::clear_error();
  if (!rt().initialised()) return rt().not_initialised("cadrt_op_lookup");
  if (!name || !op) return set_error(-EINVAL, "cadrt_op_lookup: name and op must not be NULL");
  auto g = rt().guard();
  std::shared_ptr<const cad::UserOp> found;
  if (!lib) {
    found = rt().lib.find_op(name);
    if (!found) return set_error(-ENOENT, std::string("cadrt_op_lookup: the library has no operator ") + name);
  } else {
    std::string text, error;
    std::vector<cad::UserOp> ops;
    if (!cad::read_file(lib, cad::kMaxSourceBytes, &text, &error))
      return set_error(-ENOENT, "cadrt_op_lookup: " + error);
    const std::string path = lib;
    if (path.size() > 6 && path.compare(path.size() - 6, 6, ".cadop") == 0) {
      if (!cad::read_cadop(text, &ops, &error)) return set_error(-EINVAL, "cadrt_op_lookup: " + path + ": " + error);
      for (cad::UserOp &u : ops)
        if (u.name == name) found = std::make_shared<const cad::UserOp>(std::move(u));
    } else {
      cad::Library other;
      cad::Diagnostics diags;
      if (!cad::load_library_text(path, text, &other, &diags, /*lazy=*/true))  // (only its operators)
        return set_error(-EINVAL, "cadrt_op_lookup: " + path + ": " +
                                      (diags.empty() ? std::string("not a library") : diags.list()[0].message));
      found = other.find_op(name);
    }
    if (!found) return set_error(-ENOENT, "cadrt_op_lookup: " + path + " has no operator " + name);
  }
  const std::string bytes = cad::userop_to_json(*found).dump();
  auto &ops = rt().user_ops;
  for (size_t i = 0; i < ops.size(); i++)
    if (ops[i]->name == found->name) {
      if (cad::userop_to_json(*ops[i]).dump() != bytes)
        return set_error(-EEXIST, std::string("cadrt_op_lookup: another operator named ") + name + " is in use");
      *op = static_cast<cadrt_op>(256 + i);
      return 0;
    }
  if (ops.size() >= 1024) return set_error(-ENOSPC, "cadrt_op_lookup: 1024 operators at most");
  ops.push_back(found);
  *op = static_cast<cadrt_op>(256 + ops.size() - 1);
  return 0;
}

int cadrt_op_info(cadrt_op op, size_t *elem_size, int *commutative) {
  cadrt::clear_error();
  if (op >= CADRT_SUM && op <= CADRT_MAXLOC) {
    if (elem_size) *elem_size = 0;
    if (commutative) *commutative = 1;
    return 0;
  }
  auto g = rt().guard();
  if (op < 256 || static_cast<size_t>(op - 256) >= rt().user_ops.size())
    return set_error(-EINVAL, "cadrt_op_info: not an op");
  const cad::UserOp &u = *rt().user_ops[static_cast<size_t>(op - 256)];
  if (elem_size) *elem_size = u.elem_size;
  if (commutative) *commutative = u.commutative;
  return 0;
}

size_t cadrt_datatype_size(cadrt_datatype dt) {
  return dt >= CADRT_BYTE && dt <= CADRT_SHORT_INT ? cad_dtype_size(dt) : 0;
}

int cadrt_init(void) {
  Entered entered;
  cadrt::clear_error();
  return rt().init();
}

int cadrt_init_job(int rank, int size, cadrt_allgather_fn allgather, void *ctx) {
  return cadrt_init_job_net(rank, size, allgather, ctx, nullptr);
}

int cadrt_init_job_net(int rank, int size, cadrt_allgather_fn allgather, void *ctx, const struct cadrt_net *net) {
  Entered entered;
  cadrt::clear_error();
  const char *fn = net ? "cadrt_init_job_net" : "cadrt_init_job";
  if (!allgather) return set_error(-EINVAL, std::string(fn) + ": no allgather function");
  if (size < 1 || size > (1 << 20) || rank < 0 || rank >= size)
    return set_error(-EINVAL, std::string(fn) + ": rank " + std::to_string(rank) + " of " + std::to_string(size) +
                                  " is not a rank of a job");
  if (net && (!net->isend || !net->irecv || !net->test || !net->cancel || net->tag_ub < 2))
    return set_error(-EINVAL, "cadrt_init_job_net: the transport lacks a function or tags (tag_ub < 2)");
  cadrt::Runtime::Bootstrap b;
  b.rank = rank;
  b.size = size;
  b.allgather = allgather;
  b.ctx = ctx;
  if (net) {
    b.net = *net;
    b.has_net = true;
  }
  return rt().init_job(b);
}

int cadrt_finalize(void) {
  Entered entered;  // the signal handler must not progress while finalize does
  cadrt::clear_error();
  return rt().finalize();
}

const char *cadrt_engine(void) { return rt().engine_name(); }

CADRT_HOT cadrt_comm cadrt_comm_world(void) { return rt().initialised() ? rt().world.get() : nullptr; }

int cadrt_comm_rank(cadrt_comm comm, int *rank) {
  if (!comm || !rank) return set_error(-EINVAL, "cadrt_comm_rank: NULL argument");
  *rank = comm->rank;
  return 0;
}

int cadrt_comm_size(cadrt_comm comm, int *size) {
  if (!comm || !size) return set_error(-EINVAL, "cadrt_comm_size: NULL argument");
  *size = comm->size;
  return 0;
}

int cadrt_comm_split(cadrt_comm comm, int color, int key, cadrt_comm *out) {
  if (!rt().initialised()) return rt().not_initialised("cadrt_comm_split");
  if (!comm || !out) return set_error(-EINVAL, "cadrt_comm_split: NULL argument");
  *out = nullptr;
  // Everyone's (color, key), through the communicator itself.
  std::vector<int32_t> mine = {color, key}, all(2 * static_cast<size_t>(comm->size));
  cadrt_request req;
  if (int err = cadrt_iallgather(mine.data(), all.data(), 2, CADRT_INT32, comm, &req)) return err;
  if (int err = cadrt_wait(&req)) return err;
  Entered entered;
  auto g = rt().guard();
  const uint64_t split = ++comm->splits;
  if (color < 0) return 0;
  std::vector<int> members;
  for (int q = 0; q < comm->size; q++)
    if (all[2 * q] == color) members.push_back(q);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  auto c = std::make_unique<cadrt_comm_s>();
  // A context no other communicator of these ranks has: derived from the
  // parent's and the number of its splits, the same on every member.
  uint64_t x = comm->ctx * 0x9e3779b97f4a7c15ull + split;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  c->ctx = x | 2;  // never the world's 1
  c->size = static_cast<int>(members.size());
  c->rank_of_ep.assign(rt().nep, -1);
  std::vector<std::vector<int64_t>> places;
  for (int i = 0; i < c->size; i++) {
    const int q = members[static_cast<size_t>(i)];
    if (q == comm->rank) c->rank = i;
    c->ep.push_back(comm->ep[static_cast<size_t>(q)]);
    c->rank_of_ep[comm->ep[static_cast<size_t>(q)]] = i;
    if (!comm->places.empty()) places.push_back(comm->places[static_cast<size_t>(q)]);
  }
  if (places.empty()) {
    c->topo = cad::Topology::flat(c->size);
  } else if (int err = rt().make_topology(c.get(), places)) {
    return err;
  }
  *out = c.release();
  return 0;
}

int cadrt_comm_create(cadrt_comm parent, int n, const int *parent_ranks, unsigned long long id, cadrt_comm *out) {
  Entered entered;
  cadrt::clear_error();
  if (!rt().initialised()) return rt().not_initialised("cadrt_comm_create");
  if (!parent || !parent_ranks || !out || n < 1) return set_error(-EINVAL, "cadrt_comm_create: NULL or empty argument");
  *out = nullptr;
  auto g = rt().guard();
  std::vector<bool> seen(static_cast<size_t>(parent->size), false);
  auto c = std::make_unique<cadrt_comm_s>();
  c->rank = -1;
  c->size = n;
  c->rank_of_ep.assign(rt().nep, -1);
  std::vector<std::vector<int64_t>> places;
  for (int i = 0; i < n; i++) {
    const int q = parent_ranks[i];
    if (q < 0 || q >= parent->size || seen[static_cast<size_t>(q)])
      return set_error(-EINVAL, "cadrt_comm_create: rank " + std::to_string(q) + " is not a rank of the parent or is repeated");
    seen[static_cast<size_t>(q)] = true;
    if (q == parent->rank) c->rank = i;
    c->ep.push_back(parent->ep[static_cast<size_t>(q)]);
    c->rank_of_ep[parent->ep[static_cast<size_t>(q)]] = i;
    if (!parent->places.empty()) places.push_back(parent->places[static_cast<size_t>(q)]);
  }
  if (c->rank < 0) return set_error(-EINVAL, "cadrt_comm_create: the calling rank is not a member");
  // Apart from the world (1) and splits (bit 1 set): bit 2 set, bit 1 clear.
  uint64_t x = parent->ctx ^ (id * 0x9e3779b97f4a7c15ull);
  x ^= x >> 29;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 32;
  c->ctx = (x & ~uint64_t{2}) | 4;
  if (places.empty()) {
    c->topo = cad::Topology::flat(c->size);
  } else if (int err = rt().make_topology(c.get(), places)) {
    return err;
  }
  *out = c.release();
  return 0;
}

int cadrt_comm_free(cadrt_comm *comm) {
  if (rt().forked()) return rt().forked_error("cadrt_comm_free");
  if (!comm || !*comm) return set_error(-EINVAL, "cadrt_comm_free: NULL communicator");
  if ((*comm)->world) return set_error(-EINVAL, "cadrt_comm_free: the world is not freed");
  Entered entered;
  auto g = rt().guard();
  if (rt().comm_busy(*comm)) return set_error(-EBUSY, "cadrt_comm_free: collectives on it are still active");
  if ((*comm)->persistent_requests > 0) {  // the last one's cadrt_req_free deletes it
    (*comm)->freed = true;
    *comm = nullptr;
    return 0;
  }
  rt().forget_comm(*comm);
  delete *comm;
  *comm = nullptr;
  return 0;
}

#define CALL(fn, coll, s, r, count, dt, op, root, comm, persistent) \
  collective({fn, cad::Collective::coll, s, r, count, dt, op, root, comm, persistent}, req)

CADRT_HOT int cadrt_ibcast(void *buf, size_t count, cadrt_datatype dt, int root, cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_ibcast", Bcast, nullptr, buf, count, dt, 0, root, comm, false);
}
CADRT_HOT int cadrt_ireduce(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_op op, int root, cadrt_comm comm,
                  cadrt_request *req) {
  return CALL("cadrt_ireduce", Reduce, s, r, count, dt, op, root, comm, false);
}
CADRT_HOT int cadrt_iallreduce(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_op op, cadrt_comm comm,
                     cadrt_request *req) {
  return CALL("cadrt_iallreduce", Allreduce, s, r, count, dt, op, 0, comm, false);
}
CADRT_HOT int cadrt_igather(const void *s, void *r, size_t count, cadrt_datatype dt, int root, cadrt_comm comm,
                  cadrt_request *req) {
  return CALL("cadrt_igather", Gather, s, r, count, dt, 0, root, comm, false);
}
CADRT_HOT int cadrt_iscatter(const void *s, void *r, size_t count, cadrt_datatype dt, int root, cadrt_comm comm,
                   cadrt_request *req) {
  return CALL("cadrt_iscatter", Scatter, s, r, count, dt, 0, root, comm, false);
}
CADRT_HOT int cadrt_iallgather(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_iallgather", Allgather, s, r, count, dt, 0, 0, comm, false);
}
CADRT_HOT int cadrt_ialltoall(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_ialltoall", Alltoall, s, r, count, dt, 0, 0, comm, false);
}
CADRT_HOT int cadrt_ireduce_scatter_block(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_op op,
                                cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_ireduce_scatter_block", ReduceScatterBlock, s, r, count, dt, op, 0, comm, false);
}
CADRT_HOT int cadrt_ibarrier(cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_ibarrier", Barrier, nullptr, nullptr, 0, CADRT_BYTE, 0, 0, comm, false);
}

int cadrt_bcast_init(void *buf, size_t count, cadrt_datatype dt, int root, cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_bcast_init", Bcast, nullptr, buf, count, dt, 0, root, comm, true);
}
int cadrt_reduce_init(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_op op, int root,
                      cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_reduce_init", Reduce, s, r, count, dt, op, root, comm, true);
}
int cadrt_allreduce_init(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_op op, cadrt_comm comm,
                         cadrt_request *req) {
  return CALL("cadrt_allreduce_init", Allreduce, s, r, count, dt, op, 0, comm, true);
}
int cadrt_gather_init(const void *s, void *r, size_t count, cadrt_datatype dt, int root, cadrt_comm comm,
                      cadrt_request *req) {
  return CALL("cadrt_gather_init", Gather, s, r, count, dt, 0, root, comm, true);
}
int cadrt_scatter_init(const void *s, void *r, size_t count, cadrt_datatype dt, int root, cadrt_comm comm,
                       cadrt_request *req) {
  return CALL("cadrt_scatter_init", Scatter, s, r, count, dt, 0, root, comm, true);
}
int cadrt_allgather_init(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_comm comm,
                         cadrt_request *req) {
  return CALL("cadrt_allgather_init", Allgather, s, r, count, dt, 0, 0, comm, true);
}
int cadrt_alltoall_init(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_comm comm,
                        cadrt_request *req) {
  return CALL("cadrt_alltoall_init", Alltoall, s, r, count, dt, 0, 0, comm, true);
}
int cadrt_reduce_scatter_block_init(const void *s, void *r, size_t count, cadrt_datatype dt, cadrt_op op,
                                    cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_reduce_scatter_block_init", ReduceScatterBlock, s, r, count, dt, op, 0, comm, true);
}
int cadrt_barrier_init(cadrt_comm comm, cadrt_request *req) {
  return CALL("cadrt_barrier_init", Barrier, nullptr, nullptr, 0, CADRT_BYTE, 0, 0, comm, true);
}

CADRT_HOT int cadrt_start(cadrt_request *req) {
  Entered entered;
  cadrt::clear_error();
  if (rt().forked()) return rt().forked_error("cadrt_start");
  if (!req || !*req) return set_error(-EINVAL, "cadrt_start: NULL request");
  if (!(*req)->persistent) return set_error(-EINVAL, "cadrt_start: not a persistent request");
  auto g = rt().guard();
  return rt().start(*req);
}

int cadrt_request_peek(cadrt_request req, int *flag) {
  cadrt::clear_error();
  if (rt().forked()) return rt().forked_error("cadrt_request_peek");
  if (!flag) return set_error(-EINVAL, "cadrt_request_peek: NULL flag");
  // (Atomic loads: under the thread engine the progress thread writes
  // them.)
  if (!req || !__atomic_load_n(&req->active, __ATOMIC_RELAXED) || __atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
    *flag = 1;
  else
    *flag = rt().engine == cadrt::Engine::Kernel && !rt().kernel_running(req);
  return 0;
}

// As MPI implementations do (MPI 4.1 says so: a loop of
// MPI_Request_get_status alone must complete the operation), one turn of
// progress when the request has not completed, so a program polling it
// alone under the poll engine sees its collective complete.
int cadrt_request_get_status(cadrt_request req, int *flag) {
  if (!flag) {
    cadrt::clear_error();
    return set_error(-EINVAL, "cadrt_request_get_status: NULL flag");
  }
  const int err = cadrt_request_peek(req, flag);
  if (err || *flag) return err;
  Entered entered;
  auto g = rt().guard();
  *flag = rt().test(req) ? 1 : 0;
  return 0;
}

CADRT_HOT int cadrt_test(cadrt_request *req, int *flag) {
  // The kernel engine's test of a running collective is one look at the
  // status page: no library state to guard, nothing to progress (the
  // module does that), so none of the entry and exit below.  A program
  // that tests between short pieces of work (the KACC codelet tests after
  // every 4x4 matrix product) pays only this.
  // The user-space engines answer the same way when nothing can have
  // moved since the last pass (Runtime::quiet()): a test then costs a look
  // at each peer's ring, as Open MPI's own MPI_Test of a pending request
  // costs little more than its progress loop's.  (The flags are read as
  // atomics: under the thread engine the progress thread writes them.  A
  // stale "not done" only sends a later test the whole way.)
  if (rt().forked()) return rt().forked_error("cadrt_test");
  if (req && *req && (*req)->started_ns) rt().first_look(*req);
  // A finished request of a user-space engine (in its start, as a small
  // broadcast's root, or in a pass since) is concluded without entering
  // the library: no pass touches it any more (finished), and what
  // concluding touches besides it, the spares, only calls do.  Entering
  // would fence, and the fence wait for the stores of the pass that
  // finished it, a message just written into a peer's ring, to reach the
  // other CPU (a 1-byte ibcast's root through libcadmpi, which tests
  // right after the start: about 100 ticks of 1300 on the 2-core VM).
  // A failure takes the whole way, which sets its message.  A persistent
  // request is only made inactive again (done cleared, as conclude's
  // caller below does): libcadmpi's MPI_Start of a small persistent
  // broadcast tests its request right after starting it, and entering
  // was 190 of that test's 211 instructions.
  if (req && flag && *req && rt().engine != cadrt::Engine::Kernel &&
      __atomic_load_n(&(*req)->finished, __ATOMIC_ACQUIRE) && (*req)->result == 0) {
    cadrt::clear_error();
    *flag = 1;
    if ((*req)->persistent) {
      (*req)->done = false;
      return 0;
    }
    rt().recycle(*req);
    *req = nullptr;
    return 0;
  }
  if (req && flag && *req && __atomic_load_n(&(*req)->active, __ATOMIC_RELAXED) &&
      !__atomic_load_n(&(*req)->done, __ATOMIC_RELAXED)) {
    cadrt::Runtime &r = rt();
    const bool quiet = r.engine == cadrt::Engine::Kernel ? r.kernel_running(*req) : r.quiet();
    if (quiet) {
      cadrt::clear_error();
      *flag = 0;
      return 0;
    }
  }
  Entered entered;
  cadrt::clear_error();
  if (!req || !flag) return set_error(-EINVAL, "cadrt_test: NULL argument");
  *flag = 0;
  if (!*req) {
    *flag = 1;
    return 0;
  }
  auto g = rt().guard();
  if ((*req)->persistent && !(*req)->active && !(*req)->done) {
    *flag = 1;  // never started: inactive
    return 0;
  }
  if (!rt().test(*req)) return 0;
  *flag = 1;
  const int result = conclude(req);
  if (*req) (*req)->done = false;  // a persistent request is inactive again
  return result;
}

CADRT_HOT int cadrt_wait(cadrt_request *req) {
  Entered entered;
  cadrt::clear_error();
  if (rt().forked()) return rt().forked_error("cadrt_wait");
  if (!req) return set_error(-EINVAL, "cadrt_wait: NULL argument");
  if (!*req) return 0;
  if ((*req)->persistent && !(*req)->active && !(*req)->done) return 0;
  rt().wait(*req);
  auto g = rt().guard();
  const int result = conclude(req);
  if (*req) (*req)->done = false;
  return result;
}

CADRT_HOT int cadrt_waitall(int n, cadrt_request reqs[]) {
  int first = 0;
  std::string why;
  for (int i = 0; i < n; i++) {
    const int err = cadrt_wait(&reqs[i]);
    if (err && !first) {
      first = err;
      why = cadrt_error_message();
    }
  }
  if (first) set_error(first, why);
  return first;
}

int cadrt_req_free(cadrt_request *req) {
  if (rt().forked()) return rt().forked_error("cadrt_req_free");
  if (!req) return set_error(-EINVAL, "cadrt_req_free: NULL argument");
  if (!*req) return 0;
  Entered entered;
  if ((*req)->active) rt().wait(*req);
  auto g = rt().guard();
  cadrt_comm_s *orphan = nullptr;  // freed while this request was on it
  if ((*req)->persistent && (*req)->comm && --(*req)->comm->persistent_requests == 0 && (*req)->comm->freed)
    orphan = (*req)->comm;
  rt().recycle(*req);
  *req = nullptr;
  if (orphan) {
    rt().forget_comm(orphan);
    delete orphan;
  }
  return 0;
}

void cadrt_poll_begin(void) {
  if (rt().forked()) return;
  rt().enter();
  rt().commit(1);
}

void cadrt_poll_end(void) {
  if (rt().forked()) return;
  rt().commit(-1);
  rt().leave();
}

const char *cadrt_request_algorithm(cadrt_request req) {
  if (!req || !req->inst) return "";
  return req->inst->alg ? req->inst->alg->name.c_str() : "hand-built";
}

}  // extern "C"
