// common.cpp - see common.h.
#include "common.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "../lib/check.h"
#include "../lib/json_form.h"
#include "../lib/parser.h"

namespace cad::tool {

bool load_module(Session &s, const std::string &path, Module *out, bool check, const UserOps &ops) {
  std::string error;
  const uint32_t file = s.sm.load(path, &error);
  if (!file) throw UsageError(error);
  const size_t before = s.diags.error_count();
  const bool parsed = s.sm.file(file).json ? read_json_module(s.sm, file, out, &s.diags)
                                           : parse_dsl(s.sm, file, out, &s.diags);
  if (parsed && check) check_module(*out, &s.diags, ops);
  return s.diags.error_count() == before;
}

bool is_cadlib(const std::string &path) {
  if (path.size() >= 7 && path.compare(path.size() - 7, 7, ".cadlib") == 0) return true;
  std::string text, error;
  if (!read_file(path, kMaxSourceBytes, &text, &error)) return false;
  const size_t first = text.find_first_not_of(" \t\r\n");
  // (Parsed only if it may be one: a JSON algorithm file is parsed again
  // by its loader.)
  if (first == std::string::npos || text[first] != '{' || text.find("\"cadlib\"") == std::string::npos)
    return false;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("cadlib");
}

int report(Session &s, nlohmann::json extra) {
  if (s.json) {
    nlohmann::json j = std::move(extra);
    j["diagnostics"] = nlohmann::json::array();
    for (const Diagnostic &d : s.diags.list()) j["diagnostics"].push_back(render_json(s.sm, d));
    j["errors"] = s.diags.error_count();
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const Diagnostic &d : s.diags.list()) std::cerr << render_text(s.sm, d);
    if (s.diags.error_count() > 1) std::cerr << s.diags.error_count() << " errors\n";
  }
  return s.diags.has_errors() ? kDiagnostics : kOk;
}

int report(Session &s) { return report(s, nlohmann::json::object()); }

}  // namespace cad::tool
