/* rt_stress - many collectives in flight at once through cadrt's C API,
 * drawn at random, under cadrun: mpi_stress's counterpart for every engine,
 * the kernel's included (it runs in the qemu VM too).
 *
 * Each round posts 1-6 collectives (every one of the nine) on random
 * communicators (the world, a copy of it, the halves of a split, the world
 * reversed, the world cut in a first half and the rest, a communicator of
 * one), in random forms (non-blocking; non-blocking and waited for at
 * once while the others are in flight; persistent, started again in later
 * rounds beside new ones), random datatypes, ops, counts (0 to 150000
 * elements), roots and in-place choices; then each rank completes the
 * round's requests in an order of its own (cadrt_waitall, cadrt_wait or
 * cadrt_test one by one in a random order, or cadrt_request_get_status
 * alone until it says complete, then a test).
 * Every result is checked against a reference each rank computes alone:
 * the inputs are a function of (rank in the communicator, element, salt),
 * so every output is known without communicating.  Send buffers must come
 * back unchanged, and the byte after each receive buffer untouched.
 *
 * The program (what is posted, in which order) is drawn from --seed and
 * is the same on every rank; the order of completion from the seed and
 * the rank.  Values are small integers: sums and products of floating
 * types are exact in any order, integer sums wrap as C's do.
 *
 *   cadrun -n P rt_stress [--seed S] [--rounds R]
 *
 * Prints "rt_stress: ok (N checks, seed S, engine E)" at rank 0; exit 0 if
 * all passed.
 */
#include <cadrt/cadrt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../stress.h"

static int g_failures, g_checks, g_rank, g_round, g_trace;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "rt_stress: rank %d, round %d: ", g_rank,      \
			g_round);                                              \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		g_failures++;                                                  \
	} while (0)

enum form { NONBLOCKING, AT_ONCE, PERSISTENT };
static const char *fnames[] = { "non-blocking", "waited at once", "persistent" };

#define NCOMMS 6
static cadrt_comm g_comm[NCOMMS];
static const char *g_commname[NCOMMS] = { "world", "copy", "split even/odd", "world reversed",
					  "split first half/rest", "one" };

#define NDT 7
static const cadrt_datatype g_dt[NDT] = { CADRT_INT32, CADRT_DOUBLE, CADRT_FLOAT, CADRT_INT64,
					   CADRT_UINT8, CADRT_INT16, CADRT_INT_INT };
static const char *g_dtname[NDT] = { "int32", "double", "float", "int64", "uint8", "int16", "int_int" };

static cadrt_op op_for(cadrt_datatype dt, int pick, const char **name)
{
	static const char *in[] = { "sum", "max", "min", "band", "bor", "bxor" };
	static const char *fl[] = { "sum", "max", "min", "prod" };
	static const cadrt_op int_ops[] = { CADRT_SUM, CADRT_MAX, CADRT_MIN, CADRT_BAND, CADRT_BOR, CADRT_BXOR };
	static const cadrt_op fl_ops[] = { CADRT_SUM, CADRT_MAX, CADRT_MIN, CADRT_PROD };
	switch (dt) {
	case CADRT_DOUBLE:
		*name = fl[pick % 4];
		return fl_ops[pick % 4];
	case CADRT_FLOAT: /* a product of 8 may not fit a float's 24 bits */
		*name = fl[pick % 3];
		return fl_ops[pick % 3];
	case CADRT_INT_INT:
		*name = pick % 2 ? "maxloc" : "minloc";
		return pick % 2 ? CADRT_MAXLOC : CADRT_MINLOC;
	default:
		*name = in[pick % 6];
		return int_ops[pick % 6];
	}
}

/* Element i of the input of comm rank r, stored into p[at]. */
static void put(cadrt_datatype dt, void *p, size_t at, int r, size_t i, int salt)
{
	const int v = (int)(((uint64_t)r * 7919u + i * 104729u + (uint64_t)salt * 31u) % 97u) - 40;
	switch (dt) {
	case CADRT_INT32: ((int32_t *)p)[at] = v; break;
	case CADRT_DOUBLE: ((double *)p)[at] = v; break;
	case CADRT_FLOAT: ((float *)p)[at] = (float)v; break;
	case CADRT_INT64: ((int64_t *)p)[at] = (int64_t)v * 1000003; break;
	case CADRT_UINT8: ((uint8_t *)p)[at] = (uint8_t)(v + 40); break;
	case CADRT_INT16: ((int16_t *)p)[at] = (int16_t)v; break;
	case CADRT_INT_INT:
		((int32_t *)p)[2 * at] = v;
		((int32_t *)p)[2 * at + 1] = r;
		break;
	default: break;
	}
}

/* a = a op b, one element. */
#define ARITH(T)                                                               \
	do {                                                                   \
		T x, y, z;                                                     \
		memcpy(&x, a, sizeof x);                                       \
		memcpy(&y, b, sizeof y);                                       \
		switch (op) {                                                  \
		case CADRT_SUM: z = (T)(x + y); break;                         \
		case CADRT_PROD: z = (T)(x * y); break;                        \
		case CADRT_MAX: z = x > y ? x : y; break;                      \
		case CADRT_MIN: z = x < y ? x : y; break;                      \
		default: z = x; break;                                         \
		}                                                              \
		memcpy(a, &z, sizeof z);                                       \
	} while (0)
#define BITS(T)                                                                \
	do {                                                                   \
		T x, y;                                                        \
		memcpy(&x, a, sizeof x);                                       \
		memcpy(&y, b, sizeof y);                                       \
		if (op == CADRT_BAND)                                          \
			x &= y;                                                \
		else if (op == CADRT_BOR)                                      \
			x |= y;                                                \
		else if (op == CADRT_BXOR)                                     \
			x ^= y;                                                \
		memcpy(a, &x, sizeof x);                                       \
	} while (0)
static void combine(cadrt_datatype dt, cadrt_op op, unsigned char *a, const unsigned char *b)
{
	const int bits = op == CADRT_BAND || op == CADRT_BOR || op == CADRT_BXOR;
	switch (dt) {
	case CADRT_INT32: if (bits) BITS(uint32_t); else ARITH(int32_t); break;
	case CADRT_INT64: if (bits) BITS(uint64_t); else ARITH(int64_t); break;
	case CADRT_UINT8: if (bits) BITS(uint8_t); else ARITH(uint8_t); break;
	case CADRT_INT16: if (bits) BITS(uint16_t); else ARITH(int16_t); break;
	case CADRT_FLOAT: ARITH(float); break;
	case CADRT_DOUBLE: ARITH(double); break;
	case CADRT_INT_INT: {
		int32_t x[2], y[2];
		memcpy(x, a, 8);
		memcpy(y, b, 8);
		const int take = op == CADRT_MINLOC ? y[0] < x[0] : y[0] > x[0];
		if (take || (y[0] == x[0] && y[1] < x[1]))
			memcpy(a, y, 8);
		break;
	}
	default: break;
	}
}

struct op {
	int id; /* its place in the program */
	enum coll c;
	enum form form;
	int ci, dti, n, root, inplace, starts_left, salt, P, me;
	cadrt_op op;
	const char *opname;
	size_t es, sn, rn; /* element size, send and receive counts */
	char *send, *recv, *saved, *want;
	cadrt_request req;
	int rc;
	struct op *next;
};

static void describe(const struct op *o, char *buf, size_t len)
{
	snprintf(buf, len, "op #%d: %s %s%s on %s (%d of %d), %s x %d%s%s, root %d", o->id, fnames[o->form],
		 cnames[o->c], o->inplace ? " in place" : "", g_commname[o->ci], o->me, o->P, g_dtname[o->dti], o->n,
		 o->opname ? ", " : "", o->opname ? o->opname : "", o->root);
}

/* Element j of the reduction over every rank's input. */
static void reduced(const struct op *o, char *out, size_t j)
{
	unsigned char acc[16], b[16];
	const cadrt_datatype dt = g_dt[o->dti];
	put(dt, acc, 0, 0, j, o->salt);
	for (int r = 1; r < o->P; r++) {
		put(dt, b, 0, r, j, o->salt);
		combine(dt, o->op, acc, b);
	}
	memcpy(out, acc, o->es);
}

/* Fills the inputs for a start and computes what must come out. */
static void prepare(struct op *o)
{
	const cadrt_datatype dt = g_dt[o->dti];
	const size_t es = o->es, n = (size_t)o->n, P = (size_t)o->P, me = (size_t)o->me;
	const int root = o->me == o->root;
	memset(o->recv, 0xa5, o->rn * es + 1);
	memset(o->send, 0x5a, o->sn * es + 1);
	for (size_t i = 0; i < o->sn; i++)
		put(dt, o->send, i, o->me, i, o->salt);
	if (o->inplace) { /* the input in the receive buffer, where MPI has it */
		if (o->c == GATHER || o->c == ALLGATHER) {
			for (size_t i = 0; i < n; i++)
				put(dt, o->recv, me * n + i, o->me, i, o->salt);
		} else if (o->c != SCATTER) {
			for (size_t i = 0; i < o->rn; i++)
				put(dt, o->recv, i, o->me, i, o->salt);
		}
	}
	if (o->c == BCAST && root)
		for (size_t i = 0; i < n; i++)
			put(dt, o->recv, i, o->me, i, o->salt);
	memcpy(o->saved, o->send, o->sn * es + 1);
	/* What the receive buffer must hold after. */
	memcpy(o->want, o->recv, o->rn * es + 1);
	switch (o->c) {
	case BCAST:
		for (size_t i = 0; i < n; i++)
			put(dt, o->want, i, o->root, i, o->salt);
		break;
	case REDUCE: case ALLREDUCE:
		if (o->c == ALLREDUCE || root)
			for (size_t i = 0; i < n; i++)
				reduced(o, o->want + i * es, i);
		break;
	case GATHER: case ALLGATHER:
		if (o->c == ALLGATHER || root)
			for (size_t r = 0; r < P; r++)
				for (size_t i = 0; i < n; i++)
					put(dt, o->want, r * n + i, (int)r, i, o->salt);
		break;
	case SCATTER:
		if (!(o->inplace && root)) /* the root's block stays in its send buffer */
			for (size_t i = 0; i < n; i++)
				put(dt, o->want, i, o->root, me * n + i, o->salt);
		break;
	case ALLTOALL:
		for (size_t r = 0; r < P; r++)
			for (size_t i = 0; i < n; i++)
				put(dt, o->want, r * n + i, (int)r, me * n + i, o->salt);
		break;
	case RSB:
		for (size_t i = 0; i < n; i++)
			reduced(o, o->want + i * es, me * n + i);
		break;
	default: break;
	}
}

/* The collective, non-blocking into *req, or persistent made into *req. */
static int post(struct op *o, cadrt_request *req)
{
	const int root = o->me == o->root;
	const void *s = o->send;
	void *r = o->recv;
	if (o->inplace) {
		switch (o->c) {
		case REDUCE: case GATHER: if (root) s = CADRT_IN_PLACE; break;
		case SCATTER: if (root) r = CADRT_IN_PLACE; break;
		case ALLREDUCE: case ALLGATHER: case ALLTOALL: case RSB: s = CADRT_IN_PLACE; break;
		default: break;
		}
	}
	const size_t n = (size_t)o->n;
	const cadrt_datatype dt = g_dt[o->dti];
	const cadrt_comm comm = g_comm[o->ci];
	const cadrt_op op = o->op;
	const int rt = o->root;
	if (o->form == PERSISTENT) {
		switch (o->c) {
		case BCAST: return cadrt_bcast_init(r, n, dt, rt, comm, req);
		case REDUCE: return cadrt_reduce_init(s, r, n, dt, op, rt, comm, req);
		case ALLREDUCE: return cadrt_allreduce_init(s, r, n, dt, op, comm, req);
		case GATHER: return cadrt_gather_init(s, r, n, dt, rt, comm, req);
		case SCATTER: return cadrt_scatter_init(s, r, n, dt, rt, comm, req);
		case ALLGATHER: return cadrt_allgather_init(s, r, n, dt, comm, req);
		case ALLTOALL: return cadrt_alltoall_init(s, r, n, dt, comm, req);
		case RSB: return cadrt_reduce_scatter_block_init(s, r, n, dt, op, comm, req);
		case BARRIER: return cadrt_barrier_init(comm, req);
		default: return -1;
		}
	}
	switch (o->c) {
	case BCAST: return cadrt_ibcast(r, n, dt, rt, comm, req);
	case REDUCE: return cadrt_ireduce(s, r, n, dt, op, rt, comm, req);
	case ALLREDUCE: return cadrt_iallreduce(s, r, n, dt, op, comm, req);
	case GATHER: return cadrt_igather(s, r, n, dt, rt, comm, req);
	case SCATTER: return cadrt_iscatter(s, r, n, dt, rt, comm, req);
	case ALLGATHER: return cadrt_iallgather(s, r, n, dt, comm, req);
	case ALLTOALL: return cadrt_ialltoall(s, r, n, dt, comm, req);
	case RSB: return cadrt_ireduce_scatter_block(s, r, n, dt, op, comm, req);
	case BARRIER: return cadrt_ibarrier(comm, req);
	default: return -1;
	}
}

static void check(struct op *o)
{
	char what[256];
	describe(o, what, sizeof what);
	g_checks++;
	if (o->rc) {
		FAIL("%s: error %d", what, o->rc);
		return;
	}
	if (memcmp(o->send, o->saved, o->sn * o->es + 1) != 0)
		FAIL("%s: the send buffer changed at byte %zu", what,
		     first_difference(o->send, o->saved, o->sn * o->es + 1));
	size_t cmp = o->rn * o->es + 1; /* and the byte after it, untouched */
	if ((o->c == REDUCE || o->c == GATHER) && o->me != o->root)
		cmp = 0; /* not significant there */
	if (o->c == RSB && o->inplace)
		cmp = (size_t)o->n * o->es; /* the rest of the buffer is undefined */
	if (memcmp(o->recv, o->want, cmp) != 0)
		FAIL("%s: wrong at byte %zu of %zu", what, first_difference(o->recv, o->want, cmp), cmp);
}

/* Completes reqs[0..n) (NULL entries and inactive persistent ones
 * included) in a way and order of this rank's own; rcs[i] its result. */
static void complete_all(int n, cadrt_request *reqs, int *rcs)
{
	int order[256];
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) {
		const int j = local(i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	switch (local(4)) {
	case 0: { /* cadrt_waitall: its first failure stands for all */
		const int rc = cadrt_waitall(n, reqs);
		for (int i = 0; i < n; i++)
			rcs[i] = rc;
		break;
	}
	case 1:
		for (int i = 0; i < n; i++)
			rcs[order[i]] = reqs[order[i]] ? cadrt_wait(&reqs[order[i]]) : rcs[order[i]];
		break;
	case 2: { /* tested round the array until each is done */
		char done[256] = { 0 };
		for (int left = n; left > 0;)
			for (int i = 0; i < n; i++) {
				const int k = order[i];
				int flag = 0;
				if (done[k])
					continue;
				rcs[k] = cadrt_test(&reqs[k], &flag);
				if (flag || rcs[k]) {
					done[k] = 1;
					left--;
				}
			}
		break;
	}
	default: /* cadrt_request_get_status alone until it says complete
		  * (it progresses, as MPI's does), cadrt_request_peek (which
		  * does not) looked at before it; then the test must complete
		  * at once */
		for (int i = 0; i < n; i++) {
			const int k = order[i];
			int seen = 0, was = 0, flag = 0;
			while (!was) {
				if (cadrt_request_peek(reqs[k], &seen))
					FAIL("cadrt_request_peek: %s", cadrt_error_message());
				if (cadrt_request_get_status(reqs[k], &was))
					FAIL("cadrt_request_get_status: %s", cadrt_error_message());
				if (seen && !was)
					FAIL("cadrt_request_peek said complete, cadrt_request_get_status did not");
			}
			rcs[k] = cadrt_test(&reqs[k], &flag);
			if (!rcs[k] && !flag)
				FAIL("cadrt_request_get_status said complete, cadrt_test did not");
		}
		break;
	}
}

static struct op *new_op(int id)
{
	struct op *o = calloc(1, sizeof *o);
	o->id = id;
	o->c = (enum coll)prog(NCOLL);
	const int f = prog(20);
	o->form = f < 12 ? NONBLOCKING : f < 15 ? AT_ONCE : PERSISTENT;
	o->starts_left = o->form == PERSISTENT ? 1 + prog(3) : 1;
	o->ci = prog(NCOMMS);
	o->dti = prog(NDT);
	if (o->c == REDUCE || o->c == ALLREDUCE || o->c == RSB)
		o->op = op_for(g_dt[o->dti], prog(6), &o->opname);
	o->n = draw_count();
	cadrt_comm_size(g_comm[o->ci], &o->P);
	cadrt_comm_rank(g_comm[o->ci], &o->me);
	o->root = prog(1 << 16) % o->P; /* the same within each group of a split */
	/* In place where MPI allows it. */
	o->inplace = o->c != BCAST && o->c != BARRIER && prog(4) == 0;
	if (o->c == BARRIER)
		o->n = 0;
	o->es = cadrt_datatype_size(g_dt[o->dti]);
	const size_t n = (size_t)o->n, P = (size_t)o->P;
	o->sn = o->rn = n;
	switch (o->c) {
	case GATHER: case ALLGATHER: o->rn = P * n; break;
	case SCATTER: o->sn = P * n; break;
	case ALLTOALL: o->sn = o->rn = P * n; break;
	case RSB: o->sn = P * n; if (o->inplace) o->rn = P * n; break;
	default: break;
	}
	o->send = malloc(o->sn * o->es + 1);
	o->saved = malloc(o->sn * o->es + 1);
	o->recv = malloc(o->rn * o->es + 1);
	o->want = malloc(o->rn * o->es + 1);
	return o;
}

static void free_op(struct op *o)
{
	if (o->form == PERSISTENT && o->req) {
		const int rc = cadrt_req_free(&o->req);
		if (rc || o->req)
			FAIL("op #%d: cadrt_req_free: %d, request %s", o->id, rc, o->req ? "left" : "NULL");
	}
	free(o->send);
	free(o->saved);
	free(o->recv);
	free(o->want);
	free(o);
}

int main(int argc, char **argv)
{
	unsigned long seed = 1;
	int rounds = 150;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: rt_stress [--seed S] [--rounds R]\n");
			return 2;
		}
	}
	g_trace = getenv("RT_STRESS_TRACE") != NULL; /* each op as it is posted, to stderr */
	if (cadrt_init()) {
		fprintf(stderr, "rt_stress: cadrt_init: %s\n", cadrt_error_message());
		return 1;
	}
	const cadrt_comm world = cadrt_comm_world();
	int size;
	cadrt_comm_rank(world, &g_rank);
	cadrt_comm_size(world, &size);
	stress_seed(seed, g_rank);
	g_comm[0] = world;
	int err = cadrt_comm_split(world, 0, g_rank, &g_comm[1]);
	err = err ? err : cadrt_comm_split(world, g_rank % 2, g_rank, &g_comm[2]);
	err = err ? err : cadrt_comm_split(world, 0, size - g_rank, &g_comm[3]);
	err = err ? err : cadrt_comm_split(world, g_rank < size / 2, g_rank, &g_comm[4]);
	err = err ? err : cadrt_comm_split(world, g_rank, 0, &g_comm[5]);
	if (err) {
		fprintf(stderr, "rt_stress: cadrt_comm_split: %s\n", cadrt_error_message());
		return 1;
	}

	struct op *persistent = NULL; /* made in earlier rounds, in order */
	int ids = 0;
	for (g_round = 0; g_round < rounds; g_round++) {
		struct op *round[64];
		cadrt_request reqs[64];
		int rcs[64], nops = 0;
		/* The persistent ones made before, started again in order. */
		for (struct op *o = persistent; o; o = o->next) {
			o->salt = g_round * 64 + o->id;
			prepare(o);
			o->rc = cadrt_start(&o->req);
			round[nops++] = o;
		}
		const int fresh = 1 + prog(6);
		for (int k = 0; k < fresh; k++) {
			struct op *o = new_op(ids++);
			o->salt = g_round * 64 + o->id;
			prepare(o);
			if (g_trace) {
				char what[256];
				describe(o, what, sizeof what);
				fprintf(stderr, "rt_stress: rank %d, round %d: %s\n", g_rank, g_round, what);
			}
			o->rc = post(o, &o->req);
			if (o->rc == 0 && o->form == PERSISTENT)
				o->rc = cadrt_start(&o->req);
			if (o->rc == 0 && o->form == AT_ONCE)
				o->rc = cadrt_wait(&o->req);
			if (o->rc)
				FAIL("op #%d: %s: %s", o->id, cnames[o->c], cadrt_error_message());
			round[nops++] = o;
		}
		int nreqs = 0;
		for (int k = 0; k < nops; k++) {
			reqs[nreqs] = round[k]->rc ? NULL : round[k]->req;
			rcs[nreqs++] = 0;
		}
		complete_all(nreqs, reqs, rcs);
		for (int k = 0; k < nops; k++) {
			struct op *o = round[k];
			if (!o->rc)
				o->rc = rcs[k];
			if (o->form == PERSISTENT && reqs[k] != o->req && !o->rc)
				FAIL("op #%d: the persistent request changed when it completed", o->id);
			if (o->form != PERSISTENT && reqs[k])
				FAIL("op #%d: a completed request was not set to NULL", o->id);
			check(o);
		}
		/* Persistent ones go on to later rounds until their starts are
		 * used: old ones first (in order), then this round's new ones. */
		struct op *keep = NULL, **tail = &keep;
		for (int k = 0; k < nops; k++) {
			struct op *o = round[k];
			o->next = NULL;
			if (o->form == PERSISTENT && --o->starts_left > 0 && o->rc == 0) {
				*tail = o;
				tail = &o->next;
			} else {
				free_op(o);
			}
		}
		persistent = keep;
	}
	while (persistent) {
		struct op *o = persistent;
		persistent = o->next;
		free_op(o);
	}
	for (int i = 1; i < NCOMMS; i++)
		cadrt_comm_free(&g_comm[i]);
	/* Every rank's verdict, through cadrt itself (a sum of failures). */
	int sums[2] = { g_failures, g_checks }, all[2] = { 0, 0 };
	cadrt_request r;
	if (cadrt_iallreduce(sums, all, 2, CADRT_INT32, CADRT_SUM, world, &r) || cadrt_wait(&r)) {
		fprintf(stderr, "rt_stress: the final allreduce: %s\n", cadrt_error_message());
		all[0] = g_failures + 1;
	}
	if (g_rank == 0) {
		if (all[0])
			printf("rt_stress: %d failures (of %d checks, seed %lu, engine %s)\n", all[0], all[1], seed,
			       cadrt_engine());
		else
			printf("rt_stress: ok (%d checks, seed %lu, engine %s)\n", all[1], seed, cadrt_engine());
	}
	cadrt_finalize();
	return all[0] || g_failures ? 1 : 0;
}
