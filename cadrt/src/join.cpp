// join.cpp - joining the job: the node's segment (under cadrun or a
// bootstrap), the world's ranks and places, the node's barrier, the CMA
// probe.
#include "runtime.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "internal.h"

namespace cadrt {

namespace {

volatile uint64_t g_probe_word = 0x43414452544f4b21ull;  // what peers read in the CMA probe

}  // namespace

// Which node this process is on: the kernel instance (boot id) and host
// name; with a network transport, CADRT_RANKS_PER_NODE=k makes ranks
// 0..k-1 one node, k..2k-1 the next, ... (one machine as several nodes).
static uint64_t node_key(int rank, bool has_net) {
  long k;
  if (has_net && env_long("CADRT_RANKS_PER_NODE", &k) && k > 0) return 0x8000000000000000ull | (rank / k);
  std::string id;
  if (FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char buf[64] = {};
    if (fgets(buf, sizeof buf, f)) id = buf;
    fclose(f);
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  id += host;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  return h & 0x7fffffffffffffffull;
}

// The ranks on this one's node (nlocal, remote_, node_index_), from
// every rank's node key: *leader, the first of them, and its pid.
int Runtime::find_node(uint32_t *leader_out, int32_t *leader_pid) {
  const uint32_t n = static_cast<uint32_t>(boot_.size);
  const uint32_t rank = static_cast<uint32_t>(boot_.rank);
  struct Who {
    uint64_t node;
    int32_t pid, pad;
  };
  std::vector<Who> who(n);
  const Who mine_who = {node_key(boot_.rank, boot_.has_net), getpid(), 0};
  if (boot_.allgather(boot_.ctx, &mine_who, who.data(), sizeof mine_who))
    return set_error(-EIO, "joining the job: the allgather failed");
  uint32_t leader = rank, nodes = 0;
  nlocal = 0;
  remote_.assign(n, 0);
  for (uint32_t q = 0; q < n; q++) {
    bool first = true;
    for (uint32_t p = 0; p < q && first; p++) first = who[p].node != who[q].node;
    if (first && who[q].node == who[rank].node) node_index_ = nodes;
    nodes += first;
    if (who[q].node == who[rank].node) {
      leader = std::min(leader, q);
      nlocal++;
    } else {
      remote_[q] = 1;
    }
  }
  if (nodes > 1 && !boot_.has_net)
    return set_error(-ENOTSUP, "joining the job: its ranks are on " + std::to_string(nodes) +
                                   " nodes; cadrt_init_job runs a job on one machine (across nodes: "
                                   "cadrt_init_job_net, or cadrt_init_mpi under MPI)");
  *leader_out = leader;
  *leader_pid = who[leader].pid;
  return 0;
}

// Under a bootstrap: the first rank of each node creates that node's
// segment; the others open it through /proc/<pid>/fd/<fd> (as the same
// user, this needs no more rights than reading the file).  A segment has
// the slots of every rank of the job; only its node's are used.
int Runtime::join_bootstrap() {
  const uint32_t n = static_cast<uint32_t>(boot_.size);
  const uint32_t rank = static_cast<uint32_t>(boot_.rank);
  uint32_t leader = rank;
  int32_t leader_pid = 0;
  if (int err = find_node(&leader, &leader_pid)) return err;
  struct Where {
    int32_t fd, ok, err, pad;
  };
  std::vector<Where> all(n);
  std::string error;
  int fd = -1;
  Where mine = {-1, 1, 0, 0};
  if (rank == leader) {
    fd = memfd_create("cadrt-job", MFD_CLOEXEC);
    if (fd < 0 || !seg.map(fd, true, n, &error)) {
      mine.ok = 0;
      mine.err = errno ? errno : ENOMEM;
    }
    mine.fd = fd;
  }
  if (boot_.allgather(boot_.ctx, &mine, all.data(), sizeof mine))
    return set_error(-EIO, "joining the job: the allgather failed");
  bool all_ok = true;
  for (uint32_t q = 0; q < n; q++) all_ok &= all[q].ok != 0;
  if (!all_ok) {
    if (fd >= 0) close(fd);
    seg.unmap();
    for (uint32_t q = 0; q < n; q++)
      if (!all[q].ok)
        return set_error(-ENOMEM, "joining the job: rank " + std::to_string(q) +
                                      " could not create its node's shared segment: " +
                                      (q == rank && !error.empty() ? error : std::string(strerror(all[q].err))));
  }
  if (rank != leader) {
    const std::string path = "/proc/" + std::to_string(leader_pid) + "/fd/" + std::to_string(all[leader].fd);
    const int own = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (own < 0 || !seg.map(own, false, n, &error)) {
      mine.ok = 0;
      mine.err = errno;
      if (error.empty()) error = path + ": " + strerror(errno);
    }
    if (own >= 0) close(own);
  }
  // Everyone mapped (or says why not) before the leaders let go of the file.
  if (boot_.allgather(boot_.ctx, &mine, all.data(), sizeof mine))
    return set_error(-EIO, "joining the job: the allgather failed");
  if (fd >= 0) close(fd);
  for (uint32_t r = 0; r < n; r++)
    if (!all[r].ok) {
      seg.unmap();
      return set_error(-EACCES, "joining the job: rank " + std::to_string(r) +
                                    " could not open its node's shared segment" +
                                    (r == rank && !error.empty() ? ": " + error : std::string()) +
                                    " (are the ranks of a node in one kernel and as one user?)");
    }
  seg.set_members(nlocal);
  return 0;
}

int Runtime::setup_world() {
  long fd = -1, rank = 0, size = 1;
  const bool job = env_long("CADRT_JOB_FD", &fd);
  if (job && (!env_long("CADRT_RANK", &rank) || !env_long("CADRT_SIZE", &size) || size < 1 || rank < 0 ||
              rank >= size))
    return set_error(-EINVAL, "CADRT_JOB_FD is set but CADRT_RANK and CADRT_SIZE are not a rank and a size");
  std::string error;
  if (booted_) {
    rank = boot_.rank;
    size = boot_.size;
    if (int err = join_bootstrap()) return err;
  } else if (job) {
    if (!seg.map(static_cast<int>(fd), false, static_cast<uint32_t>(size), &error))
      return set_error(-EINVAL, "joining the job: " + error);
  } else {
    // A world of one: the same code paths over a private segment.
    const int own = memfd_create("cadrt-single", MFD_CLOEXEC);
    if (own < 0 || !seg.map(own, true, 1, &error)) {
      if (own >= 0) close(own);
      return set_error(-ENOMEM, "creating the shared segment: " + (error.empty() ? strerror(errno) : error));
    }
    close(own);
  }
  me = static_cast<uint32_t>(rank);
  nep = static_cast<uint32_t>(size);
  if (!booted_) {
    nlocal = nep;
    remote_.clear();
    node_index_ = 0;
  }
  RankInfo &mine = seg.rank(me);
  mine.pid.store(getpid(), std::memory_order_relaxed);
  mine.tid.store(static_cast<int32_t>(gettid()), std::memory_order_relaxed);
  mine.probe_addr = reinterpret_cast<uint64_t>(&g_probe_word);
  my_place(mine.place);
  mine.place[0] = static_cast<int32_t>(node_index_);
  // A member from here: cadrun's pipe closes if this process runs another
  // program (exec) before cadrt_finalize, and cadrun tells the job.
  life_fd_ = -1;
  long life = -1;
  struct stat st;
  if (job && env_long("CADRT_LIFE_FD", &life) && life >= 0 && life <= INT32_MAX &&
      fstat(static_cast<int>(life), &st) == 0 && S_ISFIFO(st.st_mode)) {
    life_fd_ = static_cast<int>(life);
    set_life_cloexec(true);
  }
  mine.state.store(kAlive, std::memory_order_release);
  if (int err = meet()) return err;
  places_.assign(nep, {0, -1, -1, -1});
  if (nlocal < nep) {
    // Ranks of other nodes are not in the segment: gather.
    std::array<int32_t, 4> p = {mine.place[0], mine.place[1], mine.place[2], mine.place[3]};
    if (boot_.allgather(boot_.ctx, p.data(), places_.data(), sizeof p))
      return set_error(-EIO, "joining the job: the allgather failed");
  } else {
    for (uint32_t i = 0; i < nep; i++)
      for (int k = 0; k < 4; k++) places_[i][static_cast<size_t>(k)] = seg.rank(i).place[k];
  }
  return 0;
}

// The node's ranks meet (Segment::barrier()); -EPIPE if one of them is
// gone and never will.
int Runtime::meet() {
  const int64_t r = seg.barrier();
  if (r < 0) return 0;
  return set_error(-EPIPE, "joining the job: rank " + std::to_string(r) +
                               " left it before cadrt_init ended (it was killed, exited, or never called cadrt_init)");
}

// Whether process_vm_readv works between the job's processes: each reads
// a word of the next rank; one failure turns it off for all.
int Runtime::probe_cma() {
  cma = false;
  if (nlocal == 1) return 0;
  const char *want = env("CADRT_CMA");
  const bool off = want && strcmp(want, "0") == 0;
  // Every rank meets both barriers, whatever its own CADRT_CMA says: a
  // rank with CMA off that skipped the first would meet the others' first
  // at its second and leave them waiting in their second for ever.  One
  // rank's "0" turns the single copy off for the node.
  if (off)
    seg.header().cma_denied.store(1);
  else  // Yama's ptrace_scope 1 lets only ancestors attach: allow the job.
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  if (int err = meet()) return err;
  if (!off) {
    uint32_t peer = (me + 1) % nep;
    while (remote(peer)) peer = (peer + 1) % nep;  // the next rank of this node
    uint64_t word = 0;
    struct iovec l = {&word, sizeof word};
    struct iovec r = {reinterpret_cast<void *>(seg.rank(peer).probe_addr), sizeof word};
    const pid_t pid = seg.rank(peer).pid.load();
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(sizeof word) || word != g_probe_word) {
      seg.header().cma_errno.store(errno ? errno : EIO);
      seg.header().cma_denied.store(1);
    }
  }
  if (int err = meet()) return err;
  cma = !seg.header().cma_denied.load();
  if (!cma && verbose && me == 0 && !off) {
    if (const int e = seg.header().cma_errno.load())
      fprintf(stderr, "cadrt: notice: process_vm_readv is not permitted here (%s): large messages are copied through shared memory\n",
              strerror(e));
    else  // (no probe failed: a rank's CADRT_CMA=0)
      fprintf(stderr, "cadrt: notice: CADRT_CMA=0 on another rank of this node: large messages are copied through shared memory\n");
  }
  return 0;
}

}  // namespace cadrt
