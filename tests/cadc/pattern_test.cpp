// pattern_test.cpp - the schemas' regular expressions (cadc/lib/pattern.h):
// a table, std::regex as an independent reference on random strings for
// every pattern in schemas/ and more, the refusals, and inputs that
// std::regex cannot take (its matcher recurses once per byte).
// gcc 12 warns falsely inside <regex> when sanitising (as for cadc_lib_san).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <functional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "pattern.h"
#include "schema.h"

namespace {

bool matches(const std::string &pattern, const std::string &s) {
  cad::Pattern p;
  std::string error;
  EXPECT_TRUE(cad::Pattern::compile(pattern, &p, &error)) << pattern << ": " << error;
  return p.search(s);
}

TEST(Pattern, Table) {
  struct Case {
    const char *pattern, *subject;
    bool match;
  } cases[] = {
      {"^[A-Za-z_][A-Za-z0-9_]*$", "bcast_tree", true},
      {"^[A-Za-z_][A-Za-z0-9_]*$", "9lives", false},
      {"^[A-Za-z_][A-Za-z0-9_]*$", "", false},
      {"^[A-Za-z_][A-Za-z0-9_]*$", "a-b", false},
      {"^[^\\n]*$", "", true},
      {"^[^\\n]*$", "one line", true},
      {"^[^\\n]*$", "two\nlines", false},
      {"^([^\\n]*|\\n)$", "\n", true},
      {"^([^\\n]*|\\n)$", "\n\n", false},
      {"^fnv1a64:[0-9a-f]{16}$", "fnv1a64:0123456789abcdef", true},
      {"^fnv1a64:[0-9a-f]{16}$", "fnv1a64:0123456789abcde", false},
      {"^fnv1a64:[0-9a-f]{16}$", "fnv1a64:0123456789abcdef0", false},
      {"^[0-9]+(\\.\\.[0-9]+)?(,[0-9]+(\\.\\.[0-9]+)?)*$", "1..4,8,16..64", true},
      {"^[0-9]+(\\.\\.[0-9]+)?(,[0-9]+(\\.\\.[0-9]+)?)*$", "1..4,", false},
      {"^(<=|>=) [0-9.]+$", ">= 1.5", true},
      {"^(<=|>=) [0-9.]+$", "== 1.5", false},
      {"b", "abc", true},  // a search: anywhere
      {"^b", "abc", false},
      {"c$", "abc", true},
      {"a$", "abc", false},
      {"", "", true},
      {"x*", "", true},
      {"a{2,3}", "a", false},
      {"^a{2,3}$", "aaa", true},
      {"^a{2,3}$", "aaaa", false},
      {"^a{2,}$", "aaaaaaa", true},
      {"^(?:ab)+$", "ababab", true},
      {"^(?:ab)+?$", "ababa", false},
      {"^.$", "\n", false},
      {"^.$", "\x80", true},
      {"^\\d\\D\\w\\W\\s\\S$", "1x_- a", true},
      {"^[\\d-]+$", "12-3", true},
      {"^[a\\-z]$", "-", true},
      {"^[a\\-z]$", "b", false},
      {"^[]$", "", false},
      {"^[^]$", "q", true},
      {"^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/$", ".*+?()[]{}|^$\\/", true},
      {"^(a*)*$", "aaaa", true},   // an empty loop: no endless walk
      {"^(a|b|)+c$", "abbac", true},
      {"^x{0}y$", "y", true},
  };
  for (const auto &c : cases) EXPECT_EQ(matches(c.pattern, c.subject), c.match) << c.pattern << " on " << c.subject;
}

// Every pattern of the schemas in schemas/, and some more.
std::vector<std::string> patterns() {
  std::vector<std::string> out = {"a|b|c", "^(ab|a)(bc|c)?$", "[^a-c]+x", "^(?:x{1,3}y?)+$", "\\s*\\d{2,4}\\S",
                                  "^(a|ab)(c|bcd)(d*)$", "[.-9]", "^$", "(^a|b$)"};
  std::function<void(const nlohmann::json &)> walk = [&](const nlohmann::json &j) {
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "pattern" && it.value().is_string()) out.push_back(it.value().get<std::string>());
        walk(it.value());
      }
    } else if (j.is_array()) {
      for (const auto &e : j) walk(e);
    }
  };
  for (const auto &[name, doc] : cad_test::our_schemas()) walk(doc);
  return out;
}

TEST(Pattern, AgreesWithStdRegex) {
  std::mt19937 rng(20261129);
  size_t checked = 0, matched = 0;
  for (const std::string &pattern : patterns()) {
    const std::regex reference(pattern, std::regex::ECMAScript);
    cad::Pattern p;
    std::string error;
    ASSERT_TRUE(cad::Pattern::compile(pattern, &p, &error)) << pattern << ": " << error;
    // Strings from the pattern's own characters and a few others, so that
    // many match (and many nearly do).
    std::string alphabet = "\n\r 0129afAF_-.,:<>=xyz";
    for (char c : pattern)
      if (c != '\\' && c != '^' && c != '$') alphabet += c;
    for (int round = 0; round < 3000; round++) {
      std::string s;
      const int len = static_cast<int>(rng() % 24);
      for (int i = 0; i < len; i++) s += alphabet[rng() % alphabet.size()];
      if (round % 3 == 0 && pattern.rfind("^fnv1a64:", 0) == 0) {
        s = "fnv1a64:";
        for (int i = 0; i < 15 + static_cast<int>(rng() % 3); i++) s += "0123456789abcdefg"[rng() % 17];
      }
      const bool want = std::regex_search(s, reference);
      ASSERT_EQ(p.search(s), want) << pattern << " on " << nlohmann::json(s).dump();
      checked++;
      matched += want;
    }
  }
  EXPECT_GT(matched, checked / 20) << "the random strings hardly ever match: a weak comparison";
}

TEST(Pattern, LongInputs) {
  // std::regex overflowed the stack on these (a crash of the loader).  A
  // matcher that recursed once per byte would need a million frames here
  // (10 MiB took 53 s once libcadc's sanitised copy was built at -O0).
  const std::string line(1 << 20, 'a');
  EXPECT_TRUE(matches("^[^\\n]*$", line));
  EXPECT_TRUE(matches("^[A-Za-z_][A-Za-z0-9_]*$", line));
  EXPECT_FALSE(matches("^[A-Za-z_][A-Za-z0-9_]*$", line + "-"));
  EXPECT_FALSE(matches("^(a|aa)*b$", std::string(100000, 'a')));  // exponential for a backtracker
}

TEST(Pattern, Refusals) {
  struct Bad {
    const char *pattern, *message;
  } bad[] = {
      {"(", "at offset 1: an unterminated '('"},
      {"a)", "at offset 1: an unbalanced ')'"},
      {"[a-", "at offset 0: an unterminated '['"},
      {"[z-a]", "a range out of order"},
      {"[\\d-z]", "a range in a class must be between two characters"},
      {"*a", "at offset 0: nothing to repeat"},
      {"a**", "nothing to repeat (two quantifiers in a row)"},
      {"^*", "an anchor cannot repeat"},
      {"a{2,1}", "m < n"},
      {"a{1001}", "a count above 1000"},
      {"a{x}", "'{' is not a quantifier"},
      {"a{2", "'{' is not a quantifier"},
      {"(?=a)", "lookaround"},
      {"(?<n>a)", "lookaround and named groups"},
      {"(a)\\1", "backreferences"},
      {"\\bword", "word boundaries"},
      {"\\u0041", "the escape \\u is not supported"},
      {"\\012", "octal"},
      {"a\\", "a '\\' at the end"},
      {"a]", "an unescaped ']'"},
      {nullptr, "nested more than 100 deep"},  // (101 groups, below)
      {"((a{1000}){1000}){1000}", "too large"},
  };
  const std::string deep = std::string(101, '(') + "a" + std::string(101, ')');
  for (const auto &b : bad) {
    const std::string pattern = b.pattern ? b.pattern : deep;
    cad::Pattern p;
    std::string error;
    EXPECT_FALSE(cad::Pattern::compile(pattern, &p, &error)) << pattern;
    EXPECT_NE(error.find(b.message), std::string::npos) << pattern << ": " << error;
    EXPECT_FALSE(p.search("a")) << "a pattern that did not compile matches nothing";
  }
}

TEST(Pattern, SchemaNamesTheLongStringShortly) {
  const cad::Schema schema(nlohmann::json::parse(R"({"type": "string", "pattern": "^[a-z]*$"})"));
  std::vector<cad::SchemaError> errors;
  EXPECT_FALSE(schema.validate(std::string(200000, 'a') + "!", &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "the string \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"... (200001 bytes) does not match ^[a-z]*$");
  errors.clear();
  const cad::Schema broken(nlohmann::json::parse(R"j({"type": "string", "pattern": "(?=x)"})j"));
  EXPECT_FALSE(broken.validate("x", &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("cannot be checked: the schema's pattern (?=x) at offset 1: lookaround"),
            std::string::npos)
      << errors[0].message;
}

}  // namespace
