/* bench_out.h - the figures of a C benchmark program and their JSON file
 * (schemas/bench-result.schema.json): a table of named figures, each with
 * its unit, optional target ("<= 1.5", ">= 40"), parameters and every
 * repetition; the median, min and max are computed when written.
 * Header-only, no MPI: the MPI programs and the cadrun ones share it. */
#ifndef CAD_BENCH_OUT_H
#define CAD_BENCH_OUT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A cheap tick counter for intervals on one CPU (each rank is bound to
 * its core): the time-stamp counter on x86, else the monotonic clock in
 * nanoseconds.  Under qemu's software emulation the guest kernel's
 * clocksource is the HPET, and one bench_now() is a system call and an
 * emulated device read, 1.3-2 us: inside a loop being measured (the KACC
 * codelet with 4x4 products) that is loss the benchmark itself makes,
 * while the time-stamp counter is read in well under that.  Ticks
 * convert to seconds with bench_tick_rate(). */
static inline double bench_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return (double)__builtin_ia32_rdtsc();
#else
	return bench_now() * 1e9;
#endif
}

/* Ticks per second: bench_ticks() against bench_now() over 20 ms. */
static inline double bench_tick_rate(void)
{
	const double s0 = bench_now(), k0 = bench_ticks();
	double s1;

	while ((s1 = bench_now()) - s0 < 0.02)
		;
	return (bench_ticks() - k0) / (s1 - s0);
}

/* The command line of every program here: [--json FILE]; anything else
 * prints usage and exits 2.  Returns FILE or NULL. */
static inline const char *bench_json_arg(int argc, char **argv, const char *usage)
{
	const char *json = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--json FILE]\n", usage);
			exit(2);
		}
	}
	return json;
}

/* c = a b, m x m doubles: the KACC codelet's unit of computation. */
static inline void bench_matmul(int m, const double *a, const double *b, double *c)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < m; j++) {
			double s = 0;

			for (int k = 0; k < m; k++)
				s += a[i * m + k] * b[k * m + j];
			c[i * m + j] = s;
		}
	__asm__ volatile("" ::"r"(c) : "memory");
}

/* The KACC codelet's reference loop computes products without
 * communication for a given time; it reads the clock only every this many
 * products, so that the reads cost it under 2 % (a clock read takes 20 ns
 * on the host and 2 us under qemu's software emulation, as long as a 4x4
 * product or longer: read after every product, the reference counted
 * 40-60 % fewer products than the CPU can do, and every loss came out that
 * much too small).  Measured once per m: the best of 5 of 64 reads and of
 * 64 products. */
static inline int bench_ref_stride_of(double (*now)(void), int m, const double *a, const double *b, double *c)
{
	double clock = 1e30, product = 1e30;

	for (int r = 0; r < 5; r++) {
		double t0 = now(), t1 = t0;

		for (int i = 0; i < 64; i++)
			t1 = now();
		if ((t1 - t0) / 64 < clock)
			clock = (t1 - t0) / 64;
		t0 = now();
		for (int i = 0; i < 64; i++)
			bench_matmul(m, a, b, c);
		t1 = now();
		if ((t1 - t0) / 64 < product)
			product = (t1 - t0) / 64;
	}
	const double stride = 50 * clock / (product > 0 ? product : 1e-30);

	return stride < 1 ? 1 : stride > 4096 ? 4096 : (int)stride + 1;
}

/* The same for a loop that reads bench_now(). */
static inline int bench_ref_stride(int m, const double *a, const double *b, double *c)
{
	return bench_ref_stride_of(bench_now, m, a, b, c);
}

/* t = alpha + beta m by least squares on the relative error (weights
 * 1 / t^2, so that microseconds are not lost beside milliseconds). */
static inline void bench_fit_line(const double *m, const double *t, int k, double *alpha, double *beta)
{
	double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;

	for (int i = 0; i < k; i++) {
		const double w = 1.0 / (t[i] * t[i]);

		s += w;
		sx += w * m[i];
		sy += w * t[i];
		sxx += w * m[i] * m[i];
		sxy += w * m[i] * t[i];
	}
	*beta = (s * sxy - sx * sy) / (s * sxx - sx * sx);
	*alpha = (sy - *beta * sx) / s;
}

#define BENCH_MAX_REPS 64
#define BENCH_MAX_FIGS 2048

struct bench_fig {
	char name[112], unit[8], target[16];
	char params[256]; /* the inside of a JSON object: "\"bytes\": 8, ..." */
	double reps[BENCH_MAX_REPS];
	int nreps;
};

static struct bench_fig bench_figs[BENCH_MAX_FIGS];
static int bench_nfigs;

/* A new figure; params is printf-style JSON members (may be ""). */
static struct bench_fig *bench_add(const char *name, const char *unit, const char *target, const char *params, ...)
	__attribute__((format(printf, 4, 5), unused));
static struct bench_fig *bench_add(const char *name, const char *unit, const char *target, const char *params, ...)
{
	if (bench_nfigs == BENCH_MAX_FIGS) {
		fprintf(stderr, "bench: more than %d figures\n", BENCH_MAX_FIGS);
		exit(2);
	}
	struct bench_fig *f = &bench_figs[bench_nfigs++];
	va_list ap;

	memset(f, 0, sizeof *f);
	snprintf(f->name, sizeof f->name, "%s", name);
	snprintf(f->unit, sizeof f->unit, "%s", unit);
	snprintf(f->target, sizeof f->target, "%s", target ? target : "");
	va_start(ap, params);
	vsnprintf(f->params, sizeof f->params, params, ap);
	va_end(ap);
	return f;
}

static inline void bench_push(struct bench_fig *f, double v)
{
	if (f && f->nreps < BENCH_MAX_REPS)
		f->reps[f->nreps++] = v;
}

static int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static inline double bench_median(const struct bench_fig *f, double *lo, double *hi)
{
	double v[BENCH_MAX_REPS];

	if (!f->nreps) {
		*lo = *hi = 0;
		return 0;
	}
	memcpy(v, f->reps, sizeof(double) * (size_t)f->nreps);
	qsort(v, (size_t)f->nreps, sizeof v[0], bench_cmp);
	*lo = v[0];
	*hi = v[f->nreps - 1];
	return f->nreps % 2 ? v[f->nreps / 2] : (v[f->nreps / 2 - 1] + v[f->nreps / 2]) / 2;
}

static inline int bench_met(const char *target, double v)
{
	double t = atof(target + 3);
	return target[0] == '<' ? v <= t : v >= t;
}

/* "8B", "64KiB", "4MiB". */
static inline const char *bench_size(size_t b, char *out, size_t n)
{
	if (b >= 1 << 20 && b % (1 << 20) == 0)
		snprintf(out, n, "%zuMiB", b >> 20);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(out, n, "%zuKiB", b >> 10);
	else
		snprintf(out, n, "%zuB", b);
	return out;
}

/* Median, min, max and the target of every figure, on stdout. */
static inline void bench_print(const char *title)
{
	printf("%s\n%-44s %10s %10s %10s  %s\n", title, "figure", "median", "min", "max", "target");
	for (int i = 0; i < bench_nfigs; i++) {
		const struct bench_fig *f = &bench_figs[i];
		double lo, hi, m = bench_median(f, &lo, &hi);

		if (!f->nreps)
			continue;
		printf("%-44s %10.4g %10.4g %10.4g  %s%s\n", f->name, m, lo, hi, f->target,
		       f->target[0] ? (bench_met(f->target, m) ? " met" : " NOT met") : "");
	}
}

static inline void bench_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Writes the result file; figures without repetitions are left out.
 * Returns 0, or -1 with a message on stderr. */
static inline int bench_write_json(const char *path, const char *benchmark, const char *engine, const char *method)
{
	FILE *f = fopen(path, "w");
	struct utsname u;
	char cpu[256] = "unknown", line[256], date[32];
	FILE *ci = fopen("/proc/cpuinfo", "r");
	time_t now = time(NULL);
	int first = 1;

	if (!f) {
		perror(path);
		return -1;
	}
	uname(&u);
	while (ci && fgets(line, sizeof line, ci))
		if (!strncmp(line, "model name", 10)) {
			char *p = strchr(line, ':');
			snprintf(cpu, sizeof cpu, "%s", p ? p + 2 : line);
			cpu[strcspn(cpu, "\n")] = 0;
			break;
		}
	if (ci)
		fclose(ci);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "{\n \"benchmark\": ");
	bench_json_string(f, benchmark);
	fprintf(f, ",\n \"date\": \"%s\",\n \"machine\": {\"cpu\": ", date);
	bench_json_string(f, cpu);
	fprintf(f, ", \"cores\": %ld, \"kernel\": ", sysconf(_SC_NPROCESSORS_ONLN));
	bench_json_string(f, u.release);
	fprintf(f, "},\n \"engine\": ");
	bench_json_string(f, engine);
	fprintf(f, ",\n \"method\": ");
	bench_json_string(f, method);
	fprintf(f, ",\n \"results\": [\n");
	for (int i = 0; i < bench_nfigs; i++) {
		const struct bench_fig *r = &bench_figs[i];
		double lo, hi, m = bench_median(r, &lo, &hi);

		if (!r->nreps)
			continue;
		fprintf(f, "%s  {\"name\": ", first ? "" : ",\n");
		first = 0;
		bench_json_string(f, r->name);
		fprintf(f, ", \"unit\": ");
		bench_json_string(f, r->unit);
		fprintf(f, ", \"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"params\": {%s}, ", m, lo, hi, r->params);
		if (r->target[0])
			fprintf(f, "\"target\": \"%s\", \"met\": %s, ", r->target, bench_met(r->target, m) ? "true" : "false");
		fprintf(f, "\"repetitions\": [");
		for (int k = 0; k < r->nreps; k++)
			fprintf(f, "%s%.6g", k ? ", " : "", r->reps[k]);
		fprintf(f, "]}");
	}
	fprintf(f, "\n ]\n}\n");
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

#endif
