/* SPDX-License-Identifier: MIT */
/*
 * cadrt_mpi.h - cadrt under MPI (libcadrt_mpi.so; libcadrt itself does
 * not need MPI).  Call after MPI_Init.
 *
 * Ranks on one node talk through a shared-memory segment and single-copy
 * transfers, as under cadrun; ranks on other nodes through MPI
 * point-to-point on a duplicate of the world (cadrt_net.h says how, and
 * that those transfers progress while the application is inside cadrt).
 * CADRT_RANKS_PER_NODE=k makes one machine look like nodes of k ranks.
 */
#ifndef CADRT_MPI_H
#define CADRT_MPI_H

#include <mpi.h>

#include "cadrt/cadrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cadrt_init with the ranks of `world` (usually MPI_COMM_WORLD) as the
 * job; collective over world.  Every rank gets the same result. */
int cadrt_init_mpi(MPI_Comm world);

/* The cadrt communicator of an MPI intracommunicator whose processes are
 * in the world given to cadrt_init_mpi: that world itself, or one made
 * the first time and cached on comm (freed with it by MPI_Comm_free).
 * Collective over comm the first time. */
int cadrt_comm_from_mpi(MPI_Comm comm, cadrt_comm *out);

#ifdef __cplusplus
}
#endif

#endif /* CADRT_MPI_H */
