/* bench_cadrt.h - what the benchmarks under cadrun (seg_bench, alg_bench)
 * share: the world's barrier and a double's allreduce through cadrt, and a
 * time's median over iterations, the slowest rank's.  Header-only, as
 * bench_out.h. */
#ifndef CAD_BENCH_CADRT_H
#define CAD_BENCH_CADRT_H

#include "bench_out.h"
#include "cadrt/cadrt.h"

/* The program's name and this rank, for bench_die's message. */
static const char *bench_name = "bench";
static int bench_rank;

static void bench_die(const char *what) __attribute__((noreturn, unused));
static void bench_die(const char *what)
{
	fprintf(stderr, "%s: rank %d: %s: %s\n", bench_name, bench_rank, what, cadrt_error_message());
	exit(1);
}

/* cadrt_init with the thread engine unless CADRT_ENGINE says otherwise
 * (more ranks than cores: a progress thread answers a peer while its rank
 * is off the CPU); this rank and the world's size. */
static inline void bench_init(const char *name, int *rank, int *size)
{
	bench_name = name;
	setenv("CADRT_ENGINE", "thread", 0);
	if (cadrt_init())
		bench_die("cadrt_init");
	cadrt_comm_rank(cadrt_comm_world(), rank);
	cadrt_comm_size(cadrt_comm_world(), size);
	bench_rank = *rank;
}

static inline void bench_barrier(void)
{
	cadrt_request r;

	if (cadrt_ibarrier(cadrt_comm_world(), &r) || cadrt_wait(&r))
		bench_die("barrier");
}

static inline double bench_allreduce(double v, cadrt_op op)
{
	double out;
	cadrt_request r;

	if (cadrt_iallreduce(&v, &out, 1, CADRT_DOUBLE, op, cadrt_comm_world(), &r) || cadrt_wait(&r))
		bench_die("allreduce");
	return out;
}

/* The median of t[0..n) (sorted in place), the slowest rank's, on every
 * rank (a collective is done when its last rank is). */
static inline double bench_slowest_median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof t[0], bench_cmp);
	return bench_allreduce(n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, CADRT_MAX);
}

#endif
