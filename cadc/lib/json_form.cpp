// json_form.cpp - the JSON form of the AST (schemas/algorithm.schema.json).
#include "json_form.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "eval.h"
#include "parser.h"
#include "schema.h"

namespace cad {

using nlohmann::json;
using ojson = nlohmann::ordered_json;  // the writer keeps keys in reading order

namespace {

// ---------------------------------------------------------------- writer

ojson expr_json(const Expr &e) {
  switch (e.kind) {
    case ExprKind::Int: return e.value;
    case ExprKind::Bool: return e.value != 0;
    case ExprKind::Name:
    case ExprKind::Level: return e.name;
    case ExprKind::Unary:
    case ExprKind::Binary: {
      ojson args = ojson::array();
      for (const ExprPtr &a : e.args) args.push_back(expr_json(*a));
      return {{"op", e.op}, {"args", args}};
    }
    case ExprKind::Call: {
      ojson args = ojson::array();
      for (const ExprPtr &a : e.args) args.push_back(expr_json(*a));
      return {{"call", e.name}, {"args", args}};
    }
    case ExprKind::Cond:
      return {{"cond", {expr_json(*e.args[0]), expr_json(*e.args[1]), expr_json(*e.args[2])}}};
  }
  return nullptr;
}

ojson ref_json(const BufRef &r) {
  if (!r.lo) return r.name;
  return {{"buffer", r.name}, {"lo", expr_json(*r.lo)}, {"hi", expr_json(*r.hi)}};
}

void extras(ojson &j, const std::vector<std::string> &comments, const std::string &trailing) {
  if (!comments.empty()) j["comments"] = comments;
  if (!trailing.empty()) j["trailing"] = trailing;
}

ojson block_json(const std::vector<StmtPtr> &body);

ojson stmt_json(const Stmt &s) {
  ojson j;
  switch (s.kind) {
    case StmtKind::Let:
      j["let"] = s.name;
      j["value"] = expr_json(*s.value);
      break;
    case StmtKind::For:
      j["for"] = s.name;
      j["from"] = expr_json(*s.value);
      j["to"] = expr_json(*s.hi);
      if (s.step) j["step"] = expr_json(*s.step);
      j["body"] = block_json(s.body);
      if (!s.body_end.empty()) j["body_end"] = s.body_end;
      break;
    case StmtKind::If:
      j["if"] = expr_json(*s.value);
      j["then"] = block_json(s.body);
      if (!s.body_end.empty()) j["then_end"] = s.body_end;
      if (!s.orelse.empty()) j["else"] = block_json(s.orelse);
      if (!s.orelse_end.empty()) j["else_end"] = s.orelse_end;
      break;
    case StmtKind::Parallel:
      j["parallel"] = block_json(s.body);
      if (!s.body_end.empty()) j["body_end"] = s.body_end;
      break;
    case StmtKind::Fence:
      j["fence"] = true;
      break;
    case StmtKind::Send:
    case StmtKind::Recv:
      if (s.kind == StmtKind::Send) {
        j["send"] = ref_json(s.src);
        j["to"] = expr_json(*s.value);
      } else {
        j["recv"] = ref_json(s.dst);
        j["from"] = expr_json(*s.value);
      }
      if (s.tag) j["tag"] = expr_json(*s.tag);
      if (!s.by.empty()) j["by"] = s.by;
      break;
    case StmtKind::Copy:
    case StmtKind::Reduce:
      j[s.kind == StmtKind::Copy ? "copy" : "reduce"] = ref_json(s.dst);
      j["from"] = ref_json(s.src);
      if (!s.redop.empty()) j["op"] = s.redop;
      break;
  }
  extras(j, s.comments, s.trailing);
  if (s.blank) j["blank"] = true;
  return j;
}

ojson block_json(const std::vector<StmtPtr> &body) {
  ojson a = ojson::array();
  for (const StmtPtr &s : body) a.push_back(stmt_json(*s));
  return a;
}

ojson spec_json(const SweepSpec &s) {
  if (s.all) return "all";
  ojson a = ojson::array();
  for (const auto &r : s.ranges) a.push_back({r.first, r.second});
  return a;
}

ojson algorithm_json(const Algorithm &a) {
  ojson j;
  j["name"] = a.name;
  j["collective"] = collective_info(a.collective).name;
  if (!a.comments.empty()) j["comments"] = a.comments;
  if (!a.params.empty()) {
    j["params"] = ojson::array();
    for (const Param &p : a.params) {
      ojson pj = {{"name", p.name}, {"default", expr_json(*p.value)}};
      extras(pj, p.comments, p.trailing);
      j["params"].push_back(pj);
    }
  }
  if (!a.requires_.empty()) {
    j["requires"] = ojson::array();
    for (const Requirement &r : a.requires_) {
      ojson rj = {{"cond", expr_json(*r.cond)}};
      extras(rj, r.comments, r.trailing);
      j["requires"].push_back(rj);
    }
  }
  if (!a.scratch.empty()) {
    j["scratch"] = ojson::array();
    for (const Scratch &s : a.scratch) {
      ojson sj = {{"name", s.name}, {"size", expr_json(*s.size)}};
      extras(sj, s.comments, s.trailing);
      j["scratch"].push_back(sj);
    }
  }
  if (a.inplace) j["inplace"] = true;
  if (!a.inplace_trailing.empty()) j["inplace_trailing"] = a.inplace_trailing;
  if (!a.op.empty()) j["op"] = a.op;
  if (!a.op_trailing.empty()) j["op_trailing"] = a.op_trailing;
  if (a.sweep.present) {
    ojson s = ojson::object();
    if (a.sweep.ranks.present()) s["ranks"] = spec_json(a.sweep.ranks);
    if (a.sweep.sizes.present()) s["sizes"] = spec_json(a.sweep.sizes);
    if (a.sweep.roots.present()) s["roots"] = spec_json(a.sweep.roots);
    if (!a.sweep.params.empty()) {
      s["with"] = ojson::array();
      for (const auto &p : a.sweep.params) s["with"].push_back({{"param", p.first}, {"values", spec_json(p.second)}});
    }
    if (!a.sweep.topologies.empty()) s["topologies"] = a.sweep.topologies;
    extras(s, a.sweep.comments, a.sweep.trailing);
    j["sweep"] = s;
  }
  j["body"] = block_json(a.body);
  if (!a.body_end.empty()) j["body_end"] = a.body_end;
  return j;
}

// ---------------------------------------------------------------- reader
// The schema has been checked: the reader only maps, with JSON pointers
// as locations.

class Reader {
 public:
  Reader(uint32_t file, Diagnostics *diags = nullptr) : file_(file), diags_(diags) {}

  Loc at(const std::string &ptr) const {
    Loc l;
    l.file = file_;
    l.pointer = ptr.empty() ? "/" : ptr;
    return l;
  }

  ExprPtr expr(const json &j, const std::string &ptr) {
    auto e = std::make_unique<Expr>();
    e->loc = at(ptr);
    if (j.is_number_integer()) {
      e->kind = ExprKind::Int;
      e->value = j.get<int64_t>();
      // What the DSL can write: a literal is at most INT64_MAX, and a minus
      // in front of one is an operator (so -2^63 has no DSL text; found by
      // fuzz_cadc as a round trip that did not parse back).
      if ((j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) || e->value == INT64_MIN)
        diags_->error(Code::Schema, e->loc, "integer " + j.dump() + " does not fit: literals are -(2^63 - 1) .. 2^63 - 1");
    } else if (j.is_boolean()) {
      e->kind = ExprKind::Bool;
      e->value = j.get<bool>();
    } else if (j.is_string()) {
      e->name = j.get<std::string>();
      e->kind = ExprKind::Name;
      for (int lv = 0; lv < 4; lv++)
        if (e->name == level_name(lv)) {
          e->kind = ExprKind::Level;
          e->value = lv;
        }
    } else if (j.contains("cond")) {
      e->kind = ExprKind::Cond;
      for (int i = 0; i < 3; i++) e->args.push_back(expr(j["cond"][i], ptr + "/cond/" + std::to_string(i)));
    } else {
      const bool call = j.contains("call");
      e->kind = call ? ExprKind::Call : j["args"].size() == 1 ? ExprKind::Unary : ExprKind::Binary;
      (call ? e->name : e->op) = j[call ? "call" : "op"].get<std::string>();
      // The schema allows one or two operands; the operator decides.
      Op unused;
      if (!call && !op_lookup(e->op, e->kind == ExprKind::Unary, &unused))
        diags_->error(Code::Schema, e->loc,
                      "'" + e->op + "' " + (e->kind == ExprKind::Unary ? "is not a unary operator: it takes two operands"
                                                                      : "is a unary operator: it takes one operand"));
      for (size_t i = 0; i < j["args"].size(); i++)
        e->args.push_back(expr(j["args"][i], ptr + "/args/" + std::to_string(i)));
    }
    // As deep as the DSL allows, no deeper (the schema's check of the
    // document's depth has bounded this recursion already).
    for (const ExprPtr &a : e->args) e->depth = std::max(e->depth, a->depth + 1);
    if (e->depth == kMaxNesting + 1)
      diags_->error(Code::Schema, e->loc, "expression nested more than " + std::to_string(kMaxNesting) + " levels deep");
    return e;
  }

  BufRef ref(const json &j, const std::string &ptr) {
    BufRef r;
    r.loc = at(ptr);
    if (j.is_string()) {
      r.name = j.get<std::string>();
      return r;
    }
    r.name = j["buffer"].get<std::string>();
    r.lo = expr(j["lo"], ptr + "/lo");
    r.hi = expr(j["hi"], ptr + "/hi");
    return r;
  }

  static std::vector<std::string> strings(const json &j, const char *key) {
    return j.contains(key) ? j[key].get<std::vector<std::string>>() : std::vector<std::string>();
  }
  static std::string string(const json &j, const char *key) {
    return j.contains(key) ? j[key].get<std::string>() : std::string();
  }

  std::vector<StmtPtr> block(const json &j, const std::string &ptr) {
    std::vector<StmtPtr> out;
    for (size_t i = 0; i < j.size(); i++) out.push_back(stmt(j[i], ptr + "/" + std::to_string(i)));
    return out;
  }

  StmtPtr stmt(const json &j, const std::string &ptr) {
    auto s = std::make_unique<Stmt>();
    s->loc = at(ptr);
    if (++stmt_nest_ == kMaxNesting + 1)
      diags_->error(Code::Schema, s->loc, "statements nested more than " + std::to_string(kMaxNesting) + " levels deep");
    struct Unnest {
      uint32_t *n;
      ~Unnest() { --*n; }
    } unnest{&stmt_nest_};
    s->comments = strings(j, "comments");
    s->trailing = string(j, "trailing");
    s->blank = j.contains("blank") && j["blank"].get<bool>();
    if (j.contains("let")) {
      s->kind = StmtKind::Let;
      s->name = j["let"].get<std::string>();
      s->value = expr(j["value"], ptr + "/value");
    } else if (j.contains("for")) {
      s->kind = StmtKind::For;
      s->name = j["for"].get<std::string>();
      s->value = expr(j["from"], ptr + "/from");
      s->hi = expr(j["to"], ptr + "/to");
      if (j.contains("step")) s->step = expr(j["step"], ptr + "/step");
      s->body = block(j["body"], ptr + "/body");
      s->body_end = strings(j, "body_end");
    } else if (j.contains("if")) {
      s->kind = StmtKind::If;
      s->value = expr(j["if"], ptr + "/if");
      s->body = block(j["then"], ptr + "/then");
      s->body_end = strings(j, "then_end");
      if (j.contains("else")) s->orelse = block(j["else"], ptr + "/else");
      s->orelse_end = strings(j, "else_end");
    } else if (j.contains("parallel")) {
      s->kind = StmtKind::Parallel;
      s->body = block(j["parallel"], ptr + "/parallel");
      s->body_end = strings(j, "body_end");
    } else if (j.contains("fence")) {
      s->kind = StmtKind::Fence;
    } else if (j.contains("send") || j.contains("recv")) {
      const bool send = j.contains("send");
      s->kind = send ? StmtKind::Send : StmtKind::Recv;
      (send ? s->src : s->dst) = ref(j[send ? "send" : "recv"], ptr + (send ? "/send" : "/recv"));
      s->value = expr(j[send ? "to" : "from"], ptr + (send ? "/to" : "/from"));
      if (j.contains("tag")) s->tag = expr(j["tag"], ptr + "/tag");
      s->by = string(j, "by");
    } else {
      const bool copy = j.contains("copy");
      s->kind = copy ? StmtKind::Copy : StmtKind::Reduce;
      s->dst = ref(j[copy ? "copy" : "reduce"], ptr + (copy ? "/copy" : "/reduce"));
      s->src = ref(j["from"], ptr + "/from");
      s->redop = string(j, "op");
    }
    return s;
  }

  SweepSpec spec(const json &j, const std::string &ptr) {
    SweepSpec s;
    s.loc = at(ptr);
    if (j.is_string()) {
      s.all = true;
      return s;
    }
    for (const json &r : j) s.ranges.emplace_back(r[0].get<int64_t>(), r[1].get<int64_t>());
    return s;
  }

  Algorithm algorithm(const json &j, const std::string &ptr, Diagnostics *diags) {
    Algorithm a;
    a.loc = at(ptr);
    a.name = j["name"].get<std::string>();
    collective_by_name(j["collective"].get<std::string>(), &a.collective);
    a.comments = strings(j, "comments");
    if (j.contains("params"))
      for (size_t i = 0; i < j["params"].size(); i++) {
        const json &p = j["params"][i];
        const std::string pp = ptr + "/params/" + std::to_string(i);
        Param par;
        par.loc = at(pp);
        par.name = p["name"].get<std::string>();
        par.value = expr(p["default"], pp + "/default");
        par.comments = strings(p, "comments");
        par.trailing = string(p, "trailing");
        a.params.push_back(std::move(par));
      }
    if (j.contains("requires"))
      for (size_t i = 0; i < j["requires"].size(); i++) {
        const json &r = j["requires"][i];
        const std::string rp = ptr + "/requires/" + std::to_string(i);
        Requirement req;
        req.loc = at(rp);
        req.cond = expr(r["cond"], rp + "/cond");
        req.comments = strings(r, "comments");
        req.trailing = string(r, "trailing");
        a.requires_.push_back(std::move(req));
      }
    if (j.contains("scratch"))
      for (size_t i = 0; i < j["scratch"].size(); i++) {
        const json &s = j["scratch"][i];
        const std::string sp = ptr + "/scratch/" + std::to_string(i);
        Scratch sc;
        sc.loc = at(sp);
        sc.name = s["name"].get<std::string>();
        sc.size = expr(s["size"], sp + "/size");
        sc.comments = strings(s, "comments");
        sc.trailing = string(s, "trailing");
        a.scratch.push_back(std::move(sc));
      }
    a.inplace = j.contains("inplace") && j["inplace"].get<bool>();
    a.inplace_loc = at(ptr + "/inplace");
    a.inplace_trailing = string(j, "inplace_trailing");
    a.op = string(j, "op");
    a.op_loc = at(ptr + "/op");
    a.op_trailing = string(j, "op_trailing");
    if (j.contains("sweep")) {
      const json &s = j["sweep"];
      const std::string sp = ptr + "/sweep";
      a.sweep.present = true;
      a.sweep.loc = at(sp);
      if (s.contains("ranks")) a.sweep.ranks = spec(s["ranks"], sp + "/ranks");
      if (s.contains("sizes")) a.sweep.sizes = spec(s["sizes"], sp + "/sizes");
      if (s.contains("roots")) a.sweep.roots = spec(s["roots"], sp + "/roots");
      if (s.contains("with"))
        for (size_t i = 0; i < s["with"].size(); i++)
          a.sweep.params.emplace_back(s["with"][i]["param"].get<std::string>(),
                                      spec(s["with"][i]["values"], sp + "/with/" + std::to_string(i) + "/values"));
      if (s.contains("topologies")) a.sweep.topologies = s["topologies"].get<std::vector<std::string>>();
      a.sweep.comments = strings(s, "comments");
      a.sweep.trailing = string(s, "trailing");
      // As the DSL's parser refuses them (it cannot print one back).
      std::vector<const SweepSpec *> specs = {&a.sweep.ranks, &a.sweep.sizes, &a.sweep.roots};
      for (const auto &p : a.sweep.params) specs.push_back(&p.second);
      for (const SweepSpec *spec : specs)
        for (const auto &r : spec->ranges)
          if (r.second < r.first)
            diags->error(Code::Sweep, spec->loc, "range " + std::to_string(r.first) + ".." +
                                                     std::to_string(r.second) + " is reversed");
    }
    a.body = block(j["body"], ptr + "/body");
    a.body_end = strings(j, "body_end");
    return a;
  }

 private:
  uint32_t file_;
  Diagnostics *diags_;
  uint32_t stmt_nest_ = 0;
};

}  // namespace

std::string write_json_module(const Module &m) {
  ojson j;
  j["cad"] = 1;
  if (!m.comments.empty()) j["comments"] = m.comments;
  j["algorithms"] = ojson::array();
  for (const Algorithm &a : m.algorithms) j["algorithms"].push_back(algorithm_json(a));
  return j.dump(2) + "\n";
}

bool read_json_module(const SourceManager &sm, uint32_t file, Module *out, Diagnostics *diags) {
  json j;
  try {
    j = json::parse(sm.file(file).text);
  } catch (const json::parse_error &e) {
    // e.byte is 1-based, the position after the offending character.
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    diags->error(Code::Schema, sm.at(file, std::min(at, sm.file(file).text.size())),
                 "invalid JSON: " + json_error_text(e, true));
    return false;
  } catch (const json::exception &e) {
    // out_of_range: a number that overflows ("number overflow parsing
    // '1e999'"); located at the first occurrence of the quoted text.
    const std::string what = e.what(), &text = sm.file(file).text;
    const size_t q1 = what.find('\''), q2 = what.rfind('\'');
    size_t at = q1 != std::string::npos && q2 > q1 ? text.find(what.substr(q1 + 1, q2 - q1 - 1)) : 0;
    if (at == std::string::npos) at = 0;
    diags->error(Code::Schema, sm.at(file, at), "invalid JSON: " + json_error_text(e));
    return false;
  }
  std::vector<SchemaError> errors;
  if (!Schema::builtin("algorithm.schema.json").validate(j, &errors)) {
    Reader r(file);
    for (const SchemaError &e : errors)
      diags->error(Code::Schema, r.at(e.pointer), e.message);
    return false;
  }
  Reader r(file, diags);
  out->file = file;
  if (j.contains("comments")) out->comments = j["comments"].get<std::vector<std::string>>();
  const size_t before = diags->error_count();
  for (size_t i = 0; i < j["algorithms"].size(); i++)
    out->algorithms.push_back(r.algorithm(j["algorithms"][i], "/algorithms/" + std::to_string(i), diags));
  return diags->error_count() == before;
}

}  // namespace cad
