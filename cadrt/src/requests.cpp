// requests.cpp - from a call to a running request: select the algorithm
// (the library's rules, or CADRT_ALGORITHM_<COLL>=name[:param=value,...]),
// instantiate this rank's program (cached per instance), verify it with
// the core verifier, bind the caller's buffers, run; and waiting for it.
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include <ctime>

#include "printer.h"
#include "runtime.h"
#include "settings.h"

namespace cadrt {

bool Instance::Key::operator<(const Key &o) const {
  if (kind != o.kind) return kind < o.kind;
  if (peer != o.peer) return peer < o.peer;
  if (tag != o.tag) return tag < o.tag;
  return occ < o.occ;
}

int64_t Instance::find(uint8_t kind, uint32_t peer, uint32_t tag, uint32_t o) const {
  const Key k{kind, peer, tag, o, 0};
  auto it = std::lower_bound(keys.begin(), keys.end(), k);
  if (it == keys.end() || it->kind != kind || it->peer != peer || it->tag != tag || it->occ != o) return -1;
  return it->node;
}

void Instance::index() {
  occ.assign(prog.n_nodes, 0);
  keys.clear();
  sends_to.clear();
  recvs_from.clear();
  large = false;
  size = 0;
  for (uint32_t b = 0; b < prog.n_buffers; b++) size = std::max<uint64_t>(size, prog.buffers[b].size);
  std::map<std::tuple<uint8_t, uint32_t, uint32_t>, uint32_t> seen;
  for (uint32_t i = 0; i < prog.n_nodes; i++) {
    const cad_node &n = prog.nodes[i];
    if (n.kind != CAD_NODE_SEND && n.kind != CAD_NODE_RECV) continue;
    occ[i] = seen[{n.kind, n.peer, n.tag}]++;
    large |= n.len > kPayload;
    if (n.kind == CAD_NODE_SEND) {
      if (sends_to.size() <= n.peer) sends_to.resize(n.peer + 1, 0);
      sends_to[n.peer] = 1;
    } else {
      if (recvs_from.size() <= n.peer) recvs_from.resize(n.peer + 1, 0);
      recvs_from[n.peer] = 1;
    }
    keys.push_back({n.kind, n.peer, n.tag, occ[i], i});
  }
  std::sort(keys.begin(), keys.end());
}

namespace {

uint64_t fnv(uint64_t h, const void *p, size_t n) {
  for (const unsigned char *c = static_cast<const unsigned char *>(p); n--; c++) h = (h ^ *c) * 0x100000001b3ull;
  return h;
}

uint64_t fnv(uint64_t h, const std::string &s) { return fnv(h, s.data(), s.size()); }

// Every rank's domain at every level, hashed; 0 for a flat one.
uint64_t topology_digest(const cad::Topology &t) {
  if (t.is_flat()) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  for (int level = 0; level < cad::kLevels; level++)
    for (int64_t r = 0; r < t.size(); r++) {
      const int64_t d = t.domain(level, r);
      h = fnv(h, &d, sizeof d);
    }
  return h;
}

std::string upper(std::string s) {
  for (char &c : s) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  return s;
}

// The settings of CADRT_ALGORITHM_<COLL>=name:a=1,b=-2 (the text after the
// colon) for algorithm a: each a parameter of a, set once, to a decimal
// integer.  They come out in a's declaration order, so that one setting
// written in two orders is one instance and one fingerprint.  false with
// *why.
bool parse_settings(const cad::Algorithm &a, const std::string &text, std::vector<std::pair<std::string, int64_t>> *out,
                    std::string *why) {
  std::vector<std::pair<std::string, int64_t>> got;
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      *why = "'" + item + "' is not param=value (the form is NAME:param=value,param=value)";
      return false;
    }
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    bool known = false;
    for (const cad::Param &p : a.params) known |= p.name == name;
    if (!known) {
      std::string list;
      for (const cad::Param &p : a.params) list += (list.empty() ? "" : ", ") + p.name;
      *why = "'" + name + "' is not a parameter of " + a.name +
             (list.empty() ? std::string(" (it has none)") : " (its parameters: " + list + ")");
      return false;
    }
    for (const auto &g : got)
      if (g.first == name) {
        *why = "'" + name + "' is set twice";
        return false;
      }
    // strtoll alone would take leading blanks, "0x10" as 0 and trailing junk.
    const size_t digits = value[0] == '-' || value[0] == '+' ? 1 : 0;
    char *end = nullptr;
    errno = 0;
    const long long v = value.size() > digits && isdigit(static_cast<unsigned char>(value[digits]))
                            ? strtoll(value.c_str(), &end, 10)
                            : 0;
    if (!end || *end || errno == ERANGE) {
      *why = "the value of " + name + ", '" + value + "', is not an integer";
      return false;
    }
    got.emplace_back(name, static_cast<int64_t>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  out->clear();
  for (const cad::Param &p : a.params)
    for (const auto &g : got)
      if (g.first == p.name) out->push_back(g);
  return true;
}

}  // namespace

CADRT_HOT const std::shared_ptr<const Instance> *Runtime::instance(cadrt_comm_s *comm, cad::Collective c,
                                                         const cad::InstanceSpec &given, int *err) {
  uint16_t op_id = static_cast<uint16_t>(given.op);
  if (given.user_op)
    for (size_t i = 0; i < user_ops.size(); i++)
      if (user_ops[i] == given.user_op) op_id = static_cast<uint16_t>(256 + i);
  const FastKey fk = {comm, given.n, static_cast<int32_t>(given.root), static_cast<uint8_t>(c), static_cast<uint8_t>(given.dtype),
                      static_cast<uint8_t>(given.inplace), op_id};
  if (auto it = fast_.find(fk); it != fast_.end()) return &it->second;
  return make_instance(comm, c, given, fk, err);
}

const std::shared_ptr<const Instance> *Runtime::make_instance(cadrt_comm_s *comm, cad::Collective c,
                                                              const cad::InstanceSpec &given, const FastKey &fk,
                                                              int *err) {
  if (fast_.size() >= 4096) fast_.clear();  // a bound; the string-keyed cache stays
  cad::InstanceSpec spec = given;
  const char *coll = cad::collective_info(c).name;
  spec.topo = comm->topo;
  const cad::Algorithm *alg = nullptr;
  const std::string var = "CADRT_ALGORITHM_" + upper(coll);
  std::vector<std::string> trace;  // CADRT_EXPLAIN
  const char *forced = setting(var.c_str());
  if (forced) {
    // NAME, or NAME:param=value,... (the parameters' values for this call).
    const std::string text = forced, name = text.substr(0, text.find(':'));
    std::string why;
    alg = lib.find(name, &why);
    if (!alg && !why.empty()) {
      *err = set_error(-EINVAL, var + "=" + forced + ": " + why);
      return nullptr;
    }
    if (!alg || alg->collective != c) {
      *err = set_error(-EINVAL, var + "=" + forced + ": the library has no " + coll + " algorithm named " + name);
      return nullptr;
    }
    if (name.size() < text.size()) {
      std::string why;
      if (!parse_settings(*alg, text.substr(name.size() + 1), &spec.params, &why)) {
        *err = set_error(-EINVAL, var + "=" + forced + ": " + why);
        return nullptr;
      }
    }
    if (!cad::takes_op(*alg, spec)) {
      *err = set_error(-EINVAL, var + "=" + forced + " is written for the op " + cad::written_for(*alg) +
                                    ", not " + cad::op_name(spec));
      return nullptr;
    }
    if (spec.inplace && !alg->inplace) spec.inplace = false;  // (as below)
    cad::Diagnostics quiet;
    cad::Instantiator probe(*alg, spec, &quiet);
    if (!probe.ok() || !probe.applicable()) {
      std::string why;
      if (probe.failed_requirement())
        why = ": the requirement " + cad::print_expr(*probe.failed_requirement()->cond) + " does not hold";
      else if (!quiet.empty())
        why = ": " + quiet.list()[0].message;
      *err = set_error(-EINVAL, var + "=" + forced + " does not apply to " + coll + " P=" + std::to_string(spec.P) +
                                    " n=" + std::to_string(spec.n) + why);
      return nullptr;
    }
    // Forced or not, only what was proven runs.
    const cad::GateVerdict v = proofs.decide(lib, *alg, spec);
    if (!v.run) {
      *err = set_error(-EPERM, var + "=" + forced + ": " + coll + " " + spec.describe(*alg) + " is " + v.note);
      return nullptr;
    }
    if (explain && comm->rank == 0 && !v.note.empty()) trace.push_back(v.note);
  } else {
    std::string why;
    const cad::SelectionGate gate = [this](const cad::Rule &, const cad::Algorithm &a, const cad::InstanceSpec &s) {
      return proofs.decide(lib, a, s);
    };
    alg = cad::select_algorithm(lib, c, &spec, &why, explain && comm->rank == 0 ? &trace : nullptr,
                                proofs.policy() == ProofPolicy::Off ? nullptr : &gate);
    if (!alg && !why.empty()) {
      *err = set_error(-EINVAL, std::string("the algorithm library: ") + why);
      return nullptr;
    }
    if (!alg) {
      *err = set_error(-ENOTSUP, std::string("no algorithm of the library applies to ") + coll +
                                     " with P=" + std::to_string(spec.P) + " n=" + std::to_string(spec.n) +
                                     (spec.commutative ? "" : " and a non-commutative op") +
                                     (proofs.counts().refused ? " that was proven (CADRT_EXPLAIN=1 says why)" : ""));
      return nullptr;
    }
  }
  if (explain && comm->rank == 0) {
    // (In place as the call gives it where the rules chose; a forced
    // algorithm without `inplace` has had it dropped already, above.)
    const std::string how = forced && *forced ? var + "=" + forced : std::string("by the rules");
    fprintf(stderr, "cadrt: rank 0 of communicator %llu: %s %s (%lld B): %s, %s\n",
            static_cast<unsigned long long>(comm->ctx), coll, spec.describe(*alg).c_str(),
            static_cast<long long>(spec.n * static_cast<int64_t>(cad::element_size(spec))), alg->name.c_str(),
            how.c_str());
    for (const std::string &t : trace) fprintf(stderr, "cadrt:   %s\n", t.c_str());
  }
  // In place, an algorithm that does not declare `inplace` was proven for
  // separate buffers only: that program it is, and the request runs it
  // from a copy of the in-place input (collective() in api.cpp).
  if (spec.inplace && !alg->inplace) spec.inplace = false;
  std::string key = alg->name + "|" + spec.describe(*alg) + "|r" + std::to_string(comm->rank) + "|dt" +
                    std::to_string(spec.dtype) + "|op" + std::to_string(spec.op) + "|t" +
                    std::to_string(reinterpret_cast<uintptr_t>(spec.topo.get()));
  if (auto it = cache_.find(key); it != cache_.end()) return &fast_.emplace(fk, it->second).first->second;

  auto inst = std::make_shared<Instance>();
  inst->alg = alg;
  inst->topo = spec.topo;
  cad::Diagnostics diags;
  cad::Instantiator in(*alg, spec, &diags);
  cad::RankProgram rp;
  uint32_t size = 0;
  if (!in.ok() || !in.rank(static_cast<uint32_t>(comm->rank), &rp) ||
      !cad::emit_image(*alg, spec, rp, lib.sm, &inst->image, &size, &diags)) {
    *err = set_error(-EINVAL, "instantiating " + alg->name + " " + spec.describe(*alg) + ": " +
                                  (diags.empty() ? std::string("failed") : cad::render_text(lib.sm, diags.list()[0])));
    return nullptr;
  }
  char msg[512];
  cad_log log;
  cad_log_init(&log, msg, sizeof msg);
  if (int v = cad_verify(inst->image.data(), size, nullptr, &inst->prog, &log)) {
    *err = set_error(v, "the core verifier rejected rank " + std::to_string(comm->rank) + "'s program of " + alg->name +
                            ": " + msg);
    return nullptr;
  }
  inst->index();
  {
    const cad::CollectiveInfo &info = cad::collective_info(c);
    inst->desc = alg->name;
    for (const auto &p : spec.params) inst->desc += " " + p.first + "=" + std::to_string(p.second);
    inst->desc += std::string(" (") + coll + " P=" + std::to_string(spec.P);
    if (info.reducing)
      inst->desc += " count=" + std::to_string(spec.n) + " " + cad_dtype_name(spec.dtype) + " " +
                    cad::op_name(spec);
    else if (c != cad::Collective::Barrier)
      inst->desc += " bytes=" + std::to_string(spec.n);
    if (info.rooted) inst->desc += " root=" + std::to_string(spec.root);
    if (spec.inplace) inst->desc += " in place";  // (the program's: not for one run from a copy)
    // (The machine a topology file describes; hwloc's view, gathered from
    // every rank, is the same on all.)
    if (!spec.topo->is_flat() && spec.topo->name() != "hwloc") inst->desc += " on " + spec.topo->name();
    inst->desc += ")";
  }
  // What every rank must agree on (not the rank, not in-place).
  std::string agreed = alg->name + "|" + coll + "|P" + std::to_string(spec.P) + "|n" + std::to_string(spec.n) +
                       "|root" + std::to_string(cad::collective_info(c).rooted ? spec.root : 0) + "|dt" +
                       std::to_string(spec.dtype) + "|op" + std::to_string(spec.op);
  // A user op by its name and bytecode: ranks that looked up different
  // operators of one name do not run together.
  if (spec.user_op) agreed += "|uop" + spec.user_op->name + cad::userop_to_json(*spec.user_op).dump();
  for (const auto &p : spec.params) agreed += "|" + p.first + "=" + std::to_string(p.second);
  // And the placement the program was made for: ranks that see the
  // machine differently (CADRT_TOPOLOGY on some ranks only) make a
  // hierarchical algorithm's trees differently, and such programs run
  // together would hang or meet the wrong peers.
  agreed += "|topo" + std::to_string(topology_digest(*spec.topo));
  inst->fp = fnv(0xcbf29ce484222325ull, agreed);
  if (stats) stats_insts_.push_back(inst);
  if (auto put = cache_.emplace(key, inst); put.second) {
    if (comm->cached_epoch != cache_epoch_) {
      comm->cached.clear();
      comm->cached_epoch = cache_epoch_;
    }
    comm->cached.push_back(put.first);
  }
  return &fast_.emplace(fk, inst).first->second;
}

void Runtime::forget_comm(const cadrt_comm_s *comm) {
  for (auto it = fast_.begin(); it != fast_.end();) it = it->first.comm == comm ? fast_.erase(it) : std::next(it);
  // cache_'s key holds the communicator's topology, which each communicator
  // has its own of: nobody finds these instances again, and a program that
  // splits and frees communicators would grow by each one's instances.
  // (Requests still running hold their instance.)
  if (comm->cached_epoch == cache_epoch_)
    for (auto it : comm->cached) cache_.erase(it);
  // Nor do spare requests keep them alive: the spares of its instances
  // go, with their memory (a program that splits a communicator, runs a
  // few collectives on it and frees it would otherwise keep up to
  // kSpareBytes of scratch nobody's instance uses).
  for (size_t i = spare_.size(); i-- > 0;)
    if (spare_[i]->inst && spare_[i]->inst->topo == comm->topo) drop_spare(i);
}

CADRT_HOT cadrt_request_s *Runtime::take_spare(size_t k) {
  cadrt_request_s *r = spare_[k];
  spare_bytes_ -= r->held;
  r->held = 0;
  spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(k));
  spare_inst_.erase(spare_inst_.begin() + static_cast<std::ptrdiff_t>(k));
  return r;
}

void Runtime::drop_spare(size_t k) { delete take_spare(k); }

CADRT_HOT cadrt_request_s *Runtime::new_request(const Instance *inst) {
  // One that last ran inst, if any: its executor memory and scratch are
  // ready.  Else a new one while the spares are fewer than kSpares and
  // hold less than kSpareBytes, so that a loop of collectives in turn (a
  // broadcast and an allreduce; broadcasts from several roots; every
  // collective at a few sizes) keeps one for each instead of setting up
  // the executor and the scratch at every call; else the least recently
  // recycled, whose memory is then set up for inst.  (Taking another
  // instance's spare frees its scratch and allocates this one's: in a loop
  // of two collectives that would happen at every call.)
  size_t k = spare_inst_.size();
  while (k > 0 && spare_inst_[k - 1] != inst) k--;  // (the most recent first)
  if (k == 0) {
    if (spare_.size() < kSpares && spare_bytes_ < kSpareBytes) return new cadrt_request_s();
    k = 1;
  }
  cadrt_request_s *r = take_spare(k - 1);
  r->bound = cadrt_bound();  // (the caller binds it anew: one whose bind fails is bound to no call)
  return r;
}

CADRT_HOT cadrt_request_s *Runtime::reuse(const cadrt_bound &call) {
  if (spare_.empty() || !(spare_.back()->bound == call)) return nullptr;
  n_reused++;
  return take_spare(spare_.size() - 1);
}

CADRT_HOT void Runtime::recycle(cadrt_request_s *r) {
  if (!r) return;
  if (r->kh >= 0) kernel_free(r);
  if (!initialised_) {
    delete r;
    return;
  }
  if (spare_.size() >= kSpares) drop_spare(0);  // (more were out at once) the oldest goes
  // A fresh request but for the vectors' capacity, and its instance with
  // the executor's memory set up for it (exec_ready): the next collective
  // of the same instance, most likely the next call, starts from there.
  r->comm = nullptr;
  r->persistent = r->active = r->done = r->finished = r->redrain = r->draining = r->from_cad = false;
  r->result = 0;
  r->error.clear();
  r->seq = 0;
  r->outgoing.clear();
  r->unsent = 0;
  r->prev = r->next = nullptr;
  r->kgen = 0;
  // What it holds: its scratch and the executor's and transfers' arrays
  // (the rest is a few hundred bytes).  Beyond kSpareBytes the oldest go,
  // down to this one.
  r->held = sizeof *r + r->exec_mem.capacity() * sizeof(uint32_t) + r->xfer.capacity() * sizeof(cadrt::Xfer);
  for (const auto &b : r->scratch) r->held += b.capacity();
  r->held += r->copy_in.capacity();
  spare_.push_back(r);
  spare_inst_.push_back(r->inst.get());
  spare_bytes_ += r->held;
  while (spare_bytes_ > kSpareBytes && spare_.size() > 1) drop_spare(0);
}

// Binds buffers: the program's send buffer to sendbuf, its receive buffer
// to recvbuf, scratch to memory zeroed when it was allocated -- a recycled
// request's, if it has the sizes (the next call of the same collective):
// as the kernel engine's scratch, allocated at load, what a run finds in it
// is what the last one left (cadc's proofs take nothing from scratch that
// nobody wrote; a hand-built CAD has only the caller's own buffers).  Send
// and receive buffers may not overlap (CADRT_IN_PLACE is the way to share
// one).
CADRT_HOT int Runtime::bind(cadrt_request_s *r, const void *sendbuf, void *recvbuf) {
  const cad_prog &p = r->inst->prog;
  r->bufs.assign(p.n_buffers, nullptr);
  size_t k = 0;  // scratch buffers bound
  const unsigned char *s_lo = nullptr, *r_lo = nullptr;
  uint64_t s_len = 0, r_len = 0;
  for (uint32_t i = 0; i < p.n_buffers; i++) {
    const cad_buffer &b = p.buffers[i];
    switch (b.kind) {
      case CAD_BUF_SEND:
        r->bufs[i] = static_cast<unsigned char *>(const_cast<void *>(sendbuf));
        s_lo = r->bufs[i];
        s_len = b.size;
        break;
      case CAD_BUF_RECV:
        r->bufs[i] = static_cast<unsigned char *>(recvbuf);
        r_lo = r->bufs[i];
        r_len = b.size;
        break;
      default:
        if (engine == Engine::Kernel) break;  // the module allocates it
        if (k == r->scratch.size()) r->scratch.emplace_back(b.size);
        else if (r->scratch[k].size() != b.size) r->scratch[k] = std::vector<unsigned char>(b.size);
        r->bufs[i] = r->scratch[k++].data();
        break;
    }
    if (b.size && !r->bufs[i] && b.kind != CAD_BUF_SCRATCH)
      return set_error(-EINVAL, std::string("the ") + (b.kind == CAD_BUF_SEND ? "send" : "receive") +
                                    " buffer is NULL but the call needs " + std::to_string(b.size) + " bytes there");
  }
  r->scratch.resize(k);
  if (s_len && r_len && s_lo < r_lo + r_len && r_lo < s_lo + s_len)
    return set_error(-EINVAL, "the send and receive buffers overlap: use CADRT_IN_PLACE");
  n_binds++;
  // The kernel engine runs the program in the module: no executor, no
  // transfer states or queues here (the job is on one node).
  if (engine == Engine::Kernel) return 0;
  if (!r->exec_ready) {
    n_fresh_binds++;
    r->exec_mem.assign((cad_exec_mem_size(&p) + 3) / 4, 0);
    cad_exec_init(&r->ex, &p, r->exec_mem.data());
    r->exec_ready = true;
  }
  r->xfer.resize(p.n_nodes);  // (start() resets them)
  r->netwait.clear();
  // progress() must not allocate (the signal engine runs it in a handler,
  // which may have interrupted malloc): room for every node in both.
  // (Tested first: a recycled request of the same instance has the room.)
  if (r->netwait.capacity() < p.n_nodes) r->netwait.reserve(p.n_nodes);
  if (r->outgoing.capacity() < p.n_nodes) r->outgoing.reserve(p.n_nodes);
  if (r->error.capacity() < kWhyBytes) r->error.reserve(kWhyBytes);
  if (r->aborted.capacity() < static_cast<size_t>(r->comm->size)) r->aborted.reserve(static_cast<size_t>(r->comm->size));
  return 0;
}

CADRT_HOT int Runtime::start(cadrt_request_s *r) {
  if (r->active) return set_error(-EBUSY, "the request is already active");
  r->seq = r->comm->next_seq++;
  if (stats) r->inst->starts.fetch_add(1, std::memory_order_relaxed);
  // (Before the request is active: no peer writes recvbuf before this
  // rank's start has posted its receives, and no progress pass sees it.)
  if (r->copy_in_from && !r->copy_in.empty()) std::memcpy(r->copy_in.data(), r->copy_in_from, r->copy_in.size());
  if (engine != Engine::Kernel) {  // (the module keeps the kernel engine's state)
    for (Xfer &x : r->xfer) x = Xfer();
    r->outgoing.clear();
    r->netwait.clear();
    r->redrain = false;
    r->draining = false;
    r->tell_next = INT32_MAX;
    r->unsent = 0;
    r->offers = 0;  // (finish() gave back every offer)
    r->rdv_node = -1;
    cad_exec_start(&r->ex);
  }
  starting_ = r;
  struct Started {
    Runtime *rt;
    ~Started() { rt->starting_ = nullptr; }
  } started{this};
  activate(r);
  // A peer that posted first has announced its transfers (an RTS for a
  // receiver that reads, a CTS for a sender that writes): take them in now,
  // so that the copy runs in this call -- while that peer computes --
  // rather than at our next call, when it may be waiting for it.  (As
  // LibNBC's NBC_Start runs its progress function once.)  Only when
  // something is there: a small collective's start stays as short.
  if (engine != Engine::Kernel && !r->done) {
    if (incoming()) progress();
    rendezvous(r);
    if (offers && r->inst->large && !r->done && !r->draining) offer_open(r);
  }
  // For first_look, whose verdict only the push decision for a large send
  // reads: none for the kernel engine (a clock read is a system call under
  // qemu, 1.3-2 us, where the guest's clocksource is the HPET) nor for an
  // instance whose every message fits a ring slot (two clock reads, about
  // 70 ns of a 1-byte ibcast's 600 on the 2-core VM).
  r->started_ns = engine == Engine::Kernel || !r->inst->large ? 0 : now_ns();
  return 0;
}

// A peer inside the library is most likely starting the same collective
// (ranks reach a collective together): its announcement is a fraction of a
// microsecond away.  Waiting for it here lets this rank make its copies in
// its own start, and the peer go back to its work with its part done,
// instead of finding at its wait that this rank, computing, has not copied
// yet -- for a copy only this rank's CPU may make (the direction hint), and
// shorter than any interrupt, the one way to overlap it.  Bounded: while a
// peer we wait for is in the library, kRendezvousNs at most (a peer in a
// wait for something else announces nothing).
//
// A peer not in the library yet may be just as close: ranks leave a
// barrier, or the previous collective, a few hundred ns apart.  Traced on
// the 2-core VM, the receiver of a 64 KiB ibcast that started first left
// its start 150 ns before the root's RTS in about 4 starts of 10, then read
// at its wait while the root waited for it; with the root 300 ns late by
// design (rt_bench BENCH_SKEW_NS=300) the overlap was 0 %.  So such a peer
// gets a grace too, learned as adaptive mutexes learn their spin: each
// instance keeps how late the announcement its starts waited for came
// (Instance::late_ns, smoothed, from the sender's clock in the RTS or CTS,
// see learn()), and waits 1.5 times that plus 500 ns -- unless that is
// more than the copy at stake would take at kBytesPerNs (2 us for 64 KiB;
// kRendezvousNs at most): a peer that comes later than that is not waited
// for, and one whose lateness varies costs at most about half a copy this
// rank would make anyway.
void Runtime::rendezvous(cadrt_request_s *r) {
  constexpr int64_t kRendezvousNs = 5000;
  if (!cma || !r->inst->large) return;
  const cad_prog &p = r->inst->prog;
  const int64_t late = r->inst->late_ns.load(std::memory_order_relaxed);
  for (;;) {
    bool inside = false;  // a peer it waits for is in the library
    uint64_t bytes = 0;   // the largest transfer waiting for a local peer
    int64_t first = -1;
    for (uint32_t i = 0; i < p.n_nodes; i++) {
      const cad_node &n = p.nodes[i];
      const uint8_t st = r->xfer[i].state;
      if (r->ex.state[i] != CAD_NS_ISSUED || n.len <= kPayload || (st != kWaitData && st != kWaitCts)) continue;
      const uint32_t ep = r->comm->ep[n.peer];
      if (remote(ep)) continue;
      if (n.kind == CAD_NODE_RECV && lane_fits(r, i, ep)) continue;  // its RTS waits for the wait (hold_rts)
      // A push's announcement comes before its data, which the wait copies
      // out anyway: waiting for it here only delays the caller's work
      // (ibcast 64 KiB, 2 ranks, OSU overlap without test calls 16-21 %
      // against 11-18 %, the root 300 ns late 17-21 % against 4-6 %).
      if (n.kind == CAD_NODE_RECV && comes_pushed(r, i, ep)) continue;
      if (first < 0) first = i;
      bytes = std::max<uint64_t>(bytes, n.len);
      inside |= seg.rank(ep).polling.load(std::memory_order_relaxed) == kRankPolling;
    }
    if (!bytes || r->done || r->draining) return;
    const int64_t t = now_ns();
    if (r->rdv_node < 0) {  // learn from this one's announcement
      r->rdv_node = first;
      r->rdv_since = t;
    }
    const int64_t cap = static_cast<int64_t>(std::min<uint64_t>(kRendezvousNs, bytes / kBytesPerNs));
    const int64_t grace = late + late / 2 + 500;
    if (t - r->rdv_since > (inside ? kRendezvousNs : grace <= cap ? grace : 0)) return;
    if (incoming()) progress();
    else cpu_relax();
  }
}

// The announcement of the transfer r's rendezvous looked for came: how
// late after r's start the peer sent it goes into the instance's estimate
// (a quarter of the new value; 0 if it was sent before).
void Runtime::learn(cadrt_request_s *r, const MsgHeader &h) {
  constexpr int64_t kMax = 100000;
  const int64_t late = std::clamp<int64_t>(static_cast<int64_t>(h.off) - r->rdv_since, 0, kMax);
  const int64_t old = r->inst->late_ns.load(std::memory_order_relaxed);
  r->inst->late_ns.store(old + (late - old) / 4, std::memory_order_relaxed);
  r->rdv_node = -1;
}

bool Runtime::comm_busy(const cadrt_comm_s *comm) const {
  for (const cadrt_request_s *r = active_; r; r = r->next)
    if (r->comm == comm) return true;
  return false;
}

// The first test or wait of a request since its start says whether its
// caller waits at once (a blocking collective, or a wait right after the
// call: nothing to overlap, so its sends are best pushed through the
// lanes, both CPUs copying) or goes to other work first (then the
// receiver's single copy leaves this rank's CPU to that work).  Kept per
// instance for its next start: the sender decides at its post.
void Runtime::first_look(cadrt_request_s *r) {
  constexpr int64_t kAtOnceNs = 1500;
  if (!r->started_ns) return;
  const int64_t gap = now_ns() - r->started_ns;
  r->inst->waits_at_once.store(gap < kAtOnceNs, std::memory_order_relaxed);
  // (And how long, for offer_pays: a quarter of the new value, as late_ns.)
  const int64_t old = r->inst->gap_ns.load(std::memory_order_relaxed);
  r->inst->gap_ns.store(old < 0 ? gap : old + (gap - old) / 4, std::memory_order_relaxed);
  r->started_ns = 0;
}

CADRT_HOT bool Runtime::test(cadrt_request_s *r) {
  if (engine == Engine::Kernel) return kernel_test(r);
  // (A peer's death matters only to what progress leaves unfinished.)
  if (!r->done) {
    progress();
    if (!r->done) check_peers();
  }
  return r->done;
}

// Spins (yielding now and then) for up to kSpinNs of idleness before
// sleeping on the bell: a futex wake-up costs tens of microseconds on a
// busy machine, more than most small collectives take.
CADRT_HOT int Runtime::wait(cadrt_request_s *r) {
  constexpr int64_t kSpinNs = 200000;
  int64_t idle_since = -1;
  if (engine == Engine::Kernel) {
    kernel_wait(r);
    return r->result;
  }
  first_look(r);
  commit(1);
  struct Uncommit {
    Runtime *rt;
    ~Uncommit() { rt->commit(-1); }
  } uncommit{this};
  for (int idle = 0;;) {
    {
      auto g = guard();
      if (!r->done) idle = progress() ? 0 : idle + 1;
      if (r->done) break;
      if (idle > 64) check_peers();
      if (r->done) break;
    }
    if (idle == 0) {
      idle_since = -1;
      continue;
    }
    const int64_t t = now_ns();
    if (idle_since < 0) idle_since = t;
    // (Messages from other nodes ring no bell: with those, keep polling.)
    if (t - idle_since > kSpinNs && nlocal == nep) sleep_until_message(10, false, &r->done);
    else if (idle % 16 == 0) sched_yield();
  }
  return r->result;
}

}  // namespace cadrt
