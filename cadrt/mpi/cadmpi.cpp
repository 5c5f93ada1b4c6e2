// cadmpi.cpp - libcadmpi.so: LD_PRELOAD it into an unmodified MPI
// program and its collectives run through cadrt.
//
// What goes through cadrt: MPI_I{bcast, reduce, allreduce, gather,
// scatter, allgather, alltoall, reduce_scatter_block, barrier}, their
// blocking forms and their persistent forms (Open MPI's MPIX_*_init), on
// intracommunicators: the data-moving ones with any datatype (derived
// ones packed where their data has gaps or is out of order: see
// "Datatypes" below), the reductions with predefined datatypes and
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
// starts (see Ours).  The MPI_Wait/Test families are interposed: they
// progress cadrt, complete the handles of ours whose collectives
// finished, and let MPI wait for or test the rest of the array, so cadrt
// and point-to-point requests mix freely.
//
// CADMPI=0 disables it; CADMPI_STATS=1 prints, at MPI_Finalize on rank 0,
// how many calls went through cadrt and how many fell through.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "cadrt/cadrt_mpi.h"
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_*_init (persistent collectives)
#endif

namespace {

bool g_on = false;
long g_through = 0, g_fallen = 0;

// A side of a call whose data cadrt cannot use where it lies (a derived
// datatype with gaps or out of order, a pair type with a gap): cadrt works
// on tmp, which MPI_Pack fills from the program's buffer before the
// collective (in) and MPI_Unpack empties into it after (out).
// MPI_Pack and MPI_Unpack count in int: elements go in pieces of at most
// kPiece bytes.
struct Stage {
  static constexpr size_t kPiece = size_t{1} << 30;
  char *user = nullptr;  // the program's buffer
  size_t count = 0;      // elements of dt there
  size_t size = 0;       // of one, packed
  MPI_Aint extent = 0;
  size_t piece = 0;  // elements in one MPI_Pack
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  bool own_dt = false;  // dt is our dup of the program's derived type (MPI lets it free its own meanwhile)
  bool in = false, out = false;
  std::unique_ptr<char[]> tmp;

  // f(the program's elements, their bytes in tmp, how many, how many bytes)
  // for each piece.
  template <typename F>
  void pieces(F f) {
    for (size_t k = 0; k < count; k += piece) {
      const int n = static_cast<int>(std::min(piece, count - k));
      f(user + static_cast<MPI_Aint>(k) * extent, tmp.get() + k * size, n, static_cast<int>(n * size));
    }
  }
  void pack() {
    pieces([this](char *elems, char *bytes, int n, int nbytes) {
      int pos = 0;
      PMPI_Pack(elems, n, dt, bytes, nbytes, &pos, MPI_COMM_WORLD);
    });
  }
  void unpack() {
    pieces([this](char *elems, char *bytes, int n, int nbytes) {
      int pos = 0;
      PMPI_Unpack(bytes, nbytes, &pos, elems, n, dt, MPI_COMM_WORLD);
    });
  }
};

struct Staging {
  std::vector<Stage> sides;

  Staging() = default;
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  ~Staging() {
    for (Stage &s : sides)
      if (s.own_dt) PMPI_Type_free(&s.dt);
  }
  // Before the collective (every start of a persistent one).
  void pack() {
    for (Stage &s : sides)
      if (s.in) s.pack();
  }
  // After it, when it succeeded.
  void unpack() {
    for (Stage &s : sides)
      if (s.out) s.unpack();
  }
};

// The staging of the call being decided (libcadmpi runs in one thread at
// a time, or not at all): filled by the start_*() functions, then owned by
// the call's request, or dropped when the call falls through to MPI.
std::unique_ptr<Staging> g_staging;

// A cadrt collective behind a program's handle.  The handle is a
// persistent receive from MPI_PROC_NULL that MPI never starts: to MPI an
// inactive persistent request, which its Wait/Test family passes over
// (an empty status, the handle left as it is) and MPI_Request_free frees.
// libcadmpi's Wait/Test family completes an active one itself when its
// collective has finished, merged with what MPI reports for the rest of
// an array; a non-blocking one's handle is then MPI_REQUEST_NULL to the
// program and kept, with its Ours, for the next call (a small collective
// in a loop allocates nothing).  A persistent one stays until the program
// frees it; MPI_Start starts its collective again.  (Not an MPI
// generalized request: MPI's callbacks for one cost a small collective a
// large share of its instructions.)  A failure is raised by the call that
// completes the handle (raise_failure()): MPI_ERR_OTHER on the
// collective's communicator, or MPI_ERR_IN_STATUS with MPI_ERR_OTHER in
// its status from the array forms.
struct Ours {
  MPI_Request handle = MPI_REQUEST_NULL;
  cadrt_request req = nullptr;
  Staging *st = nullptr;  // what to unpack when it completes (a persistent one's: packed at each start)
  MPI_Comm comm = MPI_COMM_NULL;  // where a failure is raised
  const char *fn = "";
  bool persistent = false;
  bool active = false;  // started, and not completed by a call of the Wait/Test family yet
  bool done = false;    // (active) its collective has finished
  bool failed = false;  // (done) it failed
};
std::unordered_map<MPI_Request, Ours *> g_ours;  // by handle: spares too
std::vector<Ours *> g_spare;                     // non-blocking ones completed, for the next calls
constexpr size_t kMaxSpares = 64;
Ours *g_recent = nullptr;  // the last started (the one a Wait most often asks for)
long g_active = 0;         // how many are active
MPI_Status g_empty;        // MPI's empty status (source and tag any, no error, no data)

// Active ones whose collective has not finished.  (A vector: there are
// few at a time, and progress() visits them all anyway.)
std::vector<Ours *> g_live;

// The collective behind req, if it is one of ours.
Ours *ours(MPI_Request req) {
  if (g_recent && g_recent->handle == req) return g_recent;
  if (g_ours.empty()) return nullptr;
  const auto it = g_ours.find(req);
  return it == g_ours.end() ? nullptr : it->second;
}

// req, if it is one of ours that is active.
Ours *active_ours(MPI_Request req) {
  if (g_active == 0) return nullptr;
  Ours *o = ours(req);
  return o && o->active ? o : nullptr;
}

// Whether reqs[0..n) has an active one of ours.
bool has_active_ours(int n, const MPI_Request reqs[]) {
  for (int i = 0; g_active && i < n; i++)
    if (active_ours(reqs[i])) return true;
  return false;
}

// A new one of ours with its handle, known by it: a persistent receive
// from MPI_PROC_NULL (were MPI ever to start it, it would complete at
// once).  Null, with MPI's error in *rc, if MPI could not make it.
Ours *make_ours(bool persistent, int *rc) {
  Ours *o = new Ours;
  o->persistent = persistent;
  *rc = PMPI_Recv_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &o->handle);
  if (*rc != MPI_SUCCESS) {
    delete o;
    return nullptr;
  }
  g_ours[o->handle] = o;
  return o;
}

// Forgets o and frees its handle (the program's copy of it is the
// caller's to clear).
void drop_ours(Ours *o) {
  if (g_recent == o) g_recent = nullptr;
  g_ours.erase(o->handle);
  PMPI_Request_free(&o->handle);
  delete o->st;
  delete o;
}

// drop_ours, after a persistent one's cadrt request (a non-blocking one's
// goes when its collective completes).
void forget_ours(Ours *o) {
  if (o->persistent) cadrt_req_free(&o->req);
  drop_ours(o);
}

// o's status as a completion call gives it: empty, MPI_ERR_OTHER in it if
// the collective failed.
void status_of(const Ours *o, MPI_Status *status) {
  if (status == MPI_STATUS_IGNORE) return;
  *status = g_empty;
  if (o->failed) status->MPI_ERROR = MPI_ERR_OTHER;
}

// The communicator a failure of the call under way is raised on, from
// the first failed one it completed (MPI_COMM_NULL: none).
MPI_Comm g_raise = MPI_COMM_NULL;

// An active one whose collective finished, completed by a call of the
// Wait/Test family: inactive again, its status empty (MPI_ERR_OTHER in
// it if it failed); a non-blocking one's handle (*slot) becomes
// MPI_REQUEST_NULL and it goes to the spares.
void complete_ours(Ours *o, MPI_Status *status, MPI_Request *slot) {
  o->active = false;
  g_active--;
  status_of(o, status);
  if (o->failed) {
    o->failed = false;
    if (g_raise == MPI_COMM_NULL) g_raise = o->comm;
  }
  if (o->persistent) return;
  *slot = MPI_REQUEST_NULL;
  if (g_spare.size() < kMaxSpares)
    g_spare.push_back(o);
  else
    drop_ours(o);
}

// The end of a call of the Wait/Test family: rc, or the failure of one of
// ours it completed, raised on that one's communicator (its error handler
// decides, as for any MPI error); array forms: MPI_ERR_IN_STATUS, the
// statuses saying which.
int raise_failure(int rc, bool array) {
  if (g_raise == MPI_COMM_NULL) return rc;
  const MPI_Comm comm = g_raise;
  g_raise = MPI_COMM_NULL;
  if (rc != MPI_SUCCESS) return rc;
  const int err = array ? MPI_ERR_IN_STATUS : MPI_ERR_OTHER;
  PMPI_Comm_call_errhandler(comm, err);
  return err;
}

// A collective's end: the next call of the Wait/Test family that looks
// at its handle completes it.
void finish(Ours *o, int err) {
  o->done = true;
  if (err) {
    o->failed = true;
    fprintf(stderr, "cadmpi: %s failed: %s\n", o->fn, cadrt_error_message());
  } else if (o->st) {
    o->st->unpack();
  }
  if (!o->persistent) {
    delete o->st;
    o->st = nullptr;
  }
}

// Tests a live collective once; true when it has finished.
bool settle(Ours *o) {
  int flag = 0;
  const int err = cadrt_test(&o->req, &flag);
  if (!flag && !err) return false;
  finish(o, err);
  return true;
}

// Progress cadrt; finish the collectives that completed (true if one did).
bool progress() {
  bool settled = false;
  for (size_t i = 0; i < g_live.size();) {
    if (!settle(g_live[i])) {
      i++;
      continue;
    }
    settled = true;
    g_live[i] = g_live.back();
    g_live.pop_back();
  }
  return settled;
}

// A wait for cadrt turns MPI's progress only from this many turns on: the
// first look is at cadrt alone.  A turn of MPI's progress (a probe, or the
// test of the program's handle when it is not complete) is several times
// a small collective's look at its rings, and the message a receiver
// waits for most often lands during one: without them a 1-byte blocking
// broadcast's receiver took 15 % less time, 1510-1600 ticks against
// 1800-1870 (2-core VM, thread engine).  MPI's progress is still turned
// within a few microseconds, for a peer that needs it first (see
// finish_now).
constexpr int kCadrtOnlySpins = 16;

// A started collective: active, and live unless it completed in its
// start (a small broadcast's root, whose eager sends are in the peers'
// rings).  (Asked without progress: a test of one still running would
// cost a receiver a pass, and under the signal engine an arming.)
void activate(Ours *o) {
  o->active = true;
  o->done = o->failed = false;
  g_active++;
  g_recent = o;
}

void go_live(Ours *o) {
  activate(o);
  int flag = 0;
  cadrt_request_peek(o->req, &flag);
  if (!flag || !settle(o)) g_live.push_back(o);
}

void idle(int *spins) {
  if (++*spins > 64) sched_yield();
}

// A communicator of our own on which nothing is ever sent: probing it
// runs MPI's progress engine (a probe that matches nothing progresses, in
// Open MPI's ob1 as in MPICH) and consumes nothing.
MPI_Comm g_probe = MPI_COMM_NULL;

// One turn of MPI's progress, for the loops that wait for cadrt alone: a
// peer may be blocked on a point-to-point message of ours that only our
// MPI progress moves (a fragmented or rendezvous MPI_Isend, say) before
// it can join the collective we wait for.
void mpi_progress() {
  int flag = 0;
  if (g_probe != MPI_COMM_NULL) PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_probe, &flag, MPI_STATUS_IGNORE);
}

// A wait loop alternates cadrt's progress and MPI's (never one alone: the
// program's other requests, or a peer's progress, may depend on MPI's).
// Inside it cadrt is told we poll, so the signal engine neither wakes its
// helper nor interrupts us for every message.
struct Polling {
  Polling() { cadrt_poll_begin(); }
  ~Polling() { cadrt_poll_end(); }
};

// Progresses cadrt and MPI until done() holds: a collective that must
// run to its end although nobody will wait for it (freed early, or
// still running at MPI_Finalize), since the other ranks wait for us.
template <typename Done>
void progress_until(Done done) {
  if (done()) return;
  Polling polling;
  for (int spins = 0; !done(); idle(&spins)) {
    progress();
    mpi_progress();
  }
}

// Whether every active one of ours in reqs[0..n) has finished.
bool ours_done(int n, const MPI_Request reqs[]) {
  for (int i = 0; i < n; i++) {
    const Ours *o = active_ours(reqs[i]);
    if (o && !o->done) return false;
  }
  return true;
}

// Completes the active ones of ours in reqs[0..n) (all finished); their
// statuses are the empty ones MPI gave them as inactive requests, but for
// a failure.
void complete_all_ours(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  for (int i = 0; i < n; i++)
    if (Ours *o = active_ours(reqs[i]))
      complete_ours(o, statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i], &reqs[i]);
}

// The first active one of ours in reqs[0..n) that has finished, completed
// as a completion of MPI_Waitany or MPI_Testany: its index, or -1.
int complete_any_ours(int n, MPI_Request reqs[], MPI_Status *status) {
  for (int i = 0; g_active && i < n; i++) {
    Ours *o = active_ours(reqs[i]);
    if (o && o->done) {
      complete_ours(o, status, &reqs[i]);
      return i;
    }
  }
  return -1;
}

// MPI_Testsome over reqs[0..n) with active ones of ours among them: MPI's
// completions, then ours that have finished, each completed;
// MPI_UNDEFINED only if nothing in the array is active.
int testsome_with_ours(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  const int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
  int k = *outcount == MPI_UNDEFINED ? 0 : *outcount;
  bool running = false;
  for (int i = 0; g_active && i < n; i++) {
    Ours *o = active_ours(reqs[i]);
    if (!o) continue;
    if (!o->done) {
      running = true;
      continue;
    }
    indices[k] = i;
    complete_ours(o, statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[k], &reqs[i]);
    k++;
  }
  if (k > 0 || running) *outcount = k;
  return rc;
}

// MPI_Wait of an active one of ours: cadrt alone for the first turns, as
// finish_now.
int wait_ours(Ours *o, MPI_Request *req, MPI_Status *status) {
  if (!o->done) {
    Polling polling;
    for (int spins = 0; !o->done; idle(&spins)) {
      if (spins >= kCadrtOnlySpins) mpi_progress();
      progress();
    }
  }
  complete_ours(o, status, req);
  return raise_failure(MPI_SUCCESS, false);
}

// A blocking collective through cadrt.  Not cadrt_wait alone: MPI must
// progress too while we wait (BLACS's tester deadlocked: a rank blocked in
// MPI_Recv of a message a peer had MPI_Isend before that peer entered an
// MPI_Allreduce through cadrt, where only MPI's progress would finish it).
// A failure is MPI_ERR_OTHER, raised on the communicator.
int finish_now(cadrt_request r, const char *fn, MPI_Comm comm) {
  g_through++;
  const std::unique_ptr<Staging> st = std::move(g_staging);
  int flag = 0, err = cadrt_test(&r, &flag);
  if (!err && !flag) {
    Polling polling;
    for (int spins = 0;; idle(&spins)) {
      if (spins >= kCadrtOnlySpins) mpi_progress();
      err = cadrt_test(&r, &flag);
      if (err || flag) break;
    }
  }
  if (err) {
    fprintf(stderr, "cadmpi: %s failed: %s\n", fn, cadrt_error_message());
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
  }
  if (st) st->unpack();
  return MPI_SUCCESS;
}

// A started non-blocking collective's handle: a spare's, or a new one.
// (Where MPI cannot make one, the collective, started, still runs to its
// end here -- the other ranks wait for us -- and the call returns MPI's
// error.)
int wrap(cadrt_request r, const char *fn, MPI_Comm comm, MPI_Request *req) {
  Ours *o = nullptr;
  int rc = MPI_SUCCESS;
  if (!g_spare.empty()) {
    o = g_spare.back();
    g_spare.pop_back();
  } else if (!(o = make_ours(false, &rc))) {
    finish_now(r, fn, comm);
    return rc;
  }
  o->req = r;
  o->fn = fn;
  o->comm = comm;
  o->st = g_staging.release();
  *req = o->handle;
  g_through++;
  go_live(o);
  return MPI_SUCCESS;
}

// A persistent collective through cadrt: its handle, made inactive.
int wrap_persistent(cadrt_request r, const char *fn, MPI_Comm comm, MPI_Request *req) {
  int rc = MPI_SUCCESS;
  Ours *o = make_ours(true, &rc);
  if (!o) {
    cadrt_req_free(&r);
    g_staging.reset();
    return rc;
  }
  o->req = r;
  o->st = g_staging.release();
  o->comm = comm;
  o->fn = fn;
  *req = o->handle;
  return MPI_SUCCESS;
}

// MPI_Request_free of one of ours: an active one runs to its end first
// (the others wait for us; MPI lets a program free an active request),
// then a persistent one's cadrt request goes, a non-blocking one's handle
// to the spares; false if the handle is not ours.
// (An inactive non-blocking one, a spare's, MPI_Request_free refuses
// first: refused().)
bool free_ours(MPI_Request *req) {
  Ours *o = ours(*req);
  if (!o) return false;
  progress_until([o] { return !o->active || o->done; });
  if (o->active) complete_ours(o, MPI_STATUS_IGNORE, req);
  g_raise = MPI_COMM_NULL;  // (nobody is told of a failure of a freed one)
  if (!o->persistent) return true;  // (*req is MPI_REQUEST_NULL)
  forget_ours(o);
  *req = MPI_REQUEST_NULL;
  return true;
}

bool g_verbose = false;

// Why the last call was declined, set where libcadmpi itself declines it.
// Empty: the decline, if any, was cadrt's, and cadrt_error_message() has it.
char g_why[200];

template <typename... A>
bool set_why(const char *fmt, A... a) {
  snprintf(g_why, sizeof g_why, fmt, a...);
  return false;
}

// false, and the reason under CADRT_VERBOSE: a macro, so that without it
// the reason's arguments (a datatype's name asked of MPI) are not even
// evaluated and a declined call costs no more than it did.
#define decline(...) (g_verbose ? set_why(__VA_ARGS__) : false)

// A datatype's name for a message: MPI's own for a predefined one.
std::string type_name(MPI_Datatype dt) {
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  PMPI_Type_get_name(dt, name, &len);
  return len ? std::string(name, static_cast<size_t>(len)) : std::string("a datatype");
}


// ---- Datatypes
//
// MPI asks only that the ranks' type signatures match in the collectives
// that move data: MPI_INT x 4 on one rank may be a contiguous, strided or
// indexed type of 4 MPI_INT on another.  So whether cadrt runs such a call
// may not depend on how a rank describes its data, or the ranks would
// split between cadrt and MPI and hang.  bcast, gather, scatter, allgather
// and alltoall therefore take every datatype: cadrt moves the signature's
// bytes, MPI_Pack's stream (in Open MPI's homogeneous build, the elements'
// bytes in order; bytes_at() checks that it is no longer).  Data that lies in
// the program's buffer as those bytes in order is used there; other data
// goes through a Stage.  (The reductions take predefined types only: MPI
// defines its predefined ops on those, and Open MPI rejects a derived
// datatype in MPI_Reduce and the others with MPI_ERR_OP; so a derived one
// is left to MPI, on every rank.)

// What a datatype is to cadrt.
struct Shape {
  size_t size = 0;       // MPI_Type_size
  MPI_Aint extent = 0;   // from one element to the next
  MPI_Aint true_lb = 0;  // where its first byte is, from the buffer
  bool dense = false;    // one element's bytes lie in signature order from true_lb, with no gap
  bool predefined = false;
};

// Takes a datatype apart, with MPI_Type_get_envelope and get_contents, down
// to its predefined leaves: whether one element is dense (Shape).
bool walk(MPI_Datatype dt, bool *dense, int depth) {
  if (depth > 64) return decline("a datatype nested more than 64 constructors deep");
  int ni, na, nd, combiner;
  if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
    return decline("MPI_Type_get_envelope rejects the datatype");
  MPI_Aint lb, extent;
  int size;
  if (combiner == MPI_COMBINER_NAMED) {
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_size(dt, &size);
    *dense = lb == 0 && extent == size;
    return true;
  }
  *dense = false;
  switch (combiner) {  // the constructors that may lay copies of one inner type back to back, in order
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
      break;
    default:  // indexed, struct, subarray, darray: packed (they may be dense, but rarely are)
      return true;
  }
  std::vector<int> ints(static_cast<size_t>(ni));
  std::vector<MPI_Aint> addrs(static_cast<size_t>(na));
  std::vector<MPI_Datatype> types(static_cast<size_t>(nd));
  if (nd != 1 || PMPI_Type_get_contents(dt, ni, na, nd, ints.data(), addrs.data(), types.data()) != MPI_SUCCESS)
    return decline("MPI_Type_get_contents rejects the datatype");
  bool inner = false;
  const bool ok = walk(types[0], &inner, depth + 1);
  PMPI_Type_get_extent(types[0], &lb, &extent);
  PMPI_Type_size(types[0], &size);
  const bool abutting = inner && extent == size;  // inner elements back to back
  switch (combiner) {
    case MPI_COMBINER_CONTIGUOUS:  // count
      *dense = inner && (ints[0] <= 1 || abutting);
      break;
    case MPI_COMBINER_VECTOR:  // count, blocklength, stride (in elements)
      *dense = inner && (ints[0] <= 1 ? ints[1] <= 1 || abutting : abutting && ints[2] == ints[1]);
      break;
    case MPI_COMBINER_HVECTOR:  // count, blocklength; stride (in bytes)
      *dense = inner && (ints[0] <= 1 ? ints[1] <= 1 || abutting : abutting && addrs[0] == ints[1] * extent);
      break;
    default:  // dup, resized: the bounds move, not the data
      *dense = inner;
      break;
  }
  PMPI_Type_get_envelope(types[0], &ni, &na, &nd, &combiner);
  if (combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&types[0]);  // get_contents made a new handle of it
  return ok;
}

bool shape_of(MPI_Datatype dt, Shape *out) {
  // The answers for predefined types, which are never freed, are kept by
  // handle (a derived type is taken apart every time: once freed, its
  // handle may name another type).
  static struct {
    MPI_Datatype dt;
    Shape shape;
  } seen[8];
  static unsigned n_seen;
  // Off (an MPI_THREAD_MULTIPLE program, say), nothing is cadrt's and the
  // kept answers are not touched: several threads may be calling.
  if (!g_on) return decline("libcadmpi is not running");
  if (dt == MPI_DATATYPE_NULL) return decline("the datatype is MPI_DATATYPE_NULL");
  for (unsigned i = 0; i < n_seen; i++)
    if (seen[i].dt == dt) {
      *out = seen[i].shape;
      return true;
    }
  int ni, na, nd, combiner;
  if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
    return decline("MPI_Type_get_envelope rejects the datatype");
  Shape s;
  MPI_Aint lb, true_extent;
  int size;
  PMPI_Type_size(dt, &size);
  PMPI_Type_get_extent(dt, &lb, &s.extent);
  PMPI_Type_get_true_extent(dt, &s.true_lb, &true_extent);
  s.size = static_cast<size_t>(size);
  s.predefined = combiner == MPI_COMBINER_NAMED;
  if (s.predefined)
    s.dense = lb == 0 && s.extent == size;  // what walk() would find, without asking MPI again
  else if (!walk(dt, &s.dense, 0))
    return false;
  if (size == 0) s.dense = true;  // nothing to move
  if (s.predefined && n_seen < sizeof seen / sizeof seen[0]) seen[n_seen++] = {dt, s};
  *out = s;
  return true;
}

// count elements of dt at buf, blocks times over (a gather's receive
// buffer: block after block, an array of count x blocks elements): the
// bytes of one block, and where cadrt finds all of them.  In place when
// they lie there in order; else in a new Stage of g_staging, packed before
// the collective if `in`, unpacked after it if `out`.
bool bytes_at(const void *buf, int count, int blocks, MPI_Datatype dt, bool in, bool out, size_t *bytes,
              void **at) {
  Shape s;
  if (count < 0) return decline("a negative count (%d)", count);
  if (!shape_of(dt, &s)) return false;
  *bytes = static_cast<size_t>(count) * s.size;
  const size_t n = static_cast<size_t>(count) * static_cast<size_t>(blocks), all = n * s.size;
  if (all == 0 || (s.dense && (n == 1 || s.extent == static_cast<MPI_Aint>(s.size)))) {
    *at = const_cast<char *>(static_cast<const char *>(buf)) + (all ? s.true_lb : 0);
    return true;
  }
  Stage st;
  st.piece = std::min(n, std::max<size_t>(1, Stage::kPiece / s.size));
  if (st.piece * s.size > INT_MAX)
    return decline("one element of %s is %zu bytes: MPI_Pack takes less than 2 GiB", type_name(dt).c_str(), s.size);
  int packed = 0;
  PMPI_Pack_size(static_cast<int>(st.piece), dt, MPI_COMM_WORLD, &packed);
  if (static_cast<size_t>(packed) != st.piece * s.size)
    return decline("MPI packs %zu elements of %s in %d bytes, not in their size (%zu)", st.piece,
                   type_name(dt).c_str(), packed, st.piece * s.size);
  // (No exception through MPI_Bcast and its siblings: staging that cannot
  // be allocated leaves the call to MPI.)
  st.tmp.reset(new (std::nothrow) char[all]);
  if (!st.tmp) return decline("no memory to stage %zu bytes of %s", all, type_name(dt).c_str());
  st.user = const_cast<char *>(static_cast<const char *>(buf));
  st.count = n;
  st.size = s.size;
  st.extent = s.extent;
  st.in = in;
  st.out = out;
  if (s.predefined) {
    st.dt = dt;
  } else {
    PMPI_Type_dup(dt, &st.dt);
    st.own_dt = true;
  }
  *at = st.tmp.get();
  if (!g_staging) g_staging.reset(new Staging);
  g_staging->sides.push_back(std::move(st));
  return true;
}

// The cadrt datatype of a predefined MPI one, for reductions, found from
// scratch (elem_of keeps the answers).
bool elem_lookup(MPI_Datatype dt, cadrt_datatype *out) {
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
  if (dt == MPI_DATATYPE_NULL) return decline("the datatype is MPI_DATATYPE_NULL");
  for (const auto &e : table)
    if (e.mpi == dt) {
      // The pair types: only where MPI's layout is cadrt's.
      MPI_Aint lb, extent;
      PMPI_Type_get_extent(dt, &lb, &extent);
      if (lb != 0 || static_cast<size_t>(extent) != cadrt_datatype_size(e.cad))
        return decline("%s: MPI lays it out in %ld bytes, cadrt in %zu", type_name(dt).c_str(),
                       static_cast<long>(extent), cadrt_datatype_size(e.cad));
      *out = e.cad;
      return true;
    }
  // Fortran's numeric types and MPI's address-sized integers, by the size
  // this MPI gives them (INTEGER is 4 bytes with gfortran's default, 8
  // under -fdefault-integer-8): MPI defines the same reductions on them
  // as on the C types of their size.  (LOGICAL and COMPLEX are not
  // cadrt's; MPI_2REAL and MPI_2DOUBLE_PRECISION pair two reals, which no
  // cadrt type is.)
  static const struct {
    MPI_Datatype mpi;
    char kind;  // 'i' signed integer, 'f' real, 'p' a pair of INTEGERs
  } fortran[] = {
      {MPI_INTEGER, 'i'},  {MPI_INTEGER1, 'i'},         {MPI_INTEGER2, 'i'}, {MPI_INTEGER4, 'i'},
      {MPI_INTEGER8, 'i'}, {MPI_REAL, 'f'},             {MPI_REAL4, 'f'},    {MPI_REAL8, 'f'},
      {MPI_DOUBLE_PRECISION, 'f'}, {MPI_2INTEGER, 'p'}, {MPI_AINT, 'i'},     {MPI_OFFSET, 'i'},
      {MPI_COUNT, 'i'},
  };
  for (const auto &e : fortran) {
    if (e.mpi != dt) continue;
    int size = 0;
    MPI_Aint lb, extent;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &extent);
    if (lb != 0 || extent != size) break;
    cadrt_datatype d = CADRT_USER;
    if (e.kind == 'i')
      d = size == 1 ? CADRT_INT8 : size == 2 ? CADRT_INT16 : size == 4 ? CADRT_INT32 : size == 8 ? CADRT_INT64 : d;
    if (e.kind == 'f') d = size == 4 ? CADRT_FLOAT : size == 8 ? CADRT_DOUBLE : d;
    if (e.kind == 'p') d = size == 8 ? CADRT_INT_INT : d;
    if (d == CADRT_USER) break;
    *out = d;
    return true;
  }
  // Why not: asked of MPI only when it will be told (CADRT_VERBOSE).
  if (!g_verbose) return false;
  int ni, na, nd, combiner;
  if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) == MPI_SUCCESS && combiner != MPI_COMBINER_NAMED)
    return decline("a derived datatype in a reduction: MPI's predefined ops take predefined types");
  return decline("%s is not a type cadrt reduces", type_name(dt).c_str());
}

bool elem_of(MPI_Datatype dt, cadrt_datatype *out) {
  // Only predefined types are taken, and their handles are never freed,
  // so an answer kept by handle stays right (a refusal is not kept: it is
  // cheap, its reason is wanted under CADRT_VERBOSE, and a derived type's
  // handle may be reused).
  static struct {
    MPI_Datatype dt;
    cadrt_datatype cad;
  } seen[8];
  static unsigned n_seen;
  if (!g_on) return decline("libcadmpi is not running");  // as in named()
  for (unsigned i = 0; i < n_seen; i++)
    if (seen[i].dt == dt) {
      *out = seen[i].cad;
      return true;
    }
  if (!elem_lookup(dt, out)) return false;
  if (n_seen < sizeof seen / sizeof seen[0]) seen[n_seen++] = {dt, *out};
  return true;
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
  if (op == MPI_REPLACE || op == MPI_NO_OP) return decline("MPI_REPLACE and MPI_NO_OP are one-sided ops");
  if (op == MPI_OP_NULL) return decline("the op is MPI_OP_NULL");
  return decline("a user-defined MPI_Op (MPI_Op_create): MPI runs it");
}

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
  if (g_on) {
    PMPI_Comm_dup(MPI_COMM_SELF, &g_probe);
    memset(&g_empty, 0, sizeof g_empty);
    g_empty.MPI_SOURCE = MPI_ANY_SOURCE;
    g_empty.MPI_TAG = MPI_ANY_TAG;
    g_empty.MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(&g_empty, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(&g_empty, 0);
  }
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
    progress_until([] { return g_live.empty(); });
    // The spares, and the program's unfreed persistent ones (their
    // handles, which the program can no longer use, are freed with them).
    std::vector<Ours *> left;
    for (const auto &kv : g_ours) left.push_back(kv.second);
    for (Ours *o : left) forget_ours(o);
    g_spare.clear();
    g_active = 0;
    PMPI_Comm_free(&g_probe);
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
//
// Each call completes the active ones of ours it is given (see Ours) and
// lets MPI complete the rest: the array forms with ours among the
// requests have MPI test the array only once ours have finished (MPI's
// Testall that succeeds completes its requests, and a second one would
// give them empty statuses), or have it test the array (the any and some
// forms) and merge ours into what it found.  While any of ours runs, a
// wait for MPI's own requests progresses cadrt too.

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
  if (Ours *o = active_ours(*req)) return wait_ours(o, req, status);
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
  if (Ours *o = active_ours(*req)) {
    *flag = o->done;
    if (!o->done) {
      mpi_progress();
      return MPI_SUCCESS;
    }
    complete_ours(o, status, req);
    return raise_failure(MPI_SUCCESS, false);
  }
  return PMPI_Test(req, flag, status);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  const bool with_ours = has_active_ours(n, reqs);
  if (!with_ours && g_live.empty()) return PMPI_Waitall(n, reqs, statuses);
  Polling polling;
  for (int spins = 0;; idle(&spins)) {
    progress();
    if (with_ours && !ours_done(n, reqs)) {
      if (spins >= kCadrtOnlySpins) mpi_progress();
      continue;
    }
    int flag = 0;
    const int rc = PMPI_Testall(n, reqs, &flag, statuses);
    if (rc != MPI_SUCCESS || flag) {
      if (with_ours) complete_all_ours(n, reqs, statuses);
      return raise_failure(rc, true);
    }
  }
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
  progress();
  const bool with_ours = has_active_ours(n, reqs);
  if (with_ours && !ours_done(n, reqs)) {
    *flag = 0;
    mpi_progress();
    return MPI_SUCCESS;
  }
  const int rc = PMPI_Testall(n, reqs, flag, statuses);
  if (with_ours && (*flag || rc != MPI_SUCCESS)) complete_all_ours(n, reqs, statuses);
  return raise_failure(rc, true);
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
  const bool with_ours = has_active_ours(n, reqs);
  if (!with_ours && g_live.empty()) return PMPI_Waitany(n, reqs, index, status);
  Polling polling;
  for (int spins = 0;; idle(&spins)) {
    progress();
    if (with_ours && (*index = complete_any_ours(n, reqs, status)) >= 0) return raise_failure(MPI_SUCCESS, false);
    int flag = 0;
    const int rc = PMPI_Testany(n, reqs, index, &flag, status);
    // (Nothing active to MPI while ours run: not done.)
    if (rc != MPI_SUCCESS || (flag && (*index != MPI_UNDEFINED || !with_ours))) return rc;
  }
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
  progress();
  const bool with_ours = has_active_ours(n, reqs);
  if (with_ours && (*index = complete_any_ours(n, reqs, status)) >= 0) {
    *flag = 1;
    return raise_failure(MPI_SUCCESS, false);
  }
  const int rc = PMPI_Testany(n, reqs, index, flag, status);
  if (with_ours && *flag && *index == MPI_UNDEFINED) *flag = 0;  // ours still run
  return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  const bool with_ours = has_active_ours(n, reqs);
  if (!with_ours && g_live.empty()) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
  Polling polling;
  for (int spins = 0;; idle(&spins)) {
    progress();
    const int rc = with_ours ? testsome_with_ours(n, reqs, outcount, indices, statuses)
                             : PMPI_Testsome(n, reqs, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0)  // some, or MPI_UNDEFINED: none active
      return raise_failure(rc, true);
  }
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  progress();
  const int rc = has_active_ours(n, reqs) ? testsome_with_ours(n, reqs, outcount, indices, statuses)
                                          : PMPI_Testsome(n, reqs, outcount, indices, statuses);
  return raise_failure(rc, true);
}

// Tests without freeing: progress too, or a program polling it alone
// would never see a cadrt collective complete.
int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *status) {
  progress();
  if (const Ours *o = active_ours(req)) {
    *flag = o->done;
    if (o->done)
      status_of(o, status);
    else
      mpi_progress();
    return MPI_SUCCESS;
  }
  return PMPI_Request_get_status(req, flag, status);
}

// A handle of ours MPI_Start or MPI_Request_free must not take: a
// non-blocking one's (to MPI an inactive persistent request, which MPI
// would start or free from under us) that the program kept after it
// completed.  MPI_ERR_REQUEST, as MPI says of a request that is not
// valid there.
bool refused(MPI_Request req, int *rc) {
  const Ours *o = ours(req);
  if (!o || o->persistent || o->active) return false;
  PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_REQUEST);
  *rc = MPI_ERR_REQUEST;
  return true;
}

int MPI_Request_free(MPI_Request *req) {
  int rc = MPI_SUCCESS;
  if (!req) return PMPI_Request_free(req);
  if (refused(*req, &rc)) return rc;
  if (free_ours(req)) return MPI_SUCCESS;
  return PMPI_Request_free(req);
}

// Cancelling a collective is erroneous in MPI (Open MPI's own MPI_Cancel
// aborts on one); ours are left alone, they complete as they would have.
int MPI_Cancel(MPI_Request *req) {
  if (req && ours(*req)) return MPI_SUCCESS;
  return PMPI_Cancel(req);
}

// A communicator freed under collectives of ours (MPI lets them go on;
// cadrt keeps its communicator until the last is freed): their failures
// are raised on MPI_COMM_WORLD from then on.
int MPI_Comm_free(MPI_Comm *comm) {
  if (comm)
    for (auto &kv : g_ours)
      if (kv.second->comm == *comm) kv.second->comm = MPI_COMM_WORLD;
  return PMPI_Comm_free(comm);
}

// A persistent collective: one of ours starts its cadrt collective (its
// handle stays inactive to MPI); the others are MPI's.  Starting an
// active one, or a non-blocking one's handle, is erroneous:
// MPI_ERR_REQUEST, as MPI_Start says of any active request.
int MPI_Start(MPI_Request *req) {
  Ours *o = req ? ours(*req) : nullptr;
  if (!o) return PMPI_Start(req);
  if (o->active || !o->persistent) {
    PMPI_Comm_call_errhandler(o->persistent ? o->comm : MPI_COMM_WORLD, MPI_ERR_REQUEST);
    return MPI_ERR_REQUEST;
  }
  g_through++;
  if (o->st) o->st->pack();
  if (const int err = cadrt_start(&o->req)) {
    activate(o);
    finish(o, err);  // raised by the call that completes the handle
  } else {
    go_live(o);
  }
  return MPI_SUCCESS;
}

int MPI_Startall(int n, MPI_Request reqs[]) {
  bool with_ours = false;
  for (int i = 0; i < n && !with_ours; i++) with_ours = ours(reqs[i]) != nullptr;
  if (!with_ours) return PMPI_Startall(n, reqs);
  for (int i = 0; i < n; i++) {  // MPI_Startall is MPI_Start of each, in order
    const int rc = MPI_Start(&reqs[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// ---------------------------------------------------------------- collectives
//
// Each collective's decision and cadrt call is made once, in start_*(),
// for both forms: the non-blocking one wraps the request, the blocking one
// waits for it.  False: the call is MPI's.

}  // extern "C"

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

extern "C" {

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req) {
  cadrt_request r;
  if (start_bcast(buf, count, dt, root, comm, &r)) return wrap(r, "MPI_Ibcast", comm, req);
  fell("MPI_Ibcast");
  return PMPI_Ibcast(buf, count, dt, root, comm, req);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  cadrt_request r;
  if (start_bcast(buf, count, dt, root, comm, &r)) return finish_now(r, "MPI_Bcast", comm);
  fell("MPI_Bcast");
  return PMPI_Bcast(buf, count, dt, root, comm);
}

int MPI_Ireduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req) {
  cadrt_request r;
  if (start_reduce(s, rb, count, dt, op, root, comm, &r)) return wrap(r, "MPI_Ireduce", comm, req);
  fell("MPI_Ireduce");
  return PMPI_Ireduce(s, rb, count, dt, op, root, comm, req);
}

int MPI_Reduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm) {
  cadrt_request r;
  if (start_reduce(s, rb, count, dt, op, root, comm, &r)) return finish_now(r, "MPI_Reduce", comm);
  fell("MPI_Reduce");
  return PMPI_Reduce(s, rb, count, dt, op, root, comm);
}

int MPI_Iallreduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req) {
  cadrt_request r;
  if (start_allreduce(s, rb, count, dt, op, comm, &r)) return wrap(r, "MPI_Iallreduce", comm, req);
  fell("MPI_Iallreduce");
  return PMPI_Iallreduce(s, rb, count, dt, op, comm, req);
}

int MPI_Allreduce(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  cadrt_request r;
  if (start_allreduce(s, rb, count, dt, op, comm, &r)) return finish_now(r, "MPI_Allreduce", comm);
  fell("MPI_Allreduce");
  return PMPI_Allreduce(s, rb, count, dt, op, comm);
}

int MPI_Ireduce_scatter_block(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req) {
  cadrt_request r;
  if (start_reduce_scatter_block(s, rb, count, dt, op, comm, &r)) return wrap(r, "MPI_Ireduce_scatter_block", comm, req);
  fell("MPI_Ireduce_scatter_block");
  return PMPI_Ireduce_scatter_block(s, rb, count, dt, op, comm, req);
}

int MPI_Reduce_scatter_block(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  cadrt_request r;
  if (start_reduce_scatter_block(s, rb, count, dt, op, comm, &r)) return finish_now(r, "MPI_Reduce_scatter_block", comm);
  fell("MPI_Reduce_scatter_block");
  return PMPI_Reduce_scatter_block(s, rb, count, dt, op, comm);
}

int MPI_Igather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                MPI_Request *req) {
  cadrt_request r;
  if (start_gather(s, sc, st, rb, rc, rt, root, comm, &r)) return wrap(r, "MPI_Igather", comm, req);
  fell("MPI_Igather");
  return PMPI_Igather(s, sc, st, rb, rc, rt, root, comm, req);
}

int MPI_Gather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm) {
  cadrt_request r;
  if (start_gather(s, sc, st, rb, rc, rt, root, comm, &r)) return finish_now(r, "MPI_Gather", comm);
  fell("MPI_Gather");
  return PMPI_Gather(s, sc, st, rb, rc, rt, root, comm);
}

int MPI_Iscatter(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                 MPI_Request *req) {
  cadrt_request r;
  if (start_scatter(s, sc, st, rb, rc, rt, root, comm, &r)) return wrap(r, "MPI_Iscatter", comm, req);
  fell("MPI_Iscatter");
  return PMPI_Iscatter(s, sc, st, rb, rc, rt, root, comm, req);
}

int MPI_Scatter(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                MPI_Comm comm) {
  cadrt_request r;
  if (start_scatter(s, sc, st, rb, rc, rt, root, comm, &r)) return finish_now(r, "MPI_Scatter", comm);
  fell("MPI_Scatter");
  return PMPI_Scatter(s, sc, st, rb, rc, rt, root, comm);
}

int MPI_Iallgather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                   MPI_Request *req) {
  cadrt_request r;
  if (start_allgather(s, sc, st, rb, rc, rt, comm, &r)) return wrap(r, "MPI_Iallgather", comm, req);
  fell("MPI_Iallgather");
  return PMPI_Iallgather(s, sc, st, rb, rc, rt, comm, req);
}

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  cadrt_request r;
  if (start_allgather(s, sc, st, rb, rc, rt, comm, &r)) return finish_now(r, "MPI_Allgather", comm);
  fell("MPI_Allgather");
  return PMPI_Allgather(s, sc, st, rb, rc, rt, comm);
}

int MPI_Ialltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                  MPI_Request *req) {
  cadrt_request r;
  if (start_alltoall(s, sc, st, rb, rc, rt, comm, &r)) return wrap(r, "MPI_Ialltoall", comm, req);
  fell("MPI_Ialltoall");
  return PMPI_Ialltoall(s, sc, st, rb, rc, rt, comm, req);
}

int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  cadrt_request r;
  if (start_alltoall(s, sc, st, rb, rc, rt, comm, &r)) return finish_now(r, "MPI_Alltoall", comm);
  fell("MPI_Alltoall");
  return PMPI_Alltoall(s, sc, st, rb, rc, rt, comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) {
  cadrt_request r;
  if (start_barrier(comm, &r)) return wrap(r, "MPI_Ibarrier", comm, req);
  fell("MPI_Ibarrier");
  return PMPI_Ibarrier(comm, req);
}

int MPI_Barrier(MPI_Comm comm) {
  cadrt_request r;
  if (start_barrier(comm, &r)) return finish_now(r, "MPI_Barrier", comm);
  fell("MPI_Barrier");
  return PMPI_Barrier(comm);
}

// Persistent collectives, MPI-4's MPI_Bcast_init... under the names Open
// MPI 4.1 gives them (MPIX_, its pcollreq extension): cadrt selects,
// instantiates, verifies and registers once, at init (the kernel engine
// loads the program into cad.ko once), and every MPI_Start runs it.  The
// info argument holds no hint cadrt uses.
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
int MPIX_Bcast_init(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Info info,
                    MPI_Request *req) {
  cadrt_request r;
  if (start_bcast(buf, count, dt, root, comm, &r, cadrt_bcast_init))
    return wrap_persistent(r, "MPIX_Bcast_init", comm, req);
  fell("MPIX_Bcast_init");
  return PMPIX_Bcast_init(buf, count, dt, root, comm, info, req);
}

int MPIX_Reduce_init(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_reduce(s, rb, count, dt, op, root, comm, &r, cadrt_reduce_init))
    return wrap_persistent(r, "MPIX_Reduce_init", comm, req);
  fell("MPIX_Reduce_init");
  return PMPIX_Reduce_init(s, rb, count, dt, op, root, comm, info, req);
}

int MPIX_Allreduce_init(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                        MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_allreduce(s, rb, count, dt, op, comm, &r, cadrt_allreduce_init))
    return wrap_persistent(r, "MPIX_Allreduce_init", comm, req);
  fell("MPIX_Allreduce_init");
  return PMPIX_Allreduce_init(s, rb, count, dt, op, comm, info, req);
}

int MPIX_Reduce_scatter_block_init(const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm, MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_reduce_scatter_block(s, rb, count, dt, op, comm, &r, cadrt_reduce_scatter_block_init))
    return wrap_persistent(r, "MPIX_Reduce_scatter_block_init", comm, req);
  fell("MPIX_Reduce_scatter_block_init");
  return PMPIX_Reduce_scatter_block_init(s, rb, count, dt, op, comm, info, req);
}

int MPIX_Gather_init(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                     MPI_Comm comm, MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_gather(s, sc, st, rb, rc, rt, root, comm, &r, cadrt_gather_init))
    return wrap_persistent(r, "MPIX_Gather_init", comm, req);
  fell("MPIX_Gather_init");
  return PMPIX_Gather_init(s, sc, st, rb, rc, rt, root, comm, info, req);
}

int MPIX_Scatter_init(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_scatter(s, sc, st, rb, rc, rt, root, comm, &r, cadrt_scatter_init))
    return wrap_persistent(r, "MPIX_Scatter_init", comm, req);
  fell("MPIX_Scatter_init");
  return PMPIX_Scatter_init(s, sc, st, rb, rc, rt, root, comm, info, req);
}

int MPIX_Allgather_init(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                        MPI_Comm comm, MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_allgather(s, sc, st, rb, rc, rt, comm, &r, cadrt_allgather_init))
    return wrap_persistent(r, "MPIX_Allgather_init", comm, req);
  fell("MPIX_Allgather_init");
  return PMPIX_Allgather_init(s, sc, st, rb, rc, rt, comm, info, req);
}

int MPIX_Alltoall_init(const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                       MPI_Comm comm, MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_alltoall(s, sc, st, rb, rc, rt, comm, &r, cadrt_alltoall_init))
    return wrap_persistent(r, "MPIX_Alltoall_init", comm, req);
  fell("MPIX_Alltoall_init");
  return PMPIX_Alltoall_init(s, sc, st, rb, rc, rt, comm, info, req);
}

int MPIX_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *req) {
  cadrt_request r;
  if (start_barrier(comm, &r, cadrt_barrier_init)) return wrap_persistent(r, "MPIX_Barrier_init", comm, req);
  fell("MPIX_Barrier_init");
  return PMPIX_Barrier_init(comm, info, req);
}
#endif

}  // extern "C"

// ---------------------------------------------------------------- Fortran
//
// Open MPI's Fortran bindings call the C library through PMPI_, past an
// LD_PRELOAD of the MPI_ names: a program whose main is Fortran would
// never start libcadmpi, and its collectives would never reach cadrt.  So
// libcadmpi also defines the Fortran entry points of initialisation,
// finalisation, the collectives (blocking, non-blocking and persistent,
// with MPI_START and MPI_STARTALL) and the completion family (MPI_WAIT,
// MPI_TEST and their ALL/ANY/SOME forms, MPI_REQUEST_GET_STATUS,
// MPI_REQUEST_FREE), converts the handles and calls the C entry points
// above, which decide as for C whether cadrt or MPI runs a collective,
// and progress cadrt while they wait.
//
// Under which names: each is defined as Open MPI names its own
// implementation, ompi_X_f, which `use mpi_f08` calls (from
// libmpi_usempif08), and aliased to gfortran's name mpi_X_, which mpif.h
// and `use mpi` call.  Two quirks of Open MPI 4.1 follow: mpi_f08's
// MPI_TEST family (and MPI_REQUEST_GET_STATUS) calls pmpi_test_ and its
// siblings, which libcadmpi
// therefore takes too (they progress cadrt, then do exactly what Open
// MPI's do), and mpi_f08's PMPI_ collectives call the same ompi_X_f as its
// MPI_ ones, so from mpi_f08 both go through cadrt.  From mpif.h and `use
// mpi`, PMPI_ names stay Open MPI's.  Other compilers' name manglings
// (MPI_BCAST, mpi_bcast__) are not taken.

extern "C" {
// Open MPI's Fortran sentinels (the addresses MPI_IN_PLACE, MPI_BOTTOM,
// MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE have in Fortran); weak:
// absent from another MPI.
extern char mpi_fortran_in_place_ __attribute__((weak));
extern char mpi_fortran_bottom_ __attribute__((weak));
extern char mpi_fortran_status_ignore_ __attribute__((weak));
extern char mpi_fortran_statuses_ignore_ __attribute__((weak));
}

namespace {

void *f_buf(void *p) {
  if (&mpi_fortran_in_place_ && p == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  if (&mpi_fortran_bottom_ && p == &mpi_fortran_bottom_) return MPI_BOTTOM;
  return p;
}

MPI_Comm f_comm(const MPI_Fint *c) { return PMPI_Comm_f2c(*c); }
MPI_Datatype f_type(const MPI_Fint *t) { return PMPI_Type_f2c(*t); }
MPI_Op f_op(const MPI_Fint *o) { return PMPI_Op_f2c(*o); }
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
MPI_Info f_info(const MPI_Fint *i) { return PMPI_Info_f2c(*i); }
#endif

// A non-blocking call's result in Fortran: the error code, and the
// request's Fortran handle when there is one.  (The request by address:
// read after the call that sets it, whatever order the arguments of
// f_started(MPI_Ibcast(..., &q), &q, ...) are evaluated in.)
void f_started(int rc, const MPI_Request *q, MPI_Fint *request, MPI_Fint *ierr) {
  *ierr = rc;
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(*q);
}

// A Fortran request handle MPI_Request_f2c finds nothing for (it returns
// no request, as MPI asks, rather than raise an error): MPI_ERR_REQUEST,
// raised on MPI_COMM_WORLD as Open MPI raises request errors.  (Open MPI's
// own MPI_WAIT and MPI_TEST would follow the null pointer; its array forms
// check each request themselves.)
bool bad_request(MPI_Request r, MPI_Fint *ierr) {
  if (r != nullptr) return false;
  *ierr = MPI_ERR_REQUEST;
  PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_REQUEST);
  return true;
}

// Fortran's LOGICAL .TRUE. under gfortran (Open MPI's, configured for it).
MPI_Fint f_logical(int flag) { return flag ? 1 : 0; }

// A Fortran status is MPI_STATUS_SIZE integers; an array of them is
// strided so.
constexpr size_t kStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);

bool status_ignored(const MPI_Fint *s) {
  return &mpi_fortran_status_ignore_ && s == (void *)&mpi_fortran_status_ignore_;
}
bool statuses_ignored(const MPI_Fint *s) {
  return &mpi_fortran_statuses_ignore_ && s == (void *)&mpi_fortran_statuses_ignore_;
}

// A Fortran status on the C side: none where Fortran passed
// MPI_STATUS_IGNORE, else one to convert back.
struct FStatus {
  MPI_Fint *f;
  MPI_Status s;

  explicit FStatus(MPI_Fint *fs) : f(fs) {}
  MPI_Status *c() { return status_ignored(f) ? MPI_STATUS_IGNORE : &s; }
  void back() const {
    if (!status_ignored(f)) PMPI_Status_c2f(&s, f);
  }
};

// The C side of a Fortran request array and its statuses, and back.  On
// the heap for each call, as Open MPI's own Fortran bindings do:
// libcadmpi may be off in an MPI_THREAD_MULTIPLE program, where these are
// called from several threads at once.  A negative count leaves both
// empty and goes to MPI as it is, which reports it.
struct FRequests {
  std::vector<MPI_Request> req;
  std::vector<MPI_Status> st;
  MPI_Status *statuses = MPI_STATUSES_IGNORE;

  FRequests(int n, const MPI_Fint *freq, bool want_statuses) : req(static_cast<size_t>(n > 0 ? n : 0)) {
    for (int i = 0; i < n; i++) req[i] = PMPI_Request_f2c(freq[i]);
    if (want_statuses) {
      st.resize(req.size());
      statuses = st.data();
    }
  }
  // Request i's handle (MPI_REQUEST_NULL once completed and freed) and
  // status j (a completion's, in the order MPI reported them).
  void back(int i, MPI_Fint *freq) const { freq[i] = PMPI_Request_c2f(req[i]); }
  void status_back(int j, MPI_Fint *fst) const {
    if (statuses != MPI_STATUSES_IGNORE) PMPI_Status_c2f(&st[j], fst + j * kStatusInts);
  }
};

// MPI_TEST and MPI_REQUEST_GET_STATUS (test is the C call, which may
// free the request): the flag, the handle as it is now, and a
// completion's status.
template <typename Test>
void test_f(Test test, MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  FStatus st(status);
  int f = 0;
  *ierr = test(&r, &f, st.c());
  if (*ierr != MPI_SUCCESS) return;
  *request = PMPI_Request_c2f(r);
  *flag = f_logical(f);
  if (f) st.back();
}

// The array forms, each for its waiting and its testing member (wait;
// flag is null for the waiting one, which completes when it returns).
// MPI_WAITALL and MPI_TESTALL: MPI_ERR_IN_STATUS means some failed, and
// every request's handle and status says which.
void all_f(bool wait, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr) {
  FRequests c(*count, requests, !statuses_ignored(statuses));
  int f = 1;
  *ierr = wait ? MPI_Waitall(*count, c.req.data(), c.statuses) : MPI_Testall(*count, c.req.data(), &f, c.statuses);
  if (*ierr != MPI_SUCCESS && *ierr != MPI_ERR_IN_STATUS) return;
  if (flag) *flag = f_logical(f);
  if (!f) return;  // nothing completed: MPI changed no request
  for (int i = 0; i < *count; i++) {
    c.back(i, requests);
    c.status_back(i, statuses);
  }
}

// MPI_WAITANY and MPI_TESTANY: Fortran counts the index from 1.
void any_f(bool wait, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
           MPI_Fint *ierr) {
  FRequests c(*count, requests, false);
  FStatus st(status);
  int i = MPI_UNDEFINED, f = 1;
  *ierr = wait ? MPI_Waitany(*count, c.req.data(), &i, st.c()) : MPI_Testany(*count, c.req.data(), &i, &f, st.c());
  if (*ierr != MPI_SUCCESS) return;
  if (flag) *flag = f_logical(f);
  *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
  if (i != MPI_UNDEFINED) c.back(i, requests);
  if (f) st.back();
}

// MPI_WAITSOME and MPI_TESTSOME: outcount completions, their indices
// (from 1) and statuses in that order.
void some_f(bool wait, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
            MPI_Fint *statuses, MPI_Fint *ierr) {
  FRequests c(*incount, requests, !statuses_ignored(statuses));
  std::vector<int> idx(c.req.size());
  int out = 0;
  *ierr = (wait ? MPI_Waitsome : MPI_Testsome)(*incount, c.req.data(), &out, idx.data(), c.statuses);
  if (*ierr != MPI_SUCCESS && *ierr != MPI_ERR_IN_STATUS) return;
  *outcount = out;
  for (int j = 0; j < out && out != MPI_UNDEFINED; j++) {
    indices[j] = idx[j] + 1;
    c.back(idx[j], requests);
    c.status_back(j, statuses);
  }
}

}  // namespace

// Fortran names for a definition: gfortran's (mpif.h, `use mpi`), and for
// the MPI_TEST family the pmpi_ one mpi_f08 calls.
#define FORTRAN_ALIAS(impl, name) extern "C" __typeof__(impl) name __attribute__((alias(#impl)));

extern "C" {

// ------------------------------------------------ life

void ompi_init_f(MPI_Fint *ierr) { *ierr = MPI_Init(nullptr, nullptr); }

void ompi_init_thread_f(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
  int p = 0;
  *ierr = MPI_Init_thread(nullptr, nullptr, *required, &p);
  *provided = p;
}

void ompi_finalize_f(MPI_Fint *ierr) { *ierr = MPI_Finalize(); }

// ------------------------------------------------ completion

void ompi_wait_f(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  FStatus st(status);
  *ierr = MPI_Wait(&r, st.c());
  if (*ierr != MPI_SUCCESS) return;
  *request = PMPI_Request_c2f(r);
  st.back();
}

void ompi_test_f(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr) {
  test_f(MPI_Test, request, flag, status, ierr);
}

void ompi_request_get_status_f(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr) {
  test_f([](MPI_Request *r, int *f, MPI_Status *s) { return MPI_Request_get_status(*r, f, s); }, request, flag,
         status, ierr);
}

void ompi_waitall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr) {
  all_f(true, count, requests, nullptr, statuses, ierr);
}

void ompi_testall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr) {
  all_f(false, count, requests, flag, statuses, ierr);
}

void ompi_waitany_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr) {
  any_f(true, count, requests, index, nullptr, status, ierr);
}

void ompi_testany_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                    MPI_Fint *ierr) {
  any_f(false, count, requests, index, flag, status, ierr);
}

void ompi_waitsome_f(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                     MPI_Fint *statuses, MPI_Fint *ierr) {
  some_f(true, incount, requests, outcount, indices, statuses, ierr);
}

void ompi_testsome_f(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                     MPI_Fint *statuses, MPI_Fint *ierr) {
  some_f(false, incount, requests, outcount, indices, statuses, ierr);
}

void ompi_request_free_f(MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  *ierr = MPI_Request_free(&r);
  if (*ierr == MPI_SUCCESS) *request = PMPI_Request_c2f(r);
}

// ------------------------------------------------ blocking collectives

void ompi_bcast_f(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr) {
  *ierr = MPI_Bcast(f_buf(buf), *count, f_type(dt), *root, f_comm(comm));
}

void ompi_reduce_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,
                   MPI_Fint *ierr) {
  *ierr = MPI_Reduce(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), *root, f_comm(comm));
}

void ompi_allreduce_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                      MPI_Fint *ierr) {
  *ierr = MPI_Allreduce(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm));
}

void ompi_reduce_scatter_block_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                                 MPI_Fint *ierr) {
  *ierr = MPI_Reduce_scatter_block(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm));
}

void ompi_gather_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,
                   MPI_Fint *comm, MPI_Fint *ierr) {
  *ierr = MPI_Gather(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm));
}

void ompi_scatter_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,
                    MPI_Fint *comm, MPI_Fint *ierr) {
  *ierr = MPI_Scatter(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm));
}

void ompi_allgather_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm,
                      MPI_Fint *ierr) {
  *ierr = MPI_Allgather(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm));
}

void ompi_alltoall_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm,
                     MPI_Fint *ierr) {
  *ierr = MPI_Alltoall(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm));
}

void ompi_barrier_f(MPI_Fint *comm, MPI_Fint *ierr) { *ierr = MPI_Barrier(f_comm(comm)); }

// ------------------------------------------------ non-blocking collectives

void ompi_ibcast_f(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *request,
                   MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Ibcast(f_buf(buf), *count, f_type(dt), *root, f_comm(comm), &q), &q, request, ierr);
}

void ompi_ireduce_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,
                    MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Ireduce(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), *root, f_comm(comm), &q), &q, request,
            ierr);
}

void ompi_iallreduce_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                       MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Iallreduce(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm), &q), &q, request, ierr);
}

void ompi_ireduce_scatter_block_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                                  MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Ireduce_scatter_block(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm), &q), &q,
            request, ierr);
}

void ompi_igather_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,
                    MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Igather(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm), &q), &q,
            request, ierr);
}

void ompi_iscatter_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,
                     MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Iscatter(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm), &q), &q,
            request, ierr);
}

void ompi_iallgather_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm,
                       MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Iallgather(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm), &q), &q, request,
            ierr);
}

void ompi_ialltoall_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm,
                      MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Ialltoall(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm), &q), &q, request,
            ierr);
}

void ompi_ibarrier_f(MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPI_Ibarrier(f_comm(comm), &q), &q, request, ierr);
}

// ------------------------------------------------ persistent collectives
//
// Open MPI 4.1's MPIX_*_INIT (its pcollreq extension: mpif-ext.h,
// mpi_f08_ext), and MPI_START and MPI_STARTALL, which start ours and
// Open MPI's alike (the C entry points tell them apart).

void ompi_start_f(MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  *ierr = MPI_Start(&r);
}

void ompi_startall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr) {
  FRequests c(*count, requests, false);
  *ierr = MPI_Startall(*count, c.req.data());
}

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
void ompix_bcast_init_f(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *info,
                        MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Bcast_init(f_buf(buf), *count, f_type(dt), *root, f_comm(comm), f_info(info), &q), &q, request,
            ierr);
}

void ompix_reduce_init_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                         MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Reduce_init(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), *root, f_comm(comm), f_info(info), &q),
            &q, request, ierr);
}

void ompix_allreduce_init_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                            MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Allreduce_init(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm), f_info(info), &q),
            &q, request, ierr);
}

void ompix_reduce_scatter_block_init_f(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                                       MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Reduce_scatter_block_init(f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm),
                                           f_info(info), &q),
            &q, request, ierr);
}

void ompix_gather_init_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,
                         MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Gather_init(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm), f_info(info),
                             &q),
            &q, request, ierr);
}

void ompix_scatter_init_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root,
                          MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Scatter_init(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm),
                              f_info(info), &q),
            &q, request, ierr);
}

void ompix_allgather_init_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,
                            MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Allgather_init(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm), f_info(info), &q),
            &q, request, ierr);
}

void ompix_alltoall_init_f(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm,
                           MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Alltoall_init(f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm), f_info(info), &q),
            &q, request, ierr);
}

void ompix_barrier_init_f(MPI_Fint *comm, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request q;
  f_started(MPIX_Barrier_init(f_comm(comm), f_info(info), &q), &q, request, ierr);
}
#endif

}  // extern "C"

FORTRAN_ALIAS(ompi_init_f, mpi_init_)
FORTRAN_ALIAS(ompi_init_thread_f, mpi_init_thread_)
FORTRAN_ALIAS(ompi_finalize_f, mpi_finalize_)
FORTRAN_ALIAS(ompi_wait_f, mpi_wait_)
FORTRAN_ALIAS(ompi_test_f, mpi_test_)
FORTRAN_ALIAS(ompi_test_f, pmpi_test_)
FORTRAN_ALIAS(ompi_waitall_f, mpi_waitall_)
FORTRAN_ALIAS(ompi_testall_f, mpi_testall_)
FORTRAN_ALIAS(ompi_testall_f, pmpi_testall_)
FORTRAN_ALIAS(ompi_waitany_f, mpi_waitany_)
FORTRAN_ALIAS(ompi_testany_f, mpi_testany_)
FORTRAN_ALIAS(ompi_testany_f, pmpi_testany_)
FORTRAN_ALIAS(ompi_waitsome_f, mpi_waitsome_)
FORTRAN_ALIAS(ompi_testsome_f, mpi_testsome_)
FORTRAN_ALIAS(ompi_testsome_f, pmpi_testsome_)
FORTRAN_ALIAS(ompi_request_get_status_f, mpi_request_get_status_)
FORTRAN_ALIAS(ompi_request_get_status_f, pmpi_request_get_status_)
FORTRAN_ALIAS(ompi_request_free_f, mpi_request_free_)
FORTRAN_ALIAS(ompi_bcast_f, mpi_bcast_)
FORTRAN_ALIAS(ompi_reduce_f, mpi_reduce_)
FORTRAN_ALIAS(ompi_allreduce_f, mpi_allreduce_)
FORTRAN_ALIAS(ompi_reduce_scatter_block_f, mpi_reduce_scatter_block_)
FORTRAN_ALIAS(ompi_gather_f, mpi_gather_)
FORTRAN_ALIAS(ompi_scatter_f, mpi_scatter_)
FORTRAN_ALIAS(ompi_allgather_f, mpi_allgather_)
FORTRAN_ALIAS(ompi_alltoall_f, mpi_alltoall_)
FORTRAN_ALIAS(ompi_barrier_f, mpi_barrier_)
FORTRAN_ALIAS(ompi_ibcast_f, mpi_ibcast_)
FORTRAN_ALIAS(ompi_ireduce_f, mpi_ireduce_)
FORTRAN_ALIAS(ompi_iallreduce_f, mpi_iallreduce_)
FORTRAN_ALIAS(ompi_ireduce_scatter_block_f, mpi_ireduce_scatter_block_)
FORTRAN_ALIAS(ompi_igather_f, mpi_igather_)
FORTRAN_ALIAS(ompi_iscatter_f, mpi_iscatter_)
FORTRAN_ALIAS(ompi_iallgather_f, mpi_iallgather_)
FORTRAN_ALIAS(ompi_ialltoall_f, mpi_ialltoall_)
FORTRAN_ALIAS(ompi_ibarrier_f, mpi_ibarrier_)
FORTRAN_ALIAS(ompi_start_f, mpi_start_)
FORTRAN_ALIAS(ompi_startall_f, mpi_startall_)
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
FORTRAN_ALIAS(ompix_bcast_init_f, mpix_bcast_init_)
FORTRAN_ALIAS(ompix_reduce_init_f, mpix_reduce_init_)
FORTRAN_ALIAS(ompix_allreduce_init_f, mpix_allreduce_init_)
FORTRAN_ALIAS(ompix_reduce_scatter_block_init_f, mpix_reduce_scatter_block_init_)
FORTRAN_ALIAS(ompix_gather_init_f, mpix_gather_init_)
FORTRAN_ALIAS(ompix_scatter_init_f, mpix_scatter_init_)
FORTRAN_ALIAS(ompix_allgather_init_f, mpix_allgather_init_)
FORTRAN_ALIAS(ompix_alltoall_init_f, mpix_alltoall_init_)
FORTRAN_ALIAS(ompix_barrier_init_f, mpix_barrier_init_)
#endif
