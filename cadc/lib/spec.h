// spec.h - values on the command line: SPEC is a comma list of numbers and
// a..b ranges ("1..4,8,16"); k=v parameter settings; topology files.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "topology.h"

namespace cad {

// Parses SPEC; false with *error set.
bool parse_spec(const std::string &text, std::vector<int64_t> *out, std::string *error);
// The SPEC of sorted values, runs as ranges: "1..33,64".
std::string format_spec(const std::vector<int64_t> &sorted);
// Parses "name=SPEC".
bool parse_setting(const std::string &text, std::string *name, std::vector<int64_t> *values,
                   std::string *error);
// Reads and validates a topology file (schemas/topology.schema.json).
bool load_machine(const std::string &path, Machine *out, std::string *error);
// The same for the text of one; a schema error is "/pointer: message"
// (load_machine prefixes "path:" to that, "path: " to the others).
bool parse_machine(const std::string &text, Machine *out, std::string *error);

}  // namespace cad
