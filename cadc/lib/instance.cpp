// instance.cpp - see instance.h.
#include "instance.h"

#include <algorithm>
#include <map>
#include <memory_resource>

#include "../../kmod/core/cad_core.h"
#include "access.h"
#include "domain.h"
#include "eval.h"

namespace cad {

std::string InstanceSpec::describe(const Algorithm &a) const {
  std::string s = "P=" + std::to_string(P) + " n=" + std::to_string(n);
  if (collective_info(a.collective).rooted) s += " root=" + std::to_string(root);
  for (const auto &p : params) s += " " + p.first + "=" + std::to_string(p.second);
  if (inplace) s += " inplace";
  if (collective_info(a.collective).reducing && !commutative) s += " noncommutative";
  // What else the program reads, so that an instance says all it is.
  if (collective_info(a.collective).reducing && commutative && !user_op && a.reads.commutative.valid())
    s += " commutative";
  if (a.reads.esize.valid() && !user_op) s += " esize=" + std::to_string(element_size(*this));
  if (user_op) s += " op=" + user_op->name;
  if (topo && !topo->is_flat()) s += " topology=" + topo->name();
  return s;
}

Instantiator::Instantiator(const Algorithm &a, const InstanceSpec &spec, Diagnostics *diags)
    : a_(a), spec_(spec), diags_(diags) {
  if (spec.P < 1 || spec.P > kMaxRanks) {
    diags->error(Code::TooBig, a.loc, "an instance of " + std::to_string(spec.P) + " ranks: P must be 1.." +
                                          std::to_string(kMaxRanks));
    ok_ = false;
    return;
  }
  topo_ = spec.topo ? spec.topo : Topology::flat(spec.P);
  described_ = spec.describe(a);
  for (const auto &p : spec.params) {
    int slot = -1;
    for (const Param &q : a.params)
      if (q.name == p.first) slot = q.slot;
    if (slot < 0) {
      diags->error(Code::Sweep, a.loc, "'" + p.first + "' is not a parameter of " + a.name);
      ok_ = false;
    }
    overrides_.emplace_back(slot, p.second);
  }
  if (!ok_) return;
  Frame f;
  f.topo = topo_.get();
  f.diags = diags;
  f.instance = described_;
  f.slots.assign(a.nslots, 0);
  f.slots[kSlotP] = spec.P;
  f.slots[kSlotN] = spec.n;
  f.slots[kSlotRoot] = spec.root;
  f.slots[kSlotEsize] = element_size(spec);
  f.slots[kSlotCommutative] = spec.commutative;
  f.slots[kSlotInplace] = spec.inplace;
  try {
    for (const Param &p : a.params) defaults_.push_back(f.slots[p.slot] = eval(*p.value, f));
    for (const auto &o : overrides_) f.slots[o.first] = o.second;
    for (const Param &p : a.params) values_.push_back(f.slots[p.slot]);
    for (const Requirement &r : a.requires_)
      if (!eval(*r.cond, f)) {
        applicable_ = false;
        failed_ = &r;
        break;
      }
  } catch (const EvalError &) {
    ok_ = false;
  }
}

namespace {

// ---------------------------------------------------------------- body

class Interp {
 public:
  Interp(const Instantiator &in, uint32_t rank, Diagnostics *diags, RankProgram *out, const Observer *obs)
      : in_(in), a_(in.algorithm()), spec_(in.spec()), out_(out), branches_(obs ? obs->branches : nullptr) {
    f_.topo = &in.topology();
    f_.boundaries = obs ? obs->boundaries : nullptr;
    f_.diags = diags;
    f_.instance = spec_.describe(a_);
    f_.rank = static_cast<int>(rank);
    out->rank = rank;
    out->esize = element_size(spec_);
  }

  void run() {
    const Algorithm &a = a_;
    f_.slots.assign(a.nslots, 0);
    f_.slots[kSlotP] = spec_.P;
    f_.slots[kSlotRank] = out_->rank;
    f_.slots[kSlotN] = spec_.n;
    f_.slots[kSlotRoot] = spec_.root;
    f_.slots[kSlotEsize] = out_->esize;
    f_.slots[kSlotCommutative] = spec_.commutative;
    f_.slots[kSlotInplace] = spec_.inplace;
    for (const Param &p : a.params) f_.slots[p.slot] = eval(*p.value, f_);
    for (const Param &p : a.params)
      for (const auto &o : spec_.params)
        if (o.first == p.name) f_.slots[p.slot] = o.second;
    bind();
    body(a.body, 0);
    assign_tags();
  }

 private:
  // The collective's buffers at this rank, then the scratch buffers.
  void bind() {
    const CollectiveInfo &info = collective_info(a_.collective);
    bindings_ = bind_buffers(a_.collective, spec_.P, spec_.n, out_->rank, spec_.root, spec_.inplace);
    for (size_t i = 0; i < info.buffers.size(); i++) {
      const CollBuffer &cb = info.buffers[i];
      AbiBuffer b;
      b.kind = cb.send ? CAD_BUF_SEND : CAD_BUF_RECV;
      b.access = cb.send ? CAD_ACC_READ : CAD_ACC_READ | CAD_ACC_WRITE;
      // An aliased buffer (in place) keeps its index but no bytes.
      b.elems = bindings_[i].alias_of >= 0 ? 0 : bindings_[i].elems;
      b.name = cb.name;
      b.collective = static_cast<int>(i);
      out_->buffers.push_back(b);
    }
    for (const Scratch &s : a_.scratch) {
      const int64_t elems = eval(*s.size, f_);
      if (elems < 0) eval_fail(f_, Code::BadRange, s.size->loc, "scratch " + s.name + " of " + std::to_string(elems) + " elements");
      AbiBuffer b;
      b.kind = CAD_BUF_SCRATCH;
      b.access = CAD_ACC_READ | CAD_ACC_WRITE;
      b.elems = static_cast<uint64_t>(elems);
      b.name = s.name;
      int64_t bytes;
      if (!mul_ok(elems, out_->esize, &bytes) || !add_ok(static_cast<int64_t>(out_->scratch_bytes), bytes, &bytes))
        eval_fail(f_, Code::Overflow, s.size->loc, "scratch " + s.name + " overflows");
      out_->scratch_bytes = static_cast<uint64_t>(bytes);
      out_->buffers.push_back(b);
    }
  }

  void body(const std::vector<StmtPtr> &stmts, uint32_t group) {
    for (const StmtPtr &s : stmts) stmt(*s, group);
  }

  // Counts a statement or a loop iteration against the limit.
  void count_step(const Stmt &s) {
    if (++steps_ > spec_.limits.steps_per_rank)
      eval_fail(f_, Code::TooBig, s.loc, "rank " + std::to_string(out_->rank) + " runs more than " +
                                             std::to_string(spec_.limits.steps_per_rank) +
                                             " statements and loop iterations (an endless loop?)");
  }

  void stmt(const Stmt &s, uint32_t group) {
    count_step(s);
    switch (s.kind) {
      case StmtKind::Let:
        f_.slots[s.slot] = eval(*s.value, f_);
        break;
      case StmtKind::For: {
        const int64_t lo = eval(*s.value, f_), hi = eval(*s.hi, f_);
        const int64_t step = s.step ? eval(*s.step, f_) : 1;
        if (step < 1) eval_fail(f_, Code::BadRange, s.step->loc, "the loop's step is " + std::to_string(step) + ": it must be at least 1");
        if (branches_) branches_->mark(s.id, lo < hi ? 1 : 2);
        for (int64_t k = lo; k < hi;) {
          count_step(s);
          f_.slots[s.slot] = k;
          body(s.body, group);
          if (!add_ok(k, step, &k)) break;
        }
        break;
      }
      case StmtKind::If: {
        const bool taken = eval(*s.value, f_) != 0;
        if (branches_) branches_->mark(s.id, taken ? 1 : 2);
        body(taken ? s.body : s.orelse, group);
        break;
      }
      case StmtKind::Parallel:
        body(s.body, group ? group : ++groups_);
        break;
      case StmtKind::Fence: {
        RankOp op;
        op.kind = CAD_NODE_NOP;
        op.fence = true;
        op.stmt = &s;
        push(op);
        break;
      }
      case StmtKind::Send:
      case StmtKind::Recv:
        transfer(s, group);
        break;
      case StmtKind::Copy:
      case StmtKind::Reduce:
        local(s, group);
        break;
    }
  }

  // A resolved range: ABI buffer and bytes.
  struct Range {
    int32_t buf;
    uint64_t off, len;
  };

  Range range(const BufRef &r) {
    const BufferInfo &bi = a_.buffers[r.buffer];
    uint64_t elems;
    int32_t buf;
    uint64_t base = 0;
    if (bi.scratch) {
      buf = static_cast<int32_t>(collective_info(a_.collective).buffers.size() + bi.scratch_index);
      elems = out_->buffers[buf].elems;
    } else {
      const Binding &b = bindings_[bi.collective_index];
      elems = b.elems;
      buf = b.alias_of >= 0 ? b.alias_of : bi.collective_index;
      base = b.offset;
    }
    int64_t lo = 0, hi = static_cast<int64_t>(elems);
    if (r.lo) {
      lo = eval(*r.lo, f_);
      hi = eval(*r.hi, f_);
    }
    if (hi < lo || lo < 0 || static_cast<uint64_t>(hi) > elems) {  // the message only when needed
      const std::string shown = r.name + "[" + std::to_string(lo) + ":" + std::to_string(hi) + "]";
      if (hi < lo) eval_fail(f_, Code::BadRange, r.loc, shown + " is reversed: the end comes before the start");
      eval_fail(f_, Code::OutOfRange, r.loc, shown + " is outside " + r.name + ", which has " + std::to_string(elems) + " elements at rank " + std::to_string(out_->rank));
    }
    const uint64_t es = out_->esize;
    return {buf, (base + static_cast<uint64_t>(lo)) * es, static_cast<uint64_t>(hi - lo) * es};
  }

  void transfer(const Stmt &s, uint32_t group) {
    const bool send = s.kind == StmtKind::Send;
    const Range r = range(send ? s.src : s.dst);
    const int64_t peer = eval(*s.value, f_);
    if (peer < 0 || peer >= spec_.P)
      eval_fail(f_, Code::BadPeer, start_of(*s.value), std::string(send ? "sends to" : "receives from") + " rank " + std::to_string(peer) + ", but P = " + std::to_string(spec_.P));
    if (static_cast<uint32_t>(peer) == out_->rank)
      eval_fail(f_, Code::BadPeer, start_of(*s.value), std::string(send ? "sends to" : "receives from") + " its own rank " + std::to_string(peer) + ": use copy");
    RankOp op;
    op.kind = send ? CAD_NODE_SEND : CAD_NODE_RECV;
    op.peer = static_cast<uint32_t>(peer);
    (send ? op.src : op.dst) = r.buf;
    (send ? op.src_off : op.dst_off) = r.off;
    op.len = r.len;
    op.flags = s.by == "receiver" ? CAD_XFER_RECEIVER_READS : s.by == "sender" ? CAD_XFER_SENDER_WRITES : 0;
    if (s.tag) {
      const int64_t t = eval(*s.tag, f_);
      if (t < 0 || t >= (int64_t{1} << 30))
        eval_fail(f_, Code::BadRange, s.tag->loc, "tag " + std::to_string(t) + " is outside 0 .. 2^30 - 1");
      op.tag = static_cast<uint32_t>(t) | (1u << 30);  // never equal to an assigned tag
    }  // else assigned by assign_tags()
    op.stmt = &s;
    op.group = group;
    push(op);
  }

  void local(const Stmt &s, uint32_t group) {
    const Range d = range(s.dst), r = range(s.src);
    if (d.len != r.len)
      eval_fail(f_, Code::LengthMismatch, s.loc, std::string(s.kind == StmtKind::Copy ? "copy" : "reduce") + " of " + std::to_string(r.len / out_->esize) + " elements into " + std::to_string(d.len / out_->esize));
    if (d.len == 0) return;
    const bool same = d.buf == r.buf && d.off == r.off;
    if (s.kind == StmtKind::Copy && same) return;  // in place: nothing to move
    if (d.buf == r.buf && d.off < r.off + r.len && r.off < d.off + d.len && !same)
      eval_fail(f_, Code::BadRange, s.loc, "source and destination overlap");
    RankOp op;
    op.kind = s.kind == StmtKind::Copy ? CAD_NODE_COPY : CAD_NODE_REDUCE;
    op.dst = d.buf;
    op.dst_off = d.off;
    op.src = r.buf;
    op.src_off = r.off;
    op.len = d.len;
    if (s.kind == StmtKind::Reduce) {
      op.op = static_cast<uint8_t>(spec_.op);
      op.uop = spec_.user_op.get();
      if (s.user_op) {
        op.op = CAD_OP_USER;
        op.uop = s.user_op.get();
        if (d.len % op.uop->elem_size)
          eval_fail(f_, Code::LengthMismatch, s.loc, "op " + op.uop->name + " combines " + std::to_string(op.uop->elem_size) +
                    "-byte elements, the range has " + std::to_string(d.len) + " bytes");
      } else if (!s.redop.empty()) {
        op.uop = nullptr;
        if (const unsigned o = builtin_op(s.redop)) op.op = static_cast<uint8_t>(o);
      }
      if (op.op == CAD_OP_USER ? !op.uop : !cad_reduce_supported(op.op, spec_.dtype))
        eval_fail(f_, Code::Type, s.loc, std::string("op ") + cad_op_name(op.op) + " does not apply to datatype " + cad_dtype_name(spec_.dtype));
    }
    op.stmt = &s;
    op.group = group;
    push(op);
  }

  // The k-th message without a tag from this rank to a peer, or from a
  // peer to it, carries tag k: counts per (peer, direction) in a flat
  // open-addressing table, twice as many slots as messages.
  void assign_tags() {
    const auto untagged = [](const RankOp &o) {
      return (o.kind == CAD_NODE_SEND || o.kind == CAD_NODE_RECV) && !(o.tag & (1u << 30));
    };
    size_t messages = 0;
    for (const RankOp &o : out_->ops) messages += untagged(o);
    unsigned bits = 4;
    while ((size_t{1} << bits) < 2 * messages) bits++;
    const size_t slots = size_t{1} << bits;
    struct Slot {
      uint32_t key = 0;  // (peer, direction) + 1, 0 = free
      uint32_t count = 0;
    };
    std::vector<Slot> table(slots);
    for (RankOp &o : out_->ops) {
      if (!untagged(o)) continue;
      const uint32_t key = (o.peer << 1 | (o.kind == CAD_NODE_SEND)) + 1;
      size_t at = (key * uint64_t{0x9e3779b97f4a7c15}) >> (64 - bits);  // Fibonacci hashing: the high bits
      while (table[at].key && table[at].key != key) at = (at + 1) & (slots - 1);
      table[at].key = key;
      o.tag = table[at].count++;
    }
  }

  void push(const RankOp &op) {
    if (out_->ops.size() >= spec_.limits.ops_per_rank)
      eval_fail(f_, Code::TooBig, op.stmt->loc, "rank " + std::to_string(out_->rank) + "'s program exceeds " + std::to_string(spec_.limits.ops_per_rank) + " operations");
    out_->ops.push_back(op);
  }

  const Instantiator &in_;
  const Algorithm &a_;
  const InstanceSpec &spec_;
  RankProgram *out_;
  Frame f_;
  std::vector<Binding> bindings_;
  uint32_t groups_ = 0;
  uint64_t steps_ = 0;
  BranchCoverage *branches_;
};

// ---------------------------------------------------------------- dependencies

// The transitive reduction of a program's predecessor lists (first, pred:
// increasing, all before their node) into kept_first, kept.  By search:
// for each node with several predecessors, from the highest down, a
// predecessor is implied when a search backwards from the ones kept
// above it, highest first and never below it, has met it.  The searches
// are short where dependencies are local (pipelines, rounds); false when
// they have expanded budget nodes in all.
bool reduce_by_search(const std::vector<uint32_t> &first, const std::vector<uint32_t> &pred, size_t budget,
                      std::vector<uint32_t> *kept_first, std::vector<uint32_t> *kept) {
  const size_t n = first.size() - 1;
  kept_first->assign(n + 1, 0);
  kept->clear();
  std::vector<uint32_t> met(n, 0), frontier;  // met[x] == stamp: an ancestor of a kept one
  uint32_t stamp = 0;
  const auto meet = [&](uint32_t x) {  // x's kept predecessors join the frontier
    for (uint32_t k = (*kept_first)[x]; k < (*kept_first)[x + 1]; k++) {
      const uint32_t y = (*kept)[k];
      if (met[y] == stamp) continue;
      met[y] = stamp;
      frontier.push_back(y);
      std::push_heap(frontier.begin(), frontier.end());
    }
  };
  for (size_t v = 0; v < n; v++) {
    const size_t from = kept->size();
    if (first[v + 1] - first[v] > 1) {
      stamp++;
      frontier.clear();
      for (uint32_t k = first[v + 1]; k-- > first[v];) {
        const uint32_t q = pred[k];
        while (!frontier.empty() && frontier.front() >= q) {
          std::pop_heap(frontier.begin(), frontier.end());
          const uint32_t x = frontier.back();
          frontier.pop_back();
          if (budget-- == 0) return false;
          meet(x);
        }
        if (met[q] == stamp) continue;  // implied
        kept->push_back(q);
        meet(q);
      }
      std::reverse(kept->begin() + static_cast<std::ptrdiff_t>(from), kept->end());
    } else {
      kept->insert(kept->end(), pred.begin() + first[v], pred.begin() + first[v + 1]);
    }
    (*kept_first)[v + 1] = static_cast<uint32_t>(kept->size());
  }
  return true;
}

// The same with a bitset of ancestors per node: n^2 / 8 bytes, n^2 / 64
// words of work whatever the program.
void reduce_by_bitsets(const std::vector<uint32_t> &first, const std::vector<uint32_t> &pred,
                       std::vector<uint32_t> *kept_first, std::vector<uint32_t> *kept) {
  const size_t n = first.size() - 1, words = (n + 63) / 64;
  std::vector<uint64_t> anc(n * words, 0);
  kept_first->assign(n + 1, 0);
  kept->clear();
  for (size_t v = 0; v < n; v++) {
    uint64_t *acc = &anc[v * words];
    const size_t from = kept->size();
    for (uint32_t k = first[v + 1]; k-- > first[v];) {
      const uint32_t q = pred[k];
      if (acc[q / 64] >> (q % 64) & 1) continue;  // implied
      kept->push_back(q);
      const uint64_t *qa = &anc[static_cast<size_t>(q) * words];
      for (size_t w = 0; w < words; w++) acc[w] |= qa[w];
      acc[q / 64] |= uint64_t{1} << (q % 64);
    }
    std::reverse(kept->begin() + static_cast<std::ptrdiff_t>(from), kept->end());
    (*kept_first)[v + 1] = static_cast<uint32_t>(kept->size());
  }
}

void infer(RankProgram *rp) {
  const size_t n = rp->ops.size();
  std::pmr::monotonic_buffer_resource pool;
  std::vector<AccessMap> maps;
  maps.reserve(rp->buffers.size());
  for (size_t b = 0; b < rp->buffers.size(); b++) maps.emplace_back(&pool);
  std::vector<uint32_t> group_of(n);
  // Predecessors of op i: pred[pred_first[i] .. pred_first[i + 1]), increasing.
  std::vector<uint32_t> pred_first(n + 1, 0), pred;
  std::vector<uint32_t> p;
  int64_t last_fence = -1;
  std::vector<uint32_t> since_fence;
  for (size_t i = 0; i < n; i++) {
    const RankOp &op = rp->ops[i];
    const uint32_t me = static_cast<uint32_t>(i);
    group_of[i] = op.group;
    p.clear();
    if (op.fence) {
      p = since_fence;
      if (last_fence >= 0) p.push_back(static_cast<uint32_t>(last_fence));
      last_fence = me;
      since_fence.clear();
    } else {
      if (last_fence >= 0) p.push_back(static_cast<uint32_t>(last_fence));
      since_fence.push_back(me);
      auto touch = [&](int32_t buf, uint64_t off, bool write) {
        maps[buf].access(off, op.len, write, me, op.group, group_of, &p);
      };
      switch (op.kind) {
        case CAD_NODE_SEND: touch(op.src, op.src_off, false); break;
        case CAD_NODE_RECV: touch(op.dst, op.dst_off, true); break;
        default:  // copy, reduce: read the source, then (read and) write the destination
          touch(op.src, op.src_off, false);
          touch(op.dst, op.dst_off, true);
          break;
      }
    }
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    pred.insert(pred.end(), p.begin(), p.end());
    pred_first[i + 1] = static_cast<uint32_t>(pred.size());
  }
  maps.clear();
  // Transitive reduction: q -> v is implied when another predecessor of v
  // descends from q; above a size cap skipped (the program stays correct,
  // with more edges).  Either method finds the one transitive reduction.
  bool multi = false;
  for (size_t v = 0; v < n; v++) multi |= pred_first[v + 1] - pred_first[v] > 1;
  if (multi && n <= 16384) {
    std::vector<uint32_t> kept_first, kept;
    if (!reduce_by_search(pred_first, pred, 8 * n + 1024, &kept_first, &kept))
      reduce_by_bitsets(pred_first, pred, &kept_first, &kept);
    pred_first.swap(kept_first);
    pred.swap(kept);
  }
  // Successor lists, node after node, increasing.
  rp->edge_first.assign(n + 1, 0);
  for (uint32_t q : pred) rp->edge_first[q + 1]++;
  for (size_t i = 0; i < n; i++) rp->edge_first[i + 1] += rp->edge_first[i];
  rp->edges.assign(pred.size(), 0);
  std::vector<uint32_t> fill(rp->edge_first.begin(), rp->edge_first.end() - 1);
  for (size_t v = 0; v < n; v++)
    for (uint32_t k = pred_first[v]; k < pred_first[v + 1]; k++) rp->edges[fill[pred[k]]++] = static_cast<uint32_t>(v);
}

}  // namespace

bool Instantiator::rank(uint32_t r, RankProgram *out, const Observer *obs) const {
  *out = RankProgram();
  if (!ok_) return false;
  try {
    Interp(*this, r, diags_, out, obs).run();
  } catch (const EvalError &) {
    return false;
  }
  infer(out);
  return true;
}

// ---------------------------------------------------------------- emission

uint32_t element_size(const InstanceSpec &spec) {
  if (spec.user_op) return spec.user_op->elem_size;
  if (spec.esize) return spec.esize;
  return cad_dtype_size(spec.dtype);
}

bool emit_image(const Algorithm &a, const InstanceSpec &spec, const RankProgram &rp,
                const SourceManager &sm, std::vector<uint64_t> *image, uint32_t *size,
                Diagnostics *diags) {
  std::string strings(1, '\0');
  std::map<std::string, uint32_t> string_at;
  auto str = [&](const std::string &s) -> uint32_t {
    if (s.empty()) return 0;
    auto it = string_at.find(s);
    if (it != string_at.end()) return it->second;
    const uint32_t off = static_cast<uint32_t>(strings.size());
    strings += s;
    strings += '\0';
    string_at.emplace(s, off);
    return off;
  };
  std::vector<cad_buffer> buffers;
  for (const AbiBuffer &b : rp.buffers)
    buffers.push_back({b.kind, b.access, b.elems * rp.esize, str(b.name), 0});
  std::vector<cad_line> lines;
  std::map<const Stmt *, uint32_t> line_of;
  std::vector<cad_node> nodes(rp.ops.size());
  OpSection ops;  // the program's operators, in order of first use
  for (size_t i = 0; i < rp.ops.size(); i++) {
    const RankOp &op = rp.ops[i];
    cad_node &nd = nodes[i];
    nd = cad_node{};
    nd.kind = op.kind;
    if (op.kind == CAD_NODE_REDUCE) {
      nd.dtype = static_cast<__u8>(op.op == CAD_OP_USER ? static_cast<unsigned>(CAD_DT_USER) : spec.dtype);
      nd.op = op.op;
      if (op.uop) {
        const UserOp &u = *op.uop;
        const int at = ops.find(u);
        if (at >= 0) {
          nd.user_op = static_cast<__u32>(at);
        } else {
          uint32_t line = CAD_NO_LINE;  // where the operator is defined
          if (u.line) {
            lines.push_back({str(u.file), u.line, u.col, 0});
            line = static_cast<__u32>(lines.size() - 1);
          }
          nd.user_op = ops.add(u, str(u.name), line);
        }
      }
    }
    if (op.kind == CAD_NODE_SEND || op.kind == CAD_NODE_RECV) {
      nd.flags = op.flags;
      nd.peer = op.peer;
      nd.tag = op.tag;
    }
    if (op.dst >= 0) {
      nd.dst_buf = static_cast<__u32>(op.dst);
      nd.dst_off = op.dst_off;
    }
    if (op.src >= 0) {
      nd.src_buf = static_cast<__u32>(op.src);
      nd.src_off = op.src_off;
    }
    if (op.kind != CAD_NODE_NOP) nd.len = op.len;
    nd.edge_first = rp.edge_first[i];
    nd.edge_count = rp.edge_first[i + 1] - rp.edge_first[i];
    nd.line = CAD_NO_LINE;
    if (op.stmt && i > 0 && op.stmt == rp.ops[i - 1].stmt) {
      nd.line = nodes[i - 1].line;  // the same statement as the previous operation
    } else if (op.stmt && op.stmt->loc.valid()) {
      auto it = line_of.find(op.stmt);
      if (it == line_of.end()) {
        const Loc &l = op.stmt->loc;
        const std::string file = l.line ? sm.path(l.file) : sm.path(l.file) + "#" + l.pointer;
        lines.push_back({str(file), l.line, l.col, 0});
        it = line_of.emplace(op.stmt, static_cast<uint32_t>(lines.size() - 1)).first;
      }
      nd.line = it->second;
    }
  }
  std::vector<cad_edge> edges(rp.edges.size());
  for (size_t i = 0; i < edges.size(); i++) edges[i].to = rp.edges[i];
  cad_image_desc d{};
  d.rank = rp.rank;
  d.nranks = static_cast<__u32>(spec.P);
  d.collective = collective_info(a.collective).abi;
  d.name = str(a.name);
  d.buffers = buffers.data();
  d.n_buffers = static_cast<__u32>(buffers.size());
  d.nodes = nodes.data();
  d.n_nodes = static_cast<__u32>(nodes.size());
  d.edges = edges.data();
  d.n_edges = static_cast<__u32>(edges.size());
  ops.fill(&d);
  d.lines = lines.data();
  d.n_lines = static_cast<__u32>(lines.size());
  d.strings = strings.data();
  d.n_strings = static_cast<__u32>(strings.size());
  const __u64 bytes = cad_image_size(&d);
  image->assign((bytes + 7) / 8, 0);
  char msg[512];
  cad_log log;
  cad_log_init(&log, msg, sizeof(msg));
  cad_prog prog;
  if (!bytes || cad_image_write(&d, image->data(), bytes) ||
      cad_verify(image->data(), static_cast<__u32>(bytes), nullptr, &prog, &log)) {
    std::string m = msg;
    if (!m.empty() && m.back() == '\n') m.pop_back();
    Diagnostic &dg = diags->error(Code::CoreReject, a.loc, "the core verifier rejects rank " +
                                  std::to_string(rp.rank) + "'s program: " + (m.empty() ? "over 4 GiB" : m));
    dg.instance = spec.describe(a);
    dg.rank = static_cast<int>(rp.rank);
    return false;
  }
  *size = static_cast<uint32_t>(bytes);
  return true;
}

}  // namespace cad
