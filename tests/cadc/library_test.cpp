// library_test.cpp - loading .cadlib files and choosing an algorithm.
#include <cstdio>
#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "library.h"
#include "schema.h"

namespace {

const char *kBinomial = R"(algorithm bcast_tree : bcast
  requires is_pow2(P)
  sweep ranks 1..4
{
  for k in 0 .. log2(P) {
    let d = pow2(k)
    let me = (rank - root) % P
    if me < d && me + d < P {
      send buf to (rank + d) % P
    } else if me >= d && me < 2 * d {
      recv buf from (rank - d) % P
    }
  }
}
)";

const char *kLinear = R"(algorithm bcast_flat : bcast
  param fanout = 2
  sweep ranks 1..4
{
  if rank == root {
    for q in 1 .. P {
      send buf to (root + q) % P
    }
  } else {
    recv buf from root
  }
}
)";

// A library's entry for an algorithm, proven for P = 1..64 and the rest
// of its domain "any" (these tests are about loading and selection).
nlohmann::json entry(const char *name, const char *collective, const char *file) {
  return {{"name", name}, {"collective", collective}, {"file", file}, {"verified", 1}, {"skipped", 0},
          {"proven",
           {{"ranks", "1..64"}, {"roots", "all"}, {"sizes", {0, 1}}, {"inplace", {false, true}},
            {"commutative", "any"}, {"esize", "any"}, {"op", "any"}, {"params", nlohmann::json::object()},
            {"topologies", "any"}, {"instances", 1}}}};
}

nlohmann::json library(nlohmann::json rules) {
  nlohmann::json doc = {
      {"cadlib", cad::kCadlibFormat},
      {"program_format", 1},
      {"created_by", "test"},
      {"algorithms", {entry("bcast_tree", "bcast", "tree.cad"), entry("bcast_flat", "bcast", "flat.cad")}},
      {"sources", {{{"file", "tree.cad"}, {"text", kBinomial}}, {{"file", "flat.cad"}, {"text", kLinear}}}},
      {"ops", nlohmann::json::array()},
      {"rules", rules}};
  doc["hash"] = cad::content_hash(doc);
  return doc;
}

const nlohmann::json kRules = {{"rules",
                                {{{"collective", "bcast"}, {"ranks", "1..2"}, {"use", "bcast_flat"}, {"params", {{"fanout", 7}}}},
                                 {{"collective", "bcast"}, {"max_bytes", 1024}, {"use", "bcast_tree"}},
                                 {{"collective", "bcast"}, {"use", "bcast_flat"}}}}};

// A library file for one load: written, passed as its path, removed at the
// end of the full expression that made it (load_library reads the whole
// file, lazy or not).  (The process id in the name: ctest runs each case
// as a process of its own, two at once, and two lazy tests writing the
// same /tmp file would read each other's library.)
class Scratch {
 public:
  Scratch(const nlohmann::json &doc, const char *name)
      : path_(::testing::TempDir() + std::to_string(getpid()) + "-" + name) {
    std::ofstream(path_) << doc.dump();
  }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() { std::remove(path_.c_str()); }
  operator const std::string &() const { return path_; }

 private:
  std::string path_;
};

Scratch write(const nlohmann::json &doc, const char *name) { return Scratch(doc, name); }

std::string load_error(const nlohmann::json &doc) {
  cad::Library lib;
  cad::Diagnostics d;
  if (cad::load_library(write(doc, "bad.cadlib"), &lib, &d)) return "";
  return d.list().empty() ? "?" : d.list()[0].message;
}

}  // namespace

TEST(Library, LoadsAndSelectsByRules) {
  cad::Library lib;
  cad::Diagnostics d;
  ASSERT_TRUE(cad::load_library(write(library(kRules), "good.cadlib"), &lib, &d));
  ASSERT_EQ(lib.algorithms.size(), 2u);
  cad::InstanceSpec s = cad_test::spec(2, 10);
  const cad::Algorithm *a = cad::select_algorithm(lib, cad::Collective::Bcast, &s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "bcast_flat");
  ASSERT_EQ(s.params.size(), 1u);
  EXPECT_EQ(s.params[0].second, 7);
  s = cad_test::spec(8, 10);  // 40 bytes of i32: the tree
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Bcast, &s)->name, "bcast_tree");
  s = cad_test::spec(6, 10);  // the tree needs a power of two: the next rule
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Bcast, &s)->name, "bcast_flat");
  s = cad_test::spec(8, 1000);  // 4000 bytes
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Bcast, &s)->name, "bcast_flat");
  s = cad_test::spec(8, 10);
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Gather, &s), nullptr);
}

TEST(Library, KeepsTheSourcesLineInfo) {
  cad::Library lib;
  cad::Diagnostics d;
  ASSERT_TRUE(cad::load_library(write(library(kRules), "lines.cadlib"), &lib, &d));
  const cad::Algorithm *a = lib.find("bcast_tree");
  ASSERT_TRUE(a);
  EXPECT_EQ(lib.sm.path(a->loc.file), "tree.cad");
  EXPECT_EQ(a->loc.line, 1u);
}

TEST(Library, RejectsDamageAndBadRules) {
  nlohmann::json damaged = library(kRules);
  damaged["sources"][0]["text"] = std::string(kBinomial) + " ";
  EXPECT_NE(load_error(damaged).find("hash mismatch"), std::string::npos);

  nlohmann::json version = library(kRules);
  version["program_format"] = 2;
  version["hash"] = cad::content_hash(version);
  EXPECT_NE(load_error(version).find("built for CAD program format 2"), std::string::npos);

  nlohmann::json unknown = kRules;
  unknown["rules"][0]["use"] = "bcast_nonesuch";
  EXPECT_NE(load_error(library(unknown)).find("no algorithm named 'bcast_nonesuch'"), std::string::npos);

  nlohmann::json open_ended = kRules;
  open_ended["rules"].erase(2);
  EXPECT_NE(load_error(library(open_ended)).find("must have no conditions"), std::string::npos);

  nlohmann::json bad_param = kRules;
  bad_param["rules"][0]["params"] = {{"segment", 3}};
  EXPECT_NE(load_error(library(bad_param)).find("'segment' is not a parameter of bcast_flat"), std::string::npos);

  EXPECT_NE(load_error(nlohmann::json{{"cadlib", cad::kCadlibFormat}}).find("not a valid library"), std::string::npos);
  nlohmann::json old = library(kRules);
  old["cadlib"] = 1;
  EXPECT_NE(load_error(old).find("older cadc (library format 1"), std::string::npos);
  cad::Library lib;
  cad::Diagnostics d;
  EXPECT_FALSE(cad::load_library("/nonexistent.cadlib", &lib, &d));
}

// ---- loaded lazily (the runtime's way): sources parsed on first use ----

namespace {

// The first error a lazily loaded doc gives: at load, or at a find of
// each listed algorithm, or at a selection of P=2 (the first rule) and
// P=8 (the second) bcasts of 10 ints.
std::string lazy_error(const nlohmann::json &doc) {
  cad::Library lib;
  cad::Diagnostics d;
  if (!cad::load_library(write(doc, "lazy.cadlib"), &lib, &d, /*lazy=*/true))
    return "load: " + (d.list().empty() ? std::string("?") : d.list()[0].message);
  for (int p : {2, 8}) {
    cad::InstanceSpec s = cad_test::spec(p, 10);
    std::string why;
    if (!cad::select_algorithm(lib, cad::Collective::Bcast, &s, &why)) return "select: " + why;
  }
  for (const auto &a : doc["algorithms"]) {
    std::string why;
    if (!lib.find(a["name"].get<std::string>(), &why)) return "find: " + why;
  }
  return "";
}

}  // namespace

TEST(LibraryLazy, LoadsAndSelectsByRulesParsingOnFirstUse) {
  cad::Library lib;
  cad::Diagnostics d;
  ASSERT_TRUE(cad::load_library(write(library(kRules), "lazy-good.cadlib"), &lib, &d, /*lazy=*/true));
  EXPECT_TRUE(lib.algorithms.empty() && lib.modules.empty());
  cad::InstanceSpec s = cad_test::spec(2, 10);
  std::string why;
  const cad::Algorithm *a = cad::select_algorithm(lib, cad::Collective::Bcast, &s, &why);
  ASSERT_TRUE(a) << why;
  EXPECT_EQ(a->name, "bcast_flat");
  ASSERT_EQ(s.params.size(), 1u);
  EXPECT_EQ(s.params[0].second, 7);
  s = cad_test::spec(8, 10);
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Bcast, &s)->name, "bcast_tree");
  s = cad_test::spec(6, 10);
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Bcast, &s)->name, "bcast_flat");
  s = cad_test::spec(8, 10);
  why.clear();
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Gather, &s, &why), nullptr);
  EXPECT_EQ(why, "");  // none applies: not an error of the library
  const cad::Algorithm *tree = lib.find("bcast_tree");
  ASSERT_TRUE(tree);
  EXPECT_EQ(lib.find("bcast_tree"), tree);  // parsed once
  EXPECT_EQ(lib.sm.path(tree->loc.file), "tree.cad");
  EXPECT_EQ(tree->loc.line, 1u);
  EXPECT_EQ(lib.find("bcast_nonesuch"), nullptr);
  EXPECT_EQ(lazy_error(library(kRules)), "");
}

TEST(LibraryLazy, ChecksAtLoadWhatNeedsNoSource) {
  nlohmann::json damaged = library(kRules);
  damaged["sources"][0]["text"] = std::string(kBinomial) + " ";
  EXPECT_NE(lazy_error(damaged).find("load: "), std::string::npos);
  EXPECT_NE(lazy_error(damaged).find("hash mismatch"), std::string::npos);

  nlohmann::json unknown = kRules;
  unknown["rules"][0]["use"] = "bcast_nonesuch";
  EXPECT_NE(lazy_error(library(unknown)).find("load: "), std::string::npos);
  EXPECT_NE(lazy_error(library(unknown)).find("no algorithm named 'bcast_nonesuch'"), std::string::npos);

  nlohmann::json open_ended = kRules;
  open_ended["rules"].erase(2);
  EXPECT_NE(lazy_error(library(open_ended)).find("load: "), std::string::npos);
  EXPECT_NE(lazy_error(library(open_ended)).find("must have no conditions"), std::string::npos);

  nlohmann::json wrong_collective = kRules;
  wrong_collective["rules"][1]["collective"] = "gather";
  EXPECT_NE(lazy_error(library(wrong_collective)).find("bcast_tree is a bcast algorithm, not gather"),
            std::string::npos);

  auto listed = [](const char *field, nlohmann::json value) {
    nlohmann::json doc = library(kRules);
    doc["algorithms"][1][field] = value;
    doc["hash"] = cad::content_hash(doc);
    return lazy_error(doc);
  };
  EXPECT_NE(listed("collective", "bcats").find("load: "), std::string::npos);
  EXPECT_NE(listed("collective", "bcats").find("'bcats' is not a collective"), std::string::npos);
  EXPECT_NE(listed("file", "nowhere.cad").find("lists algorithm bcast_flat but has no source for it"),
            std::string::npos);
  EXPECT_NE(listed("name", "bcast_tree").find("a second algorithm named bcast_tree"), std::string::npos);
}

TEST(LibraryLazy, AnAlgorithmsSourceOrItsRulesFailWhenFirstReached) {
  // A syntax error in a library whose hash is right (written by hand, or
  // by another cadc): the whole load fails; lazily, the calls that reach
  // that algorithm fail, with the source's line, and the others run.
  nlohmann::json broken = library(kRules);
  broken["sources"][0]["text"] = std::string(kBinomial) + "}\n";
  broken["hash"] = cad::content_hash(broken);
  EXPECT_NE(load_error(broken).find("expected 'algorithm', found '}'"), std::string::npos) << load_error(broken);
  cad::Library lib;
  cad::Diagnostics d;
  ASSERT_TRUE(cad::load_library(write(broken, "lazy-broken.cadlib"), &lib, &d, /*lazy=*/true));
  cad::InstanceSpec s = cad_test::spec(2, 10);
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Bcast, &s)->name, "bcast_flat");
  s = cad_test::spec(8, 10);
  std::string why;
  EXPECT_EQ(cad::select_algorithm(lib, cad::Collective::Bcast, &s, &why), nullptr);
  EXPECT_NE(why.find("lazy-broken.cadlib: tree.cad:"), std::string::npos) << why;
  std::string again;
  EXPECT_EQ(lib.find("bcast_tree", &again), nullptr);
  EXPECT_EQ(again, why);  // the same message every time, parsed once

  nlohmann::json bad_param = kRules;
  bad_param["rules"][0]["params"] = {{"segment", 3}};
  EXPECT_NE(lazy_error(library(bad_param)).find("select: "), std::string::npos);
  EXPECT_NE(lazy_error(library(bad_param)).find("#rules:/rules/0/params: 'segment' is not a parameter of bcast_flat"),
            std::string::npos)
      << lazy_error(library(bad_param));

  nlohmann::json bushy = kRules;  // listed, but its source names it otherwise
  bushy["rules"][1]["use"] = "bcast_bushy";
  nlohmann::json renamed = library(bushy);
  renamed["algorithms"][0]["name"] = "bcast_bushy";
  renamed["hash"] = cad::content_hash(renamed);
  EXPECT_NE(lazy_error(renamed).find("lists algorithm bcast_bushy but its source tree.cad has no algorithm of that name"),
            std::string::npos)
      << lazy_error(renamed);
}

TEST(LibraryLazy, FindsFromSeveralThreadsAtOnce) {
  cad::Library lib;
  cad::Diagnostics d;
  ASSERT_TRUE(cad::load_library(write(library(kRules), "lazy-threads.cadlib"), &lib, &d, /*lazy=*/true));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; i++) {
        cad::InstanceSpec s = cad_test::spec((t + i) % 2 ? 8 : 2, 10);
        const cad::Algorithm *a = cad::select_algorithm(lib, cad::Collective::Bcast, &s);
        if (!a || a->name != ((t + i) % 2 ? "bcast_tree" : "bcast_flat")) bad++;
      }
    });
  for (auto &th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

// ---- rules by in place ----

namespace {

// Two alltoall algorithms for the rules below: one proven in place (it
// stages every block in scratch first), one with separate buffers only.
const char *kStaged = R"(algorithm a2a_staged : alltoall
  scratch tmp[P * n]
  inplace
  sweep ranks 1..3 sizes 0, 1, 5
{
  copy tmp from sendbuf
  copy recvbuf[rank * n:rank * n + n] from tmp[rank * n:rank * n + n]
  for k in 1 .. P {
    let to = (rank + k) % P
    let from = (rank - k) % P
    send tmp[to * n:to * n + n] to to
    recv recvbuf[from * n:from * n + n] from from
  }
}
)";

const char *kDirect = R"(algorithm a2a_direct : alltoall
  requires !inplace
  sweep ranks 1..3 sizes 0, 1, 5
{
  copy recvbuf[rank * n:rank * n + n] from sendbuf[rank * n:rank * n + n]
  for k in 1 .. P {
    let to = (rank + k) % P
    let from = (rank - k) % P
    send sendbuf[to * n:to * n + n] to to
    recv recvbuf[from * n:from * n + n] from from
  }
}
)";

nlohmann::json alltoall_library(nlohmann::json rules) {
  nlohmann::json doc = {
      {"cadlib", cad::kCadlibFormat},
      {"program_format", 1},
      {"created_by", "test"},
      {"algorithms",
       {entry("a2a_staged", "alltoall", "staged.cad"), entry("a2a_direct", "alltoall", "direct.cad"),
        entry("bcast_flat", "bcast", "flat.cad")}},
      {"sources",
       {{{"file", "staged.cad"}, {"text", kStaged}},
        {{"file", "direct.cad"}, {"text", kDirect}},
        {{"file", "flat.cad"}, {"text", kLinear}}}},
      {"ops", nlohmann::json::array()},
      {"rules", rules}};
  doc["hash"] = cad::content_hash(doc);
  return doc;
}

std::string select_alltoall(const cad::Library &lib, bool inplace) {
  cad::InstanceSpec s = cad_test::spec(3, 5);
  s.inplace = inplace;
  std::string why;
  const cad::Algorithm *a = cad::select_algorithm(lib, cad::Collective::Alltoall, &s, &why);
  EXPECT_EQ(s.inplace, inplace);  // the call's, whatever the algorithm declares
  return a ? a->name : "none: " + why;
}

}  // namespace

TEST(Library, RulesCanSelectByInPlaceWhereEveryRankAgrees) {
  for (bool lazy : {false, true}) {
    const nlohmann::json rules = {{"rules",
                                   {{{"collective", "alltoall"}, {"inplace", true}, {"use", "a2a_staged"}},
                                    {{"collective", "alltoall"}, {"use", "a2a_direct"}},
                                    {{"collective", "bcast"}, {"use", "bcast_flat"}}}}};
    cad::Library lib;
    cad::Diagnostics d;
    ASSERT_TRUE(cad::load_library(write(alltoall_library(rules), "inplace.cadlib"), &lib, &d, lazy));
    EXPECT_EQ(select_alltoall(lib, true), "a2a_staged");
    EXPECT_EQ(select_alltoall(lib, false), "a2a_direct");

    nlohmann::json opposite = rules;  // separate buffers to the staged one
    opposite["rules"][0]["inplace"] = false;
    cad::Library lib2;
    ASSERT_TRUE(cad::load_library(write(alltoall_library(opposite), "inplace2.cadlib"), &lib2, &d, lazy));
    EXPECT_EQ(select_alltoall(lib2, false), "a2a_staged");
    // In place, a2a_direct runs from a copy of the input, with separate
    // buffers as proven: its requirement sees inplace false.
    EXPECT_EQ(select_alltoall(lib2, true), "a2a_direct");
  }
}

TEST(Library, AnAlgorithmsRequirementSeesInPlaceAsItsProgramWill) {
  // The staged algorithm declares `inplace`: a requirement !inplace there
  // excludes in-place calls, which then go to the next rule.
  std::string staged_not_in_place = kStaged;
  staged_not_in_place.replace(staged_not_in_place.find("  inplace\n"), 10, "  inplace\n  requires !inplace\n");
  nlohmann::json doc = alltoall_library({{"rules",
                                          {{{"collective", "alltoall"}, {"use", "a2a_staged"}},
                                           {{"collective", "alltoall"}, {"use", "a2a_direct"}},
                                           {{"collective", "bcast"}, {"use", "bcast_flat"}}}}});
  doc["sources"][0]["text"] = staged_not_in_place;
  doc["hash"] = cad::content_hash(doc);
  cad::Library lib;
  cad::Diagnostics d;
  ASSERT_TRUE(cad::load_library(write(doc, "requires-inplace.cadlib"), &lib, &d)) << d.list()[0].message;
  EXPECT_EQ(select_alltoall(lib, false), "a2a_staged");
  EXPECT_EQ(select_alltoall(lib, true), "a2a_direct");
}

TEST(Library, RejectsRulesByInPlaceThatWouldSplitTheRanks) {
  const nlohmann::json base = {{"rules",
                                {{{"collective", "alltoall"}, {"inplace", true}, {"use", "a2a_staged"}},
                                 {{"collective", "alltoall"}, {"use", "a2a_direct"}},
                                 {{"collective", "bcast"}, {"use", "bcast_flat"}}}}};
  EXPECT_EQ(load_error(alltoall_library(base)), "");

  nlohmann::json rooted = base;  // only a gather's root passes in place
  nlohmann::json gather_rule = {{"collective", "gather"}, {"inplace", true}, {"use", "bcast_flat"}};
  rooted["rules"].insert(rooted["rules"].begin(), gather_rule);
  EXPECT_NE(load_error(alltoall_library(rooted)).find("/rules/0/inplace: only the root of a gather passes in place"),
            std::string::npos)
      << load_error(alltoall_library(rooted));

  nlohmann::json no_form = base;  // nor has a broadcast an in-place form
  no_form["rules"][2]["inplace"] = false;
  nlohmann::json last_bcast = {{"collective", "bcast"}, {"use", "bcast_flat"}};
  no_form["rules"].push_back(last_bcast);
  EXPECT_NE(load_error(alltoall_library(no_form)).find("/rules/2/inplace: bcast has no in-place form in MPI"),
            std::string::npos)
      << load_error(alltoall_library(no_form));

  nlohmann::json open_ended = base;  // the last rule must take every call
  open_ended["rules"][1]["inplace"] = false;
  EXPECT_NE(load_error(alltoall_library(open_ended)).find("the last rule for alltoall must have no conditions"),
            std::string::npos)
      << load_error(alltoall_library(open_ended));

  nlohmann::json not_bool = base;
  not_bool["rules"][0]["inplace"] = 1;
  EXPECT_NE(load_error(alltoall_library(not_bool)).find("/rules/0/inplace"), std::string::npos)
      << load_error(alltoall_library(not_bool));
}
