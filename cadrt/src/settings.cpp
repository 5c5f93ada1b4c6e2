// settings.cpp - the table of settings.h, and what reads it.
#include "settings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cadrt {

namespace {

// CADRT_ALGORITHM_<COLL>'s members: the collectives, as cadc names them
// in upper case (a unit test checks this list against cadc's).
const char *const kCollectives[] = {"BCAST",    "REDUCE",   "ALLREDUCE", "GATHER",
                                    "SCATTER",  "ALLGATHER", "ALLTOALL", "REDUCE_SCATTER_BLOCK",
                                    "BARRIER"};
constexpr const char kFamily[] = "CADRT_ALGORITHM_<COLL>";
constexpr size_t kFamilyPrefix = sizeof "CADRT_ALGORITHM_" - 1;

const std::vector<Setting> kSettings = {
    {"CADRT_LIBRARY", "`cad-std.cadlib` beside `libcadrt.so`",
     "the `.cadlib` to load; a corrupt, tampered (hash) or foreign-version file fails `cadrt_init`. Sources are "
     "parsed when a call first selects them",
     SettingUse::User},
    {kFamily, "unset: the rules decide",
     "`NAME[:PARAM=VALUE,...]` forces an algorithm for `BCAST`, `REDUCE`, `ALLREDUCE`, `GATHER`, `SCATTER`, "
     "`ALLGATHER`, `ALLTOALL`, `REDUCE_SCATTER_BLOCK` or `BARRIER`, e.g. "
     "`CADRT_ALGORITHM_BCAST=bcast_chain_pipeline:seg=8192`. The same on every rank; an unknown name or parameter "
     "fails the call with `-EINVAL`",
     SettingUse::User},
    {"CADRT_ENGINE", "`auto`", "`poll`, `thread`, `signal`, `kernel` or `auto` (above)", SettingUse::User},
    {"CADRT_KERNEL_BOUNCE", "`1`",
     "kernel engine: a buffer `RLIMIT_MEMLOCK` (`ulimit -l`) does not let `cad.ko` pin is copied through kernel "
     "memory instead (`CADRT_VERBOSE` says so); `0`: the collective fails on that rank",
     SettingUse::User},
    {"CADRT_SIGNAL", "`SIGRTMIN+5`",
     "the signal engine's signal: a real-time signal, as a number or `RTMIN+k`/`RTMAX-k`. If the signal already has "
     "another handler, or is blocked, `signal` fails with `-EBUSY` and `auto` runs `thread`",
     SettingUse::User},
    {"CADRT_THREAD_SPIN", "unset", "`1`: the progress thread spins instead of sleeping on a futex", SettingUse::User},
    {"CADRT_THREAD_CPU", "unset", "pin the progress thread to CPU N", SettingUse::User},
    {"CADRT_KICK_MIN", "`1048576`",
     "thread and signal engines: the smallest collective (bytes of the sender's largest buffer) whose transfers "
     "interrupt a peer computing outside the library; `0`: every one",
     SettingUse::User},
    {"CADRT_TOPOLOGY", "unset: hwloc",
     "a topology file (`cadc topo`'s format) instead of the machine's; the same on every rank", SettingUse::User},
    {"CADRT_CMA", "on, if the probe at `cadrt_init` succeeds",
     "`0`: no single copy for the node (as where CMA is not permitted)", SettingUse::User},
    {"CADRT_BULK", "`auto`",
     "bulk lanes: `auto` uses them up to the size pairs of ranks measured them faster at `cadrt_init`; `1` always; "
     "`0` never (and no pushes)",
     SettingUse::User},
    {"CADRT_BULK_MIN", "`16384`", "the smallest receive (bytes) a lane is granted for or pushed through",
     SettingUse::User},
    {"CADRT_BULK_MAX", "no limit but what `auto` measured", "receives of this many bytes or more never get a lane",
     SettingUse::User},
    {"CADRT_PUSH", "`auto`",
     "with CMA: `auto` pushes a large send through the lane when its caller waited at once last time and the size "
     "class measured faster; `1` whenever the lane is free; `0` never. The same on all ranks of a node",
     SettingUse::User},
    {"CADRT_PUSH_MAX", "no limit", "sends of this many bytes or more are never pushed", SettingUse::User},
    {"CADRT_SPLIT", "`1`", "a single copy of 256 KiB or more is split with its waiting sender; `0`: never",
     SettingUse::User},
    {"CADRT_OFFER", "`auto`",
     "a one-way receive still waiting for its sender is offered to it where the instance's timings say that pays; "
     "`1` always; `0` never",
     SettingUse::User},
    {"CADRT_RANKS_PER_NODE", "unset: by boot id and host name",
     "with a network transport: ranks 0..k-1 are one node, k..2k-1 the next (one machine as several nodes)",
     SettingUse::User},
    {"CADRT_VERBOSE", "unset",
     "`1`: errors and notices on stderr; at init each rank's place and the library loaded; at finalize the transfer "
     "and request counters",
     SettingUse::User},
    {"CADRT_STATS", "unset",
     "`json`: at `cadrt_finalize` each rank prints one line, `cadrt: stats` and a JSON object "
     "(`schemas/stats.schema.json`): its engine and transfer decisions, what `cadrt_init` measured to make them, "
     "its counters, and per algorithm the collectives it started",
     SettingUse::User},
    {"CADRT_EXPLAIN", "unset",
     "`1`: rank 0 of each communicator prints each algorithm it selects, and why, as `cadc select --explain` does",
     SettingUse::User},
    {"CADRT_PROOF", "`online`",
     "an instance outside its algorithm's proven domain: `online` proves it on arrival; `exact` also verifies each "
     "size no size class covers; `strict` refuses it; `off` runs it unproven (with a warning). See "
     "[proof.md](proof.md)",
     SettingUse::User},
    {"CADRT_PROOF_MAX_OPS", "`4194304`",
     "the largest instance (operations of all ranks) proven on arrival; 1 to 2^25", SettingUse::User},
    {"CADRT_PROOF_CACHE", "unset",
     "a file where proofs on arrival keep their verdicts for later jobs (keep it where only you can write)",
     SettingUse::User},
    {"CADMPI", "on", "`0`: `libcadmpi.so` leaves every call to MPI ([mpi.md](mpi.md))", SettingUse::User},
    {"CADMPI_STATS", "unset",
     "`1`: at `MPI_Finalize`, how many collectives went through cadrt and how many were left to MPI",
     SettingUse::User},
    {"CADRT_RANK", "", "this rank's number in the job", SettingUse::Launcher},
    {"CADRT_SIZE", "", "the job's number of ranks", SettingUse::Launcher},
    {"CADRT_JOB_FD", "", "the job's segment", SettingUse::Launcher},
    {"CADRT_LIFE_FD", "", "a pipe that tells `cadrun` a rank ran another program", SettingUse::Launcher},
    {"CADRT_HWLOC_XML_FD", "", "the machine's topology, loaded once", SettingUse::Launcher},
    {"CADRT_FAULT_TELL", "", "fail telling peers of a failure this many times", SettingUse::Test},
    {"CADRT_FAULT_SPLIT_US", "", "delay a split's sender side by this many microseconds", SettingUse::Test},
    {"CADRT_FAULT_SPLIT_IN_US", "", "delay a split's receiver side by this many microseconds", SettingUse::Test},
    {"CADRT_FAULT_SPLIT_READ", "", "fail a split's read", SettingUse::Test},
    {"CADRT_FAULT_LANES", "", "`faster` or `slower`: the lanes' measurement", SettingUse::Test},
};

bool is_family_member(const std::string &name) {
  if (name.compare(0, kFamilyPrefix, kFamily, kFamilyPrefix) != 0) return false;
  const std::string coll = name.substr(kFamilyPrefix);
  for (const char *c : kCollectives)
    if (coll == c) return true;
  return false;
}

// Levenshtein distance, for "did you mean".
size_t distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) row[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The declared name nearest to name (a family by its members), or "" when
// none is within a third of its length.
std::string closest(const std::string &name) {
  std::string best;
  size_t best_d = name.size() / 3 + 1;
  auto consider = [&](const std::string &candidate) {
    const size_t d = distance(name, candidate);
    if (d < best_d) best_d = d, best = candidate;
  };
  for (const Setting &s : kSettings)
    if (strcmp(s.name, kFamily) != 0) consider(s.name);
  for (const char *c : kCollectives) consider(std::string(kFamily, kFamilyPrefix) + c);
  return best;
}

std::string row(const Setting &s) { return std::string("| `") + s.name + "` | " + s.fallback + " | " + s.help + " |\n"; }

}  // namespace

const std::vector<Setting> &settings() { return kSettings; }

const Setting *find_setting(const std::string &name) {
  const bool member = is_family_member(name);
  for (const Setting &s : kSettings)
    if (name == s.name || (member && strcmp(s.name, kFamily) == 0)) return &s;
  return nullptr;
}

const char *setting(const char *name) {
  if (!find_setting(name)) {
    fprintf(stderr, "cadrt: internal error: %s is read but not declared in cadrt/src/settings.cpp\n", name);
    abort();
  }
  const char *v = getenv(name);
  return v && *v ? v : nullptr;
}

std::vector<std::string> unknown_settings(const char *const *env) {
  std::vector<std::string> out;
  for (; env && *env; env++) {
    const char *eq = strchr(*env, '=');
    const std::string name = eq ? std::string(*env, static_cast<size_t>(eq - *env)) : *env;
    if ((name.rfind("CADRT_", 0) != 0 && name.rfind("CADMPI", 0) != 0) || find_setting(name)) continue;
    const std::string near = closest(name);
    out.push_back(name + " is not a cadrt setting" + (near.empty() ? "" : " (did you mean " + near + "?)"));
  }
  return out;
}

std::string settings_markdown() {
  std::string out = "| Variable | Default | Meaning |\n|---|---|---|\n";
  for (const Setting &s : kSettings)
    if (s.use == SettingUse::User) out += row(s);
  return out;
}

std::string settings_report(const char *const *env) {
  std::string out;
  char line[512];
  snprintf(line, sizeof line, "%-24s %-32s %s\n", "SETTING", "VALUE", "DEFAULT");
  out += line;
  for (const Setting &s : kSettings) {
    if (s.use != SettingUse::User) continue;
    std::vector<std::string> set;  // NAME=VALUE of this setting in env
    for (const char *const *e = env; e && *e; e++) {
      const char *eq = strchr(*e, '=');
      if (!eq || eq[1] == '\0') continue;
      const std::string name(*e, static_cast<size_t>(eq - *e));
      if (find_setting(name) == &s) set.push_back(name + "=" + (eq + 1));
    }
    std::string fallback = s.fallback;
    fallback.erase(std::remove(fallback.begin(), fallback.end(), '`'), fallback.end());
    if (set.empty()) {
      snprintf(line, sizeof line, "%-24s %-32s %s\n", s.name, "(default)", fallback.c_str());
      out += line;
    }
    for (const std::string &v : set) {
      const size_t eq = v.find('=');
      snprintf(line, sizeof line, "%-24s %-32s %s\n", v.substr(0, eq).c_str(), v.substr(eq + 1).c_str(),
               fallback.c_str());
      out += line;
    }
  }
  return out;
}

}  // namespace cadrt
