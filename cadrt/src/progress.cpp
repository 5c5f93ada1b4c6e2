// progress.cpp - running requests: the DAG executor of the core drives
// each request; transfers go over the shared-memory rings, small ones
// eagerly in a slot, large ones by a single copy with process_vm_readv or
// process_vm_writev in the direction the program asks for (the receiver
// reads after an RTS, or the sender writes after a CTS), or, where CMA is
// not permitted, in fragments through the ring.
//
// Matching: a message names its collective (communicator ctx, sequence
// number seq) and its place in the program (tag, and occ: the k-th message
// of that (source, destination, tag)), so a send meets exactly the receive
// the compiler paired it with, whatever the timing.  A message whose
// operation is not posted yet waits in the unexpected queue of its source.
//
// See runtime.h for the rules progress() keeps (no heap, no blocking).
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "runtime.h"

namespace cadrt {

thread_local bool t_in_handler = false;
thread_local bool t_progress_thread = false;

#ifdef CADRT_FAULT_INJECTION
int g_fault_tell = 0;
long g_fault_split_us = 0, g_fault_split_in_us = 0, g_fault_split_read = 0;
#endif

namespace {

// Whether tell() is to find no room where it has some: in the test build
// only (rt_check_san, compiled with CADRT_FAULT_INJECTION), the first
// CADRT_FAULT_TELL times it runs in the signal handler.  What it stands
// for: a failure found in the handler while the pending pool is short of
// kReserve entries (many peers' rings full at once), which no test can
// bring about on purpose.
bool fault_no_room() {
#ifdef CADRT_FAULT_INJECTION
  return t_in_handler && g_fault_tell > 0 && g_fault_tell-- > 0;
#else
  return false;
#endif
}

// In the test build only (CADRT_FAULT_SPLIT_US, CADRT_FAULT_SPLIT_IN_US):
// the sender (the receiver) of a split copy stops that long after each
// chunk it claimed, before it copies it -- a side that lost its CPU
// there, which a loaded machine does now and then and no test can bring
// about on purpose.
void fault_split_pause(bool receiver, long times = 1) {
#ifdef CADRT_FAULT_INJECTION
  const long us = (receiver ? g_fault_split_in_us : g_fault_split_us) * times;
  if (us > 0) usleep(static_cast<useconds_t>(us));
#else
  (void)receiver;
  (void)times;
#endif
}

// In the test build only (CADRT_FAULT_SPLIT_READ=N): the first N chunks
// the receiver of a split copy claims fail to read (EFAULT), as when the
// sender's memory is gone.
bool fault_split_read() {
#ifdef CADRT_FAULT_INJECTION
  return g_fault_split_read > 0 && g_fault_split_read-- > 0;
#else
  return false;
#endif
}

// Enough entries for one step of progress (a message stored, a reply).
constexpr size_t kReserve = 8;

bool is_recv_side(uint32_t kind) { return kind == kEager || kind == kRts || kind == kFrag || kind == kPush; }

// A failure's message, built without the heap: messages are taken in the
// signal handler too, which may have interrupted malloc.  (A request's
// error string has room reserved for it, Runtime::bind.)  Cut at
// kWhyBytes - 1.
class Why {
 public:
  Why &operator<<(std::string_view s) {
    const size_t n = std::min(s.size(), sizeof buf_ - 1 - len_);
    memcpy(buf_ + len_, s.data(), n);
    len_ += n;
    return *this;
  }
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Why &operator<<(T v) {
    char t[24];
    char *e = t + sizeof t, *p = e;
    const bool neg = v < 0;
    uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      *--p = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (neg) *--p = '-';
    return *this << std::string_view(p, static_cast<size_t>(e - p));
  }
  operator std::string_view() const { return {buf_, len_}; }

 private:
  char buf_[kWhyBytes];
  size_t len_ = 0;
};

// Why a single copy failed, in the words of its likely cause (no locale,
// no heap: strerrordesc_np).
const char *cma_why(int err) {
  if (err == -ESRCH) return "the peer process has exited (it may have failed this collective first)";
  const char *d = strerrordesc_np(-err);
  return d ? d : "unknown error";
}

// What is wrong with a message for posted node n, nullptr if nothing.  A
// peer's slot is its own to write, so a broken (or hostile) peer could send
// anything: the header checked here is a copy, and nothing is copied
// before it passes.  done: the bytes of n's fragments already received.
// Output to a ring (or a lane) of `slots` entries waits for room: raise
// want_space, so that the consumer rings when it frees some (freed()), and
// look at head again.  The consumer may have freed slots after the
// producer's last look and read want_space before it was raised: then it
// rings nobody, and the output would wait for the next pass, after a sleep
// (Dekker: the consumer publishes head, fences, reads want_space).
// Whether it is still full; *head: what was read.
bool still_full(std::atomic<uint32_t> &want_space, const std::atomic<uint64_t> &head_word, uint64_t tail,
                uint64_t slots, uint64_t *head) {
  want_space.store(1, std::memory_order_seq_cst);
  *head = head_word.load(std::memory_order_seq_cst);
  return tail - *head >= slots;
}

const char *malformed(const MsgHeader &h, const cad_node &n, uint64_t done) {
  switch (h.kind) {
    case kEager:
      if (h.frag ? h.frag != h.len || h.frag > kPayload : h.len > kInline) return "an eager message longer than its slot";
      break;
    case kFrag:
      if (!h.frag || h.frag > kPayload || h.off > n.len || h.frag > n.len - h.off || h.frag > n.len - done)
        return "a fragment outside its message";
      break;
  }
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------- pool

Entry *Pool::get() {
  Entry *e = free_;
  if (e) {
    free_ = e->next;
    free_n_--;
    e->next = nullptr;
  }
  return e;
}

void Pool::put(Entry *e) {
  e->next = free_;
  free_ = e;
  free_n_++;
}

void Pool::grow(size_t n) {
  Entry *chunk = static_cast<Entry *>(::operator new(n * sizeof(Entry)));
  chunks_.push_back(chunk);
  for (size_t i = 0; i < n; i++) put(&chunk[i]);
}

Pool::~Pool() {
  for (Entry *c : chunks_) ::operator delete(c);
}

void Queue::push(Entry *e) {
  e->next = nullptr;
  if (tail) tail->next = e;
  else head = e;
  tail = e;
}

Entry *Queue::pop() {
  Entry *e = head;
  if (e) {
    head = e->next;
    if (!head) tail = nullptr;
    e->next = nullptr;
  }
  return e;
}

// ---------------------------------------------------------------- rings

// Tells ep that something came (see shm.h on waking).  A computing peer
// (outside the library, collectives active) is interrupted -- signalled
// under the signal engine, its progress thread woken under the thread
// engine -- only for urgent messages: the steps of the transfers of a
// collective of at least kick_min bytes (its largest buffer here: what the
// interrupt may unlock is the transfer and what follows it, a reduction,
// the next step), room in a ring.  An interrupt is dear: on the 2-core
// virtual machine of bench/results/interrupts.json tgkill takes the sender
// 11 us and the handler runs 17 us later, a futex wake-up of a thread on a
// busy CPU takes 26 us, and a CPU loses 35 us of work per timer signal,
// while 64 KiB are copied in 1.8 us and 1 MiB in 35 us; so a smaller
// collective waits for the peer's next call, which is sooner and cheaper, or
// for its helper's next look (every 100 ms).  A main thread asleep in the
// library waiting is woken for every message.
CADRT_HOT void Runtime::ring(uint32_t ep, bool urgent) {
  RankInfo &ri = seg.rank(ep);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // (Not a rank that left: its pid may run another program now, which
  // the signal would kill.  A rank marked dead may be one a peer found
  // corrupt, alive and asleep here: it is woken.)
  if (ri.state.load(std::memory_order_relaxed) == kLeft) return;
  if (ri.armed.load(std::memory_order_relaxed)) {
    if (!urgent) return;
    if (ri.kicked.exchange(1, std::memory_order_acq_rel)) return;  // one is on its way
    if (syscall(SYS_tgkill, ri.pid.load(std::memory_order_relaxed), ri.tid.load(std::memory_order_relaxed),
                ri.signo.load(std::memory_order_relaxed)) == 0) {
      n_kicks.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    ri.kicked.store(0, std::memory_order_relaxed);  // not permitted: wake its helper instead
  }
  // Its main thread asleep in the library: every message wakes it.  Else
  // its helper, if it sleeps, for an urgent message while the main thread
  // computes (polling, the one word that changes with every call, is read
  // only then: shm.h).
  // (Counted apart: waking a main thread that waits in the library is
  // not an interrupt, and tests that a computing rank was left alone
  // count only its helper's wake-ups.)
  const bool in_library = ri.asleep.load(std::memory_order_relaxed);
  if (!in_library) {
    if (!urgent || !ri.sleepers.load(std::memory_order_relaxed)) return;
    if (ri.polling.load(std::memory_order_relaxed) != kRankOutside) return;
  }
  ri.bell.fetch_add(1, std::memory_order_release);
  futex_wake(&ri.bell);
  (in_library ? n_waiter_wakes : n_wakes).fetch_add(1, std::memory_order_relaxed);
}

bool Runtime::room() {
  if (pool_.free_count() >= kReserve) return true;
  if (t_in_handler) return false;
  pool_.grow(256);
  return true;
}

// Sends a message to ep: into its ring now, or, if the ring is full (or
// older output waits), into the pending queue in order.  room() must have
// been checked.
//
// A request is not complete while one of its messages waits here: under
// the poll engine, or when the program goes off into other work, nobody
// would send it, and a peer would wait for ever.  So a request completes
// only once everything it sends is in the peers' rings.
CADRT_HOT void Runtime::push(uint32_t ep, const MsgHeader &header, const void *payload, uint32_t n, cadrt_request_s *owner) {
  MsgHeader inl;
  const MsgHeader *hp = &header;
  if (header.kind == kEager && n > 0 && n <= kInline) {  // in the header (shm.h)
    inl = header;
    memcpy(inline_bytes(inl), payload, n);
    hp = &inl;
    n = 0;
  }
  const MsgHeader &h = *hp;
  // Held here until it can go: in netq_ for a rank on another node (sent by
  // net_progress()), in pending_ while the ring is full.
  auto hold = [&](Queue &q) {
    Entry *e = pool_.get();
    e->ep = ep;
    e->owner = owner;
    e->net = nullptr;
    if (owner) owner->unsent++;
    e->slot.h = h;
    e->slot.h.frag = n;
    if (n) memcpy(e->slot.payload, payload, n);
    q.push(e);
  };
  if (remote(ep)) {
    hold(netq_);
    return;
  }
  Ring &q = seg.ring(me, ep);
  if (pending_[ep].empty()) {
    const uint64_t tail = q.tail.load(std::memory_order_relaxed);
    uint64_t &head = head_seen_[ep];
    if (tail - head >= kSlots) head = q.head.load(std::memory_order_acquire);
    if (tail - head < kSlots) {
      publish(q.slots[tail % kSlots], h, payload, n, tail);
      q.tail.store(tail + 1, std::memory_order_release);
      ring(ep, h.kind != kEager && owner && owner->inst->size >= kick_min);
      return;
    }
  }
  hold(pending_[ep]);
  waiting_output.fetch_add(1, std::memory_order_relaxed);
  uint64_t head;
  if (!still_full(q.want_space, q.head, q.tail.load(std::memory_order_relaxed), kSlots, &head)) flush_pending();
}

CADRT_HOT bool Runtime::flush_pending() {
  bool moved = false;
  for (uint32_t ep = 0; ep < nep; ep++) {
    Queue &pq = pending_[ep];
    if (pq.empty()) continue;
    Ring &q = seg.ring(me, ep);
    uint64_t tail = q.tail.load(std::memory_order_relaxed);
    uint64_t head = q.head.load(std::memory_order_acquire);
    bool pushed = false;
    for (;;) {
      while (!pq.empty() && tail - head < kSlots) {
        Entry *e = pq.pop();
        publish(q.slots[tail % kSlots], e->slot.h, e->slot.payload, e->slot.h.frag, tail);
        tail++;
        if (e->owner) e->owner->unsent--;
        pool_.put(e);
        waiting_output.fetch_sub(1, std::memory_order_relaxed);
        pushed = true;
      }
      if (pq.empty() || still_full(q.want_space, q.head, tail, kSlots, &head)) break;
    }
    head_seen_[ep] = head;
    if (pushed) {
      q.tail.store(tail, std::memory_order_release);
      ring(ep, true);
      moved = true;
    }
  }
  return moved;
}

bool Runtime::output_deliverable() const {
  for (uint32_t ep = 0; ep < nep; ep++)
    if (!pending_[ep].empty() && seg.rank(ep).state.load(std::memory_order_acquire) < kExited) return true;
  for (const cadrt_request_s *r = active_; r; r = r->next)
    if (!r->outgoing.empty()) return true;
  return false;
}

// (Called by helpers too, with a head that may be stale: a slot already
// taken and rewritten reads as corrupt, a true, which costs a pass.)
bool Runtime::incoming() const {
  for (uint32_t ep = 0; ep < nep; ep++) {
    if (ep == me) continue;
    const Ring &q = seg.ring(ep, me);
    const uint64_t head = q.head.load(std::memory_order_relaxed);
    if (slot_state(q.slots[head % kSlots], head) != kSlotEmpty) return true;
  }
  return false;
}

CADRT_HOT bool Runtime::poll_incoming() {
  bool moved = false;
  for (uint32_t ep = 0; ep < nep; ep++) {
    // A peer just found corrupt: nothing more from it until check_corrupt()
    // has failed the requests with that error.
    const auto broken = [&] { return corrupt_new_ && (corrupt_[ep].found || corrupt_lane_[ep]); };
    if (ep == me || broken()) continue;
    Ring &q = seg.ring(ep, me);
    const uint64_t first = q.head.load(std::memory_order_relaxed);
    uint64_t head = first;
    // (At most a ring's worth: the producer refills none of these slots
    // before head is published.)
    while (room()) {
      Slot &s = q.slots[head % kSlots];
      uint16_t stamp;
      const SlotState st = slot_state(s, head, &stamp);
      if (st == kSlotEmpty) break;
      if (st == kSlotCorrupt) {
        // Only a broken peer writes this: nothing in its ring can be trusted.
        // (No text here: this may run in a signal handler.)
        if (!corrupt_[ep].found) {
          corrupt_[ep] = {true, stamp, head};
          corrupt_new_ = true;
          seg.rank(ep).state.store(kDead, std::memory_order_release);
        }
        break;
      }
      dispatch(ep, s);
      head++;
      if (broken()) break;  // (granting the lane it sent through, say)
    }
    if (head == first) continue;
    moved = true;
    q.head.store(head, std::memory_order_release);
    freed(q.want_space, ep);
  }
  return moved;
}

// The consumer published a new head: ring the producer if it waits for
// room (the other side of still_full()).
void Runtime::freed(std::atomic<uint32_t> &want_space, uint32_t ep) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (want_space.load(std::memory_order_relaxed)) {
    want_space.store(0, std::memory_order_relaxed);
    ring(ep, true);
  }
}

// ---------------------------------------------------------------- matching

cadrt_request_s *Runtime::find_active(uint64_t ctx, uint64_t seq) {
  for (cadrt_request_s *r = active_; r; r = r->next)
    if (r->comm->ctx == ctx && r->seq == seq) return r;
  return nullptr;
}

bool Runtime::recently_failed(uint64_t ctx, uint64_t seq) const {
  if (!failed_next_) return false;  // nothing failed yet
  for (const auto &k : failed_)
    if (k.first == ctx && k.second == seq) return true;
  return false;
}

// The kind of node a message that may wait for its node's post moves on:
// data and the receiver's FIN for a RECV, kCts and kFinSend for a SEND.
static uint8_t node_kind(uint32_t kind) {
  switch (kind) {
    case kEager: case kRts: case kFrag: case kPush: case kFinRecv: return CAD_NODE_RECV;
    default: return CAD_NODE_SEND;  // kCts, kFinSend
  }
}

// The request and node a message is for, if it is posted; -1 otherwise.
int64_t Runtime::target(const MsgHeader &h, uint32_t ep, cadrt_request_s **out) {
  cadrt_request_s *r = find_active(h.ctx, h.seq);
  *out = r;
  if (!r || h.kind == kAbort) return -1;
  const int32_t peer = r->comm->rank_of(ep);
  if (peer < 0) return -1;
  const int64_t node = r->inst->find(node_kind(h.kind), static_cast<uint32_t>(peer), h.tag, h.occ);
  if (node < 0) return -1;
  // Posted, and in the state this message moves on from.
  if (r->ex.state[node] != CAD_NS_ISSUED) return -1;
  const uint8_t st = r->xfer[node].state;
  switch (h.kind) {
    case kRts:
      if (st == kOffered) return node;  // (withdrawn in handle)
      if (st != kWaitData) return -1;
      if (hold_rts(r, static_cast<uint32_t>(node), ep)) {
        r->redrain = true;  // looked at again by the next pass
        return -1;
      }
      return node;
    case kEager: case kFrag: case kPush: return st == kWaitData || st == kOffered ? node : -1;
    case kCts: return st == kWaitCts ? node : -1;
    case kFinRecv: return st == kWaitFin || st == kOffered ? node : -1;
    default: return st == kWaitFin ? node : -1;
  }
}

// (A GRANT answers an RTS too: the receiver will not read.)
static bool is_answer(uint32_t kind) {
  return kind == kFinSend || kind == kFinRecv || kind == kRelSend || kind == kRelRecv || kind == kGrant;
}

CADRT_HOT void Runtime::dispatch(uint32_t ep, const Slot &s) {
  const MsgHeader h = s.h;  // a copy: the slot is the peer's to rewrite
  cadrt_request_s *r = find_active(h.ctx, h.seq);
  if (r && r->draining) {
    if (h.kind == kAbort) aborted(r, ep);
    else if (is_answer(h.kind)) answered(r, ep, h);
    else release(ep, h);
    return;
  }
  if (recently_failed(h.ctx, h.seq)) {
    release(ep, h);
    return;
  }
  const int64_t node = target(h, ep, &r);
  if (r && h.kind == kAbort) {
    // (Told on: a peer may wait for this rank's answer, see aborted.)
    note_abort(r, ep);
    fail(r, -ECANCELED,
         std::string_view(reinterpret_cast<const char *>(s.payload), std::min<uint32_t>(h.frag, kPayload)), true);
    return;
  }
  if (h.kind == kRelSend || h.kind == kRelRecv) {
    // The peer failed this collective (its ABORT, with the reason, did
    // not get through); nothing to answer if it is not running here.
    if (r) {
      give_up(r, ep, h, -ECANCELED,
              Why() << "rank " << r->comm->rank_of_ep[ep] << " gave up collective #" << h.seq << " of the communicator");
    }
    return;
  }
  if (r && disagree(r, ep, h)) return;
  if (node >= 0) {
    handle(r, static_cast<uint32_t>(node), ep, h, s.payload);
    return;
  }
  // Both answer an RTS, so their send waits for them: only a broken peer
  // sends one for no such send.
  if (h.kind == kGrant || h.kind == kSplit) return;
  Entry *e = pool_.get();  // room() was checked by the caller
  e->ep = ep;
  e->slot.h = h;
  e->slot.h.frag = std::min<uint32_t>(h.frag, kPayload);  // what is kept of it
  if (e->slot.h.frag) memcpy(e->slot.payload, s.payload, e->slot.h.frag);
  unexpected_[ep].push(e);
}

// Whether the peer at ep runs another instance of r's collective (its
// message says so): if so, r gives up, naming both.  Checked as a message
// comes for an active request, and again for one that came before r was
// started and waited in the unexpected queue (a progress thread, or a call
// for another request, took it in): its length may well match -- a MAX for
// a SUM -- and the rank would complete with a wrong result.
bool Runtime::disagree(cadrt_request_s *r, uint32_t ep, const MsgHeader &h) {
  if (r->from_cad || h.fp == r->inst->fp) return false;
  give_up(r, ep, h, -EINVAL,
          Why() << "ranks disagree on collective #" << h.seq
                << " of their communicator (count, root, datatype, op, in place, algorithm or its parameters, topology): rank "
                << r->comm->rank << " runs " << r->inst->desc << ", rank " << r->comm->rank_of_ep[ep] << " another");
  return true;
}

// Is h (a message that waits in the unexpected queue) for the node with
// this kind and occurrence?  The cheap half of target(): no lookup.
// (An ABORT is for no node: start() looks for those.)
static bool for_node(const MsgHeader &h, const cad_node &n, uint32_t occ) {
  return h.kind != kAbort && h.tag == n.tag && h.occ == occ && node_kind(h.kind) == n.kind;
}

// Messages for r that arrived before r's nodes were posted.  Without room
// for a reply (in the signal handler), the rest waits for the next pass.
// A post drains for its own node only: when a sender runs ahead (a
// pipeline whose receiver was not running, 8 ranks on 2 CPUs), the queue
// holds a message for each of its thousand segments, and looking each up
// (target()) on each of the thousand posts made a broadcast of 400 KB
// take seconds.
void Runtime::drain_unexpected(cadrt_request_s *r, uint32_t ep, int64_t node) {
  Queue &uq = unexpected_[ep];
  Queue keep;
  const cad_node *only = node >= 0 ? &r->inst->prog.nodes[node] : nullptr;
  const uint32_t only_occ = node >= 0 ? r->inst->occ[static_cast<size_t>(node)] : 0;
  while (Entry *e = uq.pop()) {
    cadrt_request_s *t = nullptr;
    const bool mine = e->slot.h.ctx == r->comm->ctx && e->slot.h.seq == r->seq &&
                      (!only || for_node(e->slot.h, *only, only_occ));
    if (mine && !r->done && !room()) {
      r->redrain = true;
      keep.push(e);
      continue;
    }
    const int64_t node = mine && !r->done ? target(e->slot.h, ep, &t) : -1;
    if (node >= 0 && t == r) {
      if (!disagree(r, ep, e->slot.h)) handle(r, static_cast<uint32_t>(node), ep, e->slot.h, e->slot.payload);
      pool_.put(e);
    } else {
      keep.push(e);
    }
  }
  uq = keep;
}

// ---------------------------------------------------------------- transfers

unsigned char *Runtime::at(cadrt_request_s *r, uint32_t buf, uint64_t off) { return r->bufs[buf] + off; }

MsgHeader Runtime::header(cadrt_request_s *r, uint32_t node, uint32_t kind) {
  const cad_node &n = r->inst->prog.nodes[node];
  MsgHeader h{};
  h.kind = kind;
  h.tag = n.tag;
  h.ctx = r->comm->ctx;
  h.seq = r->seq;
  h.occ = r->inst->occ[node];
  h.len = n.len;
  h.fp = r->inst->fp;
  return h;
}

bool Runtime::cma_copy(bool read, uint32_t ep, void *local, uint64_t remote, uint64_t len, int *err) {
  const pid_t pid = seg.rank(ep).pid.load(std::memory_order_relaxed);
  uint64_t done = 0;
  while (done < len) {
    struct iovec l = {static_cast<char *>(local) + done, len - done};
    struct iovec rv = {reinterpret_cast<void *>(remote + done), len - done};
    const ssize_t n = read ? process_vm_readv(pid, &l, 1, &rv, 1, 0) : process_vm_writev(pid, &l, 1, &rv, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = -errno;
      return false;
    }
    if (n == 0) {
      *err = -EFAULT;
      return false;
    }
    done += static_cast<uint64_t>(n);
  }
  return true;
}

void Runtime::complete(cadrt_request_s *r, uint32_t node) {
  r->xfer[node].state = kIdle;
  cad_exec_complete(&r->ex, node);
}

// A message for a posted node.
void Runtime::handle(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h,
                     const unsigned char *payload) {
  const cad_node &n = r->inst->prog.nodes[node];
  const int peer = r->comm->rank_of_ep[ep];
  // (A FIN for a receive the sender took carries its clock too, like an
  // RTS: when it took the offer.)
  if (static_cast<int64_t>(node) == r->rdv_node &&
      (h.kind == kRts || h.kind == kCts || (h.kind == kFinRecv && r->xfer[node].state == kOffered)))
    learn(r, h);
  if (is_recv_side(h.kind) && h.len != n.len) {
    give_up(r, ep, h, -EMSGSIZE,
            Why() << "rank " << r->comm->rank << " receives " << n.len << " bytes from rank " << peer << " (tag "
                  << n.tag << "), which sends " << h.len);
    return;
  }
  if (const char *bad = malformed(h, n, r->xfer[node].done)) {
    give_up(r, ep, h, -EPROTO,
            Why() << "rank " << peer << " sent " << bad << " to rank " << r->comm->rank << " (tag " << n.tag << ", "
                  << n.len << " bytes)");
    return;
  }
  if (r->xfer[node].state == kOffered) {
    // The data itself, or an RTS: the sender did not take the offer (it
    // posted before it could see it), so the offer is withdrawn and the
    // receive goes on as any other.  A FIN: the sender took it, and wrote.
    const bool written = h.kind == kFinRecv;
    if (withdraw(r, node) == written) {
      give_up(r, ep, h, -EPROTO,
              Why() << "rank " << peer << " sent rank " << r->comm->rank << " a "
                    << (written ? "FIN for a receive it did not take" : "message for a receive it had taken")
                    << " (tag " << n.tag << ", " << n.len << " bytes)");
      return;
    }
    if (written) {
      offer_free(r, node);
      n_cma.fetch_add(1, std::memory_order_relaxed);
      n_offers_written.fetch_add(1, std::memory_order_relaxed);
      complete(r, node);
      return;
    }
    r->xfer[node].state = kWaitData;
  }
  int err = 0;
  switch (h.kind) {
    case kEager:
      if (h.len) memcpy(at(r, n.dst_buf, n.dst_off), eager_bytes(h, payload), h.len);
      complete(r, node);
      break;
    case kFrag:
      memcpy(at(r, n.dst_buf, n.dst_off) + h.off, payload, h.frag);
      r->xfer[node].done += h.frag;
      if (r->xfer[node].done == n.len) {
        n_frag.fetch_add(1, std::memory_order_relaxed);
        complete(r, node);
      }
      break;
    case kPush:
      push_in(r, node, ep, h);
      break;
    case kRts:
      if (grant(r, node, ep)) {
        n_lane.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      n_cma.fetch_add(1, std::memory_order_relaxed);
      if (split_in(r, node, ep, h)) break;
      if (!cma_copy(true, ep, at(r, n.dst_buf, n.dst_off), h.addr, h.len, &err)) {
        give_up(r, ep, h, -EPIPE,
                Why() << "reading " << h.len << " bytes from rank " << peer << " failed: " << cma_why(err));
        return;
      }
      push(ep, header(r, node, kFinSend), nullptr, 0, r);
      complete(r, node);
      break;
    case kCts:
      // Also over CMA: a longer CTS would make this rank read past its
      // source and write that into the peer.
      if (h.len != n.len) {
        give_up(r, ep, h, -EMSGSIZE,
                Why() << "rank " << r->comm->rank << " sends " << n.len << " bytes to rank " << peer << " (tag "
                      << n.tag << "), which receives " << h.len);
        return;
      }
      if (remote(ep)) {
        r->xfer[node].token = h.addr;  // the receiver's tag
        r->xfer[node].state = kNetSend;
        r->netwait.push_back(node);
        break;
      }
      if (!cma_copy(false, ep, at(r, n.src_buf, n.src_off), h.addr, h.len, &err)) {
        give_up(r, ep, h, -EPIPE,
                Why() << "writing " << h.len << " bytes to rank " << peer << " failed: " << cma_why(err));
        return;
      }
      push(ep, header(r, node, kFinRecv), nullptr, 0, r);
      complete(r, node);
      break;
    case kGrant:
      // The receiver takes the data through the lane to it, which must be
      // empty: our tail where its head is.
      if (h.len != n.len || h.off != seg.lane(me, ep).tail.load(std::memory_order_relaxed)) {
        give_up(r, ep, h, -EPROTO,
                Why() << "rank " << peer << " granted rank " << r->comm->rank << " a lane that is not empty (tag "
                      << n.tag << ", " << n.len << " bytes)");
        return;
      }
      lane_out(r, node, h.off);
      break;
    case kSplit:
      split_out(r, node, ep, h);
      break;
    default:  // kFinSend, kFinRecv
      complete(r, node);
      break;
  }
}

// Only an exchange goes through a lane: a transfer between two ranks that
// send each other data in the collective (alltoall, the steps of an
// allreduce).  There both CPUs copy whichever way, and the two copies of a
// lane cost less than one single copy.  A one-way transfer (an edge of a
// broadcast tree) is read by the receiver alone: the sender, with nothing
// left to do in it, may compute meanwhile.
bool Runtime::lane_fits(const cadrt_request_s *r, uint32_t node, uint32_t ep) const {
  const cad_node &n = r->inst->prog.nodes[node];
  return bulk && n.len >= bulk_min && n.len < bulk_max && !remote(ep) && lane_in_[ep] == kLaneFree && !t_in_handler &&
         r->inst->sends_to_peer(n.peer);
}

// A lane needs both ranks, and a rank in the library now may be back at
// its work in a moment.  An RTS is taken through the lane when both wait
// (grant()).  When the sender waits and this rank does not (it starts or
// tests), the receiver reads with CMA at once, so that the sender can go
// (unless this rank starts and the message fits in the lane, see grant()).
// When the sender is in the library but does not wait (it starts the
// collective too, say), the RTS waits for a while: throughout this rank's
// start, then kHoldNs from when it was first seen (ranks reach a
// collective together: the sender is likely to wait soon).  Otherwise --
// the sender away at its work, the time up, this rank in the signal
// handler or the lane in use -- the receiver reads with CMA, on its own.
bool Runtime::hold_rts(cadrt_request_s *r, uint32_t node, uint32_t ep) {
  constexpr int64_t kHoldNs = 10000;
  if (!lane_fits(r, node, ep)) return false;
  const RankInfo &peer = seg.rank(ep);
  if (peer.committed.load(std::memory_order_relaxed)) return false;  // a grant, or CMA at once
  if (peer.polling.load(std::memory_order_relaxed) != kRankPolling) return false;
  Xfer &x = r->xfer[node];
  const int64_t t = now_ns();
  if (!x.token) x.token = static_cast<uint64_t>(t);  // (kWaitData: token is free)
  return r == starting_ || t - static_cast<int64_t>(x.token) < kHoldNs;
}

bool Runtime::grant(cadrt_request_s *r, uint32_t node, uint32_t ep) {
  const cad_node &n = r->inst->prog.nodes[node];
  // Both ranks must stay to make their copies: this one waits (not in a
  // start or a test, after which it may compute for a long time), and so
  // does the sender.  Else the receiver's single copy is the better deal.
  // Or this rank starts the collective and the message fits in the lane:
  // the sender (which waits) puts it all in and completes on its own, and
  // this rank takes it out at its next call.
  const bool fits = n.len <= static_cast<uint64_t>(seg.lane_chunks()) * kLaneChunk;
  if (!lane_fits(r, node, ep) || !seg.rank(ep).committed.load(std::memory_order_relaxed) ||
      (committed_.load(std::memory_order_relaxed) <= 0 && !(r == starting_ && fits)))
    return false;
  MsgHeader h = header(r, node, kGrant);
  h.off = seg.lane(ep, me).head.load(std::memory_order_relaxed);
  push(ep, h, nullptr, 0, r);
  lane_in(r, node, ep, h.off);
  return true;
}

// A transfer through a lane, from its first chunk: the receiver's side
// (granted, or pushed into) and the sender's (granted, or pushing).
void Runtime::lane_in(cadrt_request_s *r, uint32_t node, uint32_t ep, uint64_t first) {
  Xfer &x = r->xfer[node];
  x.state = kBulkIn;
  x.done = 0;
  x.token = first;
  lane_in_[ep] = kLaneGranted;
  r->outgoing.push_back(node);  // (input: not counted in waiting_output)
  bulk_in(r, node);
}

void Runtime::lane_out(cadrt_request_s *r, uint32_t node, uint64_t first) {
  Xfer &x = r->xfer[node];
  x.state = kBulkOut;
  x.done = 0;
  x.token = first;
  r->outgoing.push_back(node);
  waiting_output.fetch_add(1, std::memory_order_relaxed);
  bulk_out(r, node);
}

// The sender's side of a granted lane: chunks in while it has room (each
// published at once, so that the receiver copies one out while the next
// goes in).
bool Runtime::bulk_out(cadrt_request_s *r, uint32_t node) {
  const cad_node &n = r->inst->prog.nodes[node];
  const uint32_t ep = r->comm->ep[n.peer];
  Lane &l = seg.lane(me, ep);
  const uint32_t chunks = seg.lane_chunks();
  Xfer &x = r->xfer[node];
  uint64_t tail = l.tail.load(std::memory_order_relaxed);
  uint64_t head = l.head.load(std::memory_order_acquire);
  bool moved = false;
  for (;;) {
    if (tail - head > chunks) {  // (a head past the tail wraps too)
      lane_corrupt(ep, tail - head);
      return moved;
    }
    while (x.done < n.len && tail - head < chunks) {
      const uint64_t part = std::min<uint64_t>(kLaneChunk, n.len - x.done);
      memcpy(l.chunk(tail - x.token, seg.nranks()), at(r, n.src_buf, n.src_off) + x.done, part);
      x.done += part;
      l.tail.store(++tail, std::memory_order_release);
      moved = true;
    }
    if (x.done == n.len || still_full(l.want_space, l.head, tail, chunks, &head)) break;
  }
  if (moved) ring(ep, r->inst->size >= kick_min);  // (as for the messages of a transfer)
  if (x.done == n.len) out_done(r, node);
  return moved;
}

// The receiver's side: chunks out as they come.  It knows how many are to
// come (the length it posted), so a tail past them is a broken peer's.
bool Runtime::bulk_in(cadrt_request_s *r, uint32_t node) {
  const cad_node &n = r->inst->prog.nodes[node];
  const uint32_t ep = r->comm->ep[n.peer];
  Lane &l = seg.lane(ep, me);
  Xfer &x = r->xfer[node];
  uint64_t head = l.head.load(std::memory_order_relaxed);
  const uint64_t tail = l.tail.load(std::memory_order_acquire);
  const uint64_t to_come = (n.len - x.done + kLaneChunk - 1) / kLaneChunk;
  if (tail - head > std::min<uint64_t>(seg.lane_chunks(), to_come)) {
    lane_corrupt(ep, tail - head);
    return false;
  }
  bool moved = false;
  while (head != tail) {
    const uint64_t part = std::min<uint64_t>(kLaneChunk, n.len - x.done);
    memcpy(at(r, n.dst_buf, n.dst_off) + x.done, l.chunk(head - x.token, seg.nranks()), part);
    x.done += part;
    l.head.store(++head, std::memory_order_release);
    moved = true;
  }
  if (moved) freed(l.want_space, ep);
  if (x.done == n.len) {
    lane_in_[ep] = kLaneFree;
    out_done(r, node);
  }
  return moved;
}

// Where CMA is not permitted, a large local message is pushed through
// the lane from its sender to its receiver (both copy, as with the
// fragments, but in 64 KiB chunks with one message on the ring for the
// whole transfer), when that lane is empty: the last push through it
// finished, and the receiver took every chunk out.  The sender does not
// wait for the receive to be posted; the chunks wait in the lane.  One
// message at a time: a second message to the same rank meanwhile goes in
// fragments, so a receiver that takes the second first is never stuck
// behind the first.
bool Runtime::push_fits(const cadrt_request_s *r, uint32_t node, uint32_t ep) const {
  const cad_node &n = r->inst->prog.nodes[node];
  if (!push_lanes || n.len < bulk_min || remote(ep) || lane_out_[ep] != kLaneFree) return false;
  if (cma && !push_with_cma(r, node)) return false;
  const Lane &l = seg.lane(me, ep);
  return l.head.load(std::memory_order_acquire) == l.tail.load(std::memory_order_relaxed);
}

// With CMA, a send is pushed (CADRT_PUSH, default auto) unless its
// program asks the sender to write (the receiver sends a CTS for it), it
// is CADRT_PUSH_MAX bytes or more, or it is half a lane or more and part
// of an exchange (both ranks push, and each must wait for the other to
// take chunks out, which is slower than the receivers' reads).  Under
// auto, for an instance whose caller waited at once the last time
// (first_look).  A caller that computes between its start and its wait
// pushes one-way sends below kComputingPushMax only: there the two
// memcpys cost the two CPUs less than the receiver's process_vm_readv
// costs it alone, and a pushing root's send completes when its chunks are
// in, not when a late receiver has read them (rt_bench's ibcast overlap
// at 64 KiB).  From kComputingPushMax such a caller keeps the receiver's
// single copy, which leaves the sender's CPU to its work; and so do its
// exchanges, whose two sides both compute.  Under auto a one-way send is
// pushed only in a size class where the node's pairs measured one-way
// pushes faster (push_classes, Runtime::push_upto); an exchange keeps its
// own rule, as the pairs do not time exchanges.  An exchange is pushed
// below bulk_max only: what lanes_upto() timed for exchanges through the
// lanes, or CADRT_BULK_MAX.
bool Runtime::pushes(uint64_t len, bool exchange, bool computes) const {
  if (len >= push_max) return false;
  if (computes && (exchange || len >= kComputingPushMax)) return false;
  if (exchange) return len < static_cast<uint64_t>(seg.lane_chunks()) * kLaneChunk / 2 && len < bulk_max;
  return class_pushed(len);
}

bool Runtime::push_with_cma(const cadrt_request_s *r, uint32_t node) const {
  const cad_node &n = r->inst->prog.nodes[node];
  if (n.flags & CAD_XFER_SENDER_WRITES) return false;
  const bool computes = push_mode == Push::AtOnce && !r->inst->waits_at_once.load(std::memory_order_relaxed);
  const std::vector<uint8_t> &from = r->inst->recvs_from;
  return pushes(n.len, n.peer < from.size() && from[n.peer], computes);
}

// A receive whose sender pushes it whatever its caller does, as far as
// the receiver can tell: with CMA, one-way (this rank sends that one
// nothing), not hinted for the sender to write, the lane from that rank
// empty, and a size the sender pushes even when its caller computes (the
// stricter case of pushes()).  The sender's bulk_min and push_max are its
// own settings: a receiver whose environment differs mispredicts, which
// only keeps or skips a rendezvous wait in its start.
bool Runtime::comes_pushed(const cadrt_request_s *r, uint32_t node, uint32_t ep) const {
  const cad_node &n = r->inst->prog.nodes[node];
  if (!cma || !push_lanes || push_mode == Push::Never || n.len < bulk_min || (n.flags & CAD_XFER_SENDER_WRITES) ||
      r->inst->sends_to_peer(n.peer) || lane_in_[ep] != kLaneFree)
    return false;
  return pushes(n.len, false, true);
}

// The receiver's side of a PUSH: the lane must be empty, its data
// starting at our head.
void Runtime::push_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  if (lane_in_[ep] != kLaneFree || h.off != seg.lane(ep, me).head.load(std::memory_order_relaxed)) {
    give_up(r, ep, h, -EPROTO,
            Why() << "rank " << r->comm->rank_of_ep[ep] << " pushed a message into a lane to rank " << r->comm->rank
                  << " that is not empty (tag " << r->inst->prog.nodes[node].tag << ")");
    return;
  }
  n_lane.fetch_add(1, std::memory_order_relaxed);
  lane_in(r, node, ep, h.off);
}

// ---------------------------------------------------------------- split single copy

// A one-way transfer (a broadcast's edge) is read by the receiver with
// process_vm_readv, which the kernel makes page by page, at 4-5 times the
// cost of a memcpy on the machines measured.  A sender that waits
// (committed: in cadrt_wait, or MPI_Wait through libcadmpi) has nothing
// else for its CPU to do: the receiver offers it a share (SPLIT, with its
// destination's address), and while it waits both copy chunks, the receiver
// reading, the sender writing with process_vm_writev, each claiming the
// next chunk from the Split's counter.  Two CPUs make the copy in about
// half the time, and a sender that is away at its
// work loses nothing: it never sees the offer until its next call, and
// the receiver reads the rest meanwhile, so the overlap of a broadcast is
// the single copy's.  The receiver waits at the end only for chunks the
// sender claimed, which it is writing at that moment.
namespace {

// (kSplitChunk, split_chunks() and splittable(): shm.h.)

// Claims from s's transfer of generation gen and n chunks the next chunk:
// the chunks claimed before, which is the chunk taken; n when none was
// left, the receiver closed the claims, or s is another transfer's now.
constexpr uint64_t kClaimsClosed = 1ull << 31;  // in claim (chunks < 2^31, splittable)
constexpr uint64_t kSplitDone = 1ull << 63;     // in sent: one side finished the transfer
uint64_t claim_chunk(Split &s, uint64_t gen, uint64_t n) {
  uint64_t c = s.claim.load(std::memory_order_acquire);
  for (;;) {
    if (c >> 32 != gen || (c & 0xffffffffu) >= n) return n;  // (closed: at least 2^31)
    if (s.claim.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      return c & 0xffffffffu;
  }
}

// The receiver, its own chunks read: no more claims.  The chunks claimed
// before (the receiver owns s: the generation is its own).
uint64_t close_claims(Split &s, uint64_t n) {
  const uint64_t c = s.claim.fetch_or(kClaimsClosed, std::memory_order_seq_cst);
  return std::min<uint64_t>(c & (kClaimsClosed - 1), n);
}

}  // namespace

Split &Runtime::split_of(const cadrt_request_s *r, uint32_t node) const {
  const uint32_t ep = r->comm->ep[r->inst->prog.nodes[node].peer];
  return seg.lane(ep, me).split[r->xfer[node].token & 0xff];
}

void Runtime::split_free(const cadrt_request_s *r, uint32_t node) {
  const uint32_t ep = r->comm->ep[r->inst->prog.nodes[node].peer];
  split_used_[ep] &= static_cast<uint8_t>(~(1u << (r->xfer[node].token & 0xff)));
}

bool Runtime::split_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  const cad_node &n = r->inst->prog.nodes[node];
  const uint64_t chunk = kSplitChunk, chunks = split_chunks(n.len);
  uint8_t &used = split_used_[ep];
  // Offered whether the sender waits yet or not: one away at its work
  // never sees the offer until its next call (the receiver reads the rest
  // meanwhile, as unsplit), and one on its way from its start to its wait
  // takes a share when it gets there (under the thread engine, whose
  // start returns later, a root often is not waiting yet).  In an exchange
  // (this rank sends to the sender too) the sender has its own copy to
  // make: offered only once it waits.
  if (!split || remote(ep) || !splittable(n.len) || used == 0xff ||
      (r->inst->sends_to_peer(n.peer) && !seg.rank(ep).committed.load(std::memory_order_relaxed)))
    return false;
  static_assert(kSplitSlots == 8, "a bit of split_used_ per Split");
  const uint32_t i = static_cast<uint32_t>(__builtin_ctz(~used & 0xffu));
  Split &s = seg.lane(ep, me).split[i];
  const uint64_t gen = ((s.claim.load(std::memory_order_relaxed) >> 32) + 1) & 0xffffffu;
  s.sent.store(0, std::memory_order_relaxed);
  s.claim.store(gen << 32, std::memory_order_release);
  unsigned char *dst = at(r, n.dst_buf, n.dst_off);
  MsgHeader m = header(r, node, kSplit);
  m.addr = reinterpret_cast<uint64_t>(dst);
  m.off = gen << 8 | i;
  push(ep, m, nullptr, 0, r);
  used |= static_cast<uint8_t>(1u << i);
  n_split.fetch_add(1, std::memory_order_relaxed);
  Xfer &x = r->xfer[node];
  x.state = kSplitIn;
  x.token = m.off;
  r->outgoing.push_back(node);  // (input: not counted in waiting_output)
  uint64_t own = 0;
  int err = 0;
  for (uint64_t k; (k = claim_chunk(s, gen, chunks)) < chunks;) {
    fault_split_pause(true);
    own++;
    const uint64_t off = k * chunk;
    if (fault_split_read()) {
      err = -EFAULT;
      break;
    }
    if (!cma_copy(true, ep, dst + off, h.addr + off, std::min<uint64_t>(chunk, n.len - off), &err)) break;
  }
  // (A read that failed: the mark first, so that a sender that sees the
  // claims closed does not finish the transfer; it learns of the failure.)
  if (err) s.sent.fetch_or(kSplitDone, std::memory_order_seq_cst);
  x.done = close_claims(s, chunks) - own;  // the sender's chunks
  if (err) fault_split_pause(true, 4);  // (the ABORT late: after a pausing sender's last chunk)
  // The sender is writing its last chunks now: they are waited for here,
  // for a while (a chunk takes some 10 us), so that this receive completes
  // in this call.  A sender that lost its CPU meanwhile finishes the
  // transfer itself when it has written them (split_out): this rank may
  // be back at its work by then, and the FIN would wait for its next call.
  for (const int64_t until = now_ns() + 200000;
       !err && (s.sent.load(std::memory_order_seq_cst) & ~kSplitDone) < x.done && now_ns() < until;)
    cpu_relax();
  if (err) {
    give_up(r, ep, h, -EPIPE,
            Why() << "reading " << h.len << " bytes from rank " << r->comm->rank_of_ep[ep]
                  << " failed: " << cma_why(err));
    return true;
  }
  split_wait(r, node);
  return true;
}

// The receiver's side, after its own chunks: done once the sender has
// written the chunks it claimed.  Who finishes the transfer -- completes
// the sender's send -- is whoever sees both halves done, the receiver its
// claims closed and sent at their count, the sender sent at its count and
// the claims closed (split_out); kSplitDone in sent goes to one of them.
// (Each side stores, then loads what the other stores, all sequentially
// consistent: at least one of them sees the other's store.)  The receiver
// tells the sender with a FIN; the sender needs none.
bool Runtime::split_wait(cadrt_request_s *r, uint32_t node) {
  const uint32_t ep = r->comm->ep[r->inst->prog.nodes[node].peer];
  Split &s = split_of(r, node);
  uint64_t sent = s.sent.load(std::memory_order_seq_cst);
  const uint64_t want = r->xfer[node].done;
  if (!(sent & kSplitDone)) {
    if (sent > want) {
      lane_corrupt(ep, sent - want);
      return false;
    }
    if (sent < want || !room()) return false;
    if (s.sent.compare_exchange_strong(sent, want | kSplitDone, std::memory_order_seq_cst)) {
      push(ep, header(r, node, kFinSend), nullptr, 0, r);
      out_done(r, node);
      return true;
    }
  }
  if (sent != (want | kSplitDone)) {  // (the sender's mark comes with its count)
    lane_corrupt(ep, sent & ~kSplitDone);
    return false;
  }
  out_done(r, node);
  return true;
}

// The sender's side: chunks while any is left, if it waits (else it may
// be about to go back to its work; and in the signal handler it was taken
// from it).  A chunk it claims is counted in sent even if it failed, so
// that the receiver does not wait for it.
void Runtime::split_out(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  const cad_node &n = r->inst->prog.nodes[node];
  const uint64_t chunk = kSplitChunk, chunks = split_chunks(n.len);
  if (h.len != n.len || (h.off & 0xff) >= kSplitSlots || !splittable(n.len) || !seg.has_lanes()) {
    give_up(r, ep, h, -EPROTO,
            Why() << "rank " << r->comm->rank_of_ep[ep] << " offered rank " << r->comm->rank
                  << " a split that does not fit its message (tag " << n.tag << ", " << n.len << " bytes)");
    return;
  }
  if (committed_.load(std::memory_order_relaxed) <= 0 || t_in_handler) return;
  Split &s = seg.lane(me, ep).split[h.off & 0xff];
  const unsigned char *src = at(r, n.src_buf, n.src_off);
  uint64_t wrote = 0;
  int err = 0;
  for (uint64_t k; (k = claim_chunk(s, h.off >> 8, chunks)) < chunks;) {
    fault_split_pause(false);
    const uint64_t off = k * chunk;
    const bool ok = cma_copy(false, ep, const_cast<unsigned char *>(src) + off, h.addr + off,
                             std::min<uint64_t>(chunk, n.len - off), &err);
    s.sent.fetch_add(1, std::memory_order_seq_cst);
    wrote++;
    if (!ok) break;
  }
  if (!wrote) return;
  n_split_chunks.fetch_add(wrote, std::memory_order_relaxed);
  if (err) {
    ring(ep, true);  // the receiver may wait for the last chunk
    give_up(r, ep, h, -EPIPE,
            Why() << "writing " << n.len << " bytes to rank " << r->comm->rank_of_ep[ep]
                  << " failed: " << cma_why(err));
    return;
  }
  // The receiver closed its claims: it has read its chunks, and ours are
  // written -- unless it saw that first (split_wait), the send is done
  // now, without its FIN.
  const uint64_t c = s.claim.load(std::memory_order_seq_cst);
  uint64_t mine = wrote;
  if (c >> 32 == h.off >> 8 && (c & kClaimsClosed) &&
      s.sent.compare_exchange_strong(mine, wrote | kSplitDone, std::memory_order_seq_cst)) {
    n_split_last.fetch_add(1, std::memory_order_relaxed);
    complete(r, node);
  }
  ring(ep, true);  // the receiver may wait for the last chunk
}

// ---------------------------------------------------------------- offers
//
// A one-way single copy is read by its receiver when the sender's RTS
// finds it in the library; a receiver that posts first and goes back to
// its work would read it only at its next call (its wait, for a
// non-blocking collective), after the computation, and its sender, which
// waits for that read's FIN, finishes no sooner: neither overlaps the
// copy with anything.  The progress thread or the signal handler would
// read it during the computation, but being woken costs more than the
// computation of a 64 KiB broadcast lasts on a busy machine (the 2-core
// VM: the receiver's wait still read it, 5-6 us, with the root 3 us
// late).  So the receiver that posts first offers the receive (shm.h,
// Offer): a sender that posts later takes it and writes the data in its
// own call, while the receiver computes -- whoever comes second copies,
// as in KNEM's and KACC's kernel paths.  Not for exchanges (both ranks
// copy there anyway, each its own receive, or the lanes serve them; with
// offers, one rank often made both copies in its start while the other
// computed: iallreduce of 256 KiB, interleaved runs, 0.76-1.04x Open MPI
// against 1.03-1.13x, but an OSU overlap of 24-37 % against 43-47 %),
// messages that may be split (a split copies with both CPUs when both
// wait, which a taken offer would forgo), or ranks on other nodes.

// Whether the receive node of r from ep may be offered (called with
// none of its data or RTS here yet).
bool Runtime::offerable(const cadrt_request_s *r, uint32_t node, uint32_t ep) const {
  const cad_node &n = r->inst->prog.nodes[node];
  return offers && cma && !remote(ep) && n.len > kPayload && !splittable(n.len) && offer_used_[ep] != 0xff &&
         !r->inst->sends_to_peer(n.peer) && !(n.flags & CAD_XFER_SENDER_WRITES) && offer_pays(r, n.len);
}

int64_t Runtime::copy_ns(uint64_t len) const {
  constexpr uint64_t kProbe[4] = {16 << 10, 64 << 10, 256 << 10, 1 << 20};
  if (!read_probe_ns[0]) return static_cast<int64_t>(len / kBytesPerNs);
  // Through the points measured; proportional below the first and
  // beyond the last.
  if (len <= kProbe[0]) return static_cast<int64_t>(len * read_probe_ns[0] / kProbe[0]);
  for (int i = 1; i < 4; i++)
    if (len <= kProbe[i] || i == 3) {
      const double f = static_cast<double>(len - kProbe[i - 1]) / static_cast<double>(kProbe[i] - kProbe[i - 1]);
      return static_cast<int64_t>(read_probe_ns[i - 1] + f * static_cast<double>(read_probe_ns[i] - read_probe_ns[i - 1]));
    }
  return 0;
}

// An offer moves the copy from the receiver's wait into the sender's
// start: the same CPU time, C, but who waits for whom changes.  Time 0 is
// the end of the receiver's start; it computes until G and then waits;
// the sender posts at X and computes about as long (all learned per
// instance: late_ns, gap_ns, and C from the copies timed at init).  What
// each way costs beyond the copy itself:
//   offered: the sender copies from X to X + C, and the receiver's wait
//     waits for that: (X + C - G)+;
//   not: the receiver reads at its wait, from max(G, X) on, waiting
//     (X - G)+ for the sender first; the sender's wait waits for that
//     read: (C - X)+ if X <= G, else (C - G)+.
// The offer is made unless it costs more.  It pays when the sender comes
// while the receiver computes and early enough (a 64 KiB broadcast whose
// caller computes long: up to C - X); not when a late sender meets a
// receiver back soon (rt_bench's ibcast of 64 KiB with the root 3 us
// late), nor when the receiver is already waiting (X > G: the copy it
// makes there costs the idle time, the sender's costs its work).  Until
// the caller has been seen once (G unknown), no offer: the receiver reads.
bool Runtime::offer_pays(const cadrt_request_s *r, uint64_t len) const {
  if (offers_always) return true;
  const int64_t G = r->inst->gap_ns.load(std::memory_order_relaxed);
  if (G < 0) return false;
  const int64_t X = r->inst->late_ns.load(std::memory_order_relaxed), C = copy_ns(len);
  const int64_t offered = std::max<int64_t>(0, X + C - G);
  const int64_t not_offered = X <= G ? std::max<int64_t>(0, C - X) : X - G + std::max<int64_t>(0, C - G);
  return offered <= not_offered;
}

Offer &Runtime::offer_of(const cadrt_request_s *r, uint32_t node) const {
  const uint32_t ep = r->comm->ep[r->inst->prog.nodes[node].peer];
  return seg.lane(ep, me).offer[r->xfer[node].token & 0xff];
}

void Runtime::offer(cadrt_request_s *r, uint32_t node, uint32_t ep) {
  const cad_node &n = r->inst->prog.nodes[node];
  uint8_t &used = offer_used_[ep];
  static_assert(kOfferSlots == 8, "a bit of offer_used_ per Offer");
  const uint32_t i = static_cast<uint32_t>(__builtin_ctz(~used & 0xffu));
  Offer &o = seg.lane(ep, me).offer[i];
  const uint64_t gen = ((o.state.load(std::memory_order_relaxed) >> 2) + 1) & ((1ull << 48) - 1);
  o.ctx.store(r->comm->ctx, std::memory_order_relaxed);
  o.seq.store(r->seq, std::memory_order_relaxed);
  o.len.store(n.len, std::memory_order_relaxed);
  o.addr.store(reinterpret_cast<uint64_t>(at(r, n.dst_buf, n.dst_off)), std::memory_order_relaxed);
  o.fp.store(r->inst->fp, std::memory_order_relaxed);
  o.tag.store(n.tag, std::memory_order_relaxed);
  o.occ.store(r->inst->occ[node], std::memory_order_relaxed);
  o.state.store(gen << 2 | kOfferOpen, std::memory_order_release);
  used |= static_cast<uint8_t>(1u << i);
  Xfer &x = r->xfer[node];
  x.state = kOffered;
  x.token = gen << 8 | i;
  x.offer = 1;
  r->offers++;
  n_offered.fetch_add(1, std::memory_order_relaxed);
}

// The end of r's start: its receives that wait for an RTS are offered --
// not before, since the start waits a while for the RTS of a peer that is
// starting too (rendezvous()): a receiver that reads in its start copies
// into its own cache, where the data is used next, and the sender is
// back at its work at once.  (Offering at the post made the sender write
// whenever the receiver had posted a moment before: at 64 KiB a copy into
// lines the receiver owns was slower, and the OSU overlap of ibcast with
// no late root fell from 43-55 % to 0-44 % on the 2-core VM.)
void Runtime::offer_open(cadrt_request_s *r) {
  const cad_prog &p = r->inst->prog;
  for (uint32_t i = 0; i < p.n_nodes; i++) {
    const cad_node &n = p.nodes[i];
    const Xfer &x = r->xfer[i];
    if (n.kind != CAD_NODE_RECV || x.state != kWaitData || x.token || x.done) continue;
    const uint32_t ep = r->comm->ep[n.peer];
    if (offerable(r, i, ep)) offer(r, i, ep);
  }
}

// The receiver, on a message for an offered receive: withdraws the offer
// (true), or finds it taken (false).
bool Runtime::withdraw(cadrt_request_s *r, uint32_t node) {
  const uint64_t gen = r->xfer[node].token >> 8;
  uint64_t want = gen << 2 | kOfferOpen;
  if (!offer_of(r, node).state.compare_exchange_strong(want, gen << 2 | kOfferFree, std::memory_order_acq_rel))
    return false;
  offer_free(r, node);
  return true;
}

// The receiver is done with an offer (withdrawn, or written and its FIN
// come, or its sender gone): the slot is free for its next offers.  (A
// node holding none: nothing.)
void Runtime::offer_free(cadrt_request_s *r, uint32_t node) {
  Xfer &x = r->xfer[node];
  if (!x.offer) return;
  const uint32_t ep = r->comm->ep[r->inst->prog.nodes[node].peer];
  offer_of(r, node).state.store((x.token >> 8) << 2 | kOfferFree, std::memory_order_release);
  offer_used_[ep] &= static_cast<uint8_t>(~(1u << (x.token & 0xff)));
  x.offer = 0;
  r->offers--;
}

// r fails: its offers are withdrawn; one a sender took is written now,
// and waited for like a CTS (its FIN, or the sender's RELEASE or ABORT).
void Runtime::withdraw_offers(cadrt_request_s *r) {
  for (uint32_t i = 0; i < r->inst->prog.n_nodes; i++) {
    Xfer &x = r->xfer[i];
    if (x.state != kOffered) continue;
    x.state = withdraw(r, i) ? kIdle : kWaitFin;
  }
}

// The sender: takes its receiver's offer of this send if there is one,
// and writes the data (true: the send is done, or failed).
bool Runtime::take_offer(cadrt_request_s *r, uint32_t node, uint32_t ep) {
  const cad_node &n = r->inst->prog.nodes[node];
  // (Whether the receive may be offered is the receiver's to decide: it
  // offers none of an exchange.  lane_fits() here would ask about this
  // rank's own receives from ep, and say yes for every send under
  // CADRT_BULK=1.)
  if (!offers || splittable(n.len)) return false;
  Lane &l = seg.lane(me, ep);
  const uint64_t ctx = r->comm->ctx;
  const uint32_t occ = r->inst->occ[node];
  for (uint32_t i = 0; i < kOfferSlots; i++) {
    Offer &o = l.offer[i];
    uint64_t s = o.state.load(std::memory_order_acquire);
    if ((s & 3) != kOfferOpen || o.ctx.load(std::memory_order_relaxed) != ctx ||
        o.seq.load(std::memory_order_relaxed) != r->seq || o.tag.load(std::memory_order_relaxed) != n.tag ||
        o.occ.load(std::memory_order_relaxed) != occ)
      continue;
    // Another length or instance: the RTS, and the receiver says what is wrong.
    if (o.len.load(std::memory_order_relaxed) != n.len || o.fp.load(std::memory_order_relaxed) != r->inst->fp)
      return false;
    const uint64_t addr = o.addr.load(std::memory_order_relaxed);
    if (!o.state.compare_exchange_strong(s, (s & ~3ull) | kOfferTaken, std::memory_order_acq_rel)) return false;
    MsgHeader fin = header(r, node, kFinRecv);
    fin.off = static_cast<uint64_t>(now_ns());  // when it was taken, for the receiver's learn()
    int err = 0;
    if (!cma_copy(false, ep, at(r, n.src_buf, n.src_off), addr, n.len, &err)) {
      // (As a CTS's write that failed: the receiver is released.)
      MsgHeader h = header(r, node, kCts);
      h.addr = addr;
      give_up(r, ep, h, -EPIPE,
              Why() << "writing " << n.len << " bytes to rank " << r->comm->rank_of_ep[ep]
                    << " failed: " << cma_why(err));
      return true;
    }
    push(ep, fin, nullptr, 0, r);
    n_wrote_offers.fetch_add(1, std::memory_order_relaxed);
    complete(r, node);
    return true;
  }
  return false;
}

void Runtime::lane_corrupt(uint32_t ep, uint64_t what) {
  if (corrupt_lane_[ep]) return;
  corrupt_lane_[ep] = what ? what : 1;
  corrupt_new_ = true;
  seg.rank(ep).state.store(kDead, std::memory_order_release);  // check_peers fails what runs
}

bool Runtime::move_out(cadrt_request_s *r, uint32_t node) {
  switch (r->xfer[node].state) {
    case kBulkOut: return bulk_out(r, node);
    case kBulkIn: return bulk_in(r, node);
    case kSplitIn: return split_wait(r, node);
    default: return frag_out(r, node);
  }
}

void Runtime::out_done(cadrt_request_s *r, uint32_t node) {
  r->outgoing.erase(std::find(r->outgoing.begin(), r->outgoing.end(), node));
  const uint8_t st = r->xfer[node].state;
  if (st == kSplitIn) split_free(r, node);
  else if (st != kBulkIn) waiting_output.fetch_sub(1, std::memory_order_relaxed);
  if (st == kBulkOut && push_lanes) lane_out_[r->comm->ep[r->inst->prog.nodes[node].peer]] = kLaneFree;
  complete(r, node);
}

// Fragments of a send while the ring has room.
bool Runtime::frag_out(cadrt_request_s *r, uint32_t node) {
  const cad_node &n = r->inst->prog.nodes[node];
  const uint32_t ep = r->comm->ep[n.peer];
  if (!pending_[ep].empty()) return false;
  Ring &q = seg.ring(me, ep);
  uint64_t tail = q.tail.load(std::memory_order_relaxed);
  uint64_t head = q.head.load(std::memory_order_acquire);
  Xfer &x = r->xfer[node];
  bool moved = false;
  for (;;) {
    while (x.done < n.len && tail - head < kSlots) {
      const uint32_t part = static_cast<uint32_t>(std::min<uint64_t>(kPayload, n.len - x.done));
      MsgHeader h = header(r, node, kFrag);
      h.off = x.done;
      publish(q.slots[tail % kSlots], h, at(r, n.src_buf, n.src_off) + x.done, part, tail);
      x.done += part;
      tail++;
      moved = true;
    }
    if (x.done == n.len || still_full(q.want_space, q.head, tail, kSlots, &head)) break;
  }
  if (moved) {
    q.tail.store(tail, std::memory_order_release);
    ring(ep, true);
  }
  if (x.done == n.len) out_done(r, node);
  return moved;
}

// A SEND or RECV node became ready.
CADRT_HOT void Runtime::post(cadrt_request_s *r, uint32_t node) {
  const cad_node &n = r->inst->prog.nodes[node];
  const uint32_t ep = r->comm->ep[n.peer];
  Xfer &x = r->xfer[node];
  x.done = 0;
  const bool eager = n.len <= kPayload;
  const bool far = remote(ep);
  if (n.kind == CAD_NODE_SEND) {
    if (eager) {
      push(ep, header(r, node, kEager), at(r, n.src_buf, n.src_off), static_cast<uint32_t>(n.len), r);
      complete(r, node);
    } else if (far) {
      x.state = kWaitCts;  // the receiver posts, then says where
      drain_unexpected(r, ep, node);
    } else if (push_fits(r, node, ep)) {
      MsgHeader h = header(r, node, kPush);
      h.off = seg.lane(me, ep).tail.load(std::memory_order_relaxed);
      push(ep, h, nullptr, 0, r);
      lane_out_[ep] = kLaneGranted;
      lane_out(r, node, h.off);
    } else if (!cma) {
      x.state = kFragOut;
      r->outgoing.push_back(node);
      waiting_output.fetch_add(1, std::memory_order_relaxed);
      frag_out(r, node);
    } else if (n.flags & CAD_XFER_SENDER_WRITES) {
      x.state = kWaitCts;
      drain_unexpected(r, ep, node);
    } else if (!take_offer(r, node, ep)) {
      MsgHeader h = header(r, node, kRts);
      h.addr = reinterpret_cast<uint64_t>(at(r, n.src_buf, n.src_off));
      h.off = static_cast<uint64_t>(now_ns());  // for the receiver's rendezvous
      x.state = kWaitFin;
      push(ep, h, nullptr, 0, r);
    }
    return;
  }
  if (!eager && far) {
    x.state = kNetRecv;
    r->netwait.push_back(node);
    return;
  }
  if (!eager && cma && (n.flags & CAD_XFER_SENDER_WRITES)) {
    MsgHeader h = header(r, node, kCts);
    h.addr = reinterpret_cast<uint64_t>(at(r, n.dst_buf, n.dst_off));
    h.off = static_cast<uint64_t>(now_ns());  // for the sender's rendezvous
    x.state = kWaitFin;
    push(ep, h, nullptr, 0, r);
    return;
  }
  x.state = kWaitData;
  drain_unexpected(r, ep, node);
  // (Posted while the caller computes: offered at once.  In the caller's
  // start: at its end, offer_open(), if the RTS has not come by then.)
  if ((t_progress_thread || t_in_handler) && x.state == kWaitData && !x.token && offerable(r, node, ep))
    offer(r, node, ep);
}

// Issues what is ready; true if a node was issued.  The executor hands
// out ready transfers before ready local work (cad_core.h), so a peer can
// start reading or writing this rank's buffers while it copies.
CADRT_HOT bool Runtime::issue(cadrt_request_s *r) {
  bool moved = false;
  uint32_t i;
  while (!r->done && !r->draining && room() && cad_exec_next(&r->ex, &i)) {
    const cad_node &n = r->inst->prog.nodes[i];
    moved = true;
    switch (n.kind) {
      case CAD_NODE_COPY:
        if (n.len) memcpy(at(r, n.dst_buf, n.dst_off), at(r, n.src_buf, n.src_off), n.len);
        complete(r, i);
        break;
      case CAD_NODE_REDUCE:
        cad_reduce(&r->inst->prog, &n, at(r, n.dst_buf, n.dst_off), at(r, n.src_buf, n.src_off),
                   vm_scratch_.data());
        complete(r, i);
        break;
      default:
        post(r, i);
        break;
    }
  }
  return moved;
}

// A failed request tells its peers (ABORT; what finds no room now goes in
// a later pass, see tell_next), answers what it holds of theirs, and
// completes -- unless a peer may still copy from or into its buffers, or
// an ABORT is still owed, see draining.  Leaves at least kReserve - 1
// free entries, enough for a release by the caller.
void Runtime::fail(cadrt_request_s *r, int err, std::string_view why, bool tell_peers) {
  if (r->done || r->draining) return;
  // (In the handler within the room bind() reserved: no allocation.)
  if (r->error.empty())
    r->error.assign(why.data(), t_in_handler ? std::min(why.size(), r->error.capacity()) : why.size());
  cad_exec_abort(&r->ex, err);
  if (tell_peers) {
    r->tell_next = 0;
    tell(r);
    if (r->tell_next != INT32_MAX) n_owed_aborts.fetch_add(1, std::memory_order_relaxed);
  }
  failed_[failed_next_++ % failed_.size()] = {r->comm->ctx, r->seq};
  r->result = err;
  if (!release_failed()) release_later_ = true;
  if (r->offers) withdraw_offers(r);
  if (exposed(r)) {
    r->draining = true;
    return;
  }
  finish(r);
}

bool Runtime::tell(cadrt_request_s *r) {
  MsgHeader h{};
  h.kind = kAbort;
  h.ctx = r->comm->ctx;
  h.seq = r->seq;
  // (The error, cut to what bind() reserved if set in the handler.)
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(r->error.size(), kPayload));
  bool told = false;
  for (; r->tell_next < r->comm->size; r->tell_next++) {
    if (r->tell_next == r->comm->rank) continue;
    if (!room() || fault_no_room()) break;
    push(r->comm->ep[r->tell_next], h, r->error.data(), n, nullptr);
    told = true;
  }
  if (r->tell_next >= r->comm->size) r->tell_next = INT32_MAX;
  return told;
}

void Runtime::give_up(cadrt_request_s *r, uint32_t ep, const MsgHeader &h, int err, std::string_view why) {
  fail(r, err, why, true);
  settle(r, ep, h);
}

void Runtime::settle(cadrt_request_s *r, uint32_t ep, const MsgHeader &h) {
  if (!is_answer(h.kind)) release(ep, h);
  else if (r->draining) answered(r, ep, h);
}

void Runtime::release(uint32_t ep, const MsgHeader &h) {
  if (h.kind != kRts && h.kind != kCts) return;
  MsgHeader a = h;
  a.kind = h.kind == kRts ? kRelSend : kRelRecv;
  a.addr = 0;
  push(ep, a, nullptr, 0, nullptr);
}

bool Runtime::release_failed() {
  for (uint32_t ep = 0; ep < nep; ep++) {
    Queue &uq = unexpected_[ep];
    Queue keep;
    bool ok = true;
    while (Entry *e = uq.pop()) {
      if (!ok || !recently_failed(e->slot.h.ctx, e->slot.h.seq)) {
        keep.push(e);
        continue;
      }
      if ((e->slot.h.kind == kRts || e->slot.h.kind == kCts) && !room()) {
        ok = false;
        keep.push(e);
        continue;
      }
      release(ep, e->slot.h);
      pool_.put(e);
    }
    uq = keep;
    if (!ok) return false;
  }
  return true;
}

bool Runtime::exposed(const cadrt_request_s *r) const {
  if (r->tell_next != INT32_MAX) return true;  // (not exposed: but it must not complete before)
  const cad_prog &p = r->inst->prog;
  for (uint32_t i = 0; i < p.n_nodes; i++) {
    const uint8_t st = r->xfer[i].state;
    if (st == kNetSend || st == kNetWait) return true;
    if (st != kWaitFin && st != kSplitIn) continue;
    // (A split: while the sender may still write a chunk it claimed -- a
    // failed read's mark in sent does not mean it has written them.)
    if (st == kSplitIn && (split_of(r, i).sent.load(std::memory_order_acquire) & ~kSplitDone) >= r->xfer[i].done)
      continue;
    const uint32_t ep = r->comm->ep[p.nodes[i].peer];
    if (seg.rank(ep).state.load(std::memory_order_acquire) < kExited &&
        std::find(r->aborted.begin(), r->aborted.end(), ep) == r->aborted.end())
      return true;
  }
  return false;
}

// A peer's ABORT for r, which drains: it answers everything that peer
// owed r (it will not read or write r's buffers again: it sent the ABORT
// after its last copy, from the same pass), so a peer that failed after
// taking an RTS of this rank does not leave it draining for ever.
void Runtime::aborted(cadrt_request_s *r, uint32_t ep) {
  note_abort(r, ep);
  if (!exposed(r)) finish(r);
}

// (Each peer once, within the room bind() reserved: this may run in the
// signal handler.)
void Runtime::note_abort(cadrt_request_s *r, uint32_t ep) {
  if (std::find(r->aborted.begin(), r->aborted.end(), ep) == r->aborted.end() &&
      r->aborted.size() < r->aborted.capacity())
    r->aborted.push_back(ep);
}

void Runtime::answered(cadrt_request_s *r, uint32_t ep, const MsgHeader &h) {
  const int32_t peer = r->comm->rank_of(ep);
  if (peer >= 0) {
    const uint8_t kind = h.kind == kFinSend || h.kind == kRelSend || h.kind == kGrant ? CAD_NODE_SEND : CAD_NODE_RECV;
    const int64_t node = r->inst->find(kind, static_cast<uint32_t>(peer), h.tag, h.occ);
    if (node >= 0 && r->xfer[node].state == kWaitFin) {
      r->xfer[node].state = kIdle;
      offer_free(r, static_cast<uint32_t>(node));  // (a taken offer's)
    }
    // A receive from another node whose sender will not send: cancelled
    // (done when the transport says so).
    if (node >= 0 && r->xfer[node].state == kNetWait && h.kind == kRelRecv) net_.cancel(net_.ctx, r->xfer[node].net);
  }
  if (!exposed(r)) finish(r);
}

CADRT_HOT void Runtime::unlink_active(cadrt_request_s *r) {
  r->done = true;
  r->active = false;
  if (r->prev) r->prev->next = r->next;
  else active_ = r->next;
  if (r->next) r->next->prev = r->prev;
  r->prev = r->next = nullptr;
  count_active(-1);
}

// active_count is read by other threads (the helpers) but written only
// where the active list is: under the lock (thread engine), or by the one
// thread in the library or in the signal handler, which runs only outside
// it.  So a plain load and store do, under every engine: a locked
// increment would also wait for the stores before it, such as a message
// just written into a peer's ring.
void Runtime::count_active(int by) {
  active_count.store(active_count.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// r is done (or failed): off the active list; wake whoever waits for it.
CADRT_HOT void Runtime::finish(cadrt_request_s *r) {
  if (r->done) return;
  if (r->unsent) {
    // Failed with output still queued: it goes out (or not) without r.
    for (uint32_t ep = 0; ep < nep; ep++)
      for (Entry *e = pending_[ep].head; e; e = e->next)
        if (e->owner == r) e->owner = nullptr;
    for (Entry *e = netq_.head; e; e = e->next)
      if (e->owner == r) e->owner = nullptr;
    r->unsent = 0;
  }
  if (!r->result) r->result = cad_exec_status(&r->ex);
  r->draining = false;
  if (r->offers) {
    // Taken by a sender that aborted or died since: it writes no more.
    for (uint32_t i = 0; i < r->inst->prog.n_nodes && r->offers; i++) offer_free(r, i);
  }
  unlink_active(r);
  // A lane granted to a receive that did not complete holds what the
  // sender put in (or will): never granted again.  A push that stopped
  // half-way leaves the receiver waiting for chunks that never come: the
  // sender never pushes into that lane again.
  int output = 0;
  for (uint32_t node : r->outgoing) {
    const uint32_t ep = r->comm->ep[r->inst->prog.nodes[node].peer];
    const uint8_t st = r->xfer[node].state;
    if (st == kBulkIn) lane_in_[ep] = kLaneRetired;
    else if (st == kSplitIn) split_free(r, node);  // (not exposed: the sender is done or gone)
    else output++;
    if (st == kBulkOut && push_lanes) lane_out_[ep] = kLaneRetired;
  }
  if (output) waiting_output.fetch_sub(output, std::memory_order_relaxed);
  r->outgoing.clear();
  if (engine == Engine::Thread && t_progress_thread) {
    // The main thread may sleep in wait() for it while the progress thread
    // worked (sleep_until_message looks at done after reading the bell).
    // Only then a system call: the progress thread also waits on the bell
    // while the main thread polls, and waking it would only take the CPU.
    // (Not when the main thread finishes it: it does not sleep then, and
    // the fence would wait for the stores of its pass -- a message just
    // written into a peer's ring -- to reach the other CPU, 100-250 ticks
    // of a 1-byte ibcast's root on the 2-core VM.)
    RankInfo &mine = seg.rank(me);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (mine.asleep.load(std::memory_order_relaxed)) {
      mine.bell.fetch_add(1, std::memory_order_release);
      futex_wake(&mine.bell);
    }
  }
  __atomic_store_n(&r->finished, true, __ATOMIC_RELEASE);
}

bool Runtime::complete_now(const cadrt_request_s *r) const {
  const int st = cad_exec_status(&r->ex);
  return st != -EINPROGRESS && (st != 0 || r->unsent == 0);
}

void Runtime::activate(cadrt_request_s *r) {
  r->active = true;
  r->done = false;
  r->finished = false;
  r->result = 0;
  r->error.clear();
  r->aborted.clear();
  r->next = active_;
  r->prev = nullptr;
  if (active_) active_->prev = r;
  active_ = r;
  count_active(1);
  if (engine == Engine::Kernel) {
    if (int err = kernel_start(r)) kernel_finish(r, err);
    return;
  }
  // An ABORT may have come first.
  for (uint32_t ep = 0; ep < nep && !r->done; ep++) {
    for (Entry *e = unexpected_[ep].head; e; e = e->next)
      if (e->slot.h.kind == kAbort && e->slot.h.ctx == r->comm->ctx && e->slot.h.seq == r->seq) {
        fail(r, -ECANCELED, std::string_view(reinterpret_cast<const char *>(e->slot.payload), e->slot.h.frag), false);
        break;
      }
  }
  if (!r->done && !r->draining) {
    issue(r);
    if (!r->draining && complete_now(r)) finish(r);
  }
}

// A corruption found (in the signal handler, which builds no error text,
// or in this pass) fails the requests with its error before the broken
// peer's next message can fail them with another (poll_incoming() holds
// those back meanwhile): when rank 0 finds the lane from rank 1 corrupt on
// granting it, rank 1 meets the grant, finds it does not match its lane
// and sends an ABORT.  After, the peer's messages are read again: a
// request that drains waits for its answers.
bool Runtime::check_corrupt() {
  if (!corrupt_new_ || t_in_handler) return false;
  corrupt_new_ = false;
  return check_peers();
}

CADRT_HOT bool Runtime::progress() {
  const bool net = net_here();
  bool moved = check_corrupt();
  moved |= flush_pending();
  bool retry = false;  // something this pass could not do that no ring will announce
  moved |= poll_incoming();
  if (net) moved |= net_progress();
  if (release_later_ && room()) release_later_ = !release_failed();
  for (cadrt_request_s *r = active_, *next; r; r = next) {
    next = r->next;
    if (net && !r->netwait.empty()) moved |= net_request(r);
    if (r->done) continue;
    retry |= r->draining || r->redrain || !r->outgoing.empty();
    if (r->draining) {
      if (r->tell_next != INT32_MAX && room()) moved |= tell(r);
      if (!exposed(r)) {  // the peer it waited for has exited, or the ABORTs went
        finish(r);
        moved = true;
      }
      continue;
    }
    if (r->redrain && room()) {
      r->redrain = false;
      for (uint32_t ep = 0; ep < nep; ep++) drain_unexpected(r, ep);
      moved = true;
    }
    for (size_t k = 0; k < r->outgoing.size();) {
      const uint32_t node = r->outgoing[k];
      const size_t before = r->outgoing.size();
      moved |= move_out(r, node);
      if (r->outgoing.size() == before) k++;
    }
    moved |= issue(r);
    if (!r->done && !r->draining && complete_now(r)) {
      finish(r);
      moved = true;
    }
  }
  if (net && !netq_.empty()) moved |= net_progress();  // what this pass said to other nodes
  moved |= check_corrupt();
  // (Release: a thread that reads it set without the lock -- quiet() --
  // sees what this pass did, e.g. a request's done flag.)
  settled_.store(!moved && !retry && !release_later_, std::memory_order_release);
  return moved;
}

void Runtime::progress_in_handler() {
  t_in_handler = true;
  progress();
  t_in_handler = false;
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

// A peer that cadrun saw die or leave without cadrt_finalize, or that this
// rank found wrote a corrupt ring or lane: every active request on a
// communicator the peer belongs to fails (one without it runs on: its
// messages go between its members only); if this rank is the one found
// corrupt, every request.  While a failed request waits for a
// peer's answer, that peer is also looked for by its pid (without cadrun,
// as under mpirun, nobody else marks it dead).  A corruption is kept here,
// not only as the peer's state in the segment: the peer itself overwrites
// that when it leaves the job (kExited), and a request of this rank that
// waits for it -- for chunks in the lane it broke, say -- would then wait
// for ever.  A rank marked dead by a peer that found it corrupt fails its
// own requests too: nobody will answer them.
bool Runtime::check_peers() {
  bool draining = false;
  for (const cadrt_request_s *r = active_; r; r = r->next) draining |= r->draining;
  for (uint32_t ep = 0; ep < nep; ep++) {
    RankInfo &ri = seg.rank(ep);
    if (draining && ep != me && ri.state.load(std::memory_order_acquire) == kAlive) {
      const pid_t pid = ri.pid.load(std::memory_order_relaxed);
      // Only from kAlive: a rank that finalized (kExited) just before its
      // pid went is not dead, and cadrun takes kDead at reaping as "still
      // a member" (cadrun.cpp).
      uint32_t alive = kAlive;
      if (pid > 0 && pid_gone(pid)) ri.state.compare_exchange_strong(alive, kDead, std::memory_order_acq_rel);
    }
    const Corrupt &c = corrupt_[ep];
    const uint32_t state = ri.state.load(std::memory_order_acquire);
    if (!c.found && !corrupt_lane_[ep] && !rank_failed(state)) continue;
    const std::string rank = "rank " + std::to_string(ep) + " of the job";
    std::string why;
    if (c.found)
      why = rank + " wrote a corrupt ring (slot " + std::to_string(c.pos % kSlots) + " stamped " +
            std::to_string(c.stamp) + " where message " + std::to_string(c.pos) + " was due, in a ring of " +
            std::to_string(kSlots) + ")";
    else if (corrupt_lane_[ep])
      why = rank + " wrote a corrupt lane (" + std::to_string(corrupt_lane_[ep]) + " chunks ahead)";
    else if (ep == me)
      why = "a peer found what this rank (" + std::to_string(ep) + " of the job) wrote corrupt";
    else if (state == kLeft)
      why = rank + " left it without cadrt_finalize (it exited or ran another program)";
    else
      why = rank + " died";
    bool any = false;
    for (cadrt_request_s *r = active_, *next; r; r = next) {
      next = r->next;
      if (ep != me && r->comm->rank_of(ep) < 0) continue;
      any = true;
      if (r->draining) {
        if (!exposed(r)) finish(r);
      } else {
        fail(r, -EPIPE, why, true);  // (the living peers may wait for our answers)
      }
    }
    if (any) return true;
  }
  return false;
}

}  // namespace cadrt
