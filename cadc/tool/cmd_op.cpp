// cmd_op.cpp - cadc op check|compile|disasm: user-defined reduction
// operators (cadc/opc: C through Clang LibTooling into VM bytecode).
//   cadc op check FILE.c...           diagnostics only
//   cadc op compile FILE.c [-o OUT]   a .cadop file (default: FILE.cadop)
//   cadc op disasm FILE.c|FILE.cadop  the bytecode as text
#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "../lib/schema.h"
#include "../lib/userop.h"
#include "../opc/opc.h"
#include "common.h"

namespace cad::tool {

namespace {
struct OpOptions {
  std::vector<std::string> files, include_dirs, defines;
  std::string output;
  bool json = false;
};

// -I and -D take one value each time, as a C compiler's do: as vector
// options they would take every word up to the next option, the file
// included ("-I DIR FILE.c -o X").
void add_common(CLI::App *cmd, OpOptions *o) {
  for (CLI::Option *opt :
       {cmd->add_option("-I,--include", o->include_dirs, "Header search folder (repeatable)"),
        cmd->add_option("-D,--define", o->defines, "Preprocessor definition NAME[=VALUE] (repeatable)")})
    opt->expected(1)->allow_extra_args(false)->take_all();
  cmd->add_flag("--json", o->json, "Diagnostics as JSON on stdout");
}

// The operator compiler, loaded at its first use (opc.h says why):
// libcadc-opc.so in the lib folder beside the tool's bin folder (build/lib
// for build/bin/cadc).
CompileOpFile load_opc() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string path = (exe.parent_path().parent_path() / "lib" / "libcadc-opc.so").string();
  void *h = ec ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    throw UsageError("cannot load the operator compiler " + path + ": " +
                     (ec ? ec.message() : why ? std::string(why) : "dlopen failed"));
  }
  const auto *abi = static_cast<const unsigned long long *>(dlsym(h, "cad_opc_abi"));
  const auto *entry = static_cast<const CompileOpFile *>(dlsym(h, "cad_opc_compile_op_file"));
  if (!abi || !entry || *abi != opc_abi() || !*entry) {
    dlclose(h);
    throw UsageError("the operator compiler " + path + " is not this cadc's (another build?)");
  }
  return *entry;
}

// (Loaded once; a load that threw is tried again at the next call.)
CompileOpFile opc() {
  static const CompileOpFile fn = load_opc();
  return fn;
}

OpcOptions opc_options(const OpOptions &o) {
  OpcOptions c;
  c.include_dirs = o.include_dirs;
  c.defines = o.defines;
  return c;
}
}  // namespace

bool load_ops(Session &s, const std::string &path, const OpcOptions &opts, std::vector<UserOp> *out) {
  if (std::filesystem::path(path).extension() == ".cadop") {
    std::string text, error;
    if (!read_file(path, kMaxSourceBytes, &text, &error)) throw UsageError(error);
    const uint32_t f = s.sm.add(path, text);
    SchemaError bad;
    if (!read_cadop(text, out, &bad)) {
      s.diags.error(Code::OpBytecode, Loc{f, 0, 0, bad.pointer}, bad.message);
      return false;
    }
    return true;
  }
  if (!std::filesystem::is_regular_file(path)) throw UsageError(path + ": no such file");
  return opc()(path, opts, s.sm, &s.diags, out);
}

void add_op(CLI::App &app, Runner *run) {
  CLI::App *op = app.add_subcommand("op", "User-defined reduction operators: C to verified VM bytecode");
  op->require_subcommand(1);

  auto check = std::make_shared<OpOptions>();
  CLI::App *c = op->add_subcommand("check", "Compile operators and report what is wrong, at its line and column");
  c->add_option("files", check->files, "C files with CAD_OP functions")->required();
  add_common(c, check.get());
  c->callback([check, run] {
    *run = [check] {
      Session s;
      s.json = check->json;
      nlohmann::json ops = nlohmann::json::array();
      for (const std::string &f : check->files) {
        std::vector<UserOp> out;
        load_ops(s, f, opc_options(*check), &out);
        for (const UserOp &u : out) {
          ops.push_back({{"name", u.name}, {"file", f}, {"elem_size", u.elem_size}, {"commutative", u.commutative},
                         {"instructions", u.code.size()}});
          if (!s.json)
            std::cout << f << ": " << u.name << ": ok, " << u.type << " (" << u.elem_size << " bytes), "
                      << (u.commutative ? "commutative" : "noncommutative") << ", " << u.code.size()
                      << " instructions\n";
        }
      }
      return report(s, {{"ops", ops}});
    };
  });

  auto compile = std::make_shared<OpOptions>();
  CLI::App *k = op->add_subcommand("compile", "Compile the operators of a C file into a .cadop file");
  k->add_option("file", compile->files, "A C file with CAD_OP functions")->required()->expected(1);
  k->add_option("-o,--output", compile->output, "Output file (default: the input with .cadop)");
  add_common(k, compile.get());
  k->callback([compile, run] {
    *run = [compile] {
      Session s;
      s.json = compile->json;
      const std::string in = compile->files.at(0);
      std::vector<UserOp> out;
      if (!load_ops(s, in, opc_options(*compile), &out)) return report(s);
      std::string dest = compile->output;
      if (dest.empty()) dest = std::filesystem::path(in).replace_extension(".cadop").string();
      std::ofstream f(dest, std::ios::binary | std::ios::trunc);
      f << cadop_document(std::filesystem::path(in).filename().string(), out).dump(1) << "\n";
      f.close();
      if (!f) throw UsageError("cannot write " + dest);
      return report(s, {{"output", dest}});
    };
  });

  auto disasm = std::make_shared<OpOptions>();
  CLI::App *d = op->add_subcommand("disasm", "Print the VM code of operators (from C or .cadop), verified first");
  d->add_option("files", disasm->files, "C or .cadop files")->required();
  add_common(d, disasm.get());
  d->callback([disasm, run] {
    *run = [disasm] {
      Session s;
      s.json = disasm->json;
      for (const std::string &f : disasm->files) {
        std::vector<UserOp> out;
        if (!load_ops(s, f, opc_options(*disasm), &out)) continue;
        for (const UserOp &u : out) {
          std::cout << "; " << u.file << ":" << u.line << ":" << u.col << ": " << u.name << "(const " << u.type
                    << " *in, " << u.type << " *inout)\n";
          std::cout << userop_disasm(u);
        }
      }
      return report(s);
    };
  });
}

}  // namespace cad::tool
