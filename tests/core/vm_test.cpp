// vm_test.cpp - the VM suite (vm_cases.c, also run in the kernel), plus
// comparisons with the host's libm that only user space can make.
#include <cmath>
#include <cstring>
#include <vector>

#include "suite_gtest.h"
#include "test_program.h"
#include "vm_progs.h"

CAD_GTEST_SUITE(VmTable, cad_suite_vm);

namespace {

// Applies `code` (a binary op on raw 64-bit registers) to pairs through the
// VM: a holds inout, b holds in; returns the new inout.
std::vector<uint64_t> RunBinary(unsigned code, const std::vector<uint64_t> &a,
                                const std::vector<uint64_t> &b) {
  const cad_vm_insn insns[] = {
      {CAD_VM_LD_64, 0, 0, 0, 0}, {CAD_VM_LD_64, 1, 1, 0, 0}, {static_cast<__u8>(code), 2, 0, 1, 0},
      {CAD_VM_ST_64, 0, 2, 0, 0}, {CAD_VM_EXIT, 0, 0, 0, 0},
  };
  std::vector<uint64_t> out = a;
  cad_test::OneReduce(a.size() * 8, insns, 5, 8).Run(out.data(), b.data());
  return out;
}

template <typename T>
uint64_t Bits(T v) {
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}

template <typename T>
T Value(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

// Same bits, or both NaN.
template <typename T>
bool Same(T x, T y) {
  return Bits(x) == Bits(y) || (std::isnan(x) && std::isnan(y));
}

// The VM's op(in, inout) against libm's f(in, inout) on all pairs of v.
template <typename T>
void CheckAgainstLibm(unsigned code, T (*f)(T, T), const char *name) {
  const T v[] = {T(0), -T(0), T(1), T(-1), T(2.5), T(INFINITY), T(-INFINITY), T(NAN), T(1e-40)};
  std::vector<uint64_t> io, in;
  for (T x : v)
    for (T y : v) {
      in.push_back(Bits(x));
      io.push_back(Bits(y));
    }
  std::vector<uint64_t> got = RunBinary(code, io, in);
  for (size_t i = 0; i < io.size(); i++) {
    const T x = Value<T>(in[i]), y = Value<T>(io[i]), want = f(x, y);
    if (x == 0 && y == 0 && std::signbit(x) != std::signbit(y)) {
      EXPECT_EQ(got[i], in[i]) << name << ": equal operands give the first";
      continue;
    }
    EXPECT_TRUE(Same(Value<T>(got[i]), want))
        << name << "(" << x << ", " << y << ") = " << Value<T>(got[i]) << ", libm " << want;
  }
}

}  // namespace

// FMIN/FMAX agree with this machine's libm fmin/fmax (and SMIN/SMAX with
// fminf/fmaxf) wherever C defines the result: all pairs of these values
// except +0 against -0, whose result C leaves open (the ABI picks the
// first operand; glibc's answer changes with -O).  The VM computes
// op(r0 = in, r1 = inout).
TEST(Vm, FminFmaxMatchLibm) {
  CheckAgainstLibm<double>(CAD_VM_FMIN, [](double x, double y) { return std::fmin(x, y); }, "fmin");
  CheckAgainstLibm<double>(CAD_VM_FMAX, [](double x, double y) { return std::fmax(x, y); }, "fmax");
  CheckAgainstLibm<float>(CAD_VM_SMIN, [](float x, float y) { return std::fmin(x, y); }, "fminf");
  CheckAgainstLibm<float>(CAD_VM_SMAX, [](float x, float y) { return std::fmax(x, y); }, "fmaxf");
}

TEST(Vm, HandWrittenOperatorsVerify) {
  for (unsigned i = 0; i < CAD_VMP_COUNT; i++) {
    const cad_vm_prog_def &def = cad_vm_progs[i];
    EXPECT_GT(def.n_code, 0u) << def.name;
    EXPECT_EQ(def.code[def.n_code - 1].code, CAD_VM_EXIT) << def.name;
  }
}
