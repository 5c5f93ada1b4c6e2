// instance_test.cpp - instantiation: tags, inferred dependencies and their
// transitive reduction, fence, parallel, MPI_IN_PLACE binding, emission.
#include <set>
#include <utility>

#include "../../kmod/core/cad_core.h"
#include "helpers.h"

namespace {

using Edges = std::set<std::pair<uint32_t, uint32_t>>;

Edges edges_of(const cad::RankProgram &p) {
  Edges e;
  for (uint32_t i = 0; i + 1 < p.edge_first.size(); i++)
    for (uint32_t k = p.edge_first[i]; k < p.edge_first[i + 1]; k++) e.insert({i, p.edges[k]});
  return e;
}

cad::RankProgram rank_program(const cad_test::Compiled &c, cad::InstanceSpec s, uint32_t r) {
  cad::Diagnostics d;
  cad::Instantiator in(c.alg(), s, &d);
  cad::RankProgram p;
  EXPECT_TRUE(in.rank(r, &p));
  for (const cad::Diagnostic &x : d.list()) ADD_FAILURE() << x.message;
  return p;
}

}  // namespace

TEST(Instance, TagsCountMessagesPerPeer) {
  cad_test::Compiled c(R"(algorithm t : bcast {
  if rank == 0 {
    send buf[0:1] to 1
    send buf[1:2] to 2
    send buf[2:3] to 1
    send buf[3:4] to 1 tag 9
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::RankProgram p = rank_program(c, cad_test::spec(3, 4), 0);
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(p.ops[0].tag, 0u);
  EXPECT_EQ(p.ops[1].tag, 0u);  // the first message to rank 2
  EXPECT_EQ(p.ops[2].tag, 1u);
  EXPECT_EQ(p.ops[3].tag, 9u | (1u << 30));  // explicit tags never meet assigned ones
}

TEST(Instance, PipelineSegmentsAreIndependent) {
  cad_test::Compiled c(R"(algorithm t : bcast {
  for k in 0 .. 3 {
    recv buf[k:k + 1] from 0
    send buf[k:k + 1] to 2
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  EXPECT_EQ(edges_of(rank_program(c, cad_test::spec(3, 3), 1)), (Edges{{0, 1}, {2, 3}, {4, 5}}));
}

TEST(Instance, ReadAfterWriteWriteAfterReadAndReduction) {
  // recv writes [0:4); send reads it (RAW); a second recv into [2:6)
  // must wait for the send (WAR) and the first recv (WAW, implied).
  cad_test::Compiled c(R"(algorithm t : bcast {
  recv buf[0:4] from 0
  send buf[0:4] to 2
  recv buf[2:6] from 0
  send buf[4:6] to 2
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  EXPECT_EQ(edges_of(rank_program(c, cad_test::spec(3, 6), 1)), (Edges{{0, 1}, {1, 2}, {2, 3}}));
}

TEST(Instance, FenceOrdersEverythingAndParallelNothing) {
  cad_test::Compiled c(R"(algorithm t : bcast
  scratch token[0]
{
  send token to 1
  send token to 2
  fence
  recv token from 1
  parallel {
    recv buf[0:2] from 2
    recv buf[0:2] from 1
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  // ops: 0 send, 1 send, 2 fence, 3 recv, 4 recv, 5 recv; the parallel
  // receives write the same elements and stay unordered.
  EXPECT_EQ(edges_of(rank_program(c, cad_test::spec(3, 2), 0)), (Edges{{0, 2}, {1, 2}, {2, 3}, {2, 4}, {2, 5}}));
}

TEST(Instance, InPlaceBindsSendbufIntoRecvbuf) {
  cad_test::Compiled c(R"(algorithm t : allreduce
  inplace
{
  copy recvbuf from sendbuf
  send recvbuf to (rank + 1) % P
  recv recvbuf from (rank - 1) % P
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::InstanceSpec s = cad_test::spec(2, 3);
  cad::RankProgram apart = rank_program(c, s, 0);
  EXPECT_EQ(apart.ops.size(), 3u);
  EXPECT_EQ(apart.ops[0].kind, CAD_NODE_COPY);
  s.inplace = true;
  cad::RankProgram inplace = rank_program(c, s, 0);
  ASSERT_EQ(inplace.ops.size(), 2u);  // the copy onto itself is gone
  EXPECT_EQ(inplace.buffers[0].elems, 0u);  // sendbuf lives in recvbuf
}

TEST(Instance, EmptyCopiesGoEmptyMessagesStay) {
  cad_test::Compiled c(R"(algorithm t : allreduce {
  copy recvbuf[0:0] from sendbuf[0:0]
  send sendbuf[0:0] to (rank + 1) % P
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::RankProgram p = rank_program(c, cad_test::spec(2, 3), 0);
  ASSERT_EQ(p.ops.size(), 1u);
  EXPECT_EQ(p.ops[0].kind, CAD_NODE_SEND);
  EXPECT_EQ(p.ops[0].len, 0u);
}

TEST(Instance, OneRankCostsOneRanksProgram) {
  // The runtime instantiates only its own rank: at P = 4096 one rank of a
  // rotated alltoall is its 2 * 4095 messages and a copy, nothing more.
  cad_test::Compiled c(R"(algorithm t : alltoall {
  copy recvbuf[rank * n:rank * n + n] from sendbuf[rank * n:rank * n + n]
  for k in 1 .. P {
    let to = (rank + k) % P
    let from = (rank - k) % P
    send sendbuf[to * n:to * n + n] to to
    recv recvbuf[from * n:from * n + n] from from
  }
})");
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::RankProgram p = rank_program(c, cad_test::spec(4096, 2), 17);
  EXPECT_EQ(p.ops.size(), 1u + 2 * 4095);
  EXPECT_TRUE(edges_of(p).empty());  // every range distinct: nothing to order
}

TEST(Instance, EmissionPassesTheCoreVerifierWithLineInfo) {
  cad_test::Compiled c("algorithm t : bcast {\n  if rank == 1 {\n    recv buf from 0\n  } else {\n    send buf to 1\n  }\n}\n");
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::Diagnostics d;
  cad::RankProgram p = rank_program(c, cad_test::spec(2, 5), 1);
  std::vector<uint64_t> image;
  uint32_t size = 0;
  ASSERT_TRUE(cad::emit_image(c.alg(), cad_test::spec(2, 5), p, c.sm, &image, &size, &d));
  cad_prog prog;
  ASSERT_EQ(cad_verify(image.data(), size, nullptr, &prog, nullptr), 0);
  char line[200];
  cad_disasm_node(&prog, 0, line, sizeof(line));
  EXPECT_STREQ(line, "node 0 recv b0[0:20] <- rank 0 tag 0   ; t.cad:3:5");
}

TEST(Instance, ErrorsNameTheRankAndInstance) {
  cad_test::Compiled c("algorithm t : bcast {\n  send buf[0:n + 1] to (rank + 1) % P\n}\n");
  ASSERT_TRUE(c.ok()) << c.errors();
  cad::Diagnostics d;
  cad::Instantiator in(c.alg(), cad_test::spec(3, 4), &d);
  cad::RankProgram p;
  EXPECT_FALSE(in.rank(2, &p));
  ASSERT_EQ(d.list().size(), 1u);
  EXPECT_EQ(d.list()[0].code, cad::Code::OutOfRange);
  EXPECT_EQ(d.list()[0].rank, 2);
  EXPECT_EQ(d.list()[0].instance, "P=3 n=4 root=0");
}
