// schema.cpp - see schema.h.
#include "schema.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "pattern.h"
#include "schemas_embedded.h"

namespace cad {

namespace {

std::string escape(const std::string &key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

std::string describe(const nlohmann::json &v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: {
      // A long one shortened: its start and its length.
      const std::string &str = v.get_ref<const std::string &>();
      const auto quoted = [](const std::string &t) {
        return nlohmann::json(t).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      };
      if (str.size() <= 80) return "the string " + quoted(str);
      return "the string " + quoted(str.substr(0, 40)) + "... (" + std::to_string(str.size()) + " bytes)";
    }
    case nlohmann::json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::number_float: return "the number " + v.dump();
    default: return "the number " + v.dump();
  }
}

bool has_type(const nlohmann::json &v, const std::string &t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

// A schema's pattern, compiled once (nullptr and *error if it does not).
const Pattern *compiled(const std::string &source, std::string *error) {
  static std::mutex m;
  static std::map<std::string, std::pair<std::unique_ptr<Pattern>, std::string>> cache;
  std::lock_guard<std::mutex> lock(m);
  auto &entry = cache[source];
  if (!entry.first && entry.second.empty()) {
    auto p = std::make_unique<Pattern>();
    if (Pattern::compile(source, p.get(), &entry.second))
      entry.first = std::move(p);
    else if (entry.second.empty())
      entry.second = "does not compile";
  }
  *error = entry.second;
  return entry.first.get();
}

}  // namespace

const Schema &Schema::builtin(const std::string &name) {
  static std::mutex m;
  static std::map<std::string, std::unique_ptr<Schema>> loaded;
  std::lock_guard<std::mutex> lock(m);
  auto &s = loaded[name];
  if (!s) s = std::make_unique<Schema>(nlohmann::json::parse(embedded_schema(name)));
  return *s;
}

const nlohmann::json &Schema::resolve(const nlohmann::json &s) const {
  const nlohmann::json *cur = &s;
  for (int depth = 0; depth < 32 && cur->is_object() && cur->contains("$ref"); depth++) {
    const std::string ref = (*cur)["$ref"].get<std::string>();
    cur = &doc_.at(nlohmann::json::json_pointer(ref.substr(1)));
  }
  return *cur;
}

namespace {

// The nesting depth of a document, without recursion; stops counting past
// limit.
size_t depth_of(const nlohmann::json &v, size_t limit) {
  std::vector<std::pair<const nlohmann::json *, size_t>> stack{{&v, 1}};
  size_t deepest = 0;
  while (!stack.empty()) {
    auto [j, d] = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, d);
    if (deepest > limit) break;
    if (j->is_structured())
      for (const auto &child : *j) stack.push_back({&child, d + 1});
  }
  return deepest;
}

}  // namespace

bool Schema::validate(const nlohmann::json &v, std::vector<SchemaError> *errors) const {
  if (depth_of(v, kMaxJsonDepth) > kMaxJsonDepth) {
    errors->push_back({"", "nested more than " + std::to_string(kMaxJsonDepth) + " levels deep"});
    return false;
  }
  return check(doc_, v, "", errors);
}

bool Schema::check(const nlohmann::json &schema, const nlohmann::json &v, const std::string &ptr,
                   std::vector<SchemaError> *errors) const {
  const nlohmann::json &s = resolve(schema);
  auto fail = [&](const std::string &msg) {
    errors->push_back({ptr, msg});
    return false;
  };
  if (s.contains("const") && v != s["const"]) return fail("must be " + s["const"].dump() + ", not " + describe(v));
  if (s.contains("enum")) {
    bool found = false;
    for (const auto &e : s["enum"]) found |= v == e;
    if (!found) {
      std::string allowed;
      for (const auto &e : s["enum"]) allowed += (allowed.empty() ? "" : ", ") + e.dump();
      return fail("must be one of " + allowed + ", not " + describe(v));
    }
  }
  if (s.contains("type") && !has_type(v, s["type"].get<std::string>()))
    return fail("must be " + std::string(s["type"] == "integer" ? "an integer" : s["type"] == "object" ? "an object" : s["type"] == "array" ? "an array" : s["type"] == "string" ? "a string" : s["type"] == "boolean" ? "a boolean" : "a number") + ", not " + describe(v));
  for (const char *key : {"oneOf", "anyOf"}) {
    if (!s.contains(key)) continue;
    std::vector<SchemaError> best;
    size_t matches = 0;
    for (const auto &alt : s[key]) {
      std::vector<SchemaError> errs;
      if (check(alt, v, ptr, &errs)) {
        matches++;
        continue;
      }
      // The alternative whose errors lie deepest explains best.
      if (best.empty() || errs.front().pointer.size() > best.front().pointer.size()) best = errs;
    }
    if (matches == 0) {
      // A value of the right general shape failed inside: report that.
      if (!best.empty() && best.front().pointer.size() > ptr.size()) {
        errors->insert(errors->end(), best.begin(), best.end());
        return false;
      }
      return fail("must be " + (s.contains("title") ? s["title"].get<std::string>() : std::string("one of the allowed forms")) + ", not " + describe(v));
    }
    if (std::string(key) == "oneOf" && matches > 1) return fail("matches more than one allowed form");
  }
  bool ok = true;
  if (v.is_object()) {
    // The object's own keys first: an object that lacks a required key or
    // has an unknown one is not of this form, and its values are not
    // looked at.  This keeps oneOf linear: the forms of an expression or a
    // statement differ in their keys, so only one form ever descends.
    const nlohmann::json *props = s.contains("properties") ? &s["properties"] : nullptr;
    if (s.contains("required"))
      for (const auto &r : s["required"])
        if (!v.contains(r.get<std::string>())) ok = fail("lacks the required \"" + r.get<std::string>() + "\"");
    if (s.contains("dependentRequired"))
      for (auto it = s["dependentRequired"].begin(); it != s["dependentRequired"].end(); ++it)
        if (v.contains(it.key()))
          for (const auto &r : it.value())
            if (!v.contains(r.get<std::string>()))
              ok = fail("has \"" + it.key() + "\" but lacks \"" + r.get<std::string>() + "\", which goes with it");
    const nlohmann::json *ap = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    if (ap && ap->is_boolean() && !ap->get<bool>())
      for (auto it = v.begin(); it != v.end(); ++it)
        if (!props || !props->contains(it.key())) ok = fail("has an unknown key \"" + it.key() + "\"");
    if (!ok) return false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string child = ptr + "/" + escape(it.key());
      if (props && props->contains(it.key())) {
        ok = check((*props)[it.key()], it.value(), child, errors) && ok;
      } else if (ap && ap->is_object()) {
        ok = check(*ap, it.value(), child, errors) && ok;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
      ok = fail("needs at least " + s["minItems"].dump() + " items, has " + std::to_string(v.size()));
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>())
      ok = fail("takes at most " + s["maxItems"].dump() + " items, has " + std::to_string(v.size()));
    // prefixItems: the first items' schemas, one each; items: the rest's.
    size_t first = 0;
    if (s.contains("prefixItems")) {
      const nlohmann::json &prefix = s["prefixItems"];
      for (; first < prefix.size() && first < v.size(); first++)
        ok = check(prefix[first], v[first], ptr + "/" + std::to_string(first), errors) && ok;
      first = prefix.size();
    }
    if (s.contains("items"))
      for (size_t i = first; i < v.size(); i++) ok = check(s["items"], v[i], ptr + "/" + std::to_string(i), errors) && ok;
  }
  if (v.is_string()) {
    const std::string str = v.get<std::string>();
    // Lengths in code points, as JSON Schema counts (the bytes that do
    // not continue a UTF-8 sequence).
    const size_t length = static_cast<size_t>(
        std::count_if(str.begin(), str.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
    if (s.contains("minLength") && length < s["minLength"].get<size_t>()) ok = fail("is too short");
    if (s.contains("maxLength") && length > s["maxLength"].get<size_t>())
      ok = fail(describe(v) + " is longer than " + s["maxLength"].dump() + " characters");
    if (s.contains("pattern")) {
      const std::string source = s["pattern"].get<std::string>();
      std::string error;
      const Pattern *p = compiled(source, &error);
      if (!p)
        ok = fail("cannot be checked: the schema's pattern " + source + " " + error);
      else if (!p->search(str))
        ok = fail(describe(v) + " does not match " + source);
    }
  }
  if (v.is_number()) {
    if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
      ok = fail("must be at least " + s["minimum"].dump());
    if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>())
      ok = fail("must be at most " + s["maximum"].dump());
  }
  return ok;
}

}  // namespace cad
