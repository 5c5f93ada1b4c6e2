/* seg_bench - the pipelined chain broadcast's time against its segment
 * size, beside the LogGP optimum from a ping-pong measured in the same run
 * (Figure 4 of Ma, Bosilca, Bouteiller, Goglin, Squyres, Dongarra, "Kernel
 * Assisted Collective Intra-node MPI Communication Among Multi-core and
 * Many-core CPUs", ICPP 2011).  cadrt's C API under cadrun, no MPI:
 *
 *   cadrun -n 3 --bind core seg_bench [--json FILE]
 *
 * Model: with P ranks, n bytes and segments of s bytes, the chain takes
 * P - 2 + ceil(n / s) segment steps of alpha + beta s each:
 *   T(s) = (P - 2 + ceil(n / s)) (alpha + beta s),
 *   s* = sqrt(n alpha / ((P - 2) beta)).
 * alpha (per message) and beta (per byte) are fitted by least squares on
 * the relative error (weights 1 / t^2, so that the microseconds of alpha
 * are not lost in the milliseconds of the 4 MiB point) to the one-way time
 * of a message between ranks 0 and 1, 4 KiB - 4 MiB: half the round trip
 * of a broadcast from rank 0 then one from rank 1 on a 2-rank communicator
 * (cadrt_comm_split), the same chain algorithm with one segment, so one
 * message of the same transport as the chain's segments (single copy
 * above 1984 bytes).
 *
 * Selection: each setting is CADRT_ALGORITHM_BCAST=bcast_chain_pipeline:
 * seg=S, which cadrt reads when it first meets a call of given arguments on
 * a communicator.  So every segment size gets a communicator of its own:
 * setenv, cadrt_comm_split(world, 0, rank) (a copy of the world), one
 * untimed broadcast of each n there (the instance is made, verified and
 * cached with that setting), unsetenv; the instances then stay with their
 * communicators, and the settings are interleaved within each repetition.
 * The 2-rank communicator of the ping-pong is made the same way with one
 * segment (seg=2^30).  Each repetition fits alpha and beta again, makes a
 * communicator at that fit's s* (rounded to a byte, kept in 4 KiB..n) and
 * times the broadcast there too, so every repetition holds a complete
 * figure.
 *
 * Timing: the broadcast (root 0) of n = 1 MiB and 4 MiB, call + wait, each
 * iteration after an untimed barrier of the world; a rank's median over
 * the iterations, the slowest rank's (the broadcast is done when the last
 * rank has the data).
 *
 * Engine: thread unless CADRT_ENGINE says otherwise.  With 3 ranks on 2
 * cores, ranks 0 and 2 share a core (--bind core is round robin), so a
 * rank is often descheduled while its neighbour in the chain waits for
 * it.  The thread engine's progress thread sleeps on a futex until a
 * message comes and answers it even while its main thread is off the
 * CPU; the main threads only wait for their own completion.  Nine full
 * runs of each engine on this 2-core VM, interleaved (the medians of the
 * curve's points, run against run): thread gave the steadiest curve (a
 * point's variation between runs: median 2-3.5 %, worst 7 %), poll the
 * next (median 2-3 %, worst 14-50 %, at 4 KiB: a rank progresses only
 * inside its own calls, so the two ranks of core 0 take turns at
 * sched_yield; 4 MiB in 4 KiB segments took 2.8-5.8 ms), signal the most
 * erratic at small segments (worst 22-54 %: 2.7-9.6 ms for the same; a
 * signal to a descheduled rank costs tens of microseconds here).  The
 * price: thread is 10-20 % slower than the others at 1 MiB (lock and
 * futex hand-offs), and its fitted alpha is the largest (10-12 us; poll
 * 2.4, signal 6), as its ping-pong pays a wake-up per message.
 * CADRT_ENGINE=poll (or signal) in cadrun's environment runs another.
 *
 * Figures (params bytes, seg, ranks, engine; every repetition):
 *   bcast <n> seg <s>                  measured us, s = 4 KiB .. n
 *   bcast <n> seg <s> / best           that over the best s of the
 *                                      same repetition
 *   model <n> seg <s>                  T(s), us
 *   pingpong <m>                       one-way us of an m-byte message
 *   alpha, beta                        the fit: us, ns/B
 *   model optimum <n>                  s*, bytes
 *   best measured <n>                  the s of the best time, bytes
 *   bcast <n> at model optimum         measured us at s*
 *   at model optimum / best <n>        the headline: the time at s* over
 *                                      the best measured time (below 1
 *                                      when s* beats every power of two)
 * BENCH_QUICK=1: 5 repetitions instead of 15, fewer iterations.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_cadrt.h"

#define SEG_MIN 4096u
#define NMAX (4u << 20)
#define NSEG 11 /* 4 KiB .. 4 MiB */
#define NPP 6	/* ping-pong sizes: 4 KiB .. 4 MiB, by 4 */
#define MAX_ITERS 64

static const size_t g_ns[] = { 1u << 20, 4u << 20 };
static int g_rank, g_size;
static char *g_buf;
static cadrt_comm g_world;

static void bcast(cadrt_comm c, size_t n, int root)
{
	cadrt_request r;

	if (cadrt_ibcast(g_buf, n, CADRT_BYTE, root, c, &r))
		bench_die("ibcast");
	if (strcmp(cadrt_request_algorithm(r), "bcast_chain_pipeline")) {
		fprintf(stderr, "seg_bench: rank %d: the broadcast runs %s, not bcast_chain_pipeline\n", g_rank,
			cadrt_request_algorithm(r));
		exit(1);
	}
	if (cadrt_wait(&r))
		bench_die("wait");
}

/* A copy of the world (color 0) or of some of it (color < 0: not a
 * member, NULL) whose broadcasts of the given sizes and roots run the
 * chain with segments of seg bytes.  Collective over the world. */
static cadrt_comm comm_with_seg(size_t seg, int color, const size_t *sizes, int nsizes, int roots)
{
	char v[64];
	cadrt_comm c;

	snprintf(v, sizeof v, "bcast_chain_pipeline:seg=%zu", seg);
	setenv("CADRT_ALGORITHM_BCAST", v, 1);
	if (cadrt_comm_split(g_world, color, g_rank, &c))
		bench_die("cadrt_comm_split");
	for (int i = 0; c && i < nsizes; i++)
		for (int root = 0; root < roots; root++)
			bcast(c, sizes[i], root); /* the instance: made now, with this setting */
	unsetenv("CADRT_ALGORITHM_BCAST");
	return c;
}

/* Seconds of a broadcast of n bytes from rank 0 on c: each iteration after
 * a world barrier; the slowest rank's median. */
static double time_bcast(cadrt_comm c, size_t n, int iters)
{
	double t[MAX_ITERS];

	for (int i = 0; i < iters; i++) {
		double t0;

		bench_barrier();
		t0 = bench_now();
		bcast(c, n, 0);
		t[i] = bench_now() - t0;
	}
	return bench_slowest_median(t, iters);
}

/* One-way seconds of an m-byte message, rank 0's measure, on every rank
 * (rank 2 and up wait in the allreduce meanwhile). */
static double pingpong(cadrt_comm pair, size_t m, int iters)
{
	double t = 0;

	if (pair) {
		bcast(pair, m, 0);
		bcast(pair, m, 1);
		const double t0 = bench_now();
		for (int i = 0; i < iters; i++) {
			bcast(pair, m, 0);
			bcast(pair, m, 1);
		}
		t = (bench_now() - t0) / (2.0 * iters);
	}
	return bench_allreduce(g_rank == 0 ? t : 0, CADRT_SUM);
}

static double model(double alpha, double beta, size_t n, size_t s)
{
	return (double)((size_t)g_size - 2 + (n + s - 1) / s) * (alpha + beta * (double)s);
}

int main(int argc, char **argv)
{
	const char *json = bench_json_arg(argc, argv, "cadrun -n 3 --bind core seg_bench");
	const int quick = getenv("BENCH_QUICK") && atoi(getenv("BENCH_QUICK"));
	const int reps = quick ? 5 : 15;
	bench_init("seg_bench", &g_rank, &g_size);
	g_world = cadrt_comm_world();
	if (g_size < 3) {
		if (g_rank == 0)
			fprintf(stderr, "seg_bench: needs at least 3 ranks (the model's P - 2 steps): cadrun -n 3\n");
		cadrt_finalize();
		return 2;
	}
	const char *engine = cadrt_engine();
	const double t_start = bench_now();
	g_buf = aligned_alloc(4096, NMAX);
	memset(g_buf, g_rank + 1, NMAX);

	/* The communicators: one per segment size, one pair for the ping-pong. */
	size_t segs[NSEG], pp[NPP];
	cadrt_comm by_seg[NSEG], pair;
	for (int k = 0; k < NSEG; k++) {
		segs[k] = (size_t)SEG_MIN << k;
		const size_t ns[2] = { g_ns[0], g_ns[1] };
		const int first = segs[k] <= g_ns[0] ? 0 : 1;

		by_seg[k] = comm_with_seg(segs[k], 0, ns + first, 2 - first, 1);
	}
	for (int k = 0; k < NPP; k++)
		pp[k] = (size_t)SEG_MIN << (2 * k);
	pair = comm_with_seg((size_t)1 << 30, g_rank < 2 ? 0 : -1, pp, NPP, 2);

	/* The figures. */
	struct per_n {
		struct bench_fig *time[NSEG], *ratio[NSEG], *model[NSEG], *opt, *best, *t_opt, *headline;
	} fn[2];
	struct bench_fig *f_pp[NPP], *f_alpha, *f_beta;
	char name[112], sz[32], ssz[32];
#define PARAMS "\"bytes\": %zu, \"seg\": %zu, \"ranks\": %d, \"engine\": \"%s\""
	for (int k = 0; k < NPP; k++) {
		snprintf(name, sizeof name, "pingpong %s", bench_size(pp[k], sz, sizeof sz));
		f_pp[k] = bench_add(name, "us", NULL, PARAMS, pp[k], pp[k], 2, engine);
	}
	f_alpha = bench_add("alpha", "us", NULL, "\"ranks\": 2, \"engine\": \"%s\"", engine);
	f_beta = bench_add("beta", "ns/B", NULL, "\"ranks\": 2, \"engine\": \"%s\"", engine);
	for (int j = 0; j < 2; j++) {
		const size_t n = g_ns[j];

		bench_size(n, sz, sizeof sz);
		memset(&fn[j], 0, sizeof fn[j]);
		for (int k = 0; k < NSEG && segs[k] <= n; k++) {
			bench_size(segs[k], ssz, sizeof ssz);
			snprintf(name, sizeof name, "bcast %s seg %s", sz, ssz);
			fn[j].time[k] = bench_add(name, "us", NULL, PARAMS, n, segs[k], g_size, engine);
			snprintf(name, sizeof name, "bcast %s seg %s / best", sz, ssz);
			fn[j].ratio[k] = bench_add(name, "x", NULL, PARAMS, n, segs[k], g_size, engine);
			snprintf(name, sizeof name, "model %s seg %s", sz, ssz);
			fn[j].model[k] = bench_add(name, "us", NULL, PARAMS, n, segs[k], g_size, engine);
		}
		/* The segment size of these is each repetition's own. */
#define PARAMS_S "\"bytes\": %zu, \"seg\": \"%s\", \"ranks\": %d, \"engine\": \"%s\""
		snprintf(name, sizeof name, "model optimum %s", sz);
		fn[j].opt = bench_add(name, "B", NULL, PARAMS_S, n, "model optimum", g_size, engine);
		snprintf(name, sizeof name, "best measured %s", sz);
		fn[j].best = bench_add(name, "B", NULL, PARAMS_S, n, "best measured", g_size, engine);
		snprintf(name, sizeof name, "bcast %s at model optimum", sz);
		fn[j].t_opt = bench_add(name, "us", NULL, PARAMS_S, n, "model optimum", g_size, engine);
		snprintf(name, sizeof name, "at model optimum / best %s", sz);
		fn[j].headline = bench_add(name, "x", NULL, PARAMS_S, n, "model optimum / best measured", g_size, engine);
	}

	for (int rep = 0; rep < reps; rep++) {
		double m[NPP], t[NPP], alpha, beta;

		bench_barrier();
		for (int k = 0; k < NPP; k++) {
			m[k] = (double)pp[k];
			t[k] = pingpong(pair, pp[k], pp[k] >= (1u << 20) ? (quick ? 5 : 20) : (quick ? 20 : 100));
			bench_push(f_pp[k], t[k] * 1e6);
		}
		bench_fit_line(m, t, NPP, &alpha, &beta);
		bench_push(f_alpha, alpha * 1e6);
		bench_push(f_beta, beta * 1e9);
		for (int j = 0; j < 2; j++) {
			const size_t n = g_ns[j];
			const int iters = n > (1u << 20) ? (quick ? 5 : 21) : (quick ? 9 : 41);
			double best = 1e30, s_opt = alpha > 0 && beta > 0 ? sqrt((double)n * alpha / ((g_size - 2) * beta)) : 0;
			size_t best_s = 0, opt;
			cadrt_comm at_opt;

			/* s* as a whole number of bytes in the swept range. */
			opt = s_opt < SEG_MIN ? SEG_MIN : s_opt > (double)n ? n : (size_t)llround(s_opt);
			at_opt = comm_with_seg(opt, 0, &n, 1, 1);
			bench_push(fn[j].opt, (double)opt);
			double times[NSEG];
			for (int k = 0; k < NSEG && segs[k] <= n; k++) {
				times[k] = time_bcast(by_seg[k], n, iters);
				bench_push(fn[j].time[k], times[k] * 1e6);
				bench_push(fn[j].model[k], model(alpha, beta, n, segs[k]) * 1e6);
				if (times[k] < best) {
					best = times[k];
					best_s = segs[k];
				}
			}
			const double t_opt = time_bcast(at_opt, n, iters);
			for (int k = 0; k < NSEG && segs[k] <= n; k++)
				bench_push(fn[j].ratio[k], times[k] / best);
			bench_push(fn[j].best, (double)best_s);
			bench_push(fn[j].t_opt, t_opt * 1e6);
			bench_push(fn[j].headline, t_opt / best);
			if (cadrt_comm_free(&at_opt))
				bench_die("cadrt_comm_free");
		}
	}

	if (g_rank == 0) {
		char title[200], method[1024];

		snprintf(title, sizeof title,
			 "seg_bench: bcast_chain_pipeline, %d ranks, engine %s, against its segment size; %s mode, "
			 "%d repetitions, %.1f s",
			 g_size, engine, quick ? "quick" : "full", reps, bench_now() - t_start);
		bench_print(title);
		snprintf(method, sizeof method,
			 "%d ranks under cadrun; CADRT_ALGORITHM_BCAST=bcast_chain_pipeline:seg=S on a copy of the world "
			 "per segment size (the instance made at its first call), interleaved in each repetition; root "
			 "0, call + wait after an untimed world barrier, the slowest rank's median over the iterations; "
			 "model T(s) = (P - 2 + ceil(n/s)) (alpha + beta s), alpha and beta fitted (least squares, "
			 "relative error) to the one-way time of a 2-rank one-segment broadcast ping-pong, 4 KiB - 4 "
			 "MiB, in the same repetition; s* = sqrt(n alpha / ((P - 2) beta)), measured on its own copy "
			 "of the world",
			 g_size);
		if (json && bench_write_json(json, "segments", engine, method))
			return 1;
	}
	for (int k = 0; k < NSEG; k++)
		cadrt_comm_free(&by_seg[k]);
	if (pair)
		cadrt_comm_free(&pair);
	cadrt_finalize();
	free(g_buf);
	return 0;
}
