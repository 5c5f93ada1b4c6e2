// cmd_disasm.cpp - cadc disasm FILE.cadbc: the core verifier first, then the
// program as text.  A rejected file exits 1 with the verifier's message;
// any bytes are safe to give it.
#include <fstream>
#include <iostream>
#include <sstream>

#include "../../kmod/core/cad_core.h"
#include "common.h"

namespace cad::tool {

namespace {
struct DisasmOptions {
  std::vector<std::string> files;
};
}  // namespace

void add_disasm(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<DisasmOptions>();
  CLI::App *cmd = app.add_subcommand("disasm", "Verify CAD programs (.cadbc) and print them as text");
  cmd->add_option("files", opt->files, "Program files")->required();
  cmd->callback([opt, run] {
    *run = [opt] {
      int status = kOk;
      for (const std::string &f : opt->files) {
        if (is_cadlib(f))
          throw UsageError(f + " is a CAD library (.cadlib), not a CAD program: `cadc lib show " + f +
                           "` lists what it holds");
        std::string bytes, error;
        bool too_large;
        if (!read_file(f, cad_default_limits.max_image_size, &bytes, &error, &too_large)) {
          if (!too_large) throw UsageError(error);
          std::cerr << f << ": rejected: more bytes than the limit of " << cad_default_limits.max_image_size
                    << "\n";
          status = kDiagnostics;
          continue;
        }
        std::vector<uint64_t> image((bytes.size() + 7) / 8 + 1, 0);  // 8-byte aligned copy
        std::memcpy(image.data(), bytes.data(), bytes.size());
        char msg[1024];
        cad_log log;
        cad_log_init(&log, msg, sizeof(msg));
        cad_prog prog;
        const int err = cad_verify(image.data(), static_cast<uint32_t>(bytes.size()), nullptr, &prog, &log);
        if (err) {
          std::cerr << f << ": rejected by the verifier (" << (err == -E2BIG ? "E2BIG" : "EINVAL") << "): " << msg;
          status = kDiagnostics;
          continue;
        }
        if (opt->files.size() > 1) std::cout << "; " << f << "\n";
        cad_disasm(&prog, [](void *, const char *text, __u32 len) { std::cout.write(text, len); }, nullptr);
      }
      return status;
    };
  });
}

}  // namespace cad::tool
