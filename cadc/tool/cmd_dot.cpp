// cmd_dot.cpp - cadc dot FILE --ranks P --size N: Graphviz of every rank's
// DAG (a cluster per rank) with the matched sends and receives joined
// across ranks by dashed edges.
#include <fstream>
#include <iostream>

#include "../../kmod/core/cad_core.h"
#include "../lib/verify.h"
#include "instance_options.h"

namespace cad::tool {

namespace {

struct DotOptions {
  std::string file, output;
  InstanceOptions inst;
};

std::string label(const RankProgram &p, const RankOp &o) {
  auto range = [&](int32_t b, uint64_t off) {
    return p.buffers[b].name + "[" + std::to_string(off / p.esize) + ":" + std::to_string((off + o.len) / p.esize) + "]";
  };
  switch (o.kind) {
    case CAD_NODE_SEND: return "send " + range(o.src, o.src_off) + " → " + std::to_string(o.peer);
    case CAD_NODE_RECV: return "recv " + range(o.dst, o.dst_off) + " ← " + std::to_string(o.peer);
    case CAD_NODE_COPY: return "copy " + range(o.dst, o.dst_off) + " ← " + range(o.src, o.src_off);
    case CAD_NODE_REDUCE: return std::string("reduce ") + cad_op_name(o.op) + " " + range(o.dst, o.dst_off) + " ← " + range(o.src, o.src_off);
    default: return "fence";
  }
}

}  // namespace

void add_dot(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<DotOptions>();
  CLI::App *cmd = app.add_subcommand("dot", "Graphviz of every rank's DAG, with matched messages across ranks");
  cmd->add_option("file", opt->file, "Algorithm file")->required();
  cmd->add_option("-o,--output", opt->output, "Write to this file (default: stdout)");
  add_instance_options(cmd, &opt->inst, true);
  cmd->callback([opt, run] {
    *run = [opt] {
      Session s;
      Module m;
      if (!load_instance_ops(s, &opt->inst) || !load_module(s, opt->file, &m, true, opt->inst.ops)) return report(s);
      auto algs = select(m, opt->inst.algorithm);
      if (algs.size() > 1) throw UsageError(opt->file + " defines several algorithms: choose one with --algorithm");
      const Algorithm &a = *algs[0];
      const InstanceSpec spec = single_instance(opt->inst, a);
      Instantiator in(a, spec, &s.diags);
      if (in.ok() && !in.applicable()) {
        Diagnostic &d = s.diags.error(Code::NeverHolds, in.failed_requirement()->cond->loc,
                                      "this requirement does not hold for the instance");
        d.instance = spec.describe(a);
      }
      std::vector<RankProgram> progs;
      if (!in.ok() || !in.applicable() || !instantiate_all(in, s.sm, &s.diags, &progs)) return report(s);
      const Matching match = match_messages(progs);
      std::string out = "digraph \"" + a.name + "\" {\n  label=\"" + a.name + " " + spec.describe(a) +
                        "\";\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
      for (size_t r = 0; r < progs.size(); r++) {
        const RankProgram &p = progs[r];
        out += "  subgraph cluster_" + std::to_string(r) + " {\n    label=\"rank " + std::to_string(r) + "\";\n";
        for (size_t i = 0; i < p.ops.size(); i++)
          out += "    n" + std::to_string(match.base[r] + i) + " [label=\"" + label(p, p.ops[i]) + "\"];\n";
        for (size_t i = 0; i < p.ops.size(); i++)
          for (uint32_t e = p.edge_first[i]; e < p.edge_first[i + 1]; e++)
            out += "    n" + std::to_string(match.base[r] + i) + " -> n" + std::to_string(match.base[r] + p.edges[e]) + ";\n";
        out += "  }\n";
      }
      for (size_t r = 0; r < progs.size(); r++)
        for (size_t i = 0; i < progs[r].ops.size(); i++) {
          const uint64_t g = match.base[r] + i, pg = match.partner[g];
          if (progs[r].ops[i].kind == CAD_NODE_SEND && pg != Matching::kUnmatched)
            out += "  n" + std::to_string(g) + " -> n" + std::to_string(pg) + " [style=dashed, color=blue];\n";
        }
      out += "}\n";
      if (opt->output.empty()) {
        std::cout << out;
      } else {
        std::ofstream f(opt->output);
        if (!(f << out)) throw UsageError("cannot write " + opt->output);
      }
      return report(s);
    };
  });
}

}  // namespace cad::tool
