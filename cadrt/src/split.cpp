// split.cpp - the split single copy: a one-way transfer's receiver and
// its waiting sender copy it together, chunk by chunk.
#include "runtime.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal.h"

namespace cadrt {

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

}  // namespace cadrt
