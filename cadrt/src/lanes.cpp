// lanes.cpp - the lanes measured at init (lanes_upto(), push_upto()):
// whether the node's large transfers go through the lanes, and which are
// pushed.
#include "runtime.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "internal.h"
#include "verdicts.h"

namespace cadrt {

// A time measured for CADRT_VERBOSE: -1 for one not measured (INT64_MAX).
static long long ns(int64_t t) { return t == INT64_MAX ? -1ll : static_cast<long long>(t); }

// lanes_upto()'s verdict *upto as the test build may force it: " (CADRT_FAULT_LANES)"
// if it did, else "".
static const char *forced_lanes(uint64_t *upto) {
#ifdef CADRT_FAULT_INJECTION
  // In the test build only (CADRT_FAULT_LANES=faster or slower; any other
  // value leaves the measurement's verdict): the verdict given, whatever
  // was measured, so that the tests run both the branch where the lanes
  // serve (and the push classes measured next decide what is pushed) and
  // the one where they do not on every machine -- each measures one or
  // the other, and this sandbox has measured both within a day.
  if (const char *f = env("CADRT_FAULT_LANES"); f && (!strcmp(f, "faster") || !strcmp(f, "slower"))) {
    *upto = f[0] == 'f' ? UINT64_MAX : 0;
    return " (CADRT_FAULT_LANES)";
  }
#else
  (void)upto;
#endif
  return "";
}

// lanes_upto()'s measurement (CADRT_VERBOSE).
void Runtime::say_lanes(uint32_t partner, uint64_t upto, const int64_t *lane, const int64_t *read, const char *forced) const {
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
  std::vector<unsigned char> a(kLaneProbe[kLaneProbes - 1], 1), b(kLaneProbe[kLaneProbes - 1], 2);
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
  int64_t read[kLaneProbes], lane[kLaneProbes];
  for (int i = 0; i < kLaneProbes; i++) measure(kLaneProbe[i], &read[i], &lane[i]);
  for (int i = 0; i < kLaneProbes; i++) read_probe_ns[i] = ok && read[i] != INT64_MAX ? read[i] : 0;
  // (Lanes that win at 1 MiB serve every size.)
  uint64_t upto = lanes_limit(lane, read, ok);
  const char *forced = forced_lanes(&upto);
  lane_probe_ = {true, partner, upto, *forced != 0, {}, {}};
  std::copy(lane, lane + kLaneProbes, lane_probe_.lane_ns);
  std::copy(read, read + kLaneProbes, lane_probe_.read_ns);
  if (verbose) say_lanes(partner, upto, lane, read, forced);
  return upto;
}

namespace {

// One pair's push_upto() measurement: what both sides share, and the
// steps of a trial on either side.
struct PushProbe {
  static constexpr uint64_t kAbort = UINT64_MAX, kDone = UINT64_MAX - 1;  // (steps)
  RankInfo &mine, &theirs;
  Lane &lane;
  unsigned char *const buf;
  const uint32_t n, room;
  const int32_t pid;
  const int64_t give_up;
  bool ok = true;

  // Spins until f() (a partner descheduled -- more ranks than CPUs --
  // gets the CPU back by a yield).
  template <class F>
  bool until(F f) {
    for (int spins = 0; ok; spins++) {
      if (theirs.probe_step.load(std::memory_order_acquire) == kAbort || now_ns() > give_up) ok = false;
      else if (f()) break;
      else if (spins > 2000) sched_yield();
      else cpu_relax();
    }
    return ok;
  }
  uint64_t step() const { return theirs.probe_step.load(std::memory_order_acquire); }
  static uint64_t part(size_t len, uint64_t c) { return std::min<uint64_t>(kLaneChunk, len - c * kLaneChunk); }

  // The sender's trial k: the receiver's go, then its part, when it
  // finished, done.  False: the trials end.
  bool send(int how, size_t len, uint64_t k) {
    const uint64_t chunks = (len + kLaneChunk - 1) / kLaneChunk, splits = split_chunks(len);
    if (!until([&] { return step() >= k; })) return false;
    if (how == 0) {
      const uint64_t t0 = lane.tail.load(std::memory_order_relaxed);
      for (uint64_t c = 0; c < chunks && ok; c++) {
        if (!until([&] { return t0 + c - lane.head.load(std::memory_order_acquire) < room; })) break;
        memcpy(lane.chunk(c, n), buf + c * kLaneChunk, part(len, c));
        lane.tail.store(t0 + c + 1, std::memory_order_release);
      }
    } else if (splittable(len)) {
      const uint64_t dst = theirs.probe_buf.load(std::memory_order_relaxed);
      for (uint64_t c = 1; c < splits && ok; c += 2) {
        struct iovec l = {buf + c * kSplitChunk, kSplitChunk},
                     r = {reinterpret_cast<void *>(dst + c * kSplitChunk), kSplitChunk};
        ok = process_vm_writev(pid, &l, 1, &r, 1, 0) == static_cast<ssize_t>(kSplitChunk);
      }
    }
    if (!ok) return false;
    mine.probe_time.store(static_cast<uint64_t>(now_ns()), std::memory_order_relaxed);
    mine.probe_step.store(k, std::memory_order_release);
    return true;
  }

  // The receiver's trial k: the sender done with the last trial, go, its
  // part, the sender's part; its time the best in *push or *read.  False:
  // the trials end.
  bool receive(int how, size_t len, uint64_t k, int64_t *push, int64_t *read) {
    const uint64_t chunks = (len + kLaneChunk - 1) / kLaneChunk;
    const bool split_read = splittable(len);
    if (!until([&] { return step() >= k - 1; })) return false;
    const int64_t t0 = now_ns();
    mine.probe_step.store(k, std::memory_order_release);
    if (how == 0) {
      const uint64_t h0 = lane.head.load(std::memory_order_relaxed);
      for (uint64_t c = 0; c < chunks && ok; c++) {
        if (!until([&] { return lane.tail.load(std::memory_order_acquire) > h0 + c; })) break;
        memcpy(buf + c * kLaneChunk, lane.chunk(c, n), part(len, c));
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
    if (!ok || !until([&] { return this->step() >= k; })) return false;
    const int64_t sent = static_cast<int64_t>(theirs.probe_time.load(std::memory_order_relaxed));
    if (how == 0) *push = std::min(*push, (std::max(sent, t0) - t0 + done - t0) / 2);
    else *read = std::min(*read, std::max(sent, done) - t0);
    return true;
  }
};

}  // namespace

// Where a push (CADRT_PUSH=auto) beats the single copy it replaces, as a
// verdict per size class: bit i of the result set if pushes win from
// kPushProbe[i] up to the next (the last class has no end; sizes below
// the first are pushed as lanes_upto() decided), 0x100 set once measured;
// 0 on the pair's sender.  Pushed only for a caller that waits at once, a
// message would otherwise be read by its receiver and, from two split
// chunks on (256 KiB), split with its waiting sender (split.cpp,
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
  const bool sender = me < partner;
  RankInfo &mine = seg.rank(me), &theirs = seg.rank(partner);
  // Its pages at once (MAP_POPULATE): a fault per page costs more than
  // the mapping populated.  Then written once, so the timed copies find
  // the pages as a collective's buffers are.
  const size_t size = kPushProbe[kPushClasses - 1];
  void *map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (map == MAP_FAILED) {
    mine.probe_step.store(PushProbe::kAbort, std::memory_order_release);
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
  PushProbe p{mine, theirs, lane, buf, seg.nranks(), seg.lane_chunks(), theirs.pid.load(std::memory_order_relaxed),
              now_ns() + 50000000};
  mine.probe_buf.store(reinterpret_cast<uint64_t>(buf), std::memory_order_relaxed);
  // A lane left half-full (lanes_upto() gave up) is not measured through.
  if (sender && lane.head.load(std::memory_order_acquire) != lane.tail.load(std::memory_order_relaxed)) {
    mine.probe_step.store(PushProbe::kAbort, std::memory_order_release);
    return 0;
  }
  // The lane's pages mapped at once too, on either side (Linux 5.14 on;
  // where it fails, by the faults of the first trials).
  madvise(lane.chunk(0, p.n), static_cast<size_t>(p.room) * kLaneChunk, sender ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
  mine.probe_step.store(1, std::memory_order_release);
  int64_t push[kPushClasses], read[kPushClasses];
  uint64_t k = 1;  // the step: both at 1 (buffers published), then one a trial
  for (int i = 0; i < kPushClasses; i++) {
    const size_t len = kPushProbe[i];
    push[i] = read[i] = INT64_MAX;
    for (int how = 0; how < 2; how++)  // 0: pushed, 1: read (split from two chunks)
      for (int t = 0; t < kTrials; t++) {
        k++;
        if (sender ? !p.send(how, len, k) : !p.receive(how, len, k, &push[i], &read[i])) break;
      }
  }
  // Either side that fails tells the other at once; the sender leaves
  // when the receiver is done: its buffer is read no more.
  if (!p.ok) mine.probe_step.store(PushProbe::kAbort, std::memory_order_release);
  if (sender) {
    p.until([&] { return p.step() == PushProbe::kDone; });
    return 0;
  }
  if (p.ok) mine.probe_step.store(PushProbe::kDone, std::memory_order_release);
  // (A split costs more beside its copies -- its RTS, a claim per chunk,
  // the FIN -- than a push's protocol costs it.)
  const uint32_t mask = push_wins(push, read);
  push_probe_ = {true, partner, mask, {}, {}};
  std::copy(push, push + kPushClasses, push_probe_.push_ns);
  std::copy(read, read + kPushClasses, push_probe_.read_ns);
  if (verbose) {
    fprintf(stderr,
            "cadrt: rank %u: pushes from rank %u measured: 64 KiB, 256 KiB, 1 and 2 MiB pushed %lld, %lld, %lld, "
            "%lld ns; read (split from 256 KiB) %lld, %lld, %lld, %lld ns\n",
            me, partner, ns(push[0]), ns(push[1]), ns(push[2]), ns(push[3]), ns(read[0]), ns(read[1]), ns(read[2]),
            ns(read[3]));
  }
  return mask;
}

// A lane's receiver throws away what it holds (init_joined: nobody
// writes it then).
static void empty_lane(Lane &l) {
  const uint64_t tail = l.tail.load(std::memory_order_acquire);
  if (tail != l.head.load(std::memory_order_relaxed)) l.head.store(tail, std::memory_order_release);
}

// The lane settings (CADRT_BULK, CADRT_BULK_MIN, CADRT_BULK_MAX,
// CADRT_PUSH, CADRT_PUSH_MAX): *bad_out the first bad one's words (the
// rank then takes no lane), *want_bulk_out and *want_max_out as asked.
// Whether lanes (and Splits, in their headers) serve this node: local
// peers CMA can reach.  (init_joined)
bool Runtime::lane_settings(std::string *bad_out, std::string *want_bulk_out, uint64_t *want_max_out) {
  std::string &bad = *bad_out, &want_bulk = *want_bulk_out;
  want_bulk = env("CADRT_BULK") ? env("CADRT_BULK") : "auto";
  if (want_bulk != "0" && want_bulk != "1" && want_bulk != "auto") {
    bad = "CADRT_BULK=" + want_bulk + ": not 0, 1 or auto";
    want_bulk = "0";
  }
  uint64_t &want_max = *want_max_out;
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
  return lanes_here;
}

// The node's lanes and pushes, measured and agreed by its ranks: every
// local rank meets here, in both barriers.  (init_joined)
int Runtime::setup_lanes(const std::string &want_bulk, uint64_t want_max) {
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
  if (measure) agree_lanes(local, want_max);
  decide_pushes(local);
  return 0;
}

// Every lane to this rank emptied (init_joined).
void Runtime::empty_lanes() {
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

// The smallest limit any pair measured: lanes up to it (the receiver
// alone decides a grant, so ranks need not agree; they do, for one
// behaviour).  (setup_lanes)
void Runtime::agree_lanes(const std::vector<uint32_t> &local, uint64_t want_max) {
  std::vector<uint64_t> words;
  for (uint32_t ep : local) words.push_back(seg.rank(ep).lanes_upto.load());
  bool any = false;
  uint64_t upto = node_lanes_limit(words, &any);
  if (!any) upto = lanes_upto(nep);
  bulk_max = std::min(upto, want_max);
  bulk = bulk_max > bulk_min;
  lanes_agreed_ = {true, bulk, bulk_max};
  if (verbose) {
    if (!bulk) fprintf(stderr, "cadrt: rank %u: bulk lanes off\n", me);
    else if (bulk_max == UINT64_MAX) fprintf(stderr, "cadrt: rank %u: bulk lanes on\n", me);
    else fprintf(stderr, "cadrt: rank %u: bulk lanes on below %llu bytes\n", me, static_cast<unsigned long long>(bulk_max));
  }
}

// Whether large sends are pushed through the lanes (setup_lanes).
void Runtime::decide_pushes(const std::vector<uint32_t> &local) {
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
    if (verbose) say_pushes();
  } else {
    push_mode = Push::Never;
  }
}

// Which sends are pushed (CADRT_VERBOSE).
void Runtime::say_pushes() const {
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

}  // namespace cadrt
