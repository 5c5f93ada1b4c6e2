// cmd_dot.cpp - cadc dot FILE --ranks P --size N: Graphviz of every rank's
// DAG (a cluster per rank) with the matched sends and receives joined
// across ranks by dashed edges.
#include <fstream>
#include <iostream>

#include "../lib/verify.h"
#include "instance_options.h"

namespace cad::tool {

namespace {
struct DotOptions {
  std::string file, output;
  InstanceOptions inst;
};
// An operation's label: what it does, then the source line it comes from
// (file name and line, as disasm says), in DOT's escaped string form.
std::string label(const SourceManager &sm, const RankProgram &p, const RankOp &op) {
  std::string text = op_text(p, op);
  if (op.stmt && op.stmt->loc.valid() && op.stmt->loc.line) {
    std::string where = format_loc(sm, op.stmt->loc);
    if (const size_t slash = where.rfind('/'); slash != std::string::npos) where = where.substr(slash + 1);
    text += "\n" + where;
  }
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
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
      SingleInstance one;
      std::vector<RankProgram> progs;
      if (!load_single_instance(s, opt->file, &opt->inst, &one) || !instantiate_all(*one.in, s.sm, &s.diags, &progs))
        return report(s);
      const Algorithm &a = *one.alg;
      const InstanceSpec &spec = one.spec;
      const Matching match = match_messages(progs);
      std::string out = "digraph \"" + a.name + "\" {\n  label=\"" + a.name + " " + spec.describe(a) +
                        "\";\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
      for (size_t r = 0; r < progs.size(); r++) {
        const RankProgram &p = progs[r];
        out += "  subgraph cluster_" + std::to_string(r) + " {\n    label=\"rank " + std::to_string(r) + "\";\n";
        for (size_t i = 0; i < p.ops.size(); i++)
          out += "    n" + std::to_string(match.base[r] + i) + " [label=\"" + label(s.sm, p, p.ops[i]) + "\"];\n";
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
