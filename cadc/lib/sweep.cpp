// sweep.cpp - see sweep.h.
#include "sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <new>
#include <thread>

#include "../../kmod/core/cad_core.h"
#include "spec.h"
#include "userop.h"

namespace cad {

namespace {

bool values(const std::string &text, const SweepSpec &declared, const char *what,
            const std::vector<int64_t> &fallback, std::vector<int64_t> *out, std::string *error) {
  if (!text.empty()) {
    if (parse_spec(text, out, error)) return true;
    *error = std::string(what) + ": " + *error;
    return false;
  }
  *out = declared.present() ? declared.values() : fallback;
  return true;
}

}  // namespace

bool plan_sweep(const Algorithm &a, const std::string &file, const SweepSettings &st,
                std::vector<InstanceSpec> *out, std::string *error, Diagnostics *diags, SweepPlan *plan) {
  const Sweep &sw = a.sweep;
  out->clear();
  SweepPlan local;
  if (!plan) plan = &local;
  *plan = SweepPlan();
  if (st.ranks.empty() && !sw.ranks.present()) {
    *error = a.name + ": give --ranks, or declare a sweep in the algorithm";
    return false;
  }
  std::vector<int64_t> Ps;
  if (!values(st.ranks, sw.ranks, "ranks", {}, &Ps, error) ||
      !values(st.sizes, sw.sizes, "sizes", {0, 1, 7, 1000}, &plan->sizes, error))
    return false;
  plan->size_classes = st.sizes.empty();
  for (int64_t P : Ps)
    if (P < 1 || P > kMaxRanks) {
      *error = "ranks: P must be 1.." + std::to_string(kMaxRanks) + ", not " + std::to_string(P);
      return false;
    }
  // Parameters: the settings', else the sweep's, as a cartesian product.
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  for (const std::string &p : st.params) {
    std::string name;
    std::vector<int64_t> v;
    if (!parse_setting(p, &name, &v, error)) return false;
    params.emplace_back(name, v);
  }
  if (st.params.empty())
    for (const auto &p : sw.params) params.emplace_back(p.first, p.second.values());
  std::vector<std::vector<std::pair<std::string, int64_t>>> settings(1);
  for (const auto &p : params) {
    std::vector<std::vector<std::pair<std::string, int64_t>>> next;
    for (const auto &s : settings)
      for (int64_t v : p.second) {
        next.push_back(s);
        next.back().emplace_back(p.first, v);
        if (next.size() > kMaxSweepInstances) {
          *error = "the parameters' values make more than " + std::to_string(kMaxSweepInstances) + " combinations";
          return false;
        }
      }
    settings.swap(next);
  }
  std::vector<Machine> machines;
  if (!st.topology.empty()) {
    machines.emplace_back();
    if (!load_machine(st.topology, &machines.back(), error)) return false;
  } else if (!sw.topologies.empty()) {
    const std::filesystem::path dir = std::filesystem::path(file).parent_path();
    for (const std::string &t : sw.topologies) {
      machines.emplace_back();
      if (t == "flat") continue;  // the default machine is flat
      std::string why;
      if (!load_machine((dir / t).string(), &machines.back(), &why)) {
        diags->error(Code::Topology, sw.loc, "the sweep's topology " + t + ": " + why);
        return false;
      }
    }
  } else {
    machines.emplace_back();
  }
  // A topology query answered by the flat machine alone (one domain at
  // every level) verifies none of the branches it decides.
  if (a.reads.topology.valid() && st.declared() &&
      std::all_of(machines.begin(), machines.end(), [](const Machine &m) { return m.flat; })) {
    Diagnostic &d = diags->error(Code::Coverage, a.reads.topology,
                                 "the algorithm queries the topology, but its sweep verifies it only on the flat "
                                 "machine (one domain at every level): add a machine with several domains to the "
                                 "sweep (topology \"FILE.json\")");
    if (sw.present) d.notes.push_back({sw.loc, "the sweep"});
    return false;
  }
  const CollectiveInfo &info = collective_info(a.collective);
  if (info.rooted) {
    const std::string given = !st.roots.empty() ? st.roots : sw.roots.all ? "all" : "";
    if (given == "all") {
      plan->roots = "all";
    } else if (!st.roots.empty() || sw.roots.present()) {
      if (!values(st.roots, sw.roots, "roots", {}, &plan->root_values, error)) return false;
      std::sort(plan->root_values.begin(), plan->root_values.end());
      plan->root_values.erase(std::unique(plan->root_values.begin(), plan->root_values.end()), plan->root_values.end());
      plan->roots = format_spec(plan->root_values);
    } else {
      plan->roots = "default";
    }
  }
  // The op: the settings', else the one the algorithm is written for,
  // else sum; each element size verified (one unless it reads esize).
  const std::shared_ptr<const UserOp> user = st.user_op ? st.user_op : info.reducing ? a.user_op : nullptr;
  unsigned op = st.op, dtype = st.dtype;
  if (op == CAD_OP_NONE) {
    op = a.op.empty() || a.user_op ? static_cast<unsigned>(CAD_OP_SUM) : builtin_op(a.op);
    dtype = default_dtype(op);
  }
  struct Element {
    unsigned dtype;
    uint32_t esize;  // non-reducing: the override
  };
  std::vector<Element> elements{{dtype, 0}};
  if (a.reads.esize.valid() && !user && st.op == CAD_OP_NONE) {
    elements.clear();
    for (uint32_t e : esizes_to_verify(a)) {
      if (!info.reducing) {
        elements.push_back({dtype, e});
        continue;
      }
      for (unsigned dt = CAD_DT_INT8; dt < CAD_DT_USER; dt++)
        if (cad_dtype_size(dt) == e && cad_reduce_supported(op, dt)) {
          elements.push_back({dt, 0});
          break;
        }
    }
  }
  // Commutative or not: a user-defined operator as it declares; the
  // built-in op an algorithm is written for commutative, as every
  // built-in is; the call's op non-commutative (the stronger proof)
  // unless the algorithm requires a commutative op, both if it reads
  // commutative.
  const bool fixed_builtin = info.reducing && !user && !a.op.empty();
  const bool both_orders = info.reducing && !user && !fixed_builtin && a.reads.commutative.valid();
  auto push = [&](const InstanceSpec &s) {
    if (out->size() == kMaxSweepInstances) {
      *error = "the sweep has more than " + std::to_string(kMaxSweepInstances) + " instances";
      out->clear();
      return false;
    }
    out->push_back(s);
    return true;
  };
  for (const Machine &m : machines)
    for (int64_t P : Ps) {
      std::shared_ptr<const Topology> topo;
      std::string why;
      if (!Topology::make(m, P, &topo, &why)) {
        if (!st.topology.empty()) {
          *error = why;
        } else {
          diags->error(Code::Topology, sw.loc, why);
        }
        return false;
      }
      std::vector<int64_t> roots{0};
      if (info.rooted) {
        if (plan->roots == "all") {
          roots.clear();
          for (int64_t r = 0; r < P; r++) roots.push_back(r);
        } else {
          roots = plan->roots == "default" ? default_roots(P) : plan->root_values;  // (sorted, unique)
        }
      }
      for (int64_t root : roots) {
        if (root >= P) continue;
        for (const auto &set : settings)
          for (int inplace = 0; inplace <= (a.inplace || st.inplace ? 1 : 0); inplace++)
            for (const Element &el : elements)
              for (int order = 0; order <= (both_orders ? 1 : 0); order++) {
                InstanceSpec key;
                key.limits = st.limits;
                key.P = P;
                key.root = root;
                key.params = set;
                key.topo = topo;
                key.inplace = inplace;
                key.dtype = el.dtype;
                key.esize = el.esize;
                key.op = info.reducing ? op : static_cast<unsigned>(CAD_OP_SUM);
                key.commutative = !info.reducing || fixed_builtin || order == 1;
                if (user) {
                  key.dtype = CAD_DT_USER;
                  key.op = CAD_OP_USER;
                  key.user_op = user;
                  key.commutative = user->commutative;
                } else if (!key.commutative && !both_orders) {
                  Diagnostics quiet;
                  key.n = plan->sizes.empty() ? 0 : plan->sizes[0];
                  Instantiator in(a, key, &quiet);
                  if (in.ok() && !in.applicable()) {
                    InstanceSpec c = key;
                    c.commutative = true;
                    if (Instantiator(a, c, &quiet).applicable()) key.commutative = true;
                  }
                }
                const std::vector<int64_t> ns = plan->size_classes ? size_classes(a, key, plan->sizes) : plan->sizes;
                for (int64_t n : ns) {
                  InstanceSpec s = key;
                  s.n = n;
                  if (!push(s)) return false;
                }
              }
      }
    }
  return true;
}

SweepOutcome run_sweep(const Algorithm &a, std::vector<InstanceSpec> &instances, const SourceManager &sm,
                       unsigned jobs, int max_failures, const std::function<void(size_t, size_t)> &progress,
                       BranchCoverage *branches) {
  SweepOutcome out;
  out.results.resize(instances.size());
  std::vector<Diagnostics> diags(instances.size());
  std::atomic<size_t> next{0}, done{0};
  std::atomic<int> failures{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < instances.size(); done++) {
      if (failures.load() >= max_failures) {
        out.results[i].outcome = Outcome::NotRun;
        continue;
      }
      try {
        Observer obs;
        obs.branches = branches;
        out.results[i] = verify_instance(a, instances[i], sm, &diags[i], nullptr, &obs);
      } catch (const std::bad_alloc &) {
        // Within the limits of instance.h this takes a machine with little
        // memory, or many jobs: report it as the instance's failure.
        diags[i].clear();
        diags[i].error(Code::TooBig, a.loc, "out of memory verifying this instance").instance =
            instances[i].describe(a);
        out.results[i] = InstanceResult();
        out.results[i].outcome = Outcome::Failed;
      }
      if (out.results[i].outcome == Outcome::Failed) failures++;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<size_t>(std::max(1u, jobs), instances.size()); t++) pool.emplace_back(worker);
  while (progress && done.load() < instances.size()) {
    progress(done.load(), instances.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread &t : pool) t.join();
  for (size_t i = 0; i < instances.size(); i++) {
    out.diags.append(diags[i]);
    const InstanceResult &r = out.results[i];
    if (r.outcome == Outcome::Verified) {
      out.verified++;
      out.most.ops = std::max(out.most.ops, r.stats.ops);
      out.most.messages = std::max(out.most.messages, r.stats.messages);
      out.most.bytes = std::max(out.most.bytes, r.stats.bytes);
      out.most.critical_path = std::max(out.most.critical_path, r.stats.critical_path);
      out.most.max_scratch = std::max(out.most.max_scratch, r.stats.max_scratch);
    } else if (r.outcome == Outcome::Skipped) {
      out.skipped++;
      out.skip_reasons[r.skipped_because]++;
    } else if (r.outcome == Outcome::NotRun) {
      out.not_run++;
    } else {
      out.failed++;
    }
  }
  if (out.verified == 0 && out.failed == 0 && !instances.empty()) {
    Diagnostic &d = out.diags.error(Code::AllSkipped, a.loc,
                                    "every instance of the sweep is skipped: " + a.name + " verified nothing");
    for (const auto &why : out.skip_reasons) d.witness.push_back(std::to_string(why.second) + " skipped: " + why.first);
  }
  return out;
}

}  // namespace cad
