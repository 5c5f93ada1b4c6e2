// schemas_embedded.h - the JSON Schemas of schemas/, compiled into cadc.
#pragma once

#include <string>

namespace cad {

// The text of schemas/<name>; throws if there is none.
const char *embedded_schema(const std::string &name);

}  // namespace cad
