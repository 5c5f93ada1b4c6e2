// kernel.cpp - the kernel engine: cad.ko (/dev/cad) runs the programs.
//
// The job's ranks on this node join one group of the module (the key is
// the job's, from the shared segment).  A request's program is loaded
// with the addresses of its buffers -- the module verifies it again and
// pins the buffers -- and started as collective seq of its communicator;
// the module moves the data between the processes' pages as soon as both
// sides of a transfer are posted, in whichever process's system call made
// that so, and the request is complete when the status page says so.
//
// Loading: a persistent request loads once (its buffers are fixed at
// init) and starts many times.  Any other request loads and starts in one
// ioctl, and the program stays loaded for the next call with the same
// instance and buffer addresses (up to 32 of them, least recently used
// out first): then a call is one START.  That is safe because the module
// watches the pinned ranges -- if the process unmaps or remaps the memory
// (free() of a large block, mremap, madvise), START says -ESTALE and the
// program is loaded again with the pages now there.
//
// Waiting: spin on the status page for a few microseconds (a small
// collective often completes inside a peer's next call), then sleep in
// read(), which returns when any program of this process completes.
//
// Memory the process may not pin (RLIMIT_MEMLOCK, `ulimit -l`): the
// module copies such a buffer through kernel memory instead
// (CAD_LOAD_BOUNCE, unless CADRT_KERNEL_BOUNCE=0), invisible to the
// peers.  It copies the data out of an ended run in this process's next
// TEST or read() and publishes the end only then, so such a request is
// tested with a TEST, not the status page alone, and waited for in
// read() at once.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "internal.h"
#include "paths.h"
#include "runtime.h"

namespace cadrt {

namespace {

std::string why(int err) {
  switch (err) {
    case -EPIPE: return "a rank of this collective went away (kernel engine)";
    case -ECANCELED: return "the collective was cancelled by a rank (kernel engine)";
    case -EPROTO:
      return "the ranks' programs for this collective do not match: they disagree on its count, root, datatype, "
             "op, in place, algorithm or its parameters, or topology (kernel engine)";
    default: return std::string("the kernel engine failed: ") + strerror(-err);
  }
}

}  // namespace

int Runtime::kernel_open() {
  kfd_ = open("/dev/cad", O_RDWR | O_CLOEXEC);
  if (kfd_ < 0) {
    const int err = errno;
    return set_error(-err, std::string("CADRT_ENGINE=kernel: /dev/cad: ") + strerror(err) +
                               (err == ENOENT ? " (" + module_hint(library_dir()) + ")" : std::string()));
  }
  cad_ioc_version v{};
  v.size = sizeof v;
  if (ioctl(kfd_, CAD_IOC_VERSION, &v) != 0)
    return set_error(-errno, std::string("CADRT_ENGINE=kernel: /dev/cad does not answer: ") + strerror(errno));
  if (const char *b = env("CADRT_KERNEL_BOUNCE"); b && strcmp(b, "0") != 0 && strcmp(b, "1") != 0)
    return set_error(-EINVAL, std::string("CADRT_KERNEL_BOUNCE=") + b + ": not 0 or 1");
  kbounce_ = !env("CADRT_KERNEL_BOUNCE") || strcmp(env("CADRT_KERNEL_BOUNCE"), "0") != 0;
  if (v.version != CAD_VERSION)
    return set_error(-EPROTO, "CADRT_ENGINE=kernel: cad.ko runs program format " + std::to_string(v.version) +
                                  ", this cadrt writes " + std::to_string(CAD_VERSION));
  cad_ioc_join j{};
  j.size = sizeof j;
  j.rank = me;
  j.nranks = nep;
  j.key = seg.header().job_key;
  if (ioctl(kfd_, CAD_IOC_JOIN, &j) != 0)
    return set_error(-errno, std::string("CADRT_ENGINE=kernel: joining the job's group: ") + strerror(errno));
  void *p = mmap(nullptr, CAD_STATUS_SIZE, PROT_READ, MAP_SHARED, kfd_, 0);
  if (p == MAP_FAILED)
    return set_error(-errno, std::string("CADRT_ENGINE=kernel: mapping the status page: ") + strerror(errno));
  kstatus_ = static_cast<const volatile cad_status *>(p);
  return 0;
}

void Runtime::kernel_close() {
  kcache_.clear();
  kheld_.clear();
  if (kstatus_) munmap(const_cast<cad_status *>(kstatus_), CAD_STATUS_SIZE);
  kstatus_ = nullptr;
  if (kfd_ >= 0) close(kfd_);  // the module frees what is still loaded
  kfd_ = -1;
}

namespace {
constexpr size_t kCacheEntries = 32;
}

int Runtime::kernel_ioctl_start(int32_t kh, uint64_t seq) {
  cad_ioc_start s{};
  s.size = sizeof s;
  s.handle = static_cast<uint32_t>(kh);
  s.seq = seq;
  return ioctl(kfd_, CAD_IOC_START, &s) ? -errno : 0;
}

void Runtime::kernel_ioctl_test(int32_t kh) const {
  cad_ioc_handle h{};
  h.size = sizeof h;
  h.handle = static_cast<uint32_t>(kh);
  ioctl(kfd_, CAD_IOC_TEST, &h);  // (its result is on the status page too)
}

void Runtime::kernel_ioctl_free(int32_t kh) {
  cad_ioc_handle h{};
  h.size = sizeof h;
  h.handle = static_cast<uint32_t>(kh);
  if (kfd_ >= 0) ioctl(kfd_, CAD_IOC_FREE, &h);
}

// Loads r's program with the addresses in kaddrs_ and starts it (one ioctl).
int Runtime::kernel_load(cadrt_request_s *r) {
  const cad_prog &p = r->inst->prog;
  char log[512] = "";
  cad_ioc_load l{};
  l.size = sizeof l;
  l.prog_size = p.hdr->total_size;
  l.prog = reinterpret_cast<uintptr_t>(p.hdr);
  l.buf_addrs = reinterpret_cast<uintptr_t>(kaddrs_.data());
  l.nbufs = p.n_buffers;
  l.log_size = sizeof log;
  l.log_buf = reinterpret_cast<uintptr_t>(log);
  l.ranks = reinterpret_cast<uintptr_t>(r->comm->ep.data());
  l.ctx = r->comm->ctx;
  l.flags = CAD_LOAD_START | (kbounce_ ? CAD_LOAD_BOUNCE : 0);
  l.seq = r->seq;
  l.fp = r->from_cad ? 0 : r->inst->fp;  // the fingerprint cadrt's own messages carry
  // A signal of the application's (one whose handler has no SA_RESTART)
  // may interrupt the load of a process's first program (cad.ko then
  // registers the process's memory notifier); nothing of it is left, so
  // it is made again.
  const auto load = [&] {
    int e;
    while ((e = ioctl(kfd_, CAD_IOC_LOAD, &l) ? -errno : 0) == -EINTR) {
    }
    return e;
  };
  int err = load();
  if (err == -ENOMEM && l.handle == ~0u && !kcache_.empty()) {
    kernel_evict(0);  // cached programs hold pinned memory: let it go, try again
    err = load();
  }
  // At the module's limit of programs per file: make room from programs
  // no collective runs now, so a process may hold more persistent
  // requests than the module holds programs.
  while (err == -EMFILE && l.handle == ~0u && kernel_unload_idle()) {
    log[0] = 0;
    err = load();
  }
  if (err == -EMFILE && l.handle == ~0u && log[0])
    snprintf(log + strlen(log), sizeof log - strlen(log),
             "; the kernel engine runs at most that many collectives at once in a process");
  if (l.handle != ~0u) {
    r->kh = static_cast<int32_t>(l.handle);
    r->kgen = err ? 0 : 1;
    r->kbounce = (l.flags & CAD_LOAD_BOUNCED) != 0;
    if (r->kbounce) {
      n_kernel_bounced++;
      if (verbose)
        fprintf(stderr, "cadrt: rank %u: %s runs unpinned in the kernel: %s\n", me, r->inst->desc.c_str(), log);
    }
    if (r->persistent) {
      kheld_.push_back(r);
      r->kused = ++kclock_;
    }
  }
  if (err) r->error = std::string("the kernel refused ") + r->inst->desc + ": " + (log[0] ? log : strerror(-err));
  return err;
}

bool Runtime::kernel_unload_idle() {
  if (!kcache_.empty()) {
    const size_t before = kcache_.size();
    kernel_evict(0);
    if (kcache_.size() < before) return true;
  }
  // A sixteenth of the persistent programs, at least one, the least
  // recently started first: a load at the limit is rare, and each costs
  // a verification in the kernel.
  size_t freed = 0;
  const size_t want = std::max<size_t>(1, kheld_.size() / 16);
  while (freed < want) {
    cadrt_request_s *victim = nullptr;
    for (cadrt_request_s *q : kheld_)
      if (!q->active && (!victim || q->kused < victim->kused)) victim = q;
    if (!victim) break;
    kernel_free(victim);
    freed++;
  }
  return freed > 0;
}

// Frees idle cached programs, least recently used first, down to keep.
void Runtime::kernel_evict(size_t keep) {
  while (kcache_.size() > keep) {
    auto victim = kcache_.end();
    for (auto it = kcache_.begin(); it != kcache_.end(); ++it)
      if (!it->busy && (victim == kcache_.end() || it->used < victim->used)) victim = it;
    if (victim == kcache_.end()) return;  // all in use
    kernel_ioctl_free(victim->kh);
    kcache_.erase(victim);
  }
}

// The cache entry of a running request's program, or null (persistent
// requests own theirs).
Runtime::Loaded *Runtime::kernel_cached(int32_t kh) {
  for (Loaded &e : kcache_)
    if (e.kh == kh) return &e;
  return nullptr;
}

// Starts r: a persistent request loads at its first start and starts its
// own program after; another one starts a cached program loaded for the
// same instance, communicator and buffers, or loads one (and caches it).
int Runtime::kernel_start(cadrt_request_s *r) {
  if (r->kh >= 0) {
    const int err = kernel_ioctl_start(r->kh, r->seq);
    if (!err) {
      r->kgen++;
      r->kused = ++kclock_;
      return 0;
    }
    if (err != -ESTALE) {
      r->error = std::string("starting the collective in the kernel: ") + strerror(-err);
      return err;
    }
    kernel_free(r);  // the buffers were remapped: load with the pages there now
  }
  const cad_prog &p = r->inst->prog;
  kaddrs_.resize(p.n_buffers);
  for (uint32_t i = 0; i < p.n_buffers; i++) kaddrs_[i] = reinterpret_cast<uintptr_t>(r->bufs[i]);
  if (r->persistent) return kernel_load(r);

  for (auto it = kcache_.begin(); it != kcache_.end(); ++it) {
    if (it->busy || it->inst != r->inst || it->ctx != r->comm->ctx || it->addrs != kaddrs_) continue;
    if (kernel_ioctl_start(it->kh, r->seq) == 0) {
      it->busy = true;
      it->used = ++kclock_;
      r->kh = it->kh;
      r->kbounce = it->bounce;
      r->kgen = ++it->gen;
      return 0;
    }
    // -ESTALE (the memory was remapped) or anything else: load afresh
    kernel_ioctl_free(it->kh);
    kcache_.erase(it);
    break;
  }
  kernel_evict(kCacheEntries - 1);
  if (int err = kernel_load(r)) return err;
  Loaded e;
  e.inst = r->inst;
  e.ctx = r->comm->ctx;
  e.addrs = kaddrs_;
  e.kh = r->kh;
  e.gen = 1;
  e.busy = true;
  e.bounce = r->kbounce;
  e.used = ++kclock_;
  kcache_.push_back(std::move(e));
  return 0;
}

void Runtime::kernel_finish(cadrt_request_s *r, int result) {
  r->result = result;
  if (result && r->error.empty()) r->error = why(result);
  if (r->persistent) {
    // keeps its program for the next start
  } else if (Loaded *e = r->kh >= 0 ? kernel_cached(r->kh) : nullptr) {
    // back to the cache (a failed one is not worth keeping)
    e->busy = false;
    if (result) e->used = 0;
    r->kh = -1;
  } else if (r->kh >= 0) {
    kernel_free(r);
  }
  unlink_active(r);
}

bool Runtime::kernel_test(cadrt_request_s *r) {
  if (r->done) return true;
  if (!r->active) return false;
  if (r->kbounce) kernel_ioctl_test(r->kh);  // copies out, publishes
  const volatile cad_status &st = kstatus_[r->kh];
  const int32_t result = st.result;
  std::atomic_thread_fence(std::memory_order_acquire);
  if (result == -EINPROGRESS || st.gen != r->kgen) return false;
  kernel_finish(r, result);
  return true;
}

void Runtime::kernel_wait(cadrt_request_s *r) {
  for (int spin = 0; spin < (r->kbounce ? 1 : 2000); spin++) {  // (a bounced one: a TEST each)
    if (kernel_test(r)) return;
    cpu_relax();
  }
  while (!kernel_test(r)) {
    uint64_t n;
    if (read(kfd_, &n, sizeof n) < 0 && errno != EINTR && errno != EAGAIN) {
      kernel_finish(r, -errno);
      return;
    }
  }
}

void Runtime::kernel_free(cadrt_request_s *r) {
  kernel_ioctl_free(r->kh);
  r->kh = -1;
  if (r->persistent) {
    const auto it = std::find(kheld_.begin(), kheld_.end(), r);
    if (it != kheld_.end()) {
      *it = kheld_.back();
      kheld_.pop_back();
    }
  }
}

}  // namespace cadrt
