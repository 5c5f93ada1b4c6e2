// library_test.cpp - loading .cadlib files and choosing an algorithm.
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "library.h"

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

nlohmann::json library(nlohmann::json rules) {
  nlohmann::json doc = {
      {"cadlib", 1},
      {"program_format", 1},
      {"created_by", "test"},
      {"algorithms", {{{"name", "bcast_tree"}, {"collective", "bcast"}, {"file", "tree.cad"}, {"verified", 1}, {"skipped", 0}},
                      {{"name", "bcast_flat"}, {"collective", "bcast"}, {"file", "flat.cad"}, {"verified", 1}, {"skipped", 0}}}},
      {"sources", {{{"file", "tree.cad"}, {"text", kBinomial}}, {{"file", "flat.cad"}, {"text", kLinear}}}},
      {"ops", nlohmann::json::array()},
      {"rules", rules}};
  doc["hash"] = cad::library_hash(doc);
  return doc;
}

const nlohmann::json kRules = {{"rules",
                                {{{"collective", "bcast"}, {"ranks", "1..2"}, {"use", "bcast_flat"}, {"params", {{"fanout", 7}}}},
                                 {{"collective", "bcast"}, {"max_bytes", 1024}, {"use", "bcast_tree"}},
                                 {{"collective", "bcast"}, {"use", "bcast_flat"}}}}};

std::string write(const nlohmann::json &doc, const char *name) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << doc.dump();
  return path;
}

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
  version["hash"] = cad::library_hash(version);
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

  EXPECT_NE(load_error(nlohmann::json{{"cadlib", 1}}).find("not a valid library"), std::string::npos);
  cad::Library lib;
  cad::Diagnostics d;
  EXPECT_FALSE(cad::load_library("/nonexistent.cadlib", &lib, &d));
}
