// schema.h - a JSON Schema validator for the keywords our schemas use
// (draft 2020-12 subset): the keywords of Schema::kKeywords.  Errors
// carry the JSON pointer of the offending value.  A keyword our schemas
// use must be one of these (a unit test walks schemas/): until 2026-11-29
// maxLength, prefixItems and dependentRequired were used and not checked.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cad {

// What nlohmann::json said of text it could not parse, for a message:
// without its "[json.exception.parse_error.101] " prefix, the excerpt it
// quotes ("last read: '...'", which can be a whole string of the file)
// cut to its last 40 characters, and, with without_position, without
// "parse error at line 3, column 7: " (for a caller that locates it).
std::string json_error_text(const nlohmann::json::exception &e, bool without_position = false);

struct SchemaError {
  std::string pointer;  // "/algorithms/0/body/3/to", "" for the root
  std::string message;
};

class Schema {
 public:
  // The schema documents built into cadc, by file name under schemas/.
  static const Schema &builtin(const std::string &name);
  explicit Schema(nlohmann::json doc) : doc_(std::move(doc)) {}
  // Validates v; appends the errors found (at most a few per branch).  A
  // document nested deeper than kMaxJsonDepth is refused before anything
  // walks it recursively.
  static constexpr size_t kMaxJsonDepth = 1024;
  // What the validator checks; annotations (title, description, $schema,
  // $id) and $defs (what $ref to "#/$defs/..." reaches) besides.
  static constexpr const char *kKeywords[] = {
      "type", "const", "enum", "properties", "required", "additionalProperties", "dependentRequired",
      "items", "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum",
      "maximum", "oneOf", "anyOf", "$ref"};
  static constexpr const char *kAnnotations[] = {"title", "description", "$schema", "$id", "$defs"};
  bool validate(const nlohmann::json &v, std::vector<SchemaError> *errors) const;

 private:
  struct Where;  // the JSON pointer of a value, rendered on an error
  bool check(const nlohmann::json &s, const nlohmann::json &v, const Where &where,
             std::vector<SchemaError> *errors) const;
  const nlohmann::json &resolve(const nlohmann::json &s) const;
  nlohmann::json doc_;
};

}  // namespace cad
