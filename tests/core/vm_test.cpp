// vm_test.cpp - the VM suite (vm_cases.c, also run in the kernel), plus
// comparisons with the host's libm that only user space can make.
#include <cmath>
#include <cstring>
#include <vector>

#include "suite_gtest.h"
#include "test_program.h"
#include "ref_fpu.h"
#include "vm_progs.h"

CAD_GTEST_SUITE(VmTable, cad_suite_vm);

namespace {

// Applies `code` (a binary op on raw 64-bit registers, or a unary one of
// in) to pairs through the VM: a holds inout, b holds in; returns the new
// inout.
std::vector<uint64_t> RunBinary(unsigned code, const std::vector<uint64_t> &a,
                                const std::vector<uint64_t> &b) {
  const cad_vm_insn insns[] = {
      {CAD_VM_LD_64, 0, 0, 0, 0}, {CAD_VM_LD_64, 1, 1, 0, 0},
      {static_cast<__u8>(code), 2, 0, cad_vm_opcode_format(code) == CAD_VMF_UN ? __u8{0} : __u8{1}, 0},
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

// Operands for the NaN rules: quiet and signalling NaNs with payloads and
// both signs, +-0, +-inf, subnormals, normal numbers.
std::vector<uint64_t> DoubleEdges() {
  return {0x7ff8000000000000ull, 0xfff8000000000123ull, 0x7ff800000000deadull,
          0x7ff0000000000001ull, 0xfff4000000000abcull, 0x7ff7ffffffffffffull,
          0, 0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
          1, 0x800000000000000full, 0x3ff0000000000000ull, 0xbff8000000000000ull,
          0x4000000000000000ull, 0x7fefffffffffffffull};
}

std::vector<uint64_t> FloatEdges() {
  return {0x7fc00000, 0xffc00123, 0x7fc0dead, 0x7f800001, 0xffa00abc, 0x7fbfffff,
          0, 0x80000000, 0x7f800000, 0xff800000, 1, 0x8000000f,
          0x3f800000, 0xbfc00000, 0x40000000, 0x7f7fffff};
}

// Called through volatile pointers: gcc folds fmin of constants at compile
// time, and its folding differs from glibc's runtime answer on +-0.
double (*volatile g_fmin)(double, double) = fmin;
double (*volatile g_fmax)(double, double) = fmax;
float (*volatile g_fminf)(float, float) = fminf;
float (*volatile g_fmaxf)(float, float) = fmaxf;

#if defined(__x86_64__)
// The SSE instructions themselves, operands in the VM's order.
uint64_t Sse(unsigned code, uint64_t a, uint64_t b) {
  double x = Value<double>(a), y = Value<double>(b);
  float f = Value<float>(a), g = Value<float>(b);
  switch (code) {
    case CAD_VM_FADD: asm("addsd %1, %0" : "+x"(x) : "x"(y)); return Bits(x);
    case CAD_VM_FSUB: asm("subsd %1, %0" : "+x"(x) : "x"(y)); return Bits(x);
    case CAD_VM_FMUL: asm("mulsd %1, %0" : "+x"(x) : "x"(y)); return Bits(x);
    case CAD_VM_FDIV: asm("divsd %1, %0" : "+x"(x) : "x"(y)); return Bits(x);
    case CAD_VM_FSQRT: asm("sqrtsd %1, %0" : "=x"(y) : "x"(x)); return Bits(y);
    case CAD_VM_CVT_F32_F64: asm("cvtsd2ss %1, %0" : "=x"(f) : "x"(x)); return Bits(f);
    case CAD_VM_SADD: asm("addss %1, %0" : "+x"(f) : "x"(g)); return Bits(f);
    case CAD_VM_SSUB: asm("subss %1, %0" : "+x"(f) : "x"(g)); return Bits(f);
    case CAD_VM_SMUL: asm("mulss %1, %0" : "+x"(f) : "x"(g)); return Bits(f);
    case CAD_VM_SDIV: asm("divss %1, %0" : "+x"(f) : "x"(g)); return Bits(f);
    case CAD_VM_SSQRT: asm("sqrtss %1, %0" : "=x"(g) : "x"(f)); return Bits(g);
    case CAD_VM_CVT_F64_F32: asm("cvtss2sd %1, %0" : "=x"(x) : "x"(f)); return Bits(x);
  }
  return 0;
}
#endif

// All ordered pairs of v: the VM's op(in, inout) against want(in, inout),
// bit for bit, and the reference of the C suites (ref_fpu.c) against it.
void CheckPairs(unsigned code, const std::vector<uint64_t> &v,
                uint64_t (*want)(unsigned, uint64_t, uint64_t)) {
  std::vector<uint64_t> io, in;
  for (uint64_t x : v)
    for (uint64_t y : v) {
      in.push_back(x);
      io.push_back(y);
    }
  // past one block of lanes, so that the block loops run as well
  for (size_t k = 0, n = in.size(); in.size() < 3 * CAD_VM_LANES; k++) {
    in.push_back(in[k % n]);
    io.push_back(io[k % n]);
  }
  // and one more, two normal numbers (v[12], v[13]), alone in its block
  in.push_back(v.at(12));
  io.push_back(v.at(13));
  const std::vector<uint64_t> got = RunBinary(code, io, in);
  for (size_t i = 0; i < io.size(); i++) {
    const uint64_t w = want(code, in[i], io[i]);
    EXPECT_EQ(got[i], w) << cad_vm_opcode_name(code) << "(0x" << std::hex << in[i] << ", 0x"
                         << io[i] << ")";
    EXPECT_EQ(cad_ref_vm_op_fpu(code, in[i], io[i]), w)
        << "reference " << cad_vm_opcode_name(code) << "(0x" << std::hex << in[i] << ", 0x"
        << io[i] << ")";
  }
}

uint64_t Glibc(unsigned code, uint64_t a, uint64_t b) {
  switch (code) {
    case CAD_VM_FMIN: return Bits(g_fmin(Value<double>(a), Value<double>(b)));
    case CAD_VM_FMAX: return Bits(g_fmax(Value<double>(a), Value<double>(b)));
    case CAD_VM_SMIN: return Bits(g_fminf(Value<float>(a), Value<float>(b)));
    default: return Bits(g_fmaxf(Value<float>(a), Value<float>(b)));
  }
}

}  // namespace

// FMIN/FMAX are this machine's glibc fmin/fmax, and SMIN/SMAX its
// fminf/fmaxf, bit for bit: signalling and quiet NaNs of both signs with
// payloads, +-0 (the second operand, as minsd), infinities, subnormals, in
// both orders.  The VM computes op(r0 = in, r1 = inout).
TEST(Vm, FminFmaxAreGlibcs) {
  CheckPairs(CAD_VM_FMIN, DoubleEdges(), Glibc);
  CheckPairs(CAD_VM_FMAX, DoubleEdges(), Glibc);
  CheckPairs(CAD_VM_SMIN, FloatEdges(), Glibc);
  CheckPairs(CAD_VM_SMAX, FloatEdges(), Glibc);
}

#if defined(__x86_64__)
// The float operations give the NaNs the SSE instructions give: the first
// operand's of two, quieted; a signalling NaN quieted by sqrt; payloads
// through the conversions.
TEST(Vm, FloatNansAreSses) {
  const unsigned dops[] = {CAD_VM_FADD, CAD_VM_FSUB, CAD_VM_FMUL, CAD_VM_FDIV, CAD_VM_FSQRT,
                           CAD_VM_CVT_F32_F64};
  const unsigned sops[] = {CAD_VM_SADD, CAD_VM_SSUB, CAD_VM_SMUL, CAD_VM_SDIV, CAD_VM_SSQRT,
                           CAD_VM_CVT_F64_F32};
  for (unsigned code : dops) CheckPairs(code, DoubleEdges(), Sse);
  for (unsigned code : sops) CheckPairs(code, FloatEdges(), Sse);
}
#endif

TEST(Vm, HandWrittenOperatorsVerify) {
  for (unsigned i = 0; i < CAD_VMP_COUNT; i++) {
    const cad_vm_prog_def &def = cad_vm_progs[i];
    EXPECT_GT(def.n_code, 0u) << def.name;
    EXPECT_EQ(def.code[def.n_code - 1].code, CAD_VM_EXIT) << def.name;
  }
}
