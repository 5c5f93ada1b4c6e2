// parser.cpp - the DSL's recursive-descent parser (grammar in parser.h).
#include "parser.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lexer.h"

namespace cad {

namespace {

// Unwinds to parse_module on the first syntax error (already reported).
struct SyntaxError : std::exception {};

// Binary operators by precedence level, lowest first; canonical spellings.
struct BinOp {
  std::string_view spelling;
  const char *canonical;
  int level;
};
const BinOp kBinOps[] = {
    {"||", "||", 1}, {"or", "||", 1}, {"&&", "&&", 2}, {"and", "&&", 2},
    {"==", "==", 3}, {"!=", "!=", 3}, {"<", "<", 3},   {"<=", "<=", 3},
    {">", ">", 3},   {">=", ">=", 3}, {"|", "|", 4},   {"^", "^", 5},
    {"&", "&", 6},   {"<<", "<<", 7}, {">>", ">>", 7}, {"+", "+", 8},
    {"-", "-", 8},   {"*", "*", 9},   {"/", "/", 9},   {"%", "%", 9},
};
const int kMaxLevel = 9;

const char *const kLevelNames[] = {"node", "package", "numa", "l3"};

class Parser {
 public:
  Parser(const SourceManager &sm, uint32_t file, Lexed &lx, Diagnostics *diags)
      : sm_(sm), file_(file), lx_(lx), diags_(diags), binop_of_(lx.tokens.size(), nullptr) {
    // Each token's binary operator, looked up once: binary() asks at
    // every level of precedence for every operand.
    for (size_t i = 0; i < lx.tokens.size(); i++) {
      const Token &t = lx.tokens[i];
      if (t.kind != Tok::Punct && t.kind != Tok::Ident) continue;
      for (const BinOp &op : kBinOps)
        if (t.text == op.spelling) {
          binop_of_[i] = &op;
          break;
        }
    }
  }

  bool parse_module(Module *m) {
    m->file = file_;
    try {
      if (peek().kind == Tok::End) {
        m->comments = take_comments(peek().offset);
        error_at(peek(), "expected 'algorithm': the file defines no algorithm");
      }
      // File header: the comment groups before the first algorithm that a
      // blank line separates from it; the group touching it is the
      // algorithm's own.
      size_t end = comment_;
      while (end < lx_.comments.size() && lx_.comments[end].offset < peek().offset) end++;
      size_t split = end;
      uint32_t next_line = line_of(peek().offset);
      while (split > comment_ && line_of(lx_.comments[split - 1].offset) + 1 == next_line)
        next_line = line_of(lx_.comments[--split].offset);
      for (size_t i = comment_; i < split; i++) {
        if (i > comment_ && line_of(lx_.comments[i].offset) > line_of(lx_.comments[i - 1].offset) + 1)
          m->comments.push_back("\n");  // a blank line between header groups
        m->comments.push_back(lx_.comments[i].text);
      }
      comment_ = split;
      while (peek().kind != Tok::End) m->algorithms.push_back(parse_algorithm());
      return true;
    } catch (const SyntaxError &) {
      return false;
    }
  }

 private:
  // ---- tokens ----
  const Token &peek(size_t k = 0) const {
    size_t i = pos_ + k;
    return i < lx_.tokens.size() ? lx_.tokens[i] : lx_.tokens.back();
  }
  const Token &next() {
    const Token &t = peek();
    if (pos_ < lx_.tokens.size() - 1) pos_++;
    last_end_ = t.offset + (t.kind == Tok::String ? t.text.size() + 2 : t.text.size());
    return t;
  }
  bool is(const char *text, size_t k = 0) const {
    const Token &t = peek(k);
    return (t.kind == Tok::Punct || t.kind == Tok::Ident) && t.text == text;
  }
  bool accept(const char *text) {
    if (!is(text)) return false;
    next();
    return true;
  }
  Loc loc_of(const Token &t) const { return sm_.at(file_, t.offset); }
  uint32_t line_of(size_t offset) const { return sm_.at(file_, offset).line; }

  static std::string describe(const Token &t) {
    switch (t.kind) {
      case Tok::End: return "the end of the file";
      case Tok::Ident: return "'" + t.text + "'";
      case Tok::Int: return "the number " + t.text;
      case Tok::String: return "the string \"" + t.text + "\"";
      default: return "'" + t.text + "'";
    }
  }
  [[noreturn]] void error_at(const Token &t, const std::string &message) {
    diags_->error(Code::Syntax, loc_of(t), message);
    throw SyntaxError();
  }
  // Recursion of the parser (parentheses, unary operators, conditionals,
  // blocks) is bounded by kMaxNesting, so is the height of every tree it
  // builds (finish()).
  struct Nest {
    Nest(Parser *p, const Token &t) : p_(p) {
      if (++p_->nest_ > static_cast<int>(2 * kMaxNesting))
        p_->error_at(t, "nested more than " + std::to_string(2 * kMaxNesting) + " levels deep");
    }
    ~Nest() { p_->nest_--; }
    Parser *p_;
  };
  ExprPtr finish(ExprPtr e) {
    uint32_t d = 0;
    for (const ExprPtr &a : e->args) d = std::max(d, a->depth);
    e->depth = d + 1;
    if (e->depth > kMaxNesting) {
      diags_->error(Code::Syntax, e->loc, "expression nested more than " + std::to_string(kMaxNesting) + " levels deep");
      throw SyntaxError();
    }
    return e;
  }
  [[noreturn]] void expected(const std::string &what) {
    error_at(peek(), "expected " + what + ", found " + describe(peek()));
  }
  void expect(const char *text, const char *context = nullptr) {
    if (accept(text)) return;
    expected(std::string("'") + text + "'" + (context ? std::string(" ") + context : ""));
  }
  std::string ident(const char *what) {
    if (peek().kind != Tok::Ident) expected(what);
    return next().text;
  }

  // ---- comments ----
  // The comments before offset: own-line ones, and trailing ones that
  // take_trailing() did not claim (kept as leading text rather than lost).
  std::vector<std::string> take_comments(size_t before) {
    std::vector<std::string> out;
    while (comment_ < lx_.comments.size() && lx_.comments[comment_].offset < before)
      out.push_back(lx_.comments[comment_++].text);
    return out;
  }
  // A comment after the last token, on the same line.
  std::string take_trailing() {
    if (comment_ < lx_.comments.size()) {
      Comment &c = lx_.comments[comment_];
      if (!c.own_line && c.offset < peek().offset && line_of(c.offset) == line_of(last_end_ - 1)) {
        comment_++;
        return c.text;
      }
    }
    return {};
  }

  // ---- algorithm ----
  Algorithm parse_algorithm() {
    Algorithm a;
    a.comments = take_comments(peek().offset);
    if (!is("algorithm")) expected("'algorithm'");
    a.loc = loc_of(next());
    a.name = ident("the algorithm's name");
    expect(":", "and the collective after the algorithm's name");
    const Token &ct = peek();
    std::string coll = ident("a collective (bcast, reduce, allreduce, ...)");
    if (!collective_by_name(coll, &a.collective)) {
      std::string all;
      for (const std::string &n : collective_names()) all += (all.empty() ? "" : ", ") + n;
      diags_->error(Code::Collective, loc_of(ct), "unknown collective '" + coll + "' (one of " + all + ")");
      throw SyntaxError();
    }
    for (;;) {
      std::vector<std::string> comments = take_comments(peek().offset);
      if (is("param")) {
        Param p;
        p.comments = std::move(comments);
        p.loc = loc_of(next());
        p.name = ident("a parameter name");
        expect("=", "and the parameter's default value");
        p.value = expr();
        p.trailing = take_trailing();
        a.params.push_back(std::move(p));
      } else if (is("requires")) {
        Requirement r;
        r.comments = std::move(comments);
        r.loc = loc_of(next());
        r.cond = expr();
        r.trailing = take_trailing();
        a.requires_.push_back(std::move(r));
      } else if (is("scratch")) {
        Scratch s;
        s.comments = std::move(comments);
        s.loc = loc_of(next());
        s.name = ident("a scratch buffer name");
        expect("[", "and the scratch buffer's size in elements");
        s.size = expr();
        expect("]");
        s.trailing = take_trailing();
        a.scratch.push_back(std::move(s));
      } else if (is("inplace")) {
        a.inplace = true;
        a.inplace_loc = loc_of(next());
        a.inplace_trailing = take_trailing();
        if (!comments.empty()) a.comments.insert(a.comments.end(), comments.begin(), comments.end());
      } else if (is("op")) {
        if (!a.op.empty()) error_at(peek(), "a second 'op': an algorithm is written for one op at most");
        a.op_loc = loc_of(next());
        a.op = ident("an op name after 'op' (sum, max, ..., or a user-defined operator)");
        a.op_trailing = take_trailing();
        if (!comments.empty()) a.comments.insert(a.comments.end(), comments.begin(), comments.end());
      } else if (is("sweep")) {
        a.sweep.comments = std::move(comments);
        parse_sweep(&a.sweep);
      } else if (is("{")) {
        if (!comments.empty()) a.comments.insert(a.comments.end(), comments.begin(), comments.end());
        break;
      } else {
        expected("'param', 'requires', 'scratch', 'inplace', 'op', 'sweep' or '{'");
      }
    }
    a.body = block(&a.body_end);
    return a;
  }

  void parse_sweep(Sweep *s) {
    if (s->present) error_at(peek(), "a second 'sweep': one per algorithm");
    s->present = true;
    s->loc = loc_of(next());
    bool any = false;
    for (;;) {
      if (accept("ranks")) {
        s->ranks = spec(false);
      } else if (accept("sizes")) {
        s->sizes = spec(false);
      } else if (accept("roots")) {
        s->roots = spec(true);
      } else if (accept("with")) {
        std::string name = ident("a parameter name after 'with'");
        expect("=", "and the parameter's values");
        s->params.emplace_back(name, spec(false));
      } else if (accept("topology")) {
        if (accept("flat")) {
          s->topologies.push_back("flat");  // one domain at every level
        } else {
          if (peek().kind != Tok::String) expected("a topology file name in quotes, or flat");
          s->topologies.push_back(next().text);
        }
      } else {
        break;
      }
      any = true;
    }
    if (!any) expected("'ranks', 'sizes', 'roots', 'with' or 'topology' after 'sweep'");
    s->trailing = take_trailing();
  }

  SweepSpec spec(bool allow_all) {
    SweepSpec sp;
    sp.loc = loc_of(peek());
    if (allow_all && accept("all")) {
      sp.all = true;
      return sp;
    }
    do {
      if (peek().kind != Tok::Int) expected(allow_all ? "a number, a range a..b or 'all'" : "a number or a range a..b");
      int64_t lo = next().value, hi = lo;
      if (accept("..")) {
        if (peek().kind != Tok::Int) expected("the end of the range");
        hi = next().value;
      }
      if (hi < lo) error_at(peek(), "range " + std::to_string(lo) + ".." + std::to_string(hi) + " is reversed");
      sp.ranges.emplace_back(lo, hi);
    } while (accept(","));
    return sp;
  }

  // ---- statements ----
  std::vector<StmtPtr> block(std::vector<std::string> *end_comments) {
    expect("{");
    std::vector<StmtPtr> body;
    for (;;) {
      // A blank line between the previous statement and this one (or its
      // comments) is kept; the first statement of a block gets none.
      const size_t first = comment_ < lx_.comments.size() && lx_.comments[comment_].offset < peek().offset
                               ? lx_.comments[comment_].offset : peek().offset;
      const bool blank = !body.empty() && line_of(first) > line_of(last_end_ - 1) + 1;
      std::vector<std::string> comments = take_comments(peek().offset);
      if (accept("}")) {
        *end_comments = std::move(comments);
        return body;
      }
      if (peek().kind == Tok::End) expected("'}'");
      StmtPtr st = statement();
      st->blank = blank;
      st->comments = std::move(comments);
      st->trailing = take_trailing();
      body.push_back(std::move(st));
    }
  }

  StmtPtr statement() {
    auto st = std::make_unique<Stmt>();
    const Token &t = peek();
    if (++stmt_nest_ > kMaxNesting) error_at(t, "statements nested more than " + std::to_string(kMaxNesting) + " levels deep");
    struct Unnest {
      uint32_t *n;
      ~Unnest() { --*n; }
    } unnest{&stmt_nest_};
    st->loc = loc_of(t);
    if (t.kind != Tok::Ident) expected("a statement (let, for, if, send, recv, copy, reduce, parallel, fence)");
    const std::string word = t.text;
    next();
    if (word == "let") {
      st->kind = StmtKind::Let;
      st->name = ident("a name after 'let'");
      expect("=", "after the name");
      st->value = expr();
    } else if (word == "for") {
      st->kind = StmtKind::For;
      st->name = ident("the loop variable");
      expect("in", "after the loop variable");
      st->value = expr();
      expect("..", "between the loop's bounds");
      st->hi = expr();
      if (accept("step")) st->step = expr();
      st->body = block(&st->body_end);
    } else if (word == "if") {
      st->kind = StmtKind::If;
      st->value = expr();
      st->body = block(&st->body_end);
      if (accept("else")) {
        if (is("if")) {
          st->orelse.push_back(statement());  // else if: an If as the only statement
        } else {
          st->orelse = block(&st->orelse_end);
        }
      }
    } else if (word == "parallel") {
      st->kind = StmtKind::Parallel;
      st->body = block(&st->body_end);
    } else if (word == "fence") {
      st->kind = StmtKind::Fence;
    } else if (word == "send" || word == "recv") {
      const bool send = word == "send";
      st->kind = send ? StmtKind::Send : StmtKind::Recv;
      (send ? st->src : st->dst) = bufref();
      expect(send ? "to" : "from", send ? "and the destination rank" : "and the source rank");
      st->value = expr();
      if (accept("tag")) st->tag = expr();
      if (accept("by")) {
        if (!is("sender") && !is("receiver")) expected("'sender' or 'receiver' after 'by'");
        st->by = next().text;
      }
    } else if (word == "copy" || word == "reduce") {
      st->kind = word == "copy" ? StmtKind::Copy : StmtKind::Reduce;
      st->dst = bufref();
      expect("from", "and the source range");
      st->src = bufref();
      if (st->kind == StmtKind::Reduce && accept("op")) st->redop = ident("an op name after 'op'");
    } else {
      error_at(t, "unknown statement '" + word +
                      "' (let, for, if, send, recv, copy, reduce, parallel, fence)");
    }
    return st;
  }

  BufRef bufref() {
    BufRef r;
    r.loc = loc_of(peek());
    r.name = ident("a buffer name");
    if (accept("[")) {
      r.lo = expr();
      expect(":", "between the range's bounds (buf[lo:hi])");
      r.hi = expr();
      expect("]", "after the range");
    }
    return r;
  }

  // ---- expressions ----
  ExprPtr expr() {
    Nest nest(this, peek());
    ExprPtr c = binary(1);
    if (is("?")) {
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::Cond;
      e->loc = loc_of(next());
      e->args.push_back(std::move(c));
      e->args.push_back(expr());
      expect(":", "in the conditional expression");
      e->args.push_back(expr());
      return finish(std::move(e));
    }
    return c;
  }

  const BinOp *binop(int level) const {
    const BinOp *op = binop_of_[std::min(pos_, binop_of_.size() - 1)];
    return op && op->level == level ? op : nullptr;
  }

  ExprPtr binary(int level) {
    if (level > kMaxLevel) return unary();
    ExprPtr lhs = binary(level + 1);
    while (const BinOp *op = binop(level)) {
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::Binary;
      e->loc = loc_of(next());
      e->op = op->canonical;
      e->args.push_back(std::move(lhs));
      e->args.push_back(binary(level + 1));
      if (level == 3 && binop(3))  // a < b < c means nothing useful
        error_at(peek(), "comparisons do not chain: use '&&'");
      lhs = finish(std::move(e));
    }
    return lhs;
  }

  ExprPtr unary() {
    if (is("-") || is("!") || is("~") || is("not")) {
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::Unary;
      const Token &t = next();
      e->loc = loc_of(t);
      e->op = t.text == "not" ? "!" : t.text;
      Nest nest(this, t);
      e->args.push_back(unary());
      return finish(std::move(e));
    }
    return primary();
  }

  ExprPtr primary() {
    const Token &t = peek();
    auto e = std::make_unique<Expr>();
    e->loc = loc_of(t);
    if (t.kind == Tok::Int) {
      e->kind = ExprKind::Int;
      e->value = next().value;
      return e;
    }
    if (accept("(")) {
      ExprPtr inner = expr();
      expect(")", "to close the parenthesis");
      return inner;
    }
    if (t.kind != Tok::Ident) expected("an expression");
    std::string name = next().text;
    if (name == "true" || name == "false") {
      e->kind = ExprKind::Bool;
      e->value = name == "true";
      return e;
    }
    for (size_t i = 0; i < sizeof(kLevelNames) / sizeof(kLevelNames[0]); i++)
      if (name == kLevelNames[i] && !is("(")) {
        e->kind = ExprKind::Level;
        e->name = name;
        e->value = static_cast<int64_t>(i);
        return e;
      }
    e->name = name;
    if (accept("(")) {
      e->kind = ExprKind::Call;
      if (!accept(")")) {
        do e->args.push_back(expr());
        while (accept(","));
        expect(")", "after the arguments");
      }
      return finish(std::move(e));
    }
    e->kind = ExprKind::Name;
    return e;
  }

  const SourceManager &sm_;
  uint32_t file_;
  Lexed &lx_;
  Diagnostics *diags_;
  size_t pos_ = 0;
  std::vector<const BinOp *> binop_of_;  // by token
  size_t comment_ = 0;
  size_t last_end_ = 0;
  int nest_ = 0;
  uint32_t stmt_nest_ = 0;
};

}  // namespace

bool parse_dsl(const SourceManager &sm, uint32_t file, Module *out, Diagnostics *diags) {
  Lexed lx;
  if (!lex(sm, file, &lx, diags)) return false;
  Parser p(sm, file, lx, diags);
  return p.parse_module(out);
}

const char *level_name(int level) {
  return level >= 0 && level < 4 ? kLevelNames[level] : "?";
}

}  // namespace cad
