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
