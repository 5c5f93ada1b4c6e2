// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * core_bench - the core's figures, each measured against a reference run
 * in the same process (never a timed test):
 *   executor   ns per node for pop + complete (zero-length copies, fan-out)
 *              and for NOP chains that cascade inside the executor
 *   verifier   nodes per second on a 1M-node pipeline program
 *   builtin    cad_reduce SUM/MAX on doubles against a plain C loop
 *   vm         the same SUM/MAX as user-defined VM operators, and the other
 *              hand-written operators, against the same code in native C
 * Each figure is the median of REPS repetitions, candidate and reference
 * interleaved; min and max are kept.  `core_bench --json FILE` also writes
 * every repetition (schemas/bench-result.schema.json).  BENCH_QUICK=1 runs
 * fewer repetitions on smaller inputs.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "cad_core.h"
#include "../tests/core/vm_progs.h"

#define MAX_REPS 31

static int reps = 15;
static const char *only;   /* --only SUBSTR: the figures whose name contains it */
static int verbose;        /* BENCH_VERBOSE=1: also ns per element */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct figure {
	const char *name;
	const char *unit;
	const char *target;   /* e.g. "<= 50", ">= 0.9", or NULL */
	double target_value;
	int higher_is_better;
	double rep[MAX_REPS];
	int n;
	double median, min, max;
	char params[160];
};

static struct figure figures[32];
static int n_figures;

static struct figure *figure(const char *name, const char *unit, const char *target,
			     double target_value, int higher_is_better)
{
	struct figure *f = &figures[n_figures++];

	memset(f, 0, sizeof(*f));
	f->name = name;
	f->unit = unit;
	f->target = target;
	f->target_value = target_value;
	f->higher_is_better = higher_is_better;
	return f;
}

static void finish(struct figure *f)
{
	double sorted[MAX_REPS];

	memcpy(sorted, f->rep, sizeof(double) * f->n);
	qsort(sorted, f->n, sizeof(double), cmp_double);
	f->min = sorted[0];
	f->max = sorted[f->n - 1];
	f->median = sorted[f->n / 2];
	printf("%-34s %12.3f %-12s (min %.3f, max %.3f)", f->name, f->median, f->unit, f->min, f->max);
	if (f->target)
		printf("  target %s: %s", f->target,
		       (f->higher_is_better ? f->median >= f->target_value : f->median <= f->target_value)
		       ? "met" : "NOT met");
	printf("\n");
}

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);

	if (!p) {
		fprintf(stderr, "core_bench: out of memory\n");
		exit(2);
	}
	memset(p, 0, n);
	return p;
}

/* Verify an image built from d; exits on rejection. */
static void *build(const struct cad_image_desc *d, struct cad_prog *p, __u32 *size_out)
{
	__u64 size = cad_image_size(d);
	void *img = xalloc(size);
	char msg[256];
	struct cad_log log;

	cad_log_init(&log, msg, sizeof(msg));
	if (cad_image_write(d, img, size) || cad_verify(img, (__u32)size, NULL, p, &log)) {
		fprintf(stderr, "core_bench: program rejected: %s\n", msg);
		exit(2);
	}
	if (size_out)
		*size_out = (__u32)size;
	return img;
}

/* ------------------------------------------------------------------ */
/* Executor and verifier                                               */

/* A pipeline: recv segment k from rank 0, send it to rank 2; n nodes. */
static void *pipeline(__u32 n, struct cad_prog *p, __u32 *size)
{
	static const struct cad_buffer buf = {
		.kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = 1ull << 30,
	};
	struct cad_node *nodes = xalloc(sizeof(*nodes) * n);
	struct cad_edge *edges = xalloc(sizeof(*edges) * n);
	struct cad_image_desc d = {
		.rank = 1, .nranks = 4, .collective = CAD_COLL_BCAST, .buffers = &buf, .n_buffers = 1,
		.nodes = nodes, .n_nodes = n, .edges = edges,
	};
	__u32 i, e = 0;
	void *img;

	for (i = 0; i < n; i++) {
		struct cad_node *nd = &nodes[i];
		const __u64 off = (__u64)(i / 2) * 1024 % (1ull << 29);

		nd->kind = i % 2 ? CAD_NODE_SEND : CAD_NODE_RECV;
		nd->peer = i % 2 ? 2 : 0;
		nd->tag = i / 2;
		nd->len = 1024;
		nd->line = CAD_NO_LINE;
		nd->edge_first = e;
		if (i % 2) {
			nd->src_off = off;
		} else {
			nd->dst_off = off;
			if (i + 1 < n)
				edges[e++].to = i + 1;  /* forward what was received */
		}
		nd->edge_count = e - nd->edge_first;
	}
	d.n_edges = e;
	img = build(&d, p, size);
	free(nodes);
	free(edges);
	return img;
}

/* n zero-length copies, each root i fanning out to i + 1 .. i + 8. */
static void *fanout_copies(__u32 n, struct cad_prog *p)
{
	static const struct cad_buffer buf = {
		.kind = CAD_BUF_SCRATCH, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = 64,
	};
	struct cad_node *nodes = xalloc(sizeof(*nodes) * n);
	struct cad_edge *edges = xalloc(sizeof(*edges) * n);
	struct cad_image_desc d = {
		.nranks = 1, .buffers = &buf, .n_buffers = 1, .nodes = nodes, .n_nodes = n,
		.edges = edges,
	};
	__u32 i, e = 0;
	void *img;

	for (i = 0; i < n; i++) {
		nodes[i].kind = CAD_NODE_COPY;
		nodes[i].src_off = 32;
		nodes[i].line = CAD_NO_LINE;
		nodes[i].edge_first = e;
		if (i % 9 == 0) {  /* a root with 8 successors */
			__u32 k;

			for (k = 1; k <= 8 && i + k < n; k++)
				edges[e++].to = i + k;
		}
		nodes[i].edge_count = e - nodes[i].edge_first;
	}
	d.n_edges = e;
	img = build(&d, p, NULL);
	free(nodes);
	free(edges);
	return img;
}

static void *nop_chain(__u32 n, struct cad_prog *p)
{
	struct cad_node *nodes = xalloc(sizeof(*nodes) * n);
	struct cad_edge *edges = xalloc(sizeof(*edges) * n);
	struct cad_image_desc d = { .nranks = 1, .nodes = nodes, .n_nodes = n, .edges = edges };
	__u32 i;
	void *img;

	for (i = 0; i < n; i++) {
		nodes[i].kind = CAD_NODE_NOP;
		nodes[i].line = CAD_NO_LINE;
		nodes[i].edge_first = i;
		nodes[i].edge_count = i + 1 < n;
		edges[i].to = i + 1;
	}
	d.n_edges = n - 1;
	img = build(&d, p, NULL);
	free(nodes);
	free(edges);
	return img;
}

static void bench_executor(__u32 n)
{
	struct figure *pop = figure("executor pop+complete per node", "ns", "<= 50", 50, 0);
	struct figure *nop = figure("executor NOP cascade per node", "ns", NULL, 0, 0);
	struct cad_prog pf, pn;
	void *img_f = fanout_copies(n, &pf), *img_n = nop_chain(n, &pn);
	void *mem_f = xalloc(cad_exec_mem_size(&pf)), *mem_n = xalloc(cad_exec_mem_size(&pn));
	struct cad_exec ef, en;
	int r;

	cad_exec_init(&ef, &pf, mem_f);
	cad_exec_init(&en, &pn, mem_n);
	snprintf(pop->params, sizeof(pop->params), "\"nodes\": %u, \"fanout\": 8", n);
	snprintf(nop->params, sizeof(nop->params), "\"nodes\": %u", n);
	for (r = -1; r < reps; r++) {
		__u32 i, done = 0;
		double t0 = now_ns(), t1, t2;

		cad_exec_start(&ef);
		while (cad_exec_next(&ef, &i)) {
			cad_exec_complete(&ef, i);
			done++;
		}
		t1 = now_ns();
		cad_exec_start(&en);
		cad_exec_next(&en, &i);
		t2 = now_ns();
		if (done != n || cad_exec_status(&ef) || cad_exec_status(&en)) {
			fprintf(stderr, "core_bench: executor did not finish\n");
			exit(2);
		}
		if (r >= 0) {
			pop->rep[pop->n++] = (t1 - t0) / n;
			nop->rep[nop->n++] = (t2 - t1) / n;
		}
	}
	finish(pop);
	finish(nop);
	free(img_f);
	free(img_n);
	free(mem_f);
	free(mem_n);
}

static void bench_verifier(__u32 n)
{
	struct figure *f = figure("verifier throughput", "Mnodes/s", ">= 10", 10, 1);
	struct cad_prog p;
	__u32 size;
	void *img = pipeline(n, &p, &size);
	int r;

	snprintf(f->params, sizeof(f->params), "\"nodes\": %u, \"image_bytes\": %u", n, size);
	for (r = -1; r < reps; r++) {
		double t0 = now_ns();
		int rc = cad_verify(img, size, NULL, &p, NULL);
		double t = now_ns() - t0;

		if (rc) {
			fprintf(stderr, "core_bench: verifier rejected the pipeline\n");
			exit(2);
		}
		if (r >= 0)
			f->rep[f->n++] = n / t * 1e3;
	}
	finish(f);
	free(img);
}

/* ------------------------------------------------------------------ */
/* Reductions                                                          */

/* Native references, kept out of line so that each call is one loop. */
__attribute__((noinline)) static void native_sum(double *o, const double *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		o[i] = o[i] + in[i];
}

__attribute__((noinline)) static void native_max(double *o, const double *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		o[i] = o[i] > in[i] ? o[i] : in[i];
}

struct cplx { double re, im; };
struct dloc { double v; int i; };
struct vec3 { double x, y, z; };
struct affine { unsigned long long a, b; };

__attribute__((noinline)) static void native_cmul(void *o_, const void *in_, size_t n)
{
	struct cplx *o = o_;
	const struct cplx *in = in_;

	for (size_t i = 0; i < n; i++) {
		struct cplx a = in[i], b = o[i];

		o[i].re = a.re * b.re - a.im * b.im;
		o[i].im = a.re * b.im + a.im * b.re;
	}
}

__attribute__((noinline)) static void native_maxloc(void *o_, const void *in_, size_t n)
{
	struct dloc *o = o_;
	const struct dloc *in = in_;

	for (size_t i = 0; i < n; i++) {
		if (in[i].v > o[i].v) {
			o[i].v = in[i].v;
			o[i].i = in[i].i;
		} else if (in[i].v == o[i].v && in[i].i < o[i].i) {
			o[i].i = in[i].i;
		}
	}
}

__attribute__((noinline)) static void native_satadd(void *o_, const void *in_, size_t n)
{
	short *o = o_;
	const short *in = in_;

	for (size_t i = 0; i < n; i++) {
		int s = in[i] + o[i];

		o[i] = (short)(s > 32767 ? 32767 : s < -32768 ? -32768 : s);
	}
}

__attribute__((noinline)) static void native_vec3(void *o_, const void *in_, size_t n)
{
	struct vec3 *o = o_;
	const struct vec3 *in = in_;

	for (size_t i = 0; i < n; i++) {
		o[i].x += in[i].x;
		o[i].y += in[i].y;
		o[i].z += in[i].z;
	}
}

__attribute__((noinline)) static void native_affine(void *o_, const void *in_, size_t n)
{
	struct affine *o = o_;
	const struct affine *in = in_;

	for (size_t i = 0; i < n; i++) {
		unsigned long long a = in[i].a * o[i].a, b = in[i].a * o[i].b + in[i].b;

		o[i].a = a;
		o[i].b = b;
	}
}

/* A verified one-node program: b1 = op(b1, b0) over bytes. */
struct reducer {
	struct cad_prog prog;
	void *img;
};

static void make_reducer(struct reducer *r, __u64 bytes, unsigned int op, unsigned int dtype,
			 const struct cad_vm_prog_def *vm)
{
	const struct cad_buffer bufs[] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = bytes },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes },
	};
	struct cad_user_op uop = { .line = CAD_NO_LINE };
	struct cad_node node = {
		.kind = CAD_NODE_REDUCE, .op = (__u8)op, .dtype = (__u8)dtype, .dst_buf = 1,
		.len = bytes, .line = CAD_NO_LINE,
	};
	struct cad_image_desc d = { .nranks = 1, .buffers = bufs, .n_buffers = 2, .nodes = &node,
				    .n_nodes = 1 };

	if (vm) {
		uop.elem_size = vm->elem_size;
		uop.code_count = vm->n_code;
		uop.const_count = vm->n_consts;
		node.op = CAD_OP_USER;
		node.dtype = CAD_DT_USER;
		d.ops = &uop;
		d.n_ops = 1;
		d.code = vm->code;
		d.n_code = vm->n_code;
		d.consts = vm->consts;
		d.n_consts = vm->n_consts;
	}
	r->img = build(&d, &r->prog, NULL);
}

typedef void (*native_fn)(void *o, const void *in, size_t n);

static void sum_adapter(void *o, const void *in, size_t n) { native_sum(o, in, n); }
static void max_adapter(void *o, const void *in, size_t n) { native_max(o, in, n); }

/* Throughput of cad_reduce against native over the same data, as a ratio
 * native time / cad time (1.0 = as fast as native). */
static void compare(const char *name, const char *target, double target_value, __u64 bytes,
		    unsigned int op, unsigned int dtype, const struct cad_vm_prog_def *vm,
		    native_fn native, __u32 esz)
{
	struct figure *f;
	const size_t n = bytes / esz;
	double best_native = 1e300, best_cad = 1e300;
	const int inner = 8;
	double *in = xalloc(bytes), *o1 = xalloc(bytes), *o2 = xalloc(bytes);
	void *scratch = xalloc(CAD_VM_SCRATCH_SIZE);
	struct reducer red;
	__u64 rng = 88172645463325252ull;
	size_t i;
	int r;

	if (only && !strstr(name, only)) {
		free(in);
		free(o1);
		free(o2);
		free(scratch);
		return;
	}
	f = figure(name, "x native", target, target_value, 1);
	for (i = 0; i < bytes / 8; i++) {
		/* Small finite doubles in 8-byte words; for int fields, small ints. */
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		in[i] = (double)(rng % 1000) / 7.0 + 1.0;
		o1[i] = o2[i] = 1.0 + (double)(i % 13);
	}
	if (dtype == CAD_DT_USER && (vm->elem_size == 2 || vm == &cad_vm_progs[CAD_VMP_AFFINE]))
		for (i = 0; i < bytes / 8; i++)  /* integer operators: integer data */
			((__u64 *)in)[i] = i * 0x9e3779b97f4a7c15ull;
	make_reducer(&red, bytes, op, dtype, vm);
	snprintf(f->params, sizeof(f->params), "\"bytes\": %llu, \"elements\": %zu",
		 (unsigned long long)bytes, n);
	for (r = -1; r < reps; r++) {
		double t0, t_native, t_cad;
		int k;

		t0 = now_ns();
		for (k = 0; k < inner; k++)
			native(o1, in, n);
		t_native = now_ns() - t0;
		t0 = now_ns();
		for (k = 0; k < inner; k++)
			cad_reduce(&red.prog, &red.prog.nodes[0], o2, in, scratch);
		t_cad = now_ns() - t0;
		if (r >= 0)
			f->rep[f->n++] = t_native / t_cad;
		best_native = t_native < best_native ? t_native : best_native;
		best_cad = t_cad < best_cad ? t_cad : best_cad;
	}
	if (verbose)
		printf("  %s: best native %.3f ns/element, best cad %.3f ns/element\n", name,
		       best_native / inner / n, best_cad / inner / n);
	/* Same operations, same order: the results must agree (NaN-free data). */
	if (memcmp(o1, o2, bytes)) {
		fprintf(stderr, "core_bench: %s: cad and native results differ\n", name);
		exit(2);
	}
	finish(f);
	free(in);
	free(o1);
	free(o2);
	free(scratch);
	free(red.img);
}

/* ------------------------------------------------------------------ */

static void write_json(const char *path)
{
	FILE *out = fopen(path, "w");
	struct utsname u;
	char cpu[256] = "unknown";
	FILE *ci = fopen("/proc/cpuinfo", "r");
	time_t now = time(NULL);
	char date[32];
	int i, k;

	if (!out) {
		perror(path);
		exit(2);
	}
	if (ci) {
		char line[512];

		while (fgets(line, sizeof(line), ci))
			if (!strncmp(line, "model name", 10)) {
				char *c = strchr(line, ':');

				snprintf(cpu, sizeof(cpu), "%.200s", c ? c + 2 : line);
				cpu[strcspn(cpu, "\n\"\\")] = '\0';
				break;
			}
		fclose(ci);
	}
	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(out, "{\n  \"benchmark\": \"core\",\n  \"date\": \"%s\",\n", date);
	fprintf(out, "  \"machine\": { \"cpu\": \"%s\", \"cores\": %ld, \"kernel\": \"%s\" },\n", cpu,
		sysconf(_SC_NPROCESSORS_ONLN), u.release);
	fprintf(out, "  \"engine\": \"none\",\n  \"method\": \"median of interleaved repetitions, "
		"candidate against a reference in the same process\",\n  \"results\": [\n");
	for (i = 0; i < n_figures; i++) {
		struct figure *f = &figures[i];

		fprintf(out, "    { \"name\": \"%s\", \"unit\": \"%s\", \"median\": %.6g, \"min\": %.6g, "
			"\"max\": %.6g,\n      \"params\": { %s },\n", f->name, f->unit, f->median,
			f->min, f->max, f->params);
		if (f->target)
			fprintf(out, "      \"target\": \"%s\", \"met\": %s,\n", f->target,
				(f->higher_is_better ? f->median >= f->target_value
						     : f->median <= f->target_value) ? "true" : "false");
		fprintf(out, "      \"repetitions\": [");
		for (k = 0; k < f->n; k++)
			fprintf(out, "%s%.6g", k ? ", " : "", f->rep[k]);
		fprintf(out, "] }%s\n", i + 1 < n_figures ? "," : "");
	}
	fprintf(out, "  ]\n}\n");
	fclose(out);
}

int main(int argc, char **argv)
{
	const int quick = getenv("BENCH_QUICK") && atoi(getenv("BENCH_QUICK"));
	const __u32 nodes = quick ? 100000 : 1000000;
	const __u64 bytes = quick ? 256 << 10 : 1 << 20;
	const struct cad_vm_prog_def *v = cad_vm_progs;
	const char *json = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			fprintf(stderr, "usage: core_bench [--json FILE] [--only SUBSTRING]\n");
			return 2;
		}
	}
	if (quick)
		reps = 5;
	verbose = getenv("BENCH_VERBOSE") && atoi(getenv("BENCH_VERBOSE"));
	printf("core_bench: %s mode, %d repetitions per figure, median (min, max)\n",
	       quick ? "quick" : "full", reps);
	if (!only)
		bench_executor(nodes);
	if (!only)
		bench_verifier(nodes);
	compare("builtin sum f64", ">= 0.9", 0.9, bytes, CAD_OP_SUM, CAD_DT_DOUBLE, NULL, sum_adapter, 8);
	compare("builtin max f64", ">= 0.9", 0.9, bytes, CAD_OP_MAX, CAD_DT_DOUBLE, NULL, max_adapter, 8);
	compare("vm sum f64", ">= 0.5", 0.5, bytes, 0, CAD_DT_USER, &v[CAD_VMP_SUM_F64], sum_adapter, 8);
	compare("vm max f64", ">= 0.5", 0.5, bytes, 0, CAD_DT_USER, &v[CAD_VMP_MAX_F64], max_adapter, 8);
	compare("vm cmul (complex multiply)", NULL, 0, bytes, 0, CAD_DT_USER, &v[CAD_VMP_CMUL],
		native_cmul, 16);
	compare("vm maxloc (double, int)", NULL, 0, bytes, 0, CAD_DT_USER, &v[CAD_VMP_MAXLOC],
		native_maxloc, 16);
	compare("vm saturating add int16", NULL, 0, bytes, 0, CAD_DT_USER, &v[CAD_VMP_SATADD_I16],
		native_satadd, 2);
	compare("vm vec3 sum", NULL, 0, bytes - bytes % 24, 0, CAD_DT_USER, &v[CAD_VMP_VEC3_SUM],
		native_vec3, 24);
	compare("vm affine (int64 pairs)", NULL, 0, bytes, 0, CAD_DT_USER, &v[CAD_VMP_AFFINE],
		native_affine, 16);
	if (json)
		write_json(json);
	return 0;
}
