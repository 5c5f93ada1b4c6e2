// shm.h - the job's shared memory: what the processes of one node share.
//
// One segment per job (cadrun creates it as a memfd and hands it to its
// children; under MPI the node's first rank creates it).  Layout:
//   Header                         page 0
//   RankInfo[n]                    two cache lines each
//   Ring[n * n]                    ring (s, d) carries messages from s to d
// A ring is single-producer (s), single-consumer (d): the producer fills
// the slot at its tail and stamps it (slot_stamp()); the consumer polls the
// stamp of the slot at its head, takes the messages in order and publishes
// head.  The consumer never reads tail, which the producer keeps for
// itself (and for tools), so a message costs the consumer the cache lines
// of its slot only, not also the line of a shared index (as Open MPI's
// fast boxes and FastForward's queues).  Messages are fixed 2 KiB slots: a 64-byte
// header and up to 1984 bytes of payload (an eager message, a fragment),
// or a control message (RTS, CTS, FIN, ABORT).  Nothing in a slot is a
// pointer into the segment, so each process may map it anywhere.
//
// Waking: a thread that is about to sleep raises its rank's `asleep`
// (the main thread, waiting in the library) or `sleepers` (a helper)
// count and waits on its `bell` (a futex in the segment).  A producer
// rings the bell if the consumer's main thread sleeps in the library
// waiting for it, or if a helper sleeps while the main thread is outside
// the library with collectives active (kRankOutside) and the message is
// urgent (a step of a transfer of a collective of at least CADRT_KICK_MIN
// bytes, room in a ring: what is worth an interrupt).  It spares the
// wake-up when the main thread is `polling` (kRankPolling: inside the
// library, looking at its rings anyway) or idle (kRankIdle: outside the
// library with no collective active and nothing queued to send, so the
// message is for one it has not posted yet, and the call that posts it
// finds the message).  Under the signal engine a consumer whose main
// thread is outside the library with collectives active that a peer
// would interrupt it for (Runtime::kickable()) is `armed`: the producer
// signals that thread itself (tgkill), so progress does not wait for a
// helper thread to be scheduled on cores the application keeps busy.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace cadrt {

constexpr uint32_t kSlots = 32;
constexpr uint32_t kSlotSize = 2048;
constexpr uint32_t kHeaderBytes = 64;
constexpr uint32_t kPayload = kSlotSize - kHeaderBytes;

enum MsgKind : uint32_t {
  kEager = 1,  // the whole message in the payload (or the header: kInline)
  kRts,        // ready to send: the receiver reads [addr, +len) from the sender
  kCts,        // clear to send: the sender writes [addr, +len) of the receiver
  kFinSend,    // the receiver read the data: the send is done
  kFinRecv,    // the sender wrote the data: the receive is done
  kFrag,       // part of a message copied through the segment, at off
  kAbort,      // the collective (ctx, seq) failed; payload: why
  kRelSend,    // answers an RTS of a failed collective: the receiver will not read
  kRelRecv,    // answers a CTS of a failed collective: the sender will not write
  kGrant,      // answers an RTS: the sender copies the data into the lane to the receiver
  kSplit,      // answers an RTS: the receiver reads, and the waiting sender may write chunks too (Split)
  kPush,       // no CMA: the sender copies the message into the lane to the receiver, from chunk off
};

struct MsgHeader {
  uint16_t kind;
  uint16_t stamp; // in a ring's slot: which message of the ring it holds (slot_stamp())
  uint32_t tag;   // the program's tag
  uint64_t ctx;   // communicator
  uint64_t seq;   // collective on that communicator
  uint32_t occ;   // which message of (src, dst, tag) in program order
  uint32_t frag;  // payload bytes
  uint64_t len;   // bytes of the whole message
  uint64_t addr;  // RTS: sender's source; CTS, SPLIT: receiver's destination
  uint64_t off;   // FRAG: offset in the message; RTS, CTS: the sender's now_ns() then;
                  // GRANT: the lane's head (chunks), where the data starts;
                  // PUSH: the lane's tail (chunks), where the data starts;
                  // SPLIT: generation << 8 | the Split's index
  uint64_t fp;    // the sender's instance fingerprint
};
static_assert(sizeof(MsgHeader) == kHeaderBytes, "a slot header is 64 bytes");

// An eager message of at most kInline bytes travels in its header, in addr
// and off (which an eager message does not use), with frag 0: the consumer
// takes one cache line of the slot instead of two (the header's and the
// payload's).
constexpr uint32_t kInline = 16;
static_assert(offsetof(MsgHeader, off) == offsetof(MsgHeader, addr) + 8, "addr and off are adjacent");
inline unsigned char *inline_bytes(MsgHeader &h) { return reinterpret_cast<unsigned char *>(&h.addr); }
inline const unsigned char *inline_bytes(const MsgHeader &h) {
  return reinterpret_cast<const unsigned char *>(&h.addr);
}

struct Slot {
  MsgHeader h;
  unsigned char payload[kPayload];
};

// An eager message's bytes, in its header or its payload.
inline const unsigned char *eager_bytes(const MsgHeader &h, const unsigned char *payload) {
  return h.frag ? payload : inline_bytes(h);
}

struct alignas(64) Ring {
  alignas(64) std::atomic<uint64_t> tail;  // the producer's, not read by the consumer
  alignas(64) std::atomic<uint64_t> head;  // written by the consumer
  // The producer has output waiting for room: the consumer rings its bell
  // when it frees slots.
  alignas(64) std::atomic<uint32_t> want_space;
  alignas(64) Slot slots[kSlots];
};

// A slot's stamp says which message of its ring it holds: message pos is
// stamped slot_stamp(pos), odd, and the one before it in that slot (pos -
// kSlots) two less; a slot never written holds 0.  The producer writes the
// rest of the header and the payload first and the stamp last (release);
// the consumer, which knows which message it waits for, reads the stamp
// (acquire) and then the rest.  16 bits suffice: the producer never gets
// more than one round of the ring ahead of the consumer, so the slot holds
// either that message or the one a round before.  Any other stamp is a
// broken producer's.
constexpr uint16_t slot_stamp(uint64_t pos) { return static_cast<uint16_t>(pos / kSlots * 2 + 1); }

enum SlotState { kSlotEmpty, kSlotReady, kSlotCorrupt };

inline SlotState slot_state(const Slot &s, uint64_t pos, uint16_t *stamp = nullptr) {
  const uint16_t st = __atomic_load_n(&s.h.stamp, __ATOMIC_ACQUIRE);
  if (stamp) *stamp = st;
  if (st == slot_stamp(pos)) return kSlotReady;
  return st == (pos < kSlots ? 0 : slot_stamp(pos - kSlots)) ? kSlotEmpty : kSlotCorrupt;
}

// Publishes message pos in its slot: its n bytes of payload (at most
// kPayload), the header but its first word (frag = n), its kind, then its
// stamp, last, with a release store.  (h's own stamp is not copied: a
// stamp written on the way could be taken for another.)  Every producer
// of a ring goes through here, so what a consumer sees stamped is whole.
static_assert(offsetof(MsgHeader, kind) == 0 && offsetof(MsgHeader, stamp) == 2 && offsetof(MsgHeader, tag) == 4,
              "kind and stamp make a header's first word");
inline void publish(Slot &s, const MsgHeader &h, const void *payload, uint32_t n, uint64_t pos) {
  if (n) memcpy(s.payload, payload, n);
  memcpy(reinterpret_cast<unsigned char *>(&s.h) + 4, reinterpret_cast<const unsigned char *>(&h) + 4, sizeof h - 4);
  s.h.frag = n;
  s.h.kind = h.kind;
  __atomic_store_n(&s.h.stamp, slot_stamp(pos), __ATOMIC_RELEASE);
}

// What a rank publishes, on two cache lines.  A producer reads the first
// on every message it rings (armed, asleep), a peer polling for its
// requests reads it on every test (state: check_peers()), and its owner
// writes it only to sleep or, under the signal engine, when it arms or
// disarms: while the owner calls in and out of the library it stays
// shared in both caches, and neither costs a miss.  The second changes
// with every call (polling) and is read by a producer only for an urgent
// message to a rank whose helper sleeps.
struct alignas(64) RankInfo {
  std::atomic<int32_t> pid;
  std::atomic<uint32_t> asleep;    // the main thread sleeps in the library, waiting on bell
  std::atomic<uint32_t> sleepers;  // helper threads waiting on bell
  std::atomic<uint32_t> armed;     // signal engine, outside the library, kickable collectives active: kick it
  std::atomic<int32_t> tid;        // the main thread (signal engine)
  std::atomic<int32_t> signo;      // the signal it progresses in (signal engine; CADRT_SIGNAL)
  std::atomic<uint32_t> state;     // RankState (kDead and kLeft set by cadrun too)
  uint64_t probe_addr;             // a private word, for the CMA probe
  int32_t place[4];                // node, package, NUMA domain, L3 (or -1)
  alignas(64) std::atomic<uint32_t> polling;  // a Polling: whom a message wakes
  std::atomic<uint32_t> bell;                 // futex word
  std::atomic<uint32_t> kicked;               // a kick is on its way (one at a time)
  std::atomic<uint32_t> committed;            // waiting, or between cadrt_poll_begin and end
  std::atomic<uint64_t> lanes_upto;           // at init: 0 not measured, else what Runtime::lanes_upto()
                                              // measured, + 1 unless UINT64_MAX
  std::atomic<uint32_t> engine;               // at init: an EngineKind (Runtime::agree_engine())
  std::atomic<uint32_t> push;                 // at init, with CMA: 1 + the CADRT_PUSH it asks for (0 under
                                              // CADRT_BULK=0), + 4 under CADRT_BULK=1; the node pushes if every
                                              // rank asks the same
  std::atomic<uint64_t> push_upto;            // at init, CADRT_PUSH=auto: 0 not measured, else what
                                              // Runtime::push_upto() measured (0x100 | classes won)
  std::atomic<uint64_t> probe_buf;            // at init: the buffer of push_upto()'s single copies
  std::atomic<uint64_t> probe_step;           // at init: the last step of push_upto() this rank made
  std::atomic<uint64_t> probe_time;           // at init: when the sender finished that step (now_ns())
};
// Whether process pid is gone (a pid of 0 or less: never published).
bool pid_gone(int32_t pid);

// What a rank's init chose (RankInfo::engine).
enum EngineKind : uint32_t { kEngineFailed = 1, kEngineUser, kEngineKernelAuto, kEngineKernelAsked };
static_assert(sizeof(RankInfo) == 128, "two cache lines");

// RankInfo::polling: whether a producer wakes the rank's sleepers.
enum Polling : uint32_t {
  kRankOutside = 0,  // outside the library with work: wake its helper for urgent messages only
  kRankPolling = 1,  // the main thread is in the library, looking at its rings: no wake-up
  kRankIdle = 2,     // outside, nothing active or queued: the next call looks, no wake-up
  kRankAsleep = 3,   // the main thread sleeps in the library, waiting: every message wakes it
};

// A bulk lane, one per ordered pair of ranks of a job of at most
// kLaneMaxRanks: a ring of chunks (lane_chunks(n): 2 MiB in all for up to
// 8 ranks, 1 MiB for up to 16) through which the sender copies a large
// message in and the receiver copies it out, the two copies running side
// by side chunk by chunk.  The receiver grants it to one transfer at a
// time (kGrant), when both ranks are there to copy: on the machines
// measured a process_vm_readv costs 4-5 times a memcpy of the same bytes
// (the kernel pins, maps and copies page by page), so two memcpys beat the
// single copy when both CPUs make one.  Otherwise (a peer computing) the
// receiver reads with CMA, on its own.  Where CMA is not permitted the
// sender takes the lane to a receiver for one message at a time on its
// own (kPush) when the lane is empty, instead of 2 KiB fragments through
// the ring.  Pages of a lane are allocated as
// they are first touched: a lane costs memory only once used.
constexpr uint32_t kLaneChunk = 65536;
constexpr uint32_t kLaneMaxRanks = 16;
constexpr uint32_t lane_chunks(uint32_t n) { return n <= 8 ? 32 : 16; }

// A split single copy (split.cpp, split_in): a large message the
// receiver reads with process_vm_readv while its sender waits is copied
// by both, chunk by chunk, the sender writing with process_vm_writev.
// Each side claims the next chunk from `claim`; a sender called away
// leaves the rest to the receiver.  The receiver owns the kSplitSlots
// Splits in the header of the lane to it and starts each use with a new
// generation, so that a claim of a finished transfer can never take a
// chunk of the next.
struct alignas(64) Split {
  std::atomic<uint64_t> claim;  // generation << 32 | closed << 31 | chunks claimed (at most the transfer's)
  std::atomic<uint64_t> sent;   // done << 63 | chunks the sender claimed and wrote (or failed to write)
};
constexpr uint32_t kSplitSlots = 8;
// A split's chunk, 128 KiB at every size: each chunk costs a claim and a
// process_vm_readv/writev of its own, and smaller chunks made split
// broadcasts below 1 MiB slower than unsplit ones (rt_bench's ibcast).
constexpr uint64_t kSplitChunk = 131072;
inline uint64_t split_chunks(uint64_t len) { return (len + kSplitChunk - 1) / kSplitChunk; }
// A message of len bytes may be split (both sides agree on it).
inline bool splittable(uint64_t len) { return split_chunks(len) >= 2 && split_chunks(len) < (1u << 31); }

// A receive offered to its sender (offer.cpp, offer()): a one-way
// single copy's receiver that posts before the sender's RTS has come
// publishes where the data goes, and a sender that posts later takes the
// offer (claiming it from kOfferOpen to kOfferTaken) and writes the data in
// its own call, instead of sending an RTS the receiver would read only at
// its next call -- its wait, if it went back to its work.  Whoever comes
// second copies.  A receiver that gets the RTS (the sender posted before
// the offer was visible) withdraws it (to kOfferFree) and reads; the
// claim decides between the two, so exactly one of them copies.  The
// receiver owns the kOfferSlots offers of the lane to it; each use starts
// a new generation, so that a claim can never take a later offer.
constexpr uint64_t kOfferFree = 0, kOfferOpen = 1, kOfferTaken = 2;
struct alignas(64) Offer {
  std::atomic<uint64_t> state;  // generation << 2 | kOfferFree, kOfferOpen or kOfferTaken
  // The receive (written before state is set kOfferOpen, read after it):
  std::atomic<uint64_t> ctx, seq, len, addr, fp;
  std::atomic<uint32_t> tag, occ;
};
constexpr uint32_t kOfferSlots = 8;

struct alignas(4096) Lane {
  alignas(64) std::atomic<uint64_t> tail;         // chunks written, by the sender
  alignas(64) std::atomic<uint64_t> head;         // chunks copied out, by the receiver
  alignas(64) std::atomic<uint32_t> want_space;   // the sender waits for a chunk
  Split split[kSplitSlots];                       // (not part of the lane's ring)
  Offer offer[kOfferSlots];                       // (nor these)
  // (lane_chunks(n) chunks of kLaneChunk bytes follow.)  Chunk i of a
  // transfer: each starts at the first (the lane is empty when granted),
  // so that a small one uses the pages, and the cache lines, the last did.
  unsigned char *chunk(uint64_t i, uint32_t n) {
    return reinterpret_cast<unsigned char *>(this) + sizeof(Lane) + i % lane_chunks(n) * kLaneChunk;
  }
};
static_assert(sizeof(Lane) == 4096, "a lane's header is a page");
inline uint64_t lane_bytes(uint32_t n) { return sizeof(Lane) + static_cast<uint64_t>(lane_chunks(n)) * kLaneChunk; }

// kLeft: the rank's process ended (with status 0) while it was still a
// member, without cadrt_finalize -- said by its own exit path
// (~Runtime) or by cadrun, which saw it exit.  Its peers take it as dead,
// with that reason, so a peer waiting for one of its messages does not
// wait for ever.
enum RankState : uint32_t { kStarting = 0, kAlive = 1, kExited = 2, kDead = 3, kLeft = 4 };
inline bool rank_failed(uint32_t state) { return state == kDead || state == kLeft; }

struct alignas(4096) Header {
  uint64_t magic;
  uint32_t version;
  uint32_t nranks;
  uint64_t size;
  std::atomic<uint32_t> barrier_count;
  std::atomic<uint32_t> barrier_gen;   // futex word
  std::atomic<uint32_t> cma_denied;    // some rank could not read a peer
  std::atomic<int32_t> cma_errno;      // why
  uint64_t job_key;                    // random: names the job's group in /dev/cad
};

constexpr uint64_t kMagic = 0x314d485354444143ull;  // "CADTSHM1"
constexpr uint32_t kVersion = 11;

// Bytes of a segment for n ranks.
uint64_t segment_size(uint32_t n);

class Segment {
 public:
  // Maps fd (the whole segment); creator: initialise it for n ranks.
  // False with *error set.
  bool map(int fd, bool create, uint32_t n, std::string *error);
  void unmap();
  bool mapped() const { return base_ != nullptr; }

  Header &header() const { return *reinterpret_cast<Header *>(base_); }
  uint32_t nranks() const { return n_; }
  RankInfo &rank(uint32_t r) const;
  Ring &ring(uint32_t from, uint32_t to) const;
  // The bulk lanes exist for jobs of at most kLaneMaxRanks.
  bool has_lanes() const { return n_ <= kLaneMaxRanks; }
  uint32_t lane_chunks() const { return cadrt::lane_chunks(n_); }
  Lane &lane(uint32_t from, uint32_t to) const;

  // All ranks of the segment meet (spinning briefly, then on a futex):
  // -1; or the rank found gone while waiting (gone() in shm.cpp), which
  // will never come (the barrier is then broken for the job).
  [[nodiscard]] int64_t barrier();
  // How many ranks use the segment (its slots are for all ranks of the
  // job; under a network transport only this node's are used).
  void set_members(uint32_t k) { members_ = k; }

 private:
  unsigned char *base_ = nullptr;
  uint64_t size_ = 0;
  uint32_t n_ = 0;
  uint32_t members_ = 0;
};

// futex on a shared word; wait returns on a wake, a change, a signal or
// after timeout_ms.
void futex_wait(std::atomic<uint32_t> *word, uint32_t expected, int timeout_ms);
void futex_wake(std::atomic<uint32_t> *word);

}  // namespace cadrt
