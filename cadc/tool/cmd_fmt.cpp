// cmd_fmt.cpp - cadc fmt: print algorithm files in canonical form, as the
// DSL or as the JSON form.  DSL -> JSON -> DSL and JSON -> DSL -> JSON
// give back exactly the canonical text.
#include <fstream>
#include <iostream>

#include "../lib/json_form.h"
#include "../lib/printer.h"
#include "common.h"

namespace cad::tool {

namespace {
struct FmtOptions {
  std::vector<std::string> files;
  std::string to;       // "dsl", "json" or "" (the file's own form)
  std::string output;   // -o FILE
  bool in_place = false;
  bool check = false;
};
}  // namespace

void add_fmt(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<FmtOptions>();
  CLI::App *cmd = app.add_subcommand("fmt", "Print algorithm files in canonical form (DSL or JSON)");
  cmd->add_option("files", opt->files, "Algorithm files (.cad or .json)")->required();
  cmd->add_option("--to", opt->to, "Output form (default: the file's own)")->check(CLI::IsMember({"dsl", "json"}));
  cmd->add_option("-o,--output", opt->output, "Write to this file (one input only)");
  cmd->add_flag("-i,--in-place", opt->in_place, "Rewrite each file in canonical form");
  cmd->add_flag("--check", opt->check, "Only tell: exit 1 if a file is not in canonical form");
  cmd->callback([opt, run] {
    *run = [opt] {
      if (!opt->output.empty() && opt->files.size() != 1) throw UsageError("-o takes one input file");
      if (opt->in_place && !opt->output.empty()) throw UsageError("-i and -o exclude each other");
      Session s;
      int status = kOk;
      for (const std::string &f : opt->files) {
        Module m;
        if (!load_module(s, f, &m, /*check=*/false)) continue;
        const bool is_json = s.sm.file(m.file).json;
        const std::string to = opt->to.empty() ? (is_json ? "json" : "dsl") : opt->to;
        if (opt->in_place && (to == "json") != is_json)
          throw UsageError(f + ": -i keeps a file's form; use -o to write the other form");
        const std::string text = to == "json" ? write_json_module(m) : print_module(m);
        if (opt->check) {
          if (text != s.sm.file(m.file).text) {
            std::cerr << f << ": not in canonical form (cadc fmt -i " << f << ")\n";
            status = kDiagnostics;
          }
          continue;
        }
        const std::string out = opt->in_place ? f : opt->output;
        if (out.empty()) {
          std::cout << text;
          continue;
        }
        std::ofstream o(out, std::ios::binary);
        if (!(o << text)) throw UsageError("cannot write " + out);
      }
      const int diag = report(s);
      return diag != kOk ? diag : status;
    };
  });
}

}  // namespace cad::tool
