// cadrun - runs N local processes as one cadrt job.
//
//   cadrun -n N [--bind core|none] [--timeout SECONDS] PROGRAM ARGS...
//   cadrun --settings[=markdown] | --info | --help | --version
//
// Creates the job's shared segment (a memfd the children inherit), starts
// the ranks with CADRT_JOB_FD, CADRT_RANK and CADRT_SIZE set (and
// CADRT_HWLOC_XML_FD: the machine's topology, loaded once), and waits.
// A rank that dies (a signal, or a non-zero exit) ends the job: cadrun says
// which and how, marks it dead in the segment (the others' requests fail
// with -EPIPE if they notice first), asks the others to stop (SIGTERM),
// and kills what is left after two seconds.  Exit status: 0 if every rank
// exited 0, else the first failing rank's status (128 + signal if killed).
// --timeout ends a job that runs longer, the same way (status 124).
// SIGINT, SIGTERM or SIGHUP to cadrun end the job the same way (status 128
// + the signal); ranks die with cadrun if it is killed.  A rank that exits
// with 0, or runs another program (exec), while still a member of the job
// (after cadrt_init, before cadrt_finalize) is said to have left it: the
// others' collectives that wait for it fail, and the job goes on.
#include <fcntl.h>
#include <hwloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../src/settings.h"
#include "info.h"
#include "../src/shm.h"

namespace {

volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int sig) { g_interrupted = sig; }

constexpr const char kUsage[] = "usage: cadrun -n N [--bind core|none] [--timeout SECONDS] PROGRAM ARGS...\n";

[[noreturn]] void usage(const char *why) {
  if (why) fprintf(stderr, "cadrun: %s\n", why);
  fputs(kUsage, stderr);
  exit(2);
}

[[noreturn]] void help() {
  fputs(kUsage, stdout);
  fputs("Runs N local processes as one cadrt job.\n"
        "\n"
        "  -n, --np N          the number of ranks, 1 to 4096\n"
        "  --bind core|none    bind rank r to the machine's core r (modulo the cores); none (default) leaves\n"
        "                      the ranks where the scheduler puts them\n"
        "  --timeout SECONDS   end the job if it runs longer (exit status 124)\n"
        "  --settings          print every CADRT_* setting with its value here and its default, and exit\n"
        "  --settings=markdown the settings as docs/runtime.md's table, and exit\n"
        "  --info              the library cadrt would load, each engine and why it is or is not available\n"
        "                      here, and the settings; then exit\n"
        "  -h, --help          this help\n"
        "  --version           cadrun's version\n"
        "\n"
        "Exit status: 0 if every rank exited 0, else the first failing rank's status (128 + the signal if\n"
        "it was killed); 124 after --timeout; 2 for a usage error.\n",
        stdout);
  exit(0);
}

double now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU sets of the machine's cores, in order.
std::vector<cpu_set_t> cores(hwloc_topology_t t) {
  std::vector<cpu_set_t> out;
  const int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int pu = hwloc_bitmap_first(core->cpuset); pu >= 0; pu = hwloc_bitmap_next(core->cpuset, pu))
      if (pu < CPU_SETSIZE) CPU_SET(pu, &set);
    out.push_back(set);
  }
  return out;
}

// The machine's topology as hwloc XML in a memfd the ranks inherit
// (CADRT_HWLOC_XML_FD), or -1.  Each rank's cadrt_init reads its place in
// the machine with hwloc; loading the topology from /sys took each rank
// 80-160 ms under qemu's emulation (20 ms here), importing this XML
// 3-20 ms.  A rank falls back to /sys if the XML does not load.
int topology_xml(hwloc_topology_t t) {
  char *xml = nullptr;
  int len = 0;
  if (hwloc_topology_export_xmlbuffer(t, &xml, &len, 0) != 0 || len <= 0) return -1;
  int fd = memfd_create("cadrun-topology", 0);  // inherited by the ranks
  if (fd >= 0) {
    ssize_t done = 0;
    while (done < len) {
      const ssize_t w = write(fd, xml + done, static_cast<size_t>(len - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += w;
    }
    if (done != len) {
      close(fd);
      fd = -1;
    }
  }
  hwloc_free_xmlbuffer(t, xml);
  return fd;
}

std::string describe(int status) {
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// Whether process pid is ending (or gone): PF_EXITING in the flags of
// /proc/PID/stat (its 9th field; the 2nd, the name, may hold anything but
// ends at the last ')').
bool exiting(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  const ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return true;
  buf[got] = 0;
  const char *p = strrchr(buf, ')');
  unsigned long flags = 0;
  if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1) return true;
  constexpr unsigned long kPfExiting = 0x4;  // include/linux/sched.h
  return flags & kPfExiting;
}

int code_of(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

}  // namespace

int main(int argc, char **argv) {
  long n = -1;
  bool bind = false;
  double timeout = 0;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const std::string a = argv[i];
    if ((a == "-n" || a == "--np") && i + 1 < argc) {
      char *end;
      n = strtol(argv[++i], &end, 10);
      if (*end || n < 1 || n > 4096) usage("-n takes a number of ranks from 1 to 4096");
    } else if (a == "--bind" && i + 1 < argc) {
      const std::string b = argv[++i];
      if (b != "core" && b != "none") usage("--bind takes core or none");
      bind = b == "core";
    } else if (a == "--timeout" && i + 1 < argc) {
      char *end;
      timeout = strtod(argv[++i], &end);
      if (*end || timeout <= 0) usage("--timeout takes a number of seconds");
    } else if (a == "-h" || a == "--help") {
      help();
    } else if (a == "--info") {
      return cadrt::print_info("cadrun", CAD_VERSION_STRING);
    } else if (a == "--version") {
      printf("cadrun %s\n", CAD_VERSION_STRING);
      return 0;
    } else if (a == "--settings" || a == "--settings=markdown") {
      const std::string out = a == "--settings" ? cadrt::settings_report(environ) : cadrt::settings_markdown();
      fputs(out.c_str(), stdout);
      return 0;
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  if (n < 1) usage("give the number of ranks with -n");
  if (i >= argc) usage("give the program to run");

  const int fd = memfd_create("cadrt-job", 0);  // inherited by the ranks
  cadrt::Segment seg;
  std::string error;
  if (fd < 0 || !seg.map(fd, true, static_cast<uint32_t>(n), &error)) {
    fprintf(stderr, "cadrun: cannot create the job's shared memory: %s\n", fd < 0 ? strerror(errno) : error.c_str());
    return 1;
  }
  // The topology, loaded once: the cores to bind to, and the ranks' view
  // of the machine (a single rank loads its own: no gain).
  std::vector<cpu_set_t> places;
  int xml_fd = -1;
  if (bind || n > 1) {
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) == 0) {
      if (hwloc_topology_load(t) == 0) {
        if (bind) places = cores(t);
        if (n > 1) xml_fd = topology_xml(t);
      }
      hwloc_topology_destroy(t);
    }
  }
  if (bind && places.empty()) fprintf(stderr, "cadrun: --bind core: no cores found; not binding\n");

  // SIGINT, SIGTERM and SIGHUP (the terminal went away) end the job, as a
  // rank's death does -- unless cadrun was started with one ignored (nohup,
  // a shell's background job): then it stays ignored, here and in the
  // ranks, which get back what cadrun was given.
  const int ending_signals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction given[3] = {};
  for (int k = 0; k < 3; k++) {
    sigaction(ending_signals[k], nullptr, &given[k]);
    if (given[k].sa_handler == SIG_IGN && !(given[k].sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa = {};
    sa.sa_handler = on_interrupt;
    sigaction(ending_signals[k], &sa, nullptr);
  }
  const pid_t launcher = getpid();

  // Each rank's pipe: the rank holds the write end (CADRT_LIFE_FD), which
  // cadrt_init makes close-on-exec until cadrt_finalize; cadrun reads the
  // other.  It closes when the rank's process ends -- or runs another
  // program while a member of the job, which cadrun cannot see otherwise:
  // the pid lives on, and its peers would wait for ever.  (A process the
  // rank forked keeps it open: no harm, the job learns later.  A program
  // that closes its descriptors after cadrt_init leaves the job that way.)
  std::vector<pid_t> pids(static_cast<size_t>(n), 0);
  std::vector<struct pollfd> lives(static_cast<size_t>(n), {-1, POLLIN, 0});  // (poll skips fd -1)
  std::vector<char> closed(static_cast<size_t>(n), 0), said_left(static_cast<size_t>(n), 0);
  for (long r = 0; r < n; r++) {
    int life[2];
    if (pipe2(life, O_CLOEXEC) != 0) {
      fprintf(stderr, "cadrun: pipe failed: %s\n", strerror(errno));
      for (long q = 0; q < r; q++) kill(pids[static_cast<size_t>(q)], SIGKILL);
      return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "cadrun: fork failed: %s\n", strerror(errno));
      for (long q = 0; q < r; q++) kill(pids[static_cast<size_t>(q)], SIGKILL);
      return 1;
    }
    if (pid == 0) {
      for (int k = 0; k < 3; k++) sigaction(ending_signals[k], &given[k], nullptr);
      // A rank does not outlive cadrun: killed (SIGKILL, which cadrun
      // cannot see coming, or the OOM killer), cadrun takes its ranks with
      // it.  (If it died before the prctl, the parent is another already.)
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher) _exit(127);
      setenv("CADRT_JOB_FD", std::to_string(fd).c_str(), 1);
      if (fcntl(life[1], F_SETFD, 0) == 0) setenv("CADRT_LIFE_FD", std::to_string(life[1]).c_str(), 1);
      setenv("CADRT_RANK", std::to_string(r).c_str(), 1);
      setenv("CADRT_SIZE", std::to_string(n).c_str(), 1);
      if (xml_fd >= 0) setenv("CADRT_HWLOC_XML_FD", std::to_string(xml_fd).c_str(), 1);
      if (!places.empty()) sched_setaffinity(0, sizeof(cpu_set_t), &places[static_cast<size_t>(r) % places.size()]);
      execvp(argv[i], argv + i);
      fprintf(stderr, "cadrun: cannot run %s: %s\n", argv[i], strerror(errno));
      _exit(127);
    }
    pids[static_cast<size_t>(r)] = pid;
    close(life[1]);
    lives[static_cast<size_t>(r)].fd = life[0];
  }
  if (xml_fd >= 0) close(xml_fd);  // the ranks have theirs

  const double start = now();
  long running = n;
  int result = 0;
  bool ending = false;
  double kill_at = 0;
  while (running > 0) {
    // Every rank that has ended by now, at once: when one dies, the others
    // fail soon after (their peer is gone), and the one to report is the
    // cause -- a rank killed by a signal before ranks that exited with an
    // error.
    struct Ended {
      long rank;
      pid_t pid;
      int status;
      bool kicked;
    };
    std::vector<Ended> ended;
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1) {
        // A rank failed with an error: its peer may have died just before
        // it (ranks fail fast when a peer is gone).  Give the cause 100 ms
        // to be reaped too.
        bool failed = false;
        for (const auto &e : ended) failed |= !(WIFEXITED(e.status) && WEXITSTATUS(e.status) == 0);
        bool signalled = false;
        for (const auto &e : ended) signalled |= WIFSIGNALED(e.status);
        if (ending || !failed || signalled || running == 0) break;
        usleep(100000);
      }
      for (;;) {
        int status;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) break;
        long r = 0;
        while (r < n && pids[static_cast<size_t>(r)] != pid) r++;
        if (r == n) continue;
        pids[static_cast<size_t>(r)] = 0;
        running--;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        // Exited with 0 while still a member of the job (it joined, and
        // finalize, which says kExited, was not called): its peers' waits
        // for it fail, naming why (shm.h); the job goes on.
        std::atomic<uint32_t> &state = seg.rank(static_cast<uint32_t>(r)).state;
        const uint32_t was = state.load();
        // kDead too: before reaping only a peer sets that, from kAlive,
        // when it found this pid gone or its ring corrupt (progress.cpp);
        // it was still a member then.  Without it the message raced with a
        // peer noticing the exit first.
        const bool member = was == cadrt::kAlive || was == cadrt::kLeft || was == cadrt::kDead;
        const bool left = ok && member;
        if (left && !said_left[static_cast<size_t>(r)])
          fprintf(stderr, "cadrun: rank %ld (pid %d) exited without cadrt_finalize; collectives still waiting for it fail\n",
                  r, static_cast<int>(pid));
        state.store(!ok ? cadrt::kDead : left ? cadrt::kLeft : cadrt::kExited);
        // Killed by the signal the signal engine kicks it with: it no
        // longer handled it -- it ran another program, or reset the
        // handler, before cadrt_finalize, and a peer's kick came first.
        const int32_t signo = seg.rank(static_cast<uint32_t>(r)).signo.load();
        const bool kicked = WIFSIGNALED(status) && signo > 0 && WTERMSIG(status) == signo && member;
        ended.push_back({r, pid, status, kicked});
      }
    }
    if (!ending) {
      const Ended *cause = nullptr;
      for (const auto &e : ended) {
        const bool failed = !(WIFEXITED(e.status) && WEXITSTATUS(e.status) == 0);
        if (WIFSIGNALED(e.status) && (!cause || !WIFSIGNALED(cause->status))) cause = &e;
        else if (failed && !cause) cause = &e;
      }
      if (cause) {
        fprintf(stderr, "cadrun: rank %ld (pid %d) %s%s; ending the job\n", cause->rank, static_cast<int>(cause->pid),
                describe(cause->status).c_str(),
                cause->kicked ? ", cadrt's signal engine's, which kills a process that no longer handles it (one that "
                                "ran another program, or reset the handler, before cadrt_finalize)"
                              : "");
        result = code_of(cause->status);
        ending = true;
        kill_at = now() + 2;
        for (pid_t p : pids)
          if (p) kill(p, SIGTERM);
      }
    }
    if (!ended.empty()) continue;
    if (g_interrupted && !ending) {
      fprintf(stderr, "cadrun: interrupted; ending the job\n");
      result = 128 + g_interrupted;
      ending = true;
      kill_at = now() + 2;
      for (pid_t p : pids)
        if (p) kill(p, SIGTERM);
    }
    if (timeout > 0 && !ending && now() - start > timeout) {
      fprintf(stderr, "cadrun: the job ran longer than --timeout %g s; ending it\n", timeout);
      result = 124;
      ending = true;
      kill_at = now() + 2;
      for (pid_t p : pids)
        if (p) kill(p, SIGTERM);
    }
    if (ending && now() > kill_at) {
      for (pid_t p : pids)
        if (p) kill(p, SIGKILL);
      kill_at = now() + 3600;
    }
    // A rank's pipe closed, and its process is not ending: it runs
    // another program.  (One that ends closes its descriptors just before;
    // the kernel flags it exiting first, and it is reaped above.)
    for (long r = 0; r < n; r++) {
      const size_t k = static_cast<size_t>(r);
      if (!closed[k]) continue;
      closed[k] = 0;
      if (!pids[k] || exiting(pids[k])) continue;
      uint32_t alive = cadrt::kAlive;
      if (seg.rank(static_cast<uint32_t>(r)).state.compare_exchange_strong(alive, cadrt::kLeft)) {
        fprintf(stderr,
                "cadrun: rank %ld (pid %d) ran another program without cadrt_finalize; collectives still waiting "
                "for it fail\n",
                r, static_cast<int>(pids[k]));
        said_left[k] = 1;
      }
    }
    // Sleep 2 ms, or until a rank's pipe closes.
    if (poll(lives.data(), lives.size(), 2) <= 0) continue;
    for (size_t k = 0; k < lives.size(); k++) {
      if (lives[k].fd < 0 || !lives[k].revents) continue;
      char b[64];
      if (read(lives[k].fd, b, sizeof b) > 0) continue;  // (nobody writes it; if they do, it is read)
      close(lives[k].fd);
      lives[k].fd = -1;
      closed[k] = 1;
    }
  }
  const cadrt::Header &h = seg.header();
  const char *cma = getenv("CADRT_CMA");
  if (h.cma_denied.load() && !(cma && strcmp(cma, "0") == 0))
    fprintf(stderr, "cadrun: notice: process_vm_readv was not permitted (%s); large messages were copied through shared memory\n",
            strerror(h.cma_errno.load()));
  return result;
}
