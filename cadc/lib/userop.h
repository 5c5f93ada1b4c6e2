// userop.h - user-defined reduction operators as the rest of CAD sees
// them: VM bytecode (kmod/uapi/cad.h) with a name, an element size and
// whether the operator is commutative.  The C front end that produces them
// (cadc/opc, Clang LibTooling) is a module only the cadc tool loads; this part
// is in libcadc, so the runtime can read them from a .cadlib or a .cadop.
//
// A .cadop file (schemas/cadop.schema.json) and the "ops" of a .cadlib hold
// the same objects:
//   {"name": "complex_mul", "elem_size": 16, "commutative": false,
//    "file": "complex_mul.c", "line": 10, "col": 1, "type": "struct cplx",
//    "fields": [[0, "f64"], [8, "f64"]],
//    "code": [[code, dst, a, b, imm], ...], "consts": ["0x3ff0000000000000"]}
// Reading one validates it (every key, type and range; errors located by
// JSON pointer) and runs the core verifier on it: bytecode from a file is
// never trusted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "../../kmod/uapi/cad.h"

struct cad_image_desc;

namespace cad {

struct SchemaError;  // schema.h: a JSON pointer and a message

// The .cadop format this cadc writes and reads ("cadop"): 2 has a hash.
constexpr int kCadopFormat = 2;

struct UserOp {
  std::string name;
  uint32_t elem_size = 0;
  bool commutative = false;
  std::vector<cad_vm_insn> code;
  std::vector<uint64_t> consts;
  std::string file;          // where it is defined, for messages
  uint32_t line = 0, col = 0;
  std::string type;          // the element type as written ("struct cplx")
  // The scalar fields of the element: byte offset and kind ("i8" .. "u64",
  // "bool", "f32", "f64"); for tools and tests, not needed to run it.
  std::vector<std::pair<uint32_t, std::string>> fields;
};

// The name of an op: the user-defined operator's (op is CAD_OP_USER), or
// the built-in's.
std::string op_name(unsigned op, const UserOp *user_op);

// The built-in op (CAD_OP_SUM .. CAD_OP_MAXLOC) called name, or
// CAD_OP_NONE if there is none.
unsigned builtin_op(const std::string &name);

// The datatype an instance of a built-in op is verified with when none is
// given: i32 where the op applies to it, else the first it applies to
// (i32_i32 for minloc and maxloc).
unsigned default_dtype(unsigned op);

nlohmann::json userop_to_json(const UserOp &op);
// Validates an op object that is at pointer ("/ops/2") in its document:
// cadop.schema.json's $defs/op, then what a schema cannot say (each field
// inside the element, the fields in order of offset and apart); false
// with *error, located.
bool validate_userop_json(const nlohmann::json &j, const std::string &pointer, SchemaError *error);
// Validates the "ops" of a .cadop or .cadlib (pointer "/ops"): each op
// as above, and no two with one name.
bool validate_userops_json(const nlohmann::json &ops, SchemaError *error);
// Validates one op object, reads it and runs the core verifier on it;
// false with *error, located.
bool userop_from_json(const nlohmann::json &j, const std::string &pointer, UserOp *out, SchemaError *error);

// The core verifier on the op alone (wrapped in a one-node program); ""
// if it accepts, else its message.
std::string userop_verify(const UserOp &op);

// Its VM code as text, through the core's disassembler.
std::string userop_disasm(const UserOp &op);

// Applies op to count elements (inout = in op inout) with the core's
// interpreter, as the runtime does: for tests and cadc op run.
void userop_apply(const UserOp &op, void *inout, const void *in, uint64_t count);

// The OPS, CODE and CONSTS sections of a program: its operators one after
// the other (cad_node.user_op is an operator's index).
class OpSection {
 public:
  // op's index, or -1 if it is not in the section.
  int find(const UserOp &op) const;
  // Adds op (name: a string offset; line: an index in LINES or
  // CAD_NO_LINE) and returns its index.
  uint32_t add(const UserOp &op, uint32_t name, uint32_t line);
  bool empty() const { return ops_.empty(); }
  // Points d's OPS, CODE and CONSTS at the section (it must outlive d).
  void fill(cad_image_desc *d) const;

 private:
  std::vector<const UserOp *> which_;
  std::vector<cad_user_op> ops_;
  std::vector<cad_vm_insn> code_;
  std::vector<uint64_t> consts_;
};

// The image of a one-rank program that reduces buffer 0 (send, `bytes`)
// into buffer 1 (recv) with op: verified; false with *error.
bool userop_image(const UserOp &op, uint64_t bytes, std::vector<uint64_t> *image, std::string *error);

// A .cadop document, hash included: {"cadop": 2, "file": ..., "ops":
// [...], "hash": "fnv1a64:..."} (content_hash, schema.h).
nlohmann::json cadop_document(const std::string &file, const std::vector<UserOp> &ops);
// Reads a .cadop file's text, in this order: JSON without a key twice in
// an object; the format; the schema and validate_userop_json, operator
// names unique; the hash; the core verifier on each operator.  A check
// that fails is the error (located; pointer "" for the file as a whole).
bool read_cadop(const std::string &text, std::vector<UserOp> *ops, SchemaError *error);
// The same, the error as one line: "/ops/0/fields/1/1: message".
bool read_cadop(const std::string &text, std::vector<UserOp> *ops, std::string *error);

}  // namespace cad
