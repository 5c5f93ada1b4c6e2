/* kbench - one engine of cadrt, under cadrun, no MPI: the figures of the
 * kernel-module issue, measured the same way for every engine so that
 * bench/kernel_vm.py can run them side by side in one VM boot.
 *
 *   CADRT_ENGINE=kernel cadrun -n 2 --bind core kbench
 *
 * Prints at rank 0 one line "KBENCH {json}" with the engine and figures:
 *   lat <coll> <bytes>       seconds per call + wait (OSU: the mean over
 *                            ranks of the mean over iterations)
 *   overlap <coll> <bytes>   the OSU overlap, no test calls: compute for
 *                            the pure latency between call and wait;
 *                            100 - 100 (overall - compute) / pure, compute
 *                            the time the computation took (as OSU: it
 *                            overshoots what it was asked for a little)
 *   cap <coll> <bytes>       the physical cap of that overlap: the bytes
 *                            the collective writes into receive buffers
 *                            must be copied by some CPU of the job, at
 *                            best spread evenly over its P CPUs, and that
 *                            time cannot overlap: 100 - 100 copy / pure,
 *                            copy = memcpy of that share, timed here
 *   cpuloss <bytes> <m>      the KACC codelet: ibcast overlapped with m x m
 *                            matrix products, testing for completion after
 *                            each; 1 - products done / products possible
 *                            in that time without communication, %
 *   cpufloor <bytes> <m>     the part of that loss the copy alone explains
 *   cpustart <bytes> <m>     the part of the codelet's time its rank spent
 *                            in the call that posts the broadcast, %: no
 *                            product runs there, so it is loss too
 *   cpusys <bytes> <m>       the part of the codelet's time one bare
 *                            ioctl on /dev/cad would take, %: the share of
 *                            cpustart that is the system call itself and
 *                            not the module's work (the kernel engine
 *                            makes one per iteration, the start; tests
 *                            read the status page).  Only where /dev/cad
 *                            opens; the same for every engine
 *   overlap persistent <coll> 65536, cap persistent <coll> 65536,
 *   lat persistent <coll> 65536
 *                            the same with a persistent request started
 *                            each time (cadrt_start: no selection, no
 *                            binding; the kernel engine's program loaded
 *                            once), against its own pure latency: how
 *                            much of the non-blocking figure is the
 *                            call's own user-space work per start
 *   ioctl                    seconds of that bare ioctl (CAD_IOC_VERSION:
 *                            a copy in and a copy out), both ranks at once
 * Iterations start after an untimed barrier.  BENCH_QUICK=1: fewer
 * iterations.  For studies of one figure: KBENCH_ONLY=<prefix> runs only
 * the figures whose names start with it ("cpuloss 12500 4": one size and
 * product of the codelet; "overlap ibcast 65536": that overlap, with the
 * latency it needs), and KBENCH_ITERS=N gives each N iterations (the
 * share of the noise under emulation falls as iterations grow).  KBENCH_LABEL names the run in place of CADRT_ENGINE (the
 * kernel engine under each setting of cad.ko's defer parameter).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../kmod/uapi/cad.h"
#include "bench_out.h"
#include "cadrt/cadrt.h"

static int g_rank, g_size, g_quick;
static char *g_send, *g_recv;
static cadrt_comm g_world;

static void die(const char *what)
{
	fprintf(stderr, "kbench: rank %d: %s: %s\n", g_rank, what, cadrt_error_message());
	exit(1);
}

static void barrier(void)
{
	cadrt_request r;

	if (cadrt_ibarrier(g_world, &r) || cadrt_wait(&r))
		die("barrier");
}

/* The mean over ranks. */
static double mean(double v)
{
	double sum;
	cadrt_request r;

	if (cadrt_iallreduce(&v, &sum, 1, CADRT_DOUBLE, CADRT_SUM, g_world, &r) || cadrt_wait(&r))
		die("allreduce");
	return sum / g_size;
}

enum coll { IBCAST, IALLTOALL };
static const char *cname[] = { "ibcast", "ialltoall" };

/* The persistent figures: each start is cadrt_start of one persistent
 * request per collective, made (selected, bound, loaded into cad.ko) once. */
static int g_persist;
static cadrt_request g_preq[2];
static size_t g_pbytes[2];

static void start(enum coll c, size_t bytes, cadrt_request *r)
{
	int err;

	if (g_persist) {
		if (g_preq[c] && g_pbytes[c] != bytes)
			cadrt_req_free(&g_preq[c]);
		if (!g_preq[c]) {
			err = c == IBCAST ? cadrt_bcast_init(g_recv, bytes, CADRT_BYTE, 0, g_world, &g_preq[c])
					  : cadrt_alltoall_init(g_send, g_recv, bytes / (size_t)g_size, CADRT_BYTE,
								g_world, &g_preq[c]);
			if (err)
				die(cname[c]);
			g_pbytes[c] = bytes;
		}
		*r = g_preq[c];
		if (cadrt_start(r))
			die("cadrt_start");
		return;
	}
	err = c == IBCAST ? cadrt_ibcast(g_recv, bytes, CADRT_BYTE, 0, g_world, r)
			  : cadrt_ialltoall(g_send, g_recv, bytes / (size_t)g_size, CADRT_BYTE, g_world, r);
	if (err)
		die(cname[c]);
}

/* Computes for seconds; returns the seconds it took (OSU subtracts the
 * computation measured, not the one asked for: the clock is read every
 * 100 steps). */
static double compute(double seconds)
{
	const double start = bench_now(), end = start + seconds;
	volatile double x = 1;
	double now;

	while ((now = bench_now()) < end)
		for (int i = 0; i < 100; i++)
			x = x * 1.0000001 + 1e-9;
	return now - start;
}

/* Mean seconds per call + wait, with compute_s of work in between;
 * *computed (if not NULL): the mean seconds that work took. */
static double measure(enum coll c, size_t bytes, int iters, double compute_s, double *computed)
{
	cadrt_request r;
	double t = 0, comp = 0;

	for (int i = 0; i < 2; i++) {
		start(c, bytes, &r);
		if (cadrt_wait(&r))
			die("wait");
	}
	for (int i = 0; i < iters; i++) {
		double t0;

		barrier();
		t0 = bench_now();
		start(c, bytes, &r);
		if (compute_s > 0)
			comp += compute(compute_s);
		if (cadrt_wait(&r))
			die("wait");
		t += bench_now() - t0;
	}
	if (computed)
		*computed = mean(comp / iters);
	return mean(t / iters);
}

/* Seconds to memcpy bytes (the best of a few). */
static double copy_time(size_t bytes)
{
	double best = 1e9;
	char *a = malloc(bytes + 1), *b = malloc(bytes + 1);

	memset(a, 1, bytes + 1);
	memset(b, 2, bytes + 1);
	for (int i = 0; i < 5; i++) {
		double t0 = bench_now();

		memcpy(b, a, bytes);
		__asm__ volatile("" ::"r"(b) : "memory");
		if (bench_now() - t0 < best)
			best = bench_now() - t0;
	}
	free(a);
	free(b);
	return best;
}

/* Seconds per bare ioctl on /dev/cad, the mean over ranks, both ranks
 * calling at once; 0 where /dev/cad does not open (no module). */
static double ioctl_time(void)
{
	const int n = g_quick ? 250 : 1000;
	const int fd = open("/dev/cad", O_RDWR | O_CLOEXEC);
	double t = 0;

	barrier();
	if (fd >= 0) {
		struct cad_ioc_version v;
		const double t0 = bench_now();

		for (int i = 0; i < n; i++) {
			memset(&v, 0, sizeof v);
			v.size = sizeof v;
			if (ioctl(fd, CAD_IOC_VERSION, &v)) {
				fprintf(stderr, "kbench: rank %d: CAD_IOC_VERSION: %s\n", g_rank, strerror(errno));
				exit(1);
			}
		}
		t = (bench_now() - t0) / n;
		close(fd);
	}
	return mean(t);
}

static double g_ioctl;

static double g_a[40 * 40], g_b[40 * 40], g_c[40 * 40];

/* The KACC codelet: loss in %, and the floor the copy explains.  Each
 * iteration posts the broadcast and computes products, testing after
 * each, until it completes; then, after a barrier, the same rank computes
 * products without communication (reading the clock only every
 * bench_ref_stride products) for the same elapsed time, and the
 * products possible are counted at that loop's rate (as in rt_codelets.c:
 * a rate timed once beforehand does not see the same machine).  Both
 * loops are timed in ticks (bench_ticks), not with bench_now: under
 * emulation its 1.3-2 us a read, three per iteration around the start
 * and the loop, were 5-15 points of the loss with 4x4 products at
 * 12.5 kB (an iteration there takes 15-60 us), loss the KACC codelet,
 * which reads no clock while it computes, does not have. */
static void cpu_loss(size_t bytes, int m, int iters, double *loss, double *floor, double *in_start,
		     double *in_sys)
{
	double e_sum = 0, done_sum = 0, reference = 0, start_sum = 0;
	const int stride = bench_ref_stride_of(bench_ticks, m, g_a, g_b, g_c);
	const double rate = bench_tick_rate();
	cadrt_request r;

	start(IBCAST, bytes, &r);
	if (cadrt_wait(&r))
		die("wait");
	for (int i = -1; i < iters; i++) {
		int flag = 0;
		long done = 0, ref = 0;

		barrier();
		double t0 = bench_ticks();
		start(IBCAST, bytes, &r);
		const double started = bench_ticks() - t0;
		while (!flag) {
			bench_matmul(m, g_a, g_b, g_c);
			done++;
			if (cadrt_test(&r, &flag))
				die("test");
		}
		const double elapsed = bench_ticks() - t0;

		barrier();
		t0 = bench_ticks();
		/* Written out here, not in a helper: the reference must compile
		 * to the same products as the loop above (through a helper
		 * taking pointers, which may alias, it ran 1.7x slower). */
		do {
			for (int j = 0; j < stride; j++)
				bench_matmul(m, g_a, g_b, g_c);
			ref += stride;
		} while (bench_ticks() - t0 < elapsed);
		if (i < 0)
			continue; /* a warm-up: both loops run once before they count */
		reference += (double)ref * elapsed / (bench_ticks() - t0);
		e_sum += elapsed;
		start_sum += started;
		done_sum += (double)done;
	}
	*loss = mean(100.0 * (1.0 - done_sum / reference));
	*floor = mean(100.0 * copy_time(bytes * (size_t)(g_size - 1) / (size_t)g_size) / (e_sum / rate / iters));
	*in_start = mean(100.0 * start_sum / e_sum);
	*in_sys = mean(100.0 * g_ioctl * iters / (e_sum / rate));
}

static char g_json[16384];
static size_t g_len;

static void fig(const char *name, double v)
{
	g_len += (size_t)snprintf(g_json + g_len, sizeof(g_json) - g_len, "%s\"%s\": %.9g", g_len > 2 ? ", " : "",
				  name, v);
}

int main(void)
{
	const size_t lat_sizes[] = { 8, 65536, 1 << 20 };
	const size_t ov_sizes[] = { 65536, 1 << 20 };
	const size_t loss_sizes[] = { 12500, 125000, 1250000 };
	char name[64];

	g_quick = getenv("BENCH_QUICK") && atoi(getenv("BENCH_QUICK"));
	if (cadrt_init())
		die("init");
	g_world = cadrt_comm_world();
	cadrt_comm_rank(g_world, &g_rank);
	cadrt_comm_size(g_world, &g_size);
	g_send = aligned_alloc(4096, 4 << 20);
	g_recv = aligned_alloc(4096, 4 << 20);
	memset(g_send, g_rank + 1, 4 << 20);
	memset(g_recv, 0, 4 << 20);
	for (int i = 0; i < 40 * 40; i++)
		g_a[i] = 1.0 + i % 7, g_b[i] = 2.0 - i % 5;
	g_len = (size_t)snprintf(g_json, sizeof g_json, "{");

	const char *only = getenv("KBENCH_ONLY");
	const int n_iters = getenv("KBENCH_ITERS") ? atoi(getenv("KBENCH_ITERS")) : 0;
	const int loss_iters = n_iters ? n_iters : g_quick ? 3 : 10;

	if (getenv("KBENCH_ITERS") && n_iters < 1) {
		fprintf(stderr, "kbench: KBENCH_ITERS must be at least 1\n");
		return 2;
	}
	for (int c = IBCAST; c <= IALLTOALL; c++) {
		for (size_t i = 0; i < sizeof lat_sizes / sizeof lat_sizes[0]; i++) {
			const size_t b = lat_sizes[i];
			/* (A run of 400 at 64 KiB lasts about 60 ms: in a run
			 * of a few ms, one wake-up of a vCPU late by 100 us
			 * moves its overlap by tens of points.) */
			int iters = b <= 8 ? 200 : b <= 65536 ? 400 : 40;

			if (only) {
				char lat[64], ov[64];

				snprintf(lat, sizeof lat, "lat %s %zu", cname[c], b);
				snprintf(ov, sizeof ov, "overlap %s %zu", cname[c], b);
				if (strncmp(lat, only, strlen(only)) && strncmp(ov, only, strlen(only)))
					continue;
			}
			if (g_quick)
				iters = iters / 4 > 3 ? iters / 4 : 3;
			if (n_iters)
				iters = n_iters;
			const double pure = measure(c, b, iters, 0, NULL);

			snprintf(name, sizeof name, "lat %s %zu", cname[c], b);
			fig(name, pure);
			for (size_t j = 0; j < sizeof ov_sizes / sizeof ov_sizes[0]; j++) {
				if (ov_sizes[j] != b)
					continue;
				double computed;
				const double overall = measure(c, b, iters, pure, &computed);
				const double moved = c == IBCAST ? (double)b * (g_size - 1) : (double)b * g_size;
				const double copy = copy_time((size_t)(moved / g_size));
				snprintf(name, sizeof name, "overlap %s %zu", cname[c], b);
				fig(name, 100.0 - 100.0 * (overall - computed) / pure);
				snprintf(name, sizeof name, "cap %s %zu", cname[c], b);
				fig(name, mean(100.0 - 100.0 * copy / pure));
			}
		}
	}
	/* The persistent figures at 64 KiB. */
	for (int c = IBCAST; c <= IALLTOALL; c++) {
		const size_t b = 65536;
		int iters = g_quick ? 100 : 400;
		char ov[64];

		snprintf(ov, sizeof ov, "overlap persistent %s %zu", cname[c], b);
		if (only && strncmp(ov, only, strlen(only)))
			continue;
		if (n_iters)
			iters = n_iters;
		g_persist = 1;
		const double pure = measure(c, b, iters, 0, NULL);
		double computed;
		const double overall = measure(c, b, iters, pure, &computed);
		g_persist = 0;
		cadrt_req_free(&g_preq[c]);
		const double moved = c == IBCAST ? (double)b * (g_size - 1) : (double)b * g_size;
		const double copy = copy_time((size_t)(moved / g_size));
		snprintf(name, sizeof name, "lat persistent %s %zu", cname[c], b);
		fig(name, pure);
		fig(ov, 100.0 - 100.0 * (overall - computed) / pure);
		snprintf(name, sizeof name, "cap persistent %s %zu", cname[c], b);
		fig(name, mean(100.0 - 100.0 * copy / pure));
	}
	g_ioctl = ioctl_time();
	fig("ioctl", g_ioctl);
	for (size_t i = 0; i < sizeof loss_sizes / sizeof loss_sizes[0]; i++) {
		const int ms[] = { 4, 40 };

		for (int k = 0; k < 2; k++) {
			double loss, floor, in_start, in_sys;

			snprintf(name, sizeof name, "cpuloss %zu %d", loss_sizes[i], ms[k]);
			if (only && strncmp(name, only, strlen(only)))
				continue;
			cpu_loss(loss_sizes[i], ms[k], loss_iters, &loss, &floor, &in_start, &in_sys);
			fig(name, loss);
			snprintf(name, sizeof name, "cpufloor %zu %d", loss_sizes[i], ms[k]);
			fig(name, floor);
			snprintf(name, sizeof name, "cpustart %zu %d", loss_sizes[i], ms[k]);
			fig(name, in_start);
			snprintf(name, sizeof name, "cpusys %zu %d", loss_sizes[i], ms[k]);
			fig(name, in_sys);
		}
	}
	if (g_rank == 0)
		printf("KBENCH {\"engine\": \"%s\", \"P\": %d, \"figures\": %s}}\n",
		       getenv("KBENCH_LABEL") ? getenv("KBENCH_LABEL") : getenv("CADRT_ENGINE"), g_size, g_json);
	cadrt_finalize();
	free(g_send);
	free(g_recv);
	return 0;
}
