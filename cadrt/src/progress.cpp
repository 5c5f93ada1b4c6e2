// progress.cpp - running requests: the DAG executor of the core drives
// each request; transfers go over the shared-memory rings, small ones
// eagerly in a slot, large ones by a single copy with process_vm_readv or
// process_vm_writev in the direction the program asks for (the receiver
// reads after an RTS, or the sender writes after a CTS), or, where CMA is
// not permitted, in fragments through the ring.  Here: the rings,
// matching, the small messages, posting and finishing nodes, progress();
// the large transfers' own paths are in transfer.cpp, split.cpp and
// offer.cpp, failures in failure.cpp.
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

#include "internal.h"

namespace cadrt {

thread_local bool t_in_handler = false;
thread_local bool t_progress_thread = false;

#ifdef CADRT_FAULT_INJECTION
int g_fault_tell = 0;
long g_fault_split_us = 0, g_fault_split_in_us = 0, g_fault_split_read = 0;
#endif


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

void Runtime::complete(cadrt_request_s *r, uint32_t node) {
  r->xfer[node].state = kIdle;
  cad_exec_complete(&r->ex, node);
}

// A message for a posted node that is not of the node's length, or is
// malformed: the request gives up, with what was wrong (handle()).
void Runtime::refuse(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  const cad_node &n = r->inst->prog.nodes[node];
  const int peer = r->comm->rank_of_ep[ep];
  if (is_recv_side(h.kind) && h.len != n.len) {
    give_up(r, ep, h, -EMSGSIZE,
            Why() << "rank " << r->comm->rank << " receives " << n.len << " bytes from rank " << peer << " (tag "
                  << n.tag << "), which sends " << h.len);
    return;
  }
  const char *bad = malformed(h, n, r->xfer[node].done);
  give_up(r, ep, h, -EPROTO,
          Why() << "rank " << peer << " sent " << bad << " to rank " << r->comm->rank << " (tag " << n.tag << ", "
                << n.len << " bytes)");
}

// A message for a posted node.
void Runtime::handle(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h,
                     const unsigned char *payload) {
  const cad_node &n = r->inst->prog.nodes[node];
  // (A FIN for a receive the sender took carries its clock too, like an
  // RTS: when it took the offer.)
  if (static_cast<int64_t>(node) == r->rdv_node &&
      (h.kind == kRts || h.kind == kCts || (h.kind == kFinRecv && r->xfer[node].state == kOffered)))
    learn(r, h);
  if ((is_recv_side(h.kind) && h.len != n.len) || malformed(h, n, r->xfer[node].done)) {
    refuse(r, node, ep, h);
    return;
  }
  if (r->xfer[node].state == kOffered && !offered_message(r, node, ep, h)) return;
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
      rts_in(r, node, ep, h);
      break;
    case kCts:
      cts_in(r, node, ep, h);
      break;
    case kGrant:
      grant_in(r, node, ep, h);
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

}  // namespace cadrt
