// shm.cpp - see shm.h.
#include <sys/random.h>
#include <ctime>
#include "shm.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace cadrt {

namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

uint64_t ranks_offset() { return sizeof(Header); }
uint64_t rings_offset(uint32_t n) { return align_up(ranks_offset() + n * sizeof(RankInfo), 4096); }
uint64_t lanes_offset(uint32_t n) {
  return align_up(rings_offset(n) + static_cast<uint64_t>(n) * n * sizeof(Ring), 4096);
}

}  // namespace

// (Pages of shared memory are allocated as they are first touched: a lane
// costs memory only once a transfer has used it.)
uint64_t segment_size(uint32_t n) {
  return lanes_offset(n) + (n <= kLaneMaxRanks ? static_cast<uint64_t>(n) * n * lane_bytes(n) : 0);
}

bool Segment::map(int fd, bool create, uint32_t n, std::string *error) {
  if (create) {
    if (ftruncate(fd, static_cast<off_t>(segment_size(n))) != 0) {
      *error = std::string("cannot size the shared segment: ") + strerror(errno);
      return false;
    }
  } else {
    struct stat st;
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < sizeof(Header)) {
      *error = "the shared segment is missing or too small";
      return false;
    }
    void *p = mmap(nullptr, sizeof(Header), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      *error = std::string("cannot map the shared segment: ") + strerror(errno);
      return false;
    }
    const Header *h = static_cast<const Header *>(p);
    const bool ok = h->magic == kMagic && h->version == kVersion && h->nranks == n &&
                    h->size == segment_size(n) && static_cast<uint64_t>(st.st_size) >= h->size;
    munmap(p, sizeof(Header));
    if (!ok) {
      *error = "the shared segment is not a cadrt segment for " + std::to_string(n) + " ranks";
      return false;
    }
  }
  size_ = segment_size(n);
  void *p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *error = std::string("cannot map the shared segment: ") + strerror(errno);
    return false;
  }
  base_ = static_cast<unsigned char *>(p);
  n_ = n;
  if (create) {
    // The file is zero-filled: zero is every atomic's initial state.
    Header *h = new (base_) Header();
    h->magic = kMagic;
    h->version = kVersion;
    h->nranks = n;
    h->size = size_;
    if (getrandom(&h->job_key, sizeof h->job_key, 0) != sizeof h->job_key)
      h->job_key = (static_cast<uint64_t>(getpid()) << 32) ^ static_cast<uint64_t>(time(nullptr));
    for (uint32_t r = 0; r < n; r++) new (&rank(r)) RankInfo();
  }
  return true;
}

void Segment::unmap() {
  if (base_) munmap(base_, size_);
  base_ = nullptr;
}

RankInfo &Segment::rank(uint32_t r) const {
  return reinterpret_cast<RankInfo *>(base_ + ranks_offset())[r];
}

Ring &Segment::ring(uint32_t from, uint32_t to) const {
  return reinterpret_cast<Ring *>(base_ + rings_offset(n_))[static_cast<uint64_t>(from) * n_ + to];
}

Lane &Segment::lane(uint32_t from, uint32_t to) const {
  return *reinterpret_cast<Lane *>(base_ + lanes_offset(n_) + (static_cast<uint64_t>(from) * n_ + to) * lane_bytes(n_));
}

// A rank of the segment that will never come to a barrier: killed, or its
// process gone (it exited, before cadrt_init or after cadrt_finalize).  A
// rank that finalized and lives on (kExited, its pid there) may call
// cadrt_init again; one that never joined has no pid, and only cadrun,
// which saw it exit, says so.  (Ranks of other nodes are never written:
// kStarting.)
static bool gone(const RankInfo &ri) {
  const uint32_t st = ri.state.load(std::memory_order_acquire);
  return rank_failed(st) || (st == kExited && pid_gone(ri.pid.load(std::memory_order_relaxed)));
}

bool pid_gone(int32_t pid) { return pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH); }

int64_t Segment::barrier() {
  Header &h = header();
  const uint32_t gen = h.barrier_gen.load(std::memory_order_acquire);
  if (h.barrier_count.fetch_add(1, std::memory_order_acq_rel) + 1 == (members_ ? members_ : n_)) {
    h.barrier_count.store(0, std::memory_order_relaxed);
    h.barrier_gen.fetch_add(1, std::memory_order_release);
    futex_wake(&h.barrier_gen);
    return -1;
  }
  for (int spin = 0; h.barrier_gen.load(std::memory_order_acquire) == gen; spin++) {
    if (spin < 1000) {
      sched_yield();
      continue;
    }
    futex_wait(&h.barrier_gen, gen, 100);
    // Every 100 ms: whether a rank is gone.  (One that passed this barrier
    // and left since made the generation change before: looked at again.)
    // One that left on its own is named before one that failed (cadrun
    // sees a rank that exits with 0 as done, and ends the job only for
    // others: the first is more likely what the others failed for).
    int64_t found = -1;
    for (uint32_t r = 0; r < n_; r++) {
      if (!gone(rank(r))) continue;
      if (const uint32_t st = rank(r).state.load(std::memory_order_relaxed); st == kExited || st == kLeft) {
        found = r;
        break;
      }
      if (found < 0) found = r;
    }
    if (found >= 0 && h.barrier_gen.load(std::memory_order_acquire) == gen) return found;
  }
  return -1;
}

void futex_wait(std::atomic<uint32_t> *word, uint32_t expected, int timeout_ms) {
  struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, 0x7fffffff, nullptr, nullptr, 0);
}

}  // namespace cadrt
