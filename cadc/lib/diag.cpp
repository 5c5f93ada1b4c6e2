// diag.cpp - see diag.h.
#include "diag.h"

#include <algorithm>

#include "cad_core.h"

#include <nlohmann/json.hpp>

namespace cad {

namespace {
struct CodeInfo {
  const char *id;
  const char *what;
};
const CodeInfo kCodes[] = {
#define CAD_X(name, code, what) {code, what},
    CAD_DIAG_CODES(CAD_X)
#undef CAD_X
};
}  // namespace

const char *code_id(Code c) { return kCodes[static_cast<int>(c)].id; }
const char *code_what(Code c) { return kCodes[static_cast<int>(c)].what; }

Diagnostic &Diagnostics::error(Code code, Loc loc, std::string message) {
  Diagnostic d;
  d.code = code;
  d.loc = std::move(loc);
  d.message = std::move(message);
  list_.push_back(std::move(d));
  return list_.back();
}

Diagnostic &Diagnostics::warning(Code code, Loc loc, std::string message) {
  Diagnostic &d = error(code, std::move(loc), std::move(message));
  d.severity = Severity::Warning;
  return d;
}

void Diagnostics::append(const Diagnostics &other) {
  list_.insert(list_.end(), other.list_.begin(), other.list_.end());
}

bool Diagnostics::has_errors() const { return error_count() > 0; }

size_t Diagnostics::error_count() const {
  size_t n = 0;
  for (const Diagnostic &d : list_) n += d.severity == Severity::Error;
  return n;
}

namespace {

const char *severity_name(Severity s) {
  return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note";
}

// "file:line:col: <sev>: <message>" and, for a line location, the quoted
// line with a caret under the column (tabs kept so that the caret aligns).
void located(std::string &out, const SourceManager &sm, const Loc &loc, const char *sev,
             const std::string &message, const std::string &suffix) {
  std::string where = format_loc(sm, loc);
  out += where.empty() ? "cadc" : where;
  out += ": ";
  out += sev;
  out += ": ";
  out += message;
  out += suffix;
  out += '\n';
  if (!loc.valid() || !loc.line) return;
  std::string text = sm.line_text(loc.file, loc.line);
  if (text.empty()) return;
  // A long line is quoted as a window of about kWindow bytes around the
  // column, cut at character boundaries.
  constexpr size_t kWindow = 160;
  size_t col = loc.col ? loc.col - 1 : 0;  // byte offset in the line
  size_t start = 0, end = text.size();
  auto continuation = [&](size_t k) { return (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80; };
  if (text.size() > kWindow) {
    start = col > kWindow / 2 ? col - kWindow / 2 : 0;
    while (start < text.size() && continuation(start)) start++;
    end = std::min(text.size(), start + kWindow);
    while (end < text.size() && end > start && continuation(end)) end--;
  }
  // Quoted as valid UTF-8 (the line may hold the invalid byte reported):
  // a byte that does not start a valid sequence shows as U+FFFD.  The
  // caret goes under the column's character: one blank (or tab) per
  // character before it.
  std::string quoted = start > 0 ? "..." : "", pad = start > 0 ? "   " : "";
  for (size_t k = start; k < end;) {
    const uint32_t len = cad_utf8_length(reinterpret_cast<const __u8 *>(text.data()), static_cast<__u32>(k),
                                         static_cast<__u32>(text.size()));
    const size_t take = len ? std::min<size_t>(len, end - k) : 1;
    if (len) quoted.append(text, k, take);
    else quoted += "\xef\xbf\xbd";
    if (k < col) pad += text[k] == '\t' ? '\t' : ' ';
    k += take;
  }
  if (end < text.size()) quoted += "...";
  out += "    " + quoted + "\n    " + pad + "^\n";
}

}  // namespace

std::string render_text(const SourceManager &sm, const Diagnostic &d) {
  std::string out;
  located(out, sm, d.loc, severity_name(d.severity), d.message,
          std::string(" [") + code_id(d.code) + "]");
  if (!d.instance.empty() || d.rank >= 0) {
    out += "  in instance";
    if (!d.instance.empty()) out += " " + d.instance;
    if (d.rank >= 0) out += (d.instance.empty() ? " rank " : ", rank ") + std::to_string(d.rank);
    out += '\n';
  }
  for (const std::string &w : d.witness) out += "  " + w + "\n";
  for (const Note &n : d.notes) located(out, sm, n.loc, "note", n.message, "");
  return out;
}

nlohmann::json render_json(const SourceManager &sm, const Diagnostic &d) {
  auto loc_json = [&](const Loc &loc) {
    nlohmann::json j = nlohmann::json::object();
    if (!loc.valid()) return j;
    j["file"] = sm.path(loc.file);
    if (loc.line) {
      j["line"] = loc.line;
      j["column"] = loc.col;
    }
    if (!loc.pointer.empty()) j["pointer"] = loc.pointer;
    return j;
  };
  nlohmann::json j;
  j["severity"] = severity_name(d.severity);
  j["code"] = code_id(d.code);
  j["message"] = d.message;
  j["location"] = loc_json(d.loc);
  if (!d.instance.empty()) j["instance"] = d.instance;
  if (d.rank >= 0) j["rank"] = d.rank;
  if (!d.witness.empty()) j["witness"] = d.witness;
  j["notes"] = nlohmann::json::array();
  for (const Note &n : d.notes) j["notes"].push_back({{"message", n.message}, {"location", loc_json(n.loc)}});
  return j;
}

}  // namespace cad
