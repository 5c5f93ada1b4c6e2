// verify.cpp - see verify.h.
#include "verify.h"

#include <algorithm>
#include <map>
#include <memory_resource>
#include <unordered_map>

#include "../../kmod/core/cad_core.h"
#include "access.h"

namespace cad {

namespace {

// Operators are the same when they have one name (names are unique in a
// library and on a command line) and the same code.
bool same_op(const UserOp *a, const UserOp *b) {
  return a && b && a->name == b->name && a->elem_size == b->elem_size && a->code.size() == b->code.size() &&
         std::equal(a->code.begin(), a->code.end(), b->code.begin(), [](const cad_vm_insn &x, const cad_vm_insn &y) {
           return x.code == y.code && x.dst == y.dst && x.a == y.a && x.b == y.b && x.imm == y.imm;
         }) && a->consts == b->consts;
}

constexpr uint64_t kNone = Matching::kUnmatched;
constexpr int kMaxReports = 8;  // diagnostics of one kind per instance
constexpr uint32_t kNoneBefore = ~uint32_t{0};

// A message of a rank's program: (peer, tag) as one key, and where it is.
struct MessageKey {
  uint64_t key;
  uint32_t op;
  bool operator<(const MessageKey &o) const { return key != o.key ? key < o.key : op < o.op; }
};

// Appends the messages of kind (send or receive) of p to keys, sorted:
// by peer and tag, in program order within one.
void message_keys(const RankProgram &p, uint8_t kind, std::vector<MessageKey> *keys) {
  const size_t from = keys->size();
  for (uint32_t i = 0; i < p.ops.size(); i++)
    if (p.ops[i].kind == kind) keys->push_back({uint64_t{p.ops[i].peer} << 32 | p.ops[i].tag, i});
  std::sort(keys->begin() + static_cast<std::ptrdiff_t>(from), keys->end());
}

// ---------------------------------------------------------------- reachability

// Whether operation u of a rank's program reaches v along edges: a
// search forward from u that never goes past v (edges go forward),
// nearest to v first.  The checks ask about conflicting operations, which
// dependency inference joined by an edge or through a nearby one.
class Reach {
 public:
  explicit Reach(const RankProgram &p) : p_(p), seen_(p.ops.size(), 0) {}

  bool reaches(uint32_t u, uint32_t v) {
    if (u == v) return true;
    if (u > v) return false;
    if (++stamp_ == 0) {  // the stamps wrapped: forget them
      std::fill(seen_.begin(), seen_.end(), 0);
      stamp_ = 1;
    }
    stack_.assign(1, u);
    while (!stack_.empty()) {
      const uint32_t x = stack_.back();
      stack_.pop_back();
      const uint32_t *first = p_.edges.data() + p_.edge_first[x], *last = p_.edges.data() + p_.edge_first[x + 1];
      const uint32_t *at = std::lower_bound(first, last, v);  // successors are increasing
      if (at != last && *at == v) return true;
      for (const uint32_t *e = first; e != at; e++)  // below v, the nearest popped first
        if (seen_[*e] != stamp_) {
          seen_[*e] = stamp_;
          stack_.push_back(*e);
        }
    }
    return false;
  }

 private:
  const RankProgram &p_;
  std::vector<uint32_t> seen_, stack_;
  uint32_t stamp_ = 0;
};

// ---------------------------------------------------------------- symbols

// What an element holds, symbolically.
struct Sym {
  enum Kind : uint8_t { Old, Zero, Data, Garbage, WrongOp } kind = Old;
  uint32_t who = 0;      // Old: the rank; Data: contribution list; WrongOp: index in wrong_ops_
  int64_t index = 0;     // Data: logical index of the piece's first element
  uint64_t blk = 0;      // Data: 0, or a run of blocks (below)
  const Stmt *by = nullptr;  // the operation that wrote it last
};

// A piece of a buffer: elements [lo, hi) holding sym (index at lo).
//
// A run of blocks (sym.blk > 0, hi - lo a multiple of blk, two blocks or
// more) stands for blk-element pieces side by side, block k holding rank
// who + k's input alone (list who + k, see Lists) from the same index,
// written by the same operation.  The gathers and the alltoall build
// their output a block per rank: as a run, a rank's state is a few pieces
// instead of P, and a message moves a few.  A run never stands for
// anything but its blocks, so the postcondition sees the same pieces
// as if each block were kept apart.
struct Piece {
  uint64_t lo, hi;
  Sym sym;
};

// Appends the part [a, b) of p (within it) to out; a run cut inside a
// block leaves the cut blocks' parts as single pieces, and one whole
// block as a single piece.
void slice(const Piece &p, uint64_t a, uint64_t b, std::vector<Piece> *out) {
  Sym s = p.sym;
  const uint64_t B = s.blk;
  if (s.kind != Sym::Data || !B) {
    if (s.kind == Sym::Data) s.index += static_cast<int64_t>(a - p.lo);
    out->push_back({a, b, s});
    return;
  }
  const auto block = [&](uint64_t x) { return (x - p.lo) / B; };
  const auto single = [&](uint64_t from, uint64_t to) {  // within one block
    Sym one = s;
    one.blk = 0;
    one.who = s.who + static_cast<uint32_t>(block(from));
    one.index = s.index + static_cast<int64_t>((from - p.lo) % B);
    out->push_back({from, to, one});
  };
  uint64_t at = a;
  if ((at - p.lo) % B) {  // the first block's part
    const uint64_t stop = std::min(b, p.lo + (block(at) + 1) * B);
    single(at, stop);
    at = stop;
  }
  const uint64_t whole = p.lo + block(b) * B;  // the start of the block b cuts
  if (at < whole) {
    if (whole - at == B) {
      single(at, whole);
    } else {
      Sym run = s;
      run.who = s.who + static_cast<uint32_t>(block(at));
      out->push_back({at, whole, run});
    }
    at = whole;
  }
  if (at < b) single(at, b);
}

// The pieces a run stands for, one per block (other pieces as they are).
void explode(const Piece &p, std::vector<Piece> *out) {
  if (p.sym.kind != Sym::Data || !p.sym.blk) {
    out->push_back(p);
    return;
  }
  for (uint64_t at = p.lo; at < p.hi; at += p.sym.blk) slice(p, at, at + p.sym.blk, out);
}

// Interval map of a buffer's elements.
class SymBuffer {
 public:
  // ranks: lists 0 .. ranks - 1 are the ranks alone (blocks of a run).
  void init(uint64_t elems, Sym s, uint32_t ranks) {
    map_.clear();
    ranks_ = ranks;
    if (elems) map_.emplace(0, Seg{elems, s});
  }
  // The pieces over [lo, hi), appended to out; exploded: runs as their blocks.
  void read(uint64_t lo, uint64_t hi, std::vector<Piece> *out, bool exploded = false) const {
    auto it = map_.upper_bound(lo);
    if (it != map_.begin()) --it;
    std::vector<Piece> cut;
    for (; it != map_.end() && it->first < hi; ++it) {
      const uint64_t a = std::max(lo, it->first), b = std::min(hi, it->second.end);
      if (a >= b) continue;
      const Piece whole{it->first, it->second.end, it->second.sym};
      if (!exploded) {
        slice(whole, a, b, out);
        continue;
      }
      cut.clear();
      slice(whole, a, b, &cut);
      for (const Piece &pc : cut) explode(pc, out);
    }
  }
  // Writes pieces (positions already those of this buffer).
  void write(const std::vector<Piece> &pieces) {
    if (pieces.empty()) return;
    for (const Piece &p : pieces) {
      split(p.lo);
      split(p.hi);
      map_.erase(map_.lower_bound(p.lo), map_.lower_bound(p.hi));
      join_left(map_.emplace(p.lo, Seg{p.hi, p.sym}).first);
    }
    auto right = map_.lower_bound(pieces.back().hi);
    if (right != map_.end()) join_left(right);
  }

 private:
  struct Seg {
    uint64_t end;
    Sym sym;
  };
  using Map = std::map<uint64_t, Seg>;

  // A segment boundary at x, if x falls inside a segment.
  void split(uint64_t x) {
    auto it = map_.upper_bound(x);
    if (it == map_.begin()) return;
    --it;
    if (it->first < x && x < it->second.end) {
      const Piece whole{it->first, it->second.end, it->second.sym};
      std::vector<Piece> parts;
      slice(whole, whole.lo, x, &parts);
      slice(whole, x, whole.hi, &parts);
      map_.erase(it);
      for (const Piece &pc : parts) map_.emplace(pc.lo, Seg{pc.hi, pc.sym});
    }
  }

  // Blocks of a run: (first rank, blocks, block length); a single rank's
  // piece is a run of one block.
  bool blocks(const Map::const_iterator &it, uint32_t *who, uint64_t *count, uint64_t *blk) const {
    const Sym &s = it->second.sym;
    const uint64_t len = it->second.end - it->first;
    if (s.kind != Sym::Data || (!s.blk && s.who >= ranks_)) return false;
    *who = s.who;
    *blk = s.blk ? s.blk : len;
    *count = len / *blk;
    return true;
  }

  // Joins the segment at it to the one before it when together they are
  // a run: the same writer, the same index and block length, ranks in a
  // row.
  void join_left(Map::iterator it) {
    if (it == map_.begin()) return;
    const auto prev = std::prev(it);
    uint32_t wa, wb;
    uint64_t ca, cb, ba, bb;
    if (prev->second.end != it->first || !blocks(prev, &wa, &ca, &ba) || !blocks(it, &wb, &cb, &bb)) return;
    const Sym &a = prev->second.sym, &b = it->second.sym;
    if (ba != bb || a.index != b.index || a.by != b.by || uint64_t{wa} + ca != wb) return;
    prev->second.sym.blk = ba;
    prev->second.end = it->second.end;
    map_.erase(it);
  }

  Map map_;
  uint32_t ranks_ = 0;
};

// Interned lists of contributing ranks, in reduction order; list q is
// rank q alone, for q < P.
class Lists {
 public:
  void init(uint32_t P) {
    lists_.clear();
    ids_.clear();
    concat_.clear();
    for (uint32_t q = 0; q < P; q++) intern({q});
  }
  uint32_t intern(const std::vector<uint32_t> &v) {
    std::string key(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(uint32_t));
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    lists_.push_back(v);
    return ids_[key] = static_cast<uint32_t>(lists_.size() - 1);
  }
  const std::vector<uint32_t> &get(uint32_t id) const { return lists_[id]; }
  // a's ranks, then b's; remembered, as reductions repeat the same pairs.
  uint32_t concat(uint32_t a, uint32_t b) {
    const uint64_t key = uint64_t{a} << 32 | b;
    auto it = concat_.find(key);
    if (it != concat_.end()) return it->second;
    std::vector<uint32_t> v = lists_[a];
    v.insert(v.end(), lists_[b].begin(), lists_[b].end());
    return concat_[key] = intern(v);
  }

 private:
  std::vector<std::vector<uint32_t>> lists_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<uint64_t, uint32_t> concat_;
};

// ---------------------------------------------------------------- sets of ranks

// A set of ranks as disjoint intervals [lo, hi), increasing, none
// touching the next.
class RankSet {
 public:
  RankSet() = default;
  explicit RankSet(uint32_t r) : iv_{{r, r + 1}} {}
  // This set becomes its union with o; tmp is scratch.
  void unite(const RankSet &o, RankSet *tmp) {
    if (o.iv_.empty()) return;
    if (iv_.empty()) {
      iv_ = o.iv_;
      return;
    }
    std::vector<Interval> &out = tmp->iv_;
    out.clear();
    size_t i = 0, j = 0;
    while (i < iv_.size() || j < o.iv_.size()) {
      const Interval next = j == o.iv_.size() || (i < iv_.size() && iv_[i].lo < o.iv_[j].lo) ? iv_[i++] : o.iv_[j++];
      if (!out.empty() && next.lo <= out.back().hi) out.back().hi = std::max(out.back().hi, next.hi);
      else out.push_back(next);
    }
    iv_.swap(out);
  }
  // The least rank not in the set.
  uint32_t first_missing() const { return iv_.empty() || iv_[0].lo > 0 ? 0 : iv_[0].hi; }
  void swap(RankSet &o) { iv_.swap(o.iv_); }

 private:
  struct Interval {
    uint32_t lo, hi;
  };
  std::vector<Interval> iv_;
};

// ---------------------------------------------------------------- verifier

class Verifier {
 public:
  Verifier(const Algorithm &a, const InstanceSpec &spec, const SourceManager &sm, Diagnostics *d, const Observer *obs)
      : a_(a), spec_(spec), sm_(sm), diags_(d), obs_(obs), in_(a, spec, d), info_(collective_info(a.collective)) {
    described_ = spec.describe(a);
  }

  InstanceResult run(std::vector<RankProgram> *programs) {
    InstanceResult r;
    if (!in_.ok()) return r;
    if (!in_.applicable()) {
      r.outcome = Outcome::Skipped;
      r.skipped_because = "requires " + text_of(in_.failed_requirement());
      return r;
    }
    if (!instantiate() || !match() || !order() || !races() || !postcondition()) return r;
    r.outcome = Outcome::Verified;
    r.stats = stats_;
    if (programs) *programs = std::move(progs_);
    return r;
  }

 private:
  std::string text_of(const Requirement *req) const;

  // ---- helpers ----
  uint64_t gid(uint32_t r, uint32_t i) const { return base_[r] + i; }
  uint32_t rank_of(uint64_t g) const {
    return static_cast<uint32_t>(std::upper_bound(base_.begin(), base_.end(), g) - base_.begin() - 1);
  }
  const RankOp &op(uint64_t g) const {
    const uint32_t r = rank_of(g);
    return progs_[r].ops[g - base_[r]];
  }
  uint64_t rep(uint64_t g) const { return partner_[g] != kNone && partner_[g] < g ? partner_[g] : g; }

  std::string range_text(const RankProgram &p, int32_t buf, uint64_t off, uint64_t len) const {
    const uint64_t es = p.esize;
    return p.buffers[buf].name + "[" + std::to_string(off / es) + ":" + std::to_string((off + len) / es) + "]";
  }
  std::string op_text(uint64_t g) const {
    const uint32_t r = rank_of(g);
    const RankProgram &p = progs_[r];
    const RankOp &o = p.ops[g - base_[r]];
    std::string s = "rank " + std::to_string(r) + ": ";
    switch (o.kind) {
      case CAD_NODE_SEND: return s + "send " + range_text(p, o.src, o.src_off, o.len) + " to " + std::to_string(o.peer);
      case CAD_NODE_RECV: return s + "recv " + range_text(p, o.dst, o.dst_off, o.len) + " from " + std::to_string(o.peer);
      case CAD_NODE_COPY: return s + "copy " + range_text(p, o.dst, o.dst_off, o.len) + " from " + range_text(p, o.src, o.src_off, o.len);
      case CAD_NODE_REDUCE: return s + "reduce " + range_text(p, o.dst, o.dst_off, o.len) + " from " + range_text(p, o.src, o.src_off, o.len);
      default: return s + "fence";
    }
  }
  Loc loc_of(uint64_t g) const {
    const RankOp &o = op(g);
    return o.stmt ? o.stmt->loc : a_.loc;
  }
  Diagnostic &fail(Code code, uint64_t g, const std::string &message) {
    Diagnostic &d = diags_->error(code, loc_of(g), message);
    d.instance = described_;
    d.rank = static_cast<int>(rank_of(g));
    return d;
  }
  void note(Diagnostic &d, uint64_t g, const std::string &message) {
    d.notes.push_back({loc_of(g), message + " (" + op_text(g) + ")"});
  }

  // ---- 1. every rank, through the core verifier ----
  bool instantiate() {
    if (!instantiate_all(in_, sm_, diags_, &progs_, obs_)) return false;
    for (const RankProgram &p : progs_) stats_.max_scratch = std::max(stats_.max_scratch, p.scratch_bytes);
    return true;
  }

  // The reachability of rank r's program (the checks go rank by rank).
  Reach &reach(uint32_t r) {
    if (!reach_ || reach_rank_ != r) {
      reach_ = std::make_unique<Reach>(progs_[r]);
      reach_rank_ = r;
    }
    return *reach_;
  }

  // ---- 2. matching ----
  bool match() {
    Matching m = match_messages(progs_);
    base_ = std::move(m.base);
    partner_ = std::move(m.partner);
    stats_.ops = base_.back();
    int unmatched = 0, mismatched = 0, ambiguous = 0;
    std::vector<MessageKey> keys;
    std::vector<uint32_t> before;  // per operation, the one before it of its key, or kNoneBefore
    for (uint32_t r = 0; r < progs_.size(); r++) {
      const RankProgram &p = progs_[r];
      // Two messages of one key must be ordered on their rank, or which
      // meets which depends on timing: check consecutive ones.
      keys.clear();
      message_keys(p, CAD_NODE_SEND, &keys);
      message_keys(p, CAD_NODE_RECV, &keys);
      before.assign(p.ops.size(), kNoneBefore);
      for (size_t k = 1; k < keys.size(); k++)
        if (keys[k].key == keys[k - 1].key && p.ops[keys[k].op].kind == p.ops[keys[k - 1].op].kind)
          before[keys[k].op] = keys[k - 1].op;
      for (uint32_t i = 0; i < p.ops.size(); i++) {
        const RankOp &o = p.ops[i];
        if (o.kind != CAD_NODE_SEND && o.kind != CAD_NODE_RECV) continue;
        const uint64_t g = base_[r] + i;
        if (before[i] != kNoneBefore && !reach(r).reaches(before[i], i) && ambiguous++ < kMaxReports) {
          const bool send = o.kind == CAD_NODE_SEND;
          Diagnostic &d = fail(Code::Ambiguous, g, std::string("two unordered ") + (send ? "sends" : "receives") +
                               " between ranks " + std::to_string(send ? r : o.peer) + " and " +
                               std::to_string(send ? o.peer : r) +
                               " with the same tag: which one meets which depends on timing");
          note(d, base_[r] + before[i], "the other one");
        }
        const uint64_t pg = partner_[g];
        if (pg == kNone) {
          if (unmatched++ < kMaxReports)
            fail(Code::Unmatched, g, o.kind == CAD_NODE_SEND
                 ? "rank " + std::to_string(r) + " sends to rank " + std::to_string(o.peer) + ", which posts no matching receive" + tag_text(o.tag)
                 : "rank " + std::to_string(r) + " receives from rank " + std::to_string(o.peer) + ", which posts no matching send" + tag_text(o.tag));
          continue;
        }
        if (o.kind != CAD_NODE_SEND) continue;  // each pair once, from its send
        const RankOp &ro = progs_[o.peer].ops[pg - base_[o.peer]];
        if (o.len != ro.len && mismatched++ < kMaxReports) {
          Diagnostic &d = fail(Code::SizeMismatch, g, "rank " + std::to_string(r) + " sends " +
                               std::to_string(o.len / p.esize) + " elements, but rank " + std::to_string(o.peer) +
                               " receives " + std::to_string(ro.len / p.esize));
          note(d, pg, "the receive it meets");
        }
        if (o.flags && ro.flags && o.flags != ro.flags && mismatched++ < kMaxReports) {
          Diagnostic &d = fail(Code::Direction, g, std::string("the send says the ") +
                               (o.flags == CAD_XFER_RECEIVER_READS ? "receiver" : "sender") +
                               " copies, the receive says the " +
                               (ro.flags == CAD_XFER_RECEIVER_READS ? "receiver" : "sender"));
          note(d, pg, "the receive it meets");
        }
        stats_.messages++;
        stats_.bytes += o.len;
      }
    }
    return unmatched == 0 && mismatched == 0 && ambiguous == 0;
  }

  std::string tag_text(uint32_t tag) const {
    return tag & (1u << 30) ? " with tag " + std::to_string(tag & ~(1u << 30)) : "";
  }

  // ---- 3. deadlock, and a topological order ----
  bool order() {
    const uint64_t N = stats_.ops;
    std::vector<uint32_t> indeg(N, 0);
    for (uint32_t r = 0; r < progs_.size(); r++)
      for (uint32_t e : progs_[r].edges) indeg[rep(base_[r] + e)]++;
    std::vector<uint64_t> ready;
    for (uint64_t g = 0; g < N; g++)
      if (rep(g) == g && indeg[g] == 0) ready.push_back(g);
    std::vector<uint64_t> cp_in(N, 0);
    order_.reserve(N);
    while (!ready.empty()) {
      const uint64_t x = ready.back();
      ready.pop_back();
      order_.push_back(x);
      const uint64_t cp = cp_in[x] + (partner_[x] != kNone);
      stats_.critical_path = std::max(stats_.critical_path, cp);
      for (uint64_t m : {x, partner_[x]}) {
        if (m == kNone) continue;
        const uint32_t r = rank_of(m);
        const RankProgram &p = progs_[r];
        const uint32_t i = static_cast<uint32_t>(m - base_[r]);
        for (uint32_t e = p.edge_first[i]; e < p.edge_first[i + 1]; e++) {
          const uint64_t y = rep(base_[r] + p.edges[e]);
          cp_in[y] = std::max(cp_in[y], cp);
          if (--indeg[y] == 0) ready.push_back(y);
        }
      }
    }
    uint64_t reps = 0;
    for (uint64_t g = 0; g < N; g++) reps += rep(g) == g;
    if (order_.size() == reps) return true;
    report_cycle(indeg);
    return false;
  }

  // Walks predecessors among the operations that never became ready until
  // one repeats: that loop is the cycle.
  void report_cycle(const std::vector<uint32_t> &indeg) {
    const uint64_t N = stats_.ops;
    std::vector<uint64_t> pred(N, kNone);
    for (uint32_t r = 0; r < progs_.size(); r++) {
      const RankProgram &p = progs_[r];
      for (uint32_t i = 0; i < p.ops.size(); i++)
        for (uint32_t e = p.edge_first[i]; e < p.edge_first[i + 1]; e++) {
          const uint64_t u = rep(base_[r] + i), v = rep(base_[r] + p.edges[e]);
          if (indeg[u] && indeg[v]) pred[v] = u;
        }
    }
    uint64_t start = kNone;
    for (uint64_t g = 0; g < N && start == kNone; g++)
      if (rep(g) == g && indeg[g]) start = g;
    std::vector<uint64_t> path;
    std::vector<char> on(N, 0);
    uint64_t x = start;
    while (x != kNone && !on[x]) {
      on[x] = 1;
      path.push_back(x);
      x = pred[x];
    }
    std::vector<uint64_t> cycle(std::find(path.begin(), path.end(), x), path.end());
    std::reverse(cycle.begin(), cycle.end());
    // Each element: an operation, or a matched send and receive that can
    // only complete together (rendezvous).
    Diagnostic &d = fail(Code::Deadlock, cycle.empty() ? start : cycle[0],
                         "deadlock: " + std::to_string(cycle.size()) + " operations wait for each other in a cycle");
    d.witness.push_back("the cycle, each waiting for the one above it and the first for the last");
    d.witness.push_back("(a send and its receive, <->, complete together):");
    for (uint64_t c : cycle) {
      std::string line = "  " + op_text(c);
      if (partner_[c] != kNone) line += "  <->  " + op_text(partner_[c]);
      d.witness.push_back(line);
      note(d, c, "in the cycle");
    }
  }

  // ---- 4. races ----
  // Within a rank, in program order, each access against what it
  // conflicts with: the last writer of every byte it touches and, for a
  // write, the readers since.  That suffices: an earlier conflicting
  // access is ordered before that writer (checked when it wrote), which
  // is ordered before this one.
  bool races() {
    int found = 0;
    std::vector<uint32_t> none, conflicts;
    for (uint32_t r = 0; r < progs_.size() && found < kMaxReports; r++) {
      const RankProgram &p = progs_[r];
      std::pmr::monotonic_buffer_resource pool;
      std::vector<AccessMap> maps;
      maps.reserve(p.buffers.size());
      for (size_t b = 0; b < p.buffers.size(); b++) maps.emplace_back(&pool);
      for (uint32_t i = 0; i < p.ops.size(); i++) {
        const RankOp &o = p.ops[i];
        for (const bool write : {false, true}) {
          if (write ? o.kind == CAD_NODE_SEND : o.kind == CAD_NODE_RECV) continue;
          if (!o.len || (o.kind != CAD_NODE_SEND && o.kind != CAD_NODE_RECV && o.kind != CAD_NODE_COPY &&
                         o.kind != CAD_NODE_REDUCE))
            continue;
          const int32_t buf = write ? o.dst : o.src;
          const uint64_t lo = write ? o.dst_off : o.src_off, hi = lo + o.len;
          conflicts.clear();
          maps[buf].access(lo, o.len, write, i, 0, none, &conflicts);
          for (const uint32_t u : conflicts) {
            if (reach(r).reaches(u, i)) continue;
            // u's access: its write when it writes these bytes, else its read.
            const RankOp &uo = p.ops[u];
            const bool u_writes = (uo.kind == CAD_NODE_RECV || uo.kind == CAD_NODE_COPY || uo.kind == CAD_NODE_REDUCE) &&
                                  uo.dst == buf && uo.dst_off < hi && lo < uo.dst_off + uo.len;
            const uint64_t ulo = u_writes ? uo.dst_off : uo.src_off, uhi = ulo + uo.len;
            const uint64_t from = std::max(lo, ulo), to = std::min(hi, uhi);
            const uint32_t w = write ? i : u, other = write ? u : i;
            const bool other_writes = write ? u_writes : false;
            Diagnostic &d = fail(Code::Race, gid(r, i), "race: " + range_text(p, buf, from, to - from) + " is " +
                                 (other_writes ? "written" : "read") + " and written by two operations that nothing orders");
            note(d, gid(r, w), "writes it");
            note(d, gid(r, other), other_writes ? "also writes it" : "reads it");
            found++;
            goto next_rank;  // one race per rank is enough to act on
          }
        }
      }
    next_rank:;
    }
    return found == 0;
  }

  // ---- 5. the postcondition ----
  bool postcondition();
  bool check_barrier();
  std::string sym_text(const Sym &s, uint64_t len) const;
  std::string want_text(int64_t q, int64_t index, uint64_t len) const;

  const Algorithm &a_;
  const InstanceSpec &spec_;
  const SourceManager &sm_;
  Diagnostics *diags_;
  const Observer *obs_;
  Instantiator in_;
  const CollectiveInfo &info_;
  std::string described_;
  std::vector<RankProgram> progs_;
  std::vector<uint64_t> base_;     // first global id of each rank, then the total
  std::vector<uint64_t> partner_;  // the matched operation, or kNone
  std::vector<uint64_t> order_;    // representatives in a topological order
  std::unique_ptr<Reach> reach_;
  uint32_t reach_rank_ = 0;
  std::vector<std::vector<SymBuffer>> state_;
  std::vector<Piece> pieces_, out_;  // reused
  Lists lists_;
  std::vector<const RankOp *> wrong_ops_;  // reductions with an op other than the call's
  VerifyStats stats_;
};

std::string Verifier::text_of(const Requirement *req) const {
  std::string s;
  // The requirement's own text, from its source line when there is one.
  const Loc &l = req->cond->loc;
  if (l.line) {
    s = sm_.line_text(l.file, l.line);
    const size_t at = s.find("requires");
    s = at == std::string::npos ? s : s.substr(at + 9);
    const size_t hash = s.find('#');
    if (hash != std::string::npos) s = s.substr(0, hash);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  }
  return s.empty() ? "a requirement" : s;
}

std::string Verifier::sym_text(const Sym &s, uint64_t len) const {
  switch (s.kind) {
    case Sym::Old: return "rank " + std::to_string(s.who) + "'s own data from before the call";
    case Sym::Zero: return "zeroes (scratch nobody wrote)";
    case Sym::Garbage: return "a reduction of elements that do not correspond";
    case Sym::WrongOp: {
      const RankOp &o = *wrong_ops_[s.who];
      const Loc &l = o.stmt->loc;
      return "a reduction with op " + op_name(o.op, o.uop) + " (" + sm_.path(l.file) + ":" + std::to_string(l.line) +
             "), where the call's op is " + op_name(spec_.op, spec_.user_op.get());
    }
    case Sym::Data: {
      const std::vector<uint32_t> &l = lists_.get(s.who);
      const std::string where = "[" + std::to_string(s.index) + ":" + std::to_string(s.index + static_cast<int64_t>(len)) + "]";
      if (l.size() == 1) return "rank " + std::to_string(l[0]) + "'s input " + where;
      std::string ranks;
      for (uint32_t q : l) ranks += (ranks.empty() ? "" : ", ") + std::to_string(q);
      return "the reduction of input " + where + " of ranks " + ranks;
    }
  }
  return "?";
}

std::string Verifier::want_text(int64_t q, int64_t index, uint64_t len) const {
  const std::string where = "[" + std::to_string(index) + ":" + std::to_string(index + static_cast<int64_t>(len)) + "]";
  if (q >= 0) return "rank " + std::to_string(q) + "'s input " + where;
  return std::string("the reduction of input ") + where + " of every rank" +
         (spec_.commutative ? " (each once)" : " in rank order");
}

bool Verifier::postcondition() {
  const uint32_t P = static_cast<uint32_t>(spec_.P);
  const int64_t n = spec_.n;
  // Initial state.
  state_.resize(P);
  lists_.init(P);
  for (uint32_t r = 0; r < P; r++) {
    const RankProgram &p = progs_[r];
    state_[r].resize(p.buffers.size());
    for (size_t b = 0; b < p.buffers.size(); b++) {
      Sym s;
      s.kind = p.buffers[b].collective < 0 ? Sym::Zero : Sym::Old;
      s.who = r;
      state_[r][b].init(p.buffers[b].elems, s, P);
    }
    // The inputs: send buffers, the root's bcast buffer; in place, where MPI puts them.
    const std::vector<Binding> bind = bind_buffers(a_.collective, P, n, r, spec_.root, spec_.inplace);
    for (size_t c = 0; c < info_.buffers.size(); c++) {
      const bool input = info_.buffers[c].send || (a_.collective == Collective::Bcast && r == spec_.root);
      if (!input || !bind[c].elems) continue;
      const int abi = bind[c].alias_of >= 0 ? bind[c].alias_of : static_cast<int>(c);
      Sym s;
      s.kind = Sym::Data;
      s.who = r;
      s.index = 0;
      state_[r][abi].write({{bind[c].offset, bind[c].offset + bind[c].elems, s}});
    }
  }
  // Run the data in topological order.
  for (uint64_t x : order_) {
    if (partner_[x] != kNone) {
      const uint64_t sg = op(x).kind == CAD_NODE_SEND ? x : partner_[x], rg = partner_[sg];
      const RankOp &so = op(sg), &ro = op(rg);
      const uint32_t sr = rank_of(sg), rr = rank_of(rg);
      const uint64_t es = progs_[sr].esize;
      std::vector<Piece> &pieces = pieces_;
      pieces.clear();
      state_[sr][so.src].read(so.src_off / es, (so.src_off + so.len) / es, &pieces);
      const int64_t shift = static_cast<int64_t>(ro.dst_off / es) - static_cast<int64_t>(so.src_off / es);
      for (Piece &pc : pieces) {
        pc.lo += shift;
        pc.hi += shift;
        pc.sym.by = ro.stmt;
      }
      state_[rr][ro.dst].write(pieces);
      continue;
    }
    const RankOp &o = op(x);
    const uint32_t r = rank_of(x);
    const uint64_t es = progs_[r].esize;
    if (o.kind != CAD_NODE_COPY && o.kind != CAD_NODE_REDUCE) continue;
    const uint64_t slo = o.src_off / es, dlo = o.dst_off / es, len = o.len / es;
    std::vector<Piece> &src = pieces_, &out = out_;
    src.clear();
    out.clear();
    state_[r][o.src].read(slo, slo + len, &src, o.kind == CAD_NODE_REDUCE);
    if (o.kind == CAD_NODE_COPY) {
      for (Piece &pc : src) out.push_back({pc.lo - slo + dlo, pc.hi - slo + dlo, pc.sym});
    } else {
      // dst = src o dst, element by element: split both at each other's
      // boundaries (positions relative to the range).  In a reducing
      // collective every reduction must use the call's op.
      const bool right_op = !info_.reducing || (o.op == spec_.op && (o.op != CAD_OP_USER || same_op(o.uop, spec_.user_op.get())));
      if (!right_op) wrong_ops_.push_back(&o);
      std::vector<Piece> dst;
      state_[r][o.dst].read(dlo, dlo + len, &dst, true);
      size_t i = 0, j = 0;
      uint64_t at = 0;
      while (at < len) {
        while (src[i].hi - slo <= at) i++;
        while (dst[j].hi - dlo <= at) j++;
        const uint64_t end = std::min(src[i].hi - slo, dst[j].hi - dlo);
        const Sym &a = src[i].sym, &b = dst[j].sym;
        const int64_t ia = a.index + static_cast<int64_t>(at - (src[i].lo - slo));
        const int64_t ib = b.index + static_cast<int64_t>(at - (dst[j].lo - dlo));
        Sym s;
        if (!right_op) {
          s.kind = Sym::WrongOp;
          s.who = static_cast<uint32_t>(wrong_ops_.size() - 1);
        } else if (a.kind == Sym::WrongOp || b.kind == Sym::WrongOp) {  // the first wrong op stays the witness
          s = a.kind == Sym::WrongOp ? a : b;
        } else if (a.kind == Sym::Data && b.kind == Sym::Data && ia == ib) {
          s.kind = Sym::Data;
          s.who = lists_.concat(a.who, b.who);
          s.index = ib;
        } else {
          s.kind = Sym::Garbage;
        }
        out.push_back({dlo + at, dlo + end, s});
        at = end;
      }
    }
    for (Piece &pc : out) pc.sym.by = o.stmt;
    state_[r][o.dst].write(out);
  }
  if (a_.collective == Collective::Barrier) return check_barrier();
  // Compare the outputs with the collective's definition.
  std::vector<uint32_t> everyone(P);
  for (uint32_t q = 0; q < P; q++) everyone[q] = q;
  const uint32_t all_in_order = lists_.intern(everyone);
  std::unordered_map<uint32_t, bool> once;  // commutative: each rank exactly once
  auto is_all = [&](uint32_t id) {
    if (id == all_in_order) return true;
    if (!spec_.commutative) return false;
    auto it = once.find(id);
    if (it != once.end()) return it->second;
    std::vector<uint32_t> v = lists_.get(id);
    std::sort(v.begin(), v.end());
    return once[id] = v == everyone;
  };
  const int out = a_.collective == Collective::Bcast ? 0 : 1;  // the output buffer
  int wrong = 0;
  for (uint32_t r = 0; r < P && wrong < kMaxReports; r++) {
    const std::vector<Binding> bind = bind_buffers(a_.collective, P, n, r, spec_.root, spec_.inplace);
    const Binding &ob = bind[out];
    const bool rooted_out = info_.buffers[out].root_only;
    if (rooted_out && r != spec_.root) continue;
    const uint64_t len = a_.collective == Collective::ReduceScatterBlock ? static_cast<uint64_t>(n) : ob.elems;
    const int abi = ob.alias_of >= 0 ? ob.alias_of : out;
    const uint64_t base = ob.offset;
    // Expected at output position i: q >= 0 a rank's input, q < 0 everyone's reduction; and the index.
    auto expect = [&](uint64_t i, int64_t *q, int64_t *index) {
      const int64_t ii = static_cast<int64_t>(i), blk = n ? ii / n : 0, in = n ? ii % n : 0;
      switch (a_.collective) {
        case Collective::Bcast: *q = spec_.root; *index = ii; break;
        case Collective::Reduce:
        case Collective::Allreduce: *q = -1; *index = ii; break;
        case Collective::Gather:
        case Collective::Allgather: *q = blk; *index = in; break;
        case Collective::Scatter: *q = spec_.root; *index = static_cast<int64_t>(r) * n + ii; break;
        case Collective::Alltoall: *q = blk; *index = static_cast<int64_t>(r) * n + in; break;
        case Collective::ReduceScatterBlock: *q = -1; *index = static_cast<int64_t>(r) * n + ii; break;
        default: *q = -1; *index = ii; break;
      }
    };
    const bool blocks = info_.buffers[out].times_p && a_.collective != Collective::ReduceScatterBlock;
    // Output block k is rank k's input: a run of blocks from the right
    // rank and index is right as a whole.
    const bool by_rank = a_.collective == Collective::Gather || a_.collective == Collective::Allgather ||
                         a_.collective == Collective::Alltoall;
    bool reported = false;  // the first wrong range of a rank is enough
    std::vector<Piece> &runs = pieces_, &plain = out_;
    runs.clear();
    state_[r][abi].read(base, base + len, &runs);
    for (const Piece &run : runs) {
      if (by_rank && run.sym.kind == Sym::Data && run.sym.blk && run.sym.blk == static_cast<uint64_t>(n) &&
          (run.lo - base) % run.sym.blk == 0) {
        int64_t q, index;
        expect(run.lo - base, &q, &index);
        if (run.sym.who == q && run.sym.index == index) continue;
      }
      plain.clear();
      explode(run, &plain);
      for (const Piece &pc : plain) {
        for (uint64_t at = pc.lo - base, end = pc.hi - base; at < end && !reported;) {
          // Within one block of n elements the expectation is linear.
          const uint64_t stop = blocks && n ? std::min(end, (at / n + 1) * n) : end;
          int64_t q, index;
          expect(at, &q, &index);
          const int64_t got_index = pc.sym.index + static_cast<int64_t>(at - (pc.lo - base));
          const bool ok = pc.sym.kind == Sym::Data && got_index == index &&
                          (q >= 0 ? pc.sym.who == q : is_all(pc.sym.who));
          if (!ok) {
            Sym shown = pc.sym;
            shown.index = got_index;
            Diagnostic &d = diags_->error(Code::WrongResult, pc.sym.by ? pc.sym.by->loc : a_.loc,
                                          "wrong result: rank " + std::to_string(r) + "'s " + info_.buffers[out].name +
                                              "[" + std::to_string(at) + ":" + std::to_string(stop) + "] is wrong");
            d.instance = described_;
            d.rank = static_cast<int>(r);
            d.witness.push_back("it holds " + sym_text(shown, stop - at));
            d.witness.push_back("it should hold " + want_text(q, index, stop - at));
            if (!pc.sym.by) d.witness.push_back("no operation wrote it");
            reported = true;
          }
          at = stop;
        }
      }
      if (reported) break;
    }
    wrong += reported;
  }
  return wrong == 0;
}

// A barrier: every rank's last operation must come after every rank's
// first.  What an operation can know: its rank, what its predecessors
// know, and for a receive what its send knew.  A send learns nothing from
// its receive: a transport may send eagerly, so only the receiver learns
// that the sender arrived.  What a rank knows in the end is what its
// sinks (operations without successors) know: knowledge only grows along
// edges.  Sets of ranks as intervals (a barrier's are a few: a
// dissemination's are ranges, a tree's subtrees), held only while an
// operation still has to pass them on.
bool Verifier::check_barrier() {
  const uint32_t P = static_cast<uint32_t>(spec_.P);
  if (P == 1) return true;
  std::vector<RankSet> know(stats_.ops), seen(P);
  RankSet tmp;
  for (uint64_t x : order_) {
    // A matched pair: the send first, then the receive that learns from it.
    uint64_t members[2] = {x, partner_[x]};
    if (members[1] != kNone && op(members[0]).kind == CAD_NODE_RECV) std::swap(members[0], members[1]);
    for (uint64_t m : members) {
      if (m == kNone) continue;
      const uint32_t r = rank_of(m);
      know[m].unite(RankSet(r), &tmp);
      if (op(m).kind == CAD_NODE_RECV) know[m].unite(know[partner_[m]], &tmp);
      const RankProgram &p = progs_[r];
      const uint32_t i = static_cast<uint32_t>(m - base_[r]);
      for (uint32_t e = p.edge_first[i]; e < p.edge_first[i + 1]; e++) know[base_[r] + p.edges[e]].unite(know[m], &tmp);
      if (p.edge_first[i] == p.edge_first[i + 1]) seen[r].unite(know[m], &tmp);
    }
    for (uint64_t m : members)
      if (m != kNone) RankSet().swap(know[m]);  // passed on
  }
  for (uint32_t r = 0; r < P; r++) {
    seen[r].unite(RankSet(r), &tmp);
    const uint32_t q = seen[r].first_missing();
    if (q < P) {
      Diagnostic &d = diags_->error(Code::NotSynchronising,
                                    base_[r + 1] > base_[r] ? loc_of(base_[r + 1] - 1) : a_.loc,
                                    "rank " + std::to_string(r) + " can leave the barrier before rank " +
                                        std::to_string(q) + " has entered it");
      d.instance = described_;
      d.rank = static_cast<int>(r);
      d.witness.push_back("no chain of messages from rank " + std::to_string(q) +
                          "'s first operation reaches rank " + std::to_string(r) + "'s last");
      return false;
    }
  }
  return true;
}

}  // namespace

bool instantiate_all(const Instantiator &in, const SourceManager &sm, Diagnostics *diags,
                     std::vector<RankProgram> *progs, const Observer *obs) {
  const uint32_t P = static_cast<uint32_t>(in.spec().P);
  progs->assign(P, RankProgram());
  std::vector<uint64_t> image;
  uint64_t total = 0;
  for (uint32_t r = 0; r < P; r++) {
    uint32_t size;
    if (!in.rank(r, &(*progs)[r], obs) ||
        !emit_image(in.algorithm(), in.spec(), (*progs)[r], sm, &image, &size, diags))
      return false;
    total += (*progs)[r].ops.size();
    if (total > in.spec().limits.ops_per_instance) {
      Diagnostic &d = diags->error(Code::TooBig, in.algorithm().loc,
                                   "ranks 0.." + std::to_string(r) + " alone have more than " +
                                       std::to_string(in.spec().limits.ops_per_instance) +
                                       " operations: too large an instance to verify as a whole");
      d.instance = in.spec().describe(in.algorithm());
      d.witness.push_back("verify smaller instances; compiling one rank (cadc compile, the runtime) has no such limit");
      return false;
    }
  }
  return true;
}

Matching match_messages(const std::vector<RankProgram> &progs) {
  Matching m;
  const size_t P = progs.size();
  m.base.assign(P + 1, 0);
  for (size_t r = 0; r < P; r++) m.base[r + 1] = m.base[r] + progs[r].ops.size();
  m.partner.assign(m.base.back(), Matching::kUnmatched);
  // Every rank's receives by (source, tag), in program order within a key;
  // then each rank's sends the same way: the k-th send of a key meets the
  // k-th receive of its key at the destination.
  std::vector<MessageKey> recvs, sends;
  std::vector<uint64_t> recv_first(P + 1, 0);
  for (size_t d = 0; d < P; d++) {
    message_keys(progs[d], CAD_NODE_RECV, &recvs);
    recv_first[d + 1] = recvs.size();
  }
  for (uint32_t s = 0; s < P; s++) {
    sends.clear();
    message_keys(progs[s], CAD_NODE_SEND, &sends);
    for (size_t i = 0; i < sends.size();) {
      const uint32_t d = static_cast<uint32_t>(sends[i].key >> 32), tag = static_cast<uint32_t>(sends[i].key);
      size_t j = i;
      while (j < sends.size() && sends[j].key == sends[i].key) j++;
      if (d < P) {
        const MessageKey lo{uint64_t{s} << 32 | tag, 0};
        auto r = std::lower_bound(recvs.begin() + static_cast<std::ptrdiff_t>(recv_first[d]),
                                  recvs.begin() + static_cast<std::ptrdiff_t>(recv_first[d + 1]), lo);
        for (; i < j && r != recvs.begin() + static_cast<std::ptrdiff_t>(recv_first[d + 1]) && r->key == lo.key; i++, r++) {
          const uint64_t sg = m.base[s] + sends[i].op, rg = m.base[d] + r->op;
          m.partner[sg] = rg;
          m.partner[rg] = sg;
        }
      }
      i = j;
    }
  }
  return m;
}

InstanceResult verify_instance(const Algorithm &a, const InstanceSpec &spec, const SourceManager &sm,
                               Diagnostics *diags, std::vector<RankProgram> *programs, const Observer *obs) {
  return Verifier(a, spec, sm, diags, obs).run(programs);
}

}  // namespace cad
