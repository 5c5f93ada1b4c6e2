// runtime.cpp - entering and leaving the library (the engines' side of
// it: arming, the signal handler), errors, init and finalize.
#include "runtime.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "internal.h"
#include "settings.h"
#include "spec.h"

namespace cadrt {

namespace {

thread_local std::string t_error;
// Some thread has had an error: until then, clearing one is not needed (a
// thread-local access from a shared library is a call to __tls_get_addr,
// which cadrt_test's fast path would otherwise pay every time).
static std::atomic<bool> g_error_set{false};

// The standard library beside libcadrt.so (build/lib/cad-std.cadlib, or
// PREFIX/lib/cad-std.cadlib installed).
std::string default_library() {
  return std::filesystem::path(library_dir() + "/cad-std.cadlib").lexically_normal().string();
}

// This thread's id (this_tid()).
thread_local int32_t t_tid = 0;

}  // namespace

// The signal engine's signal: CADRT_SIGNAL, SIGRTMIN + 5 unless set
// (choose_engine; each rank publishes its own in RankInfo::signo, which
// is what its peers kick it with).
CADRT_INTERNAL int g_signal = 0;
CADRT_INTERNAL std::atomic<bool> g_signal_sent{false};

// A setting's value (settings.h: declared there, or this aborts).
const char *env(const char *name) { return setting(name); }

bool env_long(const char *name, long *out) {
  const char *v = env(name);
  if (!v) return false;
  char *end;
  errno = 0;
  const long x = strtol(v, &end, 10);
  if (errno || *end) return false;
  *out = x;
  return true;
}

// A size setting (CADRT_KICK_MIN, CADRT_BULK_MIN...): *out as it was if
// name is not set; the error's words if it is not a number of bytes
// (*out untouched), else nothing.
std::string env_bytes(const char *name, uint64_t *out) {
  const char *v = env(name);
  long k;
  if (!v) return {};
  if (!env_long(name, &k) || k < 0) return std::string(name) + "=" + v + ": not a number of bytes";
  *out = static_cast<uint64_t>(k);
  return {};
}

// Lexically normal: a library found through an rpath such as
// lib/pkgconfig/../../lib.  "." if the loader cannot say.
std::string library_dir() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&library_dir), &info) || !info.dli_fname) return ".";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return std::filesystem::path(path.substr(0, slash)).lexically_normal().string();
}

// This thread's id, read once (the signal handler uses it too).
int32_t this_tid() {
  if (!t_tid) t_tid = static_cast<int32_t>(gettid());
  return t_tid;
}

// The signal engine's handler (start_engine() installs it).
void on_signal(int) {
  const int saved = errno;
  g_signal_sent.store(false, std::memory_order_relaxed);
  Runtime &r = rt();
  bool entered = false;
  if (!r.initialised()) {
    // finalize has begun or ended: nothing to progress
  } else if (!(entered = r.handler_enter(this_tid()))) {
    // Sent to a thread that no longer calls cadrt (the calls moved to
    // another, which is inside the library now or will see what came on
    // leaving it): nothing to do here.
    r.seg.rank(r.me).kicked.store(0, std::memory_order_relaxed);
  } else if (r.in_library.load(std::memory_order_relaxed)) {
    r.seg.rank(r.me).kicked.store(0, std::memory_order_relaxed);
    r.deferred.store(1, std::memory_order_relaxed);
    r.n_deferred.fetch_add(1, std::memory_order_relaxed);
  } else {
    r.in_library.store(1, std::memory_order_relaxed);
    RankInfo &mine = r.seg.rank(r.me);
    mine.kicked.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // a later message kicks again
    r.progress_in_handler();
    r.n_handler.fetch_add(1, std::memory_order_relaxed);
    r.arm();
    r.in_library.store(0, std::memory_order_relaxed);
    // What came during the pass (while armed, a kick is pending too).
  }
  if (entered) r.handler_leave();
  errno = saved;
}

std::atomic<Runtime *> g_rt{nullptr};

Runtime &rt_first() {
  static Runtime instance;
  g_rt.store(&instance, std::memory_order_release);
  return instance;
}

// armed shares its cache line with what every producer reads when it
// rings us (shm.h): written only when it changes, the line stays in the
// producers' caches.
static void set_armed(RankInfo &mine, bool on) {
  if (mine.armed.load(std::memory_order_relaxed) != (on ? 1u : 0u)) mine.armed.store(on ? 1 : 0, std::memory_order_relaxed);
}

// Outside the library: kicked while collectives that a peer would kick
// for are active (below), else not; idle when none is active.  Armed, the
// flags are published before the caller looks at its rings (a producer
// that saw us polling did not kick); else nothing kicks us, and the fence
// is spared.
void Runtime::arm() {
  if (engine != Engine::Signal || !initialised_) return;
  RankInfo &mine = seg.rank(me);
  const bool kick = active_count.load(std::memory_order_relaxed) > 0 &&
                    !signal_lost_.load(std::memory_order_relaxed) && kickable();
  set_armed(mine, kick);
  mine.polling.store(kick ? kRankOutside : kRankIdle, std::memory_order_relaxed);
  if (!kick) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // The helper found the handler not ours between the look above and the
  // store: it clears armed after its own store and fence, so one of the
  // two sees the other's (check_handler()).
  if (signal_lost_.load(std::memory_order_relaxed)) {
    set_armed(mine, false);
    mine.polling.store(kRankIdle, std::memory_order_relaxed);
  }
}

// A peer kicks only for urgent messages (ring()): steps of a transfer of
// a collective whose largest buffer on the sender is at least kick_min,
// and room in a ring.  Arming for smaller collectives alone bought
// nothing, and cost every message a peer sent us a miss on the line armed
// lives on (the rank's first, shm.h), written at every call.  A peer's
// largest buffer is taken to be at most comm size times ours (a gather's
// root holds every rank's block).  Output waiting for room is armed for.
// So is a collective only while a message could bring it work for this
// rank's CPU (needs_cpu()).
CADRT_HOT bool Runtime::kickable() const {
  if (waiting_output.load(std::memory_order_relaxed) > 0) return true;
  for (const cadrt_request_s *r = active_; r; r = r->next)
    if (r->inst->size * static_cast<uint64_t>(r->comm->size) >= kick_min && needs_cpu(r)) return true;
  return false;
}

// Whether a message could bring r work for this rank's CPU: a node not
// issued yet (what the end of a transfer makes ready: a reduction, a copy,
// a send), or a transfer this rank copies itself when the peer's message
// comes (a receive it reads, a send it writes, a lane, a split, fragments,
// the network).  A request whose every open node waits only for a peer
// that copies and then says FIN (kWaitFin) needs nothing from this rank but
// its next call to complete: a rank of allreduce_linear other than 0 from
// the end of its start, say.  Interrupting it then cost the peer that made
// the copies a tgkill or a futex wake-up per FIN, some 15 us each here, and
// bought nothing (1 MiB, thread and signal engines: rank 0 took 166 us
// instead of 136 for its part).
bool Runtime::needs_cpu(const cadrt_request_s *r) const {
  if (r->done) return false;
  if (r->draining || r->redrain || !r->outgoing.empty() || !r->netwait.empty()) return true;
  const cad_prog &p = r->inst->prog;
  for (uint32_t i = 0; i < p.n_nodes; i++) {
    const uint8_t st = r->ex.state[i];
    if (st == CAD_NS_DONE || st == CAD_NS_FAILED) continue;
    if (st != CAD_NS_ISSUED || r->xfer[i].state != kWaitFin) return true;
  }
  return false;
}

// Nothing for a helper to do until the next call: no collective active,
// nothing queued to send (a failed one's output may outlive it).
bool Runtime::idle() const {
  return active_count.load(std::memory_order_relaxed) == 0 && waiting_output.load(std::memory_order_relaxed) == 0;
}

int set_error(int err, const std::string &message) {
  g_error_set.store(true, std::memory_order_relaxed);
  t_error = message;
  if (rt().verbose) fprintf(stderr, "cadrt: %s\n", message.c_str());
  return err;
}

CADRT_HOT void clear_error() {
  if (g_error_set.load(std::memory_order_relaxed)) t_error.clear();
}

const char *error_message() { return t_error.c_str(); }

// in_library counts the calls into the library.  Calls come from one
// thread at a time (cadrt.h), and the signal handler, which runs on that
// thread, leaves the count as it found it; the helpers only read it.  So
// a plain load and store, under every engine, spares a locked instruction
// -- which would also wait for the stores before it, such as a message
// just written into a peer's ring.
int Runtime::bump_in_library(int by) {
  const int was = in_library.load(std::memory_order_relaxed);
  in_library.store(was + by, std::memory_order_relaxed);
  return was;
}

// Signal engine: whether the handler, on thread tid, may go on: not on a
// thread the signals no longer go to.  It counts itself first, against a
// caller moving the signals to its own thread (retarget): Dekker, each side
// publishes, fences, and reads the other's word.
// A count, not a flag: a stale signal's handler on one thread must not
// clear the mark of a handler running on another.
bool Runtime::handler_enter(int32_t tid) {
  handler_running_.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // before reading in_library and signal_tid_
  if (signal_tid_.load(std::memory_order_relaxed) == tid) return true;
  handler_running_.fetch_sub(1, std::memory_order_release);
  return false;
}

// Signal engine: an outermost call from a thread other than the one the
// signals go to (the thread that initialised cadrt, or the last caller).
// It has counted itself in the library; a handler already running on the
// old thread either saw that (and deferred its work to this call) or is
// waited for here.  Then the signals come to this thread.  Its handler
// leaves in_library as it found it, which may have been before this
// thread's count, so the count is set again.
void Runtime::retarget(int32_t tid) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  while (handler_running_.load(std::memory_order_acquire)) sched_yield();
  main_thread_.store(pthread_self(), std::memory_order_relaxed);
  seg.rank(me).tid.store(tid, std::memory_order_relaxed);
  signal_tid_.store(tid, std::memory_order_seq_cst);
  in_library.store(1, std::memory_order_relaxed);
}

CADRT_HOT void Runtime::enter() {
  // The kernel engine needs no flags: nobody signals or wakes a rank for
  // it.  Under the poll engine, polling only tells peers starting a
  // collective that this rank is in the library (rendezvous).
  settled_.store(false, std::memory_order_relaxed);
  if (bump_in_library(1) == 0) {
    owned_ = false;
    if (engine == Engine::Signal && initialised_ && this_tid() != signal_tid_.load(std::memory_order_relaxed))
      retarget(this_tid());
    if (engine != Engine::Kernel && initialised_) {
      if (engine != Engine::Poll) set_armed(seg.rank(me), false);
      seg.rank(me).polling.store(kRankPolling, std::memory_order_relaxed);
      if (engine == Engine::Thread) own();
    }
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);  // before any library work
}

// (Calls come one at a time; the count is atomic for the thread engine's
// progress thread, which reads it.)
CADRT_HOT void Runtime::commit(int by) {
  if (!initialised_ || engine == Engine::Kernel) return;
  const int now = std::max(0, committed_.load(std::memory_order_relaxed) + by);
  committed_.store(now, std::memory_order_relaxed);
  seg.rank(me).committed.store(now > 0, std::memory_order_relaxed);
}

CADRT_HOT void Runtime::leave() {
  if (engine == Engine::Kernel) {
    bump_in_library(-1);
    return;
  }
  // (Only the signal handler sets deferred: look before the exchange.)
  if (in_library.load(std::memory_order_relaxed) == 1 && deferred.load(std::memory_order_relaxed) &&
      deferred.exchange(0) && initialised_) {
    auto g = guard();
    progress();
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);  // after all library work
  if (bump_in_library(-1) != 1 || !initialised_) return;
  if (engine == Engine::Poll) {
    seg.rank(me).polling.store(kRankOutside, std::memory_order_relaxed);
  } else if (engine == Engine::Thread) {
    owned_ = false;  // (the pass below takes the lock)
    // Back to the progress thread (idle: producers leave it be, the next
    // call finds what they send).  What came while we polled woke nobody:
    // take it in with one more pass here rather than by waking the thread,
    // which shares our CPU when the rank is bound to a core (a wake-up and
    // two context switches, tens of microseconds in a virtual machine); it
    // is woken only for output that waits for room.
    // (Release: the progress thread's next pass reads what ours wrote, see
    // own().)
    // Idle too (no wake-up) while no message could bring work for this
    // CPU (kickable()).
    RankInfo &mine = seg.rank(me);
    if (idle()) {
      mine.polling.store(kRankIdle, std::memory_order_release);
      return;
    }
    mine.polling.store(kickable() ? kRankOutside : kRankIdle, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (active_count.load(std::memory_order_relaxed) > 0 && incoming()) {
      std::lock_guard<std::mutex> g(lock);
      progress();
      mine.polling.store(!idle() && kickable() ? kRankOutside : kRankIdle, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    if (waiting_output.load(std::memory_order_relaxed) > 0) {
      mine.bell.fetch_add(1, std::memory_order_release);
      futex_wake(&mine.bell);
    }
  } else if (engine == Engine::Signal) {
    // Stop polling; what came while we did (and woke nobody) is taken in
    // the handler now, as is a signal deferred after the check above.
    RankInfo &mine = seg.rank(me);
    auto work = [&] {
      return (deferred.load(std::memory_order_relaxed) && deferred.exchange(0)) ||
             (active_count.load(std::memory_order_relaxed) > 0 && incoming()) ||
             waiting_output.load(std::memory_order_relaxed) > 0;
    };
    arm();  // (polling too)
    if (!work()) return;
    // Take it in with one more pass here, as the handler would, rather
    // than by signalling ourselves (a system call and a signal frame,
    // microseconds in a virtual machine): back in the library, polling.
    in_library.store(1, std::memory_order_relaxed);
    set_armed(mine, false);
    mine.polling.store(kRankPolling, std::memory_order_relaxed);
    mine.kicked.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    progress();
    arm();
    in_library.store(0, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    // What came during that pass (it woke nobody) or a signal it deferred:
    // the handler, as before.
    if (work() && !signal_lost_.load(std::memory_order_relaxed)) pthread_kill(pthread_self(), g_signal);
  }
}

CADRT_HOT Entered::Entered() { rt().enter(); }

CADRT_HOT Entered::~Entered() { rt().leave(); }

// The thread engine's exclusion of its progress thread, in the way of
// biased locks: the main thread, which makes nearly every pass, pays one
// fence when it enters the library, and the progress thread, whose passes
// run while the main thread computes, pays the rest.  Dekker's handshake
// on two flags: the main thread publishes polling = kRankPolling, fences,
// and waits while a pass of the progress thread is under way (pass_busy_);
// the progress thread sets pass_busy_, fences, and makes no pass while the
// main thread polls (thread_main).  One of the two sees the other.  The
// main thread stops polling with a release store, which the progress
// thread reads with acquire: its next pass sees what the main thread's
// passes without the lock wrote.
// From then until the main thread stops polling (it leaves the library,
// or sleeps in a wait), its passes need no lock: guard() is a no-op, and
// two locked instructions a pass fewer -- of about ten that set the thread
// engine's small collectives apart from the poll engine's.
void Runtime::own() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int spins = 0; pass_busy_.load(std::memory_order_acquire);)
    if (++spins > 64) sched_yield();  // (it may share our CPU)
    else cpu_relax();
  owned_ = true;
}

CADRT_HOT std::unique_lock<std::mutex> Runtime::guard() {
  return engine == Engine::Thread && !owned_ ? std::unique_lock<std::mutex>(lock) : std::unique_lock<std::mutex>();
}

// ---------------------------------------------------------------- init

int Runtime::init_job(const Bootstrap &b) {
  if (initialised_) return set_error(-EALREADY, "cadrt_init_job: cadrt is initialised already");
  boot_ = b;
  booted_ = true;
  const int err = init();
  booted_ = false;
  return err;
}

// A child forked while its parent is a rank of a job (fork without exec;
// system() and popen() exec at once) shares the parent's segment, rings,
// lanes and /dev/cad file, and is no rank itself: a message it took in
// would be lost to its parent, and a cadrt_finalize it made (an atexit
// handler of the application's, run by the child's exit()) would tell the
// job that its parent had left.  So in the child, cadrt is no longer
// initialised and every call fails (forked_error) except cadrt_finalize,
// which has nothing to do; nothing shared is touched, by its exit either.
// (MPI leaves fork undefined; Open MPI warns about it.)  The handler runs
// in the child only, right after fork, with one thread.
void Runtime::forked_child() {
  Runtime *r = g_rt.load(std::memory_order_acquire);
  if (!r || !r->initialised_) return;
  r->forked_ = true;
  r->initialised_ = false;
  // The helper thread was not copied: drop its handle without joining it
  // (std::thread has no other way; a joinable one would abort the exit,
  // and ~Runtime would ring the parent's bell to stop it).
  new (&r->helper_) std::thread();
  if (r->kfd_ >= 0) close(r->kfd_);  // (the parent's stays open)
  r->kfd_ = -1;
}

int Runtime::forked_error(const char *fn) const {
  return set_error(-EPERM, std::string(fn) +
                               ": this process was forked from a rank of the job after its cadrt_init; only that "
                               "rank's own process may use cadrt");
}

int Runtime::not_initialised(const char *fn) const {
  if (forked_) return forked_error(fn);
  return set_error(-EINVAL, std::string(fn) + ": cadrt_init has not been called");
}

int Runtime::init() {
  if (initialised_) return 0;
  if (forked_) return forked_error(booted_ ? "cadrt_init_job" : "cadrt_init");
  static const bool atfork = pthread_atfork(nullptr, nullptr, forked_child) == 0;
  (void)atfork;
  const char *v = env("CADRT_VERBOSE");
  verbose = v && strcmp(v, "0") != 0;
  const char *x = env("CADRT_EXPLAIN");
  explain = x && strcmp(x, "0") != 0;
  const char *st = env("CADRT_STATS");
  if (st && strcmp(st, "json") != 0) return set_error(-EINVAL, std::string("CADRT_STATS=") + st + ": not json");
  stats = st != nullptr;
  const std::string path = env("CADRT_LIBRARY") ? env("CADRT_LIBRARY") : default_library();
  cad::Diagnostics diags;
  lib = cad::Library();  // not what an earlier init (failed, or finalized since) loaded
  // Lazily: each algorithm's source is parsed when a call first selects
  // it (cadc/lib/library.h), not all of them in every rank's init.
  if (!cad::load_library(path, &lib, &diags, /*lazy=*/true)) {
    std::string why = diags.empty() ? path + ": cannot load" : diags.list()[0].message;
    return set_error(-EINVAL, "loading the algorithm library: " + why);
  }
  library_path = path;
  if (std::string why = proofs.configure(env("CADRT_PROOF"), env("CADRT_PROOF_CACHE"), env("CADRT_PROOF_MAX_OPS"),
                                         lib.hash);
      !why.empty())
    return set_error(-EINVAL, why);
  if (int err = setup_world()) return err;
  const int err = init_joined();
  if (err) leave_job();
  // The ways around the gate are said, once per job: no gate at all, and
  // verdicts taken from a file rather than proven in this job.
  if (!err && proofs.policy() == ProofPolicy::Off && world->rank == 0)
    fprintf(stderr, "cadrt: warning: CADRT_PROOF=off: algorithms run outside the domains their proofs cover, "
                    "unproven\n");
  if (!err && !proofs.cache_file().empty() && world->rank == 0)
    fprintf(stderr, "cadrt: CADRT_PROOF_CACHE=%s: verdicts of earlier proofs on arrival are taken from it\n",
            proofs.cache_file().c_str());
  // A misspelt setting would otherwise be ignored without a word: said
  // once per job, verbose or not.
  if (!err && world->rank == 0)
    for (const std::string &w : unknown_settings(environ)) fprintf(stderr, "cadrt: warning: %s\n", w.c_str());
  return err;
}

// What finalize and an init failing after the segment was joined both
// undo, so that nothing is left behind: the helper thread (a later
// cadrt_init would assign to a joinable std::thread, which terminates),
// /dev/cad, the world, the mapping; peers see this rank exited.
void Runtime::leave_job() {
  stop_helper();
  stop_.store(false);
  kernel_close();
  world.reset();
  has_net_ = false;
  if (seg.mapped()) {
    seg.rank(me).state.store(kExited, std::memory_order_release);
    seg.unmap();
  }
  set_life_cloexec(false);  // (a program it runs after may join again)
}

void Runtime::set_life_cloexec(bool on) {
  if (life_fd_ < 0) return;
  const int flags = fcntl(life_fd_, F_GETFD);
  if (flags >= 0) fcntl(life_fd_, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC);
}

// What a peer's transfers start from at every join: empty queues, free
// lanes, no splits or offers in use, nothing committed.
void Runtime::reset_transfers() {
  unexpected_.assign(nep, Queue());
  pending_.assign(nep, Queue());
  head_seen_.assign(nep, 0);
  corrupt_.assign(nep, Corrupt{});
  corrupt_lane_.assign(nep, 0);
  lane_in_.assign(nep, kLaneFree);
  lane_out_.assign(nep, kLaneFree);
  split_used_.assign(nep, 0);
  offer_used_.assign(nep, 0);
  committed_.store(0);
  seg.rank(me).committed.store(0);
}

// CADRT_SPLIT and CADRT_OFFER (with lanes only): err, or the first bad
// one's if there is none yet.
int Runtime::copy_settings(int err, bool lanes_here) {
  const std::string want_split = env("CADRT_SPLIT") ? env("CADRT_SPLIT") : "1";
  if (!err && want_split != "0" && want_split != "1")
    err = set_error(-EINVAL, "CADRT_SPLIT=" + want_split + ": not 0 or 1");
  split = lanes_here && want_split == "1";
  const std::string want_offer = env("CADRT_OFFER") ? env("CADRT_OFFER") : "auto";
  if (!err && want_offer != "0" && want_offer != "1" && want_offer != "auto")
    err = set_error(-EINVAL, "CADRT_OFFER=" + want_offer + ": not auto, 0 or 1");
  offers = lanes_here && want_offer != "0";
  offers_always = want_offer == "1";
  return err;
}

// The world communicator, and its ranks' places for its topology.
std::vector<std::vector<int64_t>> Runtime::make_world() {
  world = std::make_unique<cadrt_comm_s>();
  world->ctx = 1;
  world->rank = static_cast<int>(me);
  world->size = static_cast<int>(nep);
  world->world = true;
  for (uint32_t i = 0; i < nep; i++) world->ep.push_back(i);
  world->rank_of_ep.assign(world->ep.begin(), world->ep.end());
  std::vector<std::vector<int64_t>> places;
  for (uint32_t i = 0; i < nep; i++) places.push_back({places_[i][0], places_[i][1], places_[i][2], places_[i][3]});
  return places;
}

// init() after the segment is joined: the CMA probe, the lanes (measured
// by the node's ranks together), the settings, the world and its
// topology, the engine (agreed by the node), the network.
int Runtime::init_joined() {
  if (verbose) {
    const int32_t *p = seg.rank(me).place;
    fprintf(stderr, "cadrt: rank %u: node %d, package %d, NUMA domain %d, L3 %d (hwloc topology: %s)\n", me, p[0],
            p[1], p[2], p[3], g_topology_from);
    if (me == 0) fprintf(stderr, "cadrt: algorithm library %s\n", library_path.c_str());
  }
  if (int err = probe_cma()) return err;
  reset_transfers();
  // A bad setting fails this init only after the barriers below, which
  // every local rank must meet (the rank then takes no lane, as with
  // CADRT_BULK=0): returning before them would leave the others waiting.
  std::string bad, want_bulk;
  uint64_t want_max = UINT64_MAX;
  const bool lanes_here = lane_settings(&bad, &want_bulk, &want_max);
  if (lanes_here)
    if (int err = setup_lanes(want_bulk, want_max)) return err;
  if (seg.has_lanes() && nlocal > 1) empty_lanes();
  int err = bad.empty() ? 0 : set_error(-EINVAL, bad);
  err = copy_settings(err, lanes_here);
  pool_.grow(256);
  vm_scratch_.assign(CAD_VM_SCRATCH_SIZE + 8, 0);
  const std::vector<std::vector<int64_t>> places = make_world();
  if (!err) err = make_topology(world.get(), places);
  bool asked = false;
  if (!err) err = choose_engine(&asked);
  if (nlocal > 1 && (err = agree_engine(err, asked))) return err;
  if (err) return err;
  if (int e = start_engine()) return e;
  has_net_ = nlocal < nep;  // (only a bootstrap with a transport gets here)
  if (has_net_) {
    net_ = boot_.net;
    if (int err = net_start()) return err;
    if (verbose)
      fprintf(stderr, "cadrt: rank %u: %u of the %u ranks are on this node; the others through the network transport\n",
              me, nlocal, nep);
  }
  initialised_ = true;
  return 0;
}

// At the process's exit.  Still a member (no cadrt_finalize): its peers
// are told it left (kLeft), so that one waiting for its messages fails
// instead of waiting for ever -- also without cadrun, which would say so
// when it saw the exit (a process that ends in _exit, or is killed, does
// not get here).
Runtime::~Runtime() {
  if (initialised_ && seg.mapped()) seg.rank(me).state.store(kLeft, std::memory_order_release);
  if (helper_.joinable()) stop_helper();
}

int Runtime::finalize() {
  if (!initialised_) return 0;
  if (active_count.load()) return set_error(-EBUSY, "cadrt_finalize: requests are still active");
  // Messages still waiting for room in a peer's ring go out first (unless
  // the peer is gone).
  while (waiting_output.load() > 0) {
    {
      auto g = guard();
      if (progress()) continue;
    }
    if (!output_deliverable()) break;
    sleep_until_message(10);
  }
  if (has_net_) net_stop();
  leave_job();
  say_counters();
  write_stats();
  stats_insts_.clear();
  cache_.clear();
  cache_epoch_++;
  fast_.clear();
  for (cadrt_request_s *r : spare_) delete r;
  spare_.clear();
  spare_inst_.clear();
  spare_bytes_ = 0;
  initialised_ = false;
  return 0;
}

}  // namespace cadrt
