// cmd_info.cpp - cadc info: what cadrt would find on this machine (the
// same report as cadrun --info: cadrt/tools/info.cpp).
#include "../../cadrt/tools/info.h"
#include "common.h"

namespace cad::tool {

void add_info(CLI::App &app, Runner *run) {
  CLI::App *cmd = app.add_subcommand(
      "info", "What the runtime would find here: its library, each engine and why it is or is not available, the "
              "CADRT_* settings");
  cmd->callback([run] {
    *run = [] { return cadrt::print_info("cadc", CAD_VERSION_STRING); };
  });
}

}  // namespace cad::tool
