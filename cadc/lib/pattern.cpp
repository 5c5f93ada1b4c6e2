// pattern.cpp - see pattern.h.
#include "pattern.h"

#include <memory>

namespace cad {

// Parses into a tree, then emits the tree as a program (Thompson's
// construction).  Nesting is bounded, so the recursion is too.
class PatternCompiler {
 public:
  PatternCompiler(std::string_view src, Pattern *out) : src_(src), out_(out) {}

  bool run(std::string *error) {
    std::unique_ptr<Node> tree = alternation(0);
    if (tree && pos_ < src_.size()) fail("an unbalanced ')'");
    if (!error_.empty()) {
      *error = "at offset " + std::to_string(err_at_) + ": " + error_;
      return false;
    }
    out_->prog_.clear();
    emit(*tree);
    if (out_->prog_.size() + 1 > Pattern::kMaxProgram) {
      *error = "the pattern is too large (over " + std::to_string(Pattern::kMaxProgram) +
               " instructions with its counted repetitions expanded)";
      out_->prog_.clear();
      return false;
    }
    out_->prog_.push_back({Pattern::Insn::Match});
    return true;
  }

 private:
  static constexpr int kMaxDepth = 100;
  static constexpr uint32_t kMaxCount = 1000;
  static constexpr uint32_t kUnbounded = UINT32_MAX;

  struct Node {
    enum Kind { Set, Begin, End, Cat, Alt, Repeat } kind;
    uint32_t set = 0;                          // Set: index into the sets
    uint32_t min = 0, max = 0;                 // Repeat
    std::vector<std::unique_ptr<Node>> kids;   // Cat, Alt, Repeat (one)
    explicit Node(Kind k) : kind(k) {}
  };
  using Set = std::bitset<256>;

  std::string_view src_;
  Pattern *out_;
  size_t pos_ = 0;
  std::string error_;
  size_t err_at_ = 0;

  bool at_end() const { return pos_ >= src_.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(src_[pos_]); }

  std::nullptr_t fail(const std::string &why) {
    if (error_.empty()) {
      error_ = why;
      err_at_ = pos_;
    }
    return nullptr;
  }

  std::unique_ptr<Node> set_node(const Set &s) {
    auto n = std::make_unique<Node>(Node::Set);
    n->set = static_cast<uint32_t>(out_->sets_.size());
    out_->sets_.push_back(s);
    return n;
  }

  static Set range(int lo, int hi) {
    Set s;
    for (int c = lo; c <= hi; c++) s.set(static_cast<size_t>(c));
    return s;
  }
  static Set of(const char *chars) {
    Set s;
    for (; *chars; chars++) s.set(static_cast<unsigned char>(*chars));
    return s;
  }

  std::unique_ptr<Node> alternation(int depth) {
    if (depth > kMaxDepth) return fail("groups nested more than " + std::to_string(kMaxDepth) + " deep");
    auto alt = std::make_unique<Node>(Node::Alt);
    for (;;) {
      auto cat = std::make_unique<Node>(Node::Cat);
      while (!at_end() && peek() != '|' && peek() != ')') {
        std::unique_ptr<Node> item = repeat(depth);
        if (!item) return nullptr;
        cat->kids.push_back(std::move(item));
      }
      alt->kids.push_back(std::move(cat));
      if (at_end() || peek() != '|') break;
      pos_++;
    }
    return alt;
  }

  // A decimal count of a quantifier; false if there is none here.
  bool count(uint32_t *out) {
    if (at_end() || peek() < '0' || peek() > '9') return false;
    uint64_t v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxCount) v = kMaxCount + 1;
      pos_++;
    }
    *out = static_cast<uint32_t>(v);
    return true;
  }

  std::unique_ptr<Node> repeat(int depth) {
    std::unique_ptr<Node> atom_node = atom(depth);
    if (!atom_node || at_end()) return atom_node;
    uint32_t min, max;
    const unsigned char q = peek();
    if (q == '*' || q == '+' || q == '?') {
      min = q == '+';
      max = q == '?' ? 1 : kUnbounded;
      pos_++;
    } else if (q == '{') {
      const size_t brace = pos_++;
      if (!count(&min)) {
        pos_ = brace;
        return fail("'{' is not a quantifier {n}, {n,} or {n,m} (escape it: \\{)");
      }
      max = min;
      if (!at_end() && peek() == ',') {
        pos_++;
        if (!count(&max)) max = kUnbounded;
      }
      if (at_end() || peek() != '}') {
        pos_ = brace;
        return fail("'{' is not a quantifier {n}, {n,} or {n,m} (escape it: \\{)");
      }
      pos_++;
      if (min > kMaxCount || (max != kUnbounded && max > kMaxCount))
        return fail("a count above " + std::to_string(kMaxCount));
      if (max < min) return fail("a quantifier {n,m} with m < n");
    } else {
      return atom_node;
    }
    if (atom_node->kind == Node::Begin || atom_node->kind == Node::End) return fail("an anchor cannot repeat");
    if (!at_end() && peek() == '?') pos_++;  // lazy: the same language
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'))
      return fail("nothing to repeat (two quantifiers in a row)");
    auto r = std::make_unique<Node>(Node::Repeat);
    r->min = min;
    r->max = max;
    r->kids.push_back(std::move(atom_node));
    return r;
  }

  std::unique_ptr<Node> atom(int depth) {
    const unsigned char c = peek();
    switch (c) {
      case '(': {
        pos_++;
        if (!at_end() && peek() == '?') {
          if (pos_ + 1 < src_.size() && src_[pos_ + 1] == ':') {
            pos_ += 2;
          } else {
            return fail("lookaround and named groups are not supported");
          }
        }
        std::unique_ptr<Node> inner = alternation(depth + 1);
        if (!inner) return nullptr;
        if (at_end() || peek() != ')') return fail("an unterminated '('");
        pos_++;
        return inner;
      }
      case '[': return bracket();
      case '.': {
        pos_++;
        Set s;
        s.set();
        s.reset('\n');
        s.reset('\r');
        return set_node(s);
      }
      case '^': pos_++; return std::make_unique<Node>(Node::Begin);
      case '$': pos_++; return std::make_unique<Node>(Node::End);
      case '\\': {
        Set s;
        if (!escape(false, &s, nullptr)) return nullptr;
        return set_node(s);
      }
      case '*': case '+': case '?': case '{': return fail("nothing to repeat");
      case ']': case '}': return fail(std::string("an unescaped '") + static_cast<char>(c) + "' (escape it)");
      default: {
        pos_++;
        Set s;
        s.set(c);
        return set_node(s);
      }
    }
  }

  // An escape at pos_ ('\'): its set in *s; *single its byte if it is
  // one character (not a class such as \d), else -1.
  bool escape(bool in_class, Set *s, int *single) {
    pos_++;
    if (at_end()) return fail("a '\\' at the end"), false;
    const unsigned char e = peek();
    int byte = -1;
    switch (e) {
      case 'd': *s = range('0', '9'); break;
      case 'D': *s = ~range('0', '9'); break;
      case 'w': *s = range('a', 'z') | range('A', 'Z') | range('0', '9') | of("_"); break;
      case 'W': *s = ~(range('a', 'z') | range('A', 'Z') | range('0', '9') | of("_")); break;
      case 's': *s = of(" \t\n\r\f\v"); break;
      case 'S': *s = ~of(" \t\n\r\f\v"); break;
      case 'n': byte = '\n'; break;
      case 'r': byte = '\r'; break;
      case 't': byte = '\t'; break;
      case 'f': byte = '\f'; break;
      case 'v': byte = '\v'; break;
      case '0':
        if (pos_ + 1 < src_.size() && src_[pos_ + 1] >= '0' && src_[pos_ + 1] <= '9')
          return fail("octal escapes are not supported"), false;
        byte = 0;
        break;
      case 'b':
        if (!in_class) return fail("word boundaries (\\b) are not supported"), false;
        byte = '\b';
        break;
      default:
        if (e >= '1' && e <= '9') return fail("backreferences are not supported"), false;
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || e >= 0x80)
          return fail(std::string("the escape \\") + static_cast<char>(e) + " is not supported"), false;
        byte = e;  // \ before punctuation: the character itself
    }
    pos_++;
    if (byte >= 0) {
      s->reset();
      s->set(static_cast<size_t>(byte));
    }
    if (single) *single = byte;
    return true;
  }

  std::unique_ptr<Node> bracket() {
    const size_t open = pos_++;
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      pos_++;
    }
    Set s;
    for (;;) {
      if (at_end()) {
        pos_ = open;
        return fail("an unterminated '['");
      }
      if (peek() == ']') break;
      int lo;
      Set one;
      if (!member(&one, &lo)) return nullptr;
      if (pos_ + 1 < src_.size() && peek() == '-' && src_[pos_ + 1] != ']') {
        pos_++;
        int hi;
        Set other;
        if (!member(&other, &hi)) return nullptr;
        if (lo < 0 || hi < 0) return fail("a range in a class must be between two characters");
        if (hi < lo) return fail("a range out of order in a class");
        one = range(lo, hi);
      }
      s |= one;
    }
    pos_++;
    return set_node(negate ? ~s : s);
  }

  // One member of a class: a byte or an escape.
  bool member(Set *s, int *single) {
    if (peek() == '\\') return escape(true, s, single);
    *single = peek();
    s->reset();
    s->set(peek());
    pos_++;
    return true;
  }

  // ---------------------------------------------------------------- emission

  std::vector<Pattern::Insn> &prog() { return out_->prog_; }
  uint32_t here() { return static_cast<uint32_t>(prog().size()); }
  uint32_t put(Pattern::Insn::Op op, uint32_t x = 0, uint32_t y = 0) {
    prog().push_back({op, x, y});
    return here() - 1;
  }
  bool full() { return prog().size() > Pattern::kMaxProgram; }

  void emit(const Node &n) {
    if (full()) return;
    switch (n.kind) {
      case Node::Set: put(Pattern::Insn::Set, n.set); break;
      case Node::Begin: put(Pattern::Insn::Begin); break;
      case Node::End: put(Pattern::Insn::End); break;
      case Node::Cat:
        for (const auto &k : n.kids) emit(*k);
        break;
      case Node::Alt: {
        std::vector<uint32_t> jumps;
        for (size_t i = 0; i < n.kids.size(); i++) {
          if (i + 1 == n.kids.size()) {
            emit(*n.kids[i]);
            break;
          }
          const uint32_t split = put(Pattern::Insn::Split, here() + 1);
          emit(*n.kids[i]);
          jumps.push_back(put(Pattern::Insn::Jump));
          prog()[split].y = here();
        }
        for (uint32_t j : jumps) prog()[j].x = here();
        break;
      }
      case Node::Repeat: {
        const Node &e = *n.kids[0];
        for (uint32_t i = 0; i < n.min && !full(); i++) emit(e);
        if (n.max == kUnbounded) {
          const uint32_t loop = put(Pattern::Insn::Split, here() + 1);
          emit(e);
          put(Pattern::Insn::Jump, loop);
          prog()[loop].y = here();
        } else {
          std::vector<uint32_t> splits;
          for (uint32_t i = n.min; i < n.max && !full(); i++) {
            splits.push_back(put(Pattern::Insn::Split, here() + 1));
            emit(e);
          }
          for (uint32_t s : splits) prog()[s].y = here();
        }
        break;
      }
    }
  }
};

bool Pattern::compile(std::string_view src, Pattern *out, std::string *error) {
  *out = Pattern();
  return PatternCompiler(src, out).run(error);
}

bool Pattern::search(std::string_view s) const {
  const size_t m = prog_.size(), n = s.size();
  if (m == 0) return false;  // not compiled
  std::vector<size_t> mark(m, SIZE_MAX);  // the position a state was last added at
  std::vector<uint32_t> cur, next, stack;
  cur.reserve(m);
  next.reserve(m);
  // Adds the states reachable from pc without consuming a byte at
  // position pos; true if one of them is Match.
  auto add = [&](std::vector<uint32_t> &list, uint32_t start, size_t pos) {
    stack.assign(1, start);
    while (!stack.empty()) {
      const uint32_t pc = stack.back();
      stack.pop_back();
      if (mark[pc] == pos) continue;
      mark[pc] = pos;
      const Insn &i = prog_[pc];
      switch (i.op) {
        case Insn::Set: list.push_back(pc); break;
        case Insn::Match: return true;
        case Insn::Jump: stack.push_back(i.x); break;
        case Insn::Split:
          stack.push_back(i.y);
          stack.push_back(i.x);
          break;
        case Insn::Begin:
          if (pos == 0) stack.push_back(pc + 1);
          break;
        case Insn::End:
          if (pos == n) stack.push_back(pc + 1);
          break;
      }
    }
    return false;
  };
  const bool anchored = prog_[0].op == Insn::Begin;
  for (size_t pos = 0;; pos++) {
    // A match may start here too (a search, not a whole-string match).
    if ((pos == 0 || !anchored) && add(cur, 0, pos)) return true;
    if (pos == n || (anchored && cur.empty())) return false;
    next.clear();
    const unsigned char c = static_cast<unsigned char>(s[pos]);
    for (uint32_t pc : cur)
      if (sets_[prog_[pc].x][c] && add(next, pc + 1, pos + 1)) return true;
    cur.swap(next);
  }
}

}  // namespace cad
