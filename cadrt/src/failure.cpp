// failure.cpp - failures: a request failed and its peers told, aborts
// and their answers, dead peers found.
#include "runtime.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal.h"

namespace cadrt {

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
