// lexer.h - tokens of the DSL.  Comments (# to the end of the line) do not
// reach the parser as tokens: comment lines of their own are kept, with
// their offsets, so that the parser can attach them to the next item.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diag.h"
#include "source.h"

namespace cad {

enum class Tok {
  End,
  Ident,
  Int,
  String,
  Punct,  // text holds the spelling: { } [ ] ( ) : , = .. + - * / % < > <= >= == != ! ~ & | ^ << >> ? && ||
};

struct Token {
  Tok kind = Tok::End;
  std::string text;  // identifier, punctuation, string contents, digits
  int64_t value = 0; // Int
  size_t offset = 0;
};

struct Comment {
  size_t offset;     // of the '#'
  std::string text;  // after the '#', one leading space removed
  bool own_line;     // nothing but blanks before it on its line
};

struct Lexed {
  std::vector<Token> tokens;  // ends with Tok::End
  std::vector<Comment> comments;
};

// Tokenises file; on a bad character or literal, reports and returns false.
bool lex(const SourceManager &sm, uint32_t file, Lexed *out, Diagnostics *diags);

}  // namespace cad
