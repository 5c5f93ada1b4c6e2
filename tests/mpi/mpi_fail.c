/* SPDX-License-Identifier: MIT */
/*
 * mpi_fail.c - a failed collective under cadrt_init_mpi, with ranks on
 * other nodes (CADRT_RANKS_PER_NODE) or on this one.
 *
 *   mpirun -n P mpi_fail [COLL]       COLL: bcast (default) or alltoall
 *
 * Rank 1 passes another count to a collective of 8000 bytes per block
 * (large: a rendezvous between nodes, a single copy within one).  Rank 1
 * must get an error; every rank must finish (no hang); a rank that
 * completes without an error must have the right data; a rank that fails
 * overwrites its buffers (which are its own again) before the others go
 * on.  Then a barrier and an allreduce on the same communicator must work.
 * Prints "mpi_fail: ok" at rank 0; exit 1 on a wrong result.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cadrt/cadrt_mpi.h"

int main(int argc, char **argv)
{
	int rank, size, err, bad = 0, all_bad = 0;
	const int alltoall = argc > 1 && !strcmp(argv[1], "alltoall");
	cadrt_request req;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if ((err = cadrt_init_mpi(MPI_COMM_WORLD))) {
		fprintf(stderr, "mpi_fail: cadrt_init_mpi: %d %s\n", err, cadrt_error_message());
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const size_t n = rank == 1 ? 3000 : 2000, blocks = alltoall ? (size_t)size : 1;
	int32_t *send = malloc(n * blocks * sizeof *send), *recv = malloc(n * blocks * sizeof *recv);
	for (size_t b = 0; b < blocks; b++)
		for (size_t i = 0; i < n; i++) {
			send[b * n + i] = (int32_t)(rank * 100000 + (int)b * 1000 + (int)(i % 1000));
			recv[b * n + i] = rank == 0 && !alltoall ? send[b * n + i] : -1;
		}
	if (alltoall)
		err = cadrt_ialltoall(send, recv, n, CADRT_INT32, cadrt_comm_world(), &req);
	else
		err = cadrt_ibcast(recv, n, CADRT_INT32, 0, cadrt_comm_world(), &req);
	if (!err)
		err = cadrt_wait(&req);
	if (err) {
		printf("mpi_fail: rank %d: error as expected: %s\n", rank, cadrt_error_message());
		memset(send, 0xEE, n * blocks * sizeof *send);
		memset(recv, 0xEE, n * blocks * sizeof *recv);
	} else if (rank == 1) {
		fprintf(stderr, "mpi_fail: rank 1: the mismatched collective completed without an error\n");
		bad = 1;
	} else {
		for (size_t b = 0; b < blocks && !bad; b++)
			for (size_t i = 0; i < n; i++) {
				const int32_t want = alltoall ? (int32_t)((int)b * 100000 + rank * 1000 + (int)(i % 1000))
							      : (int32_t)(i % 1000);
				if (recv[b * n + i] != want) {
					fprintf(stderr, "mpi_fail: rank %d: element %zu of block %zu is %d, expected %d\n",
						rank, i, b, recv[b * n + i], want);
					bad = 1;
					break;
				}
			}
	}
	/* The communicator still works. */
	int one = 1, sum = 0;
	if (cadrt_ibarrier(cadrt_comm_world(), &req) || cadrt_wait(&req) ||
	    cadrt_iallreduce(&one, &sum, 1, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &req) || cadrt_wait(&req) ||
	    sum != size) {
		fprintf(stderr, "mpi_fail: rank %d: the collectives after the failure: %s (sum %d)\n", rank,
			cadrt_error_message(), sum);
		bad = 1;
	}
	MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	free(send);
	free(recv);
	cadrt_finalize();
	if (rank == 0 && !all_bad)
		printf("mpi_fail: ok\n");
	MPI_Finalize();
	return all_bad;
}
