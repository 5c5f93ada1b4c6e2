// disasm_test.cpp - the disassembler's text for a program with every node
// kind, both direction hints, line info, and an operator using every
// instruction format.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_program.h"

namespace {

const char kStrings[] = "\0in\0out\0t.cad\0op1\0demo\0";  // 0 "", 1 in, 4 out, 8 t.cad, 14 op1, 18 demo

std::string Disasm(const cad_prog &p) {
  std::string text;
  cad_disasm(
      &p,
      [](void *ctx, const char *s, __u32 len) { static_cast<std::string *>(ctx)->append(s, len); },
      &text);
  return text;
}

cad_node Node(unsigned kind) {
  cad_node n{};
  n.kind = static_cast<__u8>(kind);
  n.line = CAD_NO_LINE;
  return n;
}

}  // namespace

TEST(Disasm, EveryNodeKindAndInstructionFormat) {
  const cad_buffer bufs[] = {{CAD_BUF_SEND, CAD_ACC_READ, 64, 1, 0},
                             {CAD_BUF_RECV, CAD_ACC_READ | CAD_ACC_WRITE, 64, 4, 0},
                             {CAD_BUF_SCRATCH, CAD_ACC_READ | CAD_ACC_WRITE, 32, 0, 0}};
  const cad_line lines[] = {{8, 3, 7, 0}, {8, 9, 1, 0}};
  cad_node n[6] = {Node(CAD_NODE_RECV), Node(CAD_NODE_COPY), Node(CAD_NODE_REDUCE),
                   Node(CAD_NODE_REDUCE), Node(CAD_NODE_NOP), Node(CAD_NODE_SEND)};
  n[0].dst_buf = 2; n[0].len = 16; n[0].peer = 2; n[0].tag = 5;
  n[0].flags = CAD_XFER_SENDER_WRITES; n[0].line = 0; n[0].edge_count = 2;
  n[1].dst_buf = 1; n[1].src_buf = 0; n[1].len = 8; n[1].dst_off = 8; n[1].edge_first = 2;
  n[2].op = CAD_OP_SUM; n[2].dtype = CAD_DT_DOUBLE; n[2].dst_buf = 1; n[2].src_buf = 2;
  n[2].len = 16; n[2].edge_first = 2; n[2].edge_count = 1;
  n[3].op = CAD_OP_USER; n[3].dtype = CAD_DT_USER; n[3].dst_buf = 1; n[3].src_buf = 2;
  n[3].dst_off = 16; n[3].len = 16; n[3].edge_first = 3; n[3].edge_count = 1;
  n[4].edge_first = 4; n[4].edge_count = 1;
  n[5].src_buf = 1; n[5].len = 64; n[5].peer = 0; n[5].tag = 1;
  n[5].flags = CAD_XFER_RECEIVER_READS; n[5].line = 1; n[5].edge_first = 5;
  const cad_edge edges[] = {{2}, {3}, {4}, {4}, {5}};
  const cad_vm_insn code[] = {
      {CAD_VM_LD_64, 0, 0, 0, 0},  {CAD_VM_LD_I32, 1, 1, 0, 8}, {CAD_VM_JZ, 0, 1, 0, 2},
      {CAD_VM_MOVI, 2, 0, 0, -7},  {CAD_VM_JA, 0, 0, 0, 1},     {CAD_VM_LDK, 2, 0, 0, 0},
      {CAD_VM_FNEG, 3, 0, 0, 0},   {CAD_VM_FADD, 4, 3, 0, 0},   {CAD_VM_SEL, 5, 1, 4, 2},
      {CAD_VM_SPILL, 0, 5, 0, 63}, {CAD_VM_FILL, 6, 0, 0, 63},  {CAD_VM_ST_64, 0, 6, 0, 0},
      {CAD_VM_EXIT, 0, 0, 0, 0},
  };
  const __u64 consts[] = {0x4000000000000000ull};
  const cad_user_op op = {14, 16, 0, 13, 0, 1, 0, 1};
  cad_image_desc d{};
  d.rank = 1;
  d.nranks = 3;
  d.collective = CAD_COLL_ALLREDUCE;
  d.name = 18;
  d.buffers = bufs;
  d.n_buffers = 3;
  d.nodes = n;
  d.n_nodes = 6;
  d.edges = edges;
  d.n_edges = 5;
  d.ops = &op;
  d.n_ops = 1;
  d.code = code;
  d.n_code = 13;
  d.consts = consts;
  d.n_consts = 1;
  d.lines = lines;
  d.n_lines = 2;
  d.strings = kStrings;
  d.n_strings = sizeof(kStrings) - 1;
  cad_test::Program program(d);
  ASSERT_EQ(program.rc, 0) << program.message;
  const cad_prog &p = program.prog;
  EXPECT_EQ(Disasm(p),
            "; cad v1 \"demo\" allreduce, rank 1 of 3: 3 buffers, 6 nodes, 5 edges, 1 ops\n"
            "buffer b0 send r- 64 \"in\"\n"
            "buffer b1 recv rw 64 \"out\"\n"
            "buffer b2 scratch rw 32 \"\"\n"
            "node 0 recv b2[0:16] <- rank 2 tag 5 sender-writes -> 2, 3   ; t.cad:3:7\n"
            "node 1 copy b1[8:16] <- b0[0:8]\n"
            "node 2 reduce sum.f64 b1[0:16] <- b2[0:16] -> 4\n"
            "node 3 reduce user.op1 b1[16:32] <- b2[0:16] -> 4\n"
            "node 4 nop -> 5\n"
            "node 5 send b1[0:64] -> rank 0 tag 1 receiver-reads   ; t.cad:9:1\n"
            "op 0 \"op1\" elem 16 noncommutative   ; t.cad:9:1\n"
            "     0: ld.64 r0, in+0\n"
            "     1: ld.i32 r1, inout+8\n"
            "     2: jz r1, +2   ; -> 5\n"
            "     3: movi r2, -7\n"
            "     4: ja +1   ; -> 6\n"
            "     5: ldk r2, k0   ; 0x4000000000000000\n"
            "     6: fneg r3, r0\n"
            "     7: fadd r4, r3, r0\n"
            "     8: sel r5, r1 ? r4 : r2\n"
            "     9: spill s63, r5\n"
            "    10: fill r6, s63\n"
            "    11: st.64 inout+0, r6\n"
            "    12: exit\n");
  char line[128];
  EXPECT_EQ(cad_disasm_node(&p, 5, line, sizeof(line)), 65);
  EXPECT_STREQ(line, "node 5 send b1[0:64] -> rank 0 tag 1 receiver-reads   ; t.cad:9:1");
  char small[10];
  EXPECT_EQ(cad_disasm_node(&p, 5, small, sizeof(small)), 65);
  EXPECT_STREQ(small, "node 5 se");
}
