// library.cpp - see library.h.
#include "library.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "../../kmod/core/cad_core.h"
#include "check.h"
#include "json_form.h"
#include "parser.h"
#include "schema.h"
#include "spec.h"

namespace cad {

namespace {
// Written for one user-defined operator (only meaningful where there is an op).
bool pinned(const Algorithm &a) { return a.user_op && collective_info(a.collective).reducing; }
}  // namespace

bool takes_op(const Algorithm &a, const InstanceSpec &spec) {
  return !pinned(a) || (spec.user_op && spec.user_op->name == a.user_op->name);
}

const Algorithm *Library::find(const std::string &name) const {
  for (const Algorithm *a : algorithms)
    if (a->name == name) return a;
  return nullptr;
}

std::string library_hash(const nlohmann::json &doc) {
  nlohmann::json copy = doc;
  copy.erase("hash");
  const std::string text = copy.dump();
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[32];
  snprintf(buf, sizeof(buf), "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool read_rules(const nlohmann::json &doc, const std::string &where, const std::vector<const Algorithm *> &algs,
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
      if (!parse_spec(r["ranks"].get<std::string>(), &rule.ranks, &error)) ok = fail(ptr + "/ranks", error);
    }
    if (r.contains("min_bytes")) rule.min_bytes = r["min_bytes"].get<int64_t>();
    if (r.contains("max_bytes")) rule.max_bytes = r["max_bytes"].get<int64_t>();
    if (r.contains("commutative")) rule.commutative = r["commutative"].get<bool>();
    if (r.contains("op")) {
      rule.op = r["op"].get<std::string>();
      bool known = builtin_op(rule.op) != CAD_OP_NONE;
      for (const auto &u : ops) known |= rule.op == u->name;
      if (!collective_info(rule.collective).reducing)
        ok = fail(ptr + "/op", std::string("a ") + collective_info(rule.collective).name + " has no op");
      else if (!known)
        ok = fail(ptr + "/op", "'" + rule.op + "' is neither a built-in op nor an operator of the library");
    }
    const Algorithm *a = nullptr;
    for (const Algorithm *x : algs)
      if (x->name == rule.use) a = x;
    if (!a) {
      ok = fail(ptr + "/use", "no algorithm named '" + rule.use + "' in the library");
    } else if (a->collective != rule.collective) {
      ok = fail(ptr + "/use", rule.use + " is a " + collective_info(a->collective).name + " algorithm, not " +
                                  collective_info(rule.collective).name);
    } else if (pinned(*a) && !rule.op.empty() && rule.op != a->user_op->name) {
      ok = fail(ptr + "/op", rule.use + " is written for the operator " + a->user_op->name + ", not " + rule.op);
    }
    if (r.contains("params"))
      for (auto it = r["params"].begin(); it != r["params"].end(); ++it) {
        bool known = false;
        if (a)
          for (const Param &p : a->params) known |= p.name == it.key();
        if (a && !known) ok = fail(ptr + "/params", "'" + it.key() + "' is not a parameter of " + rule.use);
        rule.params.emplace_back(it.key(), it.value().get<int64_t>());
      }
    out->push_back(rule);
  }
  // Every collective with algorithms ends with a rule that always applies.
  for (size_t c = 0; c <= static_cast<size_t>(Collective::Barrier); c++) {
    const Collective coll = static_cast<Collective>(c);
    bool has_alg = false;
    for (const Algorithm *a : algs) has_alg |= a->collective == coll;
    const Rule *last = nullptr;
    for (const Rule &r : *out)
      if (r.collective == coll) last = &r;
    const Algorithm *last_alg = nullptr;
    for (const Algorithm *a : algs)
      if (last && a->name == last->use) last_alg = a;
    if (has_alg && (!last || !last->ranks.empty() || last->min_bytes || last->max_bytes != INT64_MAX ||
                    last->commutative >= 0 || !last->op.empty()))
      ok = fail("/rules", std::string("the last rule for ") + collective_info(coll).name +
                              " must have no conditions, so that every call finds an algorithm");
    else if (last_alg && pinned(*last_alg))
      ok = fail("/rules", std::string("the last rule for ") + collective_info(coll).name + " uses " + last_alg->name +
                              ", which is written for the operator " + last_alg->user_op->name +
                              ": it must take every op, so that every call finds an algorithm");
  }
  return ok;
}

bool load_library(const std::string &path, Library *lib, Diagnostics *diags) {
  std::string text, error;
  if (!read_file(path, kMaxSourceBytes, &text, &error)) {
    diags->error(Code::Library, Loc(), error);
    return false;
  }
  return load_library_text(path, text, lib, diags);
}

bool load_library_text(const std::string &path, const std::string &text, Library *lib, Diagnostics *diags) {
  Loc none;
  auto fail = [&](const std::string &msg) {
    diags->error(Code::Library, none, path + ": " + msg);
    return false;
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {  // parse_error, or out_of_range for a number that overflows
    return fail(std::string("not a library (invalid JSON): ") + e.what());
  }
  std::vector<SchemaError> errors;
  if (!Schema::builtin("cadlib.schema.json").validate(doc, &errors))
    return fail("not a valid library: " + (errors[0].pointer.empty() ? "/" : errors[0].pointer) + ": " +
                errors[0].message);
  if (doc["program_format"].get<int>() != CAD_VERSION)
    return fail("built for CAD program format " + doc["program_format"].dump() + ", this is format " +
                std::to_string(CAD_VERSION) + ": rebuild it with cadc build");
  if (library_hash(doc) != doc["hash"].get<std::string>())
    return fail("hash mismatch: the file was changed or damaged since cadc build wrote it");
  // User-defined operators first (algorithms name them): bytecode,
  // verified again here.
  if (doc.contains("ops")) {
    for (size_t i = 0; i < doc["ops"].size(); i++) {
      UserOp op;
      std::string why;
      if (!userop_from_json(doc["ops"][i], &op, &why)) return fail("ops/" + std::to_string(i) + ": " + why);
      if (lib->find_op(op.name)) return fail("ops/" + std::to_string(i) + ": a second operator named " + op.name);
      lib->ops.push_back(std::make_shared<const UserOp>(std::move(op)));
    }
  }
  const size_t before = diags->error_count();
  for (const nlohmann::json &src : doc["sources"]) {
    const std::string file = src["file"].get<std::string>();
    const uint32_t id = lib->sm.add(file, src["text"].get<std::string>());
    auto m = std::make_unique<Module>();
    const bool parsed = lib->sm.file(id).json ? read_json_module(lib->sm, id, m.get(), diags)
                                              : parse_dsl(lib->sm, id, m.get(), diags);
    if (parsed && check_module(*m, diags, lib->ops))
      for (const Algorithm &a : m->algorithms) lib->algorithms.push_back(&a);
    lib->modules.push_back(std::move(m));
  }
  if (diags->error_count() != before) return false;
  for (const nlohmann::json &a : doc["algorithms"])
    if (!lib->find(a["name"].get<std::string>()))
      return fail("lists algorithm " + a["name"].get<std::string>() + " but has no source for it");
  return read_rules(doc["rules"], path + "#rules", lib->algorithms, lib->ops, &lib->rules, diags);
}

std::shared_ptr<const UserOp> Library::find_op(const std::string &name) const {
  for (const auto &op : ops)
    if (op->name == name) return op;
  return nullptr;
}

const Algorithm *select_algorithm(const Library &lib, Collective c, InstanceSpec *spec) {
  const int64_t bytes = spec->n * static_cast<int64_t>(element_size(*spec));
  for (const Rule &r : lib.rules) {
    if (r.collective != c) continue;
    if (!r.ranks.empty() && std::find(r.ranks.begin(), r.ranks.end(), spec->P) == r.ranks.end()) continue;
    if (bytes < r.min_bytes || bytes > r.max_bytes) continue;
    if (r.commutative >= 0 && r.commutative != spec->commutative) continue;
    if (!r.op.empty() && r.op != op_name(*spec)) continue;
    const Algorithm *a = lib.find(r.use);
    if (!takes_op(*a, *spec)) continue;
    InstanceSpec s = *spec;
    s.params = r.params;
    Diagnostics quiet;
    Instantiator in(*a, s, &quiet);
    if (!in.ok() || !in.applicable()) continue;
    *spec = s;
    return a;
  }
  return nullptr;
}

}  // namespace cad
