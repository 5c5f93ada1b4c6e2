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
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime.h"

namespace cadrt {

namespace {

std::string why(int err) {
  switch (err) {
    case -EPIPE: return "a rank of this collective went away (kernel engine)";
    case -ECANCELED: return "the collective was cancelled by a rank (kernel engine)";
    case -EPROTO: return "the ranks' programs for this collective do not match (kernel engine)";
    default: return std::string("the kernel engine failed: ") + strerror(-err);
  }
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

int Runtime::kernel_open() {
  kfd_ = open("/dev/cad", O_RDWR | O_CLOEXEC);
  if (kfd_ < 0)
    return set_error(-errno, std::string("CADRT_ENGINE=kernel: /dev/cad: ") + strerror(errno) +
                                 " (load the module: insmod build/kmod/cad.ko)");
  cad_ioc_version v{};
  v.size = sizeof v;
  if (ioctl(kfd_, CAD_IOC_VERSION, &v) != 0)
    return set_error(-errno, std::string("CADRT_ENGINE=kernel: /dev/cad does not answer: ") + strerror(errno));
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
  if (kstatus_) munmap(const_cast<cad_status *>(kstatus_), CAD_STATUS_SIZE);
  kstatus_ = nullptr;
  if (kfd_ >= 0) close(kfd_);  // the module frees what is still loaded
  kfd_ = -1;
}

namespace {
constexpr size_t kCacheEntries = 32;
}

// Loads r's program with addrs and starts it (one ioctl).
int Runtime::kernel_load(cadrt_request_s *r, const std::vector<uint64_t> &addrs) {
  const cad_prog &p = r->inst->prog;
  char log[512] = "";
  cad_ioc_load l{};
  l.size = sizeof l;
  l.prog_size = p.hdr->total_size;
  l.prog = reinterpret_cast<uintptr_t>(p.hdr);
  l.buf_addrs = reinterpret_cast<uintptr_t>(addrs.data());
  l.nbufs = p.n_buffers;
  l.log_size = sizeof log;
  l.log_buf = reinterpret_cast<uintptr_t>(log);
  l.ranks = reinterpret_cast<uintptr_t>(r->comm->ep.data());
  l.ctx = r->comm->ctx;
  l.flags = CAD_LOAD_START;
  l.seq = r->seq;
  int err = ioctl(kfd_, CAD_IOC_LOAD, &l) ? -errno : 0;
  if (err == -ENOMEM && l.handle == ~0u && !kcache_.empty()) {
    kernel_evict(0);  // cached programs hold pinned memory: let it go, try again
    l.log_size = sizeof log;
    err = ioctl(kfd_, CAD_IOC_LOAD, &l) ? -errno : 0;
  }
  if (l.handle != ~0u) {
    r->kh = static_cast<int32_t>(l.handle);
    r->kgen = err ? 0 : 1;
  }
  if (err) r->error = std::string("the kernel refused ") + r->inst->desc + ": " + (log[0] ? log : strerror(-err));
  return err;
}

// Frees idle cached programs, least recently used first, down to keep.
void Runtime::kernel_evict(size_t keep) {
  while (kcache_.size() > keep) {
    size_t victim = kcache_.size();
    for (size_t i = 0; i < kcache_.size(); i++)
      if (!kcache_[i].busy && (victim == kcache_.size() || kcache_[i].used < kcache_[victim].used)) victim = i;
    if (victim == kcache_.size()) return;  // all in use
    cad_ioc_handle h{};
    h.size = sizeof h;
    h.handle = static_cast<uint32_t>(kcache_[victim].kh);
    ioctl(kfd_, CAD_IOC_FREE, &h);
    kcache_.erase(kcache_.begin() + static_cast<long>(victim));
    // requests point at entries by index: only idle entries move, and no
    // running request refers to an idle one
    for (cadrt_request_s *q = active_; q; q = q->next)
      if (q->kslot > static_cast<int32_t>(victim)) q->kslot--;
  }
}

// Starts r: a persistent request loads at its first start and starts its
// own program after; another one starts a cached program loaded for the
// same instance, communicator and buffers, or loads one (and caches it).
int Runtime::kernel_start(cadrt_request_s *r) {
  if (r->kh >= 0) {
    cad_ioc_start s{};
    s.size = sizeof s;
    s.handle = static_cast<uint32_t>(r->kh);
    s.seq = r->seq;
    if (ioctl(kfd_, CAD_IOC_START, &s) == 0) {
      r->kgen++;
      return 0;
    }
    if (errno != ESTALE) {
      r->error = std::string("starting the collective in the kernel: ") + strerror(errno);
      return -errno;
    }
    kernel_free(r);  // the buffers were remapped: load with the pages there now
  }
  const cad_prog &p = r->inst->prog;
  std::vector<uint64_t> addrs(p.n_buffers);
  for (uint32_t i = 0; i < p.n_buffers; i++) addrs[i] = reinterpret_cast<uintptr_t>(r->bufs[i]);
  if (r->persistent) return kernel_load(r, addrs);

  for (size_t i = 0; i < kcache_.size(); i++) {
    Loaded &e = kcache_[i];
    if (e.busy || e.inst != r->inst || e.ctx != r->comm->ctx || e.addrs != addrs) continue;
    cad_ioc_start s{};
    s.size = sizeof s;
    s.handle = static_cast<uint32_t>(e.kh);
    s.seq = r->seq;
    if (ioctl(kfd_, CAD_IOC_START, &s) == 0) {
      e.busy = true;
      e.used = ++kclock_;
      r->kh = e.kh;
      r->kgen = ++e.gen;
      r->kslot = static_cast<int32_t>(i);
      return 0;
    }
    // -ESTALE (the memory was remapped) or anything else: load afresh
    cad_ioc_handle h{};
    h.size = sizeof h;
    h.handle = static_cast<uint32_t>(e.kh);
    ioctl(kfd_, CAD_IOC_FREE, &h);
    kcache_.erase(kcache_.begin() + static_cast<long>(i));
    for (cadrt_request_s *q = active_; q; q = q->next)
      if (q->kslot > static_cast<int32_t>(i)) q->kslot--;
    break;
  }
  kernel_evict(kCacheEntries - 1);
  if (int err = kernel_load(r, addrs)) return err;
  Loaded e;
  e.inst = r->inst;
  e.ctx = r->comm->ctx;
  e.addrs = std::move(addrs);
  e.kh = r->kh;
  e.gen = 1;
  e.busy = true;
  e.used = ++kclock_;
  kcache_.push_back(std::move(e));
  r->kslot = static_cast<int32_t>(kcache_.size() - 1);
  return 0;
}

void Runtime::kernel_finish(cadrt_request_s *r, int result) {
  r->result = result;
  if (result && r->error.empty()) r->error = why(result);
  if (r->kslot >= 0) {
    // back to the cache (a failed one is not worth keeping)
    Loaded &e = kcache_[static_cast<size_t>(r->kslot)];
    e.busy = false;
    if (result) e.used = 0;
    r->kslot = -1;
    r->kh = -1;
  } else if (!r->persistent && r->kh >= 0) {
    kernel_free(r);
  }
  unlink_active(r);
}

bool Runtime::kernel_test(cadrt_request_s *r) {
  if (r->done) return true;
  if (!r->active) return false;
  const volatile cad_status &st = kstatus_[r->kh];
  const int32_t result = st.result;
  std::atomic_thread_fence(std::memory_order_acquire);
  if (result == -EINPROGRESS || st.gen != r->kgen) return false;
  kernel_finish(r, result);
  return true;
}

void Runtime::kernel_wait(cadrt_request_s *r) {
  for (int spin = 0; spin < 2000; spin++) {
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
  cad_ioc_handle h{};
  h.size = sizeof h;
  h.handle = static_cast<uint32_t>(r->kh);
  if (kfd_ >= 0) ioctl(kfd_, CAD_IOC_FREE, &h);
  r->kh = -1;
}

}  // namespace cadrt
