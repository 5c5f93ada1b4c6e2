// verifier_test.cpp - the verifier's table (verifier_cases.c, which also
// runs in the kernel), plus checks only user space can afford: every
// truncation and every single-byte corruption of the accepted programs.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "exercise.h"
#include "suite_gtest.h"
#include "verifier_cases.h"

CAD_GTEST_SUITE(VerifierTable, cad_suite_verifier);

namespace {

std::vector<uint64_t> Image(const cad_image_desc &d) {
  std::vector<uint64_t> img((cad_image_size(&d) + 7) / 8);
  EXPECT_EQ(cad_image_write(&d, img.data(), img.size() * 8), 0);
  return img;
}

int Verify(const void *img, uint32_t size, cad_prog *p, std::string *msg,
           const cad_limits *lim = nullptr) {
  char buf[512];
  cad_log log;
  cad_log_init(&log, buf, sizeof(buf));
  int rc = cad_verify(img, size, lim, p, &log);
  if (msg) *msg = buf;
  return rc;
}

std::vector<const cad_vcase *> Accepted() {
  std::vector<const cad_vcase *> out;
  for (unsigned i = 0; i < cad_vcases_count; i++)
    if (cad_vcases[i].result == 0 && !cad_vcases[i].limits) out.push_back(&cad_vcases[i]);
  return out;
}

}  // namespace

TEST(Verifier, TableCoversAcceptAndRejectWithMessages) {
  std::set<std::string> names;
  unsigned accepted = 0, rejected = 0;
  for (unsigned i = 0; i < cad_vcases_count; i++) {
    const cad_vcase &c = cad_vcases[i];
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate name " << c.name;
    if (c.result == 0) {
      accepted++;
    } else {
      rejected++;
      EXPECT_TRUE(c.errstr && *c.errstr) << c.name << " has no expected message";
      EXPECT_TRUE(c.result == -EINVAL || c.result == -E2BIG) << c.name;
    }
  }
  EXPECT_GE(accepted + rejected, 60u);
  EXPECT_GE(accepted, 10u);
  EXPECT_GE(rejected, 50u);
}

// Cutting an accepted image anywhere is rejected, both as it is (the size
// no longer matches the header) and with the header claiming the cut size
// (so that the section checks meet the truncation).
TEST(Verifier, EveryTruncationIsRejected) {
  for (const cad_vcase *c : Accepted()) {
    std::vector<uint64_t> img = Image(c->desc);
    const uint32_t size = static_cast<uint32_t>(cad_image_size(&c->desc));
    for (uint32_t cut = 0; cut < size; cut++) {
      std::vector<uint64_t> copy = img;
      cad_prog p;
      std::string msg;
      EXPECT_EQ(Verify(copy.data(), cut, &p, &msg), -EINVAL) << c->name << " cut at " << cut;
      EXPECT_FALSE(msg.empty());
      if (cut >= sizeof(cad_prog_header)) {
        reinterpret_cast<cad_prog_header *>(copy.data())->total_size = cut;
        int rc = Verify(copy.data(), cut, &p, &msg);
        // Cutting only the padding after the last section keeps it valid.
        if (rc == 0) {
          EXPECT_GE(cut, size - 7) << c->name;
        } else {
          EXPECT_EQ(rc, -EINVAL) << c->name << " cut at " << cut << ": " << msg;
        }
      }
    }
  }
}

// Every byte of every accepted image set to 0, 0xff, flipped in its low
// and high bit: never a crash, and what is still accepted runs cleanly.
TEST(Verifier, EverySingleByteCorruptionIsHandled) {
  unsigned still_accepted = 0, rejected = 0;
  for (const cad_vcase *c : Accepted()) {
    std::vector<uint64_t> img = Image(c->desc);
    const uint32_t size = static_cast<uint32_t>(cad_image_size(&c->desc));
    for (uint32_t at = 0; at < size; at++) {
      const uint8_t orig = reinterpret_cast<uint8_t *>(img.data())[at];
      for (uint8_t v : {uint8_t(0), uint8_t(0xff), uint8_t(orig ^ 1), uint8_t(orig ^ 0x80)}) {
        std::vector<uint64_t> copy = img;
        reinterpret_cast<uint8_t *>(copy.data())[at] = v;
        cad_prog p;
        std::string msg;
        int rc = Verify(copy.data(), size, &p, &msg, &cad_exercise_limits);
        if (rc == 0) {
          char why[256] = "";
          EXPECT_EQ(cad_exercise(&p, why, sizeof(why)), 0) << c->name << " byte " << at << ": " << why;
          still_accepted++;
        } else {
          EXPECT_TRUE(rc == -EINVAL || rc == -E2BIG) << rc;
          EXPECT_EQ(msg.back(), '\n') << msg;
          rejected++;
        }
      }
    }
  }
  EXPECT_GT(rejected, 1000u);
  EXPECT_GT(still_accepted, 100u);  // names, tags, sizes within bounds...
}

TEST(Verifier, ShortLogIsTruncatedAndTerminated) {
  std::vector<uint64_t> img = Image(cad_vcases[0].desc);
  reinterpret_cast<cad_prog_header *>(img.data())->magic = 0;
  char buf[16];
  cad_log log;
  cad_log_init(&log, buf, sizeof(buf));
  cad_prog p;
  EXPECT_EQ(cad_verify(img.data(), static_cast<uint32_t>(img.size() * 8), nullptr, &p, &log),
            -EINVAL);
  EXPECT_TRUE(log.truncated);
  EXPECT_EQ(std::strlen(buf), 15u);
  EXPECT_EQ(std::string(buf), "header: bad mag");
}

TEST(Verifier, NoLogAtAll) {
  cad_prog p;
  uint64_t junk[40] = {};
  EXPECT_EQ(cad_verify(junk, sizeof(junk), nullptr, &p, nullptr), -EINVAL);
  EXPECT_EQ(cad_verify(nullptr, 0, nullptr, &p, nullptr), -EINVAL);
}

TEST(Verifier, ViewPointsIntoTheImage) {
  const cad_vcase &good = cad_vcases[0];
  ASSERT_STREQ(good.name, "accept-good");
  std::vector<uint64_t> img = Image(good.desc);
  cad_prog p;
  ASSERT_EQ(Verify(img.data(), static_cast<uint32_t>(cad_image_size(&good.desc)), &p, nullptr), 0);
  const uint8_t *base = reinterpret_cast<const uint8_t *>(img.data());
  EXPECT_EQ(reinterpret_cast<const uint8_t *>(p.hdr), base);
  EXPECT_EQ(p.n_nodes, 4u);
  EXPECT_EQ(p.n_edges, 2u);
  EXPECT_EQ(p.nodes[1].peer, 0u);
  EXPECT_STREQ(cad_prog_string(&p, p.buffers[1].name), "recvbuf");
  EXPECT_EQ(p.scratch_bytes, 512u);
}
