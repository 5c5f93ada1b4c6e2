// cadmpi.cpp - libcadmpi.so: LD_PRELOAD it into an unmodified MPI
// program and its collectives run through cadrt.  This file: start-up and
// finalisation, and for each collective the decision and the C entry
// points (the other files: cadmpi.h).
//
// What goes through cadrt: MPI_I{bcast, reduce, allreduce, gather,
// scatter, allgather, alltoall, reduce_scatter_block, barrier}, their
// blocking forms and their persistent forms (Open MPI's MPIX_*_init), on
// intracommunicators: the data-moving ones with any datatype (derived
// ones packed where their data has gaps or is out of order: see
// datatypes.cpp), the reductions with predefined datatypes and
// predefined ops (MIN/MAXLOC on the pair types), MPI_IN_PLACE where MPI
// has it.  Everything else (derived datatypes in reductions, user ops,
// intercommunicators, MPI_THREAD_MULTIPLE programs) falls through to the
// MPI library unchanged.  (Ranks on other nodes are reached by MPI
// point-to-point inside cadrt: cadrt_net.h.)  The decision is made from
// the call's own arguments and depends on a datatype only through what
// MPI requires the ranks to agree on, so every rank of a correct program
// makes the same one.
//
// Requests: a cadrt collective's handle is a persistent request MPI never
// starts (see Ours in requests.cpp).  The MPI_Wait/Test families are
// interposed: they progress cadrt, complete the handles of ours whose
// collectives finished, and let MPI wait for or test the rest of the
// array, so cadrt and point-to-point requests mix freely.
//
// CADMPI=0 disables it; CADMPI_STATS=1 prints, at MPI_Finalize on rank 0,
// how many calls went through cadrt and how many fell through.

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "cadmpi.h"
#include "collectives.h"

namespace cadmpi {

bool g_on = false;
long g_through = 0, g_fallen = 0;
bool g_verbose = false;
char g_why[200];

}  // namespace cadmpi

using namespace cadmpi;

namespace {

bool comm_of(MPI_Comm comm, cadrt_comm *out) {
  if (!g_on) return decline("libcadmpi is not running");
  const int err = cadrt_comm_from_mpi(comm, out);
  if (!err) return true;
  if (comm == MPI_COMM_NULL) return decline("the communicator is MPI_COMM_NULL");
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return decline("an intercommunicator: cadrt takes intracommunicators");
  return decline("the communicator: %s", *cadrt_error_message() ? cadrt_error_message() : strerror(-err));
}

// Counts a call left to MPI (and says why under CADRT_VERBOSE=1): the
// reason libcadmpi declined it, or else cadrt's, whose call then failed
// and set its message.  Printed before MPI runs the call, which may not
// return (a mismatch between the ranks' decisions hangs or aborts in MPI).
void fell(const char *fn) {
  g_fallen++;
  g_staging.reset();
  if (g_verbose) {
    const char *why = *g_why ? g_why : cadrt_error_message();
    fprintf(stderr, "cadmpi: %s left to MPI: %s\n", fn, *why ? why : "cadrt declined it without a reason");
    g_why[0] = 0;
  }
}

// cadrt_init_mpi is collective: either every rank calls it or none does,
// so the ranks first agree on whether all want cadrt (CADMPI=0 and
// MPI_THREAD_MULTIPLE may differ between ranks; one that skipped it would
// leave the others waiting in it for ever).  Its result is the same on
// every rank (it agrees on that itself).
void start() {
  const char *off = getenv("CADMPI");
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  // (A program that turned it off, CADMPI=0, or that runs
  // MPI_THREAD_MULTIPLE is not told: that is the documented behaviour.)
  const int want = !(off && strcmp(off, "0") == 0) && provided != MPI_THREAD_MULTIPLE;
  int all_want = 0;
  PMPI_Allreduce(&want, &all_want, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_want) return;
  const int err = cadrt_init_mpi(MPI_COMM_WORLD);
  g_on = err == 0;
  if (g_on) requests_open();
  const char *v = getenv("CADRT_VERBOSE");
  g_verbose = v && strcmp(v, "0") != 0;
  if (g_on) return;
  // cadrt did not start (its library missing, say): every collective is
  // MPI's, which is right but not what preloading libcadmpi asked for, so
  // rank 0 says so, asked or not -- as cadrt says so when CMA is refused.
  // The reason is the message of a rank it failed on; the others failed
  // because that one did (no message), so the first rank with a message
  // says it when that is not rank 0.
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string why = cadrt_error_message();
  const int mine = why.empty() ? size : rank;
  int first = size;
  PMPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0 && first == 0)
    fprintf(stderr, "cadmpi: collectives are left to MPI: %s\n", why.c_str());
  else if (rank == 0 && first < size)
    fprintf(stderr, "cadmpi: collectives are left to MPI: cadrt did not start on rank %d\n", first);
  else if (rank == 0)
    fprintf(stderr, "cadmpi: collectives are left to MPI: %s\n", strerror(-err));
  else if (rank == first)
    fprintf(stderr, "cadmpi: rank %d: cadrt did not start: %s\n", rank, why.c_str());
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
    requests_close();
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

}  // extern "C"

// ---------------------------------------------------------------- collectives
//
// Each collective's decision and cadrt call is made once, in start_*(),
// for all its forms: the non-blocking one wraps the request, the blocking
// one waits for it, the persistent one keeps it for MPI_Start.  False: the
// call is MPI's.

namespace {

int rank_in(MPI_Comm comm) {
  int r = -1;
  PMPI_Comm_rank(comm, &r);
  return r;
}

int size_of(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

// Packs what the collective reads, just before cadrt is called -- unless
// the call makes a persistent collective (persistent, f is a cadrt_*_init),
// which MPI_Start packs every time it starts it: nothing runs at init.
template <typename F>
bool packed(F f, F nonblocking) {
  if (g_staging && f == nonblocking) g_staging->pack();
  return true;
}

bool start_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, cadrt_request *r,
                 decltype(&cadrt_ibcast) f = cadrt_ibcast) {
  size_t bytes;
  cadrt_comm c;
  void *at;
  if (!comm_of(comm, &c)) return false;
  const bool at_root = rank_in(comm) == root;
  return bytes_at(buf, count, 1, dt, at_root, !at_root, &bytes, &at) && packed(f, cadrt_ibcast) &&
         !f(at, bytes, CADRT_BYTE, root, c, r);
}

// The reducing ones: elements of a predefined type, a predefined op.
bool reduce_args(int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, cadrt_datatype *d, cadrt_op *o,
                 cadrt_comm *c) {
  return (count >= 0 || decline("a negative count (%d)", count)) && elem_of(dt, d) && op_of(op, o) &&
         comm_of(comm, c);
}

const void *in_send(const void *p) { return p == MPI_IN_PLACE ? CADRT_IN_PLACE : p; }

bool start_reduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                  cadrt_request *r, decltype(&cadrt_ireduce) f = cadrt_ireduce) {
  cadrt_datatype d;
  cadrt_op o;
  cadrt_comm c;
  return reduce_args(count, dt, op, comm, &d, &o, &c) &&
         !f(in_send(s), rb, static_cast<size_t>(count), d, o, root, c, r);
}

bool start_allreduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                     cadrt_request *r, decltype(&cadrt_iallreduce) f = cadrt_iallreduce) {
  cadrt_datatype d;
  cadrt_op o;
  cadrt_comm c;
  return reduce_args(count, dt, op, comm, &d, &o, &c) &&
         !f(in_send(s), rb, static_cast<size_t>(count), d, o, c, r);
}

bool start_reduce_scatter_block(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                cadrt_request *r,
                                decltype(&cadrt_ireduce_scatter_block) f = cadrt_ireduce_scatter_block) {
  cadrt_datatype d;
  cadrt_op o;
  cadrt_comm c;
  return reduce_args(count, dt, op, comm, &d, &o, &c) &&
         !f(in_send(s), rb, static_cast<size_t>(count), d, o, c, r);
}

// The data-moving ones with a send and a receive side: bytes per rank from
// whichever side is significant here; where both are, they must describe
// the same bytes, as MPI requires.
struct Sides {
  size_t bytes = 0;
  const void *send = nullptr;
  void *recv = nullptr;
};

// send: (sc of st) x send_blocks, read, if send_matters and not in place;
// recv: (rc of rt) x recv_blocks, written (and read, in place), if
// recv_matters.
bool sides(const void *s, int sc, MPI_Datatype st, int send_blocks, bool send_matters, void *rb, int rc,
           MPI_Datatype rt, int recv_blocks, bool recv_matters, Sides *x) {
  size_t sb = 0, rbytes = 0;
  const bool in_place = s == MPI_IN_PLACE || rb == MPI_IN_PLACE;
  void *at = nullptr;
  x->send = in_send(s);
  x->recv = rb == MPI_IN_PLACE ? CADRT_IN_PLACE : rb;
  send_matters = send_matters && s != MPI_IN_PLACE;
  recv_matters = recv_matters && rb != MPI_IN_PLACE;
  if (send_matters) {
    if (!bytes_at(s, sc, send_blocks, st, true, false, &sb, &at)) return false;
    x->send = at;
  }
  if (recv_matters) {
    if (!bytes_at(rb, rc, recv_blocks, rt, in_place, true, &rbytes, &at)) return false;
    x->recv = at;
  }
  if (send_matters && recv_matters && sb != rbytes)  // erroneous in MPI: MPI says so
    return decline("the send side (%zu bytes) and the receive side (%zu bytes) differ", sb, rbytes);
  x->bytes = send_matters ? sb : rbytes;
  return send_matters || recv_matters || decline("neither side describes the data here");
}

bool start_gather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                  cadrt_request *r, decltype(&cadrt_igather) f = cadrt_igather) {
  Sides x;
  cadrt_comm c;
  return comm_of(comm, &c) &&
         sides(s, sc, st, 1, true, rb, rc, rt, size_of(comm), rank_in(comm) == root, &x) && packed(f, cadrt_igather) &&
         !f(x.send, x.recv, x.bytes, CADRT_BYTE, root, c, r);
}

// Scatter: the root's send side, every rank's receive side (MPI_IN_PLACE
// as the root's receive buffer).
bool start_scatter(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                   MPI_Comm comm, cadrt_request *r, decltype(&cadrt_iscatter) f = cadrt_iscatter) {
  Sides x;
  cadrt_comm c;
  if (!comm_of(comm, &c)) return false;
  const bool at_root = rank_in(comm) == root;
  // Off the root the send side is not significant: cadrt is given the
  // program's pointer, as MPI is.
  return sides(s, sc, st, size_of(comm), at_root, rb, rc, rt, 1, true, &x) && packed(f, cadrt_iscatter) &&
         !f(at_root ? x.send : s, x.recv, x.bytes, CADRT_BYTE, root, c, r);
}

bool start_allgather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                     cadrt_request *r, decltype(&cadrt_iallgather) f = cadrt_iallgather) {
  Sides x;
  cadrt_comm c;
  return comm_of(comm, &c) && sides(s, sc, st, 1, true, rb, rc, rt, size_of(comm), true, &x) && packed(f, cadrt_iallgather) &&
         !f(x.send, x.recv, x.bytes, CADRT_BYTE, c, r);
}

bool start_alltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                    cadrt_request *r, decltype(&cadrt_ialltoall) f = cadrt_ialltoall) {
  Sides x;
  cadrt_comm c;
  if (!comm_of(comm, &c)) return false;
  const int P = size_of(comm);
  return sides(s, sc, st, P, true, rb, rc, rt, P, true, &x) && packed(f, cadrt_ialltoall) &&
         !f(x.send, x.recv, x.bytes, CADRT_BYTE, c, r);
}

bool start_barrier(MPI_Comm comm, cadrt_request *r, decltype(&cadrt_ibarrier) f = cadrt_ibarrier) {
  cadrt_comm c;
  return comm_of(comm, &c) && !f(c, r);
}

}  // namespace

// The C entry points of every collective in the table (collectives.h).
#define CADMPI_C_NONBLOCKING(Name, name, params, args, fparams, fargs)                   \
  int MPI_I##name(CADMPI_LIST params, MPI_Request *req) {                               \
    cadrt_request r;                                                                    \
    if (start_##name(CADMPI_LIST args, &r)) return wrap(r, "MPI_I" #name, comm, req);   \
    fell("MPI_I" #name);                                                                \
    return PMPI_I##name(CADMPI_LIST args, req);                                         \
  }
#define CADMPI_C_BLOCKING(Name, name, params, args, fparams, fargs)                        \
  int MPI_##Name(CADMPI_LIST params) {                                                    \
    cadrt_request r;                                                                      \
    if (start_##name(CADMPI_LIST args, &r)) return finish_now(r, "MPI_" #Name, comm);     \
    fell("MPI_" #Name);                                                                   \
    return PMPI_##Name(CADMPI_LIST args);                                                 \
  }

extern "C" {

CADMPI_COLLECTIVES(CADMPI_C_NONBLOCKING)
CADMPI_COLLECTIVES(CADMPI_C_BLOCKING)

// Persistent collectives, MPI-4's MPI_Bcast_init... under the names Open
// MPI 4.1 gives them (MPIX_, its pcollreq extension): cadrt selects,
// instantiates, verifies and registers once, at init (the kernel engine
// loads the program into cad.ko once), and every MPI_Start runs it.  The
// info argument holds no hint cadrt uses.
#if CADMPI_PERSISTENT
#define CADMPI_C_PERSISTENT(Name, name, params, args, fparams, fargs)                              \
  int MPIX_##Name##_init(CADMPI_LIST params, MPI_Info info, MPI_Request *req) {                   \
    cadrt_request r;                                                                              \
    if (start_##name(CADMPI_LIST args, &r, cadrt_##name##_init))                                  \
      return wrap_persistent(r, "MPIX_" #Name "_init", comm, req);                                \
    fell("MPIX_" #Name "_init");                                                                  \
    return PMPIX_##Name##_init(CADMPI_LIST args, info, req);                                      \
  }
CADMPI_COLLECTIVES(CADMPI_C_PERSISTENT)
#endif

}  // extern "C"
