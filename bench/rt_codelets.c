/* rt_codelets - the overlap codelets of the literature, for cadrt and for
 * Open MPI in the same processes: run it under mpirun with
 * LD_PRELOAD=libcadmpi.so, and MPI_I* (waited and tested with MPI_Wait and
 * MPI_Test, which libcadmpi interposes) go through cadrt while PMPI_I*
 * (PMPI_Wait, PMPI_Test) are Open MPI's own, interleaved repetition by
 * repetition: within one repetition every figure is measured for cadrt and
 * then for Open MPI.
 *
 *   mpirun -n 2 -x LD_PRELOAD=build/lib/libcadmpi.so -x CADRT_ENGINE=signal \
 *       rt_codelets --json bench/results/codelets-signal.json
 *
 * Figures, each "... cadrt" and "... openmpi":
 *   availability <coll> <size>       %   SMB's post-work-wait method (Lawry
 *       et al., the Sandia MPI microbenchmarks): post, W units of work, wait;
 *       W starts at 1 and doubles until that loop takes more than 1.5 times
 *       the transfer time (post + wait alone, measured just before);
 *       overhead = loop time - time of the W units alone (measured just
 *       after, same iterations, no communication); availability =
 *       100 (1 - overhead / transfer), clamped to [0, 100].  A unit is 100
 *       dependent floating-point updates of a volatile (about 0.3 us); the
 *       doubling stops on the times agreed over ranks.  ibcast and ialltoall
 *       at 64 KiB and 1 MiB.
 *   cpu loss <bytes> <m>x<m>        %   the KACC codelet: ibcast of 12500,
 *       125000 and 1250000 bytes overlapped with m x m double matrix
 *       products (m = 4, 40), MPI_Test / PMPI_Test after each product;
 *       100 (1 - products done / products possible in that elapsed time
 *       without communication), the possible ones counted in a loop of
 *       the same length right after each iteration, after a barrier, that
 *       reads the clock only every bench_ref_stride() products (see
 *       cpu_loss()); not clamped: a slightly negative value is noise.
 *   matvec overlap ialltoall <size>  %   the adaptive-selection experiment:
 *       ialltoall (64 KiB and 1 MiB send buffer, bytes / P to each peer)
 *       overlapped with y = A x, A dense n x n doubles; each rank sizes n
 *       (16 <= n <= 2048; above that, k products of the largest) so that
 *       the products take about the pure latency measured just before;
 *       compute = the products alone, timed after barriers too; OSU's
 *       100 - 100 (overall - compute) / pure, clamped to [0, 100].  Unlike
 *       a register loop, the product competes with the copies for memory.
 *   rendezvous root time ibcast <size> ms  PIOMan's rendezvous test for a
 *       collective: rank 0, the root, posts an ibcast of 1 MiB or 4 MiB and
 *       waits at once; the other ranks post it, compute 50 ms (a register
 *       loop, no MPI call), then wait; rank 0's time from post to the
 *       wait's return.  The root posts when the others have told it (an
 *       empty PMPI_Send after their post, untimed) that they have posted,
 *       so that its data is offered while they compute (posted first, it
 *       could be taken inside their post).  Without background progress
 *       (Open MPI) it is about 50 ms; with it, it should approach the
 *       transfer time.
 *   rendezvous root ratio ibcast <size> x  that time / the pure latency.
 * Pure latencies are post + wait, the mean over ranks of the mean over
 * iterations (OSU's); every time above is also that mean over ranks, but
 * for rank 0's rendezvous time.  Every iteration starts after an untimed
 * PMPI_Barrier; every measurement starts with two untimed calls (warm-up:
 * instances cached, pages touched).  5 repetitions; the figure is their
 * median.  BENCH_QUICK=1: 3 repetitions and fewer iterations; BENCH_QUICK=2:
 * one repetition of half those (what a test of the report's form needs).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_mpi.h"
#include "bench_out.h"

enum coll { IBCAST, IALLTOALL };
static const char *const cname[] = { "ibcast", "ialltoall" };
static const char *const impl[] = { "openmpi", "cadrt" }; /* by ours */

#define SEND_BYTES (1 << 20) /* ialltoall's largest send buffer */
#define RECV_BYTES (4 << 20) /* ibcast's largest buffer */
#define MV_NMAX 2048	     /* the largest matrix: 32 MiB */
#define SMB_FACTOR 1.5
#define SMB_WMAX (1L << 22)
#define RDV_COMPUTE 0.05
#define RDV_TAG 77

static int g_rank, g_size, g_quick;
static char *g_send, *g_recv;
static double *g_mat, *g_vx, *g_vy;
static double g_a[40 * 40], g_b[40 * 40], g_c[40 * 40];

/* Iterations of a measurement: full, under BENCH_QUICK=1, or half that
 * under BENCH_QUICK=2. */
static int iters_of(int full, int quick)
{
	return g_quick >= 2 ? (quick + 1) / 2 : g_quick ? quick : full;
}

static void post(enum coll c, size_t bytes, int ours, MPI_Request *r)
{
	const int n = (int)bytes, per = (int)(bytes / (size_t)g_size);

	if (c == IBCAST)
		(ours ? MPI_Ibcast : PMPI_Ibcast)(g_recv, n, MPI_BYTE, 0, MPI_COMM_WORLD, r);
	else
		(ours ? MPI_Ialltoall : PMPI_Ialltoall)(g_send, per, MPI_BYTE, g_recv, per, MPI_BYTE, MPI_COMM_WORLD,
							r);
}

static void finish(int ours, MPI_Request *r)
{
	(ours ? MPI_Wait : PMPI_Wait)(r, MPI_STATUS_IGNORE);
}

static int done(int ours, MPI_Request *r)
{
	int flag = 0;

	(ours ? MPI_Test : PMPI_Test)(r, &flag, MPI_STATUS_IGNORE);
	return flag;
}

static void barrier(void)
{
	PMPI_Barrier(MPI_COMM_WORLD);
}

/* The mean over ranks (Open MPI's allreduce: the figures never depend on
 * the engine measured). */
static double mean(double v)
{
	double sum;

	PMPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return sum / g_size;
}

/* True on every rank when it is on any: one decision for all. */
static int any(int v)
{
	int r;

	PMPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return r;
}

static void warm(enum coll c, size_t bytes, int ours)
{
	MPI_Request r;

	for (int i = 0; i < 2; i++) {
		post(c, bytes, ours, &r);
		finish(ours, &r);
	}
}

/* Pure latency: post + wait, the mean over ranks of the mean over iters. */
static double latency(enum coll c, size_t bytes, int ours, int iters)
{
	MPI_Request r;
	double t = 0;

	warm(c, bytes, ours);
	for (int i = 0; i < iters; i++) {
		barrier();
		const double t0 = MPI_Wtime();
		post(c, bytes, ours, &r);
		finish(ours, &r);
		t += MPI_Wtime() - t0;
	}
	return mean(t / iters);
}

/* A register loop of the given length, no MPI call. */
static void compute(double seconds)
{
	const double end = MPI_Wtime() + seconds;
	volatile double x = 1;

	while (MPI_Wtime() < end)
		for (int i = 0; i < 100; i++)
			x = x * 1.0000001 + 1e-9;
}

/* ---------------------------------------------------------------- SMB */

/* W units of SMB's work: a fixed amount, not a fixed time. */
static void work(long units)
{
	volatile double x = 1;

	for (long u = 0; u < units; u++)
		for (int i = 0; i < 100; i++)
			x = x * 1.0000001 + 1e-9;
}

/* Post, body(x, y), wait (the body alone when comm is 0): the mean over
 * ranks of the mean seconds over iters; SMB's work and the matrix-vector
 * products are bodies. */
static double post_body_wait(enum coll c, size_t bytes, int ours, int iters, int comm, void (*body)(long, long),
			     long x, long y)
{
	MPI_Request r;
	double t = 0;

	for (int i = 0; i < iters; i++) {
		barrier();
		const double t0 = MPI_Wtime();
		if (comm)
			post(c, bytes, ours, &r);
		body(x, y);
		if (comm)
			finish(ours, &r);
		t += MPI_Wtime() - t0;
	}
	return mean(t / iters);
}

static void work_body(long units, long unused)
{
	(void)unused;
	work(units);
}

static double availability(enum coll c, size_t bytes, int ours, int iters)
{
	const double transfer = latency(c, bytes, ours, iters);
	long w = 1;
	double loop;

	for (;;) {
		loop = post_body_wait(c, bytes, ours, iters, 1, work_body, w, 0);
		if (any(loop > SMB_FACTOR * transfer || w >= SMB_WMAX))
			break;
		w *= 2;
	}
	const double alone = post_body_wait(c, bytes, ours, iters, 0, work_body, w, 0);
	const double a = 100 * (1 - (loop - alone) / transfer);

	return a < 0 ? 0 : a > 100 ? 100 : a;
}

/* ---------------------------------------------------------------- KACC */

/* The KACC codelet, one figure: each iteration posts the broadcast and
 * computes products, testing after each, until it completes; then, after
 * a barrier, the same rank computes products without communication for
 * the same elapsed time.  Loss = 1 - products done / products possible,
 * the possible ones at the rate of the reference loops: the reference runs under the same conditions (the other
 * rank computing too, the same caches, the same moment of a shared
 * machine), which a rate timed once beforehand did not (it gave losses of
 * -35 % one run and +20 % the next). */
static double cpu_loss(size_t bytes, int m, int ours, int iters)
{
	MPI_Request r;
	double products = 0, reference = 0;
	const int stride = bench_ref_stride(m, g_a, g_b, g_c);

	warm(IBCAST, bytes, ours);
	for (int i = -1; i < iters; i++) {
		long n = 0, ref = 0;

		barrier();
		double t0 = MPI_Wtime();
		post(IBCAST, bytes, ours, &r);
		do {
			bench_matmul(m, g_a, g_b, g_c);
			n++;
		} while (!done(ours, &r));
		const double elapsed = MPI_Wtime() - t0;

		barrier();
		t0 = MPI_Wtime();
		/* Written out here, not in a helper: the reference must compile
		 * to the same products as the loop above (through a helper
		 * taking pointers, which may alias, it ran 1.7x slower). */
		do {
			for (int j = 0; j < stride; j++)
				bench_matmul(m, g_a, g_b, g_c);
			ref += stride;
		} while (MPI_Wtime() - t0 < elapsed);
		if (i < 0)
			continue; /* a warm-up: both loops run once before they count */
		products += (double)n;
		/* the loop's rate over the elapsed time: its last product
		 * overshoots, by most of a product when there are few */
		reference += (double)ref * elapsed / (MPI_Wtime() - t0);
	}
	return mean(100 * (1 - products / reference));
}

/* ---------------------------------------------------------------- matvec */

static void matvec(int n, int k)
{
	for (int r = 0; r < k; r++)
		for (int i = 0; i < n; i++) {
			const double *row = g_mat + (size_t)i * (size_t)n;
			double s = 0;

			for (int j = 0; j < n; j++)
				s += row[j] * g_vx[j];
			g_vy[i] = s;
		}
	__asm__ volatile("" ::"r"(g_vy) : "memory");
}

/* Seconds of k products of n x n: the best of three. */
static double matvec_time(int n, int k)
{
	double best = 1e9;

	for (int i = 0; i < 3; i++) {
		const double t0 = MPI_Wtime();

		matvec(n, k);
		const double t = MPI_Wtime() - t0;
		if (t < best)
			best = t;
	}
	return best;
}

/* sqrt for positive x, Newton's (no libm to link). */
static double root2(double x)
{
	double r = x > 1 ? x : 1;

	for (int i = 0; i < 64; i++)
		r = (r + x / r) / 2;
	return r;
}

/* n and k such that k products of n x n take about target seconds. */
static void size_matvec(double target, int *n, int *k)
{
	int m = 256;

	*k = 1;
	for (int step = 0; step < 4; step++) {
		const double t = matvec_time(m, 1);
		double next = m * root2(target / t);

		next = next < 16 ? 16 : next > MV_NMAX ? MV_NMAX : next;
		m = (int)next;
	}
	*n = m;
	if (m == MV_NMAX) {
		const double t = matvec_time(m, 1);

		*k = target / t > 1.5 ? (int)(target / t + 0.5) : 1;
	}
}

static void matvec_body(long n, long k)
{
	matvec((int)n, (int)k);
}

static double matvec_overlap(size_t bytes, int ours, int iters)
{
	const double pure = latency(IALLTOALL, bytes, ours, iters);
	int n, k;

	size_matvec(pure, &n, &k);
	const double comp = post_body_wait(IALLTOALL, bytes, ours, iters, 0, matvec_body, n, k);
	const double overall = post_body_wait(IALLTOALL, bytes, ours, iters, 1, matvec_body, n, k);
	const double o = 100 - 100 * (overall - comp) / pure;

	return o < 0 ? 0 : o > 100 ? 100 : o;
}

/* ---------------------------------------------------------------- PIOMan */

/* Rank 0's mean seconds from post to the wait's return, on every rank.
 * The others tell rank 0 they have posted (an empty PMPI_Send, untimed)
 * before it posts: then its data is offered while they compute, as in
 * PIOMan's test.  A root that posted first could see its data taken inside
 * their post, and a head start by time is not enough on a loaded machine.
 * The token cannot move the collective: the root has not posted yet. */
static double rendezvous(size_t bytes, int ours, int iters)
{
	MPI_Request r;
	double t = 0;

	warm(IBCAST, bytes, ours);
	for (int i = 0; i < iters; i++) {
		barrier();
		if (g_rank == 0) {
			for (int p = 1; p < g_size; p++)
				PMPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, RDV_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			const double t0 = MPI_Wtime();
			post(IBCAST, bytes, ours, &r);
			finish(ours, &r);
			t += MPI_Wtime() - t0;
		} else {
			post(IBCAST, bytes, ours, &r);
			PMPI_Send(NULL, 0, MPI_BYTE, 0, RDV_TAG, MPI_COMM_WORLD);
			compute(RDV_COMPUTE);
			finish(ours, &r);
		}
	}
	t /= iters;
	PMPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	return t;
}

/* ---------------------------------------------------------------- main */

#define PARAMS "\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, \"of\": \"%s\""

static const char method[] =
	"P ranks under mpirun; cadrt through libcadmpi (MPI_I*, MPI_Wait, MPI_Test) against Open MPI (PMPI_I*, "
	"PMPI_Wait, PMPI_Test) interleaved repetition by repetition in the same processes, each iteration after an "
	"untimed PMPI_Barrier, each measurement after two warm-up calls, times and losses the mean over ranks of the "
	"mean over iterations (but the rendezvous time: rank 0's); "
	"availability (SMB, Lawry et al.): post, W units of work, wait, W doubled from 1 until that loop exceeds 1.5x "
	"the transfer time (post+wait alone), then 100*(1-(loop-W units alone)/transfer) clamped to 0-100; "
	"cpu loss (KACC): ibcast overlapped with m x m double matrix products with a test after each, "
	"100*(1-products done/products done in a loop without communication of the same length right after, "
	"after a barrier); "
	"matvec overlap (adaptive selection): ialltoall overlapped with a dense n x n double matrix-vector product "
	"sized on each rank to take the pure latency (n <= 2048, then k products), OSU's "
	"100-100*(overall-compute)/pure clamped to 0-100; "
	"rendezvous (PIOMan): rank 0 posts ibcast as root once the others have posted (an empty PMPI_Send tells it) "
	"and waits at once while the others compute 50 ms between post and wait, rank 0's post-to-return time in ms "
	"and its ratio to the pure latency";

int main(int argc, char **argv)
{
	const char *json = bench_json_arg(argc, argv, "rt_codelets");
	const char *(*engine)(void) = bench_mpi_init(&argc, &argv, "rt_codelets", &g_rank, &g_size);
	g_quick = getenv("BENCH_QUICK") ? atoi(getenv("BENCH_QUICK")) : 0;
	const int reps = g_quick >= 2 ? 1 : g_quick ? 3 : 5;
	const size_t av_sizes[] = { 65536, 1 << 20 };
	const size_t loss_sizes[] = { 12500, 125000, 1250000 };
	const int ms[] = { 4, 40 };
	const size_t rdv_sizes[] = { 1 << 20, 4 << 20 };
	struct bench_fig *av[2][2][2], *loss[3][2][2], *mv[2][2], *rdv[2][2], *rdvr[2][2];
	char name[112], sz[32];

	g_send = malloc(SEND_BYTES);
	g_recv = malloc(RECV_BYTES);
	g_mat = malloc(sizeof(double) * MV_NMAX * MV_NMAX);
	g_vx = malloc(sizeof(double) * MV_NMAX);
	g_vy = malloc(sizeof(double) * MV_NMAX);
	if (!g_send || !g_recv || !g_mat || !g_vx || !g_vy) {
		fprintf(stderr, "rt_codelets: rank %d: out of memory\n", g_rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(g_send, g_rank + 1, SEND_BYTES);
	memset(g_recv, 0, RECV_BYTES);
	for (size_t i = 0; i < (size_t)MV_NMAX * MV_NMAX; i++)
		g_mat[i] = 1.0 / (double)(1 + i % 13);
	for (int i = 0; i < MV_NMAX; i++)
		g_vx[i] = 1.0 + i % 3, g_vy[i] = 0;
	for (int i = 0; i < 40 * 40; i++)
		g_a[i] = 1.0 + i % 7, g_b[i] = 2.0 - i % 5;

	/* The figures, cadrt's before Open MPI's. */
	for (int c = IBCAST; c <= IALLTOALL; c++)
		for (int s = 0; s < 2; s++)
			for (int o = 1; o >= 0; o--) {
				bench_size(av_sizes[s], sz, sizeof sz);
				snprintf(name, sizeof name, "availability %s %s %s", cname[c], sz, impl[o]);
				av[c][s][o] = bench_add(name, "%", NULL, PARAMS, cname[c], av_sizes[s], g_size, impl[o]);
			}
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 2; k++)
			for (int o = 1; o >= 0; o--) {
				snprintf(name, sizeof name, "cpu loss %zu %dx%d %s", loss_sizes[s], ms[k], ms[k], impl[o]);
				loss[s][k][o] = bench_add(name, "%", NULL, PARAMS ", \"m\": %d", "ibcast", loss_sizes[s],
							  g_size, impl[o], ms[k]);
			}
	for (int s = 0; s < 2; s++)
		for (int o = 1; o >= 0; o--) {
			bench_size(av_sizes[s], sz, sizeof sz);
			snprintf(name, sizeof name, "matvec overlap ialltoall %s %s", sz, impl[o]);
			mv[s][o] = bench_add(name, "%", NULL, PARAMS ", \"compute\": \"matvec\"", "ialltoall", av_sizes[s],
					     g_size, impl[o]);
		}
	for (int s = 0; s < 2; s++)
		for (int o = 1; o >= 0; o--) {
			bench_size(rdv_sizes[s], sz, sizeof sz);
			snprintf(name, sizeof name, "rendezvous root time ibcast %s %s", sz, impl[o]);
			rdv[s][o] = bench_add(name, "ms", NULL, PARAMS ", \"compute_ms\": 50", "ibcast", rdv_sizes[s],
					      g_size, impl[o]);
			snprintf(name, sizeof name, "rendezvous root ratio ibcast %s %s", sz, impl[o]);
			rdvr[s][o] = bench_add(name, "x", NULL, PARAMS ", \"compute_ms\": 50", "ibcast", rdv_sizes[s],
					       g_size, impl[o]);
		}

	for (int rep = 0; rep < reps; rep++) {
		for (int c = IBCAST; c <= IALLTOALL; c++)
			for (int s = 0; s < 2; s++) {
				const int n = av_sizes[s] >= 1 << 20 ? iters_of(100, 30) : iters_of(400, 100);

				for (int o = 1; o >= 0; o--)
					bench_push(av[c][s][o], availability(c, av_sizes[s], o, n));
			}
		for (int s = 0; s < 3; s++)
			for (int k = 0; k < 2; k++) {
				for (int o = 1; o >= 0; o--)
					bench_push(loss[s][k][o], cpu_loss(loss_sizes[s], ms[k], o, iters_of(100, 20)));
			}
		for (int s = 0; s < 2; s++) {
			const int n = av_sizes[s] >= 1 << 20 ? iters_of(100, 30) : iters_of(400, 100);

			for (int o = 1; o >= 0; o--)
				bench_push(mv[s][o], matvec_overlap(av_sizes[s], o, n));
		}
		for (int s = 0; s < 2; s++)
			for (int o = 1; o >= 0; o--) {
				const double pure = latency(IBCAST, rdv_sizes[s], o, iters_of(20, 6));
				const double t = rendezvous(rdv_sizes[s], o, iters_of(8, 4));

				bench_push(rdv[s][o], 1e3 * t);
				bench_push(rdvr[s][o], t / pure);
			}
	}

	if (g_rank == 0) {
		char title[160];

		snprintf(title, sizeof title,
			 "rt_codelets: %d ranks, engine %s, cadrt (libcadmpi) against Open MPI in the same processes",
			 g_size, engine());
		bench_print(title);
		if (json && bench_write_json(json, "codelets", engine(), method))
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	free(g_send);
	free(g_recv);
	free(g_mat);
	free(g_vx);
	free(g_vy);
	MPI_Finalize();
	return 0;
}
