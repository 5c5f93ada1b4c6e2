// parser.h - the DSL (.cad) parser.
//
//   module     := algorithm*
//   algorithm  := 'algorithm' NAME ':' COLLECTIVE header* block
//   header     := 'param' NAME '=' expr | 'requires' expr
//               | 'scratch' NAME '[' expr ']' | 'inplace'
//               | 'sweep' ( 'ranks' spec | 'sizes' spec | 'roots' ('all' | spec)
//                         | 'with' NAME '=' spec | 'topology' (STRING | 'flat') )+
//   spec       := INT ['..' INT] (',' INT ['..' INT])*
//   block      := '{' stmt* '}'
//   stmt       := 'let' NAME '=' expr
//               | 'for' NAME 'in' expr '..' expr ['step' expr] block
//               | 'if' expr block ['else' (block | if-stmt)]
//               | 'parallel' block | 'fence'
//               | 'send' ref 'to' expr ['tag' expr] ['by' ('sender' | 'receiver')]
//               | 'recv' ref 'from' expr ['tag' expr] ['by' ('sender' | 'receiver')]
//               | 'copy' ref 'from' ref | 'reduce' ref 'from' ref ['op' NAME]
//   ref        := NAME ['[' expr ':' expr ']']
//   expr       := C-like, lowest first: ?: || && (== != < <= > >=) | ^ & (<< >>)
//                 (+ -) (* / %) unary(- ! ~), calls, names, integers, true, false;
//                 'and', 'or', 'not' spell && || !
// Comments run from '#' to the end of the line.
#pragma once

#include "ast.h"
#include "diag.h"
#include "source.h"

namespace cad {

// Parses a DSL file; stops at the first syntax error (reported).
bool parse_dsl(const SourceManager &sm, uint32_t file, Module *out, Diagnostics *diags);

// "node", "package", "numa", "l3".
const char *level_name(int level);

}  // namespace cad
