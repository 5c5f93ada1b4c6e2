// printer.h - the DSL's canonical text: what `cadc fmt --to dsl` writes.
// Two-space indentation, minimal parentheses, canonical operator
// spellings (&& || !); comments and blank lines between statements kept.
#pragma once

#include <string>

#include "ast.h"

namespace cad {

std::string print_module(const Module &m);
std::string print_expr(const Expr &e);

}  // namespace cad
