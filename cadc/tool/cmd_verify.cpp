// cmd_verify.cpp - cadc verify FILE... : prove algorithms on a sweep of
// instances (ranks x sizes x roots x parameters x topologies, in place too
// where the algorithm supports it), on all cores.  The sweep is planned
// by plan_sweep (lib/sweep.h): without --ranks, the algorithm's own.
#include <unistd.h>

#include <iostream>
#include <thread>

#include "../lib/sweep.h"
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
  cmd->add_option("--max-failures", opt->max_failures, "Stop an algorithm after this many failing instances")
      ->check(CLI::Range(1, 1000000000));
  cmd->add_flag("--json", opt->json, "Results and diagnostics as JSON on stdout");
  cmd->add_flag("--report", opt->report, "A line per instance: messages, bytes, critical path, scratch");
  cmd->add_flag("-q,--quiet", opt->quiet, "No progress and no summary");
  cmd->callback([opt, run] {
    *run = [opt] {
      Session s;
      s.json = opt->json;
      std::vector<Module> modules(opt->files.size());
      std::vector<std::pair<const Algorithm *, std::string>> algs;
      if (!load_instance_ops(s, &opt->inst)) return report(s);
      for (size_t i = 0; i < opt->files.size(); i++) {
        if (!load_module(s, opt->files[i], &modules[i], true, opt->inst.ops)) continue;
        for (const Algorithm *a : select(modules[i], opt->inst.algorithm)) algs.emplace_back(a, opt->files[i]);
      }
      if (s.diags.has_errors()) return report(s);
      SweepSettings st;
      st.ranks = opt->inst.ranks;
      st.sizes = opt->inst.sizes;
      st.roots = opt->inst.roots;
      st.params = opt->inst.params;
      st.topology = opt->inst.topology;
      st.inplace = opt->inst.inplace;
      const unsigned jobs = opt->jobs ? opt->jobs : std::max(1u, std::thread::hardware_concurrency());
      const bool tty = !opt->quiet && !opt->json && isatty(2);
      nlohmann::json results = nlohmann::json::array();
      for (const auto &[alg, file] : algs) {
        const Algorithm &a = *alg;
        InstanceSpec op;  // the op, for this algorithm
        parse_op(opt->inst, a, &op);
        // Neither --op nor --dtype: the algorithm's op, at every element
        // size it reads, as cadc build verifies it.
        const bool given = !opt->inst.op.empty() || !opt->inst.dtype.empty();
        st.dtype = op.dtype;
        st.op = given ? op.op : 0;
        st.user_op = given ? op.user_op : nullptr;
        std::vector<InstanceSpec> plan;
        std::string error;
        if (!plan_sweep(a, file, st, &plan, &error, &s.diags)) {
          if (!error.empty()) throw UsageError(error);
          continue;
        }
        BranchCoverage branches(a.nstmts);
        SweepOutcome out = run_sweep(
            a, plan, s.sm, jobs, opt->max_failures,
            [&](size_t done, size_t total) {
              if (tty) std::cerr << "\r" << a.name << ": " << done << "/" << total << " instances" << std::flush;
            },
            &branches);
        if (tty) std::cerr << "\r\033[K" << std::flush;
        s.diags.append(out.diags);
        // Branches no instance took, on the algorithm's own sweep run whole.
        if (st.declared() && out.failed == 0 && out.not_run == 0) report_untaken(a, branches, &s.diags);
        nlohmann::json instances = nlohmann::json::array();
        int64_t p_lo = INT64_MAX, p_hi = 0, n_lo = INT64_MAX, n_hi = 0;
        for (size_t i = 0; i < plan.size(); i++) {
          const InstanceSpec &sp = plan[i];
          const InstanceResult &r = out.results[i];
          nlohmann::json ij = {{"instance", sp.describe(a)}};
          if (r.outcome == Outcome::Verified) {
            p_lo = std::min(p_lo, sp.P);
            p_hi = std::max(p_hi, sp.P);
            n_lo = std::min(n_lo, sp.n);
            n_hi = std::max(n_hi, sp.n);
            ij.update({{"result", "verified"}, {"messages", r.stats.messages}, {"bytes", r.stats.bytes},
                       {"critical_path", r.stats.critical_path}, {"scratch", r.stats.max_scratch},
                       {"operations", r.stats.ops}});
            if (opt->report && !opt->json)
              std::cout << a.name << " " << sp.describe(a) << ": " << r.stats.messages << " messages, "
                        << human_bytes(r.stats.bytes) << ", critical path " << r.stats.critical_path
                        << " messages, scratch " << human_bytes(r.stats.max_scratch) << " per rank at most\n";
          } else if (r.outcome == Outcome::Skipped) {
            ij.update({{"result", "skipped"}, {"because", r.skipped_because}});
          } else if (r.outcome == Outcome::NotRun) {
            ij["result"] = "not run";
          } else {
            ij["result"] = "failed";
          }
          instances.push_back(ij);
        }
        if (!opt->quiet && !opt->json) {
          std::cout << a.name << ": " << out.verified << " instances verified, " << out.skipped << " skipped, "
                    << out.failed << " failed";
          if (out.not_run) std::cout << ", " << out.not_run << " not run (--max-failures " << opt->max_failures << ")";
          if (out.verified)
            std::cout << " (P " << p_lo << ".." << p_hi << ", n " << n_lo << ".." << n_hi << "); at most "
                      << out.most.messages << " messages, " << human_bytes(out.most.bytes) << ", critical path "
                      << out.most.critical_path << ", scratch " << human_bytes(out.most.max_scratch) << " per rank";
          std::cout << "\n";
          for (const auto &why : out.skip_reasons) std::cout << "  skipped " << why.second << ": " << why.first << "\n";
        }
        results.push_back({{"algorithm", a.name}, {"file", file}, {"verified", out.verified},
                           {"skipped", out.skipped}, {"failed", out.failed}, {"not_run", out.not_run}, {"instances", instances}});
      }
      return report(s, {{"results", results}});
    };
  });
}

}  // namespace cad::tool
