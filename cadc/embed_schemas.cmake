# Writes OUT: a C++ file with every schema of SCHEMA_DIR as a string, so
# that cadc validates with exactly the files in schemas/.
file(GLOB schemas "${SCHEMA_DIR}/*.schema.json")
set(body "// Generated from schemas/ by cadc/embed_schemas.cmake: do not edit.\n#include <stdexcept>\n#include <string>\n#include \"schemas_embedded.h\"\nnamespace cad {\nconst char *embedded_schema(const std::string &name) {\n")
foreach(path ${schemas})
  get_filename_component(name "${path}" NAME)
  file(READ "${path}" text)
  string(APPEND body "  if (name == \"${name}\") return R\"CADSCHEMA(${text})CADSCHEMA\";\n")
endforeach()
string(APPEND body "  throw std::runtime_error(\"no built-in schema \" + name);\n}\n}  // namespace cad\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
