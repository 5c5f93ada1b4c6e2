// cadmpi.cpp - libcadmpi.so: LD_PRELOAD it into an unmodified MPI
// program and its collectives run through cadrt.
//
// What goes through cadrt: MPI_I{bcast, reduce, allreduce, gather,
// scatter, allgather, alltoall, reduce_scatter_block, barrier} and their
// blocking forms, on intracommunicators, with predefined datatypes whose
// extent is their size, predefined ops (MIN/MAXLOC on the pair types),
// MPI_IN_PLACE where MPI has it.  Everything else (derived datatypes,
// user ops, intercommunicators, MPI_THREAD_MULTIPLE programs) falls
// through to the MPI library unchanged.  (Ranks on other nodes are reached
// by MPI point-to-point inside cadrt: cadrt_net.h.)  The decision
// is made from the call's own arguments, so every rank of a correct
// program makes the same one -- except a program that describes the same
// data with a predefined type on one rank and a derived type on another,
// which must not use libcadmpi (CADMPI=0 turns it off).
//
// Requests: a cadrt collective is handed to the program as an MPI
// generalized request.  The MPI_Wait/Test families are interposed: they
// progress cadrt, complete the generalized requests whose collectives
// finished, and then let MPI do the waiting or testing over the whole
// array, so cadrt and point-to-point requests mix freely.
//
// CADMPI=0 disables it; CADMPI_STATS=1 prints, at MPI_Finalize on rank 0,
// how many calls went through cadrt and how many fell through.
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cadrt/cadrt_mpi.h"

namespace {

bool g_on = false;
long g_through = 0, g_fallen = 0;

// A cadrt collective behind an MPI generalized request.
struct Ours {
  cadrt_request req = nullptr;
  int result = 0;
  std::string why;
  const char *fn = "";
};
// Not completed yet: the generalized request and its collective.  (A
// vector: there are few at a time, and progress() visits them all anyway.)
struct Live {
  MPI_Request req;
  Ours *o;
};
std::vector<Live> g_live;
// Ours freed by MPI, for the next calls (a small collective in a loop
// allocates nothing of ours).
std::vector<Ours *> g_spare;

bool live(MPI_Request req) {
  for (const Live &l : g_live)
    if (l.req == req) return true;
  return false;
}

int query_fn(void *extra, MPI_Status *status) {
  const Ours *o = static_cast<const Ours *>(extra);
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = o->result ? MPI_ERR_OTHER : MPI_SUCCESS;
  return status->MPI_ERROR;
}

int free_fn(void *extra) {
  Ours *o = static_cast<Ours *>(extra);
  if (g_spare.size() >= 16) {
    delete o;
  } else {
    *o = Ours();
    g_spare.push_back(o);
  }
  return MPI_SUCCESS;
}

int cancel_fn(void *, int) { return MPI_SUCCESS; }  // a collective is not cancelled

// Progress cadrt; complete the generalized requests of finished ones.
void progress() {
  for (size_t i = 0; i < g_live.size();) {
    Ours *o = g_live[i].o;
    int flag = 0;
    const int err = cadrt_test(&o->req, &flag);
    if (!flag && !err) {
      i++;
      continue;
    }
    o->result = err;
    if (err) {
      o->why = cadrt_error_message();
      fprintf(stderr, "cadmpi: %s failed: %s\n", o->fn, o->why.c_str());
    }
    PMPI_Grequest_complete(g_live[i].req);
    g_live[i] = g_live.back();
    g_live.pop_back();
  }
}

void idle(int *spins) {
  if (++*spins > 64) sched_yield();
}

// A wait loop alternates cadrt's progress and MPI's (never one alone: the
// program's other requests, or a peer's progress, may depend on MPI's).
// Inside it cadrt is told we poll, so the signal engine neither wakes its
// helper nor interrupts us for every message.
struct Polling {
  Polling() { cadrt_poll_begin(); }
  ~Polling() { cadrt_poll_end(); }
};

int wrap(cadrt_request r, const char *fn, MPI_Request *req) {
  Ours *o;
  if (g_spare.empty()) {
    o = new Ours;
  } else {
    o = g_spare.back();
    g_spare.pop_back();
  }
  o->req = r;
  o->fn = fn;
  PMPI_Grequest_start(query_fn, free_fn, cancel_fn, o, req);
  g_live.push_back({*req, o});
  g_through++;
  return MPI_SUCCESS;
}

// A blocking collective through cadrt.
int finish_now(cadrt_request r, const char *fn) {
  g_through++;
  const int err = cadrt_wait(&r);
  if (err) {
    fprintf(stderr, "cadmpi: %s failed: %s\n", fn, cadrt_error_message());
    return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

// A predefined datatype whose extent is its size: true with its size.
bool named(MPI_Datatype dt, int *size_out) {
  // The answers for predefined types, which are never freed, are kept by
  // handle (a derived type is asked every time: once freed, its handle
  // may name another type).
  static struct {
    MPI_Datatype dt;
    int size;  // 0: not one we take
  } seen[8];
  static unsigned n_seen;
  if (dt == MPI_DATATYPE_NULL) return false;
  for (unsigned i = 0; i < n_seen; i++)
    if (seen[i].dt == dt) {
      *size_out = seen[i].size;
      return seen[i].size > 0;
    }
  int ni, na, nd, combiner;
  if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
  if (combiner != MPI_COMBINER_NAMED) return false;
  MPI_Aint lb, extent;
  int size;
  PMPI_Type_get_extent(dt, &lb, &extent);
  PMPI_Type_size(dt, &size);
  const bool ok = lb == 0 && extent == size && size > 0;
  if (n_seen < sizeof seen / sizeof seen[0]) seen[n_seen++] = {dt, ok ? size : 0};
  *size_out = size;
  return ok;
}

// Bytes of count elements of a datatype for the non-reducing collectives.
bool bytes_of(int count, MPI_Datatype dt, size_t *out) {
  int size;
  if (count < 0 || !named(dt, &size)) return false;
  *out = static_cast<size_t>(count) * static_cast<size_t>(size);
  return true;
}

// The cadrt datatype of a predefined MPI one, for reductions.
bool elem_of(MPI_Datatype dt, cadrt_datatype *out) {
  static const struct {
    MPI_Datatype mpi;
    cadrt_datatype cad;
  } table[] = {
      {MPI_SIGNED_CHAR, CADRT_INT8}, {MPI_CHAR, CADRT_INT8}, {MPI_INT8_T, CADRT_INT8},
      {MPI_UNSIGNED_CHAR, CADRT_UINT8}, {MPI_UINT8_T, CADRT_UINT8}, {MPI_BYTE, CADRT_UINT8},
      {MPI_SHORT, CADRT_INT16}, {MPI_INT16_T, CADRT_INT16}, {MPI_UNSIGNED_SHORT, CADRT_UINT16},
      {MPI_UINT16_T, CADRT_UINT16}, {MPI_INT, CADRT_INT32}, {MPI_INT32_T, CADRT_INT32},
      {MPI_UNSIGNED, CADRT_UINT32}, {MPI_UINT32_T, CADRT_UINT32}, {MPI_LONG, CADRT_INT64},
      {MPI_LONG_LONG, CADRT_INT64}, {MPI_INT64_T, CADRT_INT64}, {MPI_UNSIGNED_LONG, CADRT_UINT64},
      {MPI_UNSIGNED_LONG_LONG, CADRT_UINT64}, {MPI_UINT64_T, CADRT_UINT64}, {MPI_FLOAT, CADRT_FLOAT},
      {MPI_DOUBLE, CADRT_DOUBLE}, {MPI_FLOAT_INT, CADRT_FLOAT_INT}, {MPI_DOUBLE_INT, CADRT_DOUBLE_INT},
      {MPI_2INT, CADRT_INT_INT}, {MPI_LONG_INT, CADRT_LONG_INT}, {MPI_SHORT_INT, CADRT_SHORT_INT},
  };
  if (dt == MPI_DATATYPE_NULL) return false;
  for (const auto &e : table)
    if (e.mpi == dt) {
      // The pair types: only where MPI's layout is cadrt's.
      MPI_Aint lb, extent;
      PMPI_Type_get_extent(dt, &lb, &extent);
      if (lb != 0 || static_cast<size_t>(extent) != cadrt_datatype_size(e.cad)) return false;
      *out = e.cad;
      return true;
    }
  return false;
}

bool op_of(MPI_Op op, cadrt_op *out) {
  static const struct {
    MPI_Op mpi;
    cadrt_op cad;
  } table[] = {
      {MPI_SUM, CADRT_SUM},   {MPI_PROD, CADRT_PROD}, {MPI_MIN, CADRT_MIN},       {MPI_MAX, CADRT_MAX},
      {MPI_BAND, CADRT_BAND}, {MPI_BOR, CADRT_BOR},   {MPI_BXOR, CADRT_BXOR},     {MPI_LAND, CADRT_LAND},
      {MPI_LOR, CADRT_LOR},   {MPI_LXOR, CADRT_LXOR}, {MPI_MINLOC, CADRT_MINLOC}, {MPI_MAXLOC, CADRT_MAXLOC},
  };
  for (const auto &e : table)
    if (e.mpi == op) {
      *out = e.cad;
      return true;
    }
  return false;
}

bool comm_of(MPI_Comm comm, cadrt_comm *out) { return g_on && cadrt_comm_from_mpi(comm, out) == 0; }

const void *in_send(const void *p) { return p == MPI_IN_PLACE ? CADRT_IN_PLACE : p; }

bool g_verbose = false;

// Counts a call left to MPI (and says why under CADRT_VERBOSE=1).  Every
// wrapper clears cadrt's error before deciding, so a message here is the
// reason cadrt declined the call.
int fell(const char *fn, int rc) {
  g_fallen++;
  if (g_verbose) {
    const char *why = cadrt_error_message();
    fprintf(stderr, "cadmpi: %s left to MPI: %s\n", fn, *why ? why : "a datatype, op or communicator cadrt does not take");
  }
  return rc;
}

void start() {
  const char *off = getenv("CADMPI");
  if (off && strcmp(off, "0") == 0) return;
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  if (provided == MPI_THREAD_MULTIPLE) return;  // cadrt is called from one thread at a time
  const int err = cadrt_init_mpi(MPI_COMM_WORLD);
  g_on = err == 0;
  const char *v = getenv("CADRT_VERBOSE");
  g_verbose = v && strcmp(v, "0") != 0;
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!g_on && v && strcmp(v, "0") != 0 && rank == 0)
    fprintf(stderr, "cadmpi: collectives are left to MPI: %s\n",
            *cadrt_error_message() ? cadrt_error_message() : strerror(-err));
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- life

int MPI_Init(int *argc, char ***argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) start();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) start();
  return rc;
}

int MPI_Finalize(void) {
  if (g_on) {
    for (int spins = 0; !g_live.empty(); idle(&spins)) progress();
    cadrt_finalize();
    g_on = false;
    const char *stats = getenv("CADMPI_STATS");
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (stats && strcmp(stats, "0") != 0)
      fprintf(stderr, "cadmpi: rank %d: %ld collectives through cadrt, %ld left to MPI\n", rank, g_through,
              g_fallen);
  }
  return PMPI_Finalize();
}

// ---------------------------------------------------------------- completion

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
  if (g_live.empty()) return PMPI_Wait(req, status);
  Polling polling;

  for (int spins = 0;; idle(&spins)) {
    progress();
    int flag = 0;
    const int rc = PMPI_Test(req, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
  progress();
  return PMPI_Test(req, flag, status);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  if (g_live.empty()) return PMPI_Waitall(n, reqs, statuses);
  Polling polling;

  for (int spins = 0;; idle(&spins)) {
    progress();
    int flag = 0;
    const int rc = PMPI_Testall(n, reqs, &flag, statuses);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
  progress();
  return PMPI_Testall(n, reqs, flag, statuses);
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
  if (g_live.empty()) return PMPI_Waitany(n, reqs, index, status);
  Polling polling;
  for (int spins = 0;; idle(&spins)) {
    progress();
    int flag = 0;
    const int rc = PMPI_Testany(n, reqs, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
  progress();
  return PMPI_Testany(n, reqs, index, flag, status);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  if (g_live.empty()) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
  Polling polling;
  for (int spins = 0;; idle(&spins)) {
    progress();
    const int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;  // some, or MPI_UNDEFINED: none active
  }
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  progress();
  return PMPI_Testsome(n, reqs, outcount, indices, statuses);
}

int MPI_Request_free(MPI_Request *req) {
  // A collective's request freed before completion: it must still run to
  // the end (the others wait for us); wait for it here.
  if (req && live(*req)) {
    Polling polling;
    for (int spins = 0; live(*req); idle(&spins)) progress();
  }
  return PMPI_Request_free(req);
}

// ---------------------------------------------------------------- collectives
//
// Each collective's decision and cadrt call is made once, in start_*(),
// for both forms: the non-blocking one wraps the request, the blocking one
// waits for it.  False: the call is MPI's.

}  // extern "C"

namespace {

bool start_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, cadrt_request *r) {
  size_t bytes;
  cadrt_comm c;
  return bytes_of(count, dt, &bytes) && comm_of(comm, &c) && !cadrt_ibcast(buf, bytes, CADRT_BYTE, root, c, r);
}

// The reducing ones: elements of a predefined type, a predefined op.
bool reduce_args(int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, cadrt_datatype *d, cadrt_op *o,
                 cadrt_comm *c) {
  return count >= 0 && elem_of(dt, d) && op_of(op, o) && comm_of(comm, c);
}

bool start_reduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                  cadrt_request *r) {
  cadrt_datatype d;
  cadrt_op o;
  cadrt_comm c;
  return reduce_args(count, dt, op, comm, &d, &o, &c) &&
         !cadrt_ireduce(in_send(s), rb, static_cast<size_t>(count), d, o, root, c, r);
}

bool start_allreduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                     cadrt_request *r) {
  cadrt_datatype d;
  cadrt_op o;
  cadrt_comm c;
  return reduce_args(count, dt, op, comm, &d, &o, &c) &&
         !cadrt_iallreduce(in_send(s), rb, static_cast<size_t>(count), d, o, c, r);
}

bool start_reduce_scatter_block(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                cadrt_request *r) {
  cadrt_datatype d;
  cadrt_op o;
  cadrt_comm c;
  return reduce_args(count, dt, op, comm, &d, &o, &c) &&
         !cadrt_ireduce_scatter_block(in_send(s), rb, static_cast<size_t>(count), d, o, c, r);
}

// Gather-like calls: bytes per rank from whichever side is significant
// here (the send side, or the receive side in place or at a root that only
// receives); the two sides must describe the same bytes, as MPI requires.
bool block_bytes(const void *s, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype, bool recv_matters,
                 size_t *out) {
  size_t sb = 0, rb = 0;
  const bool send_matters = s != MPI_IN_PLACE;
  if (send_matters && !bytes_of(scount, stype, &sb)) return false;
  if (recv_matters && !bytes_of(rcount, rtype, &rb)) return false;
  if (send_matters && recv_matters && sb != rb) return false;  // erroneous in MPI: MPI says so
  *out = send_matters ? sb : rb;
  return send_matters || recv_matters;
}

// Scatter: the root's send side, every rank's receive side (MPI_IN_PLACE
// as the root's receive buffer).
bool scatter_bytes(int sc, MPI_Datatype st, const void *rb, int rc, MPI_Datatype rt, bool root, size_t *out) {
  size_t sb = 0, rbytes = 0;
  if (root && !bytes_of(sc, st, &sb)) return false;
  const bool recv_matters = rb != MPI_IN_PLACE;
  if (recv_matters && !bytes_of(rc, rt, &rbytes)) return false;
  if (root && recv_matters && sb != rbytes) return false;
  *out = root ? sb : rbytes;
  return true;
}

int rank_in(MPI_Comm comm) {
  int r = -1;
  PMPI_Comm_rank(comm, &r);
  return r;
}

bool start_gather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                  cadrt_request *r) {
  size_t bytes;
  cadrt_comm c;
  return comm_of(comm, &c) && block_bytes(s, sc, st, rc, rt, rank_in(comm) == root, &bytes) &&
         !cadrt_igather(in_send(s), rb, bytes, CADRT_BYTE, root, c, r);
}

bool start_scatter(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                   MPI_Comm comm, cadrt_request *r) {
  size_t bytes;
  cadrt_comm c;
  return comm_of(comm, &c) && scatter_bytes(sc, st, rb, rc, rt, rank_in(comm) == root, &bytes) &&
         !cadrt_iscatter(s, rb == MPI_IN_PLACE ? CADRT_IN_PLACE : rb, bytes, CADRT_BYTE, root, c, r);
}

bool start_allgather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                     cadrt_request *r) {
  size_t bytes;
  cadrt_comm c;
  return comm_of(comm, &c) && block_bytes(s, sc, st, rc, rt, true, &bytes) &&
         !cadrt_iallgather(in_send(s), rb, bytes, CADRT_BYTE, c, r);
}

bool start_alltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                    cadrt_request *r) {
  size_t bytes;
  cadrt_comm c;
  return comm_of(comm, &c) && block_bytes(s, sc, st, rc, rt, true, &bytes) &&
         !cadrt_ialltoall(in_send(s), rb, bytes, CADRT_BYTE, c, r);
}

bool start_barrier(MPI_Comm comm, cadrt_request *r) {
  cadrt_comm c;
  return comm_of(comm, &c) && !cadrt_ibarrier(c, r);
}

}  // namespace

extern "C" {

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req) {
  cadrt_request r;
  if (start_bcast(buf, count, dt, root, comm, &r)) return wrap(r, "MPI_Ibcast", req);
  return fell("MPI_Ibcast", PMPI_Ibcast(buf, count, dt, root, comm, req));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  cadrt_request r;
  if (start_bcast(buf, count, dt, root, comm, &r)) return finish_now(r, "MPI_Bcast");
  return fell("MPI_Bcast", PMPI_Bcast(buf, count, dt, root, comm));
}

int MPI_Ireduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req) {
  cadrt_request r;
  if (start_reduce(s, rb, count, dt, op, root, comm, &r)) return wrap(r, "MPI_Ireduce", req);
  return fell("MPI_Ireduce", PMPI_Ireduce(s, rb, count, dt, op, root, comm, req));
}

int MPI_Reduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm) {
  cadrt_request r;
  if (start_reduce(s, rb, count, dt, op, root, comm, &r)) return finish_now(r, "MPI_Reduce");
  return fell("MPI_Reduce", PMPI_Reduce(s, rb, count, dt, op, root, comm));
}

int MPI_Iallreduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req) {
  cadrt_request r;
  if (start_allreduce(s, rb, count, dt, op, comm, &r)) return wrap(r, "MPI_Iallreduce", req);
  return fell("MPI_Iallreduce", PMPI_Iallreduce(s, rb, count, dt, op, comm, req));
}

int MPI_Allreduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  cadrt_request r;
  if (start_allreduce(s, rb, count, dt, op, comm, &r)) return finish_now(r, "MPI_Allreduce");
  return fell("MPI_Allreduce", PMPI_Allreduce(s, rb, count, dt, op, comm));
}

int MPI_Ireduce_scatter_block(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req) {
  cadrt_request r;
  if (start_reduce_scatter_block(s, rb, count, dt, op, comm, &r)) return wrap(r, "MPI_Ireduce_scatter_block", req);
  return fell("MPI_Ireduce_scatter_block", PMPI_Ireduce_scatter_block(s, rb, count, dt, op, comm, req));
}

int MPI_Reduce_scatter_block(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  cadrt_request r;
  if (start_reduce_scatter_block(s, rb, count, dt, op, comm, &r)) return finish_now(r, "MPI_Reduce_scatter_block");
  return fell("MPI_Reduce_scatter_block", PMPI_Reduce_scatter_block(s, rb, count, dt, op, comm));
}

int MPI_Igather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                MPI_Request *req) {
  cadrt_request r;
  if (start_gather(s, sc, st, rb, rc, rt, root, comm, &r)) return wrap(r, "MPI_Igather", req);
  return fell("MPI_Igather", PMPI_Igather(s, sc, st, rb, rc, rt, root, comm, req));
}

int MPI_Gather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm) {
  cadrt_request r;
  if (start_gather(s, sc, st, rb, rc, rt, root, comm, &r)) return finish_now(r, "MPI_Gather");
  return fell("MPI_Gather", PMPI_Gather(s, sc, st, rb, rc, rt, root, comm));
}

int MPI_Iscatter(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                 MPI_Request *req) {
  cadrt_request r;
  if (start_scatter(s, sc, st, rb, rc, rt, root, comm, &r)) return wrap(r, "MPI_Iscatter", req);
  return fell("MPI_Iscatter", PMPI_Iscatter(s, sc, st, rb, rc, rt, root, comm, req));
}

int MPI_Scatter(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                MPI_Comm comm) {
  cadrt_request r;
  if (start_scatter(s, sc, st, rb, rc, rt, root, comm, &r)) return finish_now(r, "MPI_Scatter");
  return fell("MPI_Scatter", PMPI_Scatter(s, sc, st, rb, rc, rt, root, comm));
}

int MPI_Iallgather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                   MPI_Request *req) {
  cadrt_request r;
  if (start_allgather(s, sc, st, rb, rc, rt, comm, &r)) return wrap(r, "MPI_Iallgather", req);
  return fell("MPI_Iallgather", PMPI_Iallgather(s, sc, st, rb, rc, rt, comm, req));
}

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  cadrt_request r;
  if (start_allgather(s, sc, st, rb, rc, rt, comm, &r)) return finish_now(r, "MPI_Allgather");
  return fell("MPI_Allgather", PMPI_Allgather(s, sc, st, rb, rc, rt, comm));
}

int MPI_Ialltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                  MPI_Request *req) {
  cadrt_request r;
  if (start_alltoall(s, sc, st, rb, rc, rt, comm, &r)) return wrap(r, "MPI_Ialltoall", req);
  return fell("MPI_Ialltoall", PMPI_Ialltoall(s, sc, st, rb, rc, rt, comm, req));
}

int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  cadrt_request r;
  if (start_alltoall(s, sc, st, rb, rc, rt, comm, &r)) return finish_now(r, "MPI_Alltoall");
  return fell("MPI_Alltoall", PMPI_Alltoall(s, sc, st, rb, rc, rt, comm));
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) {
  cadrt_request r;
  if (start_barrier(comm, &r)) return wrap(r, "MPI_Ibarrier", req);
  return fell("MPI_Ibarrier", PMPI_Ibarrier(comm, req));
}

int MPI_Barrier(MPI_Comm comm) {
  cadrt_request r;
  if (start_barrier(comm, &r)) return finish_now(r, "MPI_Barrier");
  return fell("MPI_Barrier", PMPI_Barrier(comm));
}

}  // extern "C"
