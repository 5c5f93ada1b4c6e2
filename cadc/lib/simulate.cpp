// simulate.cpp - see simulate.h.  A discrete-event simulation: a unit is
// a local operation, a rendezvous (its two operations together) or a side
// of an eager message (its receive waits for its send too); it becomes
// available to its CPU when its predecessors are done, and each CPU takes, whenever it is idle after the events of
// a moment, the available unit that came first (ties: the lowest global
// id, that is the lower rank, then program order).
#include "simulate.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "../../kmod/core/cad_core.h"

namespace cad {

namespace {

constexpr uint64_t kNoOp = SimOp::kNone;

class Simulator {
 public:
  Simulator(const std::vector<RankProgram> &progs, const Matching &match, const CostModel &model)
      : progs_(progs), match_(match), model_(model) {}

  Simulation run() {
    const uint64_t N = match_.base.back();
    sim_.ops.assign(N, SimOp());
    sim_.ranks.assign(progs_.size(), SimRank());
    remaining_.assign(N, 0);
    cost_.assign(N, 0);
    for (uint32_t r = 0; r < progs_.size(); r++)
      for (uint32_t e : progs_[r].edges) remaining_[match_.base[r] + e]++;
    eager_.assign(N, 0);
    for (uint64_t g = 0; g < N; g++) {
      eager_[g] = partner(g) != kNoOp && eager_message(op(g).len, model_);
      if (eager_[g] && op(g).kind == CAD_NODE_RECV) remaining_[g]++;  // it waits for its send
    }
    const size_t cpus = model_.cpus ? std::min<size_t>(model_.cpus, progs_.size()) : progs_.size();
    cpu_queue_.resize(cpus);
    rank_queue_.resize(model_.switch_ns > 0 ? progs_.size() : 0);
    taken_.assign(model_.switch_ns > 0 ? N : 0, 0);
    cpu_busy_.assign(cpus, false);
    cpu_last_.assign(cpus, kNoOp);
    for (uint64_t g = 0; g < N; g++)  // (a rendezvous whose sides both start ready: once)
      if (remaining_[g] == 0 && !(joint(g) < g && remaining_[joint(g)] == 0)) became_ready(g, 0);
    while (!events_.empty()) {
      const double now = std::get<0>(events_.top());
      do {  // (one at least: a model of NaNs must end too)
        const auto [t, kind, u] = events_.top();
        events_.pop();
        if (kind == kDone) done(u, t);
        else available(u, t);
      } while (!events_.empty() && std::get<0>(events_.top()) == now);
      // The CPUs this moment freed or gave work to (not all P of them:
      // an alltoall of 1024 ranks has a million moments).
      for (const uint32_t c : touched_)
        if (!cpu_busy_[c] && has_work(c)) start(c, now);
      touched_.clear();
    }
    uint64_t last = kNoOp;
    for (uint64_t g = 0; g < N; g++) {
      const SimOp &o = sim_.ops[g];
      SimRank &rk = sim_.ranks[rank_of(g)];
      rk.done = std::max(rk.done, o.end);
      if (last == kNoOp || o.end > sim_.ops[last].end) last = g;
    }
    for (const SimRank &rk : sim_.ranks) sim_.time = std::max(sim_.time, rk.done);
    for (uint64_t g = last; g != kNoOp; g = sim_.ops[g].after) sim_.critical.push_back(g);
    std::reverse(sim_.critical.begin(), sim_.critical.end());
    return std::move(sim_);
  }

 private:
  enum Kind { kDone = 0, kAvailable = 1 };  // at one moment, completions first
  using Event = std::tuple<double, int, uint64_t>;
  using Waiting = std::pair<double, uint64_t>;  // available since, unit

  uint32_t rank_of(uint64_t g) const {
    return static_cast<uint32_t>(std::upper_bound(match_.base.begin(), match_.base.end(), g) - match_.base.begin() - 1);
  }
  const RankOp &op(uint64_t g) const {
    const uint32_t r = rank_of(g);
    return progs_[r].ops[g - match_.base[r]];
  }
  uint64_t partner(uint64_t g) const {
    const RankOp &o = op(g);
    if (o.kind != CAD_NODE_SEND && o.kind != CAD_NODE_RECV) return kNoOp;
    const uint64_t p = match_.partner[g];
    return p == Matching::kUnmatched ? kNoOp : p;
  }
  bool eager(uint64_t g) const { return eager_[g] != 0; }
  // The other side of a rendezvous (one unit with g), else none.
  uint64_t joint(uint64_t g) const { return eager(g) ? kNoOp : partner(g); }
  // A unit's id: its lower global id.
  uint64_t unit_of(uint64_t g) const { return std::min(g, joint(g)); }

  void became_ready(uint64_t g, double t) {
    const uint64_t p = joint(g);
    if (p != kNoOp && remaining_[p] != 0) return;  // the other side is not
    const uint64_t u = unit_of(g);
    sim_.ops[u].ready = t;
    if (p != kNoOp) sim_.ops[u].after = sim_.ops[g].after;  // the side that came last
    events_.emplace(t, kAvailable, u);
  }

  void available(uint64_t u, double t) {
    const uint64_t p = joint(u);
    const RankOp &o = op(u);
    double cost = 0;
    int32_t by = -1;
    if (eager(u)) {  // its side: into the ring, or out of it
      cost = model_.alpha_eager_ns / 2 + model_.beta_ns * static_cast<double>(o.len);
      by = static_cast<int32_t>(rank_of(u));
    } else if (p != kNoOp) {
      const uint64_t send = o.kind == CAD_NODE_SEND ? u : p, recv = send == u ? p : u;
      cost = model_.alpha_ns + model_.beta_ns * static_cast<double>(o.len);
      by = static_cast<int32_t>(rank_of(op(send).flags == CAD_XFER_SENDER_WRITES ||
                                                op(recv).flags == CAD_XFER_SENDER_WRITES
                                            ? send
                                            : recv));
    } else if (o.kind == CAD_NODE_COPY || o.kind == CAD_NODE_REDUCE) {
      cost = (o.kind == CAD_NODE_COPY ? model_.beta_ns : model_.gamma_ns) * static_cast<double>(o.len);
      by = static_cast<int32_t>(rank_of(u));
    }
    SimOp &s = sim_.ops[u];
    if (cost <= 0) {  // nothing for a CPU to do
      s.start = s.end = t;
      events_.emplace(t, kDone, u);
      return;
    }
    const int32_t cpu = by % static_cast<int32_t>(cpu_queue_.size());
    s.by = by;
    s.cpu = cpu;
    cost_[u] = cost;
    cpu_queue_[cpu].emplace(t, u);
    if (!rank_queue_.empty()) rank_queue_[static_cast<size_t>(by)].emplace(t, u);
    touched_.push_back(static_cast<uint32_t>(cpu));
  }

  void start(uint32_t c, double now) {
    const uint64_t last = cpu_last_[c];
    // With a price on turns, the rank the CPU ran last keeps it while it
    // has work, as a scheduler leaves a process that does not block on
    // its CPU; else the work that came first.
    Waiting w = cpu_queue_[c].top();
    if (!rank_queue_.empty() && last != kNoOp) {
      auto &mine = rank_queue_[static_cast<size_t>(sim_.ops[last].by)];
      drop_taken(mine);
      if (!mine.empty()) w = mine.top();
    }
    const auto [since, u] = w;
    if (taken_.empty()) cpu_queue_[c].pop();
    else taken_[u] = 1;
    SimOp &s = sim_.ops[u];
    // (A rank's turn on a CPU it shares: the previous job was another's.)
    const bool turn = last != kNoOp && sim_.ops[last].by != s.by;
    s.switched = turn ? model_.switch_ns : 0;
    sim_.switches += turn;
    if (now > since) s.after = last;  // it waited for the CPU
    const double cost = cost_[u];
    s.start = now + s.switched;
    s.end = s.start + cost;
    cpu_busy_[c] = true;
    cpu_last_[c] = u;
    sim_.ranks[s.by].busy += cost;
    if (partner(u) != kNoOp) sim_.ranks[s.by].copied += op(u).len;  // (a rendezvous: once)
    events_.emplace(s.end, kDone, u);
  }

  // (Work is in two queues when turns have a price: taken from one, it
  // is dropped from the other when it comes to the top.)
  template <class Queue>
  void drop_taken(Queue &q) {
    while (!taken_.empty() && !q.empty() && taken_[q.top().second]) q.pop();
  }
  bool has_work(uint32_t c) {
    drop_taken(cpu_queue_[c]);
    return !cpu_queue_[c].empty();
  }

  void done(uint64_t u, double t) {
    const SimOp &s = sim_.ops[u];
    if (s.cpu >= 0) {
      cpu_busy_[s.cpu] = false;
      touched_.push_back(static_cast<uint32_t>(s.cpu));
    }
    const uint64_t p = joint(u);
    if (p != kNoOp) sim_.ops[p] = s;
    if (op(u).kind == CAD_NODE_SEND && eager(u)) {  // in the ring: its receive may go
      const uint64_t y = partner(u);
      sim_.ops[y].after = u;
      if (--remaining_[y] == 0) became_ready(y, t);
    }
    for (uint64_t g : {u, p}) {
      if (g == kNoOp) continue;
      const uint32_t r = rank_of(g);
      const RankProgram &prog = progs_[r];
      const uint32_t i = static_cast<uint32_t>(g - match_.base[r]);
      for (uint32_t e = prog.edge_first[i]; e < prog.edge_first[i + 1]; e++) {
        const uint64_t y = match_.base[r] + prog.edges[e];
        sim_.ops[y].after = g;  // the last predecessor to finish, when it reaches 0
        if (--remaining_[y] == 0) became_ready(y, t);
      }
    }
  }

  const std::vector<RankProgram> &progs_;
  const Matching &match_;
  const CostModel &model_;
  Simulation sim_;
  std::vector<uint32_t> remaining_;  // predecessors not done, by global id
  std::vector<uint8_t> eager_;       // a side of an eager message, by global id
  std::vector<double> cost_;         // CPU time of a unit, by its id
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<std::priority_queue<Waiting, std::vector<Waiting>, std::greater<Waiting>>> cpu_queue_;
  std::vector<std::priority_queue<Waiting, std::vector<Waiting>, std::greater<Waiting>>> rank_queue_;  // switch_ns > 0
  std::vector<uint8_t> taken_;  // a unit started, by its id (switch_ns > 0)
  std::vector<bool> cpu_busy_;
  std::vector<uint64_t> cpu_last_;  // the unit the CPU ran last
  std::vector<uint32_t> touched_;   // CPUs to look at after this moment (maybe twice)
};

}  // namespace

Simulation simulate(const std::vector<RankProgram> &progs, const Matching &match, const CostModel &model) {
  return Simulator(progs, match, model).run();
}

}  // namespace cad
