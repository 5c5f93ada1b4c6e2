// transfer.cpp - the large transfers' own paths: the single copy
// (cma_copy), the lanes (grants, pushes, the chunks in and out), and
// fragments through the ring where CMA is not permitted.
#include "runtime.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal.h"

namespace cadrt {

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

// An RTS for a receive: granted a lane, split with its waiting sender, or
// read by the single copy (handle()).
void Runtime::rts_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  const cad_node &n = r->inst->prog.nodes[node];
  const int peer = r->comm->rank_of_ep[ep];
  int err = 0;
  if (grant(r, node, ep)) {
    n_lane.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  n_cma.fetch_add(1, std::memory_order_relaxed);
  if (split_in(r, node, ep, h)) return;
  if (!cma_copy(true, ep, at(r, n.dst_buf, n.dst_off), h.addr, h.len, &err)) {
    give_up(r, ep, h, -EPIPE,
            Why() << "reading " << h.len << " bytes from rank " << peer << " failed: " << cma_why(err));
    return;
  }
  push(ep, header(r, node, kFinSend), nullptr, 0, r);
  complete(r, node);
}

// A CTS for a send: written by the single copy, or sent through the
// network (handle()).
void Runtime::cts_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  const cad_node &n = r->inst->prog.nodes[node];
  const int peer = r->comm->rank_of_ep[ep];
  int err = 0;
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
    return;
  }
  if (!cma_copy(false, ep, at(r, n.src_buf, n.src_off), h.addr, h.len, &err)) {
    give_up(r, ep, h, -EPIPE,
            Why() << "writing " << h.len << " bytes to rank " << peer << " failed: " << cma_why(err));
    return;
  }
  push(ep, header(r, node, kFinRecv), nullptr, 0, r);
  complete(r, node);
}

// A GRANT for a send: its data through the lane to the receiver
// (handle()).
void Runtime::grant_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  const cad_node &n = r->inst->prog.nodes[node];
  const int peer = r->comm->rank_of_ep[ep];
  // The receiver takes the data through the lane to it, which must be
  // empty: our tail where its head is.
  if (h.len != n.len || h.off != seg.lane(me, ep).tail.load(std::memory_order_relaxed)) {
    give_up(r, ep, h, -EPROTO,
            Why() << "rank " << peer << " granted rank " << r->comm->rank << " a lane that is not empty (tag "
                  << n.tag << ", " << n.len << " bytes)");
    return;
  }
  lane_out(r, node, h.off);
}

}  // namespace cadrt
