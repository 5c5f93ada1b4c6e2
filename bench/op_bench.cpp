// op_bench.cpp - the interpreter against native code for user-defined
// operators (issue 6): the operators of the standard library as cadc
// compiled them (cad-std.cadlib, VM bytecode, run by the core's
// interpreter as cadrt and cad.ko run it) against the same C files compiled
// by gcc -O3 (op_native.c), over 1 MiB of elements, in one process,
// repetitions interleaved.  Ratio = native time / interpreted time (1.0 is
// as fast as native); target >= 0.5 for each.  matmul4 (of the operator
// corpus) and clip8 (bench/ops), compiled into CAD_BENCH_OPS_DIR, need
// more values at once than the VM's 16 registers: they measure spilling,
// target >= 0.4.
//   op_bench [--lib FILE] [--json OUT] [--reps N]
#include <time.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "cad_core.h"
#include "library.h"
#include "source.h"
#include "userop.h"

extern "C" {
void native_complex_mul(void *inout, const void *in, size_t n);
void native_dsum(void *inout, const void *in, size_t n);
void native_maxloc(void *inout, const void *in, size_t n);
void native_sat_add_i16(void *inout, const void *in, size_t n);
void native_matmul4(void *inout, const void *in, size_t n);
void native_clip8(void *inout, const void *in, size_t n);
}

namespace {

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Case {
  const char *op;
  void (*native)(void *, const void *, size_t);
  double target;
  bool spills;  // from CAD_BENCH_OPS_DIR, not the library
};


}  // namespace

int main(int argc, char **argv) {
  std::string lib_path = CAD_STD_LIBRARY, json;
  int reps = 15;
  std::string only;  // --op: that case alone (for profiling)
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--lib" && i + 1 < argc) lib_path = argv[++i];
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--op" && i + 1 < argc) only = argv[++i];
    else {
      std::cerr << "usage: op_bench [--lib FILE] [--json OUT] [--reps N] [--op NAME]\n";
      return 2;
    }
  }
  cad::Library lib;
  cad::Diagnostics diags;
  if (!cad::load_library(lib_path, &lib, &diags)) {
    std::cerr << "op_bench: " << lib_path << ": " << (diags.empty() ? "cannot load" : diags.list()[0].message) << "\n";
    return 2;
  }
  const Case cases[] = {{"complex_mul", native_complex_mul, 0.5, false},
                        {"maxloc", native_maxloc, 0.5, false},
                        {"sat_add_i16", native_sat_add_i16, 0.5, false},
                        {"dsum", native_dsum, 0.5, false},
                        {"matmul4", native_matmul4, 0.4, true},
                        {"clip8", native_clip8, 0.4, true}};
  const size_t bytes = size_t{1} << 20;
  std::mt19937_64 rng(42);
  std::vector<uint64_t> scratch(CAD_VM_SCRATCH_SIZE / 8 + 1);
  std::string results;
  for (const Case &c : cases) {
    if (!only.empty() && only != c.op) continue;
    std::shared_ptr<const cad::UserOp> op;
    if (c.spills) {
      const std::string path = std::string(CAD_BENCH_OPS_DIR) + "/" + c.op + ".cadop";
      std::string text, error;
      std::vector<cad::UserOp> ops;
      if (!cad::read_file(path, cad::kMaxSourceBytes, &text, &error) || !cad::read_cadop(text, &ops, &error) ||
          ops.empty()) {
        std::cerr << "op_bench: " << path << ": " << (error.empty() ? "no operator" : error) << "\n";
        return 2;
      }
      op = std::make_shared<const cad::UserOp>(ops[0]);
    } else {
      op = lib.find_op(c.op);
    }
    if (!op) {
      std::cerr << "op_bench: the library has no operator " << c.op << "\n";
      return 2;
    }
    const size_t n = bytes / op->elem_size;
    int spills = 0;
    for (const cad_vm_insn &in : op->code) spills += in.code == CAD_VM_SPILL || in.code == CAD_VM_FILL;
    std::vector<uint64_t> image;
    std::string error;
    if (!cad::userop_image(*op, n * op->elem_size, &image, &error)) {
      std::cerr << "op_bench: " << error << "\n";
      return 2;
    }
    cad_prog prog;
    char msg[256];
    cad_log log;
    cad_log_init(&log, msg, sizeof msg);
    if (cad_verify(image.data(), static_cast<uint32_t>(image.size() * 8), nullptr, &prog, &log)) {
      std::cerr << "op_bench: " << msg << "\n";
      return 2;
    }
    // Ordinary values (no NaN, no overflow traps matter here): random
    // doubles in [-2, 2], indexes, int16 values; the same for both.
    std::vector<uint8_t> in(bytes + 64), base(bytes + 64), a(bytes + 64), b(bytes + 64);
    for (size_t k = 0; k < bytes; k += 8) {
      const double d = static_cast<double>(rng() % 4001) / 1000.0 - 2.0;
      std::memcpy(&in[k], &d, 8);
      const double e = static_cast<double>(rng() % 4001) / 1000.0 - 2.0;
      std::memcpy(&base[k], &e, 8);
    }
    if (std::string(c.op) == "clip8")  // lanes in [-2, 2] (about half clipped), counts below 100
      for (size_t e = 0; e + op->elem_size <= bytes; e += op->elem_size)
        for (uint8_t *buf : {in.data(), base.data()}) {
          for (int l = 0; l < 8; l++) {
            const float f = static_cast<float>(rng() % 4001) / 1000.0f - 2.0f;
            std::memcpy(&buf[e + 4 * l], &f, 4);
          }
          const int32_t k = static_cast<int32_t>(rng() % 100);
          std::memcpy(&buf[e + 32], &k, 4);
        }
    if (std::string(c.op) == "maxloc" || std::string(c.op) == "sat_add_i16")
      for (size_t k = 0; k < bytes; k += 2) {
        const uint16_t v = static_cast<uint16_t>(rng());
        std::memcpy(&in[k], &v, 2);
        const uint16_t w = static_cast<uint16_t>(rng());
        std::memcpy(&base[k], &w, 2);
      }
    std::vector<double> ratio;
    double tn_best = 1e9, tv_best = 1e9;
    for (int r = 0; r < reps; r++) {
      std::memcpy(a.data(), base.data(), bytes);
      double t0 = now();
      c.native(a.data(), in.data(), n);
      const double tn = now() - t0;
      std::memcpy(b.data(), base.data(), bytes);
      t0 = now();
      cad_vm_run_fpu(&prog, &prog.ops[0], b.data(), in.data(), n, scratch.data());
      const double tv = now() - t0;
      if (std::memcmp(a.data(), b.data(), bytes) && std::string(c.op) != "maxloc") {
        std::cerr << "op_bench: " << c.op << ": interpreted and native results differ\n";
        return 1;
      }
      ratio.push_back(tn / tv);
      tn_best = std::min(tn_best, tn);
      tv_best = std::min(tv_best, tv);
    }
    std::vector<double> sorted = ratio;
    std::sort(sorted.begin(), sorted.end());
    const double med = sorted[sorted.size() / 2];
    std::printf("%-12s %3u B  interpreted/native: %.2fx (min %.2f, max %.2f)  native %.2f ns/elem, VM %.2f ns/elem  %s\n",
                c.op, op->elem_size, med, sorted.front(), sorted.back(), tn_best * 1e9 / static_cast<double>(n),
                tv_best * 1e9 / static_cast<double>(n), med >= c.target ? "target met" : "target NOT met");
    std::string reps_json;
    for (double x : ratio) reps_json += (reps_json.empty() ? "" : ", ") + std::to_string(x);
    results += std::string(results.empty() ? "" : ",\n") + "    { \"name\": \"vm " + c.op +
               " (compiled by cadc) vs native\", \"unit\": \"x native\", \"median\": " + std::to_string(med) +
               ", \"min\": " + std::to_string(sorted.front()) + ", \"max\": " + std::to_string(sorted.back()) +
               ", \"params\": { \"bytes\": " + std::to_string(bytes) + ", \"elements\": " + std::to_string(n) +
               ", \"elem_size\": " + std::to_string(op->elem_size) + ", \"instructions\": " +
               std::to_string(op->code.size()) + ", \"spills\": " + std::to_string(spills) +
               " }, \"target\": \">= " + (c.target == 0.5 ? "0.5" : "0.4") + "\", \"met\": " +
               (med >= c.target ? "true" : "false") + ", \"repetitions\": [" + reps_json + "] }";
  }
  if (!json.empty()) {
    char date[32];
    const time_t t = time(nullptr);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    std::string cpu = "unknown", kernel = "unknown";
    {
      std::ifstream f("/proc/cpuinfo");
      std::string line;
      while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
          cpu = line.substr(line.find(':') + 2);
          break;
        }
      std::ifstream k("/proc/sys/kernel/osrelease");
      std::getline(k, kernel);
    }
    std::ofstream out(json);
    out << "{\n  \"benchmark\": \"ops\",\n  \"date\": \"" << date << "\",\n  \"machine\": { \"cpu\": \"" << cpu
        << "\", \"cores\": " << std::thread::hardware_concurrency() << ", \"kernel\": \"" << kernel
        << "\" },\n  \"engine\": \"none\",\n  \"method\": \"operators compiled by cadc op (VM bytecode, the core's "
           "interpreter) against the same C compiled by gcc -O3, 1 MiB, median of interleaved repetitions in one "
           "process\",\n  \"results\": [\n"
        << results << "\n  ]\n}\n";
    if (!out) {
      std::cerr << "op_bench: cannot write " << json << "\n";
      return 2;
    }
  }
  return 0;
}
