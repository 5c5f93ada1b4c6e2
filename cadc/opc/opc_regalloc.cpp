// opc_regalloc.cpp - scheduling, register allocation and emission (opc.h,
// step 5): the stores of the result, the order of the values, their
// registers and spill slots, and the UserOp of the emitted code.
#include <unordered_map>

#include "opc_priv.h"

namespace cad {
namespace opc {

namespace {

// Registers and spill slots over a schedule, emitting the VM code.
class RegAlloc {
 public:
  RegAlloc(const std::vector<Node> &nodes, const std::vector<SourceLocation> &node_loc,
           const std::vector<SeqItem> &seq, const std::vector<Store> &stores, SourceLocation at)
      : nodes_(nodes), node_loc_(node_loc), seq_(seq), stores_(stores), at_(at), reg_of_(nodes.size(), -1),
        slot_of_(nodes.size(), -1) {
    std::fill(std::begin(holder_), std::end(holder_), -1);
    std::fill(std::begin(freed_), std::end(freed_), -1L);
    std::fill(std::begin(slot_holder_), std::end(slot_holder_), -1);
    find_uses();
  }

  Emitted run();

 private:
  void find_uses();
  size_t next_use(int32_t v, size_t after) const;
  bool remat_ok(int32_t v) const;
  void push(const cad_vm_insn &in);
  void release(int r);
  int free_register(int avoid) const;
  int evictee(size_t p, std::initializer_list<int32_t> keep, size_t *use) const;
  void spill(int r, int32_t v);
  int grab(size_t p, std::initializer_list<int32_t> keep, int avoid = -1);
  void define(int32_t v, int r);
  void emit_leaf(int32_t v, int r);
  void materialise(int32_t v, size_t p, std::initializer_list<int32_t> keep);
  void release_dead(size_t p);
  void emit_store(size_t p);
  void emit_value(size_t p);

  const std::vector<Node> &nodes_;
  const std::vector<SourceLocation> &node_loc_;
  const std::vector<SeqItem> &seq_;
  const std::vector<Store> &stores_;
  SourceLocation at_;  // of the statement whose code is emitted
  std::unordered_map<int32_t, std::vector<size_t>> uses_;  // of each value, by position in seq_
  std::vector<int32_t> reg_of_, slot_of_;
  int32_t holder_[CAD_VM_NREGS], slot_holder_[CAD_VM_NSLOTS];
  // freed_[r]: how many instructions had been emitted when register r was
  // last released; -1 while it has never held a value.
  long freed_[CAD_VM_NREGS];
  std::vector<cad_vm_insn> code_;
  std::vector<uint64_t> consts_;
  std::map<uint64_t, int32_t> const_index_;
};

// Uses of each value, by position in seq_.
void RegAlloc::find_uses() {
  for (size_t p = 0; p < seq_.size(); p++) {
    if (seq_[p].value >= 0) {
      const Node &n = nodes_[seq_[p].value];
      for (int32_t x : {n.a, n.b, n.c})
        if (x >= 0) uses_[x].push_back(p);
    } else {
      uses_[stores_[seq_[p].store].value].push_back(p);
    }
  }
}

size_t RegAlloc::next_use(int32_t v, size_t after) const {
  auto it = uses_.find(v);
  if (it == uses_.end()) return SIZE_MAX;
  auto u = std::upper_bound(it->second.begin(), it->second.end(), after);
  return u == it->second.end() ? SIZE_MAX : *u;
}

// A value that can be computed again instead of kept: a constant, or a
// load of bytes that no store of the operator overwrites.
bool RegAlloc::remat_ok(int32_t v) const {
  const Node &n = nodes_[v];
  if (n.code == kConst) return true;
  if (cad_vm_opcode_format(n.code) != CAD_VMF_LD) return false;
  const uint32_t lo = static_cast<uint32_t>(n.imm), hi = lo + cad_vm_opcode_width(n.code);
  for (const Store &s : stores_)
    if (lo < s.off + bytes_of(s.kind) && s.off < hi) return false;
  return true;
}

void RegAlloc::push(const cad_vm_insn &in) {
  if (code_.size() + 1 >= CAD_VM_MAX_INSNS)
    fail(Code::OpTooBig, at_, "the operator needs more than " + std::to_string(CAD_VM_MAX_INSNS) + " VM instructions");
  code_.push_back(in);
}

// Register r's value leaves it (it stays in its slot, if spilled).
void RegAlloc::release(int r) {
  reg_of_[holder_[r]] = -1;
  holder_[r] = -1;
  freed_[r] = static_cast<long>(code_.size());
}

// A free register, or -1.  With `avoid` (a floating-point result), the
// free register released longest ago, never avoid itself when another is
// free: reusing a register just read would make the result overwrite an
// operand that the interpreter's fused plans (a deferred product, the NaN
// check) still need.
int RegAlloc::free_register(int avoid) const {
  int oldest = -1;
  for (int r = 0; r < CAD_VM_NREGS; r++)
    if (holder_[r] < 0 && r != avoid) {
      if (avoid < 0) return r;
      if (oldest < 0 || freed_[r] < freed_[oldest]) oldest = r;
    }
  if (oldest >= 0) return oldest;
  if (avoid >= 0 && holder_[avoid] < 0) return avoid;
  return -1;
}

// When all registers are taken, the one whose value is used furthest
// ahead (Belady), never one of keep; on a tie, the value that needs no
// spill.  *use: its next use.
int RegAlloc::evictee(size_t p, std::initializer_list<int32_t> keep, size_t *use) const {
  int best = -1;
  size_t best_use = 0;
  bool best_cheap = false;
  for (int r = 0; r < CAD_VM_NREGS; r++) {
    const int32_t v = holder_[r];
    if (std::find(keep.begin(), keep.end(), v) != keep.end()) continue;
    const size_t u = next_use(v, p - 1);
    const bool cheap = remat_ok(v) || slot_of_[v] >= 0;
    if (best < 0 || u > best_use || (u == best_use && cheap && !best_cheap)) {
      best = r;
      best_use = u;
      best_cheap = cheap;
    }
  }
  if (best < 0)
    fail(Code::OpTooBig, at_, "an instruction needs more than " + std::to_string(CAD_VM_NREGS) + " registers");
  *use = best_use;
  return best;
}

// Value v of register r to a free slot (once: values never change).
void RegAlloc::spill(int r, int32_t v) {
  int slot = -1;
  for (int k = 0; k < CAD_VM_NSLOTS && slot < 0; k++)
    if (slot_holder_[k] < 0) slot = k;
  if (slot < 0)
    fail(Code::OpTooBig, at_,
         "the operator needs more than " + std::to_string(CAD_VM_NREGS + CAD_VM_NSLOTS) +
             " values at once (the VM's registers and spill slots)");
  cad_vm_insn in{};
  in.code = CAD_VM_SPILL;
  in.a = static_cast<uint8_t>(r);
  in.imm = slot;
  push(in);
  slot_of_[v] = slot;
  slot_holder_[slot] = v;
}

// A free register at position p; never one of keep.  When all are taken,
// the value used furthest ahead leaves its register: a constant or a load
// that no store overwrites is computed again when it is next needed, any
// other value is spilled to a slot and filled back.
int RegAlloc::grab(size_t p, std::initializer_list<int32_t> keep, int avoid) {
  const int free = free_register(avoid);
  if (free >= 0) return free;
  size_t use;
  const int best = evictee(p, keep, &use);
  const int32_t v = holder_[best];
  if (!remat_ok(v) && slot_of_[v] < 0 && use != SIZE_MAX) spill(best, v);
  release(best);
  return best;
}

void RegAlloc::define(int32_t v, int r) {
  holder_[r] = v;
  reg_of_[v] = r;
}

// A constant or a load of value v into register r.
void RegAlloc::emit_leaf(int32_t v, int r) {
  const Node &n = nodes_[v];
  cad_vm_insn in{};
  in.dst = static_cast<uint8_t>(r);
  if (n.code == kConst) {
    const uint64_t k = static_cast<uint64_t>(n.imm);
    if (static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(k))) == k) {
      in.code = CAD_VM_MOVI;
      in.imm = static_cast<int32_t>(k);
    } else {
      auto it = const_index_.find(k);
      if (it == const_index_.end()) {
        it = const_index_.emplace(k, static_cast<int32_t>(consts_.size())).first;
        consts_.push_back(k);
      }
      in.code = CAD_VM_LDK;
      in.imm = it->second;
    }
  } else {
    in.code = n.code;
    in.a = n.space;
    in.imm = static_cast<int32_t>(n.imm);
  }
  push(in);
}

// Value v in a register at position p: filled from its slot, or a leaf
// computed again.
void RegAlloc::materialise(int32_t v, size_t p, std::initializer_list<int32_t> keep) {
  if (reg_of_[v] >= 0) return;
  const int r = grab(p, keep);
  if (slot_of_[v] >= 0) {
    cad_vm_insn in{};
    in.code = CAD_VM_FILL;
    in.dst = static_cast<uint8_t>(r);
    in.imm = slot_of_[v];
    push(in);
  } else {
    emit_leaf(v, r);
  }
  define(v, r);
}

// The registers and slots of values not used after p are free.
void RegAlloc::release_dead(size_t p) {
  for (int r = 0; r < CAD_VM_NREGS; r++)
    if (holder_[r] >= 0 && next_use(holder_[r], p) == SIZE_MAX) release(r);
  for (int k = 0; k < CAD_VM_NSLOTS; k++)
    if (slot_holder_[k] >= 0 && next_use(slot_holder_[k], p) == SIZE_MAX) {
      slot_of_[slot_holder_[k]] = -1;
      slot_holder_[k] = -1;
    }
}

void RegAlloc::emit_store(size_t p) {
  const Store &s = stores_[seq_[p].store];
  materialise(s.value, p, {s.value});
  cad_vm_insn in{};
  static const uint8_t st[] = {0, CAD_VM_ST_8, CAD_VM_ST_16, 0, CAD_VM_ST_32, 0, 0, 0, CAD_VM_ST_64};
  in.code = st[bytes_of(s.kind)];
  in.a = static_cast<uint8_t>(reg_of_[s.value]);
  in.imm = static_cast<int32_t>(s.off);
  push(in);
  release_dead(p);
}

void RegAlloc::emit_value(size_t p) {
  const int32_t v = seq_[p].value;
  const Node &n = nodes_[v];
  if (n.code == kConst || cad_vm_opcode_format(n.code) == CAD_VMF_LD) {
    if (next_use(v, p) == SIZE_MAX) return;
    materialise(v, p, {v});
    return;
  }
  for (int32_t x : {n.a, n.b, n.c})
    if (x >= 0) materialise(x, p, {n.a, n.b, n.c});
  cad_vm_insn in{};
  in.code = n.code;
  in.a = static_cast<uint8_t>(reg_of_[n.a]);
  if (n.b >= 0) in.b = static_cast<uint8_t>(reg_of_[n.b]);
  if (n.code == CAD_VM_SEL) in.imm = reg_of_[n.c];
  // Operands whose last use this is free their registers first, so
  // that the result may take one of them.
  release_dead(p);
  // A floating-point result written over its first operand makes the
  // interpreter take its exact two-NaN path for every element (it
  // needs the operand after the result): another register if one is
  // free.
  const bool fp = n.code >= CAD_VM_FADD && n.code <= CAD_VM_SSQRT &&
                  cad_vm_opcode_format(n.code) == CAD_VMF_BIN;
  const int r = grab(p + 1, {n.a, n.b, n.c}, fp ? static_cast<int>(in.a) : -1);
  in.dst = static_cast<uint8_t>(r);
  push(in);
  define(v, r);
  if (next_use(v, p) == SIZE_MAX) release(r);
}

Emitted RegAlloc::run() {
  for (size_t p = 0; p < seq_.size(); p++) {
    at_ = node_loc_[seq_[p].value >= 0 ? seq_[p].value : stores_[seq_[p].store].value];
    if (seq_[p].value < 0)
      emit_store(p);
    else
      emit_value(p);
  }
  cad_vm_insn exit_insn{};
  exit_insn.code = CAD_VM_EXIT;
  code_.push_back(exit_insn);
  return {std::move(code_), std::move(consts_)};
}

}  // namespace

Emitted allocate_registers(const std::vector<Node> &nodes, const std::vector<SourceLocation> &node_loc,
                           const std::vector<SeqItem> &seq, const std::vector<Store> &stores, SourceLocation at) {
  return RegAlloc(nodes, node_loc, seq, stores, at).run();
}

UserOp Lowering::emit() {
  const std::vector<Store> stores = stores_to_emit();
  return finish(allocate_registers(nodes_, node_loc_, schedule(stores), stores, fd_->getLocation()));
}

// The stores of the result: each field of inout whose value changed.
std::vector<Store> Lowering::stores_to_emit() {
  std::vector<Store> stores;
  for (auto [k, v] : env_) {
    if (k.first != kInout) continue;
    const VK kk = kinds_.at(k);
    if (v == original(kInout, k.second, kk)) continue;  // unchanged
    // A store writes the low bytes only: an extension from at least as
    // many bits right before it changes nothing.
    static const uint8_t ext_bits[][2] = {{CAD_VM_SEXT8, 8},   {CAD_VM_ZEXT8, 8},   {CAD_VM_SEXT16, 16},
                                          {CAD_VM_ZEXT16, 16}, {CAD_VM_SEXT32, 32}, {CAD_VM_ZEXT32, 32}};
    for (const auto &e : ext_bits)
      if (nodes_[v].code == e[0] && e[1] >= 8 * bytes_of(kk)) v = nodes_[v].a;
    stores.push_back({k.second, kk, v});
  }
  return stores;
}

// Order: the values in a depth-first order from each store, each store
// after every load it may overlap (in and inout may be one element).
std::vector<SeqItem> Lowering::schedule(const std::vector<Store> &stores) const {
  std::vector<char> emitted(nodes_.size(), 0), live(nodes_.size(), 0);
  std::vector<int32_t> stack;
  for (const Store &s : stores) stack.push_back(s.value);
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    if (v < 0 || live[v]) continue;
    live[v] = 1;
    stack.push_back(nodes_[v].a);
    stack.push_back(nodes_[v].b);
    stack.push_back(nodes_[v].c);
  }
  std::vector<SeqItem> seq;
  std::function<void(int32_t)> visit = [&](int32_t v) {
    if (v < 0 || emitted[v]) return;
    const Node &n = nodes_[v];
    if (n.code == CAD_VM_SEL) {
      visit(n.b);
      visit(n.c);
      visit(n.a);  // the condition last: a compare right before its select
    } else {
      visit(n.a);
      visit(n.b);
      visit(n.c);
    }
    emitted[v] = 1;
    seq.push_back({v});
  };
  for (size_t i = 0; i < stores.size(); i++) {
    visit(stores[i].value);
    const uint32_t lo = stores[i].off, hi = lo + bytes_of(stores[i].kind);
    for (size_t v = 0; v < nodes_.size(); v++) {
      const Node &n = nodes_[v];
      if (!live[v] || emitted[v] || cad_vm_opcode_format(n.code) != CAD_VMF_LD) continue;
      const uint32_t nlo = static_cast<uint32_t>(n.imm), nhi = nlo + cad_vm_opcode_width(n.code);
      if (nlo < hi && lo < nhi) visit(static_cast<int32_t>(v));
    }
    seq.push_back({-1, static_cast<int>(i)});
  }
  return seq;
}

// The operator: its name, element, code and fields.
UserOp Lowering::finish(Emitted e) const {
  UserOp op;
  op.name = fd_->getNameAsString();
  op.elem_size = static_cast<uint32_t>(ctx_.getTypeSizeInChars(elem_).getQuantity());
  op.code = std::move(e.code);
  op.consts = std::move(e.consts);
  op.type = elem_.getAsString();
  std::vector<std::pair<uint32_t, QualType>> ls;
  leaves(ctx_, elem_, 0, &ls);
  static const char *names[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64"};
  for (auto &[off, t] : ls) {
    VK k;
    scalar_kind(t, &k);
    op.fields.push_back({off, is_bool(t) ? "bool" : names[static_cast<int>(k)]});
  }
  return op;
}

}  // namespace opc
}  // namespace cad
