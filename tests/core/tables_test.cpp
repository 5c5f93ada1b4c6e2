// tables_test.cpp - the name, size and format tables expanded from the
// ABI's X-macro lists.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "../../kmod/core/cad_core.h"

TEST(Tables, EveryEntryHasAUniqueName) {
  struct List {
    const char *(*fn)(unsigned);
    unsigned count;
  } lists[] = {
      {cad_node_kind_name, CAD_NODE_KIND_COUNT}, {cad_dtype_name, CAD_DT_COUNT},
      {cad_op_name, CAD_OP_COUNT},               {cad_collective_name, CAD_COLL_COUNT},
      {cad_buffer_kind_name, CAD_BUF_KIND_COUNT}, {cad_section_name, CAD_SEC_COUNT},
  };
  for (const List &l : lists) {
    std::set<std::string> seen;
    for (unsigned v = 0; v < l.count; v++) {
      std::string name = l.fn(v);
      EXPECT_NE(name, "?") << v;
      EXPECT_TRUE(seen.insert(name).second) << name;
    }
    EXPECT_STREQ(l.fn(l.count), "?");
    EXPECT_STREQ(l.fn(~0u), "?");
  }
}

TEST(Tables, DatatypeSizesAreTheCTypes) {
  EXPECT_EQ(cad_dtype_size(CAD_DT_BYTE), 1u);
  EXPECT_EQ(cad_dtype_size(CAD_DT_INT16), sizeof(int16_t));
  EXPECT_EQ(cad_dtype_size(CAD_DT_UINT64), sizeof(uint64_t));
  EXPECT_EQ(cad_dtype_size(CAD_DT_FLOAT), sizeof(float));
  EXPECT_EQ(cad_dtype_size(CAD_DT_DOUBLE), sizeof(double));
  EXPECT_EQ(cad_dtype_size(CAD_DT_USER), 0u);
  EXPECT_EQ(cad_dtype_size(CAD_DT_COUNT), 0u);
}

TEST(Tables, VmOpcodesHaveFormatsAndUniqueMnemonics) {
  std::set<std::string> names;
  unsigned defined = 0;
  for (unsigned c = 0; c < 256; c++) {
    const cad_vm_format f = cad_vm_opcode_format(c);
    if (f == CAD_VMF_INVALID) {
      EXPECT_STREQ(cad_vm_opcode_name(c), "?") << c;
      continue;
    }
    defined++;
    std::string name = cad_vm_opcode_name(c);
    EXPECT_TRUE(names.insert(name).second) << name;
    const unsigned w = cad_vm_opcode_width(c);
    if (f == CAD_VMF_LD || f == CAD_VMF_ST) {
      EXPECT_TRUE(w == 1 || w == 2 || w == 4 || w == 8) << name;
      EXPECT_NE(name.find(std::to_string(w * 8)), std::string::npos) << name;
    } else if (f == CAD_VMF_SPILL || f == CAD_VMF_FILL) {
      EXPECT_EQ(w, 8u) << name;  // a slot holds 64 bits
    } else {
      EXPECT_EQ(w, 0u) << name;
    }
  }
  EXPECT_GE(defined, 80u);
  EXPECT_EQ(cad_vm_opcode_format(CAD_VM_EXIT), CAD_VMF_EXIT);
  EXPECT_EQ(cad_vm_opcode_format(CAD_VM_SEL), CAD_VMF_SEL);
  EXPECT_EQ(cad_vm_opcode_format(1000), CAD_VMF_INVALID);
}
