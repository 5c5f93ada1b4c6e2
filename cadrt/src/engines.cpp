// engines.cpp - the progress engines: the thread engine's progress thread,
// the signal engine's helper and its signal, choosing an engine and the
// node's agreement on it, starting and stopping the helpers.
#include "runtime.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "internal.h"

namespace cadrt {

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

// Sleep until a message may have come (or timeout_ms), or the progress
// thread finished *done's request.
void Runtime::sleep_until_message(int timeout_ms, bool progress_thread, const bool *done) {
  RankInfo &mine = seg.rank(me);
  // The main thread stops looking while it sleeps, and every message
  // wakes it; a helper is woken for urgent ones (ring()).
  // (The progress thread may pass while the main thread sleeps: it owns
  // the runtime again after, see own().)
  const bool owned = !progress_thread && owned_;
  if (owned) owned_ = false;
  const uint32_t polling = progress_thread ? 0 : mine.polling.exchange(kRankAsleep, std::memory_order_release);
  std::atomic<uint32_t> &count = progress_thread ? mine.sleepers : mine.asleep;
  count.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t v = mine.bell.load(std::memory_order_acquire);
  if (!incoming() && !(done && __atomic_load_n(done, __ATOMIC_ACQUIRE))) futex_wait(&mine.bell, v, timeout_ms);
  count.fetch_sub(1, std::memory_order_relaxed);
  if (!progress_thread) mine.polling.store(polling, std::memory_order_relaxed);
  if (owned) own();
}

}  // namespace cadrt
