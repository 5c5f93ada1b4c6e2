// cmd_check.cpp - cadc check FILE...: parse and check, no instantiation.
#include "instance_options.h"

namespace cad::tool {

namespace {
struct CheckOptions {
  std::vector<std::string> files;
  InstanceOptions inst;  // only --ops
  bool json = false;
};
}  // namespace

void add_check(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App *cmd = app.add_subcommand("check", "Parse and check algorithm files (no instantiation)");
  cmd->add_option("files", opt->files, "Algorithm files (.cad, or .json for the JSON form), or libraries (.cadlib)")
      ->required();
  cmd->add_option("--ops", opt->inst.op_files, "User-defined operators the algorithms name: C or .cadop files");
  cmd->add_flag("--json", opt->json, "Diagnostics as JSON on stdout");
  cmd->callback([opt, run] {
    *run = [opt] {
      Session s;
      s.json = opt->json;
      nlohmann::json algorithms = nlohmann::json::array();
      if (!load_instance_ops(s, &opt->inst)) return report(s);
      for (const std::string &f : opt->files) {
        if (is_cadlib(f)) {  // a library: checked as the runtime loads it (format, hash, every source)
          Library lib;
          if (load_library(f, &lib, &s.diags))
            for (const Algorithm *a : lib.algorithms)
              algorithms.push_back({{"file", f}, {"name", a->name}, {"collective", collective_info(a->collective).name}});
          continue;
        }
        Module m;
        load_module(s, f, &m, true, opt->inst.ops);
        for (const Algorithm &a : m.algorithms)
          algorithms.push_back({{"file", f}, {"name", a.name},
                                {"collective", collective_info(a.collective).name}});
      }
      return report(s, {{"algorithms", algorithms}});
    };
  });
}

}  // namespace cad::tool
