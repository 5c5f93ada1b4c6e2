// cadrt_mpi.cpp - cadrt_mpi.h: a cadrt job from an MPI communicator, and
// cadrt communicators from MPI ones.  Only PMPI_ entry points are called,
// so that libcadmpi.so, which interposes the MPI_ ones, can use this.
#include "cadrt/cadrt_mpi.h"

#include <cerrno>
#include <cstdint>
#include <vector>

namespace {

MPI_Comm g_given = MPI_COMM_NULL;  // the world given to init
MPI_Comm g_world = MPI_COMM_NULL;  // a dup of it, for our own traffic
int g_keyval = MPI_KEYVAL_INVALID;
unsigned long long g_last_id = 0;  // the highest communicator id this process agreed to

int allgather(void *ctx, const void *mine, void *all, size_t bytes) {
  MPI_Comm comm = *static_cast<MPI_Comm *>(ctx);
  return PMPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, comm);
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
  // All on one machine?  The same answer everywhere: every rank's node
  // group is the whole world, or none's is.
  MPI_Comm node;
  PMPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  PMPI_Comm_size(node, &node_size);
  PMPI_Comm_free(&node);
  if (node_size != size) return -ENOTSUP;
  PMPI_Comm_dup(world, &g_world);
  int err = cadrt_init_job(rank, size, allgather, &g_world);
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
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return -ENOTSUP;
  if (comm == g_given) {
    // (A dup of it is a communicator of its own, with its own order of
    // collectives.)
    *out = cadrt_comm_world();
    return 0;
  }
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
