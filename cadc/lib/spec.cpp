// spec.cpp - see spec.h.
#include "spec.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "schema.h"
#include "source.h"

namespace cad {

namespace {

bool number(const std::string &s, int64_t *out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

bool parse_spec(const std::string &text, std::vector<int64_t> *out, std::string *error) {
  out->clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t dots = item.find("..");
    int64_t lo, hi;
    if (dots == std::string::npos) {
      if (!number(item, &lo)) {
        *error = "'" + item + "' in '" + text + "' is not a number or a range a..b";
        return false;
      }
      hi = lo;
    } else if (!number(item.substr(0, dots), &lo) || !number(item.substr(dots + 2), &hi)) {
      *error = "'" + item + "' in '" + text + "' is not a range a..b";
      return false;
    }
    if (hi < lo) {
      *error = "range " + item + " is reversed";
      return false;
    }
    if (hi - lo > 1000000) {
      *error = "range " + item + " has more than a million values";
      return false;
    }
    for (int64_t v = lo; v <= hi; v++) out->push_back(v);
  }
  if (out->empty()) {
    *error = "empty value list";
    return false;
  }
  return true;
}

std::string format_spec(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) j++;
    if (!s.empty()) s += ",";
    s += std::to_string(v[i]);
    if (j > i) s += ".." + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}

bool parse_setting(const std::string &text, std::string *name, std::vector<int64_t> *values,
                   std::string *error) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    *error = "'" + text + "' is not name=value";
    return false;
  }
  *name = text.substr(0, eq);
  return parse_spec(text.substr(eq + 1), values, error);
}

bool load_machine(const std::string &path, Machine *out, std::string *error) {
  std::string text;
  if (!read_file(path, kMaxSourceBytes, &text, error)) return false;
  if (!parse_machine(text, out, error)) {
    *error = path + (error->empty() || (*error)[0] != '/' ? ": " : ":") + *error;
    return false;
  }
  return true;
}

bool parse_machine(const std::string &text, Machine *out, std::string *error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {  // parse_error, or out_of_range for a number that overflows
    *error = "invalid JSON: " + json_error_text(e);
    return false;
  }
  std::vector<SchemaError> errors;
  if (!Schema::builtin("topology.schema.json").validate(j, &errors)) {
    *error = (errors[0].pointer.empty() ? "/" : errors[0].pointer) + ": " + errors[0].message;
    return false;
  }
  return Machine::from_json(j, out, error);
}

}  // namespace cad
