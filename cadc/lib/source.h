// source.h - source files and locations.  Every AST node, every emitted
// operation and every diagnostic carries a Loc; a Loc names a file by
// index, and a line and column (1-based) or, for the JSON form, a JSON
// pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cad {

struct Loc {
  uint32_t file = 0;      // index in the SourceManager; 0 = no file
  uint32_t line = 0;      // 1-based; 0 = none (then pointer may be set)
  uint32_t col = 0;
  std::string pointer;    // JSON pointer, for locations in the JSON form

  bool valid() const { return file != 0; }
};

struct SourceFile {
  std::string path;   // as given by the user
  std::string text;
  bool json = false;
  std::vector<uint32_t> line_starts;  // byte offset of each line
};

// The largest file load() reads (algorithm files, topologies, rules,
// libraries).
constexpr size_t kMaxSourceBytes = size_t{64} << 20;

// Reads a whole file of at most limit bytes (a directory, a device or a
// pipe that never ends are errors, not hangs); false with *error set, and
// *too_large if that was the reason.
bool read_file(const std::string &path, size_t limit, std::string *text, std::string *error,
               bool *too_large = nullptr);

// Owns the text of every file read, so that diagnostics can quote lines.
class SourceManager {
 public:
  SourceManager();
  // Registers text read from path; returns its index.
  uint32_t add(std::string path, std::string text);
  // Reads a file; returns 0 and sets *error on failure.
  uint32_t load(const std::string &path, std::string *error);
  const SourceFile &file(uint32_t index) const { return *files_[index]; }
  std::string path(uint32_t index) const { return index ? files_[index]->path : std::string(); }
  // The text of a 1-based line, without its newline.
  std::string line_text(uint32_t file, uint32_t line) const;
  // Line and column of a byte offset.
  Loc at(uint32_t file, size_t offset) const;

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

// "file:line:col", "file:/json/pointer" or "file".
std::string format_loc(const SourceManager &sm, const Loc &loc);

}  // namespace cad
