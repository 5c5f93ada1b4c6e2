// schema_test.cpp - the JSON layer of cadc/lib/schema.h: the validator
// (every keyword our schemas use is one it checks; maxLength, prefixItems
// and dependentRequired check), the strict parser and the content hash.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "schema.h"

namespace {

// A parse error's message is short whatever the file: nlohmann quotes
// everything it read of a token (a truncated .cadlib cut a source text of
// thousands of characters into the runtime's error).
TEST(JsonErrorText, CutsTheExcerptAndThePrefix) {
  const std::string text = "{\"sources\": \"" + std::string(5000, 'x') + "tail";
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    FAIL() << "parsed " << j.size();
  } catch (const nlohmann::json::exception &e) {
    const std::string full = e.what(), cut = cad::json_error_text(e), bare = cad::json_error_text(e, true);
    EXPECT_GT(full.size(), 5000u);
    EXPECT_LT(cut.size(), 200u) << cut;
    EXPECT_EQ(cut.find("[json.exception"), std::string::npos) << cut;
    EXPECT_EQ(cut.compare(0, 15, "parse error at "), 0) << cut;
    EXPECT_NE(cut.find("last read: '..." + std::string(36, 'x') + "tail'"), std::string::npos) << cut;
    EXPECT_EQ(bare.compare(0, 13, "syntax error "), 0) << bare;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse("[1e99999]");
    FAIL() << "parsed " << j.size();
  } catch (const nlohmann::json::exception &e) {
    EXPECT_EQ(cad::json_error_text(e), "number overflow parsing '1e99999'");
  }
}

TEST(Schema, EveryKeywordOfOurSchemasIsChecked) {
  std::set<std::string> known(std::begin(cad::Schema::kKeywords), std::end(cad::Schema::kKeywords));
  known.insert(std::begin(cad::Schema::kAnnotations), std::end(cad::Schema::kAnnotations));
  size_t seen = 0;
  // A schema object's keys are keywords; the keys of properties, $defs
  // and dependentRequired are names, and enum and const hold data.
  std::function<void(const nlohmann::json &, const std::string &)> walk = [&](const nlohmann::json &s,
                                                                               const std::string &file) {
    if (s.is_array()) {
      for (const auto &e : s) walk(e, file);
      return;
    }
    if (!s.is_object()) return;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string &k = it.key();
      EXPECT_TRUE(known.count(k)) << file << ": the keyword \"" << k << "\" is not one the validator checks";
      seen++;
      if (k == "properties" || k == "$defs") {
        for (auto p = it.value().begin(); p != it.value().end(); ++p) walk(p.value(), file);
      } else if (k != "enum" && k != "const" && k != "dependentRequired" && k != "required") {
        walk(it.value(), file);
      }
    }
  };
  for (const auto &[name, doc] : cad_test::our_schemas()) walk(doc, name);
  EXPECT_GT(seen, 100u);
}

std::vector<cad::SchemaError> errors_of(const char *schema, const nlohmann::json &v) {
  std::vector<cad::SchemaError> errors;
  const bool ok = cad::Schema(nlohmann::json::parse(schema)).validate(v, &errors);
  EXPECT_EQ(ok, errors.empty());
  return errors;
}

TEST(Schema, MaxLengthCountsCharacters) {
  const char *schema = R"({"type": "string", "maxLength": 4})";
  EXPECT_TRUE(errors_of(schema, "abcd").empty());
  EXPECT_TRUE(errors_of(schema, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9").empty());  // 4 characters, 8 bytes
  const auto e = errors_of(schema, "abcde");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].message, "the string \"abcde\" is longer than 4 characters");
  const auto short_one = errors_of(R"({"type": "string", "minLength": 2})", "\xc3\xa9");  // 1 character
  ASSERT_EQ(short_one.size(), 1u);
  EXPECT_EQ(short_one[0].message, "the string \"\xc3\xa9\" is shorter than 2 characters");
  EXPECT_EQ(errors_of(R"({"type": "string", "minLength": 1})", "")[0].message,
            "the string \"\" is shorter than 1 character");
}

// An error's JSON pointer (rendered only when there is an error): object
// keys with '/' and '~' escaped as ~1 and ~0, array indexes in decimal.
TEST(Schema, ErrorPointersEscapeKeys) {
  const char *schema = R"({"type": "object", "additionalProperties": {"type": "object",
                           "additionalProperties": {"type": "array", "items": {"type": "integer"}}}})";
  EXPECT_TRUE(errors_of(schema, nlohmann::json::parse(R"({"a/b": {"c~d": [1, 2]}})")).empty());
  const auto e = errors_of(schema, nlohmann::json::parse(R"({"a/b": {"c~d": [1, 2, "x"]}})"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].pointer, "/a~1b/c~0d/2");
  EXPECT_EQ(e[0].message, "must be an integer, not the string \"x\"");
  const auto root = errors_of(schema, nlohmann::json::parse("[]"));
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ(root[0].pointer, "");
}

TEST(Schema, PrefixItemsThenItems) {
  const char *schema = R"({"type": "array", "prefixItems": [{"type": "integer"}, {"enum": ["a"]}],
                           "items": {"type": "string"}})";
  EXPECT_TRUE(errors_of(schema, nlohmann::json::parse(R"([1, "a", "x", "y"])")).empty());
  EXPECT_TRUE(errors_of(schema, nlohmann::json::parse("[1]")).empty());
  for (const auto &[doc, pointer] : std::vector<std::pair<const char *, const char *>>{
           {R"(["1", "a"])", "/0"}, {R"([1, "b"])", "/1"}, {R"([1, "a", 2])", "/2"}}) {
    const auto e = errors_of(schema, nlohmann::json::parse(doc));
    ASSERT_EQ(e.size(), 1u) << doc;
    EXPECT_EQ(e[0].pointer, pointer) << doc;
  }
}

TEST(Schema, DependentRequired) {
  const char *schema = R"({"type": "object", "dependentRequired": {"target": ["met"], "met": ["target"]}})";
  EXPECT_TRUE(errors_of(schema, nlohmann::json::parse("{}")).empty());
  EXPECT_TRUE(errors_of(schema, nlohmann::json::parse(R"({"target": ">= 1", "met": true})")).empty());
  const auto e = errors_of(schema, nlohmann::json::parse(R"({"met": true})"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].message, "has \"met\" but lacks \"target\", which goes with it");
}

// A key twice in an object is refused at its second occurrence, located
// through arrays and escaped keys; the same key in two objects is not.
TEST(ParseJsonStrict, RefusesAKeyTwice) {
  const struct {
    const char *text, *pointer;  // pointer: nullptr if the text is accepted
  } cases[] = {
      {R"({"a": 1, "a": 1})", "/a"},
      {R"({"a": {"b": [1, {"c": 2}], "d": 3, "d": 4}})", "/a/d"},
      {R"({"x": [[], {"k": 1}, [2, 3], {"k": 1, "k": 2}]})", "/x/3/k"},
      {R"({"a/b~": {"z": 1, "z": 1}})", "/a~1b~0/z"},
      {R"([{"k": 1}, {"k": 1}])", nullptr},
      {R"({"k": {"k": {"k": 1}}})", nullptr},
  };
  for (const auto &c : cases) {
    nlohmann::json doc;
    cad::SchemaError e;
    const bool ok = cad::parse_json_strict(c.text, &doc, &e);
    if (!c.pointer) {
      EXPECT_TRUE(ok) << c.text << ": " << e.message;
      continue;
    }
    EXPECT_FALSE(ok) << c.text;
    EXPECT_EQ(e.pointer, c.pointer) << c.text;
    EXPECT_NE(e.message.find("appears twice"), std::string::npos) << e.message;
  }
  nlohmann::json doc;
  cad::SchemaError e;
  EXPECT_FALSE(cad::parse_json_strict("{\"a\": 1e99999}", &doc, &e));  // out of range: an error, not a throw
  EXPECT_EQ(e.pointer, "");
  EXPECT_FALSE(cad::parse_json_strict("{\"a\": ", &doc, &e));
  EXPECT_EQ(e.message.compare(0, 15, "parse error at "), 0) << e.message;
}

// The hash as docs/files.md defines it, on a document with what the
// canonical form escapes and sorts (the value Python's json.dumps gives).
TEST(ContentHash, IsTheDocumentedOne) {
  const nlohmann::json doc = nlohmann::json::parse(
      "{\"z\": [1, -2, true, null], \"hash\": \"x\", \"a\": {\"b\xc3\xa9\": \"tab\\there \\\"q\\\" \\\\ \\u0001\"}}");
  EXPECT_EQ(cad::content_hash(doc), "fnv1a64:df88f5d255ab7541");
  nlohmann::json other = doc;
  other["hash"] = "fnv1a64:0000000000000000";  // the hash itself is not hashed
  EXPECT_EQ(cad::content_hash(other), cad::content_hash(doc));
  other["a"]["hash"] = 1;  // a nested "hash" is
  EXPECT_NE(cad::content_hash(other), cad::content_hash(doc));
}

}  // namespace
