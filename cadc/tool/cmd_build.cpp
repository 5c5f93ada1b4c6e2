// cmd_build.cpp - cadc build DIR -o LIB.cadlib: every algorithm of a folder
// (*.cad, and *.json in the JSON form) and its selection rules (rules.json)
// into one library for the runtime.  Refuses an algorithm without a sweep
// or that does not verify on it, and rules that do not fit the algorithms.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <set>
#include <thread>

#include "../../kmod/uapi/cad.h"
#include "../lib/domain.h"
#include "../lib/library.h"
#include "../lib/schema.h"
#include "../lib/sweep.h"
#include "common.h"

namespace cad::tool {

namespace {
struct BuildOptions {
  std::string dir, output;
  unsigned jobs = 0;
  bool json = false;
};
}  // namespace

// The algorithm files of a folder (*.cad, and *.json in the JSON form, but
// rules.json), its operators (ops/*.c through the LibTooling front end,
// ops/*.cadop), each loaded and checked -- not verified; errors into s.
// print: a line per operator on stdout.
void load_library_folder(Session &s, const std::string &dir, bool print, LibraryFolder *out) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw UsageError(dir + " is not a folder");
  for (const auto &e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name != "rules.json" &&
        (e.path().extension() == ".cad" || e.path().extension() == ".json"))
      out->files.push_back(e.path().string());
  }
  std::sort(out->files.begin(), out->files.end());
  if (out->files.empty()) throw UsageError(dir + " holds no algorithm files");
  // User-defined operators first (algorithms may name them), packed as
  // verified bytecode.
  const fs::path ops_dir = fs::path(dir) / "ops";
  if (fs::is_directory(ops_dir)) {
    std::vector<std::string> op_files;
    for (const auto &e : fs::directory_iterator(ops_dir))
      if (e.is_regular_file() && (e.path().extension() == ".c" || e.path().extension() == ".cadop"))
        op_files.push_back(e.path().string());
    std::sort(op_files.begin(), op_files.end());
    std::set<std::string> names;
    OpcOptions oo;
    oo.include_dirs.push_back(ops_dir.string());
    for (const std::string &f : op_files) {
      std::vector<UserOp> got;
      if (!load_ops(s, f, oo, &got)) continue;
      for (UserOp &u : got) {
        if (!names.insert(u.name).second) {
          s.diags.error(Code::OpNone, Loc(), f + ": a second operator named " + u.name + " in the library");
          continue;
        }
        out->ops.push_back(userop_to_json(u));
        if (print)
          std::cout << u.name << ": operator, " << u.type << ", " << (u.commutative ? "commutative" : "noncommutative")
                    << ", " << u.code.size() << " instructions\n";
        out->user_ops.push_back(std::make_shared<const UserOp>(std::move(u)));
      }
    }
  }
  out->modules.resize(out->files.size());
  for (size_t i = 0; i < out->files.size(); i++) {
    if (!load_module(s, out->files[i], &out->modules[i], true, out->user_ops)) continue;
    out->sources.push_back({{"file", fs::path(out->files[i]).filename().string()},
                            {"text", s.sm.file(out->modules[i].file).text}});
    for (const Algorithm &a : out->modules[i].algorithms) {
      for (const Algorithm *b : out->algs)
        if (b->name == a.name) s.diags.error(Code::Redefined, a.loc, "a second algorithm named " + a.name + " in the library");
      out->algs.push_back(&a);
    }
  }
}

// DIR/rules.json, read and checked against the folder's algorithms into
// *json and lib->rules; false with errors in s.
bool read_folder_rules(Session &s, const std::string &dir, const LibraryFolder &f, nlohmann::json *json, Library *lib) {
  namespace fs = std::filesystem;
  const fs::path rules_path = fs::path(dir) / "rules.json";
  std::string rules_text, rules_error;
  if (!fs::exists(rules_path)) {
    s.diags.error(Code::Library, Loc(), rules_path.string() + ": missing: the library needs selection rules");
    return false;
  }
  if (!read_file(rules_path.string(), kMaxSourceBytes, &rules_text, &rules_error)) {
    s.diags.error(Code::Library, Loc(), rules_error);
    return false;
  }
  try {
    *json = nlohmann::json::parse(rules_text);
  } catch (const nlohmann::json::exception &e) {  // parse_error, or out_of_range for a number that overflows
    s.diags.error(Code::Library, Loc(), rules_path.string() + ": invalid JSON: " + json_error_text(e));
    return false;
  }
  return read_rules(*json, rules_path.string(), f.algs, f.user_ops, &lib->rules, &s.diags);
}

void add_build(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<BuildOptions>();
  CLI::App *cmd = app.add_subcommand("build", "Verify a folder of algorithms on their sweeps and pack them into a library");
  cmd->add_option("dir", opt->dir, "Folder with *.cad (or JSON-form *.json) files and rules.json")->required();
  cmd->add_option("-o,--output", opt->output, "The library file to write (.cadlib)")->required();
  cmd->add_option("-j,--jobs", opt->jobs, "Parallel jobs (default: the cores)");
  cmd->add_flag("--json", opt->json, "Diagnostics as JSON on stdout");
  cmd->callback([opt, run] {
    *run = [opt] {
      namespace fs = std::filesystem;
      Session s;
      s.json = opt->json;
      LibraryFolder f;
      load_library_folder(s, opt->dir, !opt->json, &f);
      std::vector<std::string> &files = f.files;
      std::vector<Module> &modules = f.modules;
      std::vector<const Algorithm *> &algs = f.algs;
      nlohmann::json &ops = f.ops, &sources = f.sources;
      nlohmann::json listed = nlohmann::json::array();
      if (s.diags.has_errors()) return report(s);
      // Every algorithm's sweep planned: the domain each proof will cover.
      struct Planned {
        const Algorithm *alg;
        std::string file;
        std::vector<InstanceSpec> instances;
        Domain domain;
      };
      std::vector<Planned> planned;
      for (size_t i = 0; i < files.size(); i++)
        for (const Algorithm &a : modules[i].algorithms) {
          if (!a.sweep.present) {
            s.diags.error(Code::Sweep, a.loc, a.name + " declares no sweep: the library takes only algorithms verified on theirs");
            continue;
          }
          Planned p{&a, files[i], {}, {}};
          SweepPlan sp;
          std::string error;
          if (!plan_sweep(a, files[i], SweepSettings(), &p.instances, &error, &s.diags, &sp)) {
            if (!error.empty()) throw UsageError(error);
            continue;
          }
          p.domain = domain_of_sweep(a, p.instances, sp.sizes, sp.roots, sp.root_values);
          planned.push_back(std::move(p));
        }
      // The rules, against the algorithms and what their proofs will
      // cover, before any proof: a mistake there fails in a second.
      nlohmann::json rules;
      Library lib;
      if (read_folder_rules(s, opt->dir, f, &rules, &lib)) {
        lib.algorithms = algs;
        std::vector<std::pair<const Algorithm *, const Domain *>> domains;
        for (const Planned &p : planned) domains.emplace_back(p.alg, &p.domain);
        check_rules_against_domains(lib, domains, (fs::path(opt->dir) / "rules.json").string(), &s.diags);
        for (const std::string &call : calls_without_algorithm(lib))
          s.diags.error(Code::Library, Loc(),
                        (fs::path(opt->dir) / "rules.json").string() + ": no rule gives an algorithm to " + call +
                            " (the runtime would fail such a call with -ENOTSUP)");
      }
      if (s.diags.has_errors()) {
        if (!opt->json) std::cerr << "cadc: " << opt->output << " not written\n";
        return report(s);
      }
      const unsigned jobs = opt->jobs ? opt->jobs : std::max(1u, std::thread::hardware_concurrency());
      const bool tty = !opt->json && isatty(2);
      for (Planned &p : planned) {
        const Algorithm &a = *p.alg;
        BranchCoverage branches(a.nstmts);
        SweepOutcome out = run_sweep(
            a, p.instances, s.sm, jobs, 5,
            [&](size_t done, size_t total) {
              if (tty) std::cerr << "\r" << a.name << ": " << done << "/" << total << std::flush;
            },
            &branches);
        if (tty) std::cerr << "\r\033[K" << std::flush;
        s.diags.append(out.diags);
        if (out.failed == 0 && out.not_run == 0) report_untaken(a, branches, &s.diags);
        if (!opt->json)
          std::cout << a.name << ": " << out.verified << " instances verified, " << out.skipped << " skipped, "
                    << out.failed << " failed"
                    << (out.not_run ? ", " + std::to_string(out.not_run) + " not run (stopped after 5 failures)" : "")
                    << "\n";
        p.domain.instances = out.verified;
        if (out.failed == 0 && out.verified > 0)
          listed.push_back({{"name", a.name}, {"collective", collective_info(a.collective).name},
                            {"file", fs::path(p.file).filename().string()},
                            {"verified", out.verified}, {"skipped", out.skipped},
                            {"proven", p.domain.to_json()}});
      }
      if (s.diags.has_errors()) {
        if (!opt->json) std::cerr << "cadc: " << opt->output << " not written\n";
        return report(s);
      }
      nlohmann::json doc = {{"cadlib", kCadlibFormat},           {"program_format", CAD_VERSION},
                            {"created_by", "cadc 0.1"}, {"algorithms", listed},
                            {"sources", sources},     {"ops", ops},
                            {"rules", rules}};
      doc["hash"] = content_hash(doc);
      std::ofstream out(opt->output);
      if (!(out << doc.dump(1) << "\n")) throw UsageError("cannot write " + opt->output);
      if (!opt->json)
        std::cout << "wrote " << opt->output << ": " << listed.size() << " algorithms, " << ops.size() << " operators\n";
      return report(s, {{"library", opt->output}, {"algorithms", listed}});
    };
  });
}

}  // namespace cad::tool
