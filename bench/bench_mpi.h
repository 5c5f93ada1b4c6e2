/* bench_mpi.h - the start of the MPI benchmark programs, which compare
 * cadrt (MPI_I* through LD_PRELOAD=libcadmpi.so) with Open MPI (PMPI_I*)
 * in the same processes. */
#ifndef CAD_BENCH_MPI_H
#define CAD_BENCH_MPI_H

#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* MPI_Init, the rank and size, and cadrt's engine name: a program run
 * without libcadmpi.so exits 2 with a message saying so. */
static inline const char *(*bench_mpi_init(int *argc, char ***argv, const char *prog, int *rank,
					   int *size))(void)
{
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	const char *(*engine)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "cadrt_engine");
	if (!engine) {
		if (*rank == 0)
			fprintf(stderr, "%s: run it with LD_PRELOAD=libcadmpi.so (cadrt is not loaded)\n", prog);
		MPI_Finalize();
		exit(2);
	}
	return engine;
}

#endif
