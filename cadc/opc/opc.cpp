// opc.cpp - the operator compiler's front-end action and entry point (opc.h;
// opc_priv.h lists the other files).
#include "opc.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/Attr.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include "opc_priv.h"

#ifndef CAD_CLANG_RESOURCE_DIR
#error "CAD_CLANG_RESOURCE_DIR must name clang's resource directory"
#endif

namespace cad {

namespace {

using namespace clang;
using namespace opc;

// Where clang locations map to in our SourceManager: the operator file,
// and headers registered when a message points into one.
class Locations {
 public:
  Locations(SourceManager &sm, uint32_t main_file, std::string main_path)
      : sm_(sm), main_(main_file), main_path_(std::move(main_path)) {}

  Loc at_start() const { return Loc{main_, 1, 1, ""}; }

  Loc at(const clang::SourceManager &csm, SourceLocation l) {
    Loc loc;
    if (l.isInvalid()) {
      loc.file = main_;
      return loc;
    }
    const PresumedLoc p = csm.getPresumedLoc(csm.getExpansionLoc(l));
    if (p.isInvalid()) {
      loc.file = main_;
      return loc;
    }
    const std::string name = p.getFilename();
    loc.file = file_of(name);
    loc.line = p.getLine();
    loc.col = p.getColumn();
    return loc;
  }

 private:
  uint32_t file_of(const std::string &name) {
    if (name == main_path_) return main_;
    auto it = others_.find(name);
    if (it != others_.end()) return it->second;
    std::string error;
    uint32_t f = sm_.load(name, &error);
    if (!f) f = sm_.add(name, "");
    others_[name] = f;
    return f;
  }

  SourceManager &sm_;
  uint32_t main_;
  std::string main_path_;
  std::map<std::string, uint32_t> others_;
};

// clang's own warnings and errors, as CAD-E050.
class Collect : public DiagnosticConsumer {
 public:
  Collect(Locations &locs, Diagnostics *diags) : locs_(locs), diags_(diags) {}
  void HandleDiagnostic(DiagnosticsEngine::Level level, const clang::Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level != DiagnosticsEngine::Warning && level != DiagnosticsEngine::Error &&
        level != DiagnosticsEngine::Fatal)
      return;
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    Loc loc;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      loc = locs_.at(info.getSourceManager(), info.getLocation());
    } else {
      // clang's "too many errors emitted": the errors before it say where.
      if (diags_->error_count() > 0) return;
      loc = locs_.at_start();
    }
    if (level == DiagnosticsEngine::Warning)
      diags_->warning(Code::OpSyntax, loc, text.str().str());
    else
      diags_->error(Code::OpSyntax, loc, text.str().str());
  }

 private:
  Locations &locs_;
  Diagnostics *diags_;
};

// ---------------------------------------------------------------------
// The front-end action

class OpFinder : public ast_matchers::MatchFinder::MatchCallback {
 public:
  void run(const ast_matchers::MatchFinder::MatchResult &r) override {
    if (const auto *f = r.Nodes.getNodeAs<FunctionDecl>("op")) found.push_back(f);
  }
  std::vector<const FunctionDecl *> found;
};

// The marker's argument, or "" if fd has no CAD_OP marker.
std::string marker(const FunctionDecl *fd, SourceLocation *where) {
  for (const auto *a : fd->specific_attrs<AnnotateAttr>()) {
    const std::string s = a->getAnnotation().str();
    if (s.rfind("cad_op:", 0) == 0) {
      *where = a->getLocation();
      return s.substr(7);
    }
  }
  return "";
}

struct Shared {
  Locations *locs;
  Diagnostics *diags;
  std::vector<UserOp> *out;
};

class OpConsumer : public ASTConsumer {
 public:
  explicit OpConsumer(Shared s) : s_(s) {}

  void HandleTranslationUnit(ASTContext &ctx) override {
    if (ctx.getDiagnostics().hasErrorOccurred()) return;
    using namespace ast_matchers;
    OpFinder finder_cb;
    MatchFinder finder;
    finder.addMatcher(functionDecl(hasAttr(attr::Annotate)).bind("op"), &finder_cb);
    finder.matchAST(ctx);
    const clang::SourceManager &csm = ctx.getSourceManager();
    std::set<const FunctionDecl *> seen;
    std::map<std::string, SourceLocation> names;
    for (const FunctionDecl *f : finder_cb.found) {
      SourceLocation mloc;
      const std::string order = marker(f, &mloc);
      if (order.empty()) continue;
      const FunctionDecl *def = f->getDefinition();
      if (!def) {
        error(csm, Code::OpSignature, f->getLocation(), "operator " + f->getNameAsString() + " is declared but not defined");
        continue;
      }
      if (!seen.insert(def->getCanonicalDecl()).second) continue;
      if (order != "commutative" && order != "noncommutative") {
        error(csm, Code::OpSignature, mloc, "CAD_OP takes commutative or noncommutative, not '" + order + "'");
        continue;
      }
      if (names.count(def->getNameAsString())) {
        error(csm, Code::OpNone, def->getLocation(), "a second operator named " + def->getNameAsString());
        continue;
      }
      names[def->getNameAsString()] = def->getLocation();
      if (!signature(ctx, def)) continue;
      SourceLocation deep;
      if (tree_depth(def->getBody(), &deep) > kMaxDepth) {
        error(csm, Code::OpTooBig, deep,
              "the code is nested more than " + std::to_string(kMaxDepth) + " levels deep: split the expression into statements");
        continue;
      }
      std::vector<OpError> errors;
      std::vector<const FunctionDecl *> path, bodies;
      std::set<const FunctionDecl *> done{def};
      helpers_of(def, &path, &done, &bodies, &errors);
      for (const FunctionDecl *h : bodies) {
        if (h != def && tree_depth(h->getBody(), &deep) > kMaxDepth)
          errors.push_back({Code::OpTooBig, deep, "the code is nested more than " + std::to_string(kMaxDepth) +
                                                      " levels deep: split the expression into statements"});
        opc::check_body(ctx, h, &errors);
      }
      for (const OpError &e : errors) error(csm, e.code, e.where, e.message);
      if (!errors.empty()) continue;
      try {
        UserOp op = opc::Lowering(ctx, def).run();
        op.commutative = order == "commutative";
        const Loc at = s_.locs->at(csm, def->getLocation());
        op.line = at.line;
        op.col = at.col;
        const std::string why = userop_verify(op);
        if (!why.empty()) {
          error(csm, Code::CoreReject, def->getLocation(), "the core verifier rejects the code emitted for " + op.name + ": " + why);
          continue;
        }
        s_.out->push_back(std::move(op));
      } catch (const OpError &e) {
        error(csm, e.code, e.where, e.message);
      }
    }
  }

 private:
  void error(const clang::SourceManager &csm, Code code, SourceLocation l, const std::string &m) {
    if (!reported_.insert({l.getRawEncoding(), m}).second) return;
    s_.diags->error(code, s_.locs->at(csm, l), m);
  }

  bool signature(ASTContext &ctx, const FunctionDecl *f) {
    const clang::SourceManager &csm = ctx.getSourceManager();
    const std::string form = "an operator is void " + f->getNameAsString() + "(const T *in, T *inout)";
    if (f->isVariadic() || f->getNumParams() != 2 || !f->getReturnType()->isVoidType()) {
      error(csm, Code::OpSignature, f->getLocation(), form);
      return false;
    }
    const QualType p0 = f->getParamDecl(0)->getType(), p1 = f->getParamDecl(1)->getType();
    if (!p0->isPointerType() || !p1->isPointerType()) {
      error(csm, Code::OpSignature, f->getLocation(), form);
      return false;
    }
    const QualType t0 = p0->getPointeeType(), t1 = p1->getPointeeType();
    if (t0.isVolatileQualified() || t1.isVolatileQualified() || p0.isVolatileQualified() || p1.isVolatileQualified()) {
      error(csm, Code::OpVolatile, f->getLocation(), "volatile is not allowed in an operator");
      return false;
    }
    if (!t0.isConstQualified() || t1.isConstQualified() ||
        !ctx.hasSameUnqualifiedType(t0, t1)) {
      error(csm, Code::OpSignature, f->getParamDecl(0)->getLocation(),
            form + ": in points to const T and inout to the same T, not const");
      return false;
    }
    const std::string p = type_problem(ctx, t1);
    if (!p.empty()) {
      error(csm, Code::OpSignature, f->getParamDecl(1)->getLocation(),
            "the element type " + t1.getAsString() + " has " + p + ": it must be a scalar or a struct of scalars");
      return false;
    }
    const int64_t size = ctx.getTypeSizeInChars(t1).getQuantity();
    if (size < 1 || size > CAD_VM_MAX_ELEM) {
      error(csm, Code::OpSignature, f->getParamDecl(1)->getLocation(),
            "the element type is " + std::to_string(size) + " bytes: at most " + std::to_string(CAD_VM_MAX_ELEM));
      return false;
    }
    return true;
  }

  Shared s_;
  std::set<std::pair<unsigned, std::string>> reported_;  // a helper's error, once for all its callers
};

class OpAction : public ASTFrontendAction {
 public:
  explicit OpAction(Shared s) : s_(s) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &, llvm::StringRef) override {
    return std::make_unique<OpConsumer>(s_);
  }

 private:
  Shared s_;
};


bool compile_on_this_thread(const std::string &path, const OpcOptions &opts, SourceManager &sm, Diagnostics *diags,
                            std::vector<UserOp> *out);

}  // namespace

bool compile_op_file(const std::string &path, const OpcOptions &opts, SourceManager &sm, Diagnostics *diags,
                     std::vector<UserOp> *out) {
  bool ok = false;
  if (!run_on_big_stack([&] { ok = compile_on_this_thread(path, opts, sm, diags, out); })) {
    diags->error(Code::Io, Loc{}, "cannot start the compiler's thread (" + std::string(std::strerror(errno)) + ")");
    return false;
  }
  return ok;
}

namespace {

bool compile_on_this_thread(const std::string &path, const OpcOptions &opts, SourceManager &sm, Diagnostics *diags,
                            std::vector<UserOp> *out) {
  std::string error;
  const uint32_t file = sm.load(path, &error);
  if (!file) {
    diags->error(Code::Io, Loc{}, error);
    return false;
  }
  const std::string &text = sm.file(file).text;
  const size_t before_errors = diags->error_count();
  Locations locs(sm, file, path);
  std::vector<UserOp> ops;

  llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> ofs(
      new llvm::vfs::OverlayFileSystem(llvm::vfs::getRealFileSystem()));
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> mfs(new llvm::vfs::InMemoryFileSystem);
  ofs->pushOverlay(mfs);
  mfs->addFile(path, 0, llvm::MemoryBuffer::getMemBufferCopy(text, path));
  llvm::IntrusiveRefCntPtr<FileManager> files(new FileManager(FileSystemOptions(), ofs));
  std::vector<std::string> args = {"cadc-op", "-fsyntax-only", "-x", "c", "-std=gnu11", "-D__CAD_OPC__=1",
                                   "-resource-dir", CAD_CLANG_RESOURCE_DIR, "-ferror-limit=20", "-fno-caret-diagnostics",
                                   "-Wno-unused-function"};
  for (const std::string &d : opts.include_dirs) args.push_back("-I" + d);
  for (const std::string &d : opts.defines) args.push_back("-D" + d);
  args.push_back(path);
  if (auto over = prepass(args, files.get(), file)) {
    diags->error(Code::OpTooBig, over->first, over->second);
    return false;
  }
  Collect collect(locs, diags);
  Shared shared{&locs, diags, &ops};
  tooling::ToolInvocation inv(args, std::make_unique<OpAction>(shared), files.get());
  inv.setDiagnosticConsumer(&collect);
  const bool ran = inv.run();
  if (!ran && diags->error_count() == before_errors)
    diags->error(Code::OpSyntax, Loc{file, 1, 1, ""}, "clang could not parse the file");
  if (diags->error_count() == before_errors && ops.empty())
    diags->error(Code::OpNone, Loc{file, 1, 1, ""},
                 "no operator in this file: mark one with CAD_OP(commutative) or CAD_OP(noncommutative) "
                 "(algorithms/ops/cad_op.h)");
  const std::string base = path.substr(path.find_last_of('/') + 1);
  for (UserOp &op : ops) op.file = base;
  if (diags->error_count() != before_errors) return false;
  for (UserOp &op : ops) out->push_back(std::move(op));
  return true;
}

}  // namespace

}  // namespace cad

extern "C" {
const unsigned long long cad_opc_abi = cad::opc_abi();
const cad::CompileOpFile cad_opc_compile_op_file = cad::compile_op_file;
}
