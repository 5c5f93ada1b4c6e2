// userop.cpp - see userop.h.
#include "userop.h"

#include <cinttypes>
#include <cstdio>
#include <cctype>
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

bool userop_from_json(const nlohmann::json &j, UserOp *out, std::string *error) {
  auto fail = [&](const std::string &m) {
    *error = m;
    return false;
  };
  if (!j.is_object()) return fail("an operator must be an object");
  for (const char *k : {"name", "elem_size", "commutative", "code", "consts"})
    if (!j.contains(k)) return fail(std::string("an operator needs \"") + k + "\"");
  UserOp op;
  if (!j["name"].is_string()) return fail("\"name\" must be a string");
  op.name = j["name"].get<std::string>();
  bool ident = !op.name.empty() && op.name.size() <= 64 && !std::isdigit(static_cast<unsigned char>(op.name[0]));
  for (char c : op.name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ident) return fail("\"name\" must be a C identifier of at most 64 characters");
  if (!j["elem_size"].is_number_unsigned() || j["elem_size"].get<uint64_t>() < 1 ||
      j["elem_size"].get<uint64_t>() > CAD_VM_MAX_ELEM)
    return fail(op.name + ": \"elem_size\" must be 1.." + std::to_string(CAD_VM_MAX_ELEM));
  op.elem_size = j["elem_size"].get<uint32_t>();
  if (!j["commutative"].is_boolean()) return fail(op.name + ": \"commutative\" must be true or false");
  op.commutative = j["commutative"].get<bool>();
  if (!j["code"].is_array() || j["code"].empty() || j["code"].size() > CAD_VM_MAX_INSNS)
    return fail(op.name + ": \"code\" must be 1.." + std::to_string(CAD_VM_MAX_INSNS) + " instructions");
  for (const auto &i : j["code"]) {
    if (!i.is_array() || i.size() != 5) return fail(op.name + ": an instruction is [code, dst, a, b, imm]");
    for (size_t f = 0; f < 4; f++)
      if (!i[f].is_number_unsigned() || i[f].get<uint64_t>() > 255)
        return fail(op.name + ": instruction fields code, dst, a, b are 0..255");
    if (!i[4].is_number_integer() || i[4].get<int64_t>() < INT32_MIN || i[4].get<int64_t>() > INT32_MAX)
      return fail(op.name + ": an instruction's imm is a 32-bit integer");
    cad_vm_insn in{};
    in.code = i[0].get<uint8_t>();
    in.dst = i[1].get<uint8_t>();
    in.a = i[2].get<uint8_t>();
    in.b = i[3].get<uint8_t>();
    in.imm = static_cast<int32_t>(i[4].get<int64_t>());
    op.code.push_back(in);
  }
  if (!j["consts"].is_array() || j["consts"].size() > 4096) return fail(op.name + ": \"consts\" must be an array of at most 4096");
  for (const auto &k : j["consts"]) {
    if (!k.is_string()) return fail(op.name + ": a constant is a string \"0x\" and 16 hex digits");
    const std::string s = k.get<std::string>();
    if (s.size() != 18 || s.compare(0, 2, "0x") || s.find_first_not_of("0123456789abcdef", 2) != std::string::npos)
      return fail(op.name + ": a constant is a string \"0x\" and 16 lowercase hex digits, not \"" + s.substr(0, 40) + "\"");
    op.consts.push_back(std::stoull(s.substr(2), nullptr, 16));
  }
  if (j.contains("file") && j["file"].is_string()) op.file = j["file"].get<std::string>();
  if (j.contains("type") && j["type"].is_string()) op.type = j["type"].get<std::string>();
  if (j.contains("line") && j["line"].is_number_unsigned()) op.line = j["line"].get<uint32_t>();
  if (j.contains("fields") && j["fields"].is_array())
    for (const auto &f : j["fields"]) {
      if (!f.is_array() || f.size() != 2 || !f[0].is_number_unsigned() || !f[1].is_string() ||
          f[0].get<uint64_t>() >= op.elem_size)
        return fail(op.name + ": a field is [offset, kind] inside the element");
      op.fields.push_back({f[0].get<uint32_t>(), f[1].get<std::string>()});
    }
  if (j.contains("col") && j["col"].is_number_unsigned()) op.col = j["col"].get<uint32_t>();
  const std::string why = userop_verify(op);
  if (!why.empty()) return fail(op.name + ": the core verifier rejects its code: " + why);
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
  return {{"cadop", 1}, {"file", file}, {"ops", list}};
}

bool read_cadop(const std::string &text, std::vector<UserOp> *ops, std::string *error) {
  nlohmann::json doc;
  try {  // not parse(text, nullptr, false): it still throws on a number out of range (found by fuzz_cadc)
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    *error = "not valid JSON: " + json_error_text(e);
    return false;
  }
  if (!doc.is_object()) {
    *error = "not a JSON object";
    return false;
  }
  if (!doc.contains("cadop") || doc["cadop"] != 1) {
    *error = "not a .cadop file (\"cadop\": 1 is missing)";
    return false;
  }
  if (!doc.contains("ops") || !doc["ops"].is_array()) {
    *error = "\"ops\" must be an array";
    return false;
  }
  for (size_t i = 0; i < doc["ops"].size(); i++) {
    UserOp op;
    std::string why;
    if (!userop_from_json(doc["ops"][i], &op, &why)) {
      *error = "ops/" + std::to_string(i) + ": " + why;
      return false;
    }
    for (const UserOp &o : *ops)
      if (o.name == op.name) {
        *error = "ops/" + std::to_string(i) + ": a second operator named " + op.name;
        return false;
      }
    ops->push_back(std::move(op));
  }
  return true;
}

}  // namespace cad
