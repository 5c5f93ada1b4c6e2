// cadc_bench - the compiler's figures (issue 3's targets), each the median
// of repeated runs in this process:
//   verify the rotated alltoall at P = 1024 (about a million messages)
//     and at P = 4096 (16.7 M messages), with its peak memory
//   verify the binomial broadcast at P = 65536
//   instantiate one rank of the rotated alltoall at P = 4096 (what the
//     runtime does for its own rank), with emission through the core
//     verifier
// Besides seconds, each reports its cost per message or per operation,
// the figure that does not depend on the instance's size.  Then the
// verifier's time against P, as curves: the rotated alltoall at P = 16 ..
// 512 and the binomial broadcast at P = 2^4 .. 2^15 (seconds, params P and
// messages; quick: up to 256 and 4096); its time against n at P = 17 for
// the segmented algorithms, n = 100 .. 3200 (quick: up to 800), where
// the cost per message must not grow with the program; and its peak
// memory per message against P (bytes; quick: the smaller P).  Then what
// proofs on arrival cost (proof_figures).
// `cadc_bench --json FILE` writes every repetition
// (schemas/bench-result.schema.json); BENCH_QUICK=1 runs fewer.
#include <malloc.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.h"
#include "domain.h"
#include "instance.h"
#include "library.h"
#include "parser.h"
#include "verify.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Figure {
  std::string name, unit, target;
  double target_value = 0;
  bool higher_better = false;
  std::vector<double> reps;
  nlohmann::json params = nlohmann::json::object();
  double median() const {
    std::vector<double> s = reps;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

std::vector<Figure> figures;

// digits: significant digits instead of 3 decimals (the curves' small times).
void report(Figure f, bool digits = false) {
  std::vector<double> s = f.reps;
  std::sort(s.begin(), s.end());
  std::printf(digits ? "%-44s %10.4g %-10s (min %.4g, max %.4g)" : "%-44s %10.3f %-10s (min %.3f, max %.3f)",
              f.name.c_str(), f.median(), f.unit.c_str(), s.front(), s.back());
  if (!f.target.empty())
    std::printf("  target %s: %s", f.target.c_str(),
                (f.higher_better ? f.median() >= f.target_value : f.median() <= f.target_value) ? "met" : "NOT met");
  std::printf("\n");
  figures.push_back(std::move(f));
}

struct Loaded {
  cad::SourceManager sm;
  cad::Diagnostics diags;
  cad::Module m;
};

void load(const std::string &path, Loaded *l) {
  std::string error;
  const uint32_t f = l->sm.load(path, &error);
  if (!f || !cad::parse_dsl(l->sm, f, &l->m, &l->diags) || !cad::check_module(l->m, &l->diags)) {
    std::fprintf(stderr, "cadc_bench: cannot load %s %s\n", path.c_str(), error.c_str());
    std::exit(2);
  }
}

cad::InstanceSpec spec(int64_t P, int64_t n) {
  cad::InstanceSpec s;
  s.P = P;
  s.n = n;
  return s;
}

// The process's peak resident memory since start(), less what it held
// then: the kernel resets the peak on "5" into /proc/self/clear_refs
// (Linux 4.0); freed memory goes back first, so that it is not reused
// unseen.  ok() is false where the kernel does not allow it.
class PeakMemory {
 public:
  void start() {
    malloc_trim(0);
    std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
    ok_ = f && std::fputs("5", f) >= 0;
    if (f) ok_ = std::fclose(f) == 0 && ok_;
    base_ = status_kb("VmRSS:");
  }
  bool ok() const { return ok_; }
  double bytes() const { return static_cast<double>(status_kb("VmHWM:") - base_) * 1024; }

 private:
  static long status_kb(const char *field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
    return 0;
  }
  bool ok_ = false;
  long base_ = 0;
};

// gb_target > 0: the peak memory too, a figure in GB with that target.
void verify_figure(const char *name, const std::string &file, int64_t P, int reps, double target,
                   double gb_target = 0) {
  Loaded l;
  load(file, &l);
  Figure secs{name, "s", "<= " + std::to_string(static_cast<int>(target)), target, false, {}, {{"P", P}, {"n", 1}}};
  Figure per{std::string(name) + ", per message", "ns", "", 0, false, {}, {{"P", P}, {"n", 1}}};
  Figure mem{std::string(name) + ", peak memory", "GB", "<= " + std::to_string(static_cast<int>(gb_target)),
             gb_target, false, {}, {{"P", P}, {"n", 1}}};
  PeakMemory peak;
  for (int r = 0; r < reps; r++) {
    cad::Diagnostics d;
    peak.start();
    const double t0 = now();
    cad::InstanceResult res = cad::verify_instance(l.m.algorithms[0], spec(P, 1), l.sm, &d);
    const double t = now() - t0;
    if (gb_target > 0 && peak.ok()) mem.reps.push_back(peak.bytes() / 1e9);
    if (res.outcome != cad::Outcome::Verified) {
      std::fprintf(stderr, "cadc_bench: %s did not verify\n", name);
      std::exit(2);
    }
    secs.reps.push_back(t);
    per.reps.push_back(t / static_cast<double>(res.stats.messages) * 1e9);
    secs.params["messages"] = res.stats.messages;
  }
  report(secs);
  report(per);
  if (!mem.reps.empty()) report(mem);
}

// The verifier's time against P: one figure "verify <alg> P=<P>" per P.
// The first run sets the repetitions, about 2 s worth (3 to 21):
// the time grows with the messages, P (P - 1) for the alltoall and P - 1
// for the broadcast.  Quick: one run each, P up to quick_max.
void verify_curve(const std::string &alg, const std::string &file, const std::vector<int64_t> &Ps, int64_t quick_max,
                  bool quick) {
  Loaded l;
  load(file, &l);
  for (const int64_t P : Ps) {
    if (quick && P > quick_max) continue;
    Figure secs{"verify " + alg + " P=" + std::to_string(P), "s", "", 0, false, {}, {{"P", P}, {"n", 1}}};
    for (int r = 0, reps = 1; r < reps; r++) {
      cad::Diagnostics d;
      const double t0 = now();
      cad::InstanceResult res = cad::verify_instance(l.m.algorithms[0], spec(P, 1), l.sm, &d);
      const double t = now() - t0;
      if (res.outcome != cad::Outcome::Verified) {
        std::fprintf(stderr, "cadc_bench: %s did not verify\n", secs.name.c_str());
        std::exit(2);
      }
      if (r == 0 && !quick) reps = static_cast<int>(std::clamp(2.0 / t, 3.0, 21.0));
      secs.reps.push_back(t);
      secs.params["messages"] = res.stats.messages;
    }
    report(secs, true);
  }
}

// The verifier's time against n at fixed P for a segmented algorithm: one
// figure "verify <alg> P=<P> n=<n> <parameters>" per n, about 1 s of runs
// each (3 to 11).  Each segment is an operation, so the time should grow
// as n, as the messages do.  Quick: one run each, n up to quick_max.
void verify_n_curve(const std::string &alg, const std::string &file, const cad::InstanceSpec &base,
                    const std::vector<int64_t> &ns, int64_t quick_max, bool quick) {
  Loaded l;
  load(file, &l);
  for (const int64_t n : ns) {
    if (quick && n > quick_max) continue;
    cad::InstanceSpec s = base;
    s.n = n;
    Figure secs{"verify " + alg + " " + s.describe(l.m.algorithms[0]), "s", "", 0, false, {},
                {{"P", s.P}, {"n", n}, {"inplace", s.inplace}}};
    for (const auto &p : s.params) secs.params[p.first] = p.second;
    for (int r = 0, reps = 1; r < reps; r++) {
      cad::Diagnostics d;
      const double t0 = now();
      cad::InstanceResult res = cad::verify_instance(l.m.algorithms[0], s, l.sm, &d);
      const double t = now() - t0;
      if (res.outcome != cad::Outcome::Verified) {
        std::fprintf(stderr, "cadc_bench: %s did not verify\n", secs.name.c_str());
        std::exit(2);
      }
      if (r == 0 && !quick) reps = static_cast<int>(std::clamp(1.0 / t, 3.0, 11.0));
      secs.reps.push_back(t);
      secs.params["messages"] = res.stats.messages;
    }
    report(secs, true);
  }
}

// The verifier's peak memory per message against P, one run each (the
// figure hardly varies): "verify <alg> P=<P>, peak bytes per message".
// Nothing where the kernel does not let the peak be reset.
void memory_curve(const std::string &alg, const std::string &file, const std::vector<int64_t> &Ps, int64_t quick_max,
                  bool quick) {
  Loaded l;
  load(file, &l);
  PeakMemory peak;
  for (const int64_t P : Ps) {
    if (quick && P > quick_max) continue;
    cad::Diagnostics d;
    peak.start();
    if (!peak.ok()) return;
    cad::InstanceResult res = cad::verify_instance(l.m.algorithms[0], spec(P, 1), l.sm, &d);
    if (res.outcome != cad::Outcome::Verified) {
      std::fprintf(stderr, "cadc_bench: verify %s P=%lld did not verify\n", alg.c_str(), static_cast<long long>(P));
      std::exit(2);
    }
    const double bytes = peak.bytes();
    Figure per{"verify " + alg + " P=" + std::to_string(P) + ", peak bytes per message", "B", "", 0, false, {},
               {{"P", P}, {"n", 1}, {"messages", res.stats.messages}, {"peak_bytes", bytes}}};
    per.reps.push_back(bytes / static_cast<double>(res.stats.messages));
    report(per, true);
  }
}

// The "model name" line of /proc/cpuinfo, as core_bench reports it.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

void write_json(const char *path) {
  nlohmann::ordered_json j;
  char date[32];
  time_t t = time(nullptr);
  strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  struct utsname u;
  uname(&u);
  j["benchmark"] = "cadc";
  j["date"] = date;
  j["machine"] = {{"cpu", cpu_model()}, {"cores", sysconf(_SC_NPROCESSORS_ONLN)}, {"kernel", u.release}};
  j["engine"] = "none";
  j["method"] = "median of repetitions in one process; one thread";
  j["results"] = nlohmann::ordered_json::array();
  for (const Figure &f : figures) {
    std::vector<double> s = f.reps;
    std::sort(s.begin(), s.end());
    nlohmann::ordered_json r = {{"name", f.name}, {"unit", f.unit}, {"median", f.median()},
                                {"min", s.front()}, {"max", s.back()}, {"params", f.params}};
    if (!f.target.empty()) {
      r["target"] = f.target;
      r["met"] = f.higher_better ? f.median() >= f.target_value : f.median() <= f.target_value;
    }
    r["repetitions"] = f.reps;
    j["results"].push_back(r);
  }
  std::ofstream(path) << j.dump(2) << "\n";
}

}  // namespace

// What the runtime's proofs on arrival cost (docs/proof.md): for every
// algorithm of the standard library, one instance at P = 64, 256, 1024
// and 4096 ("prove <alg> P=<P>", ms; at P = 64 the target 50 ms) with the
// parameters its first rule gives it, n the largest of its sweep's sizes,
// root 0 and the op non-commutative unless it requires a commutative one;
// and its key at P = 64 at every size class and that n, what cadrt proves
// when a call arrives outside the domain ("prove on arrival <alg> P=64").
// A larger P is left out once one took more than 30 s, or went over the
// verifier's limits.  Quick: P = 64 and 256.
void proof_figures(const std::string &library, bool quick) {
  cad::Library lib;
  cad::Diagnostics d;
  if (!cad::load_library(library, &lib, &d)) {
    std::fprintf(stderr, "cadc_bench: cannot load %s: %s\n", library.c_str(),
                 d.empty() ? "?" : d.list()[0].message.c_str());
    std::exit(2);
  }
  for (const cad::Algorithm *a : lib.algorithms) {
    cad::InstanceSpec s;
    s.n = a->sweep.sizes.present() ? a->sweep.sizes.values().back() : 100;
    for (const cad::Rule &r : lib.rules)
      if (r.use == a->name) {
        s.params = r.params;
        break;
      }
    if (a->user_op && cad::collective_info(a->collective).reducing) {
      s.dtype = CAD_DT_USER;
      s.op = CAD_OP_USER;
      s.user_op = a->user_op;
      s.commutative = a->user_op->commutative;
    } else if (cad::collective_info(a->collective).reducing) {
      s.op = a->op.empty() ? static_cast<unsigned>(CAD_OP_SUM) : cad::builtin_op(a->op);
      s.dtype = cad::default_dtype(s.op);
      s.commutative = !a->op.empty();
    }
    for (const int64_t P : {int64_t{64}, int64_t{256}, int64_t{1024}, int64_t{4096}}) {
      if (quick && P > 256) break;
      s.P = P;
      {
        cad::Diagnostics quiet;
        if (!s.commutative && !cad::Instantiator(*a, s, &quiet).applicable()) s.commutative = true;
        if (!cad::Instantiator(*a, s, &quiet).applicable()) break;  // (its requirements do not hold there)
      }
      Figure f{"prove " + a->name + " P=" + std::to_string(P), "ms", P == 64 ? "<= 50" : "", P == 64 ? 50.0 : 0,
               false, {}, {{"P", P}, {"n", s.n}}};
      double took = 0;
      for (int r = 0, reps = 1; r < reps; r++) {
        cad::Diagnostics diags;
        const double t0 = now();
        const cad::InstanceResult res = cad::verify_instance(*a, s, lib.sm, &diags);
        took = now() - t0;
        if (res.outcome != cad::Outcome::Verified) {
          f.reps.clear();
          break;  // over a limit: said by its absence
        }
        if (r == 0) reps = static_cast<int>(std::clamp(1.0 / took, 1.0, quick ? 3.0 : 7.0));
        f.reps.push_back(took * 1e3);
        f.params["messages"] = res.stats.messages;
      }
      if (f.reps.empty()) break;
      report(f, true);
      if (P == 64) {
        Figure on{"prove on arrival " + a->name + " P=64", "ms", "", 0, false, {}, {{"P", P}, {"n", s.n}}};
        const double t0 = now();
        const cad::ArrivalProof p = cad::prove_on_arrival(*a, s, lib.sm);
        if (p.proven) {
          on.reps.push_back((now() - t0) * 1e3);
          on.params["instances"] = p.instances;
          report(on, true);
        }
      }
      if (took > 30) break;
    }
  }
}

int main(int argc, char **argv) {
  const bool quick = std::getenv("BENCH_QUICK") && std::atoi(std::getenv("BENCH_QUICK"));
  const std::string dir = CAD_SOURCE_DIR "/algorithms/";
  const char *json = nullptr;
  // The standard library beside this program's lib/ (build/bin/../lib).
  std::string library = std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() / "lib" /
                        "cad-std.cadlib";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else if (!std::strcmp(argv[i], "--library") && i + 1 < argc) {
      library = argv[++i];
    } else {
      std::fprintf(stderr, "usage: cadc_bench [--json FILE] [--library LIB.cadlib]\n");
      return 2;
    }
  }
  std::printf("cadc_bench: %s mode, one thread, median (min, max)\n", quick ? "quick" : "full");
  verify_figure("verify alltoall_rotated P=1024", dir + "alltoall_rotated.cad", quick ? 256 : 1024, quick ? 1 : 3, 10);
  if (!quick) verify_figure("verify alltoall_rotated P=4096", dir + "alltoall_rotated.cad", 4096, 1, 60, 4);
  verify_figure("verify bcast_binomial P=65536", dir + "bcast_binomial.cad", quick ? 4096 : 65536, quick ? 1 : 3, 5);

  Loaded l;
  load(dir + "alltoall_rotated.cad", &l);
  const int64_t P = 4096;
  Figure one{"instantiate one rank of alltoall_rotated P=4096", "ms", "<= 5", 5, false, {}, {{"P", P}, {"n", 1}}};
  Figure per{"instantiate one rank, per operation", "ns", "", 0, false, {}, {{"P", P}, {"n", 1}}};
  cad::Diagnostics d;
  cad::Instantiator in(l.m.algorithms[0], spec(P, 1), &d);
  for (int r = -1; r < (quick ? 5 : 21); r++) {
    cad::RankProgram rp;
    std::vector<uint64_t> image;
    uint32_t size;
    const double t0 = now();
    if (!in.rank(1234, &rp) || !cad::emit_image(l.m.algorithms[0], spec(P, 1), rp, l.sm, &image, &size, &d)) {
      std::fprintf(stderr, "cadc_bench: instantiation failed\n");
      return 2;
    }
    const double t = now() - t0;
    if (r < 0) continue;  // warm-up
    one.reps.push_back(t * 1e3);
    per.reps.push_back(t / static_cast<double>(rp.ops.size()) * 1e9);
    one.params["operations"] = rp.ops.size();
  }
  report(one);
  report(per);

  // The curves: the verifier's time against P (P=1024 and 65536 above).
  verify_curve("alltoall_rotated", dir + "alltoall_rotated.cad", {16, 32, 64, 128, 256, 512}, 256, quick);
  std::vector<int64_t> pow2;
  for (int k = 4; k <= 15; k++) pow2.push_back(int64_t{1} << k);
  verify_curve("bcast_binomial", dir + "bcast_binomial.cad", pow2, 4096, quick);

  // Against n at P = 17: the segmented algorithms, where the programs grow with n.
  const std::vector<int64_t> ns = {100, 200, 400, 800, 1600, 3200};
  cad::InstanceSpec rotated = spec(17, 0);
  rotated.inplace = true;  // segments only in place
  rotated.params = {{"seg", 3}};
  verify_n_curve("alltoall_rotated", dir + "alltoall_rotated.cad", rotated, ns, 800, quick);
  cad::InstanceSpec chain = spec(17, 0);
  chain.params = {{"seg", 1}};
  verify_n_curve("bcast_chain_pipeline", dir + "bcast_chain_pipeline.cad", chain, ns, 800, quick);

  // Peak memory per message against P.
  memory_curve("alltoall_rotated", dir + "alltoall_rotated.cad", {256, 512, 1024, 2048}, 512, quick);
  memory_curve("bcast_binomial", dir + "bcast_binomial.cad", {4096, 16384, 65536}, 16384, quick);

  proof_figures(library, quick);
  if (json) write_json(json);
  return 0;
}
