// requests.cpp - the handles of libcadmpi's collectives, and the calls
// that complete them: the MPI_Wait/Test family, MPI_Request_free,
// MPI_Start and MPI_Startall (see Ours).
#include <sched.h>

#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cadmpi.h"

namespace cadmpi {
namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

void requests_open() {
  PMPI_Comm_dup(MPI_COMM_SELF, &g_probe);
  memset(&g_empty, 0, sizeof g_empty);
  g_empty.MPI_SOURCE = MPI_ANY_SOURCE;
  g_empty.MPI_TAG = MPI_ANY_TAG;
  g_empty.MPI_ERROR = MPI_SUCCESS;
  PMPI_Status_set_elements(&g_empty, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(&g_empty, 0);
}

void requests_close() {
  progress_until([] { return g_live.empty(); });
  // The spares, and the program's unfreed persistent ones (their
  // handles, which the program can no longer use, are freed with them).
  std::vector<Ours *> left;
  for (const auto &kv : g_ours) left.push_back(kv.second);
  for (Ours *o : left) forget_ours(o);
  g_spare.clear();
  g_active = 0;
  PMPI_Comm_free(&g_probe);
}

}  // namespace cadmpi

using namespace cadmpi;

extern "C" {

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
static bool refused(MPI_Request req, int *rc) {
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

}  // extern "C"
