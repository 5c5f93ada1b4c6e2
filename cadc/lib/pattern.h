// pattern.h - the regular expressions of JSON Schema's "pattern", matched
// in linear time.
//
// The schemas' patterns are ours; the strings they are matched against
// come from files cadc and the runtime did not write (libraries, algorithm
// files).  Not std::regex: libstdc++'s matcher recurses once per
// character, so a 100 000-character name in a .cadlib would overflow the
// stack (a crash where the loader owes a clear error), and compiling its
// bracket expressions costs each rank's cadrt_init locale lookups for
// every byte.
//
// Pattern takes the subset JSON Schema recommends for interoperability
// (draft 2020-12, "Regular Expressions"), in ECMAScript syntax: literal
// characters; '.'; classes [abc], [a-z], [^...] with the escapes below;
// \d \w \s \D \W \S; the escapes \n \r \t \f \v \0 and \ before any
// punctuation; groups (...) and (?:...); alternation |; the quantifiers
// * + ? {n} {n,} {n,m} (a lazy '?' after one is accepted: it changes
// which match is found, not whether there is one); anchors ^ and $.
// Anything else (backreferences, lookaround, \b, \uXXXX, ...) is refused
// when compiling, with the offset.  Matching is on bytes: '.' and a
// negated class match any byte but the line ends \n and \r (for '.') or
// those listed; a quantified class counts bytes, not code points, on
// non-ASCII text (our patterns do not depend on that).
//
// search() is a Pike VM without captures (Thompson's construction, states
// advanced in lockstep): O(length x program size) time, no recursion, and
// memory bounded by the program size.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cad {

class Pattern {
 public:
  // Compiles src; false with *error ("at offset 3: ...") if it is not in
  // the subset or would compile to more than kMaxProgram instructions
  // (counted repetitions are expanded).
  static constexpr size_t kMaxProgram = 20000;
  static bool compile(std::string_view src, Pattern *out, std::string *error);

  // Whether some substring of s matches (ECMAScript's search: ^ and $
  // anchor at the ends of s).
  bool search(std::string_view s) const;

  struct Insn {
    enum Op : uint8_t { Set, Split, Jump, Begin, End, Match } op;
    uint32_t x = 0, y = 0;  // Set: the set's index; Split: both targets; Jump: x
  };

 private:
  std::vector<Insn> prog_;
  std::vector<std::bitset<256>> sets_;
  friend class PatternCompiler;
};

}  // namespace cad
