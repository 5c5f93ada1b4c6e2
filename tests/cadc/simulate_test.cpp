// simulate_test.cpp - the cost model of cadc/lib/simulate.h on instances
// whose times follow by hand: alpha + beta per byte of the copier's CPU
// per message (the receiver's unless the sender writes), beta per byte
// copied locally, gamma per byte reduced, one CPU per rank (or CPUs the
// ranks share); eager messages, alpha_eager / 2 + beta per byte on each
// side, the send done once it is in the ring.  (Without eager messages
// but where a test says so: the rendezvous is what most of them price.)
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "simulate.h"
#include "verify.h"

namespace {

using cad_test::Compiled;
using cad_test::spec;

constexpr double kAlpha = 1000, kBeta = 2, kGamma = 3, kAlphaEager = 100;

cad::Simulation run(const std::string &text, int64_t P, int64_t n, int64_t root = 0,
                    std::vector<std::pair<std::string, int64_t>> params = {}, uint32_t cpus = 0,
                    uint64_t eager_bytes = 0, double switch_ns = 0) {
  Compiled c(text);
  EXPECT_TRUE(c.ok()) << c.errors();
  cad::InstanceSpec s = spec(P, n, root);
  s.params = std::move(params);
  cad::Diagnostics d;
  std::vector<cad::RankProgram> progs;
  EXPECT_EQ(cad::verify_instance(c.alg(), s, c.sm, &d, &progs).outcome, cad::Outcome::Verified);
  const cad::Matching m = cad::match_messages(progs);
  cad::CostModel model;
  model.alpha_ns = kAlpha;
  model.beta_ns = kBeta;
  model.gamma_ns = kGamma;
  model.cpus = cpus;
  model.eager_bytes = eager_bytes;
  model.alpha_eager_ns = kAlphaEager;
  model.switch_ns = switch_ns;
  cad::Simulation sim = cad::simulate(progs, m, model);
  // The critical path ends at the time, and each link starts where the
  // one before ended (after its CPU's turn to its rank, if it took one).
  EXPECT_FALSE(sim.critical.empty());
  if (!sim.critical.empty()) {
    EXPECT_DOUBLE_EQ(sim.ops[sim.critical.back()].end, sim.time);
  }
  for (size_t i = 1; i < sim.critical.size(); i++)
    EXPECT_DOUBLE_EQ(sim.ops[sim.critical[i]].start - sim.ops[sim.critical[i]].switched,
                     sim.ops[sim.critical[i - 1]].end);
  return sim;
}

const char *kLinear = R"(
algorithm lin : bcast
{
  if rank == root {
    for i in 1 .. P {
      send buf to (root + i) % P
    }
  } else {
    recv buf from root
  }
}
)";

TEST(Simulate, OneMessageIsAlphaPlusItsCopy) {
  const cad::Simulation s = run(kLinear, 2, 100);  // i32: 400 bytes
  EXPECT_DOUBLE_EQ(s.time, kAlpha + kBeta * 400);
  EXPECT_DOUBLE_EQ(s.ranks[0].busy, 0);  // the receiver reads
  EXPECT_DOUBLE_EQ(s.ranks[1].busy, kAlpha + kBeta * 400);
  EXPECT_EQ(s.ranks[1].copied, 400u);
}

TEST(Simulate, ReceiversThatReadCopyAtOnce) {
  // Every receiver's own CPU copies: three copies side by side.
  const cad::Simulation s = run(kLinear, 4, 100);
  EXPECT_DOUBLE_EQ(s.time, kAlpha + kBeta * 400);
  EXPECT_EQ(s.critical.size(), 1u);
}

TEST(Simulate, ASenderThatWritesCopiesOneAfterAnother) {
  // by sender: the root's CPU does all three copies, in program order.
  std::string text = kLinear;
  text.replace(text.find("% P\n"), 4, "% P by sender\n");
  text.replace(text.find("from root\n"), 10, "from root by sender\n");
  const cad::Simulation s = run(text, 4, 100);
  EXPECT_DOUBLE_EQ(s.time, 3 * (kAlpha + kBeta * 400));
  EXPECT_DOUBLE_EQ(s.ranks[0].busy, 3 * (kAlpha + kBeta * 400));
  EXPECT_EQ(s.ranks[0].copied, 1200u);
  EXPECT_EQ(s.critical.size(), 3u);  // the root's copies, each after the one before
}

TEST(Simulate, APipelineOverlapsItsStages) {
  // A chain 0 -> 1 -> 2 of two segments of s bytes: rank 1 takes both in
  // (the second as soon as its CPU is free), rank 2 the first while rank 1
  // takes the second, then the second: (P - 2 + segments) (alpha + beta s),
  // bench/seg_bench.c's model.
  const char *chain = R"(
algorithm chain : bcast
  param seg = 1
{
  for s in 0 .. ceil_div(n, seg) {
    let lo = s * seg
    let hi = min(n, lo + seg)
    if rank > 0 {
      recv buf[lo:hi] from rank - 1
    }
    if rank < P - 1 {
      send buf[lo:hi] to rank + 1
    }
  }
}
)";
  const cad::Simulation s = run(chain, 3, 200, 0, {{"seg", 100}});
  EXPECT_DOUBLE_EQ(s.time, 3 * (kAlpha + kBeta * 400));
  EXPECT_DOUBLE_EQ(s.ranks[1].done, 3 * (kAlpha + kBeta * 400));  // its second send is rank 2's copy
  EXPECT_DOUBLE_EQ(s.ranks[1].busy, 2 * (kAlpha + kBeta * 400));
}

TEST(Simulate, ReductionsCostGammaOnTheirRank) {
  const char *sum = R"(
algorithm two : allreduce
  scratch tmp[n]
{
  copy recvbuf from sendbuf
  send sendbuf to (rank + 1) % P
  recv tmp from (rank + 1) % P
  reduce recvbuf from tmp
}
)";
  const cad::Simulation s = run(sum, 2, 100);
  // Each rank's CPU: the copy (beta 400), its receive (alpha, beta 400),
  // then the reduction (gamma 400).
  EXPECT_DOUBLE_EQ(s.time, kAlpha + 2 * kBeta * 400 + kGamma * 400);
  EXPECT_DOUBLE_EQ(s.ranks[0].busy, s.time);
}

TEST(Simulate, ACpuDoesOneCopyAtATime) {
  // By hand (no edges): rank 0 writes 400 B and then 4 B into rank 1;
  // rank 3 reads 40 B from rank 2.  Rank 3's copy ends while rank 0's
  // first is under way: rank 0's second still waits for its CPU.
  auto xfer = [](uint8_t kind, uint32_t peer, uint32_t tag, uint64_t len, bool sender_writes) {
    cad::RankOp o;
    o.kind = kind;
    o.peer = peer;
    o.tag = tag;
    o.len = len;
    (kind == CAD_NODE_SEND ? o.src : o.dst) = 0;
    o.flags = sender_writes ? CAD_XFER_SENDER_WRITES : CAD_XFER_RECEIVER_READS;
    return o;
  };
  std::vector<cad::RankProgram> progs(4);
  progs[0].ops = {xfer(CAD_NODE_SEND, 1, 0, 400, true), xfer(CAD_NODE_SEND, 1, 1, 4, true)};
  progs[1].ops = {xfer(CAD_NODE_RECV, 0, 0, 400, true), xfer(CAD_NODE_RECV, 0, 1, 4, true)};
  progs[2].ops = {xfer(CAD_NODE_SEND, 3, 0, 40, false)};
  progs[3].ops = {xfer(CAD_NODE_RECV, 2, 0, 40, false)};
  for (uint32_t r = 0; r < 4; r++) {
    progs[r].rank = r;
    progs[r].edge_first.assign(progs[r].ops.size() + 1, 0);
  }
  cad::CostModel model;
  model.alpha_ns = kAlpha;
  model.beta_ns = kBeta;
  model.eager_bytes = 0;
  const cad::Simulation s = cad::simulate(progs, cad::match_messages(progs), model);
  EXPECT_DOUBLE_EQ(s.ops[4].end, kAlpha + kBeta * 40);  // rank 3's copy
  EXPECT_DOUBLE_EQ(s.ops[1].start, kAlpha + kBeta * 400);
  EXPECT_DOUBLE_EQ(s.time, 2 * kAlpha + kBeta * 404);
  EXPECT_EQ(s.ops[1].cpu, 0);
  EXPECT_EQ(s.ops[4].cpu, 3);
  // Its critical path: the second copy after the first on the same CPU.
  ASSERT_EQ(s.critical.size(), 2u);
  EXPECT_EQ(s.ops[s.critical[1]].after, s.critical[0]);
}

TEST(Simulate, RanksThatShareACpuTakeTurns) {
  // Four receivers that read, on 2 CPUs: ranks 1 and 3 share CPU 1, so
  // rank 3's copy waits for rank 1's; rank 2's runs beside on CPU 0.
  const cad::Simulation two = run(kLinear, 4, 100, 0, {}, 2);
  EXPECT_DOUBLE_EQ(two.time, 2 * (kAlpha + kBeta * 400));
  EXPECT_DOUBLE_EQ(two.ranks[3].busy, kAlpha + kBeta * 400);  // its own work, on a shared CPU
  ASSERT_EQ(two.critical.size(), 2u);
  EXPECT_EQ(two.ops[two.critical[0]].cpu, 1);
  EXPECT_EQ(two.ops[two.critical[0]].by, 1);
  EXPECT_EQ(two.ops[two.critical[1]].by, 3);
  // One CPU for all: the three copies one after another.
  EXPECT_DOUBLE_EQ(run(kLinear, 4, 100, 0, {}, 1).time, 3 * (kAlpha + kBeta * 400));
  // More CPUs than ranks: one per rank, as with 0.
  EXPECT_DOUBLE_EQ(run(kLinear, 4, 100, 0, {}, 64).time, kAlpha + kBeta * 400);
}

TEST(Simulate, ACpuThatTurnsToAnotherRankPaysTheSwitch) {
  constexpr double kSwitch = 700, kCopy = kAlpha + kBeta * 400;
  // CPU 1 runs rank 1's copy, then turns to rank 3's: one switch, on the
  // critical path before rank 3's copy.
  const cad::Simulation two = run(kLinear, 4, 100, 0, {}, 2, 0, kSwitch);
  EXPECT_DOUBLE_EQ(two.time, 2 * kCopy + kSwitch);
  EXPECT_EQ(two.switches, 1u);
  ASSERT_EQ(two.critical.size(), 2u);
  EXPECT_DOUBLE_EQ(two.ops[two.critical[0]].switched, 0);
  EXPECT_DOUBLE_EQ(two.ops[two.critical[1]].switched, kSwitch);
  EXPECT_DOUBLE_EQ(two.ranks[3].busy, kCopy);  // (the turn is not the rank's work)
  // One CPU: ranks 1, 2, 3 in turn, two switches.
  const cad::Simulation one = run(kLinear, 4, 100, 0, {}, 1, 0, kSwitch);
  EXPECT_DOUBLE_EQ(one.time, 3 * kCopy + 2 * kSwitch);
  EXPECT_EQ(one.switches, 2u);
  // A CPU per rank never turns.
  const cad::Simulation own = run(kLinear, 4, 100, 0, {}, 0, 0, kSwitch);
  EXPECT_DOUBLE_EQ(own.time, kCopy);
  EXPECT_EQ(own.switches, 0u);
  // An eager message between two ranks on one CPU: its send, a turn, its
  // receive.
  const cad::Simulation eager = run(kLinear, 2, 8, 0, {}, 1, 1984, kSwitch);
  EXPECT_DOUBLE_EQ(eager.time, kAlphaEager + 2 * kBeta * 32 + kSwitch);  // (8 elements of 4 bytes)
  EXPECT_EQ(eager.switches, 1u);
}

TEST(Simulate, AModelOfNaNsEndsToo) {
  // The library takes what it is given (the tool refuses NaN): times of
  // NaN compare unequal to themselves, and the events must still run out.
  Compiled c(kLinear);
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::Diagnostics d;
  cad::Instantiator in(c.alg(), spec(3, 10), &d);
  std::vector<cad::RankProgram> progs;
  ASSERT_TRUE(cad::instantiate_all(in, c.sm, &d, &progs));
  cad::CostModel model;
  model.alpha_ns = std::nan("");
  const cad::Simulation s = cad::simulate(progs, cad::match_messages(progs), model);
  EXPECT_EQ(s.ops.size(), 4u);
}

TEST(Simulate, EmptyMessagesCostAlpha) {
  const cad::Simulation s = run(kLinear, 3, 0);
  EXPECT_DOUBLE_EQ(s.time, kAlpha);
  EXPECT_DOUBLE_EQ(s.ranks[1].busy, kAlpha);
  // Eager: half of alpha_eager on each side.
  EXPECT_DOUBLE_EQ(run(kLinear, 3, 0, 0, {}, 0, 1984).ranks[1].busy, kAlphaEager / 2);
}

TEST(Simulate, AnEagerMessageCostsBothSidesAndTheSendDoesNotWait) {
  // 100 i32 = 400 B, eager up to 400: the root puts one message in the
  // ring after the other (its sends are done then); each receiver takes
  // its own out as soon as it is there.
  const double side = kAlphaEager / 2 + kBeta * 400;
  const cad::Simulation s = run(kLinear, 4, 100, 0, {}, 0, 400);
  EXPECT_DOUBLE_EQ(s.ranks[0].busy, 3 * side);
  EXPECT_DOUBLE_EQ(s.ranks[0].done, 3 * side);
  EXPECT_DOUBLE_EQ(s.ranks[1].done, 2 * side);  // sent first, out while the root sends to 2
  EXPECT_DOUBLE_EQ(s.ranks[3].done, 4 * side);
  EXPECT_DOUBLE_EQ(s.ranks[3].busy, side);
  EXPECT_DOUBLE_EQ(s.time, 4 * side);
  EXPECT_EQ(s.ranks[0].copied, 1200u);  // into the ring
  EXPECT_EQ(s.ranks[3].copied, 400u);   // out of it
  // The critical path: the root's three sends, then rank 3's receive.
  ASSERT_EQ(s.critical.size(), 4u);
  EXPECT_EQ(s.ops[s.critical[3]].by, 3);
  // One byte more than eager_bytes: a rendezvous, the receivers read at once.
  EXPECT_DOUBLE_EQ(run(kLinear, 4, 100, 0, {}, 0, 399).time, kAlpha + kBeta * 400);
}

TEST(Simulate, AnEagerSendCompletesBeforeItsReceiveIsPosted) {
  // By hand: rank 0 sends 400 B to rank 1, then copies 400 B; rank 1
  // copies 1000 B, then receives.  The send is in the ring at 850 and
  // rank 0's copy goes on at once; rank 1 takes the message out after its
  // copy.  (A rendezvous would hold rank 0's copy until 2000 + alpha.)
  cad::RankOp send, recv, copy0, copy1;
  send.kind = CAD_NODE_SEND;
  send.peer = 1;
  send.len = 400;
  send.src = 0;
  recv = send;
  recv.kind = CAD_NODE_RECV;
  recv.peer = 0;
  recv.dst = 0;
  copy0.kind = CAD_NODE_COPY;
  copy0.len = 400;
  copy0.src = 0;
  copy0.dst = 1;
  copy1 = copy0;
  copy1.len = 1000;
  std::vector<cad::RankProgram> progs(2);
  progs[0].ops = {send, copy0};
  progs[1].ops = {copy1, recv};
  for (uint32_t r = 0; r < 2; r++) {
    progs[r].rank = r;
    progs[r].edge_first = {0, 1, 1};
    progs[r].edges = {1};
  }
  cad::CostModel model;
  model.alpha_ns = kAlpha;
  model.beta_ns = kBeta;
  model.alpha_eager_ns = kAlphaEager;
  const double side = kAlphaEager / 2 + kBeta * 400;
  const cad::Simulation s = cad::simulate(progs, cad::match_messages(progs), model);
  EXPECT_DOUBLE_EQ(s.ops[0].end, side);                  // rank 0's send
  EXPECT_DOUBLE_EQ(s.ops[1].end, side + kBeta * 400);    // its copy
  EXPECT_DOUBLE_EQ(s.ops[3].start, kBeta * 1000);        // rank 1's receive
  EXPECT_DOUBLE_EQ(s.time, kBeta * 1000 + side);
  EXPECT_EQ(s.ops[3].after, 2u);  // it waited for its copy last, not the send
  model.eager_bytes = 0;
  const cad::Simulation r = cad::simulate(progs, cad::match_messages(progs), model);
  EXPECT_DOUBLE_EQ(r.ops[1].start, kBeta * 1000 + kAlpha + kBeta * 400);
}

}  // namespace
