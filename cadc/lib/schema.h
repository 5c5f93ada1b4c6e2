// schema.h - reading the JSON files cadc and the runtime take from
// outside: a strict parse (no key twice in an object), a JSON Schema
// validator for the keywords our schemas use (draft 2020-12 subset: the
// keywords of Schema::kKeywords), and the content hash of .cadop and
// .cadlib files.  Errors carry the JSON pointer of the offending value.
// A keyword our schemas use must be one of these (a unit test walks
// schemas/): a keyword the validator does not know would pass unchecked.
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

// Parses text as nlohmann::json::parse does, and refuses what that lets
// through: an object with a key twice (nlohmann keeps the last one, so
// two readers of one file could see different values).  false with
// *error: the pointer of the second occurrence and "the key \"k\" appears
// twice in this object"; or, for text that is not JSON (or a number out
// of range), pointer "" and json_error_text's message.
bool parse_json_strict(const std::string &text, nlohmann::json *out, SchemaError *error);

// The content hash of a .cadop or .cadlib document: "fnv1a64:" and 16
// lowercase hex digits of FNV-1a 64 (offset basis 0xcbf29ce484222325,
// prime 0x100000001b3) over the bytes of the document without its
// top-level "hash" member, serialised canonically: no white space, the
// members of every object sorted by key (bytewise), strings as UTF-8 with
// only '"', '\\' and the control characters escaped (\b \f \n \r \t, else
// \u00xx in lowercase) -- what nlohmann's dump() and Python's
// json.dumps(doc, sort_keys=True, separators=(",", ":"),
// ensure_ascii=False) both write for a document of integers, strings,
// booleans, arrays and objects.  An integrity check, not an
// authentication: anyone who can write the file can write its hash.
std::string content_hash(const nlohmann::json &doc);

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
  // Validates v against the definition "#/$defs/<def>" of this schema;
  // the errors' pointers start with pointer (where v is in its document).
  bool validate_def(const std::string &def, const nlohmann::json &v, const std::string &pointer,
                    std::vector<SchemaError> *errors) const;

 private:
  struct Where;  // the JSON pointer of a value, rendered on an error
  bool check(const nlohmann::json &s, const nlohmann::json &v, const Where &where,
             std::vector<SchemaError> *errors) const;
  const nlohmann::json &resolve(const nlohmann::json &s) const;
  nlohmann::json doc_;
};

}  // namespace cad
