// cadrt_mpi.cpp - cadrt_mpi.h: a cadrt job from an MPI communicator, and
// cadrt communicators from MPI ones.  Only PMPI_ entry points are called,
// so that libcadmpi.so, which interposes the MPI_ ones, can use this.
#include "cadrt/cadrt_mpi.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cadrt/cadrt_net.h"

namespace {

MPI_Comm g_given = MPI_COMM_NULL;  // the world given to init
MPI_Comm g_world = MPI_COMM_NULL;  // a dup of it, for our own traffic
int g_keyval = MPI_KEYVAL_INVALID;
unsigned long long g_last_id = 0;  // the highest communicator id this process agreed to

int allgather(void *ctx, const void *mine, void *all, size_t bytes) {
  MPI_Comm comm = *static_cast<MPI_Comm *>(ctx);
  return PMPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, comm);
}

// The network transport for ranks on other nodes: MPI point-to-point on
// g_world (a dup: our tags never meet the application's), ranks of the
// job being ranks of g_world.
static_assert(sizeof(MPI_Request) <= sizeof(void *), "an MPI_Request fits in a handle");

void *handle_of(MPI_Request q) {
  void *h = nullptr;
  memcpy(&h, &q, sizeof q);
  return h;
}

MPI_Request request_of(void *h) {
  MPI_Request q;
  memcpy(&q, &h, sizeof q);
  return q;
}

int net_isend(void *, int peer, int tag, const void *buf, size_t len, void **handle) {
  if (len > static_cast<size_t>(INT32_MAX)) return -EMSGSIZE;
  MPI_Request q;
  if (PMPI_Isend(buf, static_cast<int>(len), MPI_BYTE, peer, tag, g_world, &q) != MPI_SUCCESS) return -EIO;
  *handle = handle_of(q);
  return 0;
}

int net_irecv(void *, int peer, int tag, void *buf, size_t len, void **handle) {
  if (len > static_cast<size_t>(INT32_MAX)) return -EMSGSIZE;
  MPI_Request q;
  if (PMPI_Irecv(buf, static_cast<int>(len), MPI_BYTE, peer, tag, g_world, &q) != MPI_SUCCESS) return -EIO;
  *handle = handle_of(q);
  return 0;
}

int net_test(void *, void *handle, int *done) {
  MPI_Request q = request_of(handle);
  if (PMPI_Test(&q, done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -EIO;
  return 0;
}

int net_cancel(void *, void *handle) {
  MPI_Request q = request_of(handle);
  return PMPI_Cancel(&q) == MPI_SUCCESS ? 0 : -EIO;
}

int free_attr(MPI_Comm, int, void *value, void *) {
  cadrt_comm c = static_cast<cadrt_comm>(value);
  cadrt_comm_free(&c);
  return MPI_SUCCESS;
}

}  // namespace

extern "C" {

int cadrt_init_mpi(MPI_Comm world) {
  int inited = 0, rank = 0, size = 0, inter = 0;
  PMPI_Initialized(&inited);
  if (!inited || world == MPI_COMM_NULL) return -EINVAL;
  PMPI_Comm_test_inter(world, &inter);
  if (inter) return -EINVAL;
  PMPI_Comm_rank(world, &rank);
  PMPI_Comm_size(world, &size);
  PMPI_Comm_dup(world, &g_world);
  // Errors come back to the transport, which fails the collective.
  PMPI_Comm_set_errhandler(g_world, MPI_ERRORS_RETURN);
  // Ranks on other nodes (cadrt finds them) are reached by MPI
  // point-to-point on g_world.
  cadrt_net net = {};
  void *ub = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  net.tag_ub = found && ub ? *static_cast<int *>(ub) : 32767;
  net.isend = net_isend;
  net.irecv = net_irecv;
  net.test = net_test;
  net.cancel = net_cancel;
  int err = cadrt_init_job_net(rank, size, allgather, &g_world, &net);
  // The same result on every rank (a local failure, such as memory, is
  // everyone's).
  int worst = err;
  PMPI_Allreduce(&err, &worst, 1, MPI_INT, MPI_MIN, g_world);
  if (worst && !err) {
    cadrt_finalize();
    err = worst;
  }
  if (err) PMPI_Comm_free(&g_world);
  else g_given = world;
  return err;
}

int cadrt_comm_from_mpi(MPI_Comm comm, cadrt_comm *out) {
  if (!out) return -EINVAL;
  *out = nullptr;
  if (g_world == MPI_COMM_NULL || comm == MPI_COMM_NULL) return -EINVAL;
  if (comm == g_given) {
    // (An intracommunicator: init checked.  A dup of it is a communicator
    // of its own, with its own order of collectives.)
    *out = cadrt_comm_world();
    return 0;
  }
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return -ENOTSUP;
  if (g_keyval == MPI_KEYVAL_INVALID) PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_attr, &g_keyval, nullptr);
  void *value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, g_keyval, &value, &found);
  if (found) {
    *out = static_cast<cadrt_comm>(value);
    return 0;
  }
  // Members in comm's order, as ranks of the world.
  MPI_Group group, wgroup;
  int n = 0;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(g_world, &wgroup);
  PMPI_Group_size(group, &n);
  std::vector<int> ranks(static_cast<size_t>(n)), wranks(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) ranks[static_cast<size_t>(i)] = i;
  PMPI_Group_translate_ranks(group, n, ranks.data(), wgroup, wranks.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&wgroup);
  int ok = 1;
  for (int w : wranks) ok &= w != MPI_UNDEFINED;
  // An id no communicator shared by these processes has: above every id
  // any member agreed to before.
  const unsigned long long mine[2] = {g_last_id + 1, ok ? 0ull : 1ull};
  unsigned long long agreed[2] = {0, 0};
  PMPI_Allreduce(mine, agreed, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  g_last_id = agreed[0];
  if (agreed[1]) return -ENOTSUP;
  cadrt_comm c;
  if (int err = cadrt_comm_create(cadrt_comm_world(), n, wranks.data(), agreed[0], &c)) return err;
  PMPI_Comm_set_attr(comm, g_keyval, c);
  *out = c;
  return 0;
}

}  // extern "C"
