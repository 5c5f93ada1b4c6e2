// cmd_select.cpp - cadc select LIB.cadlib|DIR COLL [--ranks SPEC] [--sizes SPEC]
// ...: which algorithm a library's rules give each call of a grid, as the
// runtime's selection (select_algorithm) gives it, and with --explain why
// each rule before it passed the call on.  For people who write or tune
// rules: the table the rules amount to, without running a job.
//
// The runtime's proof gate is here for a built library: a call outside its
// algorithm's proven domain is marked, and with --prove proven as the
// runtime would (a folder is checked, not proven: no gate).  What the
// runtime adds is not: CADRT_ALGORITHM_<COLL> overrides the rules, and the
// topology is the job's (hwloc's, or CADRT_TOPOLOGY) where this takes
// --topology (default: one flat node).
#include <filesystem>
#include <iostream>

#include "../../kmod/core/cad_core.h"
#include "../lib/domain.h"
#include "../lib/library.h"
#include "../lib/spec.h"
#include "instance_options.h"

namespace cad::tool {

namespace {

struct SelectOptions {
  std::string library, collective;
  std::string ranks = "1..8", sizes = "1,256,16384,262144", roots = "0";
  std::string dtype, op, topology;
  bool inplace = false, noncommutative = false, explain = false, json = false, prove = false;
};

std::vector<int64_t> spec_values(const std::string &text, const char *what) {
  std::vector<int64_t> v;
  std::string error;
  if (!parse_spec(text, &v, &error)) throw UsageError(std::string(what) + ": " + error);
  return v;
}

}  // namespace

void add_select(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<SelectOptions>();
  CLI::App *cmd = app.add_subcommand(
      "select", "Which algorithm a library's rules give each call of a grid (P x count x root), and why");
  cmd->add_option("library", opt->library,
                  "A library built by cadc build (.cadlib), or a folder cadc build would take (checked, not proven)")
      ->required();
  cmd->add_option("collective", opt->collective, "bcast, reduce, allreduce, gather, scatter, allgather, alltoall, "
                                                 "reduce_scatter_block or barrier")
      ->required();
  cmd->add_option("--ranks", opt->ranks, "Numbers of ranks: a SPEC (default 1..8)");
  cmd->add_option("--sizes", opt->sizes, "Counts per rank, in elements: a SPEC (default 1,256,16384,262144)");
  cmd->add_option("--roots", opt->roots, "Roots of a rooted collective: a SPEC (default 0)");
  cmd->add_option("--dtype", opt->dtype, "Datatype of the elements (default i32; bytes = count x its size)");
  cmd->add_option("--op", opt->op, "Reduction op: a built-in (default sum) or one of the library's operators");
  cmd->add_flag("--noncommutative", opt->noncommutative, "A built-in op treated as non-commutative");
  cmd->add_flag("--inplace", opt->inplace, "The calls are in place (at the root of a rooted collective)");
  cmd->add_option("--topology", opt->topology, "Topology file (default: one flat node)");
  cmd->add_flag("--explain", opt->explain, "For each call, every rule looked at and why it passed the call on");
  cmd->add_flag("--json", opt->json, "The table as JSON on stdout");
  cmd->add_flag("--prove", opt->prove,
                "Prove what falls outside an algorithm's proven domain, as the runtime does on arrival "
                "(CADRT_PROOF=online): one that does not verify passes the call on");
  cmd->callback([opt, run] {
    *run = [opt]() -> int {
      Collective c;
      if (!collective_by_name(opt->collective, &c)) {
        std::string all;
        for (const std::string &n : collective_names()) all += (all.empty() ? "" : ", ") + n;
        throw UsageError("'" + opt->collective + "' is not a collective (" + all + ")");
      }
      const CollectiveInfo &info = collective_info(c);
      if (opt->inplace && !info.inplace_ok) throw UsageError(std::string(info.name) + " has no in-place form in MPI");
      const std::vector<int64_t> Ps = spec_values(opt->ranks, "--ranks"), ns = spec_values(opt->sizes, "--sizes"),
                                 roots = spec_values(opt->roots, "--roots");
      for (int64_t P : Ps)
        if (P < 1 || P > kMaxRanks)
          throw UsageError("--ranks must be 1.." + std::to_string(kMaxRanks) + ", not " + std::to_string(P));
      if (Ps.size() * ns.size() * (info.rooted ? roots.size() : 1) > 100000)
        throw UsageError("at most 100000 calls: narrow --ranks, --sizes or --roots");
      const Machine machine = load_topology_option(opt->topology);

      Session s;
      s.json = opt->json;
      Library lib;
      LibraryFolder folder;  // (a folder: what lib's algorithms point into)
      if (std::filesystem::is_directory(opt->library)) {
        // A folder as cadc build reads it, checked but not proven: for
        // trying rules before building.
        load_library_folder(s, opt->library, false, &folder);
        nlohmann::json rules;
        if (s.diags.has_errors() || !read_folder_rules(s, opt->library, folder, &rules, &lib)) return report(s);
        lib.algorithms = folder.algs;
        lib.ops = folder.user_ops;
      } else if (!load_library(opt->library, &lib, &s.diags)) {
        return report(s);
      }

      // The call's element type and op, as cadrt_ and MPI_ calls give them.
      InstanceSpec base;
      base.inplace = opt->inplace;
      base.commutative = !opt->noncommutative;
      if (!info.reducing && (!opt->op.empty() || opt->noncommutative))
        throw UsageError(std::string(info.name) + " has no op");
      std::string user_ops;
      for (const auto &u : lib.ops) user_ops += (user_ops.empty() ? "" : ", ") + u->name;
      parse_type_and_op(opt->dtype, opt->op, opt->noncommutative, opt->op.empty() ? nullptr : lib.find_op(opt->op),
                        "the library's: " + (user_ops.empty() ? std::string("none") : user_ops), info.reducing,
                        &base);

      nlohmann::json calls = nlohmann::json::array();
      int none = 0;
      for (int64_t P : Ps) {
        std::shared_ptr<const Topology> topo;
        std::string error;
        if (!Topology::make(machine, P, &topo, &error)) throw UsageError(error);
        for (int64_t n : ns)
          for (size_t ri = 0; ri < (info.rooted ? roots.size() : 1); ri++) {
            InstanceSpec spec = base;
            spec.P = P;
            spec.n = n;
            spec.root = info.rooted ? roots[ri] : 0;
            spec.topo = topo;
            if (spec.root < 0 || spec.root >= P) continue;  // (a root beyond this P)
            std::vector<std::string> trace;
            std::string why;  // a lazily checked part of the library failed (not here: loaded whole)
            // The runtime's gate (cadrt/src/proof.h), for a built library:
            // inside a domain, or proven now (--prove), or said to be
            // proven by the runtime on arrival.
            std::string gate_note;
            const SelectionGate gate = [&](const Rule &, const Algorithm &alg, const InstanceSpec &inst) {
              GateVerdict v;
              std::string outside;
              if (const Domain *d = lib.domain(alg.name); d && covers(*d, alg, inst, &outside)) {
                // (inside: nothing to say)
              } else if (!opt->prove) {
                v.note = "outside its proven domain (" + outside + "): the runtime proves it on arrival";
              } else {
                const ArrivalProof p = prove_on_arrival(alg, inst, lib.sm);
                v.run = p.proven;
                v.note = "outside its proven domain (" + outside + ")" +
                         (p.proven ? ": proven now, " + std::to_string(p.instances) + " instances"
                                   : ", and it does not verify there: " + p.why);
              }
              gate_note = v.note;
              return v;
            };
            const Algorithm *a = select_algorithm(lib, c, &spec, &why, opt->explain ? &trace : nullptr,
                                                  folder.algs.empty() ? &gate : nullptr);
            const int64_t bytes = n * static_cast<int64_t>(element_size(spec));
            std::string call = std::string(info.name) + " P=" + std::to_string(P) + " n=" + std::to_string(n);
            if (info.rooted) call += " root=" + std::to_string(spec.root);
            if (spec.inplace) call += " in place";
            if (info.reducing) call += " " + op_name(spec) + (spec.commutative ? "" : " noncommutative");
            call += " (" + std::to_string(bytes) + " B)";
            std::string chosen = a ? a->name : "";
            for (const auto &p : spec.params) chosen += " " + p.first + "=" + std::to_string(p.second);
            if (a && !gate_note.empty()) chosen += " (" + gate_note + ")";
            none += !a;
            nlohmann::json j = {{"collective", info.name}, {"P", P}, {"n", n}, {"bytes", bytes},
                                {"inplace", spec.inplace}, {"algorithm", a ? nlohmann::json(a->name) : nlohmann::json()}};
            if (info.rooted) j["root"] = spec.root;
            if (info.reducing) {
              j["op"] = op_name(spec);
              j["commutative"] = spec.commutative;
            }
            j["params"] = nlohmann::json::object();
            for (const auto &p : spec.params) j["params"][p.first] = p.second;
            if (!why.empty()) j["error"] = why;
            if (a && !gate_note.empty()) j["proof"] = gate_note;
            if (opt->explain) j["trace"] = trace;
            calls.push_back(j);
            if (opt->json) continue;
            std::cout << call << ": "
                      << (a ? chosen : !why.empty() ? "error: " + why
                                                    : std::string("none (the runtime fails such a call with -ENOTSUP)"))
                      << "\n";
            for (const std::string &t : trace) std::cout << "  " << t << "\n";
          }
      }
      if (calls.empty()) throw UsageError("no call: every root of --roots is beyond every P of --ranks");
      if (opt->json) std::cout << nlohmann::json{{"library", opt->library}, {"calls", calls}}.dump(2) << "\n";
      return none ? kDiagnostics : kOk;
    };
  });
}

}  // namespace cad::tool
