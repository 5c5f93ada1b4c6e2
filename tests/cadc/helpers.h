// helpers.h - compiling DSL text in the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.h"
#include "diag.h"
#include "instance.h"
#include "parser.h"
#include "source.h"

namespace cad_test {

// The schema files of schemas/ in the source tree: (file name, document).
inline std::vector<std::pair<std::string, nlohmann::json>> our_schemas() {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto &f : std::filesystem::directory_iterator(std::string(CAD_SOURCE_DIR) + "/schemas")) {
    std::ifstream in(f.path());
    out.emplace_back(f.path().filename().string(), nlohmann::json::parse(in));
  }
  EXPECT_GE(out.size(), 5u);
  return out;
}

// Parses and checks text; ok() tells whether it had no errors.
struct Compiled {
  cad::SourceManager sm;
  cad::Diagnostics diags;
  cad::Module m;
  bool parsed = false;

  explicit Compiled(const std::string &text, const std::string &name = "t.cad") {
    const uint32_t f = sm.add(name, text);
    parsed = cad::parse_dsl(sm, f, &m, &diags);
    if (parsed) cad::check_module(m, &diags);
  }
  bool ok() const { return parsed && !diags.has_errors(); }
  const cad::Algorithm &alg() const { return m.algorithms.at(0); }
  std::string errors() const {
    std::string s;
    for (const cad::Diagnostic &d : diags.list()) s += cad::render_text(sm, d);
    return s;
  }
  bool has(cad::Code c) const {
    for (const cad::Diagnostic &d : diags.list())
      if (d.code == c) return true;
    return false;
  }
};

inline cad::InstanceSpec spec(int64_t P, int64_t n, int64_t root = 0) {
  cad::InstanceSpec s;
  s.P = P;
  s.n = n;
  s.root = root;
  return s;
}

}  // namespace cad_test
