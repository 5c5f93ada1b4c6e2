// net.cpp - the network transport (cadrt_net.h) for ranks on other nodes:
// control messages as messages of tag 0, one receive posted per remote
// rank so they arrive in order; large transfers as a rendezvous in which
// the receiver posts a receive into the destination under a tag of its
// own and sends it in a CTS, and the sender sends from the source.
//
// Only the thread that initialised cadrt calls the transport, and never
// from the signal handler (see cadrt_net.h).  Elsewhere the progress
// engine queues control messages for remote ranks (netq_) and leaves
// remote transfers in netwait for the next pass of that thread.
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "runtime.h"

namespace cadrt {

bool Runtime::net_here() const {
  return has_net_ && !t_in_handler && pthread_equal(pthread_self(), net_thread_);
}

int Runtime::net_start() {
  net_thread_ = pthread_self();
  ctl_in_.assign(nep, Slot());
  ctl_h_.assign(nep, nullptr);
  for (uint32_t ep = 0; ep < nep; ep++) {
    if (!remote(ep)) continue;
    if (int err = net_.irecv(net_.ctx, static_cast<int>(ep), 0, &ctl_in_[ep], sizeof(Slot), &ctl_h_[ep]))
      return set_error(err < 0 ? err : -EIO, "the network transport cannot post a receive from rank " +
                                                 std::to_string(ep));
  }
  return 0;
}

// At finalize: what was sent completes, and the control receives are
// cancelled.
void Runtime::net_stop() {
  while (!netq_.empty() || !netout_.empty()) {
    if (!net_progress()) sched_yield();
  }
  for (uint32_t ep = 0; ep < nep; ep++) {
    if (!ctl_h_[ep]) continue;
    net_.cancel(net_.ctx, ctl_h_[ep]);
    for (int done = 0; !done;)
      if (net_.test(net_.ctx, ctl_h_[ep], &done)) break;
    ctl_h_[ep] = nullptr;
  }
  has_net_ = false;
}

// Control messages in and out.
bool Runtime::net_progress() {
  bool moved = false;
  for (uint32_t ep = 0; ep < nep; ep++) {
    if (!ctl_h_.empty() && ctl_h_[ep]) {
      for (int k = 0; k < 16 && room(); k++) {
        int done = 0;
        if (net_.test(net_.ctx, ctl_h_[ep], &done) || !done) break;
        ctl_h_[ep] = nullptr;
        dispatch(ep, ctl_in_[ep]);
        moved = true;
        if (net_.irecv(net_.ctx, static_cast<int>(ep), 0, &ctl_in_[ep], sizeof(Slot), &ctl_h_[ep])) {
          ctl_h_[ep] = nullptr;  // nothing more from ep: its collectives will not complete
          break;
        }
      }
    }
  }
  while (Entry *e = netq_.pop()) {
    cadrt_request_s *owner = e->owner;
    if (owner) owner->unsent--;
    const int err = net_.isend(net_.ctx, static_cast<int>(e->ep), 0, &e->slot, kHeaderBytes + e->slot.h.frag, &e->net);
    if (err) {
      pool_.put(e);
      if (owner && owner->active)
        fail(owner, err < 0 ? err : -EIO, "sending to rank " + std::to_string(e->ep) + " failed in the network transport",
             false);
      continue;
    }
    netout_.push(e);
    moved = true;
  }
  Queue keep;
  while (Entry *e = netout_.pop()) {
    int done = 0;
    if (net_.test(net_.ctx, e->net, &done) == 0 && !done) keep.push(e);
    else pool_.put(e);
  }
  netout_ = keep;
  return moved;
}

// r's transfers with ranks on other nodes.
bool Runtime::net_request(cadrt_request_s *r) {
  bool moved = false;
  int err = 0;
  uint32_t bad = 0;
  for (size_t k = 0; k < r->netwait.size();) {
    const uint32_t node = r->netwait[k];
    Xfer &x = r->xfer[node];
    const cad_node &n = r->inst->prog.nodes[node];
    const uint32_t ep = r->comm->ep[n.peer];
    switch (x.state) {
      case kNetRecv:
        if (r->draining) {  // never posted: nothing to wait for
          x.state = kIdle;
          break;
        }
        if (!room()) break;
        x.token = next_token_++;
        err = net_.irecv(net_.ctx, static_cast<int>(ep), net_tag(x.token), at(r, n.dst_buf, n.dst_off), n.len, &x.net);
        if (!err) {
          MsgHeader h = header(r, node, kCts);
          h.addr = x.token;
          push(ep, h, nullptr, 0, r);
          x.state = kNetWait;
          moved = true;
        }
        break;
      case kNetSend:  // (also when r failed: the receiver waits for it)
        err = net_.isend(net_.ctx, static_cast<int>(ep), net_tag(x.token), at(r, n.src_buf, n.src_off), n.len, &x.net);
        if (!err) {
          x.state = kNetWait;
          moved = true;
        }
        break;
      case kNetWait: {
        int done = 0;
        err = net_.test(net_.ctx, x.net, &done);
        if (!err && done) {
          x.net = nullptr;
          x.state = kIdle;
          if (!r->draining) complete(r, node);
          moved = true;
        }
        break;
      }
      default:
        break;
    }
    if (err) {
      x.state = kIdle;
      bad = n.peer;
      break;
    }
    if (x.state == kIdle) {
      r->netwait[k] = r->netwait.back();
      r->netwait.pop_back();
    } else {
      k++;
    }
  }
  if (err) {
    fail(r, err < 0 ? err : -EIO, "a transfer with rank " + std::to_string(bad) + " failed in the network transport",
         true);
    if (r->draining && !exposed(r)) finish(r);
  }
  return moved;
}

}  // namespace cadrt
