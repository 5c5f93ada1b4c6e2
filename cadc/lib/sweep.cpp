// sweep.cpp - see sweep.h.
#include "sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <new>
#include <thread>

#include "spec.h"

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
                std::vector<InstanceSpec> *out, std::string *error, Diagnostics *diags) {
  const Sweep &sw = a.sweep;
  out->clear();
  if (st.ranks.empty() && !sw.ranks.present()) {
    *error = a.name + ": give --ranks, or declare a sweep in the algorithm";
    return false;
  }
  std::vector<int64_t> Ps, ns;
  if (!values(st.ranks, sw.ranks, "ranks", {}, &Ps, error) ||
      !values(st.sizes, sw.sizes, "sizes", {0, 1, 7, 1000}, &ns, error))
    return false;
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
  const CollectiveInfo &info = collective_info(a.collective);
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
        const bool all = st.roots == "all" || (st.roots.empty() && (sw.roots.all || (!sw.roots.present() && P <= 17)));
        if (all) {
          roots.clear();
          for (int64_t r = 0; r < P; r++) roots.push_back(r);
        } else if (!values(st.roots, sw.roots, "roots", {0, 1, P / 2, P - 1}, &roots, error)) {
          return false;
        }
        std::sort(roots.begin(), roots.end());
        roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
      }
      for (int64_t n : ns)
        for (int64_t root : roots) {
          if (root >= P) continue;
          for (const auto &set : settings)
            for (int inplace = 0; inplace <= (a.inplace || st.inplace ? 1 : 0); inplace++) {
              InstanceSpec s;
              s.P = P;
              s.n = n;
              s.root = root;
              s.params = set;
              s.topo = topo;
              s.inplace = inplace;
              s.dtype = st.dtype;
              s.op = st.op;
              // Non-commutative unless the algorithm needs a commutative op.
              s.commutative = !info.reducing;
              if (const auto &u = st.user_op ? st.user_op : info.reducing ? a.user_op : nullptr) {
                s.dtype = CAD_DT_USER;
                s.op = CAD_OP_USER;
                s.user_op = u;
                s.commutative = u->commutative;
              } else if (!s.commutative) {
                Diagnostics quiet;
                Instantiator in(a, s, &quiet);
                if (in.ok() && !in.applicable()) {
                  InstanceSpec c = s;
                  c.commutative = true;
                  if (Instantiator(a, c, &quiet).applicable()) s.commutative = true;
                }
              }
              if (out->size() == kMaxSweepInstances) {
                *error = "the sweep has more than " + std::to_string(kMaxSweepInstances) + " instances";
                out->clear();
                return false;
              }
              out->push_back(s);
            }
        }
    }
  return true;
}

SweepOutcome run_sweep(const Algorithm &a, std::vector<InstanceSpec> &instances, const SourceManager &sm,
                       unsigned jobs, int max_failures, const std::function<void(size_t, size_t)> &progress) {
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
        out.results[i] = verify_instance(a, instances[i], sm, &diags[i]);
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
