// library.h - .cadlib files: what `cadc build` writes and the runtime
// loads (schemas/cadlib.schema.json): the sources of verified algorithms,
// the selection rules (schemas/rules.schema.json), a hash.  Loading
// validates the schema, the format versions and the hash, re-parses and
// checks every algorithm (line info stays that of the .cad files) and
// checks the rules against them.
//
// Or lazily (the runtime's way: each rank loads the library at init and
// runs a few of its algorithms): the file, its operators, its list of
// algorithms and what of the rules does not need an algorithm's text are
// checked at load; an algorithm's source is parsed and checked, and the
// rules that use it checked against it, when a selection first reaches it
// (find, select_algorithm), and an error there is that call's error.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ast.h"
#include "diag.h"
#include "domain.h"
#include "instance.h"
#include "source.h"
#include "userop.h"

namespace cad {

// The .cadlib format this cadc writes and reads ("cadlib").
constexpr int kCadlibFormat = 2;

struct Rule {
  Collective collective = Collective::Bcast;
  std::vector<int64_t> ranks;   // empty: any P
  std::string ranks_text;       // as written ("1..3,8")
  int64_t min_bytes = 0, max_bytes = INT64_MAX;
  int commutative = -1;         // -1 any, 0 no, 1 yes
  int inplace = -1;             // -1 any, 0 no, 1 yes (collectives every rank calls in place or none)
  std::string op;               // "": any; else the op's name (built-in or user-defined)
  std::string use;
  std::vector<std::pair<std::string, int64_t>> params;
  // "proof": "online": calls beyond the algorithm's proven domain are
  // proven by the runtime on arrival; without it cadc build refuses a rule
  // whose P values or parameters the proof does not cover.
  bool online = false;
  std::string where;            // "rules.json:/rules/3", for messages
};

struct Library {
  Library();
  ~Library();
  Library(Library &&) noexcept;
  Library &operator=(Library &&) noexcept;

  SourceManager sm;
  std::string hash;  // the file's ("fnv1a64:..."), loaded
  std::vector<std::unique_ptr<Module>> modules;  // (loaded lazily: empty)
  std::vector<const Algorithm *> algorithms;    // (loaded lazily: empty)
  std::vector<Rule> rules;
  std::vector<std::shared_ptr<const UserOp>> ops;  // user-defined operators, verified
  // The algorithm named name, or null: no such algorithm; or (loaded
  // lazily) its source or a rule that uses it failed its checks, the
  // message in *error.  Safe to call from several threads.
  const Algorithm *find(const std::string &name, std::string *error = nullptr) const;
  std::shared_ptr<const UserOp> find_op(const std::string &name) const;
  // Each algorithm's proven domain (a library loaded whole or lazily
  // alike), in the library's order; domain(name) is its, or null.
  struct Proven {
    std::string name;
    Collective collective;
    Domain domain;
  };
  std::vector<Proven> proven;
  const Domain *domain(const std::string &name) const;
  // The error of rules[i] against its algorithm ("" if none, or if that
  // algorithm was not parsed yet): loaded lazily, known after find(use).
  std::string rule_error(size_t i) const;

  struct Lazy;
  std::unique_ptr<Lazy> lazy;  // null: loaded whole
};

// Parses and checks a rules document against the algorithms.
bool read_rules(const nlohmann::json &doc, const std::string &where, const std::vector<const Algorithm *> &algs,
                const UserOps &ops, std::vector<Rule> *out, Diagnostics *diags);

// cadc build: each rule against the proven domain of its algorithm (what
// its sweep will prove), errors into diags: P values beyond it, parameter
// values (set by the rule, or a constant default) it does not verify --
// unless the rule says "proof": "online".  where: the rules file.
void check_rules_against_domains(const Library &lib,
                                 const std::vector<std::pair<const Algorithm *, const Domain *>> &domains,
                                 const std::string &where, Diagnostics *diags);

// Loads a .cadlib; false with diagnostics.  lazy: see the top of this file.
bool load_library(const std::string &path, Library *lib, Diagnostics *diags, bool lazy = false);
// The same from the file's text; path names it in messages.
bool load_library_text(const std::string &path, const std::string &text, Library *lib, Diagnostics *diags,
                       bool lazy = false);

// The algorithm for a call: the first rule of the collective whose
// conditions hold and whose algorithm's requirements hold for spec (P,
// n, root, in place, commutativity, op; an algorithm written for a
// user-defined operator only for calls with it; spec.params are replaced
// by the rule's).  An algorithm's requirements see `inplace` as its
// program will: false for one that does not declare `inplace` (the
// runtime runs it from a copy); spec->inplace itself stays the call's.
// null if none applies, or (a library loaded lazily) with *error set if
// the algorithm of a rule it reached failed its checks.
// trace (if not null) gets a line for each rule of the collective it
// looked at, "/rules/3 bcast_binomial: 40000 B is above max_bytes 8192",
// the last "... chosen" if one was (cadc select --explain).
// gate (if not null) has the last word on an instance that passed
// everything else: whether it may run (proven), and a note for the trace
// either way; refused, selection goes on to the next rule.
struct GateVerdict {
  bool run = true;
  std::string note;  // "": inside its proven domain; else "outside ...: proven on arrival", "...: refused"
};
using SelectionGate = std::function<GateVerdict(const Rule &, const Algorithm &, const InstanceSpec &)>;
const Algorithm *select_algorithm(const Library &lib, Collective c, InstanceSpec *spec,
                                  std::string *error = nullptr, std::vector<std::string> *trace = nullptr,
                                  const SelectionGate *gate = nullptr);

// Calls the rules give no algorithm, at most one per collective that has
// algorithms, each as "reduce_scatter_block P=3 n=1 noncommutative": a
// grid, not a proof -- P = 1..33, every root for rooted collectives up to
// P = 8 (0 and P - 1 beyond), counts 0, 1, 7, 100 and each rule's byte
// bounds and one past them, commutative or not (reducing collectives), in
// place or not (where MPI has it), u8 elements with sum (built-in: no rule
// by op applies), a flat topology.  cadc build refuses a library with one
// (the runtime would fail such a call with -ENOTSUP).
std::vector<std::string> calls_without_algorithm(const Library &lib);

// The op a reducing algorithm is written for (its `op NAME`, or the
// user-defined operator it names in a reduction), "" if it takes the
// call's op (and in collectives without an op).
std::string written_for(const Algorithm &a);
// Whether a can run a call with spec's op: an algorithm written for one
// op takes only that one.
bool takes_op(const Algorithm &a, const InstanceSpec &spec);

}  // namespace cad
