/* rt_bench - cadrt against Open MPI's own collectives, in the same
 * processes: run it under mpirun with LD_PRELOAD=libcadmpi.so, and MPI_I*
 * go through cadrt while PMPI_I* and the blocking PMPI_* are Open MPI's,
 * interleaved repetition by repetition.
 *
 *   mpirun -n 2 -x LD_PRELOAD=build/lib/libcadmpi.so -x CADRT_ENGINE=signal \
 *       rt_bench --json bench/results/rt-signal.json
 *
 * Sizes: "bytes" is the size of the largest buffer argument of one rank:
 * the broadcast or reduced vector; alltoall's send buffer (bytes / P to each
 * peer); gather's and allgather's receive buffer and scatter's send buffer
 * (bytes / P from or to each rank); reduce_scatter_block's send buffer;
 * ialltoall_inplace's receive buffer (MPI_IN_PLACE: the input is there).
 * Reductions are MPI_SUM on doubles (of 1.0), the rest MPI_BYTE; a count
 * that would be 0 is 1.
 *
 * Figures, for every collective and size 1 B - 4 MiB:
 *   latency <coll> <size> <of>    microseconds per call + wait (OSU: the
 *                                 mean over ranks of the mean over
 *                                 iterations), of = cadrt (MPI_I*),
 *                                 openmpi (PMPI_I*), cadrt-blocking
 *                                 (MPI_Bcast, ...: what an unmodified
 *                                 program mostly calls) and
 *                                 openmpi-blocking (PMPI_Bcast, ...)
 *   latency ratio <coll> <size>   cadrt / openmpi, the same repetition
 *   latency ratio blocking ...    cadrt-blocking / openmpi-blocking
 *   latency <coll> <size> cadrt-persistent, openmpi-persistent
 *                                 the persistent forms (MPIX_*_init, made
 *                                 once outside the timing): MPI_Start +
 *                                 MPI_Wait (PMPI_Start + PMPI_Wait)
 *   latency ratio persistent ...  cadrt-persistent / openmpi-persistent
 *   latency ratio persistent/nonblocking ...
 *                                 cadrt-persistent / cadrt: what selecting,
 *                                 instantiating, verifying and registering
 *                                 once at init saves per call
 * and for ibcast, iallreduce, ialltoall and igather:
 *   overlap <coll> <size> <of>    the OSU overlap: compute for the pure
 *                                 latency of the same implementation
 *                                 between the call and the wait, no test
 *                                 calls; 100 - 100 (overall - compute) /
 *                                 pure, clamped to 0..100, compute the
 *                                 time the computation took, without the
 *                                 test calls (as OSU's tcomp - test_time;
 *                                 not the time asked for, which the loop,
 *                                 reading the clock every 100 steps,
 *                                 overshoots by about 0.3 us a piece)
 *   beyond <coll> <size> <of> [8 tests]
 *                                 from 16 KiB: that run's overall -
 *                                 compute, us, unclamped: the time the
 *                                 caller loses to the collective beside
 *                                 its computation (the test calls'
 *                                 included), which the percentage
 *                                 divides by a pure latency that differs
 *                                 between implementations and settings:
 *                                 a faster pure latency makes the same
 *                                 time lost a smaller overlap
 *   overlap ... <of> 8 tests      the same with the computation cut in 8
 *                                 pieces and a test call after each (OSU's
 *                                 -t), which lets a progress-in-calls
 *                                 implementation move
 *   overlap ibcast <size> <of>, root <N> ns late
 *                                 at 64 KiB and 1 MiB: the OSU overlap
 *                                 (no tests) with rank 0, the root, leaving
 *                                 each barrier N ns (300, 3000) after the
 *                                 others (it spins, untimed), against the
 *                                 pure latency without that: ranks never
 *                                 leave a barrier at once, and a single copy
 *                                 overlaps only if the later rank makes it
 *   overlap cap <coll> <size>     from 16 KiB: the physical cap of that overlap with no
 *                                 test calls: 100 - 100 floor / pure (cadrt's
 *                                 pure latency), floor = the CPU time the
 *                                 collective's copies (and its reduction)
 *                                 take, spread over the P CPUs, which no
 *                                 user-space engine can hide while every
 *                                 rank computes (cad.ko copies once between
 *                                 pinned pages, a plain memcpy: kbench's
 *                                 cap for the kernel engine prices a
 *                                 transfer so).  A transfer of k bytes costs
 *                                 move(k) = the cheaper of a single copy
 *                                 (process_vm_readv of rank 0's memory by
 *                                 rank 1) and two copies through shared
 *                                 memory (rank 0 copies in, by memcpy or
 *                                 non-temporal stores, rank 1 out, as
 *                                 cadrt's lanes do, each over lines the
 *                                 other CPU touched last, not two memcpys
 *                                 within one process, 3x cheaper below
 *                                 256 KiB, which would put the caps too
 *                                 high), timed here (the
 *                                 best of 5, in each repetition before
 *                                 its pure latencies); per CPU:
 *                                 ibcast (P-1)/P x move(n); ialltoall
 *                                 (P-1) x move(n/P) + memcpy(n/P) (the own
 *                                 block); iallreduce (reduce-scatter +
 *                                 allgather) 2 x move(m) + sum(m), m = n
 *                                 (P-1)/P (a sum into a third buffer needs
 *                                 no copy of sendbuf; cadrt's algorithms
 *                                 copy m more); igather (P-1)/P x
 *                                 move(n/P).  A time-based computation does
 *                                 not see what an interrupt takes from it,
 *                                 so an engine that progresses in one can
 *                                 measure above the cap.
 * Each iteration starts after an untimed barrier, so that every rank posts
 * together and a rank late from the previous iteration does not hide the
 * overlap of the others. Iteration counts are calibrated once per
 * collective and size (about 10 ms of work per measurement, 3 - 500).
 * BENCH_QUICK=1: 3 repetitions instead of 7, fewer sizes; BENCH_QUICK=2:
 * one repetition of those (what a test of the report's form needs).
 * BENCH_LABEL=name: the engine's name in the title and the JSON, for a run
 * with other settings (the Makefile's thread-nosplit: CADRT_SPLIT=0).
 * BENCH_ONLY=ibcast:65536 measures one collective (and, after the colon,
 * one size) alone, for studying it; the JSON then holds only that.
 * BENCH_PHASES=1, for studying too: each rank prints to stderr, for each
 * overlap measurement, its mean time in the start, the computation and
 * the wait (the clock read around each, which the figures then include).
 * BENCH_SKEW_NS=N, for studying too: rank 0 leaves each barrier N ns after
 * the others (it spins, untimed), as a root late by that much would.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <mpi-ext.h> /* Open MPI 4.1's MPIX_*_init: persistent collectives */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bench_mpi.h"
#include "bench_out.h"

/* ALLTOALL_INPLACE: ialltoall with MPI_IN_PLACE, the receive buffer
 * holding the input (the standard algorithms' in-place forms; Open MPI
 * exchanges block by block through a temporary buffer): latency figures
 * only. */
enum coll { BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL, REDUCE_SCATTER, BARRIER, ALLTOALL_INPLACE,
	    NCOLL };
static const char *cname[] = { "ibcast",    "ireduce",   "iallreduce", "igather", "iscatter",
			       "iallgather", "ialltoall", "ireduce_scatter_block", "ibarrier", "ialltoall_inplace" };
enum impl { CADRT, OMPI, OMPI_BLOCKING, CADRT_PERSISTENT, OMPI_PERSISTENT, CADRT_BLOCKING, NIMPL };
static const char *iname[] = { "cadrt",		"openmpi",	      "openmpi-blocking",
				"cadrt-persistent", "openmpi-persistent", "cadrt-blocking" };
static int g_rank, g_size;
static double g_skew; /* seconds, BENCH_SKEW_NS */
static int g_phases; /* BENCH_PHASES */
static const int late_ns[2] = { 300, 3000 };
static char *g_send, *g_recv;
#define MAXB (4u << 20)

static int cnt(size_t bytes, size_t elem, int split)
{
	size_t n = bytes / elem / (split ? (size_t)g_size : 1);
	return n ? (int)n : 1;
}

/* Posts one collective; blocking, runs it; persistent, makes its request
 * (MPIX_*_init, Open MPI 4.1's name for MPI-4's MPI_*_init), which
 * measure() starts. */
#define POST(Name, name, ...)                                                                      \
	(im == OMPI_BLOCKING	  ? PMPI_##Name(__VA_ARGS__)                                        \
	 : im == CADRT_BLOCKING	  ? MPI_##Name(__VA_ARGS__)                                         \
	 : im == CADRT		  ? MPI_I##name(__VA_ARGS__, r)                                     \
	 : im == OMPI		  ? PMPI_I##name(__VA_ARGS__, r)                                    \
	 : im == CADRT_PERSISTENT ? MPIX_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, r)               \
				  : PMPIX_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, r))
static void post(enum coll c, size_t bytes, enum impl im, MPI_Request *r)
{
	const MPI_Comm w = MPI_COMM_WORLD;
	const int b = cnt(bytes, 1, 0), d = cnt(bytes, 8, 0), bp = cnt(bytes, 1, 1), dp = cnt(bytes, 8, 1);

	*r = MPI_REQUEST_NULL;
	switch (c) {
	case BCAST:
		POST(Bcast, bcast, g_recv, b, MPI_BYTE, 0, w);
		break;
	case REDUCE:
		POST(Reduce, reduce, g_send, g_recv, d, MPI_DOUBLE, MPI_SUM, 0, w);
		break;
	case ALLREDUCE:
		POST(Allreduce, allreduce, g_send, g_recv, d, MPI_DOUBLE, MPI_SUM, w);
		break;
	case GATHER:
		POST(Gather, gather, g_send, bp, MPI_BYTE, g_recv, bp, MPI_BYTE, 0, w);
		break;
	case SCATTER:
		POST(Scatter, scatter, g_send, bp, MPI_BYTE, g_recv, bp, MPI_BYTE, 0, w);
		break;
	case ALLGATHER:
		POST(Allgather, allgather, g_send, bp, MPI_BYTE, g_recv, bp, MPI_BYTE, w);
		break;
	case ALLTOALL:
		POST(Alltoall, alltoall, g_send, bp, MPI_BYTE, g_recv, bp, MPI_BYTE, w);
		break;
	case ALLTOALL_INPLACE:
		POST(Alltoall, alltoall, MPI_IN_PLACE, bp, MPI_BYTE, g_recv, bp, MPI_BYTE, w);
		break;
	case REDUCE_SCATTER:
		POST(Reduce_scatter_block, reduce_scatter_block, g_send, g_recv, dp, MPI_DOUBLE, MPI_SUM, w);
		break;
	default:
		POST(Barrier, barrier, w);
		break;
	}
}

static int ours(enum impl im)
{
	return im == CADRT || im == CADRT_PERSISTENT || im == CADRT_BLOCKING;
}

static void finish(enum impl im, MPI_Request *r)
{
	if (im != OMPI_BLOCKING && im != CADRT_BLOCKING)
		(ours(im) ? MPI_Wait : PMPI_Wait)(r, MPI_STATUS_IGNORE);
}

/* Computes for seconds, with tests test calls spread over it: tests pieces
 * of seconds / tests each, a test call after each, as OSU's
 * do_compute_and_probe does.  The time in the tests is not computation
 * (OSU subtracts it too): each piece runs for its own share, not to a
 * deadline from the start, so that a test that copies does not eat into the
 * computation after it and credit its implementation with overlap it does
 * not have. */
static double compute(double seconds, int tests, enum impl im, MPI_Request *r)
{
	const int pieces = tests ? tests : 1;
	volatile double x = 1;
	double computed = 0;

	for (int k = 0; k < pieces; k++) {
		const double start = MPI_Wtime(), end = start + seconds / pieces;
		double now;
		int flag;

		while ((now = MPI_Wtime()) < end)
			for (int i = 0; i < 100; i++)
				x = x * 1.0000001 + 1e-9;
		computed += now - start;
		if (tests && *r != MPI_REQUEST_NULL)
			(ours(im) ? MPI_Test : PMPI_Test)(r, &flag, MPI_STATUS_IGNORE);
	}
	return computed;
}

static double mean_over_ranks(double t)
{
	double sum;

	PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return sum / g_size;
}

/* Mean seconds per collective over ranks, with compute_s of work (and
 * tests test calls) between call and wait when compute_s > 0; *computed
 * (if not NULL): the mean seconds of it that were computation. */
static double measure(enum coll c, size_t bytes, enum impl im, int iters, double compute_s, int tests,
		      double *computed)
{
	const int persistent = im == CADRT_PERSISTENT || im == OMPI_PERSISTENT;
	MPI_Request r;
	double t = 0, comp = 0, start_s = 0, wait_s = 0;

	if (persistent) /* made once, not timed: what persistence is for */
		post(c, bytes, im, &r);
	for (int i = -2; i < iters; i++) { /* two warm: instances cached, pages touched */
		double t0 = 0;

		if (i >= 0) {
			PMPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			if (g_rank == 0 && g_skew > 0) { /* untimed: rank 0 comes late */
				const double b = t0;

				while ((t0 = MPI_Wtime()) - b < g_skew)
					;
			}
		}
		const double tp = g_phases ? MPI_Wtime() : 0;
		if (persistent)
			(ours(im) ? MPI_Start : PMPI_Start)(&r);
		else
			post(c, bytes, im, &r);
		const double tc = g_phases ? MPI_Wtime() : 0;
		const double spent = compute_s > 0 ? compute(compute_s, tests, im, &r) : 0;

		const double tw = g_phases ? MPI_Wtime() : 0;
		finish(im, &r);
		if (i >= 0) {
			t += MPI_Wtime() - t0;
			comp += spent;
			if (g_phases) {
				start_s += tc - tp;
				wait_s += MPI_Wtime() - tw;
			}
		}
	}
	if (g_phases && compute_s > 0)
		fprintf(stderr, "rt_bench: %s %zu %s, %d tests, rank %d: start %.2f us, compute %.2f, wait %.2f, overall %.2f\n",
			cname[c], bytes, iname[im], tests, g_rank, start_s / iters * 1e6, comp / iters * 1e6,
			wait_s / iters * 1e6, t / iters * 1e6);
	if (persistent)
		(ours(im) ? MPI_Request_free : PMPI_Request_free)(&r);
	if (computed)
		*computed = mean_over_ranks(comp / iters);
	return mean_over_ranks(t / iters);
}

/* About budget seconds of iterations of the slower implementation, the
 * same count on every rank. */
static int calibrate(enum coll c, size_t bytes, double budget)
{
	double t = measure(c, bytes, CADRT, 3, 0, 0, NULL), u = measure(c, bytes, OMPI, 3, 0, 0, NULL), m;

	t = t > u ? t : u;
	PMPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	const double n = budget / (m + 5e-6);
	return n < 3 ? 3 : n > 500 ? 500 : (int)n;
}

/* Rank 0's pid and send buffer, for rank 1's timed reads. */
static pid_t g_pid0;
static uintptr_t g_send0;

/* The best of 5 timings of op(bytes) on rank `on` (-1: every rank), as
 * rank `from` measured it: the same figure on every rank. */
static double best_of_5(void (*op)(size_t), size_t bytes, int on, int from)
{
	double best = 1e9;

	if (on < 0 || g_rank == on)
		for (int i = 0; i < 5; i++) {
			const double t0 = MPI_Wtime();

			op(bytes);
			const double t = MPI_Wtime() - t0;

			if (t < best)
				best = t;
		}
	PMPI_Bcast(&best, 1, MPI_DOUBLE, from, MPI_COMM_WORLD);
	return best;
}

/* Rank 1 reads bytes of rank 0's memory with process_vm_readv; memcpy's if
 * the system does not permit it. */
static void cma_read(size_t bytes)
{
	struct iovec l = { g_recv, bytes }, r = { (void *)g_send0, bytes };

	if (process_vm_readv(g_pid0, &l, 1, &r, 1, 0) != (ssize_t)bytes)
		memcpy(g_recv, g_send, bytes);
}

static void copy_once(size_t bytes)
{
	memcpy(g_recv, g_send, bytes);
	__asm__ volatile("" ::"r"(g_recv) : "memory");
}

/* Sums bytes of doubles into others. */
static void sum_once(size_t bytes)
{
	double *a = (double *)g_recv;
	const double *b = (const double *)g_send;

	for (size_t k = 0; k < bytes / 8; k++)
		a[k] += b[k];
	__asm__ volatile("" ::"r"(a) : "memory");
}

/* Seconds for rank 1 to read bytes of rank 0's memory (the best of 5),
 * the same on every rank. */
static double read_time(size_t bytes)
{
	return best_of_5(cma_read, bytes, 1, 1 % g_size);
}

/* Seconds to memcpy bytes within a rank (the best of 5). */
static double copy_time(size_t bytes)
{
	return best_of_5(copy_once, bytes, -1, 0);
}

/* Seconds to sum bytes of doubles into others (the best of 5). */
static double sum_time(size_t bytes)
{
	return best_of_5(sum_once, bytes, -1, 0);
}

/* Rank 0's shared window of MAXB bytes (page-aligned), which rank 1 maps
 * too; NULL when the two do not share memory (then two private memcpys
 * stand in). */
static char *g_shm;

/* memcpy with non-temporal stores (dst 16-byte aligned): the lines go to
 * memory and leave no copy in this CPU's cache for the other to fetch. */
static void *stream_copy(void *dst, const void *src, size_t bytes)
{
#if defined(__SSE2__)
	size_t i = 0;

	for (; i + 16 <= bytes; i += 16)
		_mm_stream_si128((__m128i *)((char *)dst + i), _mm_loadu_si128((const __m128i *)((const char *)src + i)));
	_mm_sfence();
	memcpy((char *)dst + i, (const char *)src + i, bytes - i);
	return dst;
#else
	return memcpy(dst, src, bytes);
#endif
}

static void timed_copy(void *(*copy)(void *, const void *, size_t), char *dst, const char *src, size_t bytes,
		       double *best)
{
	const double t0 = MPI_Wtime();

	copy(dst, src, bytes);
	__asm__ volatile("" ::"r"(dst) : "memory");
	const double t = MPI_Wtime() - t0;

	*best = t < *best ? t : *best;
}

/* Seconds of CPU time two copies through shared memory take for bytes
 * from rank 0 to rank 1, as a transport between them makes them: rank 0
 * copies in, over lines rank 1 read last; then rank 1 copies out, lines
 * rank 0 wrote last; each timed by its rank (the best of 5).  The cheaper
 * of two ways to copy in: memcpy, and non-temporal stores (which spare
 * the other CPU's cache the lines, and cost the copy out a trip to
 * memory).  The same figure on every rank.  Not two memcpys of one
 * process, which cost a third of that below 256 KiB: moving lines between
 * the CPUs' caches is a price any transport pays. */
static double lanes_time(size_t bytes)
{
	void *(*const in_copy[2])(void *, const void *, size_t) = { memcpy, stream_copy };
	double best = 1e9;

	if (!g_shm || g_size < 2)
		return 2 * copy_time(bytes);
	for (int how = 0; how < 2; how++) {
		double in = 1e9, out = 1e9;

		for (int i = 0; i < 5; i++) {
			PMPI_Barrier(MPI_COMM_WORLD);
			if (g_rank == 0)
				timed_copy(in_copy[how], g_shm, g_send, bytes, &in);
			PMPI_Barrier(MPI_COMM_WORLD);
			if (g_rank == 1)
				timed_copy(memcpy, g_recv, g_shm, bytes, &out);
		}
		PMPI_Bcast(&in, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		PMPI_Bcast(&out, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
		best = in + out < best ? in + out : best;
	}
	return best;
}

/* Seconds a transfer of bytes between two ranks takes at the least: a
 * single copy, or two copies through shared memory. */
static double move_time(size_t bytes)
{
	const double single = read_time(bytes), two = lanes_time(bytes);

	return single < two ? single : two;
}

/* The CPU time per rank the collective's copies (and reduction) take at
 * the least: see the header. */
static double floor_time(enum coll c, size_t bytes)
{
	const size_t p = (size_t)g_size;

	if (p < 2)
		return 0;
	switch (c) {
	case BCAST:
		return move_time(bytes) * (double)(p - 1) / (double)p;
	case ALLTOALL: /* and the own block, from sendbuf to recvbuf */
		return move_time(bytes / p) * (double)(p - 1) + copy_time(bytes / p);
	case ALLREDUCE: {
		const size_t m = bytes * (p - 1) / p;

		return 2 * move_time(m) + sum_time(m);
	}
	default: /* GATHER */
		return move_time(bytes / p) * (double)(p - 1) / (double)p;
	}
}

static double overlap(double overall, double computed, double pure)
{
	const double o = 100 - 100 * (overall - computed) / pure;
	return o < 0 ? 0 : o > 100 ? 100 : o;
}

/* "latency ratio <what><coll> <size>": the quotient of two latencies, of
 * = "numerator/denominator" in iname's words. */
static struct bench_fig *ratio_fig(const char *what, enum coll c, size_t b, const char *sz, const char *of,
				   const char *target)
{
	char name[112];

	snprintf(name, sizeof name, "latency ratio %s%s %s", what, cname[c], sz);
	return bench_add(name, "x", target, "\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, \"of\": \"%s\"",
			 cname[c], b, g_size, of);
}

int main(int argc, char **argv)
{
	const char *json = bench_json_arg(argc, argv, "rt_bench");
	const char *(*engine_fn)(void) = bench_mpi_init(&argc, &argv, "rt_bench", &g_rank, &g_size);
	const char *engine = getenv("BENCH_LABEL") ? getenv("BENCH_LABEL") : engine_fn();
	if (getenv("BENCH_SKEW_NS"))
		g_skew = 1e-9 * atof(getenv("BENCH_SKEW_NS"));
	g_phases = getenv("BENCH_PHASES") && strcmp(getenv("BENCH_PHASES"), "0");
	const int quick = getenv("BENCH_QUICK") ? atoi(getenv("BENCH_QUICK")) : 0;
	const int reps = quick >= 2 ? 1 : quick ? 3 : 7;
	const size_t all_sizes[] = { 1, 8, 64, 1024, 16384, 65536, 262144, 1 << 20, 4 << 20 };
	const size_t quick_sizes[] = { 8, 1024, 65536, 262144, 1 << 20 };
	const size_t *sizes = quick ? quick_sizes : all_sizes;
	const int nsizes = quick ? 5 : 9;
	const double budget = quick ? 0.004 : 0.01;
	const char *only = getenv("BENCH_ONLY");
	char only_coll[64] = "";
	long long only_bytes = -1;

	if (only && *only) {
		const char *colon = strchr(only, ':');
		const size_t n = colon ? (size_t)(colon - only) : strlen(only);

		snprintf(only_coll, sizeof only_coll, "%.*s", (int)n, only);
		if (colon)
			only_bytes = atoll(colon + 1);
	}
	g_send = aligned_alloc(4096, MAXB);
	g_recv = aligned_alloc(4096, MAXB);
	/* Doubles of 1.0: bytes of 1 would make the reductions' doubles
	 * denormal, and measure the FPU's slow path for them (both Open MPI's
	 * sums and ours ran 4-5x slower) rather than the collectives. */
	for (size_t i = 0; i < MAXB / sizeof(double); i++)
		((double *)g_send)[i] = 1.0;
	memset(g_recv, 0, MAXB);
	g_pid0 = getpid();
	g_send0 = (uintptr_t)g_send;
	PMPI_Bcast(&g_pid0, sizeof g_pid0, MPI_BYTE, 0, MPI_COMM_WORLD);
	PMPI_Bcast(&g_send0, sizeof g_send0, MPI_BYTE, 0, MPI_COMM_WORLD);
	MPI_Win shm_win = MPI_WIN_NULL;
	{
		/* Ranks 0 and 1 on one node: a window rank 0 allocates and
		 * both map, for lanes_time(). */
		MPI_Comm node;
		int node_rank = -1, local = 0, all_local;

		PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
		PMPI_Comm_rank(node, &node_rank);
		local = g_rank > 1 || node_rank == g_rank; /* ranks 0 and 1 first on their node */
		PMPI_Allreduce(&local, &all_local, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
		if (all_local && g_size >= 2) {
			MPI_Aint len;
			int unit;

			PMPI_Win_allocate_shared(node_rank == 0 ? MAXB + 4096 : 0, 1, MPI_INFO_NULL, node, &g_shm,
						 &shm_win);
			PMPI_Win_shared_query(shm_win, 0, &len, &unit, &g_shm);
			g_shm = (char *)(((uintptr_t)g_shm + 4095) & ~(uintptr_t)4095);
			if (g_rank < 2)
				memset(g_shm, 0, MAXB);
		}
		PMPI_Comm_free(&node);
	}

	struct cell {
		struct bench_fig *lat[NIMPL], *ratio, *ratio_blk, *ratio_pers, *ratio_start, *ov[2][2], *cap, *late[2][2],
			*beyond[2][2];
		/* ov, beyond: [impl][tests?]; late: [impl][which of late_ns] */
		int iters;
		double floor;
	} cells[NCOLL][9];
	memset(cells, 0, sizeof cells);
	for (int c = 0; c < NCOLL; c++)
		for (int s = 0; s < nsizes; s++) {
			struct cell *e = &cells[c][s];
			const size_t b = c == BARRIER ? 0 : sizes[s];
			const int targeted = c == BCAST || c == ALLREDUCE || c == ALLTOALL;
			char sz[32], name[112];

			if (c == BARRIER && s)
				continue;
			if (*only_coll && (strcmp(only_coll, cname[c]) || (only_bytes >= 0 && (long long)b != only_bytes)))
				continue;
			bench_size(b, sz, sizeof sz);
			for (int im = 0; im < NIMPL; im++) {
				snprintf(name, sizeof name, "latency %s %s %s", cname[c], sz, iname[im]);
				e->lat[im] = bench_add(name, "us", NULL,
						       "\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, \"of\": \"%s\"",
						       cname[c], b, g_size, iname[im]);
			}
			e->ratio = ratio_fig("", c, b, sz, "cadrt/openmpi",
					     !targeted ? NULL : b <= 1024 ? "<= 1.5" : b >= 262144 ? "<= 1.0" : NULL);
			e->ratio_blk = ratio_fig("blocking ", c, b, sz, "cadrt-blocking/openmpi-blocking", NULL);
			e->ratio_pers = ratio_fig("persistent ", c, b, sz, "cadrt-persistent/openmpi-persistent", NULL);
			e->ratio_start = ratio_fig("persistent/nonblocking ", c, b, sz, "cadrt-persistent/cadrt", NULL);
			if (c == BCAST || c == ALLREDUCE || c == ALLTOALL || c == GATHER) {
				/* (Smaller messages travel in the rings, not by a single copy.) */
				snprintf(name, sizeof name, "overlap cap %s %s", cname[c], sz);
				if (b >= 16384)
					e->cap = bench_add(name, "%", NULL,
							   "\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, "
							   "\"of\": \"cap\"",
							   cname[c], b, g_size);
				for (int im = 0; im < 2 && b >= 16384; im++)
					for (int t = 0; t < 2; t++) {
						snprintf(name, sizeof name, "beyond %s %s %s%s", cname[c], sz, iname[im],
							 t ? " 8 tests" : "");
						e->beyond[im][t] = bench_add(
							name, "us", NULL,
							"\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, "
							"\"of\": \"%s\", \"tests\": %d",
							cname[c], b, g_size, iname[im], t ? 8 : 0);
					}
				for (int im = 0; im < 2; im++)
					for (int t = 0; t < 2; t++) {
						snprintf(name, sizeof name, "overlap %s %s %s%s", cname[c], sz, iname[im],
							 t ? " 8 tests" : "");
						e->ov[im][t] = bench_add(
							name, "%", im == CADRT && !t && targeted && b >= 65536 ? ">= 40" : NULL,
							"\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, \"of\": \"%s\", "
							"\"tests\": %d",
							cname[c], b, g_size, iname[im], t ? 8 : 0);
					}
				for (int im = 0; im < 2 && c == BCAST && (b == 65536 || b == 1 << 20); im++)
					for (int k = 0; k < 2; k++) {
						snprintf(name, sizeof name, "overlap %s %s %s, root %d ns late", cname[c], sz,
							 iname[im], late_ns[k]);
						e->late[im][k] = bench_add(
							name, "%", NULL,
							"\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, \"of\": \"%s\", "
							"\"tests\": 0, \"late_ns\": %d",
							cname[c], b, g_size, iname[im], late_ns[k]);
					}
			}
		}

	for (int k = 0; k < reps; k++)
		for (int c = 0; c < NCOLL; c++)
			for (int s = 0; s < nsizes; s++) {
				struct cell *e = &cells[c][s];
				const size_t b = c == BARRIER ? 0 : sizes[s];
				double pure[NIMPL];

				if (!e->lat[0])
					continue;
				if (!e->iters)
					e->iters = calibrate((enum coll)c, b, budget);
				/* The floor in every repetition, beside the pure latency
				 * it divides: this VM's copies change speed from minute
				 * to minute (timed once per size, a cap would read below
				 * zero when the copies got faster after). */
				if (e->cap)
					e->floor = floor_time((enum coll)c, b);
				for (int im = 0; im < NIMPL; im++) {
					pure[im] = measure((enum coll)c, b, (enum impl)im, e->iters, 0, 0, NULL);
					bench_push(e->lat[im], pure[im] * 1e6);
				}
				bench_push(e->ratio, pure[CADRT] / pure[OMPI]);
				if (e->cap)
					bench_push(e->cap, 100 - 100 * e->floor / pure[CADRT]);
				bench_push(e->ratio_blk, pure[CADRT_BLOCKING] / pure[OMPI_BLOCKING]);
				bench_push(e->ratio_pers, pure[CADRT_PERSISTENT] / pure[OMPI_PERSISTENT]);
				bench_push(e->ratio_start, pure[CADRT_PERSISTENT] / pure[CADRT]);
				const int oi = e->iters / 2 > 3 ? e->iters / 2 : 3; /* overlap iterations */

				for (int im = 0; im < 2; im++)
					for (int t = 0; t < 2; t++)
						if (e->ov[im][t]) {
							double comp;
							const double all = measure((enum coll)c, b, (enum impl)im, oi,
										   pure[im], t ? 8 : 0, &comp);
							bench_push(e->ov[im][t], overlap(all, comp, pure[im]));
							if (e->beyond[im][t])
								bench_push(e->beyond[im][t], (all - comp) * 1e6);
						}
				for (int im = 0; im < 2; im++)
					for (int k = 0; k < 2; k++)
						if (e->late[im][k]) {
							const double keep = g_skew;

							g_skew = 1e-9 * late_ns[k];
							double comp;
							const double all = measure((enum coll)c, b, (enum impl)im, oi, pure[im], 0, &comp);
							g_skew = keep;
							bench_push(e->late[im][k], overlap(all, comp, pure[im]));
						}
			}

	if (g_rank == 0) {
		char title[160];

		snprintf(title, sizeof title,
			 "rt_bench: %d ranks, engine %s, cadrt (libcadmpi) against Open MPI in the same processes", g_size,
			 engine);
		bench_print(title);
		char method[1536];
		snprintf(method, sizeof method,
			 "%d ranks under mpirun; cadrt through libcadmpi (MPI_I*) against Open MPI's MPI_I* (PMPI_I*) "
			 "and blocking collectives (PMPI_*), interleaved in the same processes; bytes = the largest "
			 "buffer argument of a rank (alltoall, gather, scatter, allgather: bytes/P per peer); each "
			 "iteration after an untimed barrier, about 10 ms of iterations per measurement; latency: the "
			 "mean over ranks of the mean call+wait; overlap (OSU): compute for the pure latency between "
			 "call and wait, with no test calls or 8 spread over it, 100-100*(overall-compute)/pure, compute the "
			 "time the computation took without the test calls (OSU's tcomp - test_time); "
			 "its cap: 100-100*floor/pure, floor = the CPU time per rank of the collective's transfers "
			 "(each the cheaper of a process_vm_readv and two copies through shared memory by the two "
			 "ranks, timed), own-block copy "
			 "(alltoall) and reduction",
			 g_size);
		if (json && bench_write_json(json, "rt", engine, method))
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (shm_win != MPI_WIN_NULL)
		PMPI_Win_free(&shm_win);
	free(g_send);
	free(g_recv);
	MPI_Finalize();
	return 0;
}
