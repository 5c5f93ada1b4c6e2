// schema.h - a JSON Schema validator for the keywords our schemas use
// (draft 2020-12 subset): type, const, enum, properties, required,
// additionalProperties, items, minItems, maxItems, minLength, pattern,
// minimum, maximum, oneOf, anyOf, $ref to "#/$defs/...".  Errors carry
// the JSON pointer of the offending value.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cad {

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
  bool validate(const nlohmann::json &v, std::vector<SchemaError> *errors) const;

 private:
  bool check(const nlohmann::json &s, const nlohmann::json &v, const std::string &ptr,
             std::vector<SchemaError> *errors) const;
  const nlohmann::json &resolve(const nlohmann::json &s) const;
  nlohmann::json doc_;
};

}  // namespace cad
