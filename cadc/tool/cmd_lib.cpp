// cmd_lib.cpp - cadc lib show LIB.cadlib: what a library holds and what
// its proofs cover -- each algorithm's proven domain (domain.h), its
// rules in order (those whose calls beyond the domain the runtime proves
// on arrival marked), its operators and its hash.  --json prints the
// same as data.
#include <iostream>

#include "../lib/library.h"
#include "common.h"

namespace cad::tool {

namespace {
struct LibOptions {
  std::string library;
  bool json = false;
};

std::string rule_text(const Rule &r) {
  std::string s = std::string(collective_info(r.collective).name);
  if (!r.ranks.empty()) s += " P=" + r.ranks_text;
  if (r.min_bytes) s += " from " + std::to_string(r.min_bytes) + " B";
  if (r.max_bytes != INT64_MAX) s += " to " + std::to_string(r.max_bytes) + " B";
  if (r.commutative >= 0) s += r.commutative ? " commutative" : " noncommutative";
  if (r.inplace >= 0) s += r.inplace ? " in place" : " not in place";
  if (!r.op.empty()) s += " op " + r.op;
  s += ": " + r.use;
  for (const auto &p : r.params) s += " " + p.first + "=" + std::to_string(p.second);
  if (r.online) s += " (beyond its domain: proven on arrival)";
  return s;
}
}  // namespace

void add_lib(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<LibOptions>();
  CLI::App *lib = app.add_subcommand("lib", "Look into a library built by cadc build");
  lib->require_subcommand(1);
  CLI::App *show = lib->add_subcommand("show", "Its algorithms with the domains their proofs cover, rules, operators");
  show->add_option("library", opt->library, "A library (.cadlib)")->required();
  show->add_flag("--json", opt->json, "As JSON on stdout");
  show->callback([opt, run] {
    *run = [opt]() -> int {
      Session s;
      s.json = opt->json;
      Library lib;
      if (!load_library(opt->library, &lib, &s.diags, /*lazy=*/true)) return report(s);
      if (opt->json) {
        nlohmann::json algs = nlohmann::json::array(), rules = nlohmann::json::array(), ops = nlohmann::json::array();
        for (const Library::Proven &p : lib.proven)
          algs.push_back({{"name", p.name}, {"collective", collective_info(p.collective).name},
                          {"proven", p.domain.to_json()}});
        for (const Rule &r : lib.rules) rules.push_back({{"rule", r.where}, {"text", rule_text(r)}, {"online", r.online}});
        for (const auto &op : lib.ops) ops.push_back(op->name);
        std::cout << nlohmann::json{{"library", opt->library}, {"hash", lib.hash}, {"algorithms", algs},
                                    {"rules", rules}, {"operators", ops}}
                         .dump(2)
                  << "\n";
        return kOk;
      }
      std::cout << opt->library << " (" << lib.hash << "): " << lib.proven.size() << " algorithms, "
                << lib.ops.size() << " operators, " << lib.rules.size() << " rules\n";
      for (const Library::Proven &p : lib.proven) {
        std::cout << "\n" << p.name << " (" << collective_info(p.collective).name << "), proven for:\n";
        for (const std::string &line : p.domain.describe(collective_info(p.collective)))
          std::cout << "  " << line << "\n";
      }
      std::cout << "\nrules, the first that applies to a call chooses:\n";
      for (size_t i = 0; i < lib.rules.size(); i++) std::cout << "  /rules/" << i << " " << rule_text(lib.rules[i]) << "\n";
      if (!lib.ops.empty()) {
        std::cout << "\noperators:";
        for (const auto &op : lib.ops) std::cout << " " << op->name;
        std::cout << "\n";
      }
      return kOk;
    };
  });
}

}  // namespace cad::tool
