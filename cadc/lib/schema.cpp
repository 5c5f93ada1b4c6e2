// schema.cpp - see schema.h.
#include "schema.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>

#include "pattern.h"
#include "schemas_embedded.h"

namespace cad {

std::string json_error_text(const nlohmann::json::exception &e, bool without_position) {
  std::string what = e.what();
  if (!what.empty() && what[0] == '[') {
    const size_t end = what.find("] ");
    if (end != std::string::npos) what.erase(0, end + 2);
  }
  if (without_position && what.compare(0, 15, "parse error at ") == 0) {
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what.erase(0, colon + 2);
  }
  constexpr size_t kExcerpt = 40;
  const std::string quote = "last read: '";
  const size_t at = what.find(quote);
  if (at != std::string::npos && what.size() > at + quote.size() + kExcerpt + 1) {
    const size_t from = at + quote.size();
    const size_t keep = what.size() - kExcerpt - 1;  // the last 40 characters and the closing quote
    what = what.substr(0, from) + "..." + what.substr(keep);
  }
  return what;
}

bool parse_json_strict(const std::string &text, nlohmann::json *out, SchemaError *error) {
  // The containers open at the parser's position, outermost first: an
  // object's keys so far and its current key, an array's current index.
  struct Open {
    bool object;
    std::set<std::string> keys;
    std::string key;
    size_t index = 0;
  };
  std::vector<Open> open;
  bool duplicate = false;
  auto where = [&]() {
    nlohmann::json::json_pointer p;
    for (const Open &o : open) p = o.object ? p / o.key : p / o.index;
    return p;
  };
  auto value_done = [&]() {
    if (!open.empty() && !open.back().object) open.back().index++;
  };
  const nlohmann::json::parser_callback_t see = [&](int, nlohmann::json::parse_event_t event,
                                                    nlohmann::json &parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start: open.push_back({true, {}, {}, 0}); break;
      case E::array_start: open.push_back({false, {}, {}, 0}); break;
      case E::object_end:
      case E::array_end:
        open.pop_back();
        value_done();
        break;
      case E::value: value_done(); break;
      case E::key: {
        Open &o = open.back();
        o.key = parsed.get_ref<const std::string &>();
        if (!o.keys.insert(o.key).second && !duplicate) {
          duplicate = true;
          error->pointer = where().to_string();
          const std::string quoted =
              nlohmann::json(o.key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
          error->message =
              "the key " + quoted + " appears twice in this object (a reader would keep one value and drop the other)";
        }
        break;
      }
    }
    return true;
  };
  try {
    *out = nlohmann::json::parse(text, see);
  } catch (const nlohmann::json::exception &e) {  // parse_error, or out_of_range for a number that overflows
    *error = {"", json_error_text(e)};
    return false;
  }
  return !duplicate;
}

std::string content_hash(const nlohmann::json &doc) {
  // The dump of doc without "hash", made without copying doc (a deep copy
  // of every source of a library): an object's members are in key order,
  // as dump() writes them.
  std::string text;
  if (doc.is_object()) {
    text = "{";
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      if (it.key() == "hash") continue;
      if (text.size() > 1) text += ',';
      text += nlohmann::json(it.key()).dump();
      text += ':';
      text += it.value().dump();
    }
    text += '}';
  } else {
    text = doc.dump();
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// The keyword k of schema object s, or nullptr: one lookup, where
// contains() and operator[] made two.
const nlohmann::json *keyword(const nlohmann::json &s, std::string_view k) {
  const auto it = s.find(k);
  return it == s.end() ? nullptr : &*it;
}

}  // namespace

// The JSON pointer of a value, rendered only when an error needs it (a
// string per value visited would be most of the validator's time, and
// every rank's cadrt_init validates the library).
struct Schema::Where {
  const Where *up = nullptr;
  const std::string *key = nullptr;  // an object's member, else
  size_t index = 0;                  // an array's item (the root has no up)

  std::string render() const {
    std::vector<const Where *> chain;
    for (const Where *w = this; w->up; w = w->up) chain.push_back(w);
    std::string out;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      out += '/';
      if (!(*it)->key) {
        out += std::to_string((*it)->index);
        continue;
      }
      for (char c : *(*it)->key) {
        if (c == '~')
          out += "~0";
        else if (c == '/')
          out += "~1";
        else
          out += c;
      }
    }
    return out;
  }
};

namespace {

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
  for (int depth = 0; depth < 32 && cur->is_object(); depth++) {
    const nlohmann::json *r = keyword(*cur, "$ref");
    if (!r) break;
    const std::string &ref = r->get_ref<const std::string &>();
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
  return check(doc_, v, Where{}, errors);
}

bool Schema::validate_def(const std::string &def, const nlohmann::json &v, const std::string &pointer,
                          std::vector<SchemaError> *errors) const {
  const size_t first = errors->size();
  const bool ok = check(doc_.at("$defs").at(def), v, Where{}, errors);
  for (size_t i = first; i < errors->size(); i++) (*errors)[i].pointer = pointer + (*errors)[i].pointer;
  return ok;
}

bool Schema::check(const nlohmann::json &schema, const nlohmann::json &v, const Where &where,
                   std::vector<SchemaError> *errors) const {
  const nlohmann::json &s = resolve(schema);
  auto fail = [&](const std::string &msg) {
    errors->push_back({where.render(), msg});
    return false;
  };
  if (const auto *c = keyword(s, "const"); c && v != *c) return fail("must be " + c->dump() + ", not " + describe(v));
  if (const auto *e = keyword(s, "enum")) {
    bool found = false;
    for (const auto &x : *e) found |= v == x;
    if (!found) {
      std::string allowed;
      for (const auto &x : *e) allowed += (allowed.empty() ? "" : ", ") + x.dump();
      return fail("must be one of " + allowed + ", not " + describe(v));
    }
  }
  if (const auto *t = keyword(s, "type"); t && !has_type(v, t->get_ref<const std::string &>())) {
    const std::string &name = t->get_ref<const std::string &>();
    return fail("must be " + std::string(name == "integer" ? "an integer" : name == "object" ? "an object" : name == "array" ? "an array" : name == "string" ? "a string" : name == "boolean" ? "a boolean" : "a number") + ", not " + describe(v));
  }
  for (const char *key : {"oneOf", "anyOf"}) {
    const auto *alts = keyword(s, key);
    if (!alts) continue;
    std::vector<SchemaError> best;
    size_t matches = 0;
    for (const auto &alt : *alts) {
      std::vector<SchemaError> errs;
      if (check(alt, v, where, &errs)) {
        matches++;
        continue;
      }
      // The alternative whose errors lie deepest explains best.
      if (best.empty() || errs.front().pointer.size() > best.front().pointer.size()) best = errs;
    }
    if (matches == 0) {
      // A value of the right general shape failed inside: report that.
      if (!best.empty() && best.front().pointer.size() > where.render().size()) {
        errors->insert(errors->end(), best.begin(), best.end());
        return false;
      }
      const auto *title = keyword(s, "title");
      return fail("must be " + (title ? title->get<std::string>() : std::string("one of the allowed forms")) + ", not " + describe(v));
    }
    if (std::string(key) == "oneOf" && matches > 1) return fail("matches more than one allowed form");
  }
  bool ok = true;
  if (v.is_object()) {
    // The object's own keys first: an object that lacks a required key or
    // has an unknown one is not of this form, and its values are not
    // looked at.  This keeps oneOf linear: the forms of an expression or a
    // statement differ in their keys, so only one form ever descends.
    const nlohmann::json *props = keyword(s, "properties");
    if (const auto *req = keyword(s, "required"))
      for (const auto &r : *req)
        if (!v.contains(r.get_ref<const std::string &>()))
          ok = fail("lacks the required \"" + r.get<std::string>() + "\"");
    if (const auto *dep = keyword(s, "dependentRequired"))
      for (auto it = dep->begin(); it != dep->end(); ++it)
        if (v.contains(it.key()))
          for (const auto &r : it.value())
            if (!v.contains(r.get_ref<const std::string &>()))
              ok = fail("has \"" + it.key() + "\" but lacks \"" + r.get<std::string>() + "\", which goes with it");
    const nlohmann::json *ap = keyword(s, "additionalProperties");
    if (ap && ap->is_boolean() && !ap->get<bool>())
      for (auto it = v.begin(); it != v.end(); ++it)
        if (!props || !props->contains(it.key())) ok = fail("has an unknown key \"" + it.key() + "\"");
    if (!ok) return false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const Where child{&where, &it.key(), 0};
      const nlohmann::json *sub = props ? keyword(*props, it.key()) : nullptr;
      if (sub) {
        ok = check(*sub, it.value(), child, errors) && ok;
      } else if (ap && ap->is_object()) {
        ok = check(*ap, it.value(), child, errors) && ok;
      }
    }
  }
  if (v.is_array()) {
    if (const auto *m = keyword(s, "minItems"); m && v.size() < m->get<size_t>())
      ok = fail("needs at least " + m->dump() + " items, has " + std::to_string(v.size()));
    if (const auto *m = keyword(s, "maxItems"); m && v.size() > m->get<size_t>())
      ok = fail("takes at most " + m->dump() + " items, has " + std::to_string(v.size()));
    // prefixItems: the first items' schemas, one each; items: the rest's.
    size_t first = 0;
    if (const auto *prefix = keyword(s, "prefixItems")) {
      for (; first < prefix->size() && first < v.size(); first++)
        ok = check((*prefix)[first], v[first], Where{&where, nullptr, first}, errors) && ok;
      first = prefix->size();
    }
    if (const auto *items = keyword(s, "items"))
      for (size_t i = first; i < v.size(); i++) ok = check(*items, v[i], Where{&where, nullptr, i}, errors) && ok;
  }
  if (v.is_string()) {
    const std::string &str = v.get_ref<const std::string &>();
    const auto *min_len = keyword(s, "minLength");
    const auto *max_len = keyword(s, "maxLength");
    if (min_len || max_len) {
      // Lengths in code points, as JSON Schema counts (the bytes that do
      // not continue a UTF-8 sequence).
      const size_t length = static_cast<size_t>(std::count_if(
          str.begin(), str.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
      if (min_len && length < min_len->get<size_t>())
        ok = fail(describe(v) + " is shorter than " + min_len->dump() + " character" +
                  (min_len->get<size_t>() == 1 ? "" : "s"));
      if (max_len && length > max_len->get<size_t>())
        ok = fail(describe(v) + " is longer than " + max_len->dump() + " characters");
    }
    if (const auto *pat = keyword(s, "pattern")) {
      const std::string &source = pat->get_ref<const std::string &>();
      std::string error;
      const Pattern *p = compiled(source, &error);
      if (!p)
        ok = fail("cannot be checked: the schema's pattern " + source + " " + error);
      else if (!p->search(str))
        ok = fail(describe(v) + " does not match " + source);
    }
  }
  if (v.is_number()) {
    if (const auto *m = keyword(s, "minimum"); m && v.get<double>() < m->get<double>())
      ok = fail("must be at least " + m->dump());
    if (const auto *m = keyword(s, "maximum"); m && v.get<double>() > m->get<double>())
      ok = fail("must be at most " + m->dump());
  }
  return ok;
}

}  // namespace cad
