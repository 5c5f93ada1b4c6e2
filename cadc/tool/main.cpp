// main.cpp - cadc: compile, verify and package CAD collective algorithms.
// One subcommand per cmd_*.cpp.  Exit 0 ok, 1 diagnostics with errors,
// 2 usage or I/O error; library code returns errors, only this file and
// the subcommands print.
#include <iostream>
#include <new>

#include "common.h"

int main(int argc, char **argv) {
  using namespace cad::tool;
  CLI::App app{"cadc: compile, verify and package CAD collective algorithms"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cadc 0.1 (CAD program format v1)");
  Runner run;
  add_check(app, &run);
  add_fmt(app, &run);
  add_compile(app, &run);
  add_disasm(app, &run);
  add_verify(app, &run);
  add_dot(app, &run);
  add_topo(app, &run);
  add_build(app, &run);
  add_op(app, &run);
  add_simulate(app, &run);
  add_select(app, &run);
  add_lib(app, &run);
  add_info(app, &run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    app.exit(e);
    return kUsage;
  }
  try {
    return run();
  } catch (const UsageError &e) {
    std::cerr << "cadc: error: " << e.what() << "\n";
    return kUsage;
  } catch (const std::bad_alloc &) {
    std::cerr << "cadc: error: out of memory\n";
    return kUsage;
  } catch (const std::exception &e) {
    std::cerr << "cadc: internal error: " << e.what() << "\n";
    return kUsage;
  }
}
