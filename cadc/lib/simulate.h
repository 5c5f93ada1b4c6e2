// simulate.h - what an instance of an algorithm would cost on a node
// under a simple model (cadc simulate): every rank has one CPU, which
// does that rank's work one operation at a time, in the order the work
// became ready (ties: the lower rank, then program order).  With
// CostModel::cpus = C > 0 the ranks share C CPUs, rank r on CPU r mod C
// (how cadrun --bind core places more ranks than cores), each CPU doing
// its ranks' work one operation at a time in the same order.
//   - COPY of b bytes: beta * b of the rank's CPU; REDUCE: gamma * b;
//     a NOP (a join, a fence): nothing.
//   - A message (a matched send and receive) is ready when both its
//     operations are (all their predecessors done); then the copier's CPU
//     spends alpha on it (the system call, the handshake, the matching)
//     and beta * b copying its b bytes -- the receiver's CPU, unless the
//     program says the sender writes (KNEM's direction control, as cadrt
//     and cad.ko do it); both sides complete then.  The other side's CPU
//     is free meanwhile.
//   - A message of at most eager_bytes is eager instead, as cadrt sends
//     one that fits a slot of its ring (1984 bytes, cadrt/src/shm.h): the
//     send is ready when its own predecessors are done, costs the sender's
//     CPU alpha_eager / 2 + beta * b (into the ring) and completes then;
//     the receive is ready when its predecessors and the send are done and
//     costs the receiver's CPU the same (out of the ring).  A rendezvous
//     (RTS, the copy, FIN) costs several times an eager message here
//     (bench/sim_check.py fits both).  eager_bytes 0: every message is a
//     rendezvous (cad.ko's kernel engine copies every message once).
//   - Ranks that share a CPU take turns on it: a CPU that turns from one
//     rank's work to another's spends switch_ns first (the scheduler
//     giving the core to the other process, which a spinning or sleeping
//     waiter makes cost far more than a context switch alone; alg_bench
//     measures it as the one-way time of an eager message between two
//     ranks on one core less that between two cores).  None with a CPU
//     per rank.  While the rank it ran last has work ready, the CPU goes
//     on with that rank's work, as a scheduler leaves a process that does
//     not block (without it, 4 ranks on 2 CPUs turned at nearly every
//     operation and the model priced them 1.3x the measured time).
// This is the model bench/seg_bench.c fits (a pipelined chain costs
// (P - 2 + segments) (alpha + beta seg)), with the per-CPU contention a
// formula leaves out: a rank's CPU is the bottleneck where many copies
// land on it, and a pipeline's stages overlap as far as the dependencies
// and the CPUs let them.  The instance must have passed verify_instance
// (matching, no deadlock): simulate() assumes it.
#pragma once

#include <cstdint>
#include <vector>

#include "instance.h"
#include "verify.h"

namespace cad {

struct CostModel {
  double alpha_ns = 4900;  // per message (bench/results/segments.json's fit on the 2-core VM)
  double beta_ns = 0.18;   // per byte copied (ibid.)
  double gamma_ns = 0.25;  // per byte reduced (a round figure: a sum streams two inputs)
  uint32_t cpus = 0;       // CPUs the ranks share, rank r on r mod cpus; 0: one per rank
  // Eager messages (above): up to eager_bytes, alpha_eager_ns per message,
  // half on each side (an 8-byte ping-pong's one-way time on cadrt's
  // thread engine on the 2-core VM).
  uint64_t eager_bytes = 1984;
  double alpha_eager_ns = 800;
  // A CPU's turn from one rank's work to another's (above): about what
  // bench/sim_check.py measures at 3 and 4 ranks on the 2-core VM.
  double switch_ns = 6000;
};

struct SimOp {
  double ready = 0;        // all its predecessors done (a message: both sides')
  double start = 0, end = 0;  // its CPU work (a message: alpha and the copy; an eager one: its side's)
  int32_t by = -1;         // the rank whose work it was (a message: its copier; eager: its side's), -1 none
  int32_t cpu = -1;        // the CPU that did it (by mod cpus; by with one CPU per rank), -1 none
  uint64_t after = kNone;  // what it waited for last: a predecessor or the CPU's previous job
  double switched = 0;     // the CPU's turn to this rank's work just before start (switch_ns), or 0
  static constexpr uint64_t kNone = ~uint64_t{0};
};

struct SimRank {
  double done = 0;         // its last operation's end
  double busy = 0;         // CPU time of its work
  uint64_t copied = 0;     // bytes it copied for messages (in or out; eager: both sides)
};

struct Simulation {
  double time = 0;                // the last rank's end, ns
  std::vector<SimOp> ops;         // by global id (Matching::base); a rendezvous's two sides alike
  std::vector<SimRank> ranks;
  std::vector<uint64_t> critical; // global ids, first to last: the chain that set the time
  uint64_t switches = 0;          // turns of a CPU from one rank's work to another's
};

// Whether a matched message of len bytes is eager under the model.
inline bool eager_message(uint64_t len, const CostModel &model) {
  return model.eager_bytes != 0 && len <= model.eager_bytes;
}

Simulation simulate(const std::vector<RankProgram> &progs, const Matching &match, const CostModel &model);

}  // namespace cad
