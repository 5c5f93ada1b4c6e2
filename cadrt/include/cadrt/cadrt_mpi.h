/* SPDX-License-Identifier: MIT */
/*
 * cadrt_mpi.h - cadrt under MPI (libcadrt_mpi.so; libcadrt itself does
 * not need MPI).  Call after MPI_Init.
 *
 * The ranks of the MPI job must share one machine: they talk through the
 * same shared-memory segment and single-copy transfers as under cadrun.
 * A job that spans nodes gets -ENOTSUP from cadrt_init_mpi (the MPI
 * point-to-point transport for remote peers is not built yet), and
 * libcadmpi.so then leaves every collective to MPI.
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
