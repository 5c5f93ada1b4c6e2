// writer_test.cpp - the image layout: header, then the sections in ABI
// order, each 8-byte aligned; empty sections have offset 0.
#include <vector>

#include <gtest/gtest.h>

#include "../../kmod/core/cad_core.h"

TEST(Writer, EmptyProgramIsJustTheHeader) {
  cad_image_desc d{};
  d.nranks = 1;
  EXPECT_EQ(cad_image_size(&d), sizeof(cad_prog_header));
  EXPECT_EQ(sizeof(cad_prog_header), 160u);
  EXPECT_EQ(sizeof(cad_node), 64u);
  EXPECT_EQ(sizeof(cad_buffer), 24u);
  EXPECT_EQ(sizeof(cad_user_op), 32u);
  EXPECT_EQ(sizeof(cad_vm_insn), 8u);
  EXPECT_EQ(sizeof(cad_line), 16u);
}

TEST(Writer, SectionsAreAlignedAndInOrder) {
  const cad_buffer bufs[3] = {};
  const cad_edge edges[3] = {{1}, {2}, {3}};  // 12 bytes: the next section must realign
  const char strings[] = "\0abc";
  cad_image_desc d{};
  d.nranks = 2;
  d.rank = 1;
  d.buffers = bufs;
  d.n_buffers = 3;
  d.edges = edges;
  d.n_edges = 3;
  d.strings = strings;
  d.n_strings = 5;
  const uint64_t size = cad_image_size(&d);
  EXPECT_EQ(size, 160u + 72u + 16u + 8u);
  std::vector<uint64_t> img(size / 8);
  ASSERT_EQ(cad_image_write(&d, img.data(), size), 0);
  const auto *h = reinterpret_cast<const cad_prog_header *>(img.data());
  EXPECT_EQ(h->magic, CAD_MAGIC);
  EXPECT_EQ(h->version, CAD_VERSION);
  EXPECT_EQ(h->total_size, size);
  EXPECT_EQ(h->rank, 1u);
  EXPECT_EQ(h->sec[CAD_SEC_BUFFERS].off, 160u);
  EXPECT_EQ(h->sec[CAD_SEC_NODES].off, 0u);
  EXPECT_EQ(h->sec[CAD_SEC_EDGES].off, 232u);
  EXPECT_EQ(h->sec[CAD_SEC_STRINGS].off, 248u);
  EXPECT_EQ(h->sec[CAD_SEC_EDGES].entsize, 4u);
  for (unsigned s = 0; s < CAD_SEC_COUNT; s++) EXPECT_EQ(h->sec[s].off % 8, 0u);
}

TEST(Writer, RefusesSmallOrMisalignedOutput) {
  cad_image_desc d{};
  d.nranks = 1;
  std::vector<uint64_t> img(40);
  EXPECT_EQ(cad_image_write(&d, img.data(), 159), -EINVAL);
  EXPECT_EQ(cad_image_write(&d, reinterpret_cast<char *>(img.data()) + 4, 200), -EINVAL);
  EXPECT_EQ(cad_image_write(&d, img.data(), 160), 0);
}

TEST(Writer, RefusesImagesOver4GiB) {
  cad_image_desc d{};
  d.nranks = 1;
  d.n_nodes = 0x4000000;  // 64 Mi nodes * 64 bytes = 4 GiB
  d.nodes = reinterpret_cast<const cad_node *>(8);  // never read
  EXPECT_EQ(cad_image_size(&d), 0u);
  uint64_t one = 0;
  EXPECT_EQ(cad_image_write(&d, &one, 8), -E2BIG);
}
