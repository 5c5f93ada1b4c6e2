// userop.cpp - see userop.h.
#include "userop.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cad_core.h"
#include "schema.h"

namespace cad {

std::string op_name(unsigned op, const UserOp *user_op) {
  return op == CAD_OP_USER && user_op ? user_op->name : std::string(cad_op_name(op));
}

unsigned builtin_op(const std::string &name) {
  for (unsigned op = CAD_OP_SUM; op < CAD_OP_USER; op++)
    if (name == cad_op_name(op)) return op;
  return CAD_OP_NONE;
}

unsigned default_dtype(unsigned op) {
  if (cad_reduce_supported(op, CAD_DT_INT32)) return CAD_DT_INT32;
  for (unsigned dt = CAD_DT_INT8; dt < CAD_DT_USER; dt++)
    if (cad_reduce_supported(op, dt)) return dt;
  return CAD_DT_INT32;
}

namespace {

// A one-node program that reduces buffer 0 into buffer 1 with op: how the
// core verifier and interpreter see an operator on its own.
struct OneNode {
  std::vector<uint64_t> image;
  cad_prog prog{};
  std::string error;  // the verifier's message, "" if it accepted

  OneNode(const UserOp &op, uint64_t bytes) {
    const uint32_t name_off = 1;
    std::string strings(1, '\0');
    strings += op.name;
    strings += '\0';
    cad_buffer bufs[2] = {};
    bufs[0].kind = CAD_BUF_SEND;
    bufs[0].access = CAD_ACC_READ;
    bufs[0].size = bytes;
    bufs[1].kind = CAD_BUF_RECV;
    bufs[1].access = CAD_ACC_READ | CAD_ACC_WRITE;
    bufs[1].size = bytes;
    cad_node node{};
    node.kind = CAD_NODE_REDUCE;
    node.op = CAD_OP_USER;
    node.dtype = CAD_DT_USER;
    node.dst_buf = 1;
    node.len = bytes;
    node.line = CAD_NO_LINE;
    cad_image_desc d{};
    d.nranks = 1;
    d.collective = CAD_COLL_ALLREDUCE;
    d.buffers = bufs;
    d.n_buffers = 2;
    d.nodes = &node;
    d.n_nodes = 1;
    OpSection ops;
    node.user_op = ops.add(op, name_off, CAD_NO_LINE);
    ops.fill(&d);
    d.strings = strings.data();
    d.n_strings = static_cast<uint32_t>(strings.size());
    const uint64_t size = cad_image_size(&d);
    if (!size || size > UINT32_MAX) {
      error = "the operator is too large for a program image";
      return;
    }
    image.assign((size + 7) / 8, 0);
    if (cad_image_write(&d, image.data(), size)) {
      error = "the program image could not be written";
      return;
    }
    char msg[512];
    cad_log log;
    cad_log_init(&log, msg, sizeof(msg));
    if (cad_verify(image.data(), static_cast<uint32_t>(size), nullptr, &prog, &log)) {
      error = msg;
      if (!error.empty() && error.back() == '\n') error.pop_back();
      if (error.empty()) error = "rejected by the core verifier";
    }
  }
};

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

}  // namespace

int OpSection::find(const UserOp &op) const {
  for (size_t i = 0; i < which_.size(); i++)
    if (which_[i] == &op) return static_cast<int>(i);
  return -1;
}

uint32_t OpSection::add(const UserOp &op, uint32_t name, uint32_t line) {
  cad_user_op u{};
  u.name = name;
  u.elem_size = op.elem_size;
  u.code_first = static_cast<uint32_t>(code_.size());
  u.code_count = static_cast<uint32_t>(op.code.size());
  u.const_first = static_cast<uint32_t>(consts_.size());
  u.const_count = static_cast<uint32_t>(op.consts.size());
  u.flags = op.commutative ? CAD_UOP_COMMUTATIVE : 0;
  u.line = line;
  which_.push_back(&op);
  ops_.push_back(u);
  code_.insert(code_.end(), op.code.begin(), op.code.end());
  consts_.insert(consts_.end(), op.consts.begin(), op.consts.end());
  return static_cast<uint32_t>(ops_.size() - 1);
}

void OpSection::fill(cad_image_desc *d) const {
  d->ops = ops_.empty() ? nullptr : ops_.data();
  d->n_ops = static_cast<uint32_t>(ops_.size());
  d->code = code_.empty() ? nullptr : code_.data();
  d->n_code = static_cast<uint32_t>(code_.size());
  d->consts = consts_.empty() ? nullptr : reinterpret_cast<const __u64 *>(consts_.data());
  d->n_consts = static_cast<uint32_t>(consts_.size());
}

nlohmann::json userop_to_json(const UserOp &op) {
  nlohmann::json code = nlohmann::json::array(), consts = nlohmann::json::array();
  for (const cad_vm_insn &in : op.code) code.push_back({in.code, in.dst, in.a, in.b, in.imm});
  for (uint64_t k : op.consts) consts.push_back(hex64(k));
  nlohmann::json fields = nlohmann::json::array();
  for (const auto &[off, kind] : op.fields) fields.push_back({off, kind});
  return {{"fields", fields}, {"name", op.name}, {"elem_size", op.elem_size}, {"commutative", op.commutative},
          {"file", op.file},  {"line", op.line},           {"col", op.col},
          {"type", op.type},  {"code", code},              {"consts", consts}};
}

namespace {

// The size of a field's kind (the kinds of cadop.schema.json), 0 if none.
uint32_t kind_size(const std::string &kind) {
  static const std::pair<const char *, uint32_t> kSizes[] = {
      {"i8", 1},  {"u8", 1},  {"bool", 1}, {"i16", 2}, {"u16", 2}, {"i32", 4},
      {"u32", 4}, {"f32", 4}, {"i64", 8},  {"u64", 8}, {"f64", 8}};
  for (const auto &[name, size] : kSizes)
    if (kind == name) return size;
  return 0;
}

}  // namespace

bool validate_userop_json(const nlohmann::json &j, const std::string &pointer, SchemaError *error) {
  std::vector<SchemaError> errors;
  if (!Schema::builtin("cadop.schema.json").validate_def("op", j, pointer, &errors)) {
    *error = errors.front();
    return false;
  }
  // The fields: each inside the element, in order of offset and apart.
  const uint64_t elem_size = j["elem_size"].get<uint64_t>();
  const nlohmann::json &fields = j["fields"];
  uint64_t end = 0;  // of the field before
  for (size_t k = 0; k < fields.size(); k++) {
    const uint64_t offset = fields[k][0].get<uint64_t>();
    const std::string &kind = fields[k][1].get_ref<const std::string &>();
    const std::string at = pointer + "/fields/" + std::to_string(k);
    if (offset < end) {
      *error = {at + "/0", "a " + kind + " at byte " + std::to_string(offset) +
                               " overlaps the field before it, which ends at byte " + std::to_string(end) +
                               ": fields are in order of offset and apart"};
      return false;
    }
    end = offset + kind_size(kind);
    if (end > elem_size) {
      *error = {at, "a " + kind + " at byte " + std::to_string(offset) + " ends at byte " + std::to_string(end) +
                        ", past the end of the element (elem_size " + std::to_string(elem_size) + ")"};
      return false;
    }
  }
  return true;
}

bool validate_userops_json(const nlohmann::json &ops, SchemaError *error) {
  for (size_t i = 0; i < ops.size(); i++) {
    const std::string at = "/ops/" + std::to_string(i);
    if (!validate_userop_json(ops[i], at, error)) return false;
    for (size_t k = 0; k < i; k++)
      if (ops[k]["name"] == ops[i]["name"]) {
        *error = {at + "/name", "a second operator named " + ops[i]["name"].get<std::string>() +
                                    " (the first is /ops/" + std::to_string(k) + ")"};
        return false;
      }
  }
  return true;
}

bool userop_from_json(const nlohmann::json &j, const std::string &pointer, UserOp *out, SchemaError *error) {
  if (!validate_userop_json(j, pointer, error)) return false;
  UserOp op;
  op.name = j["name"].get<std::string>();
  op.elem_size = j["elem_size"].get<uint32_t>();
  op.commutative = j["commutative"].get<bool>();
  op.file = j["file"].get<std::string>();
  op.line = j["line"].get<uint32_t>();
  op.col = j["col"].get<uint32_t>();
  op.type = j["type"].get<std::string>();
  for (const auto &f : j["fields"]) op.fields.push_back({f[0].get<uint32_t>(), f[1].get<std::string>()});
  for (const auto &i : j["code"]) {
    cad_vm_insn in{};
    in.code = i[0].get<uint8_t>();
    in.dst = i[1].get<uint8_t>();
    in.a = i[2].get<uint8_t>();
    in.b = i[3].get<uint8_t>();
    in.imm = i[4].get<int32_t>();
    op.code.push_back(in);
  }
  for (const auto &k : j["consts"])
    op.consts.push_back(std::stoull(k.get_ref<const std::string &>().substr(2), nullptr, 16));
  const std::string why = userop_verify(op);
  if (!why.empty()) {
    *error = {pointer + "/code", op.name + ": the core verifier rejects its code: " + why};
    return false;
  }
  *out = std::move(op);
  return true;
}

std::string userop_verify(const UserOp &op) { return OneNode(op, op.elem_size).error; }

std::string userop_disasm(const UserOp &op) {
  OneNode one(op, op.elem_size);
  if (!one.error.empty()) return "; rejected: " + one.error + "\n";
  std::string text, all;
  cad_disasm(&one.prog, [](void *ctx, const char *t, __u32 len) { static_cast<std::string *>(ctx)->append(t, len); },
             &all);
  // Keep the operator's part of the listing.
  const size_t at = all.find("op 0 ");
  text = at == std::string::npos ? all : all.substr(at);
  return text;
}

void userop_apply(const UserOp &op, void *inout, const void *in, uint64_t count) {
  OneNode one(op, op.elem_size);
  if (!one.error.empty() || !count) return;
  std::vector<uint64_t> scratch(CAD_VM_SCRATCH_SIZE / 8 + 1);
  cad_vm_run_fpu(&one.prog, &one.prog.ops[0], inout, in, count, scratch.data());
}

bool userop_image(const UserOp &op, uint64_t bytes, std::vector<uint64_t> *image, std::string *error) {
  OneNode one(op, bytes);
  if (!one.error.empty()) {
    *error = one.error;
    return false;
  }
  *image = std::move(one.image);
  return true;
}

nlohmann::json cadop_document(const std::string &file, const std::vector<UserOp> &ops) {
  nlohmann::json list = nlohmann::json::array();
  for (const UserOp &op : ops) list.push_back(userop_to_json(op));
  nlohmann::json doc = {{"cadop", kCadopFormat}, {"file", file}, {"ops", list}};
  doc["hash"] = content_hash(doc);
  return doc;
}

bool read_cadop(const std::string &text, std::vector<UserOp> *ops, SchemaError *error) {
  nlohmann::json doc;
  if (!parse_json_strict(text, &doc, error)) {
    if (error->pointer.empty()) error->message = "not valid JSON: " + error->message;
    return false;
  }
  if (!doc.is_object() || !doc.contains("cadop")) {
    *error = {"", "not a .cadop file: a JSON object with \"cadop\": " + std::to_string(kCadopFormat) + " is expected"};
    return false;
  }
  if (doc["cadop"] == 1) {
    *error = {"/cadop", "written by an older cadc (.cadop format 1, without a content hash): rebuild it with cadc op "
                        "compile"};
    return false;
  }
  std::vector<SchemaError> errors;
  if (!Schema::builtin("cadop.schema.json").validate(doc, &errors)) {
    *error = errors.front();
    if (error->pointer.empty()) error->pointer = "/";  // (the document's own keys)
    return false;
  }
  const nlohmann::json &list = doc["ops"];
  if (!validate_userops_json(list, error)) return false;
  const std::string hash = content_hash(doc);
  if (hash != doc["hash"].get_ref<const std::string &>()) {
    *error = {"/hash", "the file was modified after it was written: hash mismatch (it records " +
                           doc["hash"].get<std::string>() + ", its content hashes to " + hash +
                           "); compile the operators again with cadc op compile"};
    return false;
  }
  std::vector<UserOp> read(list.size());
  for (size_t i = 0; i < list.size(); i++)
    if (!userop_from_json(list[i], "/ops/" + std::to_string(i), &read[i], error)) return false;
  for (UserOp &op : read) ops->push_back(std::move(op));
  return true;
}

bool read_cadop(const std::string &text, std::vector<UserOp> *ops, std::string *error) {
  SchemaError e;
  if (read_cadop(text, ops, &e)) return true;
  *error = e.pointer.empty() ? e.message : e.pointer + ": " + e.message;
  return false;
}

}  // namespace cad
