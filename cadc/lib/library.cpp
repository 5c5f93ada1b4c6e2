// library.cpp - see library.h.
#include "library.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <tuple>

#include "../../kmod/core/cad_core.h"
#include "check.h"
#include "eval.h"
#include "json_form.h"
#include "parser.h"
#include "printer.h"
#include "schema.h"
#include "spec.h"

namespace cad {

// What the rules are checked against: an algorithm's name and collective
// (from the library's list), and its checked AST if parsed (else the
// checks that need it wait: a library loaded lazily).  (Outside the
// anonymous namespace: Library::Lazy holds them.)
struct LibraryTarget {
  std::string name;
  Collective collective = Collective::Bcast;
  const Algorithm *ast = nullptr;
};
using Target = LibraryTarget;

namespace {
bool pinned(const Algorithm &a) { return !written_for(a).empty(); }

// The checks of rule that need its algorithm's AST: "" or the message,
// "/rules/3/op: ...".  last: rule is the last of its collective.
std::string rule_against(const Rule &rule, size_t index, const Algorithm &a, bool last) {
  const std::string ptr = "/rules/" + std::to_string(index);
  if (pinned(a) && !rule.op.empty() && rule.op != written_for(a))
    return ptr + "/op: " + rule.use + " is written for the op " + written_for(a) + ", not " + rule.op;
  for (const auto &[key, value] : rule.params) {
    bool known = false;
    for (const Param &p : a.params) known |= p.name == key;
    if (!known) return ptr + "/params: '" + key + "' is not a parameter of " + rule.use;
  }
  if (last && pinned(a))
    return std::string("/rules: the last rule for ") + collective_info(rule.collective).name + " uses " + a.name +
           ", which is written for the op " + written_for(a) +
           ": it must take every op, so that every call finds an algorithm";
  return "";
}

// An expression of literals alone.
bool is_constant(const Expr &e) {
  if (e.kind == ExprKind::Name || e.kind == ExprKind::Call) return false;
  for (const ExprPtr &x : e.args)
    if (x && !is_constant(*x)) return false;
  return true;
}

bool is_last_of_collective(const std::vector<Rule> &rules, size_t i) {
  for (size_t j = i + 1; j < rules.size(); j++)
    if (rules[j].collective == rules[i].collective) return false;
  return true;
}

bool read_rules_for(const nlohmann::json &doc, const std::string &where, const std::vector<Target> &algs,
                    const UserOps &ops, std::vector<Rule> *out, Diagnostics *diags);
}  // namespace

// A library loaded lazily: its algorithms' sources parsed on first use.
struct Library::Lazy {
  std::mutex mu;
  std::string path;                    // the file, for messages
  std::string rules_where;             // "path#rules"
  std::vector<Target> listed;          // the library's list of algorithms
  std::vector<uint32_t> source_of;     // by listed: index of its source
  std::vector<uint32_t> source_id;     // by source: its file in sm
  std::vector<int> state;              // by source: 0 not parsed, 1 parsed, -1 failed
  std::vector<std::string> error;      // by source: why it failed
  std::vector<std::unique_ptr<Module>> modules;
  std::vector<std::string> rule_error; // by rule: "" or its message
};

namespace {
// Ties the listed algorithms of source src to the ASTs of m, its parsed
// and checked text: "" or what does not agree (a listed algorithm the
// source lacks or has as another collective, one it has that is not
// listed).
std::string tie(Library::Lazy &z, uint32_t src, const Module &m, const SourceManager &sm) {
  const std::string file = sm.path(z.source_id[src]);
  for (size_t k = 0; k < z.listed.size(); k++) {
    if (z.source_of[k] != src) continue;
    Target &t = z.listed[k];
    for (const Algorithm &a : m.algorithms)
      if (a.name == t.name) t.ast = &a;
    if (!t.ast) return z.path + ": lists algorithm " + t.name + " but its source " + file + " has no algorithm of that name";
    if (t.ast->collective != t.collective)
      return z.path + ": lists algorithm " + t.name + " as a " + collective_info(t.collective).name + " but it is a " +
             collective_info(t.ast->collective).name;
  }
  for (const Algorithm &a : m.algorithms) {
    bool listed = false;
    for (size_t k = 0; k < z.listed.size(); k++) listed |= z.source_of[k] == src && z.listed[k].name == a.name;
    if (!listed) return z.path + ": " + file + " has algorithm " + a.name + ", which the library does not list";
  }
  return "";
}
}  // namespace

Library::Library() = default;
Library::~Library() = default;
Library::Library(Library &&) noexcept = default;
Library &Library::operator=(Library &&) noexcept = default;

std::string written_for(const Algorithm &a) {
  if (!collective_info(a.collective).reducing) return "";
  return a.user_op ? a.user_op->name : a.op;
}

bool takes_op(const Algorithm &a, const InstanceSpec &spec) {
  if (!pinned(a)) return true;
  if (a.user_op) return spec.user_op && spec.user_op->name == a.user_op->name;
  return !spec.user_op && spec.op == builtin_op(a.op);
}

const Algorithm *Library::find(const std::string &name, std::string *error) const {
  if (!lazy) {
    for (const Algorithm *a : algorithms)
      if (a->name == name) return a;
    return nullptr;
  }
  Lazy &z = *lazy;
  std::lock_guard<std::mutex> hold(z.mu);
  size_t i = 0;
  while (i < z.listed.size() && z.listed[i].name != name) i++;
  if (i == z.listed.size()) return nullptr;
  const uint32_t src = z.source_of[i];
  if (z.state[src] == 0) {
    // Parsed and checked as a load would; then every listed algorithm of
    // this source gets its AST, and every rule that uses one is checked.
    Diagnostics d;
    auto m = std::make_unique<Module>();
    const uint32_t id = z.source_id[src];
    const bool parsed = sm.file(id).json ? read_json_module(sm, id, m.get(), &d) : parse_dsl(sm, id, m.get(), &d);
    if (parsed && check_module(*m, &d, ops)) {
      z.error[src] = tie(z, src, *m, sm);
      z.state[src] = z.error[src].empty() ? 1 : -1;
      for (size_t r = 0; r < rules.size() && z.state[src] == 1; r++)
        for (const Target &t : z.listed)
          if (t.ast && t.name == rules[r].use && z.source_of[&t - z.listed.data()] == src) {
            const std::string why = rule_against(rules[r], r, *t.ast, is_last_of_collective(rules, r));
            if (!why.empty()) z.rule_error[r] = z.rules_where + ":" + why;
          }
    } else {
      z.state[src] = -1;
      z.error[src] = z.path + ": " + (d.empty() ? sm.path(id) + ": cannot be parsed" : render_text(sm, d.list()[0]));
    }
    z.modules.push_back(std::move(m));
  }
  if (z.state[src] < 0) {
    if (error) *error = z.error[src];
    return nullptr;
  }
  return z.listed[i].ast;
}

std::string Library::rule_error(size_t i) const {
  if (!lazy) return "";
  std::lock_guard<std::mutex> hold(lazy->mu);
  return i < lazy->rule_error.size() ? lazy->rule_error[i] : "";
}

bool read_rules(const nlohmann::json &doc, const std::string &where, const std::vector<const Algorithm *> &algs,
                const UserOps &ops, std::vector<Rule> *out, Diagnostics *diags) {
  std::vector<Target> targets;
  for (const Algorithm *a : algs) targets.push_back({a->name, a->collective, a});
  return read_rules_for(doc, where, targets, ops, out, diags);
}

namespace {
bool read_rules_for(const nlohmann::json &doc, const std::string &where, const std::vector<Target> &algs,
                    const UserOps &ops, std::vector<Rule> *out, Diagnostics *diags) {
  Loc loc;  // rules have no source file of their own: messages name the pointer
  auto fail = [&](const std::string &ptr, const std::string &msg) {
    diags->error(Code::Library, loc, where + ":" + ptr + ": " + msg);
    return false;
  };
  std::vector<SchemaError> errors;
  if (!Schema::builtin("rules.schema.json").validate(doc, &errors)) {
    for (const SchemaError &e : errors) fail(e.pointer.empty() ? "/" : e.pointer, e.message);
    return false;
  }
  bool ok = true;
  const nlohmann::json &rules = doc["rules"];
  for (size_t i = 0; i < rules.size(); i++) {
    const nlohmann::json &r = rules[i];
    const std::string ptr = "/rules/" + std::to_string(i);
    Rule rule;
    rule.where = where + ":" + ptr;
    collective_by_name(r["collective"].get<std::string>(), &rule.collective);
    rule.use = r["use"].get<std::string>();
    if (r.contains("ranks")) {
      std::string error;
      rule.ranks_text = r["ranks"].get<std::string>();
      if (!parse_spec(rule.ranks_text, &rule.ranks, &error)) ok = fail(ptr + "/ranks", error);
    }
    if (r.contains("min_bytes")) rule.min_bytes = r["min_bytes"].get<int64_t>();
    if (r.contains("max_bytes")) rule.max_bytes = r["max_bytes"].get<int64_t>();
    if (r.contains("commutative")) rule.commutative = r["commutative"].get<bool>();
    if (r.contains("inplace")) {
      rule.inplace = r["inplace"].get<bool>();
      // Every rank must select the same algorithm.  MPI has every rank of
      // these pass MPI_IN_PLACE or none; of a rooted collective only the
      // root does, so a rule there would split the ranks.
      const CollectiveInfo &info = collective_info(rule.collective);
      if (!info.inplace_ok)
        ok = fail(ptr + "/inplace", std::string(info.name) + " has no in-place form in MPI");
      else if (info.rooted)
        ok = fail(ptr + "/inplace", std::string("only the root of a ") + info.name +
                                        " passes in place, and every rank must select the same algorithm: a rule "
                                        "can depend on in place only for allreduce, allgather, alltoall and "
                                        "reduce_scatter_block");
    }
    if (r.contains("op")) {
      rule.op = r["op"].get<std::string>();
      bool known = builtin_op(rule.op) != CAD_OP_NONE;
      for (const auto &u : ops) known |= rule.op == u->name;
      if (!collective_info(rule.collective).reducing)
        ok = fail(ptr + "/op", std::string("a ") + collective_info(rule.collective).name + " has no op");
      else if (!known)
        ok = fail(ptr + "/op", "'" + rule.op + "' is neither a built-in op nor an operator of the library");
    }
    const Target *a = nullptr;
    for (const Target &x : algs)
      if (x.name == rule.use) a = &x;
    if (r.contains("params"))
      for (auto it = r["params"].begin(); it != r["params"].end(); ++it)
        rule.params.emplace_back(it.key(), it.value().get<int64_t>());
    rule.online = r.contains("proof") && r["proof"].get<std::string>() == "online";
    if (!a) {
      ok = fail(ptr + "/use", "no algorithm named '" + rule.use + "' in the library");
    } else if (a->collective != rule.collective) {
      ok = fail(ptr + "/use", rule.use + " is a " + collective_info(a->collective).name + " algorithm, not " +
                                  collective_info(rule.collective).name);
    }
    out->push_back(rule);
  }
  // What needs the algorithm's text (not yet there: checked when it is).
  for (size_t i = 0; i < out->size(); i++) {
    const Target *a = nullptr;
    for (const Target &x : algs)
      if (x.name == (*out)[i].use && x.collective == (*out)[i].collective) a = &x;
    if (!a || !a->ast) continue;
    const std::string why = rule_against((*out)[i], i, *a->ast, is_last_of_collective(*out, i));
    if (!why.empty()) {
      diags->error(Code::Library, loc, where + ":" + why);
      ok = false;
    }
  }
  // Every collective with algorithms ends with a rule that always applies.
  for (size_t c = 0; c <= static_cast<size_t>(Collective::Barrier); c++) {
    const Collective coll = static_cast<Collective>(c);
    bool has_alg = false;
    for (const Target &a : algs) has_alg |= a.collective == coll;
    const Rule *last = nullptr;
    for (const Rule &r : *out)
      if (r.collective == coll) last = &r;
    if (has_alg && (!last || !last->ranks.empty() || last->min_bytes || last->max_bytes != INT64_MAX ||
                    last->commutative >= 0 || last->inplace >= 0 || !last->op.empty()))
      ok = fail("/rules", std::string("the last rule for ") + collective_info(coll).name +
                              " must have no conditions, so that every call finds an algorithm");
  }
  return ok;
}
}  // namespace

bool load_library(const std::string &path, Library *lib, Diagnostics *diags, bool lazy) {
  std::string text, error;
  if (!read_file(path, kMaxSourceBytes, &text, &error)) {
    diags->error(Code::Library, Loc(), error);
    return false;
  }
  return load_library_text(path, text, lib, diags, lazy);
}

bool load_library_text(const std::string &path, const std::string &text, Library *lib, Diagnostics *diags,
                       bool lazy) {
  Loc none;
  auto fail = [&](const std::string &msg) {
    diags->error(Code::Library, none, path + ": " + msg);
    return false;
  };
  nlohmann::json doc;
  SchemaError bad;
  if (!parse_json_strict(text, &doc, &bad))
    return fail(bad.pointer.empty() ? "not a library (invalid JSON): " + bad.message
                                    : "not a valid library: " + bad.pointer + ": " + bad.message);
  if (doc.is_object() && doc.contains("cadlib") && doc["cadlib"] == 1)
    return fail("written by an older cadc (library format 1, without the domains its proofs cover): rebuild it "
                "with cadc build");
  std::vector<SchemaError> errors;
  if (!Schema::builtin("cadlib.schema.json").validate(doc, &errors))
    return fail("not a valid library: " + (errors[0].pointer.empty() ? "/" : errors[0].pointer) + ": " +
                errors[0].message);
  // The operators, each as the .cadop schema says (the library's schema
  // leaves them to it), with names unique.
  static const nlohmann::json kNoOps = nlohmann::json::array();
  const nlohmann::json &op_list = doc.contains("ops") ? doc["ops"] : kNoOps;
  if (!validate_userops_json(op_list, &bad)) return fail("not a valid library: " + bad.pointer + ": " + bad.message);
  if (doc["program_format"].get<int>() != CAD_VERSION)
    return fail("built for CAD program format " + doc["program_format"].dump() + ", this is format " +
                std::to_string(CAD_VERSION) + ": rebuild it with cadc build");
  if (const std::string hash = content_hash(doc); hash != doc["hash"].get<std::string>())
    return fail("the file was modified after it was written: hash mismatch (it records " +
                doc["hash"].get<std::string>() + ", its content hashes to " + hash + "); rebuild it with cadc build");
  lib->hash = doc["hash"].get<std::string>();
  // User-defined operators first (algorithms name them): bytecode,
  // verified again here.
  for (size_t i = 0; i < op_list.size(); i++) {
    UserOp op;
    if (!userop_from_json(op_list[i], "/ops/" + std::to_string(i), &op, &bad))
      return fail(bad.pointer + ": " + bad.message);
    lib->ops.push_back(std::make_shared<const UserOp>(std::move(op)));
  }
  {
    // The sources are kept (in sm: messages quote them), each algorithm
    // of the list tied to its source by file name; parsed here, or
    // lazily by find().
    auto z = std::make_unique<Library::Lazy>();
    z->path = path;
    z->rules_where = path + "#rules";
    for (const nlohmann::json &src : doc["sources"]) {
      z->source_id.push_back(lib->sm.add(src["file"].get<std::string>(), src["text"].get<std::string>()));
      z->state.push_back(0);
      z->error.emplace_back();
    }
    const nlohmann::json &listed = doc["algorithms"];
    for (size_t i = 0; i < listed.size(); i++) {
      const std::string ptr = "algorithms/" + std::to_string(i) + ": ";
      Target t;
      t.name = listed[i]["name"].get<std::string>();
      if (!collective_by_name(listed[i]["collective"].get<std::string>(), &t.collective))
        return fail(ptr + "'" + listed[i]["collective"].get<std::string>() + "' is not a collective");
      for (const Target &other : z->listed)
        if (other.name == t.name) return fail(ptr + "a second algorithm named " + t.name);
      const std::string file = listed[i]["file"].get<std::string>();
      uint32_t src = 0;
      while (src < z->source_id.size() && lib->sm.path(z->source_id[src]) != file) src++;
      if (src == z->source_id.size()) return fail("lists algorithm " + t.name + " but has no source for it");
      std::string why;
      Domain d;
      if (!Domain::from_json(listed[i]["proven"], &d, &why)) return fail(ptr + "proven: " + why);
      lib->proven.push_back({t.name, t.collective, std::move(d)});
      z->listed.push_back(t);
      z->source_of.push_back(src);
    }
    if (!lazy) {
      const size_t before = diags->error_count();
      for (uint32_t src = 0; src < z->source_id.size(); src++) {
        const uint32_t id = z->source_id[src];
        auto m = std::make_unique<Module>();
        const bool parsed = lib->sm.file(id).json ? read_json_module(lib->sm, id, m.get(), diags)
                                                  : parse_dsl(lib->sm, id, m.get(), diags);
        if (parsed && check_module(*m, diags, lib->ops)) {
          if (std::string why = tie(*z, src, *m, lib->sm); !why.empty()) {
            diags->error(Code::Library, none, why);
          } else {
            for (const Algorithm &a : m->algorithms) lib->algorithms.push_back(&a);
          }
        }
        lib->modules.push_back(std::move(m));
      }
      if (diags->error_count() != before) return false;
    }
    if (!read_rules_for(doc["rules"], z->rules_where, z->listed, lib->ops, &lib->rules, diags)) return false;
    z->rule_error.assign(lib->rules.size(), "");
    if (lazy) lib->lazy = std::move(z);
    return true;
  }
}

const Domain *Library::domain(const std::string &name) const {
  for (const Proven &p : proven)
    if (p.name == name) return &p.domain;
  return nullptr;
}

std::shared_ptr<const UserOp> Library::find_op(const std::string &name) const {
  for (const auto &op : ops)
    if (op->name == name) return op;
  return nullptr;
}

const Algorithm *select_algorithm(const Library &lib, Collective c, InstanceSpec *spec, std::string *error,
                                  std::vector<std::string> *trace, const SelectionGate *gate) {
  const int64_t bytes = spec->n * static_cast<int64_t>(element_size(*spec));
  for (size_t i = 0; i < lib.rules.size(); i++) {
    const Rule &r = lib.rules[i];
    if (r.collective != c) continue;
    // (The reasons are made only for a trace: selection is the runtime's
    // fast path's slow half, run once per new call.)
    auto skip = [&](auto why) {
      if (trace) trace->push_back("/rules/" + std::to_string(i) + " " + r.use + ": " + why());
    };
    if (!r.ranks.empty() && std::find(r.ranks.begin(), r.ranks.end(), spec->P) == r.ranks.end()) {
      skip([&] { return "P=" + std::to_string(spec->P) + " is not in ranks " + r.ranks_text; });
      continue;
    }
    if (bytes < r.min_bytes || bytes > r.max_bytes) {
      skip([&] {
        return std::to_string(bytes) + " B is " +
               (bytes < r.min_bytes ? "below min_bytes " + std::to_string(r.min_bytes)
                                    : "above max_bytes " + std::to_string(r.max_bytes));
      });
      continue;
    }
    if (r.commutative >= 0 && r.commutative != spec->commutative) {
      skip([&] { return std::string("the op is ") + (spec->commutative ? "" : "not ") + "commutative"; });
      continue;
    }
    if (r.inplace >= 0 && r.inplace != static_cast<int>(spec->inplace)) {
      skip([&] { return std::string("the call is ") + (spec->inplace ? "" : "not ") + "in place"; });
      continue;
    }
    if (!r.op.empty() && r.op != op_name(*spec)) {
      skip([&] { return "the op is " + op_name(*spec) + ", not " + r.op; });
      continue;
    }
    std::string why;
    const Algorithm *a = lib.find(r.use, &why);
    if (a) why = lib.rule_error(i);
    if (!a || !why.empty()) {  // (loaded lazily: found bad now)
      if (error) *error = why.empty() ? r.where + ": no algorithm named '" + r.use + "'" : why;
      skip([&] { return std::string("its algorithm failed its checks"); });
      return nullptr;
    }
    if (!takes_op(*a, *spec)) {
      skip([&] { return "written for the op " + written_for(*a) + ", not " + op_name(*spec); });
      continue;
    }
    InstanceSpec s = *spec;
    s.params = r.params;
    s.inplace = spec->inplace && a->inplace;  // what its program will see
    Diagnostics quiet;
    Instantiator in(*a, s, &quiet);
    if (!in.ok() || !in.applicable()) {
      skip([&] {
        if (in.failed_requirement())
          return "its requirement " + print_expr(*in.failed_requirement()->cond) + " does not hold";
        return "it does not instantiate: " + (quiet.empty() ? std::string("?") : quiet.list()[0].message);
      });
      continue;
    }
    if (gate) {
      const GateVerdict v = (*gate)(r, *a, s);
      if (!v.run) {
        skip([&] { return v.note; });
        continue;
      }
      s.inplace = spec->inplace;
      *spec = s;
      skip([&] { return v.note.empty() ? std::string("chosen") : "chosen: " + v.note; });
      return a;
    }
    s.inplace = spec->inplace;
    *spec = s;
    skip([&] { return std::string("chosen"); });
    return a;
  }
  return nullptr;
}

void check_rules_against_domains(const Library &lib,
                                 const std::vector<std::pair<const Algorithm *, const Domain *>> &domains,
                                 const std::string &where, Diagnostics *diags) {
  for (size_t i = 0; i < lib.rules.size(); i++) {
    const Rule &r = lib.rules[i];
    if (r.online) continue;
    const Algorithm *a = nullptr;
    const Domain *d = nullptr;
    for (const auto &x : domains)
      if (x.first->name == r.use) std::tie(a, d) = x;
    if (!a) continue;  // (no sweep, or the rule names no algorithm: reported already)
    const std::string ptr = where + ":/rules/" + std::to_string(i);
    const std::string online = ": widen its sweep, or let the runtime prove such calls on arrival (\"proof\": \"online\")";
    auto fail = [&](const std::string &msg) { diags->error(Code::Library, Loc(), ptr + msg + online); };
    std::vector<int64_t> beyond;
    for (int64_t P : r.ranks)
      if (!std::binary_search(d->ranks.begin(), d->ranks.end(), P)) beyond.push_back(P);
    if (!beyond.empty())
      fail("/ranks: gives " + r.use + " P=" + format_spec(beyond) + ", beyond the P its sweep proves (" +
           format_spec(d->ranks) + ")");
    for (const Param &p : a->params) {
      auto set = std::find_if(r.params.begin(), r.params.end(), [&](const auto &x) { return x.first == p.name; });
      auto swept = std::find_if(d->params.begin(), d->params.end(), [&](const auto &x) { return x.first == p.name; });
      if (set != r.params.end()) {
        if (swept == d->params.end())
          fail("/params/" + p.name + ": gives " + r.use + " " + p.name + "=" + std::to_string(set->second) +
               ", but its sweep proves it only at " + p.name + "'s default");
        else if (!std::binary_search(swept->second.begin(), swept->second.end(), set->second))
          fail("/params/" + p.name + ": gives " + r.use + " " + p.name + "=" + std::to_string(set->second) +
               ", which its sweep does not prove (" + p.name + " = " + format_spec(swept->second) + ")");
        continue;
      }
      // Unset: its default, checked here when it is a constant.
      if (swept == d->params.end() || !is_constant(*p.value)) continue;
      Frame f;
      f.slots.assign(static_cast<size_t>(std::max(a->nslots, static_cast<int>(kBuiltinSlots))), 0);
      int64_t v;
      try {
        v = eval(*p.value, f);
      } catch (const EvalError &) {
        continue;
      }
      if (!std::binary_search(swept->second.begin(), swept->second.end(), v))
        fail(": gives " + r.use + " " + p.name + "'s default, " + std::to_string(v) +
             ", which its sweep does not prove (" + p.name + " = " + format_spec(swept->second) + ")");
    }
  }
}

std::vector<std::string> calls_without_algorithm(const Library &lib) {
  std::vector<std::string> out;
  for (size_t c = 0; c <= static_cast<size_t>(Collective::Barrier); c++) {
    const Collective coll = static_cast<Collective>(c);
    const CollectiveInfo &info = collective_info(coll);
    const Algorithm *any = nullptr;
    for (const Algorithm *a : lib.algorithms)
      if (a->collective == coll) any = a;
    if (!any) continue;
    std::vector<int64_t> counts = {0, 1, 7, 100};
    for (const Rule &r : lib.rules) {
      if (r.collective != coll) continue;
      counts.push_back(r.min_bytes);
      if (r.min_bytes > 0) counts.push_back(r.min_bytes - 1);
      if (r.max_bytes < INT64_MAX) {
        counts.push_back(r.max_bytes);
        counts.push_back(r.max_bytes + 1);
      }
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    // The first call of the grid without an algorithm, if any.
    auto first_lacking = [&](InstanceSpec *spec) {
      spec->dtype = CAD_DT_UINT8;
      spec->op = CAD_OP_SUM;
      for (spec->P = 1; spec->P <= 33; spec->P++)
        for (const int64_t n : counts)
          for (int commutative = 1; commutative >= (info.reducing ? 0 : 1); commutative--)
            for (int inplace = 0; inplace <= (info.inplace_ok ? 1 : 0); inplace++)
              for (int64_t root = 0; root < (info.rooted ? spec->P : 1);
                   root = spec->P <= 8 || root == spec->P - 1 ? root + 1 : spec->P - 1) {
                spec->n = n;
                spec->root = root;
                spec->inplace = inplace;
                spec->commutative = commutative;
                InstanceSpec call = *spec;  // (select_algorithm sets the rule's params)
                if (!select_algorithm(lib, coll, &call)) return true;
              }
      return false;
    };
    InstanceSpec spec;
    if (first_lacking(&spec)) out.push_back(std::string(info.name) + " " + spec.describe(*any));
  }
  return out;
}

}  // namespace cad
