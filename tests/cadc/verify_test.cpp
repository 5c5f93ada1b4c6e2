// verify_test.cpp - whole-instance verification: figures of a correct
// algorithm, and the order of a non-commutative reduction.
#include "helpers.h"
#include "verify.h"

TEST(Verify, ChainBroadcastFigures) {
  cad_test::Compiled c(R"(algorithm chain : bcast
  param seg = 3
{
  let me = (rank - root) % P
  for k in 0 .. ceil_div(n, seg) {
    let lo = k * seg
    let hi = min(lo + seg, n)
    if me > 0 {
      recv buf[lo:hi] from (rank - 1) % P
    }
    if me < P - 1 {
      send buf[lo:hi] to (rank + 1) % P
    }
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::Diagnostics d;
  cad::InstanceResult r = cad::verify_instance(c.alg(), cad_test::spec(4, 10, 2), c.sm, &d);
  ASSERT_EQ(r.outcome, cad::Outcome::Verified) << (d.empty() ? "" : d.list()[0].message);
  EXPECT_EQ(r.stats.messages, 3u * 4);  // 3 hops, 4 segments
  EXPECT_EQ(r.stats.bytes, 3u * 10 * 4);
  EXPECT_EQ(r.stats.critical_path, 3u);
  EXPECT_EQ(r.stats.max_scratch, 0u);
}

// Rank r receives x0 o ... o x(r-1) and passes on that o x(r): `reduce
// acc from tmp` computes tmp o acc, the source on the left.
static const char *kScan = R"(algorithm fold : reduce
  scratch tmp[n]
  scratch acc[n]
{
  if rank > 0 {
    recv tmp from rank - 1
  }
  if rank < P - 1 {
    if rank > 0 {
      copy acc from sendbuf
      reduce acc from tmp
      send acc to rank + 1
    } else {
      send sendbuf to rank + 1
    }
  } else if P > 1 {
    WHICH
  } else {
    copy recvbuf from sendbuf
  }
})";

static cad::Outcome fold(const std::string &last_step, bool commutative, std::string *why) {
  std::string text = kScan;
  text.replace(text.find("WHICH"), 5, last_step);
  cad_test::Compiled c(text);
  EXPECT_TRUE(c.ok()) << c.errors();
  cad::InstanceSpec s = cad_test::spec(4, 3, 3);
  s.commutative = commutative;
  cad::Diagnostics d;
  cad::InstanceResult r = cad::verify_instance(c.alg(), s, c.sm, &d);
  *why = d.empty() ? "" : d.list()[0].message + " / " + (d.list()[0].witness.empty() ? "" : d.list()[0].witness[0]);
  return r.outcome;
}

TEST(Verify, NonCommutativeOrderIsChecked) {
  std::string why;
  // tmp = x0 o x1 o x2; recvbuf = tmp o x3: copy x3 in, then reduce tmp from the left.
  EXPECT_EQ(fold("copy recvbuf from sendbuf\n    reduce recvbuf from tmp", false, &why), cad::Outcome::Verified) << why;
  // recvbuf = x3 o (x0 o x1 o x2): the wrong order, right only if the op commutes.
  const char *swapped = "copy recvbuf from tmp\n    reduce recvbuf from sendbuf";
  EXPECT_EQ(fold(swapped, false, &why), cad::Outcome::Failed);
  EXPECT_NE(why.find("wrong result"), std::string::npos) << why;
  EXPECT_EQ(fold(swapped, true, &why), cad::Outcome::Verified) << why;
}


// A broken algorithm fails with the same diagnostics at a small and a
// large P (or n): the large instance's state is kept compact (runs of
// blocks, reachability without bitsets, sets of ranks as intervals),
// never coarser.
namespace {

// Code, line, message, witness and notes of each diagnostic.
std::vector<std::string> diagnostics_of(const cad_test::Compiled &c, const cad::InstanceSpec &s) {
  cad::Diagnostics d;
  EXPECT_EQ(cad::verify_instance(c.alg(), s, c.sm, &d).outcome, cad::Outcome::Failed);
  std::vector<std::string> lines;
  for (const cad::Diagnostic &x : d.list()) {
    lines.push_back(std::string(cad::code_id(x.code)) + " line " + std::to_string(x.loc.line) + ": " + x.message);
    for (const std::string &w : x.witness) lines.push_back("  " + w);
    for (const cad::Note &n : x.notes) lines.push_back("  note line " + std::to_string(n.loc.line) + ": " + n.message);
  }
  return lines;
}

}  // namespace

TEST(Verify, WrongBlocksAreReportedAlikeAtAnyP) {
  // Every rank sends rank P - 1 its block 0 instead of its block P - 1.
  cad_test::Compiled c(R"(algorithm skewed : alltoall
{
  copy recvbuf[rank * n:rank * n + n] from sendbuf[rank * n:rank * n + n]
  for k in 1 .. P {
    let dst = (rank + k) % P
    let src = (rank - k) % P
    let at = dst == P - 1 ? 0 : dst
    send sendbuf[at * n:at * n + n] to dst
    recv recvbuf[src * n:src * n + n] from src
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  for (const int64_t P : {5, 300}) {
    // Blocks 0 .. P - 2 of rank P - 1 are one run: its first block is reported.
    const std::string last = std::to_string(P - 1), from = std::to_string(3 * (P - 1)), to = std::to_string(3 * P);
    EXPECT_EQ(diagnostics_of(c, cad_test::spec(P, 3)),
              (std::vector<std::string>{"CAD-E036 line 9: wrong result: rank " + last + "'s recvbuf[0:3] is wrong",
                                        "  it holds rank 0's input [0:3]",
                                        "  it should hold rank 0's input [" + from + ":" + to + "]"}))
        << "P = " << P;
  }
}

TEST(Verify, ARaceIsReportedAlikeInALongProgram) {
  // A chain broadcast that forwards its last segment while it arrives;
  // at n = 9000 a rank has 18000 operations.
  cad_test::Compiled c(R"(algorithm late_race : bcast
{
  let me = (rank - root) % P
  for k in 0 .. n {
    if me > 0 && k == n - 1 && me < P - 1 {
      parallel {
        recv buf[k:k + 1] from (rank - 1) % P
        send buf[k:k + 1] to (rank + 1) % P
      }
    } else {
      if me > 0 {
        recv buf[k:k + 1] from (rank - 1) % P
      }
      if me < P - 1 {
        send buf[k:k + 1] to (rank + 1) % P
      }
    }
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  for (const int64_t n : {4, 9000}) {
    const std::string seg = "buf[" + std::to_string(n - 1) + ":" + std::to_string(n) + "]";
    std::vector<std::string> want;
    for (const std::string r : {"1", "2"}) {
      const std::string next = r == "1" ? "2" : "3", prev = r == "1" ? "0" : "1";
      want.push_back("CAD-E035 line 8: race: " + seg + " is read and written by two operations that nothing orders");
      want.push_back("  note line 7: writes it (rank " + r + ": recv " + seg + " from " + prev + ")");
      want.push_back("  note line 8: reads it (rank " + r + ": send " + seg + " to " + next + ")");
    }
    EXPECT_EQ(diagnostics_of(c, cad_test::spec(4, n)), want) << "n = " << n;
  }
}

TEST(Verify, ABarrierShortOfARoundIsReportedAlikeAtAnyP) {
  // A dissemination barrier one round short: rank 0 has heard from
  // 2^(rounds) - 1 ranks before it (cyclically), not from rank 1.
  cad_test::Compiled c(R"(algorithm short_barrier : barrier
  scratch token[0]
{
  for k in 0 .. ceil_log2(P) - 1 {
    let h = pow2(k)
    send token to (rank + h) % P
    recv token from (rank - h) % P
    fence
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  for (const int64_t P : {5, 1000}) {
    const std::vector<std::string> d = diagnostics_of(c, cad_test::spec(P, 0));
    EXPECT_EQ(d, (std::vector<std::string>{
                     "CAD-E037 line 8: rank 0 can leave the barrier before rank 1 has entered it",
                     "  no chain of messages from rank 1's first operation reaches rank 0's last"}))
        << "P = " << P;
  }
}
