// source.cpp - see source.h.
#include "source.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cad {

SourceManager::SourceManager() { files_.emplace_back(std::make_unique<SourceFile>()); }

uint32_t SourceManager::add(std::string path, std::string text) {
  auto f = std::make_unique<SourceFile>();
  f->json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  f->path = std::move(path);
  f->text = std::move(text);
  f->line_starts.push_back(0);
  for (size_t i = 0; i < f->text.size(); i++)
    if (f->text[i] == '\n') f->line_starts.push_back(static_cast<uint32_t>(i + 1));
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size() - 1);
}

bool read_file(const std::string &path, size_t limit, std::string *text, std::string *error, bool *too_large) {
  if (too_large) *too_large = false;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    *error = "cannot read " + path + ": it is a directory";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  // In chunks up to the limit: a device or a pipe may never end.
  text->clear();
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text->append(chunk, static_cast<size_t>(in.gcount()));
    if (text->size() > limit) {
      *error = "cannot read " + path + ": larger than " + std::to_string(limit) + " bytes";
      if (too_large) *too_large = true;
      return false;
    }
  }
  if (in.bad()) {
    *error = "cannot read " + path;
    return false;
  }
  return true;
}

uint32_t SourceManager::load(const std::string &path, std::string *error) {
  std::string text;
  if (!read_file(path, kMaxSourceBytes, &text, error)) return 0;
  return add(path, std::move(text));
}

std::string SourceManager::line_text(uint32_t file, uint32_t line) const {
  if (!file || file >= files_.size()) return {};
  const SourceFile &f = *files_[file];
  if (line == 0 || line > f.line_starts.size()) return {};
  size_t start = f.line_starts[line - 1];
  size_t end = f.text.find('\n', start);
  if (end == std::string::npos) end = f.text.size();
  std::string s = f.text.substr(start, end - start);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

Loc SourceManager::at(uint32_t file, size_t offset) const {
  const SourceFile &f = *files_[file];
  auto it = std::upper_bound(f.line_starts.begin(), f.line_starts.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - f.line_starts.begin());
  Loc loc;
  loc.file = file;
  loc.line = line;
  loc.col = static_cast<uint32_t>(offset - f.line_starts[line - 1] + 1);
  return loc;
}

std::string format_loc(const SourceManager &sm, const Loc &loc) {
  if (!loc.valid()) return {};
  std::string s = sm.path(loc.file);
  if (loc.line) return s + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  if (!loc.pointer.empty()) return s + ":" + loc.pointer;
  return s;
}

}  // namespace cad
