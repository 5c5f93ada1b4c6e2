// internal.h - what cadrt's own source files share beside the Runtime
// class (runtime.h): settings read as numbers, the signal engine's
// globals, the machine topology's helpers, and the message paths'
// helpers (progress.cpp, transfer.cpp, split.cpp, offer.cpp,
// failure.cpp).  Not installed, not exported: every name here is hidden
// from the library's users (and called directly, not through the PLT).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "runtime.h"

#define CADRT_INTERNAL __attribute__((visibility("hidden")))

// (The whole header, CADRT_INTERNAL or not.)
#pragma GCC visibility push(hidden)

namespace cadrt {

// Settings (runtime.cpp).  A setting's value (settings.h: declared there,
// or this aborts).
CADRT_INTERNAL const char *env(const char *name);
// A whole-number setting: false if unset or not a number.
CADRT_INTERNAL bool env_long(const char *name, long *out);
// A size setting (CADRT_KICK_MIN, CADRT_BULK_MIN...): *out as it was if
// name is not set; the error's words if it is not a number of bytes
// (*out untouched), else nothing.
CADRT_INTERNAL std::string env_bytes(const char *name, uint64_t *out);
// The folder libcadrt.so was loaded from, lexically normal (runtime.cpp):
// where the standard library is, and the module beside an installed tree.
CADRT_INTERNAL std::string library_dir();

// The signal engine (runtime.cpp, engines.cpp).  Its signal: CADRT_SIGNAL,
// SIGRTMIN + 5 unless set (choose_engine).
CADRT_INTERNAL extern int g_signal;
// A signal is on its way to the main thread (on_signal() clears it).
CADRT_INTERNAL extern std::atomic<bool> g_signal_sent;
// The signal engine's handler (runtime.cpp; start_engine() installs it).
CADRT_INTERNAL void on_signal(int);
// This thread's id, read once (the signal handler uses it too).
CADRT_INTERNAL int32_t this_tid();

// The machine (topology.cpp).  This process's place in it: node (0 here,
// set by the caller), package, NUMA domain and L3.
CADRT_INTERNAL void my_place(int32_t place[4]);
// Where my_place's topology came from (said under CADRT_VERBOSE).
CADRT_INTERNAL extern const char *g_topology_from;

// The message paths (progress.cpp and the files it shares them with).

// Whether tell() is to find no room where it has some: in the test build
// only (rt_check_san, compiled with CADRT_FAULT_INJECTION), the first
// CADRT_FAULT_TELL times it runs in the signal handler.  What it stands
// for: a failure found in the handler while the pending pool is short of
// kReserve entries (many peers' rings full at once), which no test can
// bring about on purpose.
inline bool fault_no_room() {
#ifdef CADRT_FAULT_INJECTION
  return t_in_handler && g_fault_tell > 0 && g_fault_tell-- > 0;
#else
  return false;
#endif
}

// In the test build only (CADRT_FAULT_SPLIT_US, CADRT_FAULT_SPLIT_IN_US):
// the sender (the receiver) of a split copy stops that long after each
// chunk it claimed, before it copies it -- a side that lost its CPU
// there, which a loaded machine does now and then and no test can bring
// about on purpose.
inline void fault_split_pause(bool receiver, long times = 1) {
#ifdef CADRT_FAULT_INJECTION
  const long us = (receiver ? g_fault_split_in_us : g_fault_split_us) * times;
  if (us > 0) usleep(static_cast<useconds_t>(us));
#else
  (void)receiver;
  (void)times;
#endif
}

// In the test build only (CADRT_FAULT_SPLIT_READ=N): the first N chunks
// the receiver of a split copy claims fail to read (EFAULT), as when the
// sender's memory is gone.
inline bool fault_split_read() {
#ifdef CADRT_FAULT_INJECTION
  return g_fault_split_read > 0 && g_fault_split_read-- > 0;
#else
  return false;
#endif
}

// Enough entries for one step of progress (a message stored, a reply).
constexpr size_t kReserve = 8;

inline bool is_recv_side(uint32_t kind) { return kind == kEager || kind == kRts || kind == kFrag || kind == kPush; }

// A failure's message, built without the heap: messages are taken in the
// signal handler too, which may have interrupted malloc.  (A request's
// error string has room reserved for it, Runtime::bind.)  Cut at
// kWhyBytes - 1.
class Why {
 public:
  Why &operator<<(std::string_view s) {
    const size_t n = std::min(s.size(), sizeof buf_ - 1 - len_);
    memcpy(buf_ + len_, s.data(), n);
    len_ += n;
    return *this;
  }
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Why &operator<<(T v) {
    char t[24];
    char *e = t + sizeof t, *p = e;
    const bool neg = v < 0;
    uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      *--p = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (neg) *--p = '-';
    return *this << std::string_view(p, static_cast<size_t>(e - p));
  }
  operator std::string_view() const { return {buf_, len_}; }

 private:
  char buf_[kWhyBytes];
  size_t len_ = 0;
};

// Whether a message answers one of ours: a FIN or a release.  (A GRANT
// answers an RTS too: the receiver will not read.)
inline bool is_answer(uint32_t kind) {
  return kind == kFinSend || kind == kFinRecv || kind == kRelSend || kind == kRelRecv || kind == kGrant;
}

// In a Split's sent (split.cpp): one side finished the transfer.
constexpr uint64_t kSplitDone = 1ull << 63;

// Why a single copy failed, in the words of its likely cause (no locale,
// no heap: strerrordesc_np).
inline const char *cma_why(int err) {
  if (err == -ESRCH) return "the peer process has exited (it may have failed this collective first)";
  const char *d = strerrordesc_np(-err);
  return d ? d : "unknown error";
}

// Output to a ring (or a lane) of `slots` entries waits for room: raise
// want_space, so that the consumer rings when it frees some (freed()), and
// look at head again.  The consumer may have freed slots after the
// producer's last look and read want_space before it was raised: then it
// rings nobody, and the output would wait for the next pass, after a sleep
// (Dekker: the consumer publishes head, fences, reads want_space).
// Whether it is still full; *head: what was read.
inline bool still_full(std::atomic<uint32_t> &want_space, const std::atomic<uint64_t> &head_word, uint64_t tail,
                uint64_t slots, uint64_t *head) {
  want_space.store(1, std::memory_order_seq_cst);
  *head = head_word.load(std::memory_order_seq_cst);
  return tail - *head >= slots;
}

// What is wrong with a message for posted node n, nullptr if nothing.  A
// peer's slot is its own to write, so a broken (or hostile) peer could send
// anything: the header checked here is a copy, and nothing is copied
// before it passes.  done: the bytes of n's fragments already received.
inline const char *malformed(const MsgHeader &h, const cad_node &n, uint64_t done) {
  switch (h.kind) {
    case kEager:
      if (h.frag ? h.frag != h.len || h.frag > kPayload : h.len > kInline) return "an eager message longer than its slot";
      break;
    case kFrag:
      if (!h.frag || h.frag > kPayload || h.off > n.len || h.frag > n.len - h.off || h.frag > n.len - done)
        return "a fragment outside its message";
      break;
  }
  return nullptr;
}

}  // namespace cadrt

#pragma GCC visibility pop
