// rt_peer - a broken peer: rank 1 rewrites a message it has published in
// its ring to rank 0, and rank 0 must end its collective with a clear
// error, not copy outside its buffers.  A peer's ring slots are its own to
// write, so whatever a process of the job writes there is untrusted input.
//
//   cadrun -n 2 rt_peer frag|eager|ring [signal]
//   cadrun -n 2 rt_peer lane [busy]|split|offer|push|fin
//
//   frag   the RTS of a 64 KiB broadcast becomes a fragment 1 TiB past
//          the start of the message
//   eager  it becomes an eager message of its length (more than a 2 KiB
//          slot holds) "in the header"
//   ring   the slot at the ring's head is stamped 1000, which no message has
//   push   (CMA off, so the sender pushes the 64 KiB through its lane:
//          the message is a PUSH, not an RTS) the PUSH names a chunk 5
//          past where the lane's data starts
//
// Rank 0 posts its receive, then stays out of the library (poll engine:
// nothing reads its rings meanwhile) while rank 1 starts the broadcast as
// its root and rewrites the message its start just published.  Rank 0 then
// waits and prints "rank 0: error <n>: <message>"; it exits 0 if the wait
// failed, 1 if it "succeeded".  Rank 1 waits for its own request, which
// fails once rank 0 gives up or exits, and exits 0.
//
// lane: an alltoall of 64 KiB blocks, an exchange that goes through the
// bulk lanes when both ranks wait.  Rank 1 starts it, says it waits (its
// committed flag) without doing so, moves the tail of its lane to rank 0
// 1000 chunks past the head, and stays out of the library for a second:
// rank 0, waiting, grants the lane and must fail with "wrote a corrupt
// lane" rather than copy what is not a chunk.  Rank 1 then waits for its
// own request, which fails, and exits 0.  lane busy: rank 1 tests its
// request for that second instead, so it takes rank 0's grant and gives up
// on it (its tail is not where rank 0's head is); rank 0 found the lane
// corrupt first and must report that, not rank 1's ABORT after it.
//
// split: a 64 MiB broadcast from rank 1, which says it waits (as in
// lane) so that rank 0 splits the single copy with it (a Split in the
// header of the lane from rank 1).  Rank 1 watches the Split until rank 0
// takes it, then claims every chunk left and says it wrote 1000: rank 0
// must fail with "wrote a corrupt lane" rather than wait for chunks that
// do not exist or complete without them.
//
// offer: a 256 KiB broadcast from rank 0, which waits.  Rank 1 never
// starts it: it takes the RTS rank 0 sent it, turns it into a SPLIT naming
// a Split that does not exist, and puts that in its ring to rank 0, which
// must fail with "offered rank 0 a split that does not fit" rather than
// write anywhere.  Rank 1 then exits (after a while), which ends rank 0's
// wait for an answer to its RTS.
//
// fin: a 64 KiB broadcast from rank 1, which rank 0 starts first (its
// receive is offered to rank 1 at the end of its start) and then stays out
// of the library.  Rank 1 never starts it: it waits for the offer in the
// header of its lane to rank 0 and, without taking it, puts in its ring a
// FIN saying it wrote the receive; rank 0 must fail with "sent rank 0 a
// FIN for a receive it did not take" rather than complete with data that
// never came.
//
// signal: rank 0 runs the signal engine and can be interrupted for its
// 64 KiB broadcast (CADRT_KICK_MIN=0; rank 1 keeps the default, so its
// start does not interrupt rank 0 before the rewrite), and rank 1 sends
// the kick itself once the message is rewritten: rank 0 finds the damage
// in its signal handler, while it is out of the library, and its wait
// then returns the error.  (Under libcad_nomalloc.so, test_runtime.py
// checks that the handler builds that error without allocating.)
//
// Compiled with cadrt's shm.cpp to map the job's segment the way cadrt
// does (libcadrt exports only cadrt_*, so nothing clashes).
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cadrt/cadrt.h"
#include "shm.h"

namespace {

constexpr size_t kBytes = 65536;

[[noreturn]] void die(const char *what) {
  fprintf(stderr, "rt_peer: %s: %s\n", what, cadrt_error_message());
  exit(2);
}

// Rank 1: the message it published last in ring (1, 0), rewritten; with
// kick, then rank 0 signalled the way a peer's ring() does.
void tamper(const char *how, bool kick) {
  const char *fd = getenv("CADRT_JOB_FD");
  if (!fd) die("CADRT_JOB_FD is not set: run under cadrun");
  cadrt::Segment seg;
  std::string error;
  if (!seg.map(atoi(fd), false, 2, &error)) {
    fprintf(stderr, "rt_peer: mapping the segment: %s\n", error.c_str());
    exit(2);
  }
  cadrt::Ring &q = seg.ring(1, 0);
  const uint64_t tail = q.tail.load(std::memory_order_acquire);
  if (tail == q.head.load(std::memory_order_acquire)) {
    fprintf(stderr, "rt_peer: rank 0 took the message already\n");
    exit(2);
  }
  cadrt::MsgHeader &h = q.slots[(tail - 1) % cadrt::kSlots].h;
  const bool push = !strcmp(how, "push");
  if (h.kind != (push ? cadrt::kPush : cadrt::kRts) || h.len <= cadrt::kPayload) {
    fprintf(stderr, "rt_peer: the last message is of kind %u, %llu bytes, not the broadcast's %s\n", h.kind,
            static_cast<unsigned long long>(h.len), push ? "PUSH" : "RTS");
    exit(2);
  }
  if (push) {
    h.off += 5;
  } else if (!strcmp(how, "frag")) {
    h.kind = cadrt::kFrag;
    h.off = 1ull << 40;
    h.frag = 100;
  } else if (!strcmp(how, "eager")) {
    h.kind = cadrt::kEager;
    h.frag = 0;  // "in the header": at most 16 bytes
  } else {
    // A stamp no message of this ring has (stamps are odd, shm.h).
    __atomic_store_n(&q.slots[q.head.load(std::memory_order_acquire) % cadrt::kSlots].h.stamp, 1000,
                     __ATOMIC_RELEASE);
  }
  if (kick) {
    cadrt::RankInfo &r0 = seg.rank(0);
    for (int i = 0; !r0.armed.load(std::memory_order_seq_cst); i++) {
      if (i == 1000) {
        fprintf(stderr, "rt_peer: rank 0 is not armed for a kick\n");
        exit(2);
      }
      usleep(1000);
    }
    r0.kicked.store(1, std::memory_order_release);
    if (syscall(SYS_tgkill, r0.pid.load(), r0.tid.load(), r0.signo.load())) {
      perror("rt_peer: tgkill");
      exit(2);
    }
  }
  seg.unmap();
}

// Says how a rank's request ended ("rank N: error E: message"),
// finalizes; the exit status: 1 if rank 0's request, which must fail,
// succeeded.
int report(int rank, int err) {
  printf("rank %d: error %d: %s\n", rank, err, err ? cadrt_error_message() : "none");
  fflush(stdout);
  cadrt_finalize();
  return rank == 0 && !err ? 1 : 0;
}

// Waits for r, then report().
int finish(int rank, cadrt_request *r) {
  return report(rank, cadrt_wait(r));
}

cadrt::Segment map_segment() {
  cadrt::Segment seg;
  std::string error;
  if (!seg.map(atoi(getenv("CADRT_JOB_FD")), false, 2, &error)) {
    fprintf(stderr, "rt_peer: mapping the segment: %s\n", error.c_str());
    exit(2);
  }
  if (!seg.has_lanes()) {
    fprintf(stderr, "rt_peer: the segment has no lanes\n");
    exit(2);
  }
  return seg;
}

int64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

// rt_peer lane (see the header).
int lane(int rank, cadrt_comm world, bool busy) {
  static char in[2 * kBytes], out[2 * kBytes];
  memset(in, rank + 1, sizeof in);
  // (After rank 0's cadrt_init, which would find the lane not empty and
  // never grant it.)
  cadrt_request b;
  if (cadrt_ibarrier(world, &b) || cadrt_wait(&b)) die("ibarrier");
  if (rank == 1) {  // before the start: rank 0 grants as soon as the RTS comes
    cadrt::Segment seg = map_segment();
    cadrt::Lane &l = seg.lane(1, 0);
    l.tail.store(l.head.load() + 1000, std::memory_order_release);
    seg.rank(1).committed.store(1, std::memory_order_release);
    seg.unmap();
  }
  cadrt_request r;
  if (cadrt_ialltoall(in, out, kBytes, CADRT_BYTE, world, &r)) die("ialltoall");
  if (rank == 1 && !busy) usleep(1000000);  // out of the library: rank 0 alone meets the lane
  // busy: in the library instead, so that rank 1 takes rank 0's grant and
  // gives up on it, which rank 0 must not report in place of the lane.
  for (const int64_t until = now_ns() + 1000000000L; rank == 1 && busy && now_ns() < until;) {
    int done = 0;
    const int err = cadrt_test(&r, &done);
    if (done) return report(rank, err);
  }
  return finish(rank, &r);
}

// rt_peer split (see the header).
int split(int rank, cadrt_comm world) {
  constexpr size_t kBig = 64u << 20;
  constexpr uint64_t kChunks = kBig / 131072;  // (progress.cpp: kSplitChunk)
  static char buf[kBig];
  memset(buf, rank, sizeof buf);
  cadrt::Segment seg = map_segment();
  cadrt::Split &s = seg.lane(1, 0).split[0];
  const uint64_t before = s.claim.load(std::memory_order_acquire);
  if (rank == 1) seg.rank(1).committed.store(1, std::memory_order_release);
  cadrt_request r;
  if (cadrt_ibcast(buf, kBig, CADRT_BYTE, 1, world, &r)) die("ibcast");
  if (rank == 1) {
    uint64_t c;
    for (long i = 0; ((c = s.claim.load(std::memory_order_acquire)) >> 32) == before >> 32; i++) {
      if (i == 2000000000L) {
        fprintf(stderr, "rt_peer: rank 0 did not split the copy\n");
        exit(2);
      }
    }
    s.claim.store((c >> 32) << 32 | kChunks, std::memory_order_release);
    s.sent.store(1000, std::memory_order_release);
    usleep(500000);
  }
  seg.unmap();
  return finish(rank, &r);
}

// rt_peer offer (see the header).
int offer(int rank, cadrt_comm world) {
  constexpr size_t kMid = 256 * 1024;
  static char buf[kMid];
  memset(buf, rank, sizeof buf);
  if (rank == 0) {
    cadrt_request r;
    if (cadrt_ibcast(buf, kMid, CADRT_BYTE, 0, world, &r)) die("ibcast");
    return finish(0, &r);
  }
  cadrt::Segment seg = map_segment();
  cadrt::Ring &in = seg.ring(0, 1), &out = seg.ring(1, 0);
  for (int i = 0; in.tail.load(std::memory_order_acquire) == in.head.load(std::memory_order_relaxed); i++) {
    if (i == 5000) {
      fprintf(stderr, "rt_peer: no RTS from rank 0\n");
      exit(2);
    }
    usleep(1000);
  }
  cadrt::MsgHeader h = in.slots[in.head.load() % cadrt::kSlots].h;
  if (h.kind != cadrt::kRts) {
    fprintf(stderr, "rt_peer: rank 0's message is of kind %u, not an RTS\n", h.kind);
    exit(2);
  }
  h.kind = cadrt::kSplit;
  h.addr = reinterpret_cast<uint64_t>(buf);
  h.off = 1u << 8 | 200;  // Split 200 of 8
  const uint64_t tail = out.tail.load(std::memory_order_relaxed);
  cadrt::publish(out.slots[tail % cadrt::kSlots], h, nullptr, 0, tail);
  out.tail.store(tail + 1, std::memory_order_release);
  seg.rank(0).bell.fetch_add(1, std::memory_order_release);
  cadrt::futex_wake(&seg.rank(0).bell);
  seg.unmap();
  usleep(500000);
  printf("rank 1: offered\n");
  cadrt_finalize();
  return 0;
}

// rt_peer fin (see the header).
int fin(int rank, cadrt_comm world) {
  static char buf[kBytes];
  memset(buf, rank, sizeof buf);
  if (rank == 0) {
    cadrt_request r;
    if (cadrt_ibcast(buf, kBytes, CADRT_BYTE, 1, world, &r)) die("ibcast");
    timespec left = {0, 500000000};
    while (nanosleep(&left, &left)) {
    }
    return finish(0, &r);
  }
  cadrt::Segment seg = map_segment();
  cadrt::Offer *o = nullptr;
  for (int i = 0; !o; i++) {
    for (cadrt::Offer &x : seg.lane(1, 0).offer)
      if ((x.state.load(std::memory_order_acquire) & 3) == cadrt::kOfferOpen) o = &x;
    if (o) break;
    if (i == 5000) {
      fprintf(stderr, "rt_peer: no offer from rank 0\n");
      exit(2);
    }
    usleep(1000);
  }
  cadrt::MsgHeader h{};
  h.kind = cadrt::kFinRecv;
  h.ctx = o->ctx.load();
  h.seq = o->seq.load();
  h.tag = o->tag.load();
  h.occ = o->occ.load();
  h.len = o->len.load();
  h.fp = o->fp.load();
  cadrt::Ring &out = seg.ring(1, 0);
  const uint64_t tail = out.tail.load(std::memory_order_relaxed);
  cadrt::publish(out.slots[tail % cadrt::kSlots], h, nullptr, 0, tail);
  out.tail.store(tail + 1, std::memory_order_release);
  seg.unmap();
  usleep(800000);
  printf("rank 1: said it wrote\n");
  cadrt_finalize();
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const bool sig = argc == 3 && !strcmp(argv[2], "signal");
  const bool lanes = argc >= 2 && !strcmp(argv[1], "lane") && (argc == 2 || (argc == 3 && !strcmp(argv[2], "busy")));
  const bool splits = argc == 2 && !strcmp(argv[1], "split");
  const bool offers = argc == 2 && !strcmp(argv[1], "offer");
  const bool pushes = argc == 2 && !strcmp(argv[1], "push");
  const bool fins = argc == 2 && !strcmp(argv[1], "fin");
  if ((argc != 2 && !sig && !lanes) || (strcmp(argv[1], "frag") && strcmp(argv[1], "eager") && strcmp(argv[1], "ring") &&
                              !lanes && !splits && !offers && !pushes && !fins)) {
    fprintf(stderr, "usage: cadrun -n 2 rt_peer frag|eager|ring [signal] | lane [busy] | split | offer | push | fin\n");
    return 2;
  }
  const char *me = getenv("CADRT_RANK");
  if (lanes) setenv("CADRT_BULK", "1", 1);  // whatever they measure here
  if (pushes) setenv("CADRT_CMA", "0", 1);
  setenv("CADRT_ENGINE", sig ? "signal" : "poll", 1);
  if (sig && me && !strcmp(me, "0"))
    setenv("CADRT_KICK_MIN", "0", 1);
  else
    unsetenv("CADRT_KICK_MIN");
  if (cadrt_init()) die("init");
  cadrt_comm world = cadrt_comm_world();
  int rank, size;
  cadrt_comm_rank(world, &rank);
  cadrt_comm_size(world, &size);
  if (size != 2) {
    fprintf(stderr, "rt_peer: needs 2 ranks\n");
    return 2;
  }
  if (lanes) return lane(rank, world, argc == 3);
  if (splits) return split(rank, world);
  if (offers) return offer(rank, world);
  if (fins) return fin(rank, world);
  static char buf[kBytes];
  memset(buf, rank, sizeof buf);
  cadrt_request r;
  if (rank == 0) {
    if (cadrt_ibcast(buf, kBytes, CADRT_BYTE, 1, world, &r)) die("ibcast");
    // Out of the library while rank 1 tampers (a signal cuts a sleep short).
    timespec left = {0, 500000000};
    while (nanosleep(&left, &left)) {
    }
    return finish(0, &r);
  }
  // Half-way between two looks of rank 0's signal helper (every 100 ms
  // from its start, which cadrt_init's last barrier makes the same moment
  // on both ranks), so that it does not take the message before the
  // rewrite.
  usleep(150000);
  if (cadrt_ibcast(buf, kBytes, CADRT_BYTE, 1, world, &r)) die("ibcast");
  tamper(argv[1], sig);
  const int err = cadrt_wait(&r);
  printf("rank 1: ended with %d\n", err);
  cadrt_finalize();
  return 0;
}
