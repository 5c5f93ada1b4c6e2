// offer.cpp - offers: a receiver that posts first offers its receive,
// and a sender that posts later writes the data in its own call.
#include "runtime.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal.h"

namespace cadrt {

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
  if (!read_probe_ns[0]) return static_cast<int64_t>(len / kBytesPerNs);
  // Through the points lanes_upto() measured; proportional below the
  // first and beyond the last.
  if (len <= kLaneProbe[0]) return static_cast<int64_t>(len * read_probe_ns[0] / kLaneProbe[0]);
  for (int i = 1; i < kLaneProbes; i++)
    if (len <= kLaneProbe[i] || i == kLaneProbes - 1) {
      const double f =
          static_cast<double>(len - kLaneProbe[i - 1]) / static_cast<double>(kLaneProbe[i] - kLaneProbe[i - 1]);
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

// A message for a receive this rank offered (handle()): false if it
// ended it here (the sender took the offer and wrote; or gave up).
bool Runtime::offered_message(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h) {
  const cad_node &n = r->inst->prog.nodes[node];
  const int peer = r->comm->rank_of_ep[ep];
  // The data itself, or an RTS: the sender did not take the offer (it
  // posted before it could see it), so the offer is withdrawn and the
  // receive goes on as any other.  A FIN: the sender took it, and wrote.
  const bool written = h.kind == kFinRecv;
  if (withdraw(r, node) == written) {
    give_up(r, ep, h, -EPROTO,
            Why() << "rank " << peer << " sent rank " << r->comm->rank << " a "
                  << (written ? "FIN for a receive it did not take" : "message for a receive it had taken")
                  << " (tag " << n.tag << ", " << n.len << " bytes)");
    return false;
  }
  if (written) {
    offer_free(r, node);
    n_cma.fetch_add(1, std::memory_order_relaxed);
    n_offers_written.fetch_add(1, std::memory_order_relaxed);
    complete(r, node);
    return false;
  }
  r->xfer[node].state = kWaitData;
  return true;
}

}  // namespace cadrt
