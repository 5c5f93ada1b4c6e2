// cmd_verify.cpp - cadc verify FILE... : prove algorithms on a sweep of
// instances (ranks x sizes x roots x parameters x topologies, in place too
// where the algorithm says it supports it), on all cores.
//
// Without --ranks the algorithm's own `sweep` is used.  Roots: all of them
// up to P = 17 unless --roots says otherwise, beyond that 0, 1, P/2, P-1.
// A reducing collective is checked with a non-commutative op (the order of
// contributions matters) unless the algorithm requires `commutative`.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "../lib/spec.h"
#include "../lib/verify.h"
#include "instance_options.h"

namespace cad::tool {

namespace {

struct VerifyOptions {
  std::vector<std::string> files;
  InstanceOptions inst;
  bool json = false, report = false, quiet = false;
  unsigned jobs = 0;
  int max_failures = 10;
};

struct Job {
  const Algorithm *alg;
  InstanceSpec spec;
};

struct Summary {
  uint64_t verified = 0, skipped = 0, failed = 0;
  VerifyStats most;  // the largest of each figure over the instances
  std::map<std::string, uint64_t> skip_reasons;
  int64_t p_lo = INT64_MAX, p_hi = 0, n_lo = INT64_MAX, n_hi = 0;
};

std::vector<int64_t> spec_values(const std::string &text, const SweepSpec &declared, const char *what,
                                 std::vector<int64_t> fallback) {
  if (!text.empty()) {
    std::vector<int64_t> v;
    std::string error;
    if (!parse_spec(text, &v, &error)) throw UsageError(std::string(what) + ": " + error);
    return v;
  }
  if (declared.present()) return declared.values();
  return fallback;
}

// The instances of one algorithm for these options.
std::vector<Job> plan(const Algorithm &a, const std::string &file, const VerifyOptions &o) {
  const Sweep &sw = a.sweep;
  if (o.inst.ranks.empty() && !sw.ranks.present())
    throw UsageError(a.name + ": give --ranks, or declare a sweep in the algorithm");
  const std::vector<int64_t> Ps = spec_values(o.inst.ranks, sw.ranks, "--ranks", {});
  const std::vector<int64_t> ns = spec_values(o.inst.sizes, sw.sizes, "--sizes", {0, 1, 7, 1000});
  for (int64_t P : Ps)
    if (P < 1) throw UsageError("--ranks: P must be at least 1");
  // Parameters: the command line's, else the sweep's, as a cartesian product.
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  if (!o.inst.params.empty()) {
    for (const std::string &p : o.inst.params) {
      std::string name, error;
      std::vector<int64_t> values;
      if (!parse_setting(p, &name, &values, &error)) throw UsageError("--param " + error);
      params.emplace_back(name, values);
    }
  } else {
    for (const auto &p : sw.params) params.emplace_back(p.first, p.second.values());
  }
  std::vector<std::vector<std::pair<std::string, int64_t>>> settings(1);
  for (const auto &p : params) {
    std::vector<std::vector<std::pair<std::string, int64_t>>> next;
    for (const auto &s : settings)
      for (int64_t v : p.second) {
        next.push_back(s);
        next.back().emplace_back(p.first, v);
      }
    settings.swap(next);
  }
  // Topologies: --topology, else the sweep's (relative to the file), else flat.
  std::vector<Machine> machines;
  if (!o.inst.topology.empty()) {
    machines.push_back(load_topology_option(o.inst.topology));
  } else if (!sw.topologies.empty()) {
    const std::filesystem::path dir = std::filesystem::path(file).parent_path();
    for (const std::string &t : sw.topologies) machines.push_back(load_topology_option((dir / t).string()));
  } else {
    machines.emplace_back();
  }
  InstanceSpec proto;
  parse_op(o.inst, &proto);
  const bool rooted = collective_info(a.collective).rooted;
  std::vector<Job> jobs;
  for (const Machine &m : machines)
    for (int64_t P : Ps) {
      std::shared_ptr<const Topology> topo;
      std::string error;
      if (!Topology::make(m, P, &topo, &error)) throw UsageError(error);
      std::vector<int64_t> roots{0};
      if (rooted) {
        if (!o.inst.roots.empty() && o.inst.roots != "all") {
          roots = spec_values(o.inst.roots, SweepSpec(), "--roots", {});
        } else if (o.inst.roots == "all" || (sw.roots.all && o.inst.roots.empty()) || P <= 17) {
          roots.clear();
          for (int64_t r = 0; r < P; r++) roots.push_back(r);
        } else if (sw.roots.present() && o.inst.roots.empty()) {
          roots = sw.roots.values();
        } else {
          roots = {0, 1, P / 2, P - 1};
          std::sort(roots.begin(), roots.end());
          roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
        }
      }
      for (int64_t n : ns)
        for (int64_t root : roots) {
          if (root >= P) continue;
          for (const auto &set : settings)
            for (int inplace = 0; inplace <= (a.inplace || o.inst.inplace ? 1 : 0); inplace++) {
              Job j{&a, proto};
              j.spec.P = P;
              j.spec.n = n;
              j.spec.root = root;
              j.spec.params = set;
              j.spec.topo = topo;
              j.spec.inplace = inplace;
              j.spec.commutative = !collective_info(a.collective).reducing;
              jobs.push_back(j);
            }
        }
    }
  return jobs;
}

std::string human_bytes(uint64_t b) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  char buf[32];
  snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", v, unit[u]);
  return buf;
}

}  // namespace

void add_verify(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<VerifyOptions>();
  CLI::App *cmd = app.add_subcommand("verify", "Prove algorithms correct on a sweep of instances");
  cmd->add_option("files", opt->files, "Algorithm files")->required();
  add_instance_options(cmd, &opt->inst, false);
  cmd->add_option("-j,--jobs", opt->jobs, "Parallel jobs (default: the cores)");
  cmd->add_option("--max-failures", opt->max_failures, "Stop an algorithm after this many failing instances");
  cmd->add_flag("--json", opt->json, "Results and diagnostics as JSON on stdout");
  cmd->add_flag("--report", opt->report, "A line per instance: messages, bytes, critical path, scratch");
  cmd->add_flag("-q,--quiet", opt->quiet, "No progress and no summary");
  cmd->callback([opt, run] {
    *run = [opt] {
      Session s;
      s.json = opt->json;
      std::vector<Module> modules(opt->files.size());
      std::vector<std::pair<const Algorithm *, std::string>> algs;
      for (size_t i = 0; i < opt->files.size(); i++) {
        if (!load_module(s, opt->files[i], &modules[i])) continue;
        for (const Algorithm *a : select(modules[i], opt->inst.algorithm)) algs.emplace_back(a, opt->files[i]);
      }
      if (s.diags.has_errors()) return report(s);
      const unsigned jobs_n = opt->jobs ? opt->jobs : std::max(1u, std::thread::hardware_concurrency());
      const bool progress = !opt->quiet && !opt->json && isatty(2);
      nlohmann::json results = nlohmann::json::array();
      for (const auto &entry : algs) {
        const Algorithm &a = *entry.first;
        std::vector<Job> jobs = plan(a, entry.second, *opt);
        std::vector<InstanceResult> res(jobs.size());
        std::vector<Diagnostics> diags(jobs.size());
        std::atomic<size_t> next{0}, done{0};
        std::atomic<int> failures{0};
        auto worker = [&] {
          for (size_t i; (i = next++) < jobs.size();) {
            if (failures.load() >= opt->max_failures) {
              res[i].outcome = Outcome::Skipped;
              res[i].skipped_because = "not run: too many failures";
              done++;
              continue;
            }
            Job &j = jobs[i];
            // A reducing collective: non-commutative unless the algorithm needs it commutative.
            if (!j.spec.commutative) {
              Diagnostics quiet;
              if (Instantiator(a, j.spec, &quiet).ok() && !Instantiator(a, j.spec, &quiet).applicable()) {
                InstanceSpec c = j.spec;
                c.commutative = true;
                if (Instantiator(a, c, &quiet).applicable()) j.spec.commutative = true;
              }
            }
            res[i] = verify_instance(a, j.spec, s.sm, &diags[i]);
            if (res[i].outcome == Outcome::Failed) failures++;
            done++;
          }
        };
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < std::min<size_t>(jobs_n, jobs.size()); t++) pool.emplace_back(worker);
        while (progress && done.load() < jobs.size()) {
          std::cerr << "\r" << a.name << ": " << done.load() << "/" << jobs.size() << " instances" << std::flush;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        for (std::thread &t : pool) t.join();
        if (progress) std::cerr << "\r\033[K" << std::flush;

        Summary sum;
        nlohmann::json instances = nlohmann::json::array();
        for (size_t i = 0; i < jobs.size(); i++) {
          const InstanceSpec &sp = jobs[i].spec;
          s.diags.append(diags[i]);
          const InstanceResult &r = res[i];
          nlohmann::json ij = {{"instance", sp.describe(a)}};
          if (r.outcome == Outcome::Verified) {
            sum.verified++;
            sum.most.ops = std::max(sum.most.ops, r.stats.ops);
            sum.most.messages = std::max(sum.most.messages, r.stats.messages);
            sum.most.bytes = std::max(sum.most.bytes, r.stats.bytes);
            sum.most.critical_path = std::max(sum.most.critical_path, r.stats.critical_path);
            sum.most.max_scratch = std::max(sum.most.max_scratch, r.stats.max_scratch);
            sum.p_lo = std::min(sum.p_lo, sp.P);
            sum.p_hi = std::max(sum.p_hi, sp.P);
            sum.n_lo = std::min(sum.n_lo, sp.n);
            sum.n_hi = std::max(sum.n_hi, sp.n);
            ij["result"] = "verified";
            ij["messages"] = r.stats.messages;
            ij["bytes"] = r.stats.bytes;
            ij["critical_path"] = r.stats.critical_path;
            ij["scratch"] = r.stats.max_scratch;
            ij["operations"] = r.stats.ops;
            if (opt->report && !opt->json)
              std::cout << a.name << " " << sp.describe(a) << ": " << r.stats.messages << " messages, "
                        << human_bytes(r.stats.bytes) << ", critical path " << r.stats.critical_path
                        << " messages, scratch " << human_bytes(r.stats.max_scratch) << " per rank at most\n";
          } else if (r.outcome == Outcome::Skipped) {
            sum.skipped++;
            sum.skip_reasons[r.skipped_because]++;
            ij["result"] = "skipped";
            ij["because"] = r.skipped_because;
          } else {
            sum.failed++;
            ij["result"] = "failed";
          }
          instances.push_back(ij);
        }
        if (sum.verified == 0 && sum.failed == 0 && !jobs.empty()) {
          Diagnostic &d = s.diags.error(Code::AllSkipped, a.loc, "every instance of the sweep is skipped: " + a.name + " verified nothing");
          for (const auto &why : sum.skip_reasons) d.witness.push_back(std::to_string(why.second) + " skipped: " + why.first);
        }
        if (!opt->quiet && !opt->json) {
          std::cout << a.name << ": " << sum.verified << " instances verified, " << sum.skipped << " skipped, "
                    << sum.failed << " failed";
          if (sum.verified)
            std::cout << " (P " << sum.p_lo << ".." << sum.p_hi << ", n " << sum.n_lo << ".." << sum.n_hi
                      << "); at most " << sum.most.messages << " messages, " << human_bytes(sum.most.bytes)
                      << ", critical path " << sum.most.critical_path << ", scratch "
                      << human_bytes(sum.most.max_scratch) << " per rank";
          std::cout << "\n";
          for (const auto &why : sum.skip_reasons)
            std::cout << "  skipped " << why.second << ": " << why.first << "\n";
        }
        results.push_back({{"algorithm", a.name}, {"file", entry.second}, {"verified", sum.verified},
                           {"skipped", sum.skipped}, {"failed", sum.failed}, {"instances", instances}});
      }
      return report(s, {{"results", results}});
    };
  });
}

}  // namespace cad::tool
