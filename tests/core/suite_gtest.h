// suite_gtest.h - runs a C suite (selftest.h) as GoogleTest cases, one
// test per case, named after it, so that a failure names the table entry.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "selftest.h"

namespace cad_test {

// Work memory for one case, as the kernel test module gives it.
struct Context {
  Context()
      : work(static_cast<__u8 *>(std::aligned_alloc(64, CAD_TWORK_SIZE)), std::free),
        scratch(std::aligned_alloc(64, CAD_VM_SCRATCH_SIZE), std::free) {
    ctx.work = work.get();
    ctx.work_size = CAD_TWORK_SIZE;
    ctx.vm_scratch = scratch.get();
  }
  cad_tctx ctx{};
  std::unique_ptr<__u8, decltype(&std::free)> work;
  std::unique_ptr<void, decltype(&std::free)> scratch;
};

inline std::string CaseName(const cad_tsuite &suite, unsigned i) {
  char buf[128];
  suite.case_name(i, buf, sizeof(buf));
  std::string name(buf);
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

inline void RunCase(const cad_tsuite &suite, unsigned i) {
  Context c;
  int rc = cad_trun(&suite, i, &c.ctx);
  EXPECT_EQ(rc, 0) << CaseName(suite, i) << ": " << c.ctx.msg;
}

}  // namespace cad_test

// Defines Fixture/Case over every case of a C suite.
#define CAD_GTEST_SUITE(Fixture, suite)                                              \
  class Fixture : public ::testing::TestWithParam<unsigned> {};                     \
  TEST_P(Fixture, Case) { cad_test::RunCase(suite, GetParam()); }                   \
  INSTANTIATE_TEST_SUITE_P(Table, Fixture, ::testing::Range(0u, (suite).count()),   \
                           [](const ::testing::TestParamInfo<unsigned> &info) {     \
                             return cad_test::CaseName(suite, info.param);          \
                           })
