/* alg_bench - the time of given algorithms, forced one by one, and the
 * costs `cadc simulate` prices them with (alpha, beta, gamma), measured in
 * the same run.  bench/sim_check.py runs it under cadrun and sets what
 * cadc simulate predicts beside each time:
 *
 *   cadrun -n P --bind core alg_bench [--json FILE] [--sizes B,B,...] [--inplace] COLL=SETTING ...
 *
 * COLL is bcast, reduce, allreduce, allgather or alltoall; SETTING is what
 * CADRT_ALGORITHM_<COLL> takes (NAME[:PARAM=VALUE,...]), or "rules": the
 * library's rules choose, as without a setting (each figure's params say
 * what they chose).  Sizes are bytes
 * per MPI count: the broadcast's buffer (bytes), the reduction's vector
 * (doubles, summed: bytes / 8 of them), the block of each rank (allgather)
 * or of each pair (alltoall, bytes), at least two of them.  Default 8, 1024,
 * 65536, 1048576.
 *
 * --inplace: allreduce, allgather and alltoall in place (CADRT_IN_PLACE
 * for the send buffer), the others as without it.
 *
 * Selection is seg_bench's: each setting gets a copy of the world made
 * while CADRT_ALGORITHM_<COLL> holds it, and one untimed call of each size
 * there makes, verifies and caches its instances; a call that runs another
 * algorithm than the setting names ends the run with an error.
 *
 * Timing: call + wait after an untimed world barrier; a rank's median over
 * the iterations, the slowest rank's.  The settings and sizes are
 * interleaved in each repetition.
 *
 * The model's costs, in each repetition, from the one-way time of one
 * message between ranks 0 and 1 at the sizes above (half the round trip of
 * a broadcast from rank 0 then from rank 1 on a 2-rank communicator running
 * bcast_linear: one message, the transports every algorithm's messages
 * take):
 *   alpha, beta   fitted (least squares on the relative error, as
 *                 seg_bench) to the sizes above EAGER_BYTES (the
 *                 rendezvous: RTS, the single copy, FIN), or to all of
 *                 them if fewer than two are
 *   alpha eager   the mean over the sizes up to EAGER_BYTES of the time
 *                 less 2 beta per byte (into the ring and out of it: cadc
 *                 simulate's eager message); alpha where there are none
 *                 (One line through all sizes would price a 64 KiB
 *                 rendezvous at less than half its time, and cadc
 *                 simulate would take the ring allreduce's two rounds of
 *                 32 KiB for cheaper than recursive doubling's one of
 *                 64 KiB.)
 *   switch        with more ranks than CPUs (rank r on CPU r mod C, as
 *                 cadrun --bind core places them): the one-way time of the
 *                 same ping-pong between ranks 0 and C, which share a CPU,
 *                 less that between ranks 0 and 1, over the sizes up to
 *                 EAGER_BYTES -- what a CPU spends turning from one rank's
 *                 work to another's (cadc simulate --switch); 0 with a CPU
 *                 per rank
 *   gamma         ns per byte of a[i] += b[i] over 1 MiB of doubles on
 *                 rank 0 (the built-in sum's loop; bench/core_bench puts
 *                 the core's at 1.0x such a loop)
 * Engine: thread unless CADRT_ENGINE says otherwise (seg_bench's reasons:
 * more ranks than cores).  BENCH_QUICK=1: 3 repetitions instead of 7. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_cadrt.h"

#define MAX_SPECS 64
#define MAX_SIZES 16
#define MAX_ITERS 64
/* cadrt sends a message that fits a ring slot eagerly (cadrt/src/shm.h,
 * kPayload); cadc simulate's default --eager-bytes. */
#define EAGER_BYTES 1984
#define USAGE "cadrun -n P --bind core alg_bench [--json FILE] [--sizes B,B,...] [--inplace] COLL=SETTING ..."

enum coll { BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL };
static const char *const g_coll_names[] = { "bcast", "reduce", "allreduce", "allgather", "alltoall" };

struct spec {
	enum coll coll;
	const char *setting; /* NAME[:PARAM=VALUE,...] */
	char name[64];	     /* NAME; "" for the rules' choice */
	char chosen[MAX_SIZES][64]; /* what ran, per size (the rules' choice) */
	cadrt_comm comm;
};

static int g_rank, g_size, g_inplace;
static char *g_send, *g_recv;
static cadrt_comm g_world;

static void usage(const char *why)
{
	if (g_rank == 0)
		fprintf(stderr, "alg_bench: %s\nusage: %s\n", why, USAGE);
	exit(2);
}

/* One call of s's collective of b bytes per count, waited for; the
 * algorithm it ran into ran (if not NULL). */
static void run(const struct spec *s, cadrt_comm c, size_t b, int root, char *ran)
{
	cadrt_request r;
	int rc = -1;
	const void *send = g_inplace ? CADRT_IN_PLACE : g_send; /* (not for bcast and reduce) */

	switch (s->coll) {
	case BCAST:
		rc = cadrt_ibcast(g_send, b, CADRT_BYTE, root, c, &r);
		break;
	case REDUCE:
		rc = cadrt_ireduce(g_send, g_recv, b / 8, CADRT_DOUBLE, CADRT_SUM, root, c, &r);
		break;
	case ALLREDUCE:
		rc = cadrt_iallreduce(send, g_recv, b / 8, CADRT_DOUBLE, CADRT_SUM, c, &r);
		break;
	case ALLGATHER:
		rc = cadrt_iallgather(send, g_recv, b, CADRT_BYTE, c, &r);
		break;
	case ALLTOALL:
		rc = cadrt_ialltoall(send, g_recv, b, CADRT_BYTE, c, &r);
		break;
	}
	if (rc)
		bench_die(s->setting);
	if (ran)
		snprintf(ran, 64, "%s", cadrt_request_algorithm(r));
	if (s->name[0] && strcmp(cadrt_request_algorithm(r), s->name)) {
		fprintf(stderr, "alg_bench: rank %d: %s runs %s, not %s\n", g_rank, g_coll_names[s->coll],
			cadrt_request_algorithm(r), s->name);
		exit(1);
	}
	if (cadrt_wait(&r))
		bench_die("wait");
}

/* A copy of the world (color 0) or of ranks 0 and 1 (color 0 there, -1
 * elsewhere: NULL) whose calls of s's collective run s's setting; the
 * instances of the sizes and roots are made now.  Collective over the world. */
static cadrt_comm comm_for(struct spec *s, int color, const size_t *sizes, int nsizes, int roots)
{
	char var[64];
	cadrt_comm c;

	snprintf(var, sizeof var, "CADRT_ALGORITHM_%s", g_coll_names[s->coll]);
	for (char *p = var; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	if (s->name[0])
		setenv(var, s->setting, 1);
	else
		unsetenv(var);
	if (cadrt_comm_split(g_world, color, g_rank, &c))
		bench_die("cadrt_comm_split");
	for (int i = 0; c && i < nsizes; i++)
		for (int root = 0; root < roots; root++)
			run(s, c, sizes[i], root, s->chosen[i]);
	unsetenv(var);
	return c;
}

/* Seconds of s's collective of b bytes on its communicator: the slowest
 * rank's median. */
static double time_call(const struct spec *s, size_t b, int iters)
{
	double t[MAX_ITERS];

	for (int i = 0; i < iters; i++) {
		double t0;

		bench_barrier();
		t0 = bench_now();
		run(s, s->comm, b, 0, NULL);
		t[i] = bench_now() - t0;
	}
	return bench_slowest_median(t, iters);
}

/* One-way seconds of a b-byte message, rank 0's measure, on every rank. */
static double pingpong(const struct spec *pp, size_t b, int iters)
{
	double t = 0;

	if (pp->comm) {
		run(pp, pp->comm, b, 0, NULL);
		run(pp, pp->comm, b, 1, NULL);
		const double t0 = bench_now();
		for (int i = 0; i < iters; i++) {
			run(pp, pp->comm, b, 0, NULL);
			run(pp, pp->comm, b, 1, NULL);
		}
		t = (bench_now() - t0) / (2.0 * iters);
	}
	return bench_allreduce(g_rank == 0 ? t : 0, CADRT_SUM);
}

/* ns per byte of a[i] += b[i] over 1 MiB of doubles: the best of 5, on
 * rank 0, on every rank. */
static double gamma_ns(void)
{
	const size_t n = (1u << 20) / sizeof(double);
	double *a = (double *)g_recv, *x = (double *)g_send, best = 1e30;

	if (g_rank == 0)
		for (int r = 0; r < 5; r++) {
			const double t0 = bench_now();
			for (size_t i = 0; i < n; i++)
				a[i] += x[i];
			__asm__ volatile("" ::"r"(a) : "memory");
			const double t = bench_now() - t0;
			if (t < best)
				best = t;
		}
	return bench_allreduce(g_rank == 0 ? best * 1e9 / (1u << 20) : 0, CADRT_SUM);
}

static int parse_sizes(const char *text, size_t *out)
{
	int k = 0;

	for (const char *p = text; *p;) {
		char *end;
		const unsigned long long v = strtoull(p, &end, 10);

		if (end == p || v == 0 || v > (64u << 20) || k == MAX_SIZES || (*end && *end != ','))
			usage("--sizes takes up to 16 byte counts from 1 to 64 MiB, separated by commas");
		out[k++] = (size_t)v;
		p = *end ? end + 1 : end;
	}
	if (k < 2)
		usage("--sizes takes at least two byte counts (alpha and beta are fitted to them)");
	return k;
}

static void parse_spec(const char *arg, struct spec *s)
{
	const char *eq = strchr(arg, '=');
	size_t i;

	for (i = 0; eq && i < sizeof g_coll_names / sizeof g_coll_names[0]; i++)
		if (strlen(g_coll_names[i]) == (size_t)(eq - arg) && !strncmp(arg, g_coll_names[i], (size_t)(eq - arg)))
			break;
	if (!eq || i == sizeof g_coll_names / sizeof g_coll_names[0] || !eq[1])
		usage("a setting is COLL=NAME[:PARAM=VALUE,...], COLL one of bcast, reduce, allreduce, allgather, alltoall");
	s->coll = (enum coll)i;
	s->setting = eq + 1;
	snprintf(s->name, sizeof s->name, "%.*s", (int)strcspn(eq + 1, ":"), eq + 1);
	if (!strcmp(s->setting, "rules"))
		s->name[0] = 0;
}

int main(int argc, char **argv)
{
	const char *json = NULL;
	struct spec specs[MAX_SPECS];
	size_t sizes[MAX_SIZES] = { 8, 1024, 65536, 1u << 20 };
	int nspecs = 0, nsizes = 4;
	const int quick = getenv("BENCH_QUICK") && atoi(getenv("BENCH_QUICK"));
	const int reps = quick ? 3 : 7;

	bench_init("alg_bench", &g_rank, &g_size);
	g_world = cadrt_comm_world();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
			nsizes = parse_sizes(argv[++i], sizes);
		else if (!strcmp(argv[i], "--inplace"))
			g_inplace = 1;
		else if (argv[i][0] == '-')
			usage("unknown option");
		else if (nspecs == MAX_SPECS)
			usage("at most 64 settings");
		else
			parse_spec(argv[i], &specs[nspecs++]);
	}
	if (!nspecs)
		usage("name at least one setting");
	if (g_size < 2)
		usage("needs at least 2 ranks (the ping-pong)");
	size_t most = 1u << 20; /* gamma's 1 MiB */
	for (int k = 0; k < nsizes; k++)
		if (sizes[k] > most)
			most = sizes[k];
	g_send = aligned_alloc(4096, most * (size_t)g_size);
	g_recv = aligned_alloc(4096, most * (size_t)g_size);
	if (!g_send || !g_recv)
		bench_die("out of memory");
	memset(g_send, 0, most * (size_t)g_size); /* doubles of 0.0: sums stay finite */
	memset(g_recv, 0, most * (size_t)g_size);

	const char *engine = cadrt_engine();
	const double t_start = bench_now();
	struct spec pp = { .coll = BCAST, .setting = "bcast_linear", .name = "bcast_linear" };
	pp.comm = comm_for(&pp, g_rank < 2 ? 0 : -1, sizes, nsizes, 2);
	/* Ranks 0 and C share CPU 0 when there are more ranks than CPUs. */
	const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const int shared = ncpu >= 1 && ncpu < g_size ? (int)ncpu : 0;
	struct spec ps = pp;
	ps.comm = NULL;
	if (shared)
		ps.comm = comm_for(&ps, g_rank == 0 || g_rank == shared ? 0 : -1, sizes, nsizes, 2);
	for (int j = 0; j < nspecs; j++)
		specs[j].comm = comm_for(&specs[j], 0, sizes, nsizes, 1);

	struct bench_fig *f_time[MAX_SPECS][MAX_SIZES], *f_pp[MAX_SIZES], *f_ps[MAX_SIZES], *f_alpha, *f_beta, *f_gamma,
		*f_eager, *f_switch;
	char name[112], sz[32];
	for (int k = 0; k < nsizes; k++) {
		snprintf(name, sizeof name, "pingpong %s", bench_size(sizes[k], sz, sizeof sz));
		f_pp[k] = bench_add(name, "us", NULL, "\"bytes\": %zu, \"ranks\": 2, \"engine\": \"%s\"", sizes[k], engine);
		f_ps[k] = NULL;
		if (shared && sizes[k] <= EAGER_BYTES) {
			snprintf(name, sizeof name, "pingpong one CPU %s", bench_size(sizes[k], sz, sizeof sz));
			f_ps[k] = bench_add(name, "us", NULL,
					    "\"bytes\": %zu, \"ranks\": 2, \"pair\": [0, %d], \"engine\": \"%s\"",
					    sizes[k], shared, engine);
		}
	}
	f_switch = bench_add("switch", "us", NULL, "\"ranks\": %d, \"cpus\": %ld, \"engine\": \"%s\"", g_size, ncpu,
			     engine);
	f_alpha = bench_add("alpha", "us", NULL, "\"ranks\": 2, \"engine\": \"%s\"", engine);
	f_beta = bench_add("beta", "ns/B", NULL, "\"ranks\": 2, \"engine\": \"%s\"", engine);
	f_eager = bench_add("alpha eager", "us", NULL, "\"ranks\": 2, \"engine\": \"%s\", \"eager_bytes\": %d", engine,
			    EAGER_BYTES);
	f_gamma = bench_add("gamma", "ns/B", NULL, "\"ranks\": 1, \"engine\": \"%s\"", engine);
	for (int j = 0; j < nspecs; j++)
		for (int k = 0; k < nsizes; k++) {
			const int ip = g_inplace && specs[j].coll >= ALLREDUCE;
			snprintf(name, sizeof name, "time %s%s %s %s", g_coll_names[specs[j].coll], ip ? " in place" : "",
				 specs[j].setting, bench_size(sizes[k], sz, sizeof sz));
			f_time[j][k] = bench_add(name, "us", NULL,
						 "\"collective\": \"%s\", \"algorithm\": \"%s\", \"ran\": \"%s\", "
						 "\"bytes\": %zu, \"ranks\": %d, \"engine\": \"%s\", \"inplace\": %s",
						 g_coll_names[specs[j].coll], specs[j].setting, specs[j].chosen[k], sizes[k],
						 g_size, engine, ip ? "true" : "false");
		}

	for (int rep = 0; rep < reps; rep++) {
		double m[MAX_SIZES], t[MAX_SIZES], mr[MAX_SIZES], tr[MAX_SIZES], alpha, beta, eager = 0, turn = 0;
		int nr = 0, ne = 0, ns = 0;

		bench_barrier();
		for (int k = 0; k < nsizes; k++) {
			m[k] = (double)sizes[k];
			t[k] = pingpong(&pp, sizes[k], sizes[k] >= (1u << 20) ? (quick ? 5 : 20) : (quick ? 20 : 100));
			bench_push(f_pp[k], t[k] * 1e6);
			if (f_ps[k]) {
				const double ts = pingpong(&ps, sizes[k], quick ? 20 : 100);
				bench_push(f_ps[k], ts * 1e6);
				turn += ts - t[k];
				ns++;
			}
		}
		bench_push(f_switch, ns ? turn / ns * 1e6 : 0);
		for (int k = 0; k < nsizes; k++)
			if (sizes[k] > EAGER_BYTES) {
				mr[nr] = m[k];
				tr[nr++] = t[k];
			}
		if (nr >= 2)
			bench_fit_line(mr, tr, nr, &alpha, &beta);
		else
			bench_fit_line(m, t, nsizes, &alpha, &beta);
		for (int k = 0; k < nsizes; k++)
			if (sizes[k] <= EAGER_BYTES) {
				eager += t[k] - 2 * (beta > 0 ? beta : 0) * m[k];
				ne++;
			}
		eager = ne ? eager / ne : alpha;
		bench_push(f_alpha, alpha * 1e6);
		bench_push(f_beta, beta * 1e9);
		bench_push(f_eager, eager * 1e6);
		bench_push(f_gamma, gamma_ns());
		for (int j = 0; j < nspecs; j++)
			for (int k = 0; k < nsizes; k++) {
				const int iters = sizes[k] >= (1u << 20) ? (quick ? 5 : 15) : (quick ? 15 : 41);
				bench_push(f_time[j][k], time_call(&specs[j], sizes[k], iters) * 1e6);
			}
	}

	if (g_rank == 0) {
		char title[200];

		snprintf(title, sizeof title, "alg_bench: %d settings, %d ranks, engine %s; %s mode, %d repetitions, %.1f s",
			 nspecs, g_size, engine, quick ? "quick" : "full", reps, bench_now() - t_start);
		bench_print(title);
		if (json && bench_write_json(json, "algorithms", engine,
					     "each setting of CADRT_ALGORITHM_<COLL> on a copy of the world (the instance "
					     "made at its first call), interleaved in each repetition; root 0, call + wait "
					     "after an untimed world barrier, the slowest rank's median over the "
					     "iterations; alpha, beta fitted (least squares, relative error) to a 2-rank "
					     "one-message broadcast ping-pong at the same sizes above 1984 B, alpha eager "
					     "its mean time less 2 beta per byte at those up to 1984 B; switch: with more "
					     "ranks than CPUs, the same ping-pong's one-way time between ranks 0 and C "
					     "(one CPU) less that between 0 and 1 at those sizes; gamma: a[i] += b[i] "
					     "over 1 MiB of doubles"))
			return 1;
	}
	for (int j = 0; j < nspecs; j++)
		cadrt_comm_free(&specs[j].comm);
	if (pp.comm)
		cadrt_comm_free(&pp.comm);
	if (ps.comm)
		cadrt_comm_free(&ps.comm);
	cadrt_finalize();
	free(g_send);
	free(g_recv);
	return 0;
}
