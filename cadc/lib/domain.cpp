// domain.cpp - see domain.h.
#include "domain.h"

#include <algorithm>
#include <functional>
#include <set>

#include "../../kmod/core/cad_core.h"
#include "eval.h"
#include "library.h"
#include "parser.h"
#include "printer.h"
#include "spec.h"
#include "verify.h"

namespace cad {

// ---------------------------------------------------------------- reads

namespace {

class ReadsWalker {
 public:
  explicit ReadsWalker(Algorithm &a) : a_(a), tainted_(static_cast<size_t>(std::max(a.nslots, static_cast<int>(kBuiltinSlots))), false) {
    tainted_[kSlotN] = true;
  }

  void run() {
    a_.reads = Reads();
    a_.nstmts = 0;
    for (Param &p : a_.params) {
      expr(*p.value);
      if (p.slot >= 0 && depends_on_n(*p.value)) tainted_[p.slot] = true;
    }
    for (Requirement &r : a_.requires_) expr(*r.cond);
    for (Scratch &s : a_.scratch) expr(*s.size);
    body(a_.body);
  }

 private:
  bool depends_on_n(const Expr &e) const {
    if (e.kind == ExprKind::Name && e.slot >= 0 && static_cast<size_t>(e.slot) < tainted_.size() && tainted_[e.slot])
      return true;
    for (const ExprPtr &x : e.args)
      if (x && depends_on_n(*x)) return true;
    return false;
  }
  static bool is_n(const Expr &e) { return e.kind == ExprKind::Name && e.slot == kSlotN; }

  void note(Loc *where, const Loc &at) {
    if (!where->valid()) *where = at;
  }

  void expr(Expr &e) {
    if (e.kind == ExprKind::Name) {
      switch (e.slot) {
        case kSlotEsize: note(&a_.reads.esize, e.loc); break;
        case kSlotCommutative: note(&a_.reads.commutative, e.loc); break;
        case kSlotInplace: note(&a_.reads.inplace, e.loc); break;
        case kSlotRoot: note(&a_.reads.root, e.loc); break;
        default: break;
      }
    }
    if (e.kind == ExprKind::Call && e.fn >= 0 && builtin_takes_level(static_cast<Fn>(e.fn))) {
      note(&a_.reads.topology, e.loc);
      if (!e.args.empty() && e.args[0]->kind == ExprKind::Level)
        a_.reads.levels |= 1u << e.args[0]->value;
      else
        a_.reads.levels = (1u << kLevels) - 1;
    }
    // A value depending on n divided by one that does not; n compared
    // with, or taken the min or max of, values that do not.
    auto meets_n = [&] {
      bool n = false, other = true;
      for (const ExprPtr &x : e.args) {
        n = n || is_n(*x);
        other = other && (is_n(*x) || !depends_on_n(*x));
      }
      return n && other;
    };
    if (e.kind == ExprKind::Binary) {
      const Op op = static_cast<Op>(e.fn);
      if ((op == Op::Div || op == Op::Mod) && depends_on_n(*e.args[0]) && !depends_on_n(*e.args[1]))
        e.size_boundary = true;
      if (op >= Op::Eq && op <= Op::Ge && meets_n()) e.size_boundary = true;
    }
    if (e.kind == ExprKind::Call && e.fn >= 0) {
      const Fn fn = static_cast<Fn>(e.fn);
      if (fn == Fn::CeilDiv && depends_on_n(*e.args[0]) && !depends_on_n(*e.args[1])) e.size_boundary = true;
      if ((fn == Fn::Min || fn == Fn::Max) && meets_n()) e.size_boundary = true;
    }
    for (ExprPtr &x : e.args)
      if (x) expr(*x);
  }

  void ref(BufRef &r) {
    if (r.lo) expr(*r.lo);
    if (r.hi) expr(*r.hi);
  }

  void body(std::vector<StmtPtr> &stmts) {
    for (StmtPtr &s : stmts) stmt(*s);
  }

  void stmt(Stmt &s) {
    s.id = a_.nstmts++;
    for (ExprPtr *e : {&s.value, &s.hi, &s.step, &s.tag})
      if (*e) expr(**e);
    if (s.kind == StmtKind::Let && s.slot >= 0 && depends_on_n(*s.value)) tainted_[s.slot] = true;
    if (s.kind == StmtKind::For && s.slot >= 0 &&
        (depends_on_n(*s.value) || depends_on_n(*s.hi) || (s.step && depends_on_n(*s.step))))
      tainted_[s.slot] = true;
    ref(s.dst);
    ref(s.src);
    body(s.body);
    body(s.orelse);
  }

  Algorithm &a_;
  std::vector<bool> tainted_;
};

}  // namespace

void analyse_reads(Algorithm &a) { ReadsWalker(a).run(); }

// ---------------------------------------------------------------- what to verify

std::vector<int64_t> default_roots(int64_t P) {
  std::vector<int64_t> roots;
  if (P <= kAllRootsUpTo) {
    for (int64_t r = 0; r < P; r++) roots.push_back(r);
  } else {
    roots = {0, 1, P / 2, P - 1};
  }
  return roots;
}

std::vector<int64_t> size_classes(const Algorithm &a, const InstanceSpec &key, const std::vector<int64_t> &author,
                                  int64_t max_size) {
  std::set<int64_t> sizes(author.begin(), author.end());
  std::set<int64_t> values = {key.P, 8};
  std::vector<int64_t> params;
  {
    // The parameters' values as the instance has them.
    Diagnostics quiet;
    Instantiator in(a, key, &quiet);
    if (in.ok())
      for (size_t i = 0; i < a.params.size(); i++) params.push_back(in.param_value(i));
  }
  for (int64_t v : params) {
    values.insert(v);
    int64_t pv;
    if (mul_ok(v, key.P, &pv)) values.insert(pv);
  }
  // What n meets in the program, at the largest of the author's sizes.
  const int64_t probe_n = author.empty() ? 1000 : *std::max_element(author.begin(), author.end());
  {
    InstanceSpec probe = key;
    probe.n = probe_n;
    Diagnostics quiet;
    Instantiator in(a, probe, &quiet);
    if (in.ok() && in.applicable()) {
      std::vector<int64_t> met;
      RankProgram rp;
      Observer obs;
      obs.boundaries = &met;
      for (int64_t r = 0; r < key.P && met.size() < 4096; r++)
        if (!in.rank(static_cast<uint32_t>(r), &rp, &obs)) break;
      for (int64_t v : met)
        if (v != probe_n) values.insert(v);
    }
  }
  for (int64_t s : {0, 1, 2}) sizes.insert(s);
  for (int64_t c : values) {
    if (c < 2 || c > max_size / 2) continue;
    for (int64_t s : {c - 1, c, c + 1, 2 * c + 1}) sizes.insert(s);
  }
  std::vector<int64_t> out;
  for (int64_t s : sizes)
    if (s >= 0 && s <= max_size) out.push_back(s);
  return out;
}

std::vector<uint32_t> esizes_to_verify(const Algorithm &a) {
  const CollectiveInfo &info = collective_info(a.collective);
  if (!info.reducing) return {1, 2, 4, 8, 12};
  if (a.user_op) return {a.user_op->elem_size};
  const unsigned op = a.op.empty() ? static_cast<unsigned>(CAD_OP_SUM) : builtin_op(a.op);
  std::vector<uint32_t> out;
  for (unsigned dt = CAD_DT_INT8; dt < CAD_DT_USER; dt++) {
    const uint32_t size = cad_dtype_size(dt);
    if (cad_reduce_supported(op, dt) && std::find(out.begin(), out.end(), size) == out.end()) out.push_back(size);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------- coverage

void report_untaken(const Algorithm &a, const BranchCoverage &cov, Diagnostics *diags) {
  std::function<void(const std::vector<StmtPtr> &)> walk = [&](const std::vector<StmtPtr> &stmts) {
    for (const StmtPtr &sp : stmts) {
      const Stmt &s = *sp;
      const uint8_t t = cov.taken(s.id);
      if (s.kind == StmtKind::If) {
        const std::string cond = print_expr(*s.value);
        if (!(t & 1))
          diags->warning(Code::NeverTaken, start_of(*s.value),
                         "'" + cond + "' is never true in the sweep: what it guards is never verified");
        else if (!(t & 2))
          diags->warning(Code::NeverTaken, start_of(*s.value),
                         "'" + cond + "' is never false in the sweep: " +
                             (s.orelse.empty() ? std::string("the way around it is never verified")
                                               : std::string("its else is never verified")));
      } else if (s.kind == StmtKind::For && !(t & 1)) {
        diags->warning(Code::NeverTaken, s.loc, "the loop over " + s.name + " never runs in the sweep: its body is never verified");
      }
      walk(s.body);
      walk(s.orelse);
    }
  };
  walk(a.body);
}

// ---------------------------------------------------------------- the domain

namespace {

template <class T>
void add_sorted(std::vector<T> *v, T x) {
  auto it = std::lower_bound(v->begin(), v->end(), x);
  if (it == v->end() || *it != x) v->insert(it, x);
}

bool same_placement(const Topology &x, const Topology &y, uint32_t levels) {
  if (x.size() != y.size()) return false;
  for (int l = 0; l < kLevels; l++) {
    if (!(levels >> l & 1)) continue;
    for (int64_t r = 0; r < x.size(); r++)
      if (x.domain(l, r) != y.domain(l, r)) return false;
  }
  return true;
}

}  // namespace

Domain domain_of_sweep(const Algorithm &a, const std::vector<InstanceSpec> &plan, const std::vector<int64_t> &sizes,
                       const std::string &roots, const std::vector<int64_t> &root_values) {
  Domain d;
  d.sizes = sizes;
  d.roots = collective_info(a.collective).rooted ? roots : "all";
  d.root_values = root_values;
  d.op = written_for(a);
  d.any_commutative = !a.reads.commutative.valid();
  d.any_esize = !a.reads.esize.valid();
  d.any_topology = !a.reads.topology.valid();
  d.levels = a.reads.levels;
  std::vector<std::string> machine_names;
  for (const InstanceSpec &s : plan) {
    add_sorted(&d.ranks, s.P);
    if (std::find(d.inplace.begin(), d.inplace.end(), s.inplace) == d.inplace.end()) d.inplace.push_back(s.inplace);
    if (std::find(d.commutative.begin(), d.commutative.end(), s.commutative) == d.commutative.end())
      d.commutative.push_back(s.commutative);
    add_sorted(&d.esizes, element_size(s));
    for (const auto &p : s.params) {
      auto it = std::find_if(d.params.begin(), d.params.end(), [&](const auto &q) { return q.first == p.first; });
      if (it == d.params.end()) it = d.params.insert(d.params.end(), {p.first, {}});
      add_sorted(&it->second, p.second);
    }
    if (!d.any_topology) {
      const std::string name = s.topo && !s.topo->is_flat() ? s.topo->machine().name : "flat";
      if (std::find(machine_names.begin(), machine_names.end(), name) == machine_names.end()) {
        machine_names.push_back(name);
        d.machines.push_back(s.topo ? s.topo->machine() : Machine());
      }
    }
  }
  std::sort(d.inplace.begin(), d.inplace.end());
  std::sort(d.commutative.begin(), d.commutative.end());
  if (!collective_info(a.collective).reducing) d.commutative.clear();
  return d;
}

nlohmann::json Domain::to_json() const {
  nlohmann::json j;
  j["ranks"] = format_spec(ranks);
  j["roots"] = roots;
  j["sizes"] = sizes;
  j["inplace"] = inplace;
  j["commutative"] = any_commutative ? nlohmann::json("any") : nlohmann::json(commutative);
  j["esize"] = any_esize ? nlohmann::json("any") : nlohmann::json(esizes);
  j["op"] = op.empty() ? "any" : op;
  j["params"] = nlohmann::json::object();
  for (const auto &p : params) j["params"][p.first] = p.second;
  if (any_topology) {
    j["topologies"] = "any";
  } else {
    j["topologies"] = nlohmann::json::array();
    for (const Machine &m : machines) j["topologies"].push_back(m.flat ? nlohmann::json("flat") : nlohmann::json(m.to_json()));
    j["levels"] = nlohmann::json::array();
    for (int l = 0; l < kLevels; l++)
      if (levels >> l & 1) j["levels"].push_back(level_name(l));
  }
  j["instances"] = instances;
  return j;
}

bool Domain::from_json(const nlohmann::json &j, Domain *out, std::string *error) {
  // (The schema has checked the shape.)
  Domain d;
  if (!parse_spec(j["ranks"].get<std::string>(), &d.ranks, error)) return false;
  std::sort(d.ranks.begin(), d.ranks.end());
  d.roots = j["roots"].get<std::string>();
  if (d.roots != "all" && d.roots != "default" && !parse_spec(d.roots, &d.root_values, error)) return false;
  d.sizes = j["sizes"].get<std::vector<int64_t>>();
  d.inplace = j["inplace"].get<std::vector<bool>>();
  d.any_commutative = j["commutative"].is_string();
  if (!d.any_commutative) d.commutative = j["commutative"].get<std::vector<bool>>();
  d.any_esize = j["esize"].is_string();
  if (!d.any_esize) d.esizes = j["esize"].get<std::vector<uint32_t>>();
  d.op = j["op"].get<std::string>() == "any" ? "" : j["op"].get<std::string>();
  for (auto it = j["params"].begin(); it != j["params"].end(); ++it)
    d.params.emplace_back(it.key(), it.value().get<std::vector<int64_t>>());
  d.any_topology = j["topologies"].is_string();
  if (!d.any_topology) {
    for (const nlohmann::json &m : j["topologies"]) {
      d.machines.emplace_back();
      if (m.is_string()) continue;  // "flat"
      if (!Machine::from_json(m, &d.machines.back(), error)) return false;
    }
    if (j.contains("levels"))
      for (const nlohmann::json &l : j["levels"])
        for (int k = 0; k < kLevels; k++)
          if (l.get<std::string>() == level_name(k)) d.levels |= 1u << k;
  }
  d.instances = j["instances"].get<uint64_t>();
  *out = std::move(d);
  return true;
}

std::vector<std::string> Domain::describe(const CollectiveInfo &info) const {
  std::vector<std::string> out;
  auto list = [](const auto &v) {
    std::string s;
    for (const auto &x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
    return s;
  };
  out.push_back("P " + format_spec(ranks));
  if (info.rooted)
    out.push_back("roots " + (roots == "default" ? "every root up to P = " + std::to_string(kAllRootsUpTo) +
                                                       ", and 0, 1, P/2, P-1 beyond"
                                                  : roots));
  out.push_back("sizes " + list(sizes) + " and each key's size classes, standing for every n");
  std::string ip;
  for (bool b : inplace) ip += std::string(ip.empty() ? "" : " and ") + (b ? "in place" : "separate buffers");
  out.push_back(ip);
  if (info.reducing) {
    if (!op.empty()) {
      out.push_back("op " + op + " alone");
    } else if (any_commutative) {
      out.push_back("any op, commutative or not: the program does not read commutative, and reduces with the "
                    "call's op");
    } else {
      std::string c;
      for (bool b : commutative) c += std::string(c.empty() ? "" : " and ") + (b ? "commutative" : "non-commutative");
      out.push_back("any op, " + c + ": it reduces with the call's op");
    }
  }
  out.push_back(any_esize ? "element sizes: any (the program does not read esize)" : "element sizes: " + list(esizes));
  for (const auto &p : params) out.push_back(p.first + " = " + list(p.second));
  if (any_topology) {
    out.push_back("topologies: any (the program makes no topology query)");
  } else {
    std::string m, l;
    for (const Machine &x : machines) m += (m.empty() ? "" : ", ") + (x.flat ? std::string("flat") : x.name);
    for (int k = 0; k < kLevels; k++)
      if (levels >> k & 1) l += std::string(l.empty() ? "" : ", ") + level_name(k);
    out.push_back("topologies: " + m + " (the ranks' places at " + l + ")");
  }
  out.push_back(std::to_string(instances) + " instances verified");
  return out;
}

bool covers(const Domain &d, const Algorithm &a, const InstanceSpec &spec, std::string *why) {
  auto no = [&](const std::string &w) {
    if (why) *why = w;
    return false;
  };
  if (!std::binary_search(d.ranks.begin(), d.ranks.end(), spec.P))
    return no("P=" + std::to_string(spec.P) + " is beyond the proven " + format_spec(d.ranks));
  if (collective_info(a.collective).rooted) {
    bool root_ok = d.roots == "all";
    if (d.roots == "default") {
      const std::vector<int64_t> r = default_roots(spec.P);
      root_ok = std::find(r.begin(), r.end(), spec.root) != r.end();
    } else if (!root_ok) {
      root_ok = std::find(d.root_values.begin(), d.root_values.end(), spec.root) != d.root_values.end();
    }
    if (!root_ok) return no("root " + std::to_string(spec.root) + " at P=" + std::to_string(spec.P) + " was not verified");
  }
  if (std::find(d.inplace.begin(), d.inplace.end(), spec.inplace) == d.inplace.end())
    return no(std::string("the ") + (spec.inplace ? "in-place" : "separate-buffers") + " form was not verified");
  if (collective_info(a.collective).reducing && !d.any_commutative &&
      std::find(d.commutative.begin(), d.commutative.end(), spec.commutative) == d.commutative.end())
    return no(std::string("a ") + (spec.commutative ? "commutative" : "non-commutative") + " op was not verified");
  if (!d.any_esize && !std::binary_search(d.esizes.begin(), d.esizes.end(), element_size(spec)))
    return no("element size " + std::to_string(element_size(spec)) + " was not verified");
  if (!d.op.empty() && d.op != op_name(spec)) return no("it is proven for op " + d.op + " alone, not " + op_name(spec));
  {
    Diagnostics quiet;
    Instantiator in(a, spec, &quiet);
    if (!in.ok()) return no("its parameters do not evaluate");
    for (size_t i = 0; i < a.params.size(); i++) {
      const int64_t v = in.param_value(i);
      auto it = std::find_if(d.params.begin(), d.params.end(), [&](const auto &q) { return q.first == a.params[i].name; });
      if (it != d.params.end()) {
        if (!std::binary_search(it->second.begin(), it->second.end(), v))
          return no(a.params[i].name + "=" + std::to_string(v) + " was not verified (" + a.params[i].name + " = " +
                    format_spec(it->second) + ")");
      } else if (v != in.param_default(i)) {
        return no(a.params[i].name + "=" + std::to_string(v) + " was not verified (only its default)");
      }
    }
  }
  if (!d.any_topology) {
    const std::shared_ptr<const Topology> t = spec.topo ? spec.topo : Topology::flat(spec.P);
    bool found = false;
    for (const Machine &m : d.machines) {
      std::shared_ptr<const Topology> proven;
      std::string ignored;
      if (Topology::make(m, spec.P, &proven, &ignored) && same_placement(*t, *proven, d.levels)) found = true;
    }
    if (!found) return no("the ranks' placement (" + t->name() + ") was not verified");
  }
  return true;
}

std::string proof_key(const Algorithm &a, const InstanceSpec &spec) {
  std::string key = a.name + " P=" + std::to_string(spec.P);
  if (collective_info(a.collective).rooted) key += " root=" + std::to_string(spec.root);
  for (const auto &p : spec.params) key += " " + p.first + "=" + std::to_string(p.second);
  if (spec.inplace) key += " inplace";
  if (collective_info(a.collective).reducing) key += spec.commutative ? " commutative" : " noncommutative";
  key += " esize=" + std::to_string(element_size(spec)) + " op=" + op_name(spec) +
         " dtype=" + cad_dtype_name(spec.dtype);
  if (a.reads.topology.valid() && spec.topo) {
    key += " places=";
    for (int l = 0; l < kLevels; l++)
      if (a.reads.levels >> l & 1)
        for (int64_t r = 0; r < spec.topo->size(); r++) key += std::to_string(spec.topo->domain(l, r)) + ",";
  }
  return key;
}

ArrivalProof prove_on_arrival(const Algorithm &a, const InstanceSpec &spec, const SourceManager &sm) {
  ArrivalProof out;
  std::vector<int64_t> sizes = size_classes(a, spec, a.sweep.sizes.present() ? a.sweep.sizes.values() : std::vector<int64_t>{});
  if (!std::binary_search(sizes.begin(), sizes.end(), spec.n)) sizes.insert(std::upper_bound(sizes.begin(), sizes.end(), spec.n), spec.n);
  for (int64_t n : sizes) {
    InstanceSpec s = spec;
    s.n = n;
    Diagnostics diags;
    const InstanceResult r = verify_instance(a, s, sm, &diags);
    if (r.outcome == Outcome::Failed || r.outcome == Outcome::NotRun) {
      out.why = "n=" + std::to_string(n) + ": not verified";
      if (!diags.empty()) {
        const Diagnostic &d = diags.list()[0];
        out.why = (d.loc.valid() ? sm.path(d.loc.file) + ":" + std::to_string(d.loc.line) + ": " : std::string()) +
                  d.message + " [" + code_id(d.code) + "]" + (d.instance.empty() ? "" : " at " + d.instance);
      }
      return out;
    }
    out.instances += r.outcome == Outcome::Verified;
  }
  out.proven = true;
  return out;
}

}  // namespace cad
