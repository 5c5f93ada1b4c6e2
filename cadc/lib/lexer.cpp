// lexer.cpp - see lexer.h.
#include "lexer.h"

#include <cctype>
#include <cstdio>

#include "cad_core.h"

namespace cad {

bool lex(const SourceManager &sm, uint32_t file, Lexed *out, Diagnostics *diags) {
  const std::string &s = sm.file(file).text;
  // Source files are UTF-8 (the JSON form and the libraries carry them).
  for (size_t k = 0; k < s.size();) {
    const uint32_t len = cad_utf8_length(reinterpret_cast<const __u8 *>(s.data()), static_cast<__u32>(k),
                                         static_cast<__u32>(s.size()));
    if (!len) {
      char byte[8];
      snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(s[k]));
      diags->error(Code::Token, sm.at(file, k), std::string("invalid UTF-8 (byte ") + byte + "): a source file is UTF-8 text");
      return false;
    }
    k += len;
  }
  size_t i = 0;
  bool line_blank = true;  // only blanks since the start of the line
  static const char *const kTwo[] = {"..", "<=", ">=", "==", "!=", "<<", ">>", "&&", "||"};
  static const std::string kOne = "{}[]():,=+-*/%<>!~&|^?";

  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      line_blank = true;
      i++;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      i++;
      continue;
    }
    if (c == '#') {
      size_t end = s.find('\n', i);
      if (end == std::string::npos) end = s.size();
      std::string text = s.substr(i + 1, end - i - 1);
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (!text.empty() && text[0] == ' ') text.erase(0, 1);
      out->comments.push_back({i, text, line_blank});
      i = end;
      continue;
    }
    line_blank = false;
    Token t;
    t.offset = i;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) j++;
      t.kind = Tok::Ident;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      int64_t v = 0;
      bool overflow = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) {
        if (s[j] != '_') {
          int d = s[j] - '0';
          if (v > (INT64_MAX - d) / 10) overflow = true;
          else v = v * 10 + d;
        }
        j++;
      }
      if (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])))) {
        diags->error(Code::Token, sm.at(file, j),
                     std::string("invalid digit '") + s[j] + "' in a number");
        return false;
      }
      if (overflow) {
        diags->error(Code::Overflow, sm.at(file, i), "integer literal does not fit in 64 bits");
        return false;
      }
      t.kind = Tok::Int;
      t.text = s.substr(i, j - i);
      t.value = v;
      i = j;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') j++;
      if (j >= s.size() || s[j] != '"') {
        diags->error(Code::Token, sm.at(file, i), "unterminated string");
        return false;
      }
      t.kind = Tok::String;
      t.text = s.substr(i + 1, j - i - 1);
      i = j + 1;
    } else {
      t.kind = Tok::Punct;
      for (const char *two : kTwo)
        if (s.compare(i, 2, two) == 0) t.text = two;
      if (t.text.empty() && kOne.find(c) != std::string::npos) t.text = std::string(1, c);
      if (t.text.empty()) {
        // The file is valid UTF-8 (checked above): quote the character.
        const uint32_t len = cad_utf8_length(reinterpret_cast<const __u8 *>(s.data()), static_cast<__u32>(i),
                                             static_cast<__u32>(s.size()));
        std::string shown;
        if (static_cast<unsigned char>(c) >= 0x80) {
          shown = "'" + s.substr(i, len) + "' (names are ASCII letters, digits and '_')";
        } else if (std::isprint(static_cast<unsigned char>(c))) {
          shown = std::string("'") + c + "'";
        } else {
          char byte[8];
          snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(c));
          shown = std::string("byte ") + byte;
        }
        diags->error(Code::Token, sm.at(file, i), "unexpected character " + shown);
        return false;
      }
      i += t.text.size();
    }
    out->tokens.push_back(std::move(t));
  }
  Token end;
  end.offset = s.size();
  out->tokens.push_back(end);
  return true;
}

}  // namespace cad
