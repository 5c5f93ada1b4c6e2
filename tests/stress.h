/* stress.h - what mpi_stress (tests/mpi) and rt_stress (tests/rt) share:
 * the random draws, the collectives' names, the counts drawn, and the
 * comparison's report.  Included once by each program. */
#ifndef CAD_TESTS_STRESS_H
#define CAD_TESTS_STRESS_H

#include <stddef.h>
#include <stdint.h>

/* xorshift64*: g_prog is the same on every rank (what is posted, in which
 * order), g_local differs (the order of completion). */
static uint64_t g_prog, g_local;
static uint32_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (uint32_t)((*s * 2685821657736338717ull) >> 32);
}
static int prog(int n) { return (int)(next(&g_prog) % (uint32_t)n); }
static int local(int n) { return (int)(next(&g_local) % (uint32_t)n); }

/* The seeds of both draws, from --seed and the rank. */
static void stress_seed(unsigned long seed, int rank)
{
	g_prog = seed * 0x9e3779b97f4a7c15ull + 1;
	g_local = (seed + 1000003ull * (uint64_t)(rank + 1)) * 0xbf58476d1ce4e5b9ull + 1;
}

enum coll { BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL, RSB, BARRIER, NCOLL };
static const char *cnames[NCOLL] = { "bcast", "reduce", "allreduce", "gather", "scatter",
				     "allgather", "alltoall", "reduce_scatter_block", "barrier" };

/* Elements per rank (per block); the last three, large, drawn less often
 * (a round stays short). */
static const int g_counts[] = { 0, 1, 2, 3, 17, 100, 256, 1000, 4096, 20000, 65536, 150000 };
#define NCOUNTS ((int)(sizeof g_counts / sizeof g_counts[0]))
static int draw_count(void) { return g_counts[prog(4) ? prog(NCOUNTS - 3) : prog(NCOUNTS)]; }

static size_t first_difference(const char *a, const char *b, size_t len)
{
	size_t k = 0;
	while (k < len && a[k] == b[k])
		k++;
	return k;
}

#endif
