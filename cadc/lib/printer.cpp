// printer.cpp - see printer.h.
#include "printer.h"

#include "parser.h"

namespace cad {

namespace {

// Precedence as the parser reads it: ?: 0, || 1, && 2, comparisons 3,
// | 4, ^ 5, & 6, shifts 7, + - 8, * / % 9, unary 10, primary 11.
int prec(const Expr &e) {
  switch (e.kind) {
    case ExprKind::Cond: return 0;
    case ExprKind::Unary: return 10;
    case ExprKind::Binary: {
      const std::string &o = e.op;
      if (o == "||") return 1;
      if (o == "&&") return 2;
      if (o == "==" || o == "!=" || o == "<" || o == "<=" || o == ">" || o == ">=") return 3;
      if (o == "|") return 4;
      if (o == "^") return 5;
      if (o == "&") return 6;
      if (o == "<<" || o == ">>") return 7;
      if (o == "+" || o == "-") return 8;
      return 9;
    }
    default: return 11;
  }
}

void expr(std::string &out, const Expr &e);

void wrapped(std::string &out, const Expr &e, bool parens) {
  if (parens) out += '(';
  expr(out, e);
  if (parens) out += ')';
}

void expr(std::string &out, const Expr &e) {
  switch (e.kind) {
    case ExprKind::Int: out += std::to_string(e.value); break;
    case ExprKind::Bool: out += e.value ? "true" : "false"; break;
    case ExprKind::Name:
    case ExprKind::Level: out += e.name; break;
    case ExprKind::Call:
      out += e.name + "(";
      for (size_t i = 0; i < e.args.size(); i++) {
        if (i) out += ", ";
        expr(out, *e.args[i]);
      }
      out += ')';
      break;
    case ExprKind::Unary:
      out += e.op;
      wrapped(out, *e.args[0], prec(*e.args[0]) <= 10);
      break;
    case ExprKind::Binary: {
      const int p = prec(e);
      // Left-associative: the right operand at the same level needs
      // parentheses; comparisons do not chain, so either side does.
      wrapped(out, *e.args[0], prec(*e.args[0]) < p || (p == 3 && prec(*e.args[0]) == 3));
      out += " " + e.op + " ";
      wrapped(out, *e.args[1], prec(*e.args[1]) <= p);
      break;
    }
    case ExprKind::Cond:
      wrapped(out, *e.args[0], prec(*e.args[0]) == 0);
      out += " ? ";
      wrapped(out, *e.args[1], prec(*e.args[1]) == 0);
      out += " : ";
      expr(out, *e.args[2]);
      break;
  }
}

class Printer {
 public:
  std::string module(const Module &m) {
    comments(m.comments, 0);
    if (!m.comments.empty()) out_ += '\n';
    for (size_t i = 0; i < m.algorithms.size(); i++) {
      if (i) out_ += '\n';
      algorithm(m.algorithms[i]);
    }
    return out_;
  }

 private:
  void indent(int depth) { out_.append(2 * depth, ' '); }
  // Comment text without trailing blanks (a CR of CRLF included), which
  // the canonical form does not keep.
  static std::string rstrip(const std::string &t) {
    size_t end = t.size();
    while (end > 0 && (t[end - 1] == ' ' || t[end - 1] == '\t' || t[end - 1] == '\r')) end--;
    return t.substr(0, end);
  }
  // Comment lines; "\n" stands for a blank line between groups.
  void comments(const std::vector<std::string> &c, int depth) {
    for (const std::string &raw : c) {
      if (raw == "\n") {
        out_ += '\n';
        continue;
      }
      const std::string line = rstrip(raw);
      indent(depth);
      out_ += line.empty() ? "#\n" : "# " + line + "\n";
    }
  }
  void trailing(const std::string &raw) {
    const std::string t = rstrip(raw);
    if (!t.empty()) out_ += "  # " + t;
    out_ += '\n';
  }
  std::string e(const Expr &x) {
    std::string s;
    expr(s, x);
    return s;
  }
  std::string ref(const BufRef &r) {
    if (!r.lo) return r.name;
    return r.name + "[" + e(*r.lo) + ":" + e(*r.hi) + "]";
  }
  static std::string spec(const SweepSpec &s) {
    if (s.all) return "all";
    std::string out;
    for (const auto &r : s.ranges) {
      if (!out.empty()) out += ", ";
      out += std::to_string(r.first);
      if (r.second != r.first) out += ".." + std::to_string(r.second);
    }
    return out;
  }

  void algorithm(const Algorithm &a) {
    comments(a.comments, 0);
    out_ += "algorithm " + a.name + " : " + collective_info(a.collective).name + "\n";
    for (const Param &p : a.params) {
      comments(p.comments, 1);
      indent(1);
      out_ += "param " + p.name + " = " + e(*p.value);
      trailing(p.trailing);
    }
    for (const Requirement &r : a.requires_) {
      comments(r.comments, 1);
      indent(1);
      out_ += "requires " + e(*r.cond);
      trailing(r.trailing);
    }
    for (const Scratch &s : a.scratch) {
      comments(s.comments, 1);
      indent(1);
      out_ += "scratch " + s.name + "[" + e(*s.size) + "]";
      trailing(s.trailing);
    }
    if (a.inplace) {
      indent(1);
      out_ += "inplace";
      trailing(a.inplace_trailing);
    }
    if (!a.op.empty()) {
      indent(1);
      out_ += "op " + a.op;
      trailing(a.op_trailing);
    }
    if (a.sweep.present) {
      const Sweep &s = a.sweep;
      comments(s.comments, 1);
      indent(1);
      out_ += "sweep";
      if (s.ranks.present()) out_ += " ranks " + spec(s.ranks);
      if (s.sizes.present()) out_ += " sizes " + spec(s.sizes);
      if (s.roots.present()) out_ += " roots " + spec(s.roots);
      for (const auto &p : s.params) out_ += " with " + p.first + " = " + spec(p.second);
      for (const std::string &t : s.topologies) out_ += t == "flat" ? " topology flat" : " topology \"" + t + "\"";
      trailing(s.trailing);
    }
    out_ += "{\n";
    body(a.body, a.body_end, 1);
    out_ += "}\n";
  }

  void body(const std::vector<StmtPtr> &stmts, const std::vector<std::string> &end, int depth) {
    for (const StmtPtr &s : stmts) stmt(*s, depth);
    comments(end, depth);
  }

  void block(const std::vector<StmtPtr> &stmts, const std::vector<std::string> &end, int depth) {
    out_ += " {\n";
    body(stmts, end, depth + 1);
    indent(depth);
    out_ += "}";
  }

  void stmt(const Stmt &s, int depth) {
    if (s.blank) out_ += '\n';
    comments(s.comments, depth);
    indent(depth);
    stmt_text(s, depth);
    trailing(s.trailing);
  }

  void stmt_text(const Stmt &s, int depth) {
    switch (s.kind) {
      case StmtKind::Let: out_ += "let " + s.name + " = " + e(*s.value); break;
      case StmtKind::For:
        out_ += "for " + s.name + " in " + e(*s.value) + " .. " + e(*s.hi);
        if (s.step) out_ += " step " + e(*s.step);
        block(s.body, s.body_end, depth);
        break;
      case StmtKind::If:
        out_ += "if " + e(*s.value);
        block(s.body, s.body_end, depth);
        if (s.orelse.size() == 1 && s.orelse[0]->kind == StmtKind::If && s.orelse_end.empty() &&
            s.orelse[0]->comments.empty() && s.orelse[0]->trailing.empty() && !s.orelse[0]->blank) {
          out_ += " else ";
          stmt_text(*s.orelse[0], depth);
        } else if (!s.orelse.empty() || !s.orelse_end.empty()) {
          out_ += " else";
          block(s.orelse, s.orelse_end, depth);
        }
        break;
      case StmtKind::Parallel:
        out_ += "parallel";
        block(s.body, s.body_end, depth);
        break;
      case StmtKind::Fence: out_ += "fence"; break;
      case StmtKind::Send:
      case StmtKind::Recv:
        out_ += s.kind == StmtKind::Send ? "send " + ref(s.src) + " to " : "recv " + ref(s.dst) + " from ";
        out_ += e(*s.value);
        if (s.tag) out_ += " tag " + e(*s.tag);
        if (!s.by.empty()) out_ += " by " + s.by;
        break;
      case StmtKind::Copy: out_ += "copy " + ref(s.dst) + " from " + ref(s.src); break;
      case StmtKind::Reduce:
        out_ += "reduce " + ref(s.dst) + " from " + ref(s.src);
        if (!s.redop.empty()) out_ += " op " + s.redop;
        break;
    }
  }

  std::string out_;
};

}  // namespace

std::string print_module(const Module &m) { return Printer().module(m); }

std::string print_expr(const Expr &e) {
  std::string s;
  expr(s, e);
  return s;
}

}  // namespace cad

