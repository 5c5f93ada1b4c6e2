// opc_limits.cpp - bounds on the input, checked before clang parses it,
// and the compiler's thread with a large stack.
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/Tooling.h>

#include "opc_priv.h"

namespace cad {
namespace opc {

// ---------------------------------------------------------------------
// Bounds on the input, checked before clang parses it.
//
// clang's parser recurses once per nested unary operator, parenthesis and
// right-associative operator (?:, =), and its semantic checks and ours
// recurse over the tree it builds, so a few kilobytes of nesting overflow
// a thread's stack.  The compilation runs on a thread of its own with a
// large stack (kStackBytes), and a pre-pass over the preprocessed tokens
// of the file (before any parse) enforces two limits that keep every
// recursion far inside it: the tokens of the file after macro expansion
// (kMaxTokens, which also stops a macro that expands exponentially), and
// the length of a run of prefix operators and opening parentheses
// (kMaxPrefixRun, like clang's own -fbracket-depth, which stays 256).
// The tree depth is checked again after the parse (kMaxDepth, for chains
// of binary operators).
constexpr size_t kStackBytes = size_t{1} << 30;
constexpr size_t kMaxTokens = size_t{1} << 16;
constexpr unsigned kMaxPrefixRun = 256;

namespace {

// What the pre-pass found, in memory shared with the child that runs it.
struct TokenLimit {
  int state = 0;  // 0: running, 1: within the limits, 2: a limit exceeded
  char message[160] = {};
  unsigned line = 0, col = 0;            // where the limit was exceeded
  unsigned last_line = 0, last_col = 0;  // the last place of the file expanded
};

void note_place(const clang::SourceManager &csm, SourceLocation at, unsigned *line, unsigned *col) {
  const PresumedLoc p = csm.getPresumedLoc(at);
  if (p.isValid()) {
    *line = p.getLine();
    *col = p.getColumn();
  }
}

// Where the file's macros are expanded: the last place reached, so that a
// macro whose expansion exhausts the child's limits can be pointed at.
class ExpansionPlace : public PPCallbacks {
 public:
  ExpansionPlace(const clang::SourceManager &csm, TokenLimit *out) : csm_(csm), out_(out) {}
  void MacroExpands(const Token &name, const MacroDefinition &, SourceRange, const MacroArgs *) override {
    const SourceLocation at = csm_.getExpansionLoc(name.getLocation());
    if (csm_.isWrittenInMainFile(at)) note_place(csm_, at, &out_->last_line, &out_->last_col);
  }

 private:
  const clang::SourceManager &csm_;
  TokenLimit *out_;
};

class TokenGuard : public PreprocessorFrontendAction {
 public:
  explicit TokenGuard(TokenLimit *out) : out_(out) {}

 protected:
  void ExecuteAction() override {
    Preprocessor &pp = getCompilerInstance().getPreprocessor();
    const clang::SourceManager &csm = pp.getSourceManager();
    pp.addPPCallbacks(std::make_unique<ExpansionPlace>(csm, out_));
    pp.EnterMainSourceFile();
    Token tok;
    size_t count = 0;
    unsigned run = 0;
    for (;;) {
      pp.Lex(tok);
      if (tok.is(tok::eof)) break;
      const SourceLocation at = csm.getExpansionLoc(tok.getLocation());
      if (!csm.isWrittenInMainFile(at)) continue;
      const bool prefix = tok.isOneOf(tok::minus, tok::plus, tok::exclaim, tok::tilde, tok::star, tok::amp,
                                      tok::plusplus, tok::minusminus, tok::l_paren) ||
                          tok.isOneOf(tok::l_square, tok::l_brace, tok::question, tok::colon, tok::equal);
      run = prefix ? run + 1 : 0;
      const char *why = nullptr;
      if (++count > kMaxTokens)
        why = "the file has more than 65536 tokens after macro expansion: an operator is a small function";
      else if (run > kMaxPrefixRun)
        why = "the expression is nested more than 256 levels deep (unary operators, parentheses, ?:)";
      if (why) {
        note_place(csm, at, &out_->line, &out_->col);
        std::strncpy(out_->message, why, sizeof(out_->message) - 1);
        out_->state = 2;
        return;
      }
    }
    out_->state = 1;
  }

 private:
  TokenLimit *out_;
};

}  // namespace

// Runs the pre-pass in a child process with bounded memory and CPU time:
// one macro can expand to more tokens than memory holds inside a single
// call of clang's lexer, which nothing in this process could interrupt.
// Empty if the file is within the limits, else the error.
constexpr unsigned kPrepassSeconds = 5;
constexpr size_t kPrepassBytes = size_t{1} << 30;

std::optional<std::pair<Loc, std::string>> prepass(const std::vector<std::string> &args, FileManager *files,
                                                   uint32_t file) {
  void *page = mmap(nullptr, sizeof(TokenLimit), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return std::make_pair(Loc{file, 1, 1, ""}, std::string("cannot map memory for the pre-pass"));
  auto *limit = new (page) TokenLimit();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    long pages = 0;
    if (FILE *f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t as = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + kPrepassBytes;
    const struct rlimit mem = {as, as}, cpu = {kPrepassSeconds, kPrepassSeconds + 1};
    setrlimit(RLIMIT_AS, &mem);
    setrlimit(RLIMIT_CPU, &cpu);
    IgnoringDiagConsumer quiet;  // clang's own errors are reported by the parse
    tooling::ToolInvocation pre(args, std::make_unique<TokenGuard>(limit), files);
    pre.setDiagnosticConsumer(&quiet);
    pre.run();
    _exit(0);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  std::optional<std::pair<Loc, std::string>> result;
  if (pid < 0) {
    result = std::make_pair(Loc{file, 1, 1, ""}, "cannot start the pre-pass (" + std::string(std::strerror(errno)) + ")");
  } else if (limit->state == 2) {
    result = std::make_pair(Loc{file, limit->line, limit->col, ""}, std::string(limit->message));
  } else if (limit->state != 1) {
    // Killed by its limits (or clang failed): a macro expanded too far.
    const unsigned line = limit->last_line ? limit->last_line : 1, col = limit->last_line ? limit->last_col : 1;
    result = std::make_pair(Loc{file, line, col, ""},
                            "expanding the file's macros exceeds the compiler's limits (" +
                                std::to_string(kPrepassBytes >> 30) + " GiB, " + std::to_string(kPrepassSeconds) +
                                " s of CPU): a macro expands too much");
  }
  munmap(page, sizeof(TokenLimit));
  return result;
}

// The depth of the deepest statement or expression under s, and the
// statement it is in (no recursion: the tree may be deep).
unsigned tree_depth(const Stmt *s, SourceLocation *deepest) {
  unsigned best = 0;
  struct Item {
    const Stmt *x;
    unsigned depth;
    SourceLocation stmt;  // of the statement it is in, if an expression
    bool in_expr;
  };
  std::vector<Item> stack{{s, 1, s->getBeginLoc(), false}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    if (!it.x) continue;
    const SourceLocation at = it.in_expr ? it.stmt : it.x->getBeginLoc();
    if (it.depth > best) {
      best = it.depth;
      *deepest = at;
    }
    if (it.depth > kMaxDepth) return it.depth;
    for (const Stmt *c : it.x->children()) stack.push_back({c, it.depth + 1, at, isa<Expr>(it.x)});
  }
  return best;
}

// Runs f on a thread with a stack of kStackBytes (reserved, committed as
// it is touched).  False if no such thread could be made.
bool run_on_big_stack(const std::function<void()> &f) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setstacksize(&attr, kStackBytes);
  pthread_t t;
  auto thunk = [](void *arg) -> void * {
    (*static_cast<const std::function<void()> *>(arg))();
    return nullptr;
  };
  const bool made = pthread_create(&t, &attr, thunk, const_cast<std::function<void()> *>(&f)) == 0;
  pthread_attr_destroy(&attr);
  if (made) pthread_join(t, nullptr);
  return made;
}
}  // namespace opc
}  // namespace cad
