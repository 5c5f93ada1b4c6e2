// cmd_compile.cpp - cadc compile FILE --ranks P --size N [--root R] ... -o DIR:
// one verified .cadbc program per rank in DIR (<algorithm>.<rank>.cadbc).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "instance_options.h"

namespace cad::tool {

namespace {
struct CompileOptions {
  std::string file, out_dir;
  InstanceOptions inst;
  bool json = false;
};
}  // namespace

void add_compile(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<CompileOptions>();
  CLI::App *cmd = app.add_subcommand("compile", "Instantiate every rank's CAD program of one instance");
  cmd->add_option("file", opt->file, "Algorithm file")->required();
  cmd->add_option("-o,--output", opt->out_dir, "Directory for the .cadbc files")->required();
  add_instance_options(cmd, &opt->inst, true);
  cmd->add_flag("--json", opt->json, "Diagnostics as JSON on stdout");
  cmd->callback([opt, run] {
    *run = [opt] {
      Session s;
      s.json = opt->json;
      SingleInstance one;
      if (!load_single_instance(s, opt->file, &opt->inst, &one)) return report(s);
      const Algorithm &a = *one.alg;
      const InstanceSpec &spec = one.spec;
      const Instantiator &in = *one.in;
      std::error_code ec;
      std::filesystem::create_directories(opt->out_dir, ec);
      if (ec) throw UsageError("cannot create " + opt->out_dir + ": " + ec.message());
      nlohmann::json files = nlohmann::json::array();
      for (int64_t r = 0; r < spec.P; r++) {
        RankProgram rp;
        std::vector<uint64_t> image;
        uint32_t size;
        if (!in.rank(static_cast<uint32_t>(r), &rp) || !emit_image(a, spec, rp, s.sm, &image, &size, &s.diags))
          continue;
        const std::string path = opt->out_dir + "/" + a.name + "." + std::to_string(r) + ".cadbc";
        std::ofstream out(path, std::ios::binary);
        if (!out.write(reinterpret_cast<const char *>(image.data()), size)) throw UsageError("cannot write " + path);
        files.push_back(path);
      }
      if (!s.diags.has_errors() && !s.json)
        std::cout << "wrote " << files.size() << " programs (" << spec.describe(a) << ") to " << opt->out_dir << "\n";
      return report(s, {{"files", files}, {"instance", spec.describe(a)}});
    };
  });
}

}  // namespace cad::tool
