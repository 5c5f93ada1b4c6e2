// fuzz_cadc.cpp - libFuzzer target for everything cadc and the runtime read
// from files they did not write: algorithm files in both forms, .cadlib
// libraries and .cadop operator files.
//
// The input is taken as
//   - a .cadlib if it is a JSON object with a "cadlib" key: loaded as it
//     is (the strict JSON reader, the schema, the operators' validation
//     and the hash check, which a mutation almost always fails), then with
//     its hash recomputed, so that mutations get past the integrity check
//     to the sources, the verifier on the operators and the rules; a
//     library that loads then selects an algorithm for every collective
//     and op (the built-ins and each of its operators);
//   - a topology file if it is a JSON object that names "places" or a
//     count of a level ("nodes", "..._per_...") and no "algorithms" (the
//     key of an algorithm file's JSON form): one that loads places
//     P = 1, 2, 3, 5, 8 and 64 ranks, and every query must agree with the
//     others (a rank is the member of its domain it says it is), and its
//     JSON form loads again;
//   - a .cadop if it is a JSON object with a "cadop" key: read as it is
//     (up to the hash check, as the .cadlib), then with its hash
//     recomputed; every operator the verifier accepts is disassembled and
//     run by the interpreter on elements taken from the input (block
//     sizes 1, 7 and 64 + 3, in place and not), under the sanitizers;
//   - the JSON form of an algorithm file if it starts with '{';
//   - DSL text otherwise.
// Whatever is read must either be rejected with diagnostics (all of them
// rendered as text and as JSON) or be accepted, and then:
//   - printing it as DSL and as JSON and reading each back gives the same
//     DSL text (the fmt round trip; a difference aborts);
//   - once checked, each algorithm is verified on small instances (P = 1, 2,
//     3, n = 0 and 3), which must end in a result or diagnostics;
//   - an algorithm whose own sweep is small and verifies: every instance
//     its proven domain covers (drawn from the input, in it and beyond)
//     verifies too (gate_agrees).
// Crashes, sanitizer reports, hangs (-timeout) and memory blow-ups
// (-rss_limit_mb) are what it finds.  `make test` runs it for 30 s from the
// standard library and the CLI test cases; `make fuzz` runs it longer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "check.h"
#include "collective.h"
#include "diag.h"
#include "domain.h"
#include "json_form.h"
#include "library.h"
#include "parser.h"
#include "printer.h"
#include "schema.h"
#include "simulate.h"
#include "spec.h"
#include "sweep.h"
#include "topology.h"
#include "userop.h"
#include "verify.h"

namespace {

void render(const cad::SourceManager &sm, const cad::Diagnostics &diags) {
  for (const cad::Diagnostic &d : diags.list()) {
    if (cad::render_text(sm, d).empty()) abort();
    // As cadc prints it: a message may quote bytes that are not UTF-8.
    (void)cad::render_json(sm, d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

[[noreturn]] void mismatch(const char *what, const std::string &a, const std::string &b) {
  fprintf(stderr, "round trip through %s changed the text:\n--- before\n%s\n--- after\n%s\n", what, a.c_str(),
          b.c_str());
  abort();
}

// Loaded whole and lazily (as the runtime does): a library that loads
// whole loads lazily too and selects the same algorithms without an
// error; a lazy load of one that does not may fail at load or when a
// selection first reaches the bad part, never crash.
void library(const std::string &text) {
  {
    cad::Library as_is;
    cad::Diagnostics d;
    (void)cad::load_library_text("fuzz.cadlib", text, &as_is, &d, /*lazy=*/true);
    render(as_is.sm, d);
  }
  // The loaders have no switch that skips the hash check (a check that
  // can be switched off would be off somewhere): the fuzzer writes the
  // hash that makes the document whole instead.
  nlohmann::json doc;
  cad::SchemaError bad;
  if (!cad::parse_json_strict(text, &doc, &bad) || !doc.is_object()) return;
  doc["hash"] = cad::content_hash(doc);
  cad::Library whole, lazy;
  cad::Diagnostics diags, lazy_diags;
  const bool ok = cad::load_library_text("fuzz.cadlib", doc.dump(), &whole, &diags);
  render(whole.sm, diags);
  const bool lazy_ok = cad::load_library_text("fuzz.cadlib", doc.dump(), &lazy, &lazy_diags, /*lazy=*/true);
  render(lazy.sm, lazy_diags);
  if (ok && !lazy_ok) {
    fprintf(stderr, "loads whole but not lazily: %s\n", lazy_diags.list()[0].message.c_str());
    abort();
  }
  if (!lazy_ok) return;
  auto select = [&](cad::Collective c, const cad::InstanceSpec &spec) {
    cad::InstanceSpec a = spec, b = spec;
    std::string why;
    const cad::Algorithm *x = ok ? cad::select_algorithm(whole, c, &a) : nullptr;
    std::vector<std::string> trace;  // (cadc select --explain's)
    const cad::Algorithm *y = cad::select_algorithm(lazy, c, &b, &why, &trace);
    if (y && (trace.empty() || trace.back().find(": chosen") == std::string::npos)) abort();
    if (ok && ((x == nullptr) != (y == nullptr) || (x && x->name != y->name) || !why.empty())) {
      fprintf(stderr, "whole and lazy loads select differently: %s / %s (%s)\n", x ? x->name.c_str() : "none",
              y ? y->name.c_str() : "none", why.c_str());
      abort();
    }
  };
  for (const std::string &name : cad::collective_names()) {
    cad::Collective c;
    if (!cad::collective_by_name(name, &c)) abort();
    for (bool commutative : {false, true})
      for (bool inplace : {false, true}) {
        cad::InstanceSpec spec;
        spec.P = 3;
        spec.n = 5;
        spec.commutative = commutative;
        spec.inplace = inplace && cad::collective_info(c).inplace_ok;
        select(c, spec);
      }
    for (const auto &op : lazy.ops) {
      cad::InstanceSpec spec;
      spec.P = 3;
      spec.n = 5;
      spec.dtype = CAD_DT_USER;
      spec.op = CAD_OP_USER;
      spec.user_op = op;
      spec.commutative = op->commutative;
      select(c, spec);
    }
  }
  if (doc.contains("algorithms") && doc["algorithms"].is_array())
    for (const auto &a : doc["algorithms"]) {
      std::string why;
      if (a.contains("name") && a["name"].is_string() && !lazy.find(a["name"].get<std::string>(), &why) && ok) {
        fprintf(stderr, "loads whole, but lazily %s fails: %s\n", a["name"].get<std::string>().c_str(), why.c_str());
        abort();
      }
    }
}

// Verified operators must run on anything: elements made of the input's
// bytes, blocks of several sizes, in == inout too.
void operators(const std::string &text) {
  std::vector<cad::UserOp> ops;
  std::string error;
  if (cad::read_cadop(text, &ops, &error)) {
    ops.clear();
  } else if (error.empty()) {
    abort();
  }
  // Again with the hash that makes it whole (see library()), so that the
  // verifier and the interpreter see what mutations make of the code.
  nlohmann::json doc;
  cad::SchemaError bad;
  if (!cad::parse_json_strict(text, &doc, &bad) || !doc.is_object()) return;
  doc["hash"] = cad::content_hash(doc);
  if (!cad::read_cadop(doc.dump(), &ops, &error)) {
    if (error.empty()) abort();
    return;
  }
  for (const cad::UserOp &op : ops) {
    if (!cad::userop_verify(op).empty() || cad::userop_disasm(op).empty()) abort();
    for (uint64_t count : {1, 7, 67}) {
      std::vector<unsigned char> in(count * op.elem_size), io(count * op.elem_size);
      for (size_t i = 0; i < in.size(); i++) {
        in[i] = static_cast<unsigned char>(text[(i * 7) % text.size()]);
        io[i] = static_cast<unsigned char>(text[(i * 13 + 5) % text.size()]);
      }
      cad::userop_apply(op, io.data(), in.data(), count);
      cad::userop_apply(op, io.data(), io.data(), count);
    }
  }
}

// Smaller limits than cadc's, so that every input runs in milliseconds;
// the code that enforces them is the same.
const cad::Limits kLimits = {1u << 16, 1u << 12, 1u << 14};

// cadc simulate's model on what verified: every operation ends, by the
// time, which the critical path reaches -- with a CPU per rank, and with
// two CPUs the ranks share (turns between ranks priced).
void simulate_verified(const std::vector<cad::RankProgram> &progs) {
  const cad::Matching match = cad::match_messages(progs);
  for (uint32_t cpus : {0u, 2u}) {
    cad::CostModel model;
    model.cpus = cpus;
    const cad::Simulation sim = cad::simulate(progs, match, model);
    if (!(sim.time >= 0) || (sim.ops.empty() != sim.critical.empty())) abort();
    for (const cad::SimOp &o : sim.ops)
      if (!(o.end >= o.start && o.start >= o.ready && o.end <= sim.time)) abort();
    if (!sim.critical.empty() && sim.ops[sim.critical.back()].end != sim.time) abort();
    if (cpus == 0 && sim.switches != 0) abort();
  }
}

void verify_small(const cad::Algorithm &a, const cad::SourceManager &sm) {
  const cad::CollectiveInfo &info = cad::collective_info(a.collective);
  for (int64_t P = 1; P <= 3; P++)
    for (int64_t n : {0, 3}) {
      cad::InstanceSpec spec;
      spec.P = P;
      spec.n = n;
      spec.root = P - 1;
      spec.inplace = a.inplace && info.inplace_ok;
      spec.commutative = !info.reducing;
      spec.limits = kLimits;
      cad::Diagnostics diags;
      std::vector<cad::RankProgram> progs;
      const bool verified = cad::verify_instance(a, spec, sm, &diags, &progs).outcome == cad::Outcome::Verified;
      render(sm, diags);
      if (verified) simulate_verified(progs);
    }
}

// The gate and verify agree: for an algorithm whose own sweep is small
// (P up to 5, at most 96 instances, every one verified), the domain that
// sweep proves covers an instance -- drawn from the input, as often
// outside the sweep's P, roots, orders, element sizes and parameters as
// inside -- only if verify accepts it at each of its key's size classes:
// what the runtime's gate lets run without a proof on arrival is proven.
void gate_agrees(const cad::Algorithm &a, const cad::SourceManager &sm, const std::string &text) {
  if (!a.sweep.present || !a.sweep.ranks.present()) return;
  int64_t maxP = 0;
  for (const auto &r : a.sweep.ranks.ranges) maxP = std::max(maxP, r.second);
  if (maxP > 5) return;
  cad::SweepSettings st;
  st.limits = kLimits;
  std::vector<cad::InstanceSpec> plan;
  cad::SweepPlan sp;
  std::string error;
  cad::Diagnostics quiet;
  if (!cad::plan_sweep(a, "fuzz.cad", st, &plan, &error, &quiet, &sp) || plan.empty() || plan.size() > 96) return;
  for (const cad::InstanceSpec &s : plan) {
    cad::Diagnostics d;
    const cad::Outcome o = cad::verify_instance(a, s, sm, &d).outcome;
    if (o == cad::Outcome::Failed || o == cad::Outcome::NotRun) return;
  }
  const cad::Domain dom = cad::domain_of_sweep(a, plan, sp.sizes, sp.roots, sp.root_values);
  const cad::CollectiveInfo &info = cad::collective_info(a.collective);
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  auto draw = [&](uint64_t below) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    return below ? (h >> 33) % below : 0;
  };
  static const unsigned kWidths[][2] = {{CAD_DT_INT8, 1}, {CAD_DT_INT16, 2}, {CAD_DT_INT32, 4}, {CAD_DT_INT64, 8},
                                        {CAD_DT_DOUBLE_INT, 16}};
  for (int k = 0; k < 6; k++) {
    cad::InstanceSpec spec = plan[draw(plan.size())];
    spec.limits = kLimits;
    spec.P = 1 + static_cast<int64_t>(draw(static_cast<uint64_t>(maxP) + 2));
    spec.root = info.rooted ? static_cast<int64_t>(draw(static_cast<uint64_t>(spec.P))) : 0;
    spec.inplace = a.inplace && draw(2);
    if (info.reducing && !spec.user_op && a.op.empty()) {
      const auto &w = kWidths[draw(5)];
      spec.dtype = w[0];
      spec.op = w[0] == CAD_DT_DOUBLE_INT ? CAD_OP_MINLOC : CAD_OP_SUM;
      spec.commutative = draw(2);
    } else if (!info.reducing) {
      static const uint32_t kSizes[] = {1, 2, 4, 8, 12, 16};
      spec.esize = kSizes[draw(6)];
    }
    for (auto &p : spec.params)
      if (draw(3) == 0) p.second += 1;
    spec.topo = nullptr;
    if (!cad::covers(dom, a, spec, nullptr)) continue;
    for (int64_t n : cad::size_classes(a, spec, sp.sizes)) {
      if (n > 64) break;
      spec.n = n;
      cad::Diagnostics d;
      if (cad::verify_instance(a, spec, sm, &d).outcome == cad::Outcome::Failed) {
        fprintf(stderr, "the proven domain covers %s, which does not verify: %s\n", spec.describe(a).c_str(),
                d.empty() ? "?" : d.list()[0].message.c_str());
        abort();
      }
    }
  }
}

}  // namespace

void topology(const std::string &text) {
  cad::Machine m;
  std::string error;
  if (!cad::parse_machine(text, &m, &error)) {
    if (error.empty()) abort();
    return;
  }
  cad::Machine again;
  if (!cad::parse_machine(m.to_json().dump(), &again, &error)) {
    fprintf(stderr, "a topology's JSON form does not load: %s\n", error.c_str());
    abort();
  }
  for (int64_t P : {1, 2, 3, 5, 8, 64}) {
    std::shared_ptr<const cad::Topology> t;
    if (!cad::Topology::make(m, P, &t, &error)) {
      if (m.max_ranks() == 0 || P <= m.max_ranks()) abort();  // only too few places may fail
      continue;
    }
    for (int level = 0; level < cad::kLevels; level++) {
      int64_t members = 0;
      for (int64_t d = 0; d < t->ndomains(level); d++) members += t->domain_size(level, d);
      if (members != P) abort();
      for (int64_t r = 0; r < P; r++) {
        const int64_t d = t->domain(level, r);
        if (d < 0 || d >= t->ndomains(level) || t->domain_rank(level, d, t->local_rank(level, r)) != r ||
            t->local_size(level, r) != t->domain_size(level, d) || t->leader(level, r) > r)
          abort();
      }
    }
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  if (text.find("\"cadlib\"") != std::string::npos && !text.empty() && text[0] == '{') {
    library(text);
    return 0;
  }
  if (text.find("\"cadop\"") != std::string::npos && !text.empty() && text[0] == '{') {
    operators(text);
    return 0;
  }
  if (!text.empty() && text[0] == '{' && text.find("\"algorithms\"") == std::string::npos &&
      (text.find("\"places\"") != std::string::npos || text.find("\"nodes\"") != std::string::npos ||
       text.find("_per_") != std::string::npos)) {
    topology(text);
    return 0;
  }
  const bool json = !text.empty() && text[0] == '{';
  cad::SourceManager sm;
  cad::Diagnostics diags;
  cad::Module m;
  const uint32_t f = sm.add(json ? "fuzz.json" : "fuzz.cad", text);
  const bool parsed = json ? cad::read_json_module(sm, f, &m, &diags) : cad::parse_dsl(sm, f, &m, &diags);
  render(sm, diags);
  if (!parsed) return 0;

  // The fmt round trips, before checking (fmt does not check).
  const std::string dsl = cad::print_module(m);
  {
    cad::SourceManager sm2;
    cad::Diagnostics d2;
    cad::Module m2;
    if (!cad::parse_dsl(sm2, sm2.add("again.cad", dsl), &m2, &d2)) {
      render(sm2, d2);
      mismatch("the DSL printer (the printed text does not parse)", dsl, d2.empty() ? "" : d2.list()[0].message);
    }
    const std::string again = cad::print_module(m2);
    if (again != dsl) mismatch("the DSL", dsl, again);
  }
  {
    cad::SourceManager sm3;
    cad::Diagnostics d3;
    cad::Module m3;
    const std::string as_json = cad::write_json_module(m);
    if (!cad::read_json_module(sm3, sm3.add("again.json", as_json), &m3, &d3)) {
      render(sm3, d3);
      mismatch("the JSON form (the written JSON does not load)", as_json,
               d3.empty() ? "" : d3.list()[0].message);
    }
    const std::string again = cad::print_module(m3);
    if (again != dsl) mismatch("the JSON form", dsl, again);
  }

  cad::Diagnostics checked;
  const bool ok = cad::check_module(m, &checked);
  render(sm, checked);
  if (!ok) return 0;
  size_t count = 0;
  for (const cad::Algorithm &a : m.algorithms)
    if (count++ < 4) {
      verify_small(a, sm);
      gate_agrees(a, sm, text);
    }
  return 0;
}
