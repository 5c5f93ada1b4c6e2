// info.cpp - cadrun --info: what cadrt would find here, and why an engine
// is not available (the ompi_info of CAD).
#include "info.h"

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "../../kmod/uapi/cad.h"
#include "../src/paths.h"
#include "../src/settings.h"

namespace cadrt {

namespace {

volatile uint64_t g_word = 0x43414452554e2121ull;  // what the CMA probe reads

// The lib folder beside cadrun's bin (build/lib, or PREFIX/lib).
std::string libdir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "lib";
  return (exe.parent_path().parent_path() / "lib").lexically_normal().string();
}

std::string bytes(rlim_t v) {
  if (v == RLIM_INFINITY) return "unlimited";
  if (v >= (1u << 20) && v % (1u << 20) == 0) return std::to_string(v >> 20) + " MiB";
  if (v >= 1024 && v % 1024 == 0) return std::to_string(v >> 10) + " KiB";
  return std::to_string(v) + " bytes";
}

bool has_cap(int cap) {
  // Without libcap: the effective set from /proc/self/status (CapEff).
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return false;
  char line[256];
  unsigned long long eff = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "CapEff: %llx", &eff) == 1) break;
  fclose(f);
  return (eff >> cap) & 1;
}

void kernel_engine(const std::string &lib) {
  const int fd = open("/dev/cad", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    printf("  kernel   not available: /dev/cad: %s%s\n", strerror(err),
           err == ENOENT ? (" (" + module_hint(lib) + ")").c_str() : "");
    return;
  }
  cad_ioc_version v{};
  v.size = sizeof v;
  if (ioctl(fd, CAD_IOC_VERSION, &v) != 0) {
    printf("  kernel   not available: /dev/cad does not answer: %s\n", strerror(errno));
  } else if (v.version != CAD_VERSION) {
    printf("  kernel   not available: cad.ko runs program format %u, this CAD writes %u\n", v.version, CAD_VERSION);
  } else {
    printf("  kernel   available: cad.ko, program format %u, %u programs per process, features%s%s%s%s%s\n", v.version,
           v.max_programs, v.features & CAD_FEAT_PIN ? " pin" : "", v.features & CAD_FEAT_STATUS_PAGE ? " status-page" : "",
           v.features & CAD_FEAT_POLL ? " poll" : "", v.features & CAD_FEAT_USER_OPS ? " user-ops" : "",
           v.features & CAD_FEAT_VM_SLOTS ? " vm-slots" : "");
  }
  close(fd);
  struct rlimit rl;
  if (has_cap(CAP_IPC_LOCK))
    printf("           its pinned buffers: CAP_IPC_LOCK, not charged to RLIMIT_MEMLOCK\n");
  else if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
    printf("           its pinned buffers: at most RLIMIT_MEMLOCK, %s per process (docs/kernel-limits.md)\n",
           bytes(rl.rlim_cur).c_str());
}

// Whether one rank may read another's memory (process_vm_readv), as two
// ranks of a cadrun job do: siblings, the read one having allowed any
// tracer (as cadrt_init does).  "" if it may, else why not.
std::string cma_probe() {
  int ready[2], done[2];
  if (pipe(ready) != 0) return strerror(errno);
  if (pipe(done) != 0) return strerror(errno);
  const pid_t a = fork();
  if (a == 0) {
    close(done[1]);  // (else the read below would never see the end)
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(1);
    (void)!read(done[0], &c, 1);  // until the reader is done
    _exit(0);
  }
  char c;
  std::string why;
  if (a < 0 || read(ready[0], &c, 1) != 1) why = "cannot start a process to read";
  pid_t b = -1;
  if (why.empty()) b = fork();
  if (b == 0) {
    uint64_t word = 0;
    struct iovec l = {&word, sizeof word};
    struct iovec r = {const_cast<uint64_t *>(&g_word), sizeof word};
    _exit(process_vm_readv(a, &l, 1, &r, 1, 0) == sizeof word && word == g_word ? 0 : errno ? errno : 255);
  }
  int st = 0;
  if (b > 0 && waitpid(b, &st, 0) == b && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
    why = WIFEXITED(st) && WEXITSTATUS(st) != 255 ? strerror(WEXITSTATUS(st)) : "the word read is not the one written";
  close(done[1]);
  if (a > 0) waitpid(a, &st, 0);
  close(ready[0]);
  close(ready[1]);
  close(done[0]);
  return why;
}

void cma() {
  const std::string why = cma_probe();
  if (why.empty()) {
    printf("  CMA      permitted: large messages between ranks in one copy (process_vm_readv)\n");
    return;
  }
  std::string scope;
  if (FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r")) {
    int s = -1;
    if (fscanf(f, "%d", &s) == 1) scope = ", Yama ptrace_scope " + std::to_string(s);
    fclose(f);
  }
  printf("  CMA      not permitted (process_vm_readv: %s%s): large messages are copied twice through shared "
         "memory\n", why.c_str(), scope.c_str());
}

}  // namespace

int print_info(const char *program, const char *version) {
  const std::string lib = libdir();
  printf("%s %s, CAD program format %u\n", program, version, CAD_VERSION);
  const char *chosen = getenv("CADRT_LIBRARY");
  const std::string library = chosen && *chosen ? chosen : lib + "/cad-std.cadlib";
  struct stat st;
  printf("library    %s%s%s\n", library.c_str(), chosen && *chosen ? " (CADRT_LIBRARY)" : "",
         stat(library.c_str(), &st) == 0 ? "" : ": missing");
  printf("engines\n");
  kernel_engine(lib);
  cma();
  cpu_set_t set;
  const int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  printf("  thread   a progress thread per rank; auto picks it while this process may use at least twice as many "
         "CPUs as the node has ranks (%d CPUs here: up to %d ranks)\n", cpus, cpus / 2);
  printf("  signal   the main thread in a handler of signal %d (SIGRTMIN+5 unless CADRT_SIGNAL)\n", SIGRTMIN + 5);
  printf("  poll     always\n");
  printf("settings\n");
  const std::string report = settings_report(environ);
  size_t at = 0;
  while (at < report.size()) {
    const size_t nl = report.find('\n', at);
    printf("  %s\n", report.substr(at, nl - at).c_str());
    at = nl == std::string::npos ? report.size() : nl + 1;
  }
  for (const std::string &w : unknown_settings(environ)) printf("warning: %s\n", w.c_str());
  return 0;
}

}  // namespace cadrt
