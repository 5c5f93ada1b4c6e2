// common.h - what the subcommands share: loading algorithm files (DSL or
// JSON by extension), printing diagnostics as text or JSON, exit codes.
// Library code never prints; only the tool does, and only here and in the
// subcommands' run functions.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "../lib/ast.h"
#include "../lib/diag.h"
#include "../lib/library.h"
#include "../lib/source.h"
#include "../lib/userop.h"
#include "../opc/opc.h"

namespace cad::tool {

// Exit codes: 0 ok, 1 diagnostics with errors, 2 usage or I/O error.
enum Exit { kOk = 0, kDiagnostics = 1, kUsage = 2 };

// A usage or I/O problem: main prints "cadc: error: ..." and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Session {
  SourceManager sm;
  Diagnostics diags;
  bool json = false;  // --json: diagnostics as JSON on stdout
};

// Loads and parses one file (.json: the JSON form, else the DSL) and
// checks it (`op NAME` may name one of ops); false if it has errors
// (reported into s.diags).  Throws UsageError if the file cannot be read.
bool load_module(Session &s, const std::string &path, Module *out, bool check = true, const UserOps &ops = {});
// Whether path is a library `cadc build` wrote (named .cadlib, or JSON with
// a "cadlib" member), not an algorithm file.
bool is_cadlib(const std::string &path);

// Prints the diagnostics (text on stderr, or JSON on stdout with the
// extra fields given) and returns the exit code they call for.
int report(Session &s, nlohmann::json extra);
int report(Session &s);

// Reads operators: a .cadop file (verified), or a C file compiled by the
// LibTooling front end (cadc/opc); false with diagnostics in s.
bool load_ops(Session &s, const std::string &path, const OpcOptions &opts, std::vector<UserOp> *out);

// A folder of algorithms for cadc build (and cadc select): its files,
// operators and algorithms, loaded and checked, not verified.
struct LibraryFolder {
  std::vector<std::string> files;
  std::vector<Module> modules;
  std::vector<const Algorithm *> algs;
  nlohmann::json ops = nlohmann::json::array(), sources = nlohmann::json::array();
  UserOps user_ops;
};
void load_library_folder(Session &s, const std::string &dir, bool print, LibraryFolder *out);
bool read_folder_rules(Session &s, const std::string &dir, const LibraryFolder &f, nlohmann::json *json, Library *lib);

// Registers a subcommand; each cmd_*.cpp defines one.
using Runner = std::function<int()>;
void add_check(CLI::App &app, Runner *run);
void add_fmt(CLI::App &app, Runner *run);
void add_compile(CLI::App &app, Runner *run);
void add_disasm(CLI::App &app, Runner *run);
void add_verify(CLI::App &app, Runner *run);
void add_dot(CLI::App &app, Runner *run);
void add_build(CLI::App &app, Runner *run);
void add_topo(CLI::App &app, Runner *run);
void add_op(CLI::App &app, Runner *run);
void add_simulate(CLI::App &app, Runner *run);
void add_select(CLI::App &app, Runner *run);
void add_lib(CLI::App &app, Runner *run);
void add_info(CLI::App &app, Runner *run);

}  // namespace cad::tool
