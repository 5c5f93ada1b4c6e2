// stats.cpp - what a rank says about itself at cadrt_finalize: the
// counters as text under CADRT_VERBOSE, and as one JSON object per rank
// under CADRT_STATS=json (the form tests and tools read).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime.h"

namespace cadrt {

namespace {

unsigned long long ull(const std::atomic<uint64_t> &x) { return static_cast<unsigned long long>(x.load()); }
unsigned long long ull(uint64_t x) { return static_cast<unsigned long long>(x); }

const char *push_name(Runtime::Push p) {
  switch (p) {
    case Runtime::Push::Always: return "always";
    case Runtime::Push::AtOnce: return "at-once";
    default: return "never";
  }
}

// A size or limit, null for none (UINT64_MAX); a time, null for one not
// measured.
nlohmann::json size_or_null(uint64_t v) { return v == UINT64_MAX ? nlohmann::json() : nlohmann::json(v); }
nlohmann::json times(const int64_t *t, int n) {
  nlohmann::json a = nlohmann::json::array();
  for (int i = 0; i < n; i++) a.push_back(t[i] == kNotMeasured ? nlohmann::json() : nlohmann::json(t[i]));
  return a;
}
nlohmann::json classes(uint32_t mask) {
  nlohmann::json a = nlohmann::json::array();
  for (int i = 0; i < kPushClasses; i++) a.push_back((mask >> i & 1) != 0);
  return a;
}

}  // namespace

// The lanes' and pushes' measurements at init and the node's decisions
// (CADRT_STATS): null where this rank did not measure or decide.
nlohmann::json Runtime::probe_stats() const {
  nlohmann::json lanes = {{"measured", nullptr}, {"agreed", nullptr}}, pushes = {{"measured", nullptr}};
  if (lane_probe_.taken)
    lanes["measured"] = {{"with", lane_probe_.with < nep ? nlohmann::json(lane_probe_.with) : nlohmann::json()},
                         {"sizes", std::vector<uint64_t>(kLaneProbe, kLaneProbe + kLaneProbes)},
                         {"lane_ns", times(lane_probe_.lane_ns, kLaneProbes)},
                         {"read_ns", times(lane_probe_.read_ns, kLaneProbes)},
                         {"limit", size_or_null(lane_probe_.limit)},
                         {"forced", lane_probe_.forced}};
  if (lanes_agreed_.taken) lanes["agreed"] = {{"on", lanes_agreed_.on}, {"below", size_or_null(lanes_agreed_.below)}};
  if (push_probe_.taken)
    pushes["measured"] = {{"from", push_probe_.from},
                          {"sizes", std::vector<uint64_t>(kPushProbe, kPushProbe + kPushClasses)},
                          {"push_ns", times(push_probe_.push_ns, kPushClasses)},
                          {"read_ns", times(push_probe_.read_ns, kPushClasses)},
                          {"wins", classes(push_probe_.wins)}};
  pushes["classes"] = classes(push_classes);
  pushes["lanes"] = push_lanes;
  return {{"lanes", lanes}, {"pushes", pushes}};
}

void Runtime::say_counters() const {
  if (!verbose) return;
  if (engine != Engine::Kernel && nlocal > 1)
    fprintf(stderr,
            "cadrt: rank %u: large receives: %llu through lanes, %llu by a single copy (CMA), %llu of them split "
            "with the sender; %llu chunks written for receivers (%llu splits finished here, written last); %llu in "
            "fragments through the ring; %llu offered to the sender, %llu of them written by it; %llu offers of "
            "receivers written here\n",
            me, ull(n_lane), ull(n_cma), ull(n_split), ull(n_split_chunks), ull(n_split_last), ull(n_frag),
            ull(n_offered), ull(n_offers_written), ull(n_wrote_offers));
  if (engine == Engine::Signal || engine == Engine::Thread)
    fprintf(stderr,
            "cadrt: rank %u: %s engine: %llu kicks sent, %llu handler passes, %llu deferred, %llu helper signals, "
            "%llu peers' helpers woken, %llu peers woken waiting in the library\n",
            me, engine_name(), ull(n_kicks), ull(n_handler), ull(n_deferred), ull(n_helper_signals), ull(n_wakes),
            ull(n_waiter_wakes));
  fprintf(stderr,
          "cadrt: rank %u: %llu requests bound to buffers, %llu of them set up afresh (no spare had run the "
          "instance); %llu calls started the request of the same call before as it was\n",
          me, ull(n_binds), ull(n_fresh_binds), ull(n_reused));
  if (n_kernel_bounced)
    fprintf(stderr,
            "cadrt: rank %u: %llu programs loaded with buffers cad.ko copies through kernel memory (it could not "
            "pin them: RLIMIT_MEMLOCK)\n",
            me, ull(n_kernel_bounced));
  if (n_owed_aborts.load())
    fprintf(stderr, "cadrt: rank %u: %llu failed collectives told their peers in a later pass (no room when they failed)\n",
            me, ull(n_owed_aborts));
}

// One line, "cadrt: stats " and a JSON object: this rank's engine and
// transfer decisions, its counters (every one, whether the engine uses it
// or not), and per algorithm the collectives started with it.
void Runtime::write_stats() const {
  if (!stats) return;
  nlohmann::json algs = nlohmann::json::object();
  for (const std::shared_ptr<const Instance> &i : stats_insts_) {
    const std::string name = i->alg ? i->alg->name : "(hand-built)";
    nlohmann::json &a = algs[name];
    if (a.is_null()) a = {{"starts", 0}, {"instances", 0}};
    a["starts"] = a["starts"].get<uint64_t>() + i->starts.load(std::memory_order_relaxed);
    a["instances"] = a["instances"].get<uint64_t>() + 1;
  }
  const nlohmann::json out = {
      {"rank", me},
      {"ranks", nep},
      {"local_ranks", nlocal},
      {"engine", engine_name()},
      {"cma", cma},
      {"bulk", bulk},
      {"push", push_name(push_mode)},
      {"split", split},
      {"offers", offers},
      {"counters",
       {{"lane", n_lane.load()},
        {"cma", n_cma.load()},
        {"split", n_split.load()},
        {"split_chunks", n_split_chunks.load()},
        {"split_last", n_split_last.load()},
        {"fragments", n_frag.load()},
        {"offered", n_offered.load()},
        {"offers_written", n_offers_written.load()},
        {"wrote_offers", n_wrote_offers.load()},
        {"kicks", n_kicks.load()},
        {"handler_passes", n_handler.load()},
        {"deferred", n_deferred.load()},
        {"helper_signals", n_helper_signals.load()},
        {"helpers_woken", n_wakes.load()},
        {"waiters_woken", n_waiter_wakes.load()},
        {"binds", n_binds},
        {"fresh_binds", n_fresh_binds},
        {"reused", n_reused},
        {"owed_aborts", n_owed_aborts.load()},
        {"kernel_bounced", n_kernel_bounced}}},
      {"algorithms", algs},
      {"probes", probe_stats()},
  };
  fprintf(stderr, "cadrt: stats %s\n", out.dump().c_str());
}

}  // namespace cadrt
