// check.h - semantic analysis: resolves every name to an environment slot,
// every buffer reference to a buffer, every call to a built-in; types
// every expression (integers, booleans, topology levels); checks
// parameters, scratch sizes, the sweep, and that the requirements can
// hold for some instance.  Names cannot be redefined or shadowed.
#pragma once

#include "ast.h"
#include "diag.h"

namespace cad {

// `reduce ... op NAME` resolves NAME among the built-in ops, then ops (the
// user-defined operators of the library or of the command line).
bool check_algorithm(Algorithm &a, Diagnostics *diags, const UserOps &ops = {});
bool check_module(Module &m, Diagnostics *diags, const UserOps &ops = {});

}  // namespace cad
