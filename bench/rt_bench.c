/* rt_bench - cadrt against Open MPI's own non-blocking collectives, in the
 * same processes: run it under mpirun with LD_PRELOAD=libcadmpi.so, and
 * MPI_I* go through cadrt while PMPI_I* are Open MPI's, interleaved
 * repetition by repetition.
 *
 *   mpirun -n 2 -x LD_PRELOAD=build/lib/libcadmpi.so -x CADRT_ENGINE=signal \
 *       rt_bench --json bench/results/rt-signal.json
 *
 * Figures (the OSU method):
 *   latency ratio  cadrt's (call + wait) / Open MPI's, per collective and size
 *   overlap        compute as long as the pure latency between the call and
 *                  the wait, no test calls; 100 - 100 (overall - compute) / pure
 * Each iteration starts after a barrier (not timed), so that every rank
 * posts together and a rank late from the previous iteration does not hide
 * the overlap of the others; latencies are OSU's: the mean over ranks of
 * the mean over iterations.
 * BENCH_QUICK=1: fewer repetitions and iterations.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

enum coll { IBCAST, IALLREDUCE, IALLTOALL };
static const char *cname[] = { "ibcast", "iallreduce", "ialltoall" };
static int g_rank, g_size;
static char *g_send, *g_recv;

static void start(enum coll c, size_t bytes, int ours, MPI_Request *r)
{
	const int n = (int)bytes, d = (int)(bytes / 8);
	switch (c) {
	case IBCAST:
		(ours ? MPI_Ibcast : PMPI_Ibcast)(g_recv, n, MPI_BYTE, 0, MPI_COMM_WORLD, r);
		break;
	case IALLREDUCE:
		(ours ? MPI_Iallreduce : PMPI_Iallreduce)(g_send, g_recv, d, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, r);
		break;
	default:
		(ours ? MPI_Ialltoall : PMPI_Ialltoall)(g_send, n / g_size, MPI_BYTE, g_recv, n / g_size, MPI_BYTE,
							MPI_COMM_WORLD, r);
		break;
	}
}

static void finish(int ours, MPI_Request *r)
{
	(ours ? MPI_Wait : PMPI_Wait)(r, MPI_STATUS_IGNORE);
}

static void compute(double seconds)
{
	const double end = MPI_Wtime() + seconds;
	volatile double x = 1;
	while (MPI_Wtime() < end)
		for (int i = 0; i < 100; i++)
			x = x * 1.0000001 + 1e-9;
}

/* Mean seconds per collective, the slowest rank's; with compute seconds
 * of work between call and wait when compute_s > 0. */
static double measure(enum coll c, size_t bytes, int ours, int iters, double compute_s)
{
	MPI_Request r;
	for (int i = 0; i < 2; i++) { /* warm: instances cached, pages touched */
		start(c, bytes, ours, &r);
		finish(ours, &r);
	}
	double t = 0;
	for (int i = 0; i < iters; i++) {
		PMPI_Barrier(MPI_COMM_WORLD);
		const double t0 = MPI_Wtime();
		start(c, bytes, ours, &r);
		if (compute_s > 0)
			compute(compute_s);
		finish(ours, &r);
		t += MPI_Wtime() - t0;
	}
	t /= iters;
	double sum;
	PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return sum / g_size;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct result {
	char name[96], unit[8], target[16];
	double reps[32];
	int nreps;
	size_t bytes;
	const char *coll, *impl;
	int met_known;
};

static struct result g_res[64];
static int g_nres;

static struct result *add(const char *name, const char *unit, const char *target, const char *coll, size_t bytes,
			  const char *impl)
{
	struct result *r = &g_res[g_nres++];
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->unit, sizeof r->unit, "%s", unit);
	snprintf(r->target, sizeof r->target, "%s", target ? target : "");
	r->coll = coll;
	r->bytes = bytes;
	r->impl = impl;
	return r;
}

static double median(struct result *r, double *lo, double *hi)
{
	double v[32];
	memcpy(v, r->reps, sizeof(double) * (size_t)r->nreps);
	qsort(v, (size_t)r->nreps, sizeof v[0], cmp);
	*lo = v[0];
	*hi = v[r->nreps - 1];
	return r->nreps % 2 ? v[r->nreps / 2] : (v[r->nreps / 2 - 1] + v[r->nreps / 2]) / 2;
}

static int met(const char *target, double v)
{
	double t = atof(target + 3);
	return target[0] == '<' ? v <= t : v >= t;
}

static void size_name(size_t b, char *out, size_t n)
{
	if (b >= 1 << 20)
		snprintf(out, n, "%zuMiB", b >> 20);
	else if (b >= 1024)
		snprintf(out, n, "%zuKiB", b >> 10);
	else
		snprintf(out, n, "%zuB", b);
}

int main(int argc, char **argv)
{
	const char *json = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else {
			fprintf(stderr, "usage: rt_bench [--json FILE]\n");
			return 2;
		}
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
	const char *(*engine_fn)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "cadrt_engine");
	if (!engine_fn) {
		if (g_rank == 0)
			fprintf(stderr, "rt_bench: run it with LD_PRELOAD=libcadmpi.so (cadrt is not loaded)\n");
		MPI_Finalize();
		return 2;
	}
	const int quick = getenv("BENCH_QUICK") && strcmp(getenv("BENCH_QUICK"), "0");
	const int reps = quick ? 3 : 7;
	const size_t sizes[] = { 8, 1024, 65536, 262144, 1 << 20 };
	const int nsizes = 5;
	g_send = calloc(1 << 20, 1);
	g_recv = calloc(1 << 20, 1);
	memset(g_send, 1, 1 << 20);

	for (int c = 0; c < 3; c++)
		for (int s = 0; s < nsizes; s++) {
			const size_t b = sizes[s];
			char sz[32], name[96];
			size_name(b, sz, sizeof sz);
			const char *lt = b <= 1024 ? "<= 1.5" : b >= 262144 ? "<= 1.0" : NULL;
			snprintf(name, sizeof name, "latency ratio %s %s", cname[c], sz);
			struct result *lat = add(name, "x", lt, cname[c], b, "cadrt/openmpi");
			struct result *ov = NULL, *ovr = NULL;
			if (c == IBCAST || b >= 65536) {
				snprintf(name, sizeof name, "overlap %s %s cadrt", cname[c], sz);
				ov = add(name, "%", b >= 65536 ? ">= 40" : NULL, cname[c], b, "cadrt");
				snprintf(name, sizeof name, "overlap %s %s openmpi", cname[c], sz);
				ovr = add(name, "%", NULL, cname[c], b, "openmpi");
			}
			const int iters = (b >= 262144 ? 20 : b >= 65536 ? 100 : 1000) / (quick ? 4 : 1);
			for (int k = 0; k < reps; k++) {
				const double mine = measure((enum coll)c, b, 1, iters, 0);
				const double ref = measure((enum coll)c, b, 0, iters, 0);
				lat->reps[lat->nreps++] = mine / ref;
				if (ov) {
					const int oi = iters / 2 > 5 ? iters / 2 : 5;
					double all = measure((enum coll)c, b, 1, oi, mine);
					double o = 100 - 100 * (all - mine) / mine;
					ov->reps[ov->nreps++] = o < 0 ? 0 : o > 100 ? 100 : o;
					all = measure((enum coll)c, b, 0, oi, ref);
					o = 100 - 100 * (all - ref) / ref;
					ovr->reps[ovr->nreps++] = o < 0 ? 0 : o > 100 ? 100 : o;
				}
			}
		}

	if (g_rank == 0) {
		printf("rt_bench: %d ranks, engine %s, cadrt (libcadmpi) against Open MPI in the same processes\n", g_size,
		       engine_fn());
		printf("%-36s %9s %9s %9s  %s\n", "figure", "median", "min", "max", "target");
		for (int i = 0; i < g_nres; i++) {
			double lo, hi, m = median(&g_res[i], &lo, &hi);
			printf("%-36s %9.3f %9.3f %9.3f  %s%s\n", g_res[i].name, m, lo, hi, g_res[i].target,
			       g_res[i].target[0] ? (met(g_res[i].target, m) ? " met" : " NOT met") : "");
		}
		if (json) {
			FILE *f = fopen(json, "w");
			if (!f) {
				perror(json);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			struct utsname u;
			uname(&u);
			char cpu[256] = "unknown", line[256];
			FILE *ci = fopen("/proc/cpuinfo", "r");
			while (ci && fgets(line, sizeof line, ci))
				if (!strncmp(line, "model name", 10)) {
					char *p = strchr(line, ':');
					snprintf(cpu, sizeof cpu, "%s", p ? p + 2 : line);
					cpu[strcspn(cpu, "\n")] = 0;
					break;
				}
			if (ci)
				fclose(ci);
			char date[32];
			time_t now = time(NULL);
			strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
			fprintf(f, "{\n \"benchmark\": \"rt\",\n \"date\": \"%s\",\n", date);
			fprintf(f, " \"machine\": {\"cpu\": \"%s\", \"cores\": %ld, \"kernel\": \"%s\"},\n", cpu,
				sysconf(_SC_NPROCESSORS_ONLN), u.release);
			fprintf(f, " \"engine\": \"%s\",\n", engine_fn());
			fprintf(f, " \"method\": \"%d ranks under mpirun; cadrt through libcadmpi (MPI_I*) against Open MPI "
				   "(PMPI_I*) interleaved in the same processes; each iteration after an untimed barrier; latency: the mean over ranks of the mean call+wait; "
				   "overlap (OSU): compute for the pure latency between call and wait, no tests, "
				   "100-100*(overall-compute)/pure\",\n", g_size);
			fprintf(f, " \"results\": [\n");
			for (int i = 0; i < g_nres; i++) {
				struct result *r = &g_res[i];
				double lo, hi, m = median(r, &lo, &hi);
				fprintf(f, "  {\"name\": \"%s\", \"unit\": \"%s\", \"median\": %.6g, \"min\": %.6g, \"max\": %.6g, "
					   "\"params\": {\"collective\": \"%s\", \"bytes\": %zu, \"ranks\": %d, \"of\": \"%s\"}, ",
					r->name, r->unit, m, lo, hi, r->coll, r->bytes, g_size, r->impl);
				if (r->target[0])
					fprintf(f, "\"target\": \"%s\", \"met\": %s, ", r->target, met(r->target, m) ? "true" : "false");
				fprintf(f, "\"repetitions\": [");
				for (int k = 0; k < r->nreps; k++)
					fprintf(f, "%s%.6g", k ? ", " : "", r->reps[k]);
				fprintf(f, "]}%s\n", i + 1 < g_nres ? "," : "");
			}
			fprintf(f, " ]\n}\n");
			fclose(f);
		}
	}
	free(g_send);
	free(g_recv);
	MPI_Finalize();
	return 0;
}
