// runtime.h - the runtime's state: communicators, instances (verified
// per-rank programs, cached), requests, and the progress engine that runs
// requests' DAGs over the shared-memory transport.
//
// Invariants:
// - A request runs only a program the core verifier accepted, with buffers
//   bound to exactly the sizes the program declares.
// - progress() never allocates from the heap and never blocks: the signal
//   engine runs it in a signal handler.  What it needs (message entries,
//   request memory) is allocated by the calls that start requests.
// - Only one thread runs progress() at a time: the caller's, under the
//   runtime lock (poll, thread engines), or the main thread, in the
//   library or in the signal handler while it is outside (signal engine).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "../../kmod/core/cad_core.h"
#include "cadrt/cadrt.h"
#include "cadrt/cadrt_net.h"
#include "library.h"
#include "proof.h"
#include "shm.h"
#include "verdicts.h"

namespace cadrt {

// Room for a failure's message (internal.h's Why), reserved in each
// request's error string so that failing in the signal handler does not
// allocate.
constexpr size_t kWhyBytes = 512;
// A single copy's speed, in bytes per ns, where none was measured: the
// bound of rendezvous()'s grace, and copy_ns() without the init's probe.
constexpr uint64_t kBytesPerNs = 32;

// A message held by this process: one that arrived before its operation
// was posted, or one waiting for room in a full ring.
struct Entry {
  Entry *next;
  uint32_t ep;  // the peer endpoint it came from or goes to
  ::cadrt_request_s *owner;  // output: the request that waits for it to leave, or null
  void *net;                 // sent over the network transport: its handle
  Slot slot;
};

// Fixed-size entries on a free list; grow() only where allocating is safe.
class Pool {
 public:
  Entry *get();  // nullptr when empty
  void put(Entry *e);
  void grow(size_t n);
  size_t free_count() const { return free_n_; }
  ~Pool();

 private:
  Entry *free_ = nullptr;
  size_t free_n_ = 0;
  std::vector<Entry *> chunks_;
};

// A FIFO of entries.
struct Queue {
  Entry *head = nullptr, *tail = nullptr;
  void push(Entry *e);
  Entry *pop();
  bool empty() const { return head == nullptr; }
};

struct Comm;

// A verified program of one rank for one instance, shared by requests.
struct Instance {
  const cad::Algorithm *alg = nullptr;  // null for a hand-built CAD
  std::shared_ptr<const cad::Topology> topo;  // kept alive: part of the cache key
  std::string desc;                     // "bcast_chain_pipeline seg=8192 (bcast P=4 bytes=80 root=0)"
  uint64_t fp = 0;                      // fingerprint of the call
  std::vector<uint64_t> image;
  cad_prog prog{};
  std::vector<uint32_t> occ;            // per node: earlier nodes of (kind, peer, tag)
  struct Key {
    uint8_t kind;
    uint32_t peer, tag, occ, node;
    bool operator<(const Key &o) const;
  };
  std::vector<Key> keys;                // SEND and RECV nodes, sorted
  bool large = false;                   // a SEND or RECV too long for a slot
  std::vector<uint8_t> sends_to;        // per peer rank: a SEND to it (an exchange if it sends too)
  // A receive from peer is part of an exchange: this rank sends to it too.
  bool sends_to_peer(uint32_t peer) const { return peer < sends_to.size() && sends_to[peer]; }
  std::vector<uint8_t> recvs_from;      // per peer rank: a RECV from it
  uint64_t size = 0;                    // its largest buffer, bytes
  // Learned, not part of what the instance is (see Runtime::rendezvous()):
  // how late, in ns, the announcement a start of it waited for came
  // after that start, smoothed.
  mutable std::atomic<int64_t> late_ns{0};
  // Whether the last wait for a start of it came at once (within
  // kAtOnceNs of the start's return): its sends are then pushed through
  // the lanes under CADRT_PUSH=auto (progress.cpp, push_with_cma).
  mutable std::atomic<bool> waits_at_once{true};
  // How long, in ns, its caller went away between a start of it and the
  // first test or wait (Runtime::first_look), smoothed; -1 until known.
  // With late_ns and the copy's time it says whether offering a receive
  // pays (Runtime::offer_pays).
  mutable std::atomic<int64_t> gap_ns{-1};
  // Its starts, counted under CADRT_STATS.
  mutable std::atomic<uint64_t> starts{0};
  // The node of kind with (peer, tag, occ), or -1.
  int64_t find(uint8_t kind, uint32_t peer, uint32_t tag, uint32_t occ) const;
  void index();                         // fills occ and keys from prog
};

// Per transfer node of a running request.
enum XferState : uint8_t {
  kIdle = 0,
  kWaitFin,     // sent RTS (or CTS): the peer copies, then says FIN
  kWaitCts,     // sender-writes: the receiver's address is to come
  kWaitData,    // a receive waiting for EAGER, RTS or FRAGs
  kFragOut,     // sending FRAGs as the ring has room
  kBulkOut,     // granted: copying into the lane to the receiver as it has room
  kBulkIn,      // granted the lane: copying out what the sender has put in
  kSplitIn,     // a split single copy: read our chunks, waiting for the sender's (done: how many)
  kOffered,     // a receive offered to the sender (offer): waiting for its RTS or, written, its FIN
  // With a rank on another node (the network transport):
  kNetRecv,     // a large receive to post, then say CTS with its tag
  kNetSend,     // the CTS came: send to its tag
  kNetWait,     // posted: the transport's handle in net
};

struct Xfer {
  uint8_t state = kIdle;
  uint64_t done = 0;  // bytes
  uint64_t token = 0; // kNetSend, kNetWait: the tag's token; kWaitData: when an RTS was first held;
                      // kBulkOut, kBulkIn: the lane's first chunk of the transfer;
                      // kSplitIn: generation << 8 | the Split's index;
                      // an offer held (offer != 0): generation << 8 | the Offer's index
  void *net = nullptr;
  uint8_t offer = 0;  // a receive: 1 while it holds an Offer of the lane from its sender
};

}  // namespace cadrt

struct cadrt_comm_s {
  uint64_t ctx = 0;
  int rank = 0, size = 1;
  std::vector<uint32_t> ep;         // endpoint of each rank
  std::vector<int32_t> rank_of_ep;  // comm rank of each endpoint, or -1
  // ep's rank here, or -1 (not a member, or not an endpoint of the job).
  int32_t rank_of(uint32_t ep) const { return ep < rank_of_ep.size() ? rank_of_ep[ep] : -1; }
  uint64_t next_seq = 0;
  uint64_t splits = 0;
  std::shared_ptr<const cad::Topology> topo;
  std::vector<std::vector<int64_t>> places;  // of each rank, for splits
  // The entries of the runtime's instance cache this communicator made
  // (keyed by its topology: nobody finds them once it is freed), so that
  // cadrt_comm_free erases them without a scan of the whole cache (so
  // freeing N communicators does not take time in N squared).
  // (Valid while cached_epoch is the runtime's cache_epoch_: cadrt_finalize
  // clears the cache, and a communicator may be freed after it.)
  std::vector<std::map<std::string, std::shared_ptr<const cadrt::Instance>>::iterator> cached;
  uint64_t cached_epoch = 0;
  bool world = false;
  // Persistent requests made on it and not freed yet; cadrt_comm_free
  // while there are some only marks it freed, and the last one's
  // cadrt_req_free deletes it (an MPI communicator freed under its
  // persistent collectives, which MPI allows).
  int persistent_requests = 0;
  bool freed = false;
};

// The arguments of the collective call a request was last bound for (by
// api.cpp's collective()): the same call again, on finding that request
// the most recent spare, starts it as it is (Runtime::reuse).  coll 0xff:
// none (a hand-built CAD's request, or one bound since for another call).
struct cadrt_bound {
  uint8_t coll = 0xff;
  const void *sendbuf = nullptr;
  void *recvbuf = nullptr;
  size_t count = 0;
  int dt = 0, op = 0, root = 0;
  const cadrt_comm_s *comm = nullptr;
  uint64_t ctx = 0;  // the communicator's, against a new one at the same address
  bool operator==(const cadrt_bound &o) const {
    return coll == o.coll && sendbuf == o.sendbuf && recvbuf == o.recvbuf && count == o.count && dt == o.dt &&
           op == o.op && root == o.root && comm == o.comm && ctx == o.ctx;
  }
};

struct cadrt_request_s {
  cadrt_comm_s *comm = nullptr;
  cadrt_bound bound;
  std::shared_ptr<const cadrt::Instance> inst;
  bool persistent = false;
  bool active = false;
  bool done = false;
  // Set (release) as the last write of Runtime::finish(): from then on no
  // pass touches the request, so cadrt_test concludes it without entering
  // the library.  (done is set first, before the rest of finish's work.)
  bool finished = false;
  int result = 0;
  std::string error;
  uint64_t seq = 0;
  cad_exec ex{};
  std::vector<uint32_t> exec_mem;
  // ex and exec_mem are initialised for inst (cad_exec_init): a recycled
  // request keeps both for the next collective of the same instance.
  bool exec_ready = false;
  size_t held = 0;                        // bytes it holds while a spare (Runtime::recycle)
  std::vector<unsigned char *> bufs;      // base address of each program buffer
  std::vector<std::vector<unsigned char>> scratch;
  // An in-place call whose algorithm does not declare `inplace` (api.cpp,
  // collective()): the program's send buffer, which each start fills from
  // copy_in_from (the in-place input in the caller's recvbuf) before the
  // program runs; for scatter's root, the receive buffer of the block it
  // drops (copy_in_from NULL: nothing to fill).
  std::vector<unsigned char> copy_in;
  const unsigned char *copy_in_from = nullptr;
  std::vector<cadrt::Xfer> xfer;          // per node
  std::vector<uint32_t> outgoing;         // nodes in kFragOut, kBulkOut, kBulkIn, kSplitIn
  uint32_t offers = 0;                    // receives holding an Offer (Xfer::offer)
  std::vector<uint32_t> netwait;          // nodes in kNetRecv, kNetSend, kNetWait (capacity: every node)
  bool redrain = false;                   // unexpected messages left for later
  // The transfer node whose announcement the start's rendezvous waited
  // for or would have (-1: none), and when that began (now_ns).
  int64_t rdv_node = -1;
  int64_t rdv_since = 0;
  int64_t started_ns = 0;  // when its start returned (now_ns)
  // Failed, but a peer may still read or write its buffers (an RTS or CTS
  // of it is unanswered): it completes once each is answered (FIN or
  // RELEASE) or its peer has exited, so that the application cannot free
  // or reuse memory another process is copying.
  bool draining = false;
  // The peers (endpoints) that sent an ABORT for this run: one has failed
  // it and will not touch this rank's buffers for it again, so that
  // answers whatever it owed (Runtime::exposed).  (Every rank that fails a
  // collective tells its peers so, whatever failed it.)
  std::vector<uint32_t> aborted;
  // Failed, and owes the ranks from tell_next on (of its communicator) an
  // ABORT that found no room: fail() in the signal handler with the pool
  // at its reserve.  It drains (Runtime::exposed) until the pass that has
  // room sends them.  INT32_MAX: nothing owed.
  int32_t tell_next = INT32_MAX;
  uint32_t unsent = 0;                    // its messages still in our pending queue
  cadrt_request_s *prev = nullptr, *next = nullptr;  // the active list
  bool from_cad = false;                  // issued from a hand-built CAD
  // Kernel engine: the handle of the loaded program (-1: none; a
  // persistent request keeps it from its first start to req_free) and the
  // start count the status page shows for the current start.
  int32_t kh = -1;
  uint32_t kgen = 0;
  uint64_t kused = 0;  // a persistent request's last start (Runtime::kclock_)
  // The module copies some of its buffers through kernel memory (it could
  // not pin them): it publishes an end only after a TEST or read() of ours.
  bool kbounce = false;
};

namespace cadrt {

enum class Engine { Poll, Thread, Signal, Kernel };

class Runtime {
 public:
  // A program that exits without cadrt_finalize: the helper thread is
  // stopped (a joinable std::thread would abort the exit).
  ~Runtime();
  // ---- set up (in init) ----
  int init();
  // A job joined through an allgather (cadrt_init_job) rather than cadrun.
  struct Bootstrap {
    int rank = 0, size = 1;
    cadrt_allgather_fn allgather = nullptr;
    void *ctx = nullptr;
    cadrt_net net{};
    bool has_net = false;
  };
  int init_job(const Bootstrap &b);
  int finalize();
  bool initialised() const { return initialised_; }
  // A process forked from a rank while cadrt was initialised (see
  // forked_child in runtime.cpp): every call fails in it.
  bool forked() const { return forked_; }
  __attribute__((cold)) int forked_error(const char *fn) const;
  // fn's error when cadrt is not initialised (in a forked child, that).
  __attribute__((cold)) int not_initialised(const char *fn) const;

  cad::Library lib;
  // User-defined operators looked up so far: cadrt_op 256 + index.
  std::vector<std::shared_ptr<const cad::UserOp>> user_ops;
  std::unique_ptr<cadrt_comm_s> world;
  Engine engine = Engine::Poll;
  bool verbose = false;
  std::string library_path;  // the .cadlib init loaded (said under CADRT_VERBOSE)
  // CADRT_EXPLAIN=1: rank 0 of a communicator prints each selection it
  // makes (a call with new arguments), with the rules looked at and why.
  bool explain = false;
  // CADRT_STATS=json: at finalize, one JSON line of this rank's decisions,
  // counters and algorithms run (stats.cpp).
  bool stats = false;
  // The gate between selection and execution (CADRT_PROOF).
  ProofGate proofs;

  // ---- requests ----
  // Selects the algorithm, instantiates (cached) and verifies; false with
  // *err and the error message set.
  const std::shared_ptr<const Instance> *instance(cadrt_comm_s *comm, cad::Collective c, const cad::InstanceSpec &spec,
                                           int *err);
  // Requests: recycled (up to a few), so that a small collective in a loop
  // does not allocate.
  cadrt_request_s *new_request(const Instance *inst);
  void recycle(cadrt_request_s *r);
  // The most recent spare if it was bound for exactly this call (its
  // instance, executor and buffers as they are: no selection, no binding),
  // out of the pool; else nullptr.  A collective called again and again
  // with the same arguments (a blocking MPI_Allreduce of one value in a
  // loop) takes this way.  Under the guard.
  cadrt_request_s *reuse(const cadrt_bound &call);
  // A communicator is going away: forget the instances cached for it.
  void forget_comm(const cadrt_comm_s *comm);
  // Binds the caller's buffers (and fresh scratch) to r's program.
  int bind(cadrt_request_s *r, const void *sendbuf, void *recvbuf);
  // Arms a bound request (a new collective number); it joins the active
  // list and issues what is ready.
  int start(cadrt_request_s *r);
  // Runs progress until r is done (or just once, for test).
  int wait(cadrt_request_s *r);
  void first_look(cadrt_request_s *r);  // the first test or wait since its start (requests.cpp)
  bool test(cadrt_request_s *r);
  // The kernel engine: r, started, is still running (one look at the
  // status page, no runtime state touched; no system call unless the
  // module copies r's buffers through kernel memory: then a TEST first,
  // which copies the data out of an ended run and publishes its end).
  bool kernel_running(const cadrt_request_s *r) const {
    if (!kstatus_ || r->kh < 0) return false;
    if (r->kbounce) kernel_ioctl_test(r->kh);
    const volatile cad_status &st = kstatus_[r->kh];
    return st.result == -EINPROGRESS || st.gen != r->kgen;
  }
  // The user-space engines: cadrt_test of an unfinished request may
  // answer "not yet" without entering the library -- the last progress
  // pass moved nothing and left nothing to retry (settled_), no library
  // call came since (enter() clears it), no message waits in a ring from
  // a peer, none waits for room, no signal was deferred, no rank is on
  // another node.  Every 16th such test still makes the whole pass (a
  // peer's death, a drained request: what no ring shows).  Under the
  // thread engine the last pass may be the progress thread's (under the
  // lock, which this does not take): settled_ is then read with acquire
  // ordering against its release, and the test leaves the rank "outside"
  // (polling), so producers keep waking that thread for what comes.
  bool quiet() {
    if (!settled_.load(std::memory_order_acquire) || has_net_) return false;
    // (A plain load and store: under the thread engine several threads
    // may test at once, and a lost count only moves the 16th test.)
    const unsigned n = quiet_tests_.load(std::memory_order_relaxed) + 1;
    quiet_tests_.store(n, std::memory_order_relaxed);
    if ((n & 15) == 0) return false;
    if (deferred.load(std::memory_order_relaxed) || waiting_output.load(std::memory_order_relaxed)) return false;
    return !incoming();
  }
  // Some active request runs on comm.
  bool comm_busy(const cadrt_comm_s *comm) const;

  // One pass: incoming messages, ready nodes, pending output.  True if
  // anything moved.
  bool progress();
  void progress_in_handler();
  // Arms a bound request and issues what is ready.
  void activate(cadrt_request_s *r);
  // Sleeps until a message may have come, at most timeout_ms.
  // (The main thread stops `polling` while it sleeps; the progress thread
  // leaves that flag, which is the main thread's, alone.)
  void sleep_until_message(int timeout_ms, bool progress_thread = false, const bool *done = nullptr);
  // Fails every active request if cadrun marked a peer dead, or this rank
  // found a peer's ring or lane corrupt.
  bool check_peers();
  // check_peers() at once when a corruption was found since it last ran
  // (outside the signal handler).
  bool check_corrupt();

  // The thread engine's lock over all runtime state; guard() takes it
  // under that engine and is a no-op under the others.
  // Under it, the main thread's passes while it polls take no lock: see
  // own().
  std::mutex lock;
  std::unique_lock<std::mutex> guard();
  void own();
  bool owned_ = false;                 // the main thread's (guard() is a no-op)
  std::atomic<int> pass_busy_{0};      // a pass of the progress thread is under way
  const char *engine_name() const;
  void say_counters() const;  // CADRT_VERBOSE's counters, at finalize
  void write_stats() const;   // CADRT_STATS's line, at finalize
  nlohmann::json probe_stats() const;  // its "probes"
  bool kickable() const;
  bool needs_cpu(const cadrt_request_s *r) const;
  bool idle() const;
  int make_topology(cadrt_comm_s *comm, const std::vector<std::vector<int64_t>> &places);
  // A message waits in one of our rings.
  bool incoming() const;

  // Endpoint of this process and the segment.
  uint32_t me = 0;
  uint32_t nep = 1;
  // Ranks on this node (they share the segment); the others are reached
  // through the network transport (remote_[ep]).
  uint32_t nlocal = 1;
  bool remote(uint32_t ep) const { return !remote_.empty() && remote_[ep]; }
  Segment seg;
  bool cma = false;
  // Large local messages may go through the bulk lanes (shm.h): the
  // segment has them, CMA works (the other way when a grant is not
  // made), and CADRT_BULK is 1, or auto (the default) and an exchange
  // through them measured faster than a process_vm_readv (lanes_upto()).
  // From bulk_min bytes (CADRT_BULK_MIN) to below bulk_max: the measured
  // crossover, or CADRT_BULK_MAX if smaller.
  bool bulk = false;
  uint64_t bulk_min = 16384;
  uint64_t bulk_max = UINT64_MAX;
  // Where CMA is not permitted: a large local message goes through the
  // sender's lane to its receiver (kPush) when that lane is empty, else in
  // fragments through the ring.  The segment has lanes and CADRT_BULK is
  // not 0 (nothing to measure: both ways are two copies).
  bool push_lanes = false;
  // CADRT_PUSH with CMA (0, 1, auto): which sends are pushed through the
  // lanes (push_with_cma), up to below push_max (CADRT_PUSH_MAX) bytes.
  enum class Push : uint8_t { Never, Always, AtOnce };
  Push push_mode = Push::Never;
  uint64_t push_max = UINT64_MAX;
  // Under CADRT_PUSH=auto with CADRT_BULK=auto, the size classes in
  // which pushes measured faster for every pair of the node (bit i: from
  // kPushProbe[i] below the next; push_upto()); below the first, all.
  uint32_t push_classes = (1u << kPushClasses) - 1;
  // One-way sends below this are pushed for a caller that computes too
  // (push_with_cma).
  static constexpr uint64_t kComputingPushMax = kPushProbe[1];
  // The class of a message of len bytes, -1 below the first.
  static int push_class(uint64_t len) {
    int c = -1;
    while (c + 1 < kPushClasses && len >= kPushProbe[c + 1]) c++;
    return c;
  }
  // A one-way message of len bytes is in a size class the node pushes
  // (all under CADRT_PUSH=1; under auto the classes measured faster).
  bool class_pushed(uint64_t len) const {
    const int c = push_class(len);
    return push_mode != Push::AtOnce || c < 0 || (push_classes >> c & 1);
  }
  // push_with_cma's rule of sizes, which comes_pushed applies from the
  // receiving side: whether a sender with CMA pushes len bytes, given that
  // the message is part of an exchange (the two ranks send each other) and
  // that its caller computes between its start and its wait.
  bool pushes(uint64_t len, bool exchange, bool computes) const;
  // A large one-way receive read by a single copy is split with its
  // sender when the sender waits (split.cpp, split_in): the segment
  // has lanes (their headers hold the Splits), CMA works, CADRT_SPLIT is
  // not 0.
  bool split = false;
  // A one-way single copy's receive that posts first is offered to its
  // sender, which then writes it (offer.cpp, offer()): the segment has
  // lanes (their headers hold the Offers), CMA works, CADRT_OFFER is not 0;
  // where offer_pays() says so, or always under CADRT_OFFER=1.
  bool offers = false, offers_always = false;
  // What a process_vm_readv of 16, 64, 256 and 1024 KiB took at init
  // (lanes_upto; 0: not measured), for copy_ns().
  int64_t read_probe_ns[kLaneProbes] = {};
  // This rank's measurements at init, as taken (CADRT_STATS): lanes_upto()'s
  // exchanges with `with` (nep: two private memcpys) and its verdict
  // (`forced` by CADRT_FAULT_LANES), and as a pair's receiver push_upto()'s
  // trials with `from` and the classes pushes won.
  struct {
    bool taken;
    uint32_t with;
    uint64_t limit;
    bool forced;
    int64_t lane_ns[kLaneProbes], read_ns[kLaneProbes];
  } lane_probe_ = {};
  struct {
    bool taken;
    uint32_t from, wins;
    int64_t push_ns[kPushClasses], read_ns[kPushClasses];
  } push_probe_ = {};
  // What agree_lanes() decided for the node: lanes on, below `below`
  // bytes (UINT64_MAX: every size).
  struct {
    bool taken, on;
    uint64_t below;
  } lanes_agreed_ = {};
  // About how long a single copy of len bytes takes here.
  int64_t copy_ns(uint64_t len) const;
  // Whether a receive of len bytes of r, whose sender is expected late,
  // is better offered (see offer_pays in offer.cpp).
  bool offer_pays(const cadrt_request_s *r, uint64_t len) const;
  // Waiting in cadrt_wait, or between cadrt_poll_begin and end: the caller
  // keeps progressing until its request completes (RankInfo::committed).
  void commit(int by);

  // Inside the library (Entered), or polling it (cadrt_poll_begin).
  void enter();
  void leave();
  // Signal engine: whether peers should signal us (outside the library
  // with collectives active).
  void arm();  // (and polling: kRankIdle or kRankOutside)
  std::atomic<int> in_library{0};
  int bump_in_library(int by);  // adds by; the count before
  std::atomic<int> deferred{0};
  std::atomic<int> active_count{0};
  // Messages waiting for room in a peer's ring, and fragmenting sends:
  // more to do when a consumer frees slots (it rings our bell).
  std::atomic<int> waiting_output{0};
  // See quiet(): written by progress() (in the signal handler too, or in
  // the progress thread) and enter(); read by cadrt_test.
  std::atomic<bool> settled_{false};
  std::atomic<unsigned> quiet_tests_{0};
  // Counts for CADRT_VERBOSE's report at finalize.
  std::atomic<uint64_t> n_kicks{0}, n_handler{0}, n_deferred{0}, n_helper_signals{0}, n_wakes{0},
      n_waiter_wakes{0};
  // Failed requests whose ABORTs found no room then and went in later
  // passes (tell_next).
  std::atomic<uint64_t> n_owed_aborts{0};
  // Requests bound to buffers (calls and persistent inits), and those of
  // them that set up their executor afresh (no spare had run the instance).
  uint64_t n_binds = 0, n_fresh_binds = 0;
  uint64_t n_reused = 0;  // calls that took reuse()'s way instead
  // Large local receives: through a lane, by a single copy (CMA).
  std::atomic<uint64_t> n_lane{0}, n_cma{0}, n_frag{0};
  // Single copies split with the sender (receiver's count), the chunks
  // written for receivers that split, and the splits this sender finished
  // itself, its chunks written last (sender's counts).
  std::atomic<uint64_t> n_split{0}, n_split_chunks{0}, n_split_last{0};
  std::atomic<uint64_t> n_offered{0}, n_offers_written{0}, n_wrote_offers{0};

 private:
  bool initialised_ = false;
  bool forked_ = false;
  static void forked_child();
  // The network transport (cadrt_net.h), for ranks on other nodes.
  bool has_net_ = false;
  cadrt_net net_{};
  std::vector<uint8_t> remote_;
  std::vector<std::array<int32_t, 4>> places_;  // of every rank: node, package, NUMA domain, L3
  std::vector<Slot> ctl_in_;   // per remote rank: its next control message
  std::vector<void *> ctl_h_;  // and the receive's handle
  Queue netq_;                 // control messages to send
  Queue netout_;               // sent, not completed yet
  uint64_t next_token_ = 0;
  pthread_t net_thread_{};
  // The transport may be called here (the initialising thread, not in the
  // signal handler).
  bool net_here() const;
  bool net_progress();
  bool net_request(cadrt_request_s *r);
  int net_tag(uint64_t token) const { return 1 + static_cast<int>(token % static_cast<uint64_t>(net_.tag_ub - 1)); }
  int net_start();
  void net_stop();
  Pool pool_;
  std::vector<Queue> unexpected_;  // per endpoint
  std::vector<Queue> pending_;     // per endpoint: output waiting for room
  // Per endpoint: the consumer's head of our ring to it as last read.  It
  // only grows, so a push checks room against it and reads the real head
  // (a cache line the consumer writes on every message) only when the
  // cached one says full.
  std::vector<uint64_t> head_seen_;
  // Peers whose ring to this rank was found corrupt (a slot stamped for no
  // message it could hold, shm.h), and how: treated as dead (check_peers).
  struct Corrupt {
    bool found;
    uint16_t stamp;  // the slot's
    uint64_t pos;    // the message that was due
  };
  std::vector<Corrupt> corrupt_;
  // Per endpoint: the lane from that peer to this rank (shm.h) is free,
  // granted to a receive, or no longer used: a transfer through it failed
  // half-way, and what the sender left in it is not to be read.
  enum LaneUse : uint8_t { kLaneFree = 0, kLaneGranted, kLaneRetired };
  std::vector<uint8_t> lane_in_;
  // And the lane from this rank to that peer, under push_lanes: free,
  // taken by a send that pushes into it (kLaneGranted), or no longer used:
  // a push stopped half-way, and the receiver never reads the rest.
  std::vector<uint8_t> lane_out_;
  std::vector<uint64_t> corrupt_lane_;  // the peer wrote a corrupt lane (check_peers): how far ahead
  // A ring or lane was found corrupt since check_corrupt() last ran: it
  // fails the requests with that error at once, before anything else the
  // broken peer sends (an ABORT, say) can.
  bool corrupt_new_ = false;
  std::vector<uint8_t> split_used_;     // per endpoint: a bit per Split of its lane to us in use
  std::vector<uint8_t> offer_used_;     // per endpoint: a bit per Offer of its lane to us held
  std::atomic<int> committed_{0};
  cadrt_request_s *active_ = nullptr;
  std::vector<unsigned char> vm_scratch_;
  std::map<std::string, std::shared_ptr<const Instance>> cache_;
  // Under CADRT_STATS, every instance made since init (the cache forgets
  // a freed communicator's): their starts are counted per algorithm.
  std::vector<std::shared_ptr<const Instance>> stats_insts_;
  uint64_t cache_epoch_ = 1;  // one more at each clear of cache_ (cadrt_comm_s::cached)
  // The last answers of instance() by the call's own arguments: a repeated
  // call skips selection and the key string.  (CADRT_ALGORITHM_*, with its
  // parameters, is thus read at the first call with given arguments on a
  // communicator; a new communicator reads it again.  cache_'s key holds
  // the algorithm and spec.describe(), parameters included, so instances
  // of two settings are never shared.)
  struct FastKey {
    const cadrt_comm_s *comm;
    int64_t n;
    int32_t root;
    uint8_t coll, dtype, inplace;
    uint16_t op;  // the call's cadrt_op: user ops are 256 and up
    bool operator==(const FastKey &o) const {
      return comm == o.comm && n == o.n && root == o.root && coll == o.coll && dtype == o.dtype && op == o.op &&
             inplace == o.inplace;
    }
  };
  struct FastHash {
    size_t operator()(const FastKey &k) const {
      uint64_t h = reinterpret_cast<uintptr_t>(k.comm) * 0x9e3779b97f4a7c15ull;
      h ^= static_cast<uint64_t>(k.n) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
      h ^= (static_cast<uint64_t>(static_cast<uint32_t>(k.root)) << 32 | uint64_t{k.coll} << 24 |
            uint64_t{k.dtype} << 16 | uint64_t{k.inplace} << 8 | uint64_t{k.op} << 40) + (h << 6) + (h >> 2);
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<FastKey, std::shared_ptr<const Instance>, FastHash> fast_;
  // instance() past fast_: selection, instantiation, verification, once
  // per key (out of line: 18 KB of code a call in a loop never runs).
  __attribute__((cold, noinline)) const std::shared_ptr<const Instance> *make_instance(
      cadrt_comm_s *comm, cad::Collective c, const cad::InstanceSpec &given, const FastKey &fk, int *err);
  // Finished requests kept, each with its instance's executor memory and
  // scratch (new_request), least recently recycled first; at most kSpares
  // of them, holding at most kSpareBytes.  spare_inst_[i] is spare_[i]'s
  // instance (a scan of one array of pointers per call).
  static constexpr size_t kSpares = 256;
  static constexpr size_t kSpareBytes = size_t{64} << 20;
  std::vector<cadrt_request_s *> spare_;
  std::vector<const Instance *> spare_inst_;
  size_t spare_bytes_ = 0;
  cadrt_request_s *take_spare(size_t k);  // spare_[k], out of the pool
  void drop_spare(size_t k);               // deletes spare_[k]
  std::thread helper_;
  std::atomic<bool> stop_{false};
  // Signal engine: the thread its signals go to, the one that last made an
  // outermost call (cadrt.h lets calls come from any thread, one at a
  // time); see retarget().
  std::atomic<pthread_t> main_thread_{};
  std::atomic<int32_t> signal_tid_{0};
  std::atomic<int> handler_running_{0};  // handlers past handler_enter, on any thread
  // Signal engine: the application has put its own handler on the
  // engine's signal since cadrt_init (the helper looks, see
  // signal_helper_main): nothing sends the signal while so.
  std::atomic<bool> signal_lost_{false};
  void check_handler();
  void retarget(int32_t tid);
  int init_joined();  // init() after the segment is joined
  void reset_transfers();
  int copy_settings(int err, bool lanes_here);
  std::vector<std::vector<int64_t>> make_world();
  void leave_job();  // (finalize, a failed init)

 public:
  // Whether the handler may progress on the thread it interrupted (see
  // on_signal).
  bool handler_enter(int32_t tid);
  void handler_leave() { handler_running_.fetch_sub(1, std::memory_order_release); }

 private:

  // transport (progress.cpp; the large transfers' own paths: transfer.cpp)
  bool room();
  void push(uint32_t ep, const MsgHeader &h, const void *payload, uint32_t n, cadrt_request_s *owner);
  // r's work is done and all its messages are in peers' rings.
  bool complete_now(const cadrt_request_s *r) const;
  bool flush_pending();
  void freed(std::atomic<uint32_t> &want_space, uint32_t ep);
  void ring(uint32_t ep, bool urgent);
  // The smallest collective (its largest buffer, bytes) whose transfers'
  // steps interrupt a computing peer: signal it (signal engine) or wake its
  // progress thread (CADRT_KICK_MIN).
  uint64_t kick_min = 1 << 20;
  // Some output waits for room in the ring of a peer that is still there.
  bool output_deliverable() const;
  bool poll_incoming();
  void dispatch(uint32_t ep, const Slot &s);
  int64_t target(const MsgHeader &h, uint32_t ep, cadrt_request_s **out);
  // Messages from ep that came for r before its nodes were posted; with
  // node >= 0, only those for that node (a post: the others stay, and the
  // queue is not searched node by node once per post, see post()).
  void drain_unexpected(cadrt_request_s *r, uint32_t ep, int64_t node = -1);
  void handle(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h, const unsigned char *payload);
  // handle()'s steps: a message that fails its checks (progress.cpp), a
  // message for an offered receive (offer.cpp), an RTS, a CTS and a GRANT
  // (transfer.cpp).
  void refuse(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  bool offered_message(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  void rts_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  void cts_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  void grant_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  unsigned char *at(cadrt_request_s *r, uint32_t buf, uint64_t off);
  MsgHeader header(cadrt_request_s *r, uint32_t node, uint32_t kind);
  void post(cadrt_request_s *r, uint32_t node);
  bool disagree(cadrt_request_s *r, uint32_t ep, const MsgHeader &h);
  void complete(cadrt_request_s *r, uint32_t node);
  void fail(cadrt_request_s *r, int err, std::string_view why, bool tell_peers);
  void finish(cadrt_request_s *r);
  bool issue(cadrt_request_s *r);
  // At start: waits (progressing) while a transfer r copies for waits for
  // the announcement of a peer that is inside the library, a few us at most,
  // or of one not in it yet, for the grace the instance learned (learn()).
  void rendezvous(cadrt_request_s *r);
  void learn(cadrt_request_s *r, const MsgHeader &h);
  bool frag_out(cadrt_request_s *r, uint32_t node);
  // A receive whose RTS came: whether it takes the lane from the sender
  // (and says kGrant) rather than reading with CMA.
  bool grant(cadrt_request_s *r, uint32_t node, uint32_t ep);
  bool push_fits(const cadrt_request_s *r, uint32_t node, uint32_t ep) const;
  bool push_with_cma(const cadrt_request_s *r, uint32_t node) const;
  bool comes_pushed(const cadrt_request_s *r, uint32_t node, uint32_t ep) const;
  void push_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  void lane_in(cadrt_request_s *r, uint32_t node, uint32_t ep, uint64_t first);
  void lane_out(cadrt_request_s *r, uint32_t node, uint64_t first);
  // Whether receive node of r (from ep) could go through the lane now.
  bool lane_fits(const cadrt_request_s *r, uint32_t node, uint32_t ep) const;
  // Whether the RTS for receive node waits (in the unexpected queue) for a
  // grant: see transfer.cpp.
  bool hold_rts(cadrt_request_s *r, uint32_t node, uint32_t ep);
  const cadrt_request_s *starting_ = nullptr;  // the request start() is starting
  bool bulk_out(cadrt_request_s *r, uint32_t node);
  bool bulk_in(cadrt_request_s *r, uint32_t node);
  // The step of an outgoing node (FRAGs, or either side of a lane).
  bool move_out(cadrt_request_s *r, uint32_t node);
  // A node of outgoing is done: off the list, completed.
  void out_done(cadrt_request_s *r, uint32_t node);
  // The split single copy (split.cpp): the receiver's side, at an RTS
  // (false: not split); its wait for the sender's chunks; the sender's
  // side, at a SPLIT.
  bool split_in(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  bool split_wait(cadrt_request_s *r, uint32_t node);
  void split_out(cadrt_request_s *r, uint32_t node, uint32_t ep, const MsgHeader &h);
  Split &split_of(const cadrt_request_s *r, uint32_t node) const;
  void split_free(const cadrt_request_s *r, uint32_t node);
  bool offerable(const cadrt_request_s *r, uint32_t node, uint32_t ep) const;
  void offer(cadrt_request_s *r, uint32_t node, uint32_t ep);
  bool take_offer(cadrt_request_s *r, uint32_t node, uint32_t ep);
  Offer &offer_of(const cadrt_request_s *r, uint32_t node) const;
  bool withdraw(cadrt_request_s *r, uint32_t node);
  void offer_free(cadrt_request_s *r, uint32_t node);
  void withdraw_offers(cadrt_request_s *r);
  void offer_open(cadrt_request_s *r);
  // A peer wrote something no working peer writes into its lane.
  void lane_corrupt(uint32_t ep, uint64_t what);
  cadrt_request_s *find_active(uint64_t ctx, uint64_t seq);
  bool recently_failed(uint64_t ctx, uint64_t seq) const;
  // Tells ep that the RTS or CTS h will not be answered by a copy.
  void release(uint32_t ep, const MsgHeader &h);
  // Releases and drops the unexpected messages of failed collectives;
  // false if it ran out of room (release_later_ is then set).
  bool release_failed();
  bool release_later_ = false;
  // A failed request's buffers may still be read or written by a peer, or
  // it still owes a peer its ABORT: it may not complete yet.
  bool exposed(const cadrt_request_s *r) const;
  // A FIN or RELEASE for a draining request.
  void answered(cadrt_request_s *r, uint32_t ep, const MsgHeader &h);
  void aborted(cadrt_request_s *r, uint32_t ep);
  void note_abort(cadrt_request_s *r, uint32_t ep);
  // Sends the ABORTs r owes while there is room; true if any went.
  bool tell(cadrt_request_s *r);
  // r has just failed on message h: h is answered or released.
  void settle(cadrt_request_s *r, uint32_t ep, const MsgHeader &h);
  // r fails on message h from ep: its peers are told, h is settled.
  void give_up(cadrt_request_s *r, uint32_t ep, const MsgHeader &h, int err, std::string_view why);
  bool cma_copy(bool read, uint32_t ep, void *local, uint64_t remote, uint64_t len, int *err);
  std::array<std::pair<uint64_t, uint64_t>, 16> failed_{};  // (ctx, seq) that failed lately
  size_t failed_next_ = 0;

  // the kernel engine (kernel.cpp): /dev/cad runs the programs
  int kernel_open();
  void kernel_close();
  int kernel_start(cadrt_request_s *r);
  bool kernel_test(cadrt_request_s *r);
  void kernel_wait(cadrt_request_s *r);
  void kernel_free(cadrt_request_s *r);
  void kernel_finish(cadrt_request_s *r, int result);
  void unlink_active(cadrt_request_s *r);
  void count_active(int by);  // active_count += by
  int kfd_ = -1;
  const volatile cad_status *kstatus_ = nullptr;
  // Programs loaded for requests that are not persistent, kept for the
  // next call with the same instance, communicator and buffer addresses
  // (the module refuses to start one whose buffers were remapped since:
  // -ESTALE, and it is loaded again).
  struct Loaded {
    std::shared_ptr<const Instance> inst;
    uint64_t ctx = 0;
    std::vector<uint64_t> addrs;
    int32_t kh = -1;
    uint32_t gen = 0;   // starts of kh
    bool busy = false;
    bool bounce = false;  // cadrt_request_s::kbounce
    uint64_t used = 0;  // for eviction: the least recently used goes
  };
  std::vector<Loaded> kcache_;
  // Persistent requests that hold a loaded program.  The module runs at
  // most CAD_MAX_PROGRAMS per file: at that limit a load first frees the
  // idle cache, then the programs of the persistent requests started least
  // recently that are not active (they load again at their next start).
  std::vector<cadrt_request_s *> kheld_;
  bool kernel_unload_idle();  // false if nothing could be freed
  uint64_t kclock_ = 0;
  std::vector<uint64_t> kaddrs_;  // the buffer addresses of the request being started
  int kernel_load(cadrt_request_s *r);
  void kernel_evict(size_t keep);
  Loaded *kernel_cached(int32_t kh);
  int kernel_ioctl_start(int32_t kh, uint64_t seq);  // 0 or -errno
  void kernel_ioctl_free(int32_t kh);
  void kernel_ioctl_test(int32_t kh) const;  // (copies out what a bounced program wrote)
  // CADRT_KERNEL_BOUNCE: buffers the module cannot pin go through kernel
  // memory (CAD_LOAD_BOUNCE); programs loaded so.
  bool kbounce_ = true;
  uint64_t n_kernel_bounced = 0;

  // engines (engines.cpp)
  void thread_main();
  void signal_helper_main();
  int choose_engine(bool *asked);
  int agree_engine(int err, bool asked);
  Engine user_engine() const;
  bool auto_tries_kernel() const;
  int start_engine();
  void stop_helper();
  // joining the job (join.cpp)
  int setup_world();
  int join_bootstrap();
  int find_node(uint32_t *leader, int32_t *leader_pid);
  uint32_t node_index_ = 0;
  Bootstrap boot_;
  bool booted_ = false;
  // cadrun's pipe for this rank (CADRT_LIFE_FD), or -1: close-on-exec while
  // this process is a member of the job, so that cadrun sees it close if
  // the process runs another program without cadrt_finalize.
  int life_fd_ = -1;
  void set_life_cloexec(bool on);
  int meet();
  int probe_cma();
  // lanes (lanes.cpp)
  bool lane_settings(std::string *bad_out, std::string *want_bulk_out, uint64_t *want_max_out);
  int setup_lanes(const std::string &want_bulk, uint64_t want_max);
  void agree_lanes(const std::vector<uint32_t> &local, uint64_t want_max);
  void decide_pushes(const std::vector<uint32_t> &local);
  void say_pushes() const;
  void say_lanes(uint32_t partner, uint64_t upto, const int64_t *lane, const int64_t *read, const char *forced) const;
  void empty_lanes();
  uint64_t lanes_upto(uint32_t partner);  // partner: nep if none
  uint64_t push_upto(uint32_t partner);   // 0 on the pair's sender, else 0x100 | classes won
};

// The small-message path (a collective's start, a pass, a test, the
// ring): its functions sit together in .text.hot, the executor's too
// (kmod/core, CAD_HOT).  Scattered over libcadrt, they shared a few
// instruction-cache sets with each other and with libc, and a 1-byte
// broadcast's root missed the L1 instruction cache about 30 times a call
// (callgrind; Open MPI's blocking broadcast: none).
#define CADRT_HOT __attribute__((hot))

// The runtime: built at the first call.  (Inline, and a plain load after
// that first call: a small collective calls it a score of times.)
extern std::atomic<Runtime *> g_rt;
Runtime &rt_first();
inline Runtime &rt() {
  Runtime *r = g_rt.load(std::memory_order_acquire);
  return r ? *r : rt_first();
}
// The signal engine's handler is running progress() on this thread.
extern thread_local bool t_in_handler;
// This thread is the thread engine's progress thread.
extern thread_local bool t_progress_thread;
#ifdef CADRT_FAULT_INJECTION
extern int g_fault_tell;        // internal.h, fault_no_room()
extern long g_fault_split_us, g_fault_split_in_us;  // internal.h, fault_split_pause()
extern long g_fault_split_read;                     // internal.h, fault_split_read()
#endif

// A spin-wait's pause.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// CLOCK_MONOTONIC in nanoseconds.
inline int64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

// The calling thread's error, set by the API functions.
// (Cold: the paths that call it leave the small-message path's lines.)
__attribute__((cold)) int set_error(int err, const std::string &message);
void clear_error();
const char *error_message();

// RAII: inside the library (for the signal engine) and under the lock.
class Entered {
 public:
  Entered();
  ~Entered();
  Entered(const Entered &) = delete;
  Entered &operator=(const Entered &) = delete;
};

}  // namespace cadrt
