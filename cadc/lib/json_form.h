// json_form.h - the JSON form of an algorithm file: the same AST, as
// schemas/algorithm.schema.json describes.  Reading validates against the
// schema first (errors located by JSON pointer); locations of the AST are
// JSON pointers.  Writing gives the canonical JSON that `cadc fmt --to
// json` prints; DSL -> JSON -> DSL and JSON -> DSL -> JSON round-trip.
#pragma once

#include <string>

#include "ast.h"
#include "diag.h"
#include "source.h"

namespace cad {

bool read_json_module(const SourceManager &sm, uint32_t file, Module *out, Diagnostics *diags);
std::string write_json_module(const Module &m);

}  // namespace cad
