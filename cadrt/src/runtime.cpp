// runtime.cpp - joining the job, the CMA probe, the library, the engines.
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

#include "settings.h"
#include "spec.h"

namespace cadrt {

namespace {

thread_local std::string t_error;
// Some thread has had an error: until then, clearing one is not needed (a
// thread-local access from a shared library is a call to __tls_get_addr,
// which cadrt_test's fast path would otherwise pay every time).
static std::atomic<bool> g_error_set{false};
volatile uint64_t g_probe_word = 0x43414452544f4b21ull;  // what peers read in the CMA probe
// The signal engine's signal: CADRT_SIGNAL, SIGRTMIN + 5 unless set
// (choose_engine; each rank publishes its own in RankInfo::signo, which
// is what its peers kick it with).
int g_signal = 0;
std::atomic<bool> g_signal_sent{false};

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

// The standard library beside libcadrt.so (build/lib/cad-std.cadlib, or
// PREFIX/lib/cad-std.cadlib installed), the path made lexically normal
// (a library found through an rpath such as lib/pkgconfig/../../lib).
std::string default_library() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&default_library), &info) && info.dli_fname) {
    std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    path = (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/cad-std.cadlib";
    return std::filesystem::path(path).lexically_normal().string();
  }
  return "cad-std.cadlib";
}

// Where my_place's topology came from (said under CADRT_VERBOSE).
const char *g_topology_from = "";

// The topology cadrun loaded once for the job (CADRT_HWLOC_XML_FD: hwloc
// XML in a file it inherited), else from the system.
bool load_topology(hwloc_topology_t *t) {
  g_topology_from = "none: hwloc failed";
  long fd;
  struct stat st;
  if (env_long("CADRT_HWLOC_XML_FD", &fd) && fd >= 0 && fd <= INT32_MAX &&
      fstat(static_cast<int>(fd), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      st.st_size <= (64 << 20)) {
    std::string xml(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < xml.size()) {
      const ssize_t r = pread(static_cast<int>(fd), &xml[got], xml.size() - got, static_cast<off_t>(got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    // IS_THISSYSTEM: the XML describes this machine, so the binding
    // queries below ask the kernel.
    if (got == xml.size() && hwloc_topology_init(t) == 0) {
      if (hwloc_topology_set_xmlbuffer(*t, xml.data(), static_cast<int>(xml.size())) == 0 &&
          hwloc_topology_set_flags(*t, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) == 0 &&
          hwloc_topology_load(*t) == 0) {
        g_topology_from = "cadrun's (CADRT_HWLOC_XML_FD)";
        return true;
      }
      hwloc_topology_destroy(*t);
    }
  }
  if (hwloc_topology_init(t) != 0) return false;
  if (hwloc_topology_load(*t) == 0) {
    g_topology_from = "this system's";
    return true;
  }
  hwloc_topology_destroy(*t);
  return false;
}

// This process's place in the machine: package, NUMA domain and L3 of the
// CPU it is bound to (or runs on, if it is not bound to one place).
void my_place(int32_t place[4]) {
  place[0] = 0;
  place[1] = place[2] = place[3] = -1;
  hwloc_topology_t t;
  if (!load_topology(&t)) return;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(t, set, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(set) ||
      !hwloc_get_obj_covering_cpuset(t, set) ||
      hwloc_get_obj_covering_cpuset(t, set)->type == HWLOC_OBJ_MACHINE)
    hwloc_get_last_cpu_location(t, set, HWLOC_CPUBIND_THREAD);
  hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(t, set);
  if (obj) {
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, obj);
    hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L3CACHE, obj);
    if (obj->type == HWLOC_OBJ_PACKAGE) pkg = obj;
    if (obj->type == HWLOC_OBJ_L3CACHE) l3 = obj;
    place[1] = pkg ? static_cast<int32_t>(pkg->logical_index) : 0;
    place[2] = obj->nodeset && !hwloc_bitmap_iszero(obj->nodeset) ? hwloc_bitmap_first(obj->nodeset) : 0;
    place[3] = l3 ? static_cast<int32_t>(l3->logical_index) : place[1];
  }
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(t);
}

// This thread's id, read once (the signal handler uses it too).
thread_local int32_t t_tid = 0;
int32_t this_tid() {
  if (!t_tid) t_tid = static_cast<int32_t>(gettid());
  return t_tid;
}

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

}  // namespace

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

// ---------------------------------------------------------------- world

// Which node this process is on: the kernel instance (boot id) and host
// name; with a network transport, CADRT_RANKS_PER_NODE=k makes ranks
// 0..k-1 one node, k..2k-1 the next, ... (one machine as several nodes).
static uint64_t node_key(int rank, bool has_net) {
  long k;
  if (has_net && env_long("CADRT_RANKS_PER_NODE", &k) && k > 0) return 0x8000000000000000ull | (rank / k);
  std::string id;
  if (FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char buf[64] = {};
    if (fgets(buf, sizeof buf, f)) id = buf;
    fclose(f);
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  id += host;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  return h & 0x7fffffffffffffffull;
}

// Under a bootstrap: the first rank of each node creates that node's
// segment; the others open it through /proc/<pid>/fd/<fd> (as the same
// user, this needs no more rights than reading the file).  A segment has
// the slots of every rank of the job; only its node's are used.
int Runtime::join_bootstrap() {
  const uint32_t n = static_cast<uint32_t>(boot_.size);
  const uint32_t rank = static_cast<uint32_t>(boot_.rank);
  struct Who {
    uint64_t node;
    int32_t pid, pad;
  };
  std::vector<Who> who(n);
  const Who mine_who = {node_key(boot_.rank, boot_.has_net), getpid(), 0};
  if (boot_.allgather(boot_.ctx, &mine_who, who.data(), sizeof mine_who))
    return set_error(-EIO, "joining the job: the allgather failed");
  uint32_t leader = rank, nodes = 0;
  nlocal = 0;
  remote_.assign(n, 0);
  for (uint32_t q = 0; q < n; q++) {
    bool first = true;
    for (uint32_t p = 0; p < q && first; p++) first = who[p].node != who[q].node;
    if (first && who[q].node == who[rank].node) node_index_ = nodes;
    nodes += first;
    if (who[q].node == who[rank].node) {
      leader = std::min(leader, q);
      nlocal++;
    } else {
      remote_[q] = 1;
    }
  }
  if (nodes > 1 && !boot_.has_net)
    return set_error(-ENOTSUP, "joining the job: its ranks are on " + std::to_string(nodes) +
                                   " nodes; cadrt_init_job runs a job on one machine (across nodes: "
                                   "cadrt_init_job_net, or cadrt_init_mpi under MPI)");
  struct Where {
    int32_t fd, ok, err, pad;
  };
  std::vector<Where> all(n);
  std::string error;
  int fd = -1;
  Where mine = {-1, 1, 0, 0};
  if (rank == leader) {
    fd = memfd_create("cadrt-job", MFD_CLOEXEC);
    if (fd < 0 || !seg.map(fd, true, n, &error)) {
      mine.ok = 0;
      mine.err = errno ? errno : ENOMEM;
    }
    mine.fd = fd;
  }
  if (boot_.allgather(boot_.ctx, &mine, all.data(), sizeof mine))
    return set_error(-EIO, "joining the job: the allgather failed");
  bool all_ok = true;
  for (uint32_t q = 0; q < n; q++) all_ok &= all[q].ok != 0;
  if (!all_ok) {
    if (fd >= 0) close(fd);
    seg.unmap();
    for (uint32_t q = 0; q < n; q++)
      if (!all[q].ok)
        return set_error(-ENOMEM, "joining the job: rank " + std::to_string(q) +
                                      " could not create its node's shared segment: " +
                                      (q == rank && !error.empty() ? error : std::string(strerror(all[q].err))));
  }
  if (rank != leader) {
    const std::string path = "/proc/" + std::to_string(who[leader].pid) + "/fd/" + std::to_string(all[leader].fd);
    const int own = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (own < 0 || !seg.map(own, false, n, &error)) {
      mine.ok = 0;
      mine.err = errno;
      if (error.empty()) error = path + ": " + strerror(errno);
    }
    if (own >= 0) close(own);
  }
  // Everyone mapped (or says why not) before the leaders let go of the file.
  if (boot_.allgather(boot_.ctx, &mine, all.data(), sizeof mine))
    return set_error(-EIO, "joining the job: the allgather failed");
  if (fd >= 0) close(fd);
  for (uint32_t r = 0; r < n; r++)
    if (!all[r].ok) {
      seg.unmap();
      return set_error(-EACCES, "joining the job: rank " + std::to_string(r) +
                                    " could not open its node's shared segment" +
                                    (r == rank && !error.empty() ? ": " + error : std::string()) +
                                    " (are the ranks of a node in one kernel and as one user?)");
    }
  seg.set_members(nlocal);
  return 0;
}

int Runtime::setup_world() {
  long fd = -1, rank = 0, size = 1;
  const bool job = env_long("CADRT_JOB_FD", &fd);
  if (job && (!env_long("CADRT_RANK", &rank) || !env_long("CADRT_SIZE", &size) || size < 1 || rank < 0 ||
              rank >= size))
    return set_error(-EINVAL, "CADRT_JOB_FD is set but CADRT_RANK and CADRT_SIZE are not a rank and a size");
  std::string error;
  if (booted_) {
    rank = boot_.rank;
    size = boot_.size;
    if (int err = join_bootstrap()) return err;
  } else if (job) {
    if (!seg.map(static_cast<int>(fd), false, static_cast<uint32_t>(size), &error))
      return set_error(-EINVAL, "joining the job: " + error);
  } else {
    // A world of one: the same code paths over a private segment.
    const int own = memfd_create("cadrt-single", MFD_CLOEXEC);
    if (own < 0 || !seg.map(own, true, 1, &error)) {
      if (own >= 0) close(own);
      return set_error(-ENOMEM, "creating the shared segment: " + (error.empty() ? strerror(errno) : error));
    }
    close(own);
  }
  me = static_cast<uint32_t>(rank);
  nep = static_cast<uint32_t>(size);
  if (!booted_) {
    nlocal = nep;
    remote_.clear();
    node_index_ = 0;
  }
  RankInfo &mine = seg.rank(me);
  mine.pid.store(getpid(), std::memory_order_relaxed);
  mine.tid.store(static_cast<int32_t>(gettid()), std::memory_order_relaxed);
  mine.probe_addr = reinterpret_cast<uint64_t>(&g_probe_word);
  my_place(mine.place);
  mine.place[0] = static_cast<int32_t>(node_index_);
  // A member from here: cadrun's pipe closes if this process runs another
  // program (exec) before cadrt_finalize, and cadrun tells the job.
  life_fd_ = -1;
  long life = -1;
  struct stat st;
  if (job && env_long("CADRT_LIFE_FD", &life) && life >= 0 && life <= INT32_MAX &&
      fstat(static_cast<int>(life), &st) == 0 && S_ISFIFO(st.st_mode)) {
    life_fd_ = static_cast<int>(life);
    set_life_cloexec(true);
  }
  mine.state.store(kAlive, std::memory_order_release);
  if (int err = meet()) return err;
  places_.assign(nep, {0, -1, -1, -1});
  if (nlocal < nep) {
    // Ranks of other nodes are not in the segment: gather.
    std::array<int32_t, 4> p = {mine.place[0], mine.place[1], mine.place[2], mine.place[3]};
    if (boot_.allgather(boot_.ctx, p.data(), places_.data(), sizeof p))
      return set_error(-EIO, "joining the job: the allgather failed");
  } else {
    for (uint32_t i = 0; i < nep; i++)
      for (int k = 0; k < 4; k++) places_[i][static_cast<size_t>(k)] = seg.rank(i).place[k];
  }
  return 0;
}

// The node's ranks meet (Segment::barrier()); -EPIPE if one of them is
// gone and never will.
int Runtime::meet() {
  const int64_t r = seg.barrier();
  if (r < 0) return 0;
  return set_error(-EPIPE, "joining the job: rank " + std::to_string(r) +
                               " left it before cadrt_init ended (it was killed, exited, or never called cadrt_init)");
}

// Whether process_vm_readv works between the job's processes: each reads
// a word of the next rank; one failure turns it off for all.
int Runtime::probe_cma() {
  cma = false;
  if (nlocal == 1) return 0;
  const char *want = env("CADRT_CMA");
  const bool off = want && strcmp(want, "0") == 0;
  // Every rank meets both barriers, whatever its own CADRT_CMA says: a
  // rank with CMA off that skipped the first would meet the others' first
  // at its second and leave them waiting in their second for ever.  One
  // rank's "0" turns the single copy off for the node.
  if (off)
    seg.header().cma_denied.store(1);
  else  // Yama's ptrace_scope 1 lets only ancestors attach: allow the job.
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  if (int err = meet()) return err;
  if (!off) {
    uint32_t peer = (me + 1) % nep;
    while (remote(peer)) peer = (peer + 1) % nep;  // the next rank of this node
    uint64_t word = 0;
    struct iovec l = {&word, sizeof word};
    struct iovec r = {reinterpret_cast<void *>(seg.rank(peer).probe_addr), sizeof word};
    const pid_t pid = seg.rank(peer).pid.load();
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(sizeof word) || word != g_probe_word) {
      seg.header().cma_errno.store(errno ? errno : EIO);
      seg.header().cma_denied.store(1);
    }
  }
  if (int err = meet()) return err;
  cma = !seg.header().cma_denied.load();
  if (!cma && verbose && me == 0 && !off) {
    if (const int e = seg.header().cma_errno.load())
      fprintf(stderr, "cadrt: notice: process_vm_readv is not permitted here (%s): large messages are copied through shared memory\n",
              strerror(e));
    else  // (no probe failed: a rank's CADRT_CMA=0)
      fprintf(stderr, "cadrt: notice: CADRT_CMA=0 on another rank of this node: large messages are copied through shared memory\n");
  }
  return 0;
}

// A time measured for CADRT_VERBOSE: -1 for one not measured (INT64_MAX).
static long long ns(int64_t t) { return t == INT64_MAX ? -1ll : static_cast<long long>(t); }

// Up to which transfer the lanes beat the single copy here
// (CADRT_BULK=auto, the default): UINT64_MAX if they win at 1 MiB, else
// the smallest size measured from which on they lose (0: even at 16 KiB).
// Each rank and its partner (ranks 2k and 2k+1 of the node) exchange 16,
// 64, 256 and 1024 KiB through their lanes the way a granted
// transfer does, a chunk published as soon as it is in, and each compares
// its times with a process_vm_readv of as much of its own memory (the
// kernel's pinning, mapping and page-by-page copy are the same as from a
// peer); the best of 5 exchanges and of 3 reads, some hundreds of us at
// start.  Several sizes, because the two costs grow differently: a
// process_vm_readv pays microseconds for the call and its pinning before
// its first byte, a lane only its two memcpys, so on a VM whose vCPUs sit
// apart the lanes may win for the blocks of a small alltoall and lose from
// 64 KiB.  Up to 1 MiB, because two copies through memory past the caches
// lose to one, so a win at a middle size says nothing of the largest.  A
// step, not an interpolated crossover: a granted transfer pays a round
// trip more than the measured exchange, and between two sizes the
// measurement says nothing.  Through the lanes, not two memcpys of
// private memory, which do not see what a lane pays on a machine whose two
// CPUs sit on different caches of the host (there a memcpy into lines the
// other CPU has just read costs several times a private one).  Under
// qemu's emulation (the kernel tests) the balance can go either way.  A
// rank whose partner does not take part (another CADRT_BULK, or no
// partner on this node) measures two private memcpys as before.  Called
// between two barriers of the node's ranks (init_joined).
uint64_t Runtime::lanes_upto(uint32_t partner) {
  constexpr int kSizes = 4;
  constexpr size_t kProbe[kSizes] = {16 << 10, 64 << 10, 256 << 10, 1 << 20};
  std::vector<unsigned char> a(kProbe[kSizes - 1], 1), b(kProbe[kSizes - 1], 2);
  auto best = [](int n, auto fn) {
    int64_t m = INT64_MAX;
    for (int i = 0; i < n; i++) {
      const int64_t t = now_ns();
      if (!fn()) return INT64_MAX;
      m = std::min(m, now_ns() - t);
    }
    return m;
  };
  bool ok = true;
  const int64_t give_up = now_ns() + 60000000;
  // The single copy and the lanes' way for a transfer of len bytes.
  auto measure = [&](size_t len, int64_t *read, int64_t *lane) {
    *read = best(3, [&] {
      struct iovec l = {b.data(), len}, r = {a.data(), len};
      ok &= process_vm_readv(getpid(), &l, 1, &r, 1, 0) == static_cast<ssize_t>(len);
      return true;
    });
    if (partner >= nep) {
      *lane = 2 * best(3, [&] {
        memcpy(b.data(), a.data(), len);
        __asm__ volatile("" ::"r"(b.data()) : "memory");
        return true;
      });
      return;
    }
    // In and out at once, as both sides of an exchange; a partner that
    // does not come within 60 ms in all (not measuring, or not running)
    // ends it: lanes need both ranks on a CPU.
    Lane &out = seg.lane(me, partner), &in = seg.lane(partner, me);
    const uint32_t n = seg.nranks();
    const uint32_t chunks = static_cast<uint32_t>((len + kLaneChunk - 1) / kLaneChunk);
    auto part = [&](uint32_t i) { return std::min<size_t>(kLaneChunk, len - static_cast<size_t>(i) * kLaneChunk); };
    *lane = best(5, [&] {
      const uint64_t t0 = out.tail.load(std::memory_order_relaxed), h0 = in.head.load(std::memory_order_relaxed);
      uint32_t put = 0, got = 0;
      while (put < chunks || got < chunks || out.head.load(std::memory_order_acquire) != t0 + chunks) {
        if (now_ns() > give_up) return false;
        if (put < chunks) {
          memcpy(out.chunk(put, n), a.data() + static_cast<size_t>(put) * kLaneChunk, part(put));
          out.tail.store(t0 + ++put, std::memory_order_release);
        }
        if (got < chunks && in.tail.load(std::memory_order_acquire) > h0 + got) {
          memcpy(b.data() + static_cast<size_t>(got) * kLaneChunk, in.chunk(got, n), part(got));
          in.head.store(h0 + ++got, std::memory_order_release);
        }
      }
      return true;
    });
  };
  // Every size, whatever the smaller ones said: each exchange needs both
  // partners.
  int64_t read[kSizes], lane[kSizes];
  for (int i = 0; i < kSizes; i++) measure(kProbe[i], &read[i], &lane[i]);
  static_assert(kSizes == sizeof read_probe_ns / sizeof read_probe_ns[0], "copy_ns() reads these");
  for (int i = 0; i < kSizes; i++) read_probe_ns[i] = ok && read[i] != INT64_MAX ? read[i] : 0;
  // From the top: the smallest size from which on they lose at every size
  // measured.  (A loss below a win is taken for noise: lanes that win at
  // 1 MiB serve every size.)
  uint64_t upto = UINT64_MAX;
  for (int i = kSizes - 1; i >= 0; i--) {
    if (ok && lane[i] != INT64_MAX && lane[i] < read[i]) break;
    upto = i ? kProbe[i] : 0;
  }
  const char *forced = "";
#ifdef CADRT_FAULT_INJECTION
  // In the test build only (CADRT_FAULT_LANES=faster or slower; any other
  // value leaves the measurement's verdict): the verdict given, whatever
  // was measured, so that the tests run both the branch where the lanes
  // serve (and the push classes measured next decide what is pushed) and
  // the one where they do not on every machine -- each measures one or
  // the other, and this sandbox has measured both within a day.
  if (const char *f = env("CADRT_FAULT_LANES"); f && (!strcmp(f, "faster") || !strcmp(f, "slower"))) {
    upto = f[0] == 'f' ? UINT64_MAX : 0;
    forced = " (CADRT_FAULT_LANES)";
  }
#endif
  if (verbose) {
    char with[32] = "", lim[48];
    if (partner < nep) snprintf(with, sizeof with, " %u", partner);
    if (upto == 0) snprintf(lim, sizeof lim, "slower");
    else if (upto == UINT64_MAX) snprintf(lim, sizeof lim, "faster");
    else snprintf(lim, sizeof lim, "faster below %llu bytes", static_cast<unsigned long long>(upto));
    fprintf(stderr,
            "cadrt: rank %u: lanes measured %s: 16, 64, 256 and 1024 KiB %s%s %lld, %lld, %lld, %lld ns; by "
            "process_vm_readv %lld, %lld, %lld, %lld ns%s\n",
            me, lim, partner < nep ? "through the lanes with rank" : "by two memcpys", with, ns(lane[0]), ns(lane[1]),
            ns(lane[2]), ns(lane[3]), ns(read[0]), ns(read[1]), ns(read[2]), ns(read[3]), forced);
  }
  return upto;
}

// Where a push (CADRT_PUSH=auto) beats the single copy it replaces, as a
// verdict per size class: bit i of the result set if pushes win from
// kPushProbe[i] up to the next (the last class has no end; sizes below
// the first are pushed as lanes_upto() decided), 0x100 set once measured;
// 0 on the pair's sender.  Pushed only for a caller that waits at once, a
// message would otherwise be read by its receiver and, from two split
// chunks on (256 KiB), split with its waiting sender (progress.cpp,
// split_in).  So each pair of ranks (2k and 2k+1 of the node, rank 2k
// sending) times both at 64 KiB, 256 KiB, 1 MiB and 2 MiB, as rt_bench
// and a caller see them, the mean of the two ranks' completions: a push's
// sender is done once its last chunk is in the lane, its receiver once it
// copied the last one out; a read's (and a split's) both when the
// receiver has the last byte (the sender waits for its FIN).  The read
// is the receiver's process_vm_readv of the sender's buffer, from 256 KiB
// with the sender writing every other 128 KiB chunk by process_vm_writev
// meanwhile, as a split does.  The best of 5 of each: about 1 ms of
// copies, and ~10 ms here in all with the pages of the buffers and the
// lane (a page costs 6-12 us to map in this sandbox).
// Why classes, not one limit: the split read can beat pushes at a middle
// size while pushes win below and above it; and where a CPU reads another
// process's pages about as fast as it copies its own (large messages past
// the caches, where a push moves every byte twice through memory) the
// single copy can win from some size on.  Called between two barriers of
// the node's ranks, after lanes_upto() (init_joined); a partner that
// does not keep step within 50 ms ends it, the classes not measured taken
// for losses.
uint64_t Runtime::push_upto(uint32_t partner) {
  constexpr int kTrials = 5;
  constexpr uint64_t kAbort = UINT64_MAX, kDone = UINT64_MAX - 1;  // (steps)
  const bool sender = me < partner;
  RankInfo &mine = seg.rank(me), &theirs = seg.rank(partner);
  // Its pages at once (MAP_POPULATE): a fault per page costs more than
  // the mapping populated.  Then written once, so the timed copies find
  // the pages as a collective's buffers are.
  const size_t size = kPushProbe[kPushClasses - 1];
  void *map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (map == MAP_FAILED) {
    mine.probe_step.store(kAbort, std::memory_order_release);
    return sender ? 0 : 0x100;
  }
  struct Unmap {
    void *p;
    size_t n;
    ~Unmap() { munmap(p, n); }
  } unmap{map, size};
  unsigned char *const buf = static_cast<unsigned char *>(map);
  memset(buf, sender ? 1 : 2, size);
  Lane &lane = sender ? seg.lane(me, partner) : seg.lane(partner, me);
  const uint32_t n = seg.nranks(), room = seg.lane_chunks();
  const int64_t give_up = now_ns() + 50000000;
  bool ok = true;
  // Spins until f() (a partner descheduled -- more ranks than CPUs --
  // gets the CPU back by a yield).
  auto until = [&](auto f) {
    for (int spins = 0; ok; spins++) {
      if (theirs.probe_step.load(std::memory_order_acquire) == kAbort || now_ns() > give_up) ok = false;
      else if (f()) break;
      else if (spins > 2000) sched_yield();
      else cpu_relax();
    }
    return ok;
  };
  auto step_of = [&] { return theirs.probe_step.load(std::memory_order_acquire); };
  mine.probe_buf.store(reinterpret_cast<uint64_t>(buf), std::memory_order_relaxed);
  // A lane left half-full (lanes_upto() gave up) is not measured through.
  if (sender && lane.head.load(std::memory_order_acquire) != lane.tail.load(std::memory_order_relaxed)) {
    mine.probe_step.store(kAbort, std::memory_order_release);
    return 0;
  }
  // The lane's pages mapped at once too, on either side (Linux 5.14 on;
  // where it fails, by the faults of the first trials).
  madvise(lane.chunk(0, n), static_cast<size_t>(room) * kLaneChunk, sender ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
  mine.probe_step.store(1, std::memory_order_release);
  const int32_t pid = theirs.pid.load(std::memory_order_relaxed);
  int64_t push[kPushClasses], read[kPushClasses];
  uint64_t k = 1;  // the step: both at 1 (buffers published), then one a trial
  for (int i = 0; i < kPushClasses; i++) {
    const size_t len = kPushProbe[i];
    const uint64_t chunks = (len + kLaneChunk - 1) / kLaneChunk, splits = split_chunks(len);
    const bool split_read = splittable(len);
    auto part = [&](uint64_t c) { return std::min<uint64_t>(kLaneChunk, len - c * kLaneChunk); };
    push[i] = read[i] = INT64_MAX;
    for (int how = 0; how < 2; how++)  // 0: pushed, 1: read (split from two chunks)
      for (int t = 0; t < kTrials; t++) {
        k++;
        if (sender) {  // the receiver's go, then its part, when it finished, done
          if (!until([&] { return step_of() >= k; })) break;
          if (how == 0) {
            const uint64_t t0 = lane.tail.load(std::memory_order_relaxed);
            for (uint64_t c = 0; c < chunks && ok; c++) {
              if (!until([&] { return t0 + c - lane.head.load(std::memory_order_acquire) < room; })) break;
              memcpy(lane.chunk(c, n), buf + c * kLaneChunk, part(c));
              lane.tail.store(t0 + c + 1, std::memory_order_release);
            }
          } else if (split_read) {
            const uint64_t dst = theirs.probe_buf.load(std::memory_order_relaxed);
            for (uint64_t c = 1; c < splits && ok; c += 2) {
              struct iovec l = {buf + c * kSplitChunk, kSplitChunk},
                           r = {reinterpret_cast<void *>(dst + c * kSplitChunk), kSplitChunk};
              ok = process_vm_writev(pid, &l, 1, &r, 1, 0) == static_cast<ssize_t>(kSplitChunk);
            }
          }
          if (!ok) break;
          mine.probe_time.store(static_cast<uint64_t>(now_ns()), std::memory_order_relaxed);
          mine.probe_step.store(k, std::memory_order_release);
          continue;
        }
        // The receiver: the sender done with the last trial, go, its part,
        // the sender's part.
        if (!until([&] { return step_of() >= k - 1; })) break;
        const int64_t t0 = now_ns();
        mine.probe_step.store(k, std::memory_order_release);
        if (how == 0) {
          const uint64_t h0 = lane.head.load(std::memory_order_relaxed);
          for (uint64_t c = 0; c < chunks && ok; c++) {
            if (!until([&] { return lane.tail.load(std::memory_order_acquire) > h0 + c; })) break;
            memcpy(buf + c * kLaneChunk, lane.chunk(c, n), part(c));
            lane.head.store(h0 + c + 1, std::memory_order_release);
          }
        } else {
          const uint64_t src = theirs.probe_buf.load(std::memory_order_relaxed);
          const uint64_t step = split_read ? 2 * kSplitChunk : len, each = split_read ? kSplitChunk : len;
          for (uint64_t off = 0; off < len && ok; off += step) {
            struct iovec l = {buf + off, each}, r = {reinterpret_cast<void *>(src + off), each};
            ok = process_vm_readv(pid, &l, 1, &r, 1, 0) == static_cast<ssize_t>(each);
          }
        }
        const int64_t done = now_ns();
        if (!ok || !until([&] { return step_of() >= k; })) break;
        const int64_t sent = static_cast<int64_t>(theirs.probe_time.load(std::memory_order_relaxed));
        if (how == 0) push[i] = std::min(push[i], (std::max(sent, t0) - t0 + done - t0) / 2);
        else read[i] = std::min(read[i], std::max(sent, done) - t0);
      }
  }
  // Either side that fails tells the other at once; the sender leaves
  // when the receiver is done: its buffer is read no more.
  if (!ok) mine.probe_step.store(kAbort, std::memory_order_release);
  if (sender) {
    until([&] { return step_of() == kDone; });
    return 0;
  }
  if (ok) mine.probe_step.store(kDone, std::memory_order_release);
  // A push wins unless the read is more than 10 % faster: these reads
  // leave out what a split costs beside the copies (its RTS, a claim per
  // chunk, the FIN), more than a push's protocol costs it.
  uint64_t mask = 0x100;
  for (int i = 0; i < kPushClasses; i++)
    if (push[i] != INT64_MAX && read[i] != INT64_MAX && push[i] * 10 < read[i] * 11) mask |= 1u << i;
  if (verbose) {
    fprintf(stderr,
            "cadrt: rank %u: pushes from rank %u measured: 64 KiB, 256 KiB, 1 and 2 MiB pushed %lld, %lld, %lld, "
            "%lld ns; read (split from 256 KiB) %lld, %lld, %lld, %lld ns\n",
            me, partner, ns(push[0]), ns(push[1]), ns(push[2]), ns(push[3]), ns(read[0]), ns(read[1]), ns(read[2]),
            ns(read[3]));
  }
  return mask;
}

// ---------------------------------------------------------------- engines

void Runtime::thread_main() {
  t_progress_thread = true;
  long cpu;
  if (env_long("CADRT_THREAD_CPU", &cpu) && cpu >= 0 && cpu < CPU_SETSIZE) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<int>(cpu), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  const char *spin = env("CADRT_THREAD_SPIN");
  const bool spinning = spin && strcmp(spin, "1") == 0;
  RankInfo &mine = seg.rank(me);
  while (!stop_.load(std::memory_order_relaxed)) {
    // While the main thread is in the library it progresses itself (and
    // producers do not wake us): stay out of its way.
    if (mine.polling.load(std::memory_order_relaxed) == kRankPolling) {
      // Not counted as a sleeper: producers leave us be; the main thread
      // takes in what came when it leaves the library, and rings us for
      // output that waits for room.
      futex_wait(&mine.bell, mine.bell.load(std::memory_order_acquire), 1);
      continue;
    }
    bool moved = false;
    {
      // The lock against the main thread's passes outside the library
      // (leave()) and asleep in a wait; the handshake (own()) against
      // those it makes polling.
      std::lock_guard<std::mutex> g(lock);
      pass_busy_.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      const bool polling = mine.polling.load(std::memory_order_acquire) == kRankPolling;
      if (!polling) moved = progress();
      pass_busy_.store(0, std::memory_order_release);
      if (polling) continue;
    }
    if (moved) continue;
    if (spinning) sched_yield();
    else sleep_until_message(100, true);
  }
}

// The signal engine's helper: sleeps in the kernel until a message comes
// for this process, then interrupts the main thread, which progresses in
// the handler (or on leaving the library, if it is inside).  It touches no
// runtime state.
void Runtime::signal_helper_main() {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, g_signal);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  RankInfo &mine = seg.rank(me);
  auto work = [&] {
    return (active_count.load(std::memory_order_relaxed) > 0 && incoming()) ||
           waiting_output.load(std::memory_order_relaxed) > 0;
  };
  int64_t looked = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    // Whether the handler is still ours, every 50 ms at most (a system
    // call on this thread, which only sleeps otherwise).
    if (const int64_t now = now_ns(); now - looked >= 50'000'000) {
      looked = now;
      check_handler();
    }
    const bool lost = signal_lost_.load(std::memory_order_relaxed);
    mine.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t v = mine.bell.load(std::memory_order_acquire);
    // Sleep unless a message waits and nobody is on it yet; output that
    // waits for room wakes us when the consumer frees slots.
    const bool urgent = active_count.load(std::memory_order_relaxed) > 0 && incoming() &&
                        !in_library.load(std::memory_order_relaxed) && !g_signal_sent.load(std::memory_order_relaxed);
    if (!urgent || lost) futex_wait(&mine.bell, v, lost ? 50 : 100);
    mine.sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (stop_.load(std::memory_order_relaxed) || lost) continue;
    if (work() && !in_library.load(std::memory_order_relaxed) && !g_signal_sent.exchange(true)) {
      // (Looked at once more: this one signal would go to the
      // application's handler.)
      check_handler();
      if (signal_lost_.load(std::memory_order_relaxed)) continue;
      n_helper_signals.fetch_add(1, std::memory_order_relaxed);
      pthread_kill(main_thread_.load(std::memory_order_relaxed), g_signal);
    }
  }
}

static std::string signal_name(int sig);

// Whether sa (the engine's signal's action) is the one start_engine()
// installed.
static bool is_cadrt_handler(const struct sigaction &sa) {
  return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == on_signal;
}

// Whether the engine's signal still has cadrt's handler.  An application
// (or a library it loads) that puts its own on it after cadrt_init would
// get the engine's signals, and the rank would progress only in its calls:
// so while the handler is not ours, no signal is sent to this rank --
// armed is kept clear, so peers do not kick it, and neither this helper
// nor leave() signals -- and the rank progresses in its calls, as under the
// poll engine (a blocking wait sleeps until a message comes, as before).
// cadrt_finalize leaves that handler be.  If ours comes back (the
// application restores what sigaction told it), so do the signals.
// Signals sent in the 50 ms before the helper looks, or already pending,
// still reach the other handler.
void Runtime::check_handler() {
  struct sigaction now = {};
  // (Not while finalize stops the engine: it set stop_, then ignores the
  // signal.)
  if (sigaction(g_signal, nullptr, &now) != 0 || stop_.load()) return;
  const bool ours = is_cadrt_handler(now);
  if (ours != signal_lost_.load(std::memory_order_relaxed)) return;
  if (verbose)
    fprintf(stderr, "cadrt: rank %u: %s %s: %s\n", me, signal_name(g_signal).c_str(),
            ours ? "has cadrt's handler again" : "has another handler now, not cadrt's",
            ours ? "the signal engine interrupts the rank again"
                 : "no more signals to this rank; it progresses in its calls (CADRT_SIGNAL chooses another signal)");
  if (!ours) {
    signal_lost_.store(true, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    seg.rank(me).armed.store(0, std::memory_order_relaxed);  // (see arm())
    return;
  }
  // (The handler that clears these may not have run for the last
  // signals.)
  g_signal_sent.store(false, std::memory_order_relaxed);
  seg.rank(me).kicked.store(0, std::memory_order_relaxed);
  signal_lost_.store(false, std::memory_order_seq_cst);
}

// CADRT_SIGNAL: a real-time signal, as a number or RTMIN+k / RTMAX-k (SIG
// before either, optional); SIGRTMIN + 5 if unset.  "" or why not.
static std::string signal_setting(int *sig) {
  *sig = SIGRTMIN + 5;
  const char *v = env("CADRT_SIGNAL");
  if (!v) return "";
  std::string s = v;
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  long k = -1;
  int base = 0, sign = 1;
  const char *num = s.c_str();
  if (s.rfind("RTMIN", 0) == 0 || s.rfind("RTMAX", 0) == 0) {
    base = s[3] == 'I' ? SIGRTMIN : SIGRTMAX;
    sign = s[3] == 'I' ? 1 : -1;
    num = s.c_str() + 5;
    if (!*num)
      num = "0";
    else if (*num++ != (sign > 0 ? '+' : '-'))
      num = "x";
  }
  char *end = nullptr;
  if (*num >= '0' && *num <= '9') k = strtol(num, &end, 10);
  const long n = base + sign * k;
  if (k < 0 || *end || n < SIGRTMIN || n > SIGRTMAX)
    return std::string("CADRT_SIGNAL=") + v + ": not a real-time signal (" + std::to_string(SIGRTMIN) + " to " +
           std::to_string(SIGRTMAX) + " here, or RTMIN+k, RTMAX-k)";
  *sig = static_cast<int>(n);
  return "";
}

// Why the signal engine cannot use sig, or "": it has a handler that is
// not cadrt's (the application's, or another library's), which the
// engine would take over (ignored or default is free: cadrt_finalize
// leaves it ignored); or the calling thread blocks it, so the engine
// could never interrupt it (it would progress only in calls, as poll).
static std::string signal_unusable(int sig) {
  struct sigaction old = {};
  if (sigaction(sig, nullptr, &old) != 0) return "";
  const void *h = (old.sa_flags & SA_SIGINFO) ? reinterpret_cast<void *>(old.sa_sigaction)
                                              : reinterpret_cast<void *>(old.sa_handler);
  if (h != reinterpret_cast<void *>(SIG_DFL) && h != reinterpret_cast<void *>(SIG_IGN) &&
      h != reinterpret_cast<void *>(on_signal))
    return "has a handler already, not cadrt's (the application's or another library's)";
  sigset_t mask;
  if (pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0 && sigismember(&mask, sig) == 1)
    return "is blocked in the thread that calls cadrt_init (the engine could never interrupt it)";
  return "";
}

static std::string signal_name(int sig) {
  const int k = sig - SIGRTMIN;
  return "signal " + std::to_string(sig) + " (SIGRTMIN+" + std::to_string(k) + ")";
}

// Which engine this rank runs (CADRT_ENGINE), /dev/cad opened if the
// kernel's: *asked says the kernel engine was asked for by name, not
// chosen by auto.  The helpers start later (start_engine()), once the
// node's ranks agree (init_joined()).
int Runtime::choose_engine(bool *asked) {
  *asked = false;
  const char *want = env("CADRT_ENGINE");
  std::string name = want ? want : "auto";
  if (std::string why = env_bytes("CADRT_KICK_MIN", &kick_min); !why.empty()) return set_error(-EINVAL, why);
  if (std::string why = signal_setting(&g_signal); !why.empty()) return set_error(-EINVAL, why);
#ifdef CADRT_FAULT_INJECTION
  long tells = 0;
  g_fault_tell = env_long("CADRT_FAULT_TELL", &tells) ? static_cast<int>(tells) : 0;
  g_fault_split_us = env_long("CADRT_FAULT_SPLIT_US", &tells) ? tells : 0;
  g_fault_split_in_us = env_long("CADRT_FAULT_SPLIT_IN_US", &tells) ? tells : 0;
  g_fault_split_read = env_long("CADRT_FAULT_SPLIT_READ", &tells) ? tells : 0;
#endif
  // (Published before agree_engine's barrier, which orders it before any
  // peer's first kick.)
  if (seg.mapped()) seg.rank(me).signo.store(g_signal, std::memory_order_relaxed);
  if (name == "auto") {
    // The kernel engine whenever /dev/cad is there: transfers progress in
    // the peers' system calls, with no thread and no signal.  Otherwise a
    // progress thread pays off when every rank of the node can have a
    // core for it; else the signal engine, whose helper only sleeps.
    // (Every rank of a node sees the same /dev/cad and the same cores, so
    // all choose alike; init_joined() makes sure.)
    if (auto_tries_kernel()) {
      engine = Engine::Kernel;
      if (kernel_open() == 0) return 0;
      kernel_close();
      if (verbose) fprintf(stderr, "cadrt: /dev/cad is there but unusable (%s): a user-space engine\n",
                           error_message());
      clear_error();
    }
    engine = user_engine();
    if (engine == Engine::Signal)
      if (const std::string why = signal_unusable(g_signal); !why.empty()) {
        // A progress thread instead (it sleeps until a message comes, as
        // the signal engine's helper does).
        if (verbose)
          fprintf(stderr, "cadrt: rank %u: %s %s: the thread engine (CADRT_SIGNAL chooses another signal)\n", me,
                  signal_name(g_signal).c_str(), why.c_str());
        engine = Engine::Thread;
      }
  } else if (name == "poll") {
    engine = Engine::Poll;
  } else if (name == "thread") {
    engine = Engine::Thread;
  } else if (name == "signal") {
    if (const std::string why = signal_unusable(g_signal); !why.empty())
      return set_error(-EBUSY, "CADRT_ENGINE=signal: " + signal_name(g_signal) + " " + why +
                                   ": choose another with CADRT_SIGNAL");
    engine = Engine::Signal;
  } else if (name == "kernel") {
    if (nlocal < nep)
      return set_error(-ENOTSUP, "CADRT_ENGINE=kernel: the kernel engine runs jobs on one node, and ranks of this "
                                 "one are on other nodes");
    engine = Engine::Kernel;
    *asked = true;
    return kernel_open();
  } else {
    return set_error(-EINVAL, "CADRT_ENGINE=" + name + ": not one of poll, thread, signal, kernel, auto");
  }
  return 0;
}

// Whether auto tries the kernel engine first: every rank of the job on
// this node, and /dev/cad there for us.
bool Runtime::auto_tries_kernel() const { return nlocal == nep && access("/dev/cad", R_OK | W_OK) == 0; }

// auto's user-space engine.
Engine Runtime::user_engine() const {
  cpu_set_t set;
  const long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
  return cpus >= 2 * static_cast<long>(nlocal) ? Engine::Thread : Engine::Signal;
}

// The helpers of the engine chosen.
int Runtime::start_engine() {
  if (engine == Engine::Thread) {
    helper_ = std::thread([this] { thread_main(); });
  } else if (engine == Engine::Signal) {
    signal_lost_.store(false);
    struct sigaction sa = {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(g_signal, &sa, nullptr) != 0) return set_error(-errno, "installing the signal handler failed");
    main_thread_.store(pthread_self(), std::memory_order_relaxed);
    signal_tid_.store(this_tid(), std::memory_order_relaxed);
    helper_ = std::thread([this] { signal_helper_main(); });
  }
  return 0;
}

const char *Runtime::engine_name() const {
  switch (engine) {
    case Engine::Thread: return "thread";
    case Engine::Signal: return "signal";
    case Engine::Kernel: return "kernel";
    default: return "poll";
  }
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

// The ranks of a node run the kernel engine all or none: a rank in cad.ko
// and one on the rings would each wait for the other for ever.  Each
// publishes its choice (or that its init failed) and meets the others
// here, failed or not (as at every barrier of init_joined: one that
// returned before it would leave them waiting).  If a rank runs a
// user-space engine, a rank whose auto chose the kernel's goes to auto's
// user-space one; a rank that asked for the kernel engine by name, with
// another that asked for a user-space one, fails them all alike.  A
// failed rank does not count (its init returns its own error).  (A rank
// that falls back so has measured no lanes: it goes without them.)
int Runtime::agree_engine(int err, bool asked) {
  RankInfo &mine = seg.rank(me);
  mine.engine.store(err ? kEngineFailed : engine != Engine::Kernel ? kEngineUser
                                          : asked                  ? kEngineKernelAsked
                                                                   : kEngineKernelAuto,
                    std::memory_order_release);
  if (err) {
    (void)seg.barrier();  // (its own error is this rank's message)
    return err;
  }
  if (int e = meet()) return e;
  int64_t user = -1, kernel_asked = -1;
  for (uint32_t ep = 0; ep < nep; ep++) {
    if (remote(ep)) continue;
    const uint32_t e = seg.rank(ep).engine.load(std::memory_order_acquire);
    if (e == kEngineUser && user < 0) user = ep;
    if (e == kEngineKernelAsked && kernel_asked < 0) kernel_asked = ep;
  }
  if (user >= 0 && kernel_asked >= 0)
    return set_error(-EINVAL, "CADRT_ENGINE: rank " + std::to_string(kernel_asked) +
                                  " asked for the kernel engine and rank " + std::to_string(user) +
                                  " runs a user-space one: the ranks of a node run the kernel engine all or none");
  if (user < 0 || engine != Engine::Kernel) return 0;
  kernel_close();
  engine = user_engine();
  if (verbose)
    fprintf(stderr, "cadrt: rank %u: rank %lld runs a user-space engine: %s, not the kernel's\n", me,
            static_cast<long long>(user), engine_name());
  return 0;
}

// A lane's receiver throws away what it holds (init_joined: nobody
// writes it then).
static void empty_lane(Lane &l) {
  const uint64_t tail = l.tail.load(std::memory_order_acquire);
  if (tail != l.head.load(std::memory_order_relaxed)) l.head.store(tail, std::memory_order_release);
}

int Runtime::init_joined() {
  if (verbose) {
    const int32_t *p = seg.rank(me).place;
    fprintf(stderr, "cadrt: rank %u: node %d, package %d, NUMA domain %d, L3 %d (hwloc topology: %s)\n", me, p[0],
            p[1], p[2], p[3], g_topology_from);
    if (me == 0) fprintf(stderr, "cadrt: algorithm library %s\n", library_path.c_str());
  }
  if (int err = probe_cma()) return err;
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
  // A bad setting fails this init only after the barriers below, which
  // every local rank must meet (the rank then takes no lane, as with
  // CADRT_BULK=0): returning before them would leave the others waiting.
  std::string bad;
  std::string want_bulk = env("CADRT_BULK") ? env("CADRT_BULK") : "auto";
  if (want_bulk != "0" && want_bulk != "1" && want_bulk != "auto") {
    bad = "CADRT_BULK=" + want_bulk + ": not 0, 1 or auto";
    want_bulk = "0";
  }
  uint64_t want_max = UINT64_MAX;
  for (auto [name, out] : {std::pair{"CADRT_BULK_MIN", &bulk_min}, std::pair{"CADRT_BULK_MAX", &want_max},
                           std::pair{"CADRT_PUSH_MAX", &push_max}})
    if (std::string why = env_bytes(name, out); !why.empty() && bad.empty()) {
      bad = why;
      want_bulk = "0";
    }
  bulk_max = want_max;
  // CADRT_PUSH (with CMA; without it every large local message is pushed
  // when its lane is free): which sends go through the lanes instead of
  // the receiver's single copy.  The node agrees below.
  const std::string want_push = env("CADRT_PUSH") ? env("CADRT_PUSH") : "auto";
  if (want_push != "0" && want_push != "1" && want_push != "auto" && bad.empty()) {
    bad = "CADRT_PUSH=" + want_push + ": not 0, 1 or auto";
    want_bulk = "0";
  }
  push_mode = want_bulk == "0" || want_push == "0" ? Push::Never : want_push == "1" ? Push::Always : Push::AtOnce;
  // Lanes (and Splits, in their headers) serve local peers CMA can reach.
  const bool lanes_here = cma && seg.has_lanes() && nlocal > 1;
  bulk = lanes_here && want_bulk != "0";
  push_lanes = !cma && seg.has_lanes() && nlocal > 1 && want_bulk != "0";
  // The kernel engine (choose_engine() decides it below, by the same
  // tests) copies in cad.ko and uses no lane: nothing to measure.  (Should
  // /dev/cad then fail to open under auto, the user-space engine goes
  // without lanes.)
  const char *want_engine = env("CADRT_ENGINE");
  if (want_engine && strcmp(want_engine, "kernel") == 0) bulk = false;
  if ((!want_engine || strcmp(want_engine, "auto") == 0) && auto_tries_kernel()) bulk = false;
  if (lanes_here) {
    // Pushes need every local rank to take them the same way (a lane is
    // either granted by its receiver or pushed into by its sender): the
    // node pushes only if all its ranks ask for the same CADRT_PUSH and
    // CADRT_BULK (then every rank decides from the same measurement,
    // below).  Published here, read after the first barrier below.
    const uint32_t asks = 1 + static_cast<uint32_t>(push_mode) + (want_bulk == "1" ? 4 : 0);
    seg.rank(me).push.store(asks, std::memory_order_relaxed);
    // Every local rank meets here (CADRT_BULK may differ between ranks);
    // after the second barrier nobody touches the measuring lanes.  A lane
    // left half-full -- by a partner that gave up measuring, or by this
    // process's earlier cadrt_init in the same job, cut off at finalize --
    // holds chunks no grant can account for: not used.
    // The node decides as one: lanes off if a pair measured them losing,
    // on if one measured them paying; a rank without a partner (the last
    // of an odd number) that learns nothing from the others measures two
    // memcpys.
    const bool measure = bulk && want_bulk == "auto";  // (all ranks meet in both barriers, measuring or not)
    std::vector<uint32_t> local;
    for (uint32_t ep = 0; ep < nep; ep++)
      if (!remote(ep)) local.push_back(ep);
    const size_t j = (std::find(local.begin(), local.end(), me) - local.begin()) ^ 1;
    const uint32_t partner = j < local.size() ? local[j] : nep;
    // Each says whether it measures (any value but 0; a result, stored
    // later, is never 0).  A rank whose partner does not (another
    // CADRT_BULK, or auto's kernel engine expected there -- a rank that
    // then falls back to a user-space engine goes without lanes) is as one
    // without a partner, instead of waiting 60 ms for it and taking the
    // lanes for slower.  (Pairs are mutual: a partner that measures reads
    // this rank's word, and then it stays non-zero.)
    seg.rank(me).lanes_upto.store(measure ? UINT64_MAX : 0, std::memory_order_relaxed);
    seg.rank(me).push_upto.store(0, std::memory_order_relaxed);
    seg.rank(me).probe_step.store(0, std::memory_order_relaxed);
    if (int err = meet()) return err;
    for (uint32_t ep : local)
      if (seg.rank(ep).push.load(std::memory_order_relaxed) != asks) push_mode = Push::Never;
    if (measure && partner < nep && seg.rank(partner).lanes_upto.load() != 0) {
      const uint64_t upto = lanes_upto(partner);
      seg.rank(me).lanes_upto.store(upto == UINT64_MAX ? upto : upto + 1);
      // (push_mode is the node's: both partners measure, or neither.)
      if (push_mode == Push::AtOnce) seg.rank(me).push_upto.store(push_upto(partner));
    } else {
      seg.rank(me).lanes_upto.store(0, std::memory_order_relaxed);
    }
    if (int err = meet()) return err;
    if (measure) {
      // The smallest limit any pair measured (the receiver alone decides
      // a grant, so ranks need not agree; they do, for one behaviour).
      uint64_t upto = UINT64_MAX;
      bool any = false;
      for (uint32_t ep : local) {
        const uint64_t v = seg.rank(ep).lanes_upto.load();
        if (!v) continue;
        any = true;
        upto = std::min(upto, v == UINT64_MAX ? v : v - 1);
      }
      if (!any) upto = lanes_upto(nep);
      bulk_max = std::min(upto, want_max);
      bulk = bulk_max > bulk_min;
      if (verbose) {
        if (!bulk) fprintf(stderr, "cadrt: rank %u: bulk lanes off\n", me);
        else if (bulk_max == UINT64_MAX) fprintf(stderr, "cadrt: rank %u: bulk lanes on\n", me);
        else fprintf(stderr, "cadrt: rank %u: bulk lanes on below %llu bytes\n", me, static_cast<unsigned long long>(bulk_max));
      }
    }
    // Pushes where the lanes pay at all: the pair measurement found them
    // faster at 16 KiB at least (or CADRT_BULK=1).  (It times exchanges,
    // not one-way pushes, and a process_vm_readv of the rank's own memory,
    // so its limit for exchanges says nothing of one-way pushes.)  Where
    // one-way pushes go is push_upto()'s (CADRT_PUSH=auto and CADRT_BULK=auto;
    // under CADRT_PUSH=1 or CADRT_BULK=1 up to CADRT_PUSH_MAX only).  Then
    // no grants: a lane is pushed into by its sender only.
    if (push_mode != Push::Never && bulk) {
      push_lanes = true;
      bulk = false;
      // Under auto, in the size classes every pair measured faster
      // (push_upto()); all where none measured (CADRT_BULK=1).
      if (push_mode == Push::AtOnce)
        for (uint32_t ep : local)
          if (const uint64_t v = seg.rank(ep).push_upto.load()) push_classes &= static_cast<uint32_t>(v);
      if (verbose) {
        char which[96] = "";
        if (push_classes != (1u << kPushClasses) - 1) {
          int at = snprintf(which, sizeof which, " but for");
          for (int i = 0; i < kPushClasses; i++)
            if (!(push_classes >> i & 1)) {
              auto kib = [](uint64_t b) { return static_cast<unsigned long long>(b >> 10); };
              at += snprintf(which + at, sizeof which - at, i + 1 < kPushClasses ? " %llu-%llu KiB" : " %llu KiB up",
                             kib(kPushProbe[i]), i + 1 < kPushClasses ? kib(kPushProbe[i + 1]) : 0);
            }
        }
        fprintf(stderr, "cadrt: rank %u: large sends pushed through the lanes%s (CADRT_PUSH=%s)\n", me, which,
                push_mode == Push::Always ? "1" : "auto");
      }
    } else {
      push_mode = Push::Never;
    }
  }
  if (seg.has_lanes() && nlocal > 1) {
    // A lane to this rank left half-full -- by a push measurement above
    // that gave up (a partner descheduled for 50 ms: the sender had
    // written chunks the receiver no longer took), or by an earlier
    // cadrt_init of this job -- is emptied here by its receiver, which
    // owns its head.  Nobody writes it now: every local rank is past the
    // measurements (the meet after them, with CMA) and, past probe_cma's
    // last barrier, in this init, so none pushes for an earlier one; and
    // none pushes for this one before agree_engine()'s barrier, which
    // every local rank meets after this.  Emptied, not retired: a retired
    // lane would leave one direction of a pair never pushing, and without
    // CMA that pair's large messages in fragments through the ring.
    for (uint32_t ep = 0; ep < nep; ep++)
      if (ep != me && !remote(ep)) empty_lane(seg.lane(ep, me));
  }
  int err = bad.empty() ? 0 : set_error(-EINVAL, bad);
  const std::string want_split = env("CADRT_SPLIT") ? env("CADRT_SPLIT") : "1";
  if (!err && want_split != "0" && want_split != "1")
    err = set_error(-EINVAL, "CADRT_SPLIT=" + want_split + ": not 0 or 1");
  split = lanes_here && want_split == "1";
  const std::string want_offer = env("CADRT_OFFER") ? env("CADRT_OFFER") : "auto";
  if (!err && want_offer != "0" && want_offer != "1" && want_offer != "auto")
    err = set_error(-EINVAL, "CADRT_OFFER=" + want_offer + ": not auto, 0 or 1");
  offers = lanes_here && want_offer != "0";
  offers_always = want_offer == "1";
  pool_.grow(256);
  vm_scratch_.assign(CAD_VM_SCRATCH_SIZE + 8, 0);

  world = std::make_unique<cadrt_comm_s>();
  world->ctx = 1;
  world->rank = static_cast<int>(me);
  world->size = static_cast<int>(nep);
  world->world = true;
  for (uint32_t i = 0; i < nep; i++) world->ep.push_back(i);
  world->rank_of_ep.assign(world->ep.begin(), world->ep.end());
  std::vector<std::vector<int64_t>> places;
  for (uint32_t i = 0; i < nep; i++) places.push_back({places_[i][0], places_[i][1], places_[i][2], places_[i][3]});
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

// The topology of comm from its ranks' places (or CADRT_TOPOLOGY).
int Runtime::make_topology(cadrt_comm_s *comm, const std::vector<std::vector<int64_t>> &places) {
  cad::Machine m;
  std::string error;
  if (const char *file = env("CADRT_TOPOLOGY")) {
    if (!cad::load_machine(file, &m, &error)) return set_error(-EINVAL, "CADRT_TOPOLOGY: " + error);
  } else {
    bool known = true;
    for (const auto &p : places) known &= p[1] >= 0;
    if (!known) {
      comm->topo = cad::Topology::flat(comm->size);
      return 0;
    }
    m.flat = false;
    m.name = "hwloc";
    m.places = places;
  }
  std::shared_ptr<const cad::Topology> t;
  if (!cad::Topology::make(m, comm->size, &t, &error)) return set_error(-EINVAL, "topology: " + error);
  comm->topo = t;
  comm->places = places;
  return 0;
}

// No more signals are taken; the helper or progress thread is woken and
// joined.
void Runtime::stop_helper() {
  stop_.store(true);
  // (A handler the application put there since cadrt_init stays.)
  struct sigaction now = {};
  if (engine == Engine::Signal && sigaction(g_signal, nullptr, &now) == 0 && is_cadrt_handler(now))
    signal(g_signal, SIG_IGN);
  if (!helper_.joinable()) return;
  RankInfo &mine = seg.rank(me);
  mine.bell.fetch_add(1);
  futex_wake(&mine.bell);
  helper_.join();
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
