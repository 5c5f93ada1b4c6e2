// cmd_simulate.cpp - cadc simulate FILE --ranks P --size N [...]: what one
// instance would cost under the model of cadc/lib/simulate.h (one CPU per
// rank, or --cpus C shared round robin; alpha + beta per byte of the
// copier's CPU per message, an eager message alpha_eager / 2 + beta per
// byte on each side, beta per byte copied locally, gamma per byte
// reduced),
// once verify has proven it: the time, each rank's end and CPU time, the
// critical path, and with --timeline every operation's start and end.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "../../kmod/core/cad_core.h"
#include "../lib/simulate.h"
#include "../lib/verify.h"
#include "instance_options.h"

namespace cad::tool {

namespace {

struct SimulateOptions {
  std::string file;
  InstanceOptions inst;
  CostModel model;
  bool timeline = false, json = false;
};

// "4.9 us": four significant digits in ns, us, ms or s.
std::string duration(double ns) {
  const char *unit = "ns";
  double v = ns;
  for (const char *u : {"us", "ms", "s"}) {
    if (std::fabs(v) < 1000) break;
    v /= 1000;
    unit = u;
  }
  char buf[48];
  snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

}  // namespace

void add_simulate(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<SimulateOptions>();
  CLI::App *cmd = app.add_subcommand(
      "simulate",
      "What one instance costs on a node: a CPU per rank (or --cpus), alpha + beta per byte for each message (eager "
      "ones: --alpha-eager)");
  cmd->add_option("file", opt->file, "Algorithm file")->required();
  add_instance_options(cmd, &opt->inst, true);
  // (Not CLI::Range: NaN passes its comparisons.)
  const CLI::Validator non_negative(
      [](std::string &text) {
        char *end = nullptr;
        const double v = strtod(text.c_str(), &end);
        if (end == text.c_str() || *end || !std::isfinite(v) || v < 0 || v > 1e12)
          return "'" + text + "' is not a number of ns from 0 to 1e12";
        return std::string();
      },
      "NS");
  cmd->add_option("--alpha", opt->model.alpha_ns, "ns of the copier's CPU per message (system call, handshake)")
      ->check(non_negative)->capture_default_str();
  cmd->add_option("--beta", opt->model.beta_ns, "ns per byte copied, by the copier's CPU")
      ->check(non_negative)->capture_default_str();
  cmd->add_option("--gamma", opt->model.gamma_ns, "ns per byte reduced")->check(non_negative)->capture_default_str();
  cmd->add_option("--alpha-eager", opt->model.alpha_eager_ns,
                  "ns per eager message, half of it on each side's CPU (a send that fits cadrt's ring slot completes "
                  "once it is in the ring)")
      ->check(non_negative)->capture_default_str();
  cmd->add_option("--eager-bytes", opt->model.eager_bytes,
                  "Messages up to this many bytes are eager (cadrt's ring slot: 1984); 0: none (cad.ko)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40))->capture_default_str();
  cmd->add_option("--switch", opt->model.switch_ns,
                  "ns a CPU the ranks share spends turning from one rank's work to another's (with --cpus)")
      ->check(non_negative)->capture_default_str();
  cmd->add_option("--cpus", opt->model.cpus,
                  "CPUs the ranks share, rank r on CPU r mod C (as cadrun --bind core places them); 0: one per rank")
      ->check(CLI::Range(0u, 1u << 24))->capture_default_str();
  cmd->add_flag("--timeline", opt->timeline, "Every operation's start and end, in the order they start");
  cmd->add_flag("--json", opt->json, "The simulation and diagnostics as JSON on stdout");
  cmd->callback([opt, run] {
    *run = [opt] {
      Session s;
      s.json = opt->json;
      SingleInstance one;
      if (!load_single_instance(s, opt->file, &opt->inst, &one)) return report(s);
      const Algorithm &a = *one.alg;
      const InstanceSpec &spec = one.spec;
      // Only what is proven: a deadlock or an unmatched message has no time.
      std::vector<RankProgram> progs;
      if (verify_instance(a, spec, s.sm, &s.diags, &progs).outcome != Outcome::Verified) return report(s);
      const Matching match = match_messages(progs);
      const Simulation sim = simulate(progs, match, opt->model);

      auto rank_of = [&](uint64_t g) {
        return static_cast<uint32_t>(std::upper_bound(match.base.begin(), match.base.end(), g) - match.base.begin() - 1);
      };
      auto op_of = [&](uint64_t g) -> const RankOp & { return progs[rank_of(g)].ops[g - match.base[rank_of(g)]]; };
      auto where = [&](uint64_t g) { return op_of(g).stmt ? format_loc(s.sm, op_of(g).stmt->loc) : std::string(); };
      auto is_message = [&](uint64_t g) { return op_of(g).kind == CAD_NODE_SEND || op_of(g).kind == CAD_NODE_RECV; };
      auto is_eager = [&](uint64_t g) {
        return is_message(g) && match.partner[g] != Matching::kUnmatched && eager_message(op_of(g).len, opt->model);
      };
      // The critical path's time by what it went on (its links: a
      // predecessor, or the operation before on the same CPU).
      double on_alpha = 0, on_copies = 0, on_reductions = 0, on_switches = 0;
      uint64_t messages = 0, cpu_links = 0;
      for (uint64_t g : sim.critical) {
        const SimOp &o = sim.ops[g];
        const double work = o.end - o.start;
        cpu_links += o.start > o.ready;
        on_switches += o.switched;
        if (is_message(g)) {
          // (An eager message's two sides each count as one.)
          messages++;
          const double alpha = is_eager(g) ? opt->model.alpha_eager_ns / 2 : opt->model.alpha_ns;
          on_alpha += std::min(work, alpha);
          on_copies += work - std::min(work, alpha);
        } else {
          (op_of(g).kind == CAD_NODE_REDUCE ? on_reductions : on_copies) += work;
        }
      }
      const std::string title = a.name + " " + spec.describe(a);
      if (s.json) {
        nlohmann::json ranks = nlohmann::json::array(), critical = nlohmann::json::array(), timeline = nlohmann::json::array();
        for (size_t r = 0; r < sim.ranks.size(); r++)
          ranks.push_back({{"rank", r}, {"done_ns", sim.ranks[r].done}, {"busy_ns", sim.ranks[r].busy},
                           {"copied_bytes", sim.ranks[r].copied}});
        auto op_json = [&](uint64_t g) {
          const SimOp &o = sim.ops[g];
          return nlohmann::json{{"rank", rank_of(g)}, {"op", op_text(progs[rank_of(g)], op_of(g))}, {"at", where(g)},
                                {"ready_ns", o.ready}, {"start_ns", o.start}, {"end_ns", o.end},
                                {"by_rank", o.by < 0 ? nlohmann::json(nullptr) : nlohmann::json(o.by)},
                                {"cpu", o.cpu < 0 ? nlohmann::json(nullptr) : nlohmann::json(o.cpu)},
                                {"switch_ns", o.switched}};
        };
        for (uint64_t g : sim.critical) critical.push_back(op_json(g));
        if (opt->timeline)
          for (uint64_t g = 0; g < sim.ops.size(); g++) timeline.push_back(op_json(g));
        nlohmann::json extra = {{"algorithm", a.name}, {"instance", spec.describe(a)},
                                {"model", {{"alpha_ns", opt->model.alpha_ns}, {"beta_ns_per_byte", opt->model.beta_ns},
                                           {"gamma_ns_per_byte", opt->model.gamma_ns},
                                           {"alpha_eager_ns", opt->model.alpha_eager_ns},
                                           {"eager_bytes", opt->model.eager_bytes},
                                           {"switch_ns", opt->model.switch_ns},
                                           {"cpus", opt->model.cpus ? std::min<size_t>(opt->model.cpus, progs.size())
                                                                    : progs.size()}}},
                                {"time_ns", sim.time}, {"switches", sim.switches}, {"ranks", ranks},
                                {"critical_path", critical}};
        if (opt->timeline) extra["timeline"] = timeline;
        return report(s, extra);
      }
      std::cout << title << ": " << duration(sim.time) << "\n";
      char line[200];
      const std::string cpus = opt->model.cpus && opt->model.cpus < progs.size()
                                   ? std::to_string(opt->model.cpus) + " CPU" + (opt->model.cpus == 1 ? "" : "s") +
                                         " shared, rank r on r mod " + std::to_string(opt->model.cpus)
                                   : "one CPU per rank";
      snprintf(line, sizeof line, "  model: %s; alpha %g ns per message, beta %g ns/B copied, gamma %g ns/B reduced\n",
               cpus.c_str(), opt->model.alpha_ns, opt->model.beta_ns, opt->model.gamma_ns);
      std::cout << line;
      if (opt->model.eager_bytes)
        snprintf(line, sizeof line, "  eager up to %llu B: alpha %g ns per message, half on each side\n",
                 static_cast<unsigned long long>(opt->model.eager_bytes), opt->model.alpha_eager_ns);
      else
        snprintf(line, sizeof line, "  no eager messages\n");
      std::cout << line;
      if (opt->model.cpus && opt->model.cpus < progs.size()) {
        snprintf(line, sizeof line, "  a CPU's turn from one rank to another: %g ns (%llu turn%s)\n",
                 opt->model.switch_ns, static_cast<unsigned long long>(sim.switches), sim.switches == 1 ? "" : "s");
        std::cout << line;
      }
      std::cout << "  rank  done        CPU busy    copied (messages)\n";
      auto print_rank = [&](size_t r) {
        snprintf(line, sizeof line, "  %4zu  %-10s  %-10s  %llu B\n", r, duration(sim.ranks[r].done).c_str(),
                 duration(sim.ranks[r].busy).c_str(), static_cast<unsigned long long>(sim.ranks[r].copied));
        std::cout << line;
      };
      // Every rank up to 16 of them; beyond, the 8 that end last (--json has all).
      std::vector<size_t> shown(sim.ranks.size());
      for (size_t r = 0; r < shown.size(); r++) shown[r] = r;
      if (shown.size() > 16) {
        std::stable_sort(shown.begin(), shown.end(),
                         [&](size_t x, size_t y) { return sim.ranks[x].done > sim.ranks[y].done; });
        shown.resize(8);
        std::sort(shown.begin(), shown.end());
        std::cout << "  (the 8 of " << sim.ranks.size() << " ranks that end last)\n";
      }
      for (size_t r : shown) print_rank(r);
      auto count = [](uint64_t k, const char *what) { return std::to_string(k) + " " + what + (k == 1 ? "" : "s"); };
      std::cout << "  critical path: " << count(sim.critical.size(), "operation") << ", " << count(messages, "message")
                << ": " << duration(on_copies) << " copying, " << duration(on_reductions) << " reducing, "
                << duration(on_alpha) << " in handshakes, " << duration(on_switches) << " in turns between ranks; "
                << count(cpu_links, "link")
                << " to the operation before on the same CPU\n";
      auto print_op = [&](uint64_t g) {
        const SimOp &o = sim.ops[g];
        snprintf(line, sizeof line, "  %-10s %-10s rank %-4u ", duration(o.start).c_str(), duration(o.end).c_str(), rank_of(g));
        std::string cpu = o.cpu >= 0 ? "cpu " + std::to_string(o.cpu) : "       ";
        if (o.cpu >= 0 && o.cpu != o.by) cpu += " (rank " + std::to_string(o.by) + ")";
        std::cout << line << cpu << "  "
                  << op_text(progs[rank_of(g)], op_of(g)) << "  " << where(g) << "\n";
      };
      if (!opt->timeline) return report(s);
      std::cout << "  timeline (start, end, rank, the CPU that did the work, operation, source; a rendezvous once, "
                   "from its send; an eager message's sides each):\n";
      std::vector<uint64_t> order;
      for (uint64_t g = 0; g < sim.ops.size(); g++)
        if (op_of(g).kind != CAD_NODE_RECV || match.partner[g] == Matching::kUnmatched || is_eager(g))
          order.push_back(g);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint64_t x, uint64_t y) { return sim.ops[x].start < sim.ops[y].start; });
      for (uint64_t g : order) print_op(g);
      return report(s);
    };
  });
}

}  // namespace cad::tool
