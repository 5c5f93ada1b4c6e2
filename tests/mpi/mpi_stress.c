/* mpi_stress - a random differential stress test of libcadmpi.so, an
 * ordinary MPI program like mpi_check (it knows nothing of cadrt).
 *
 * mpi_check runs one collective at a time.  This one keeps many in flight
 * at once, the way an application that overlaps does: each round posts
 * 1-6 collectives (every one of the nine, drawn at random) on random
 * communicators (the world, a dup, the halves of a split, the world
 * reversed by a split, MPI_COMM_SELF), in random forms (non-blocking;
 * blocking, issued while the others are in flight; persistent, started
 * again in later rounds while new ones are posted), random datatypes, ops,
 * counts (0 to 150000 elements), roots and in-place choices, next to
 * point-to-point messages of up to 300 kB; then each rank completes the
 * round's requests in an order of its own (Waitall, Waitany, Waitsome,
 * Testsome, Testany, Testall, Wait or Test one by one in a random order,
 * Request_get_status).  Afterwards every collective is run again through
 * PMPI_ (Open MPI's own, blocking) on the same inputs, in the same order,
 * and the results must be byte-identical; a send buffer must come back
 * unchanged, a persistent request's handle the same.
 *
 * The program (what is posted, in which order) is drawn from --seed and
 * is the same on every rank, as MPI requires; the order of completion is
 * drawn from the seed and the rank.  Values are small integers, so that
 * sums and products of floating types are exact in any order.
 *
 *   mpirun -n P [-x LD_PRELOAD=libcadmpi.so] mpi_stress [--seed S]
 *          [--rounds R]
 *
 * Prints "mpi_stress: ok (N checks, seed S)" at rank 0; exit 0 if all
 * passed.
 */
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI's MPIX_*_init: MPI-4's persistent collectives */
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../stress.h"

static int g_failures, g_checks, g_wrank, g_round;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "mpi_stress: rank %d, round %d: ", g_wrank,    \
			g_round);                                              \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		g_failures++;                                                  \
	} while (0)

enum form { NONBLOCKING, BLOCKING, PERSISTENT };
static const char *fnames[] = { "non-blocking", "blocking", "persistent" };

#define NCOMMS 6
static MPI_Comm g_comm[NCOMMS];
static const char *g_commname[NCOMMS] = { "world", "dup", "split even/odd", "world reversed",
					  "split halves", "self" };

#define NDT 7
static MPI_Datatype g_dt[NDT];
static const char *g_dtname[NDT] = { "int", "double", "float", "int64", "unsigned char", "short", "2int" };
enum { DT_INT, DT_DOUBLE, DT_FLOAT, DT_INT64, DT_UCHAR, DT_SHORT, DT_2INT };

/* The ops that are exact on each datatype with these values. */
static MPI_Op op_for(int dti, int pick, const char **name)
{
	static const char *in[] = { "sum", "max", "min", "band", "bor", "bxor" };
	static const char *fl[] = { "sum", "max", "min", "prod" };
	const MPI_Op int_ops[] = { MPI_SUM, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR };
	const MPI_Op fl_ops[] = { MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD };
	switch (dti) {
	case DT_DOUBLE:
		*name = fl[pick % 4];
		return fl_ops[pick % 4];
	case DT_FLOAT: /* a product of 8 may not fit a float's 24 bits */
		*name = fl[pick % 3];
		return fl_ops[pick % 3];
	case DT_2INT:
		*name = pick % 2 ? "maxloc" : "minloc";
		return pick % 2 ? MPI_MAXLOC : MPI_MINLOC;
	default:
		*name = in[pick % 6];
		return int_ops[pick % 6];
	}
}

static void fill(void *p, int dti, size_t n, int rank, int salt)
{
	for (size_t i = 0; i < n; i++) {
		const int v = (int)(((uint64_t)rank * 7919u + i * 104729u + (uint64_t)salt * 31u) % 97u) - 40;
		switch (dti) {
		case DT_INT: ((int *)p)[i] = v; break;
		case DT_DOUBLE: ((double *)p)[i] = v; break;
		case DT_FLOAT: ((float *)p)[i] = (float)v; break;
		case DT_INT64: ((int64_t *)p)[i] = (int64_t)v * 1000003; break;
		case DT_UCHAR: ((unsigned char *)p)[i] = (unsigned char)(v + 40); break;
		case DT_SHORT: ((short *)p)[i] = (short)v; break;
		case DT_2INT:
			((int *)p)[2 * i] = v;
			((int *)p)[2 * i + 1] = rank;
			break;
		}
	}
}

struct op {
	int id;	       /* its place in the program */
	enum coll c;
	enum form form;
	int ci, dti, n, root, inplace, starts_left, salt;
	MPI_Op mop;
	const char *opname;
	size_t es, sn, rn;	     /* element size, send and receive counts */
	char *send, *recv;	     /* ours */
	char *rsend, *rrecv;	     /* the reference's */
	MPI_Request req, handle; /* handle: a persistent request as made */
	int rc;
	struct op *next;
};

static void describe(const struct op *o, char *buf, size_t len)
{
	snprintf(buf, len, "op #%d: %s %s%s on %s, %s x %d%s%s, root %d", o->id, fnames[o->form], cnames[o->c],
		 o->inplace ? " in place" : "", g_commname[o->ci], g_dtname[o->dti], o->n, o->opname ? ", " : "",
		 o->opname ? o->opname : "", o->root);
}

static int rank_in(const struct op *o)
{
	int r;
	MPI_Comm_rank(g_comm[o->ci], &r);
	return r;
}

static int size_of(const struct op *o)
{
	int s;
	MPI_Comm_size(g_comm[o->ci], &s);
	return s;
}

/* Fills the inputs (ours and the reference's the same) for a start. */
static void prepare(struct op *o)
{
	const int rank = rank_in(o);
	const size_t es = o->es, n = (size_t)o->n;
	memset(o->recv, 0xa5, o->rn * es + 1);
	memset(o->send, 0x5a, o->sn * es + 1);
	fill(o->send, o->dti, o->sn, rank, o->salt);
	if (o->inplace) {
		switch (o->c) {
		case REDUCE: case ALLREDUCE: case RSB: case ALLTOALL:
			fill(o->recv, o->dti, o->rn, rank, o->salt);
			break;
		case GATHER: case ALLGATHER:
			fill(o->recv + (size_t)rank * n * es, o->dti, n, rank, o->salt);
			break;
		case SCATTER: /* the root's block stays in its send buffer */
			break;
		default: break;
		}
	}
	if (o->c == BCAST && rank == o->root)
		fill(o->recv, o->dti, n, rank, o->salt);
	memcpy(o->rsend, o->send, o->sn * es + 1);
	memcpy(o->rrecv, o->recv, o->rn * es + 1);
}

/* The send and receive arguments, MPI_IN_PLACE where it applies to this
 * rank. */
static void args(const struct op *o, const char *send, char *recv, const void **s, void **r)
{
	const int root = rank_in(o) == o->root;
	*s = send;
	*r = recv;
	if (!o->inplace)
		return;
	switch (o->c) {
	case REDUCE: case GATHER:
		if (root)
			*s = MPI_IN_PLACE;
		break;
	case SCATTER:
		if (root)
			*r = MPI_IN_PLACE;
		break;
	case ALLREDUCE: case ALLGATHER: case ALLTOALL: case RSB:
		*s = MPI_IN_PLACE;
		break;
	default: break;
	}
}

/* Through MPI_ (libcadmpi when preloaded): blocking, non-blocking into
 * *req, or a persistent request made into *req. */
static int call(struct op *o, MPI_Request *req)
{
	const void *s;
	void *r;
	args(o, o->send, o->recv, &s, &r);
	const int n = o->n, root = o->root;
	const MPI_Datatype dt = g_dt[o->dti];
	const MPI_Comm comm = g_comm[o->ci];
	const MPI_Op op = o->mop;
	if (o->form == BLOCKING) {
		switch (o->c) {
		case BCAST: return MPI_Bcast(r, n, dt, root, comm);
		case REDUCE: return MPI_Reduce(s, r, n, dt, op, root, comm);
		case ALLREDUCE: return MPI_Allreduce(s, r, n, dt, op, comm);
		case GATHER: return MPI_Gather(s, n, dt, r, n, dt, root, comm);
		case SCATTER: return MPI_Scatter(s, n, dt, r, n, dt, root, comm);
		case ALLGATHER: return MPI_Allgather(s, n, dt, r, n, dt, comm);
		case ALLTOALL: return MPI_Alltoall(s, n, dt, r, n, dt, comm);
		case RSB: return MPI_Reduce_scatter_block(s, r, n, dt, op, comm);
		case BARRIER: return MPI_Barrier(comm);
		default: return MPI_ERR_OTHER;
		}
	}
#ifdef HAVE_PERSISTENT
	if (o->form == PERSISTENT) {
		const MPI_Info info = MPI_INFO_NULL;
		switch (o->c) {
		case BCAST: return MPIX_Bcast_init(r, n, dt, root, comm, info, req);
		case REDUCE: return MPIX_Reduce_init(s, r, n, dt, op, root, comm, info, req);
		case ALLREDUCE: return MPIX_Allreduce_init(s, r, n, dt, op, comm, info, req);
		case GATHER: return MPIX_Gather_init(s, n, dt, r, n, dt, root, comm, info, req);
		case SCATTER: return MPIX_Scatter_init(s, n, dt, r, n, dt, root, comm, info, req);
		case ALLGATHER: return MPIX_Allgather_init(s, n, dt, r, n, dt, comm, info, req);
		case ALLTOALL: return MPIX_Alltoall_init(s, n, dt, r, n, dt, comm, info, req);
		case RSB: return MPIX_Reduce_scatter_block_init(s, r, n, dt, op, comm, info, req);
		case BARRIER: return MPIX_Barrier_init(comm, info, req);
		default: return MPI_ERR_OTHER;
		}
	}
#endif
	switch (o->c) {
	case BCAST: return MPI_Ibcast(r, n, dt, root, comm, req);
	case REDUCE: return MPI_Ireduce(s, r, n, dt, op, root, comm, req);
	case ALLREDUCE: return MPI_Iallreduce(s, r, n, dt, op, comm, req);
	case GATHER: return MPI_Igather(s, n, dt, r, n, dt, root, comm, req);
	case SCATTER: return MPI_Iscatter(s, n, dt, r, n, dt, root, comm, req);
	case ALLGATHER: return MPI_Iallgather(s, n, dt, r, n, dt, comm, req);
	case ALLTOALL: return MPI_Ialltoall(s, n, dt, r, n, dt, comm, req);
	case RSB: return MPI_Ireduce_scatter_block(s, r, n, dt, op, comm, req);
	case BARRIER: return MPI_Ibarrier(comm, req);
	default: return MPI_ERR_OTHER;
	}
}

/* Open MPI's own, blocking, on the reference's buffers. */
static void reference(struct op *o)
{
	const void *s;
	void *r;
	args(o, o->rsend, o->rrecv, &s, &r);
	const int n = o->n, root = o->root;
	const MPI_Datatype dt = g_dt[o->dti];
	const MPI_Comm comm = g_comm[o->ci];
	const MPI_Op op = o->mop;
	switch (o->c) {
	case BCAST: PMPI_Bcast(r, n, dt, root, comm); break;
	case REDUCE: PMPI_Reduce(s, r, n, dt, op, root, comm); break;
	case ALLREDUCE: PMPI_Allreduce(s, r, n, dt, op, comm); break;
	case GATHER: PMPI_Gather(s, n, dt, r, n, dt, root, comm); break;
	case SCATTER: PMPI_Scatter(s, n, dt, r, n, dt, root, comm); break;
	case ALLGATHER: PMPI_Allgather(s, n, dt, r, n, dt, comm); break;
	case ALLTOALL: PMPI_Alltoall(s, n, dt, r, n, dt, comm); break;
	case RSB: PMPI_Reduce_scatter_block(s, r, n, dt, op, comm); break;
	case BARRIER: PMPI_Barrier(comm); break;
	default: break;
	}
}

/* After a start completed: the reference, then the comparison. */
static void check(struct op *o)
{
	char what[256];
	describe(o, what, sizeof what);
	const int rank = rank_in(o);
	/* Before the reference, which may write rsend's neighbours: the send
	 * buffer is only read (the root's in an in-place scatter too). */
	if (memcmp(o->send, o->rsend, o->sn * o->es + 1) != 0) {
		const size_t k = first_difference(o->send, o->rsend, o->sn * o->es + 1);
		FAIL("%s: the send buffer changed at byte %zu", what, k);
	}
	reference(o);
	g_checks++;
	if (o->rc != MPI_SUCCESS) {
		FAIL("%s: MPI error %d", what, o->rc);
		return;
	}
	if (o->form == PERSISTENT && o->req != o->handle)
		FAIL("%s: the persistent request's handle changed", what);
	size_t cmp = o->rn * o->es + 1; /* and the byte after it, untouched */
	if ((o->c == REDUCE || o->c == GATHER) && rank != o->root)
		cmp = 0;
	if (o->c == RSB && o->inplace)
		cmp = (size_t)o->n * o->es; /* the rest of the buffer is undefined */
	if (memcmp(o->recv, o->rrecv, cmp) != 0) {
		const size_t k = first_difference(o->recv, o->rrecv, cmp);
		FAIL("%s: differs from Open MPI's at byte %zu of %zu", what, k, cmp);
	}
}

/* A ring exchange of m bytes on a communicator, posted next to the
 * collectives. */
struct p2p {
	int ci, m, tag;
	char *out, *in;
	MPI_Request r[2];
};

static void p2p_post(struct p2p *p)
{
	MPI_Comm comm = g_comm[p->ci];
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	p->out = malloc((size_t)p->m + 1);
	p->in = malloc((size_t)p->m + 1);
	for (int i = 0; i < p->m; i++)
		p->out[i] = (char)(rank * 31 + i * 7 + g_round);
	memset(p->in, 0, (size_t)p->m + 1);
	MPI_Irecv(p->in, p->m, MPI_CHAR, (rank + size - 1) % size, p->tag, comm, &p->r[0]);
	MPI_Isend(p->out, p->m, MPI_CHAR, (rank + 1) % size, p->tag, comm, &p->r[1]);
}

static void p2p_check(struct p2p *p)
{
	MPI_Comm comm = g_comm[p->ci];
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	const int from = (rank + size - 1) % size;
	g_checks++;
	for (int i = 0; i < p->m; i++)
		if (p->in[i] != (char)(from * 31 + i * 7 + g_round)) {
			FAIL("point-to-point message of %d bytes on %s (tag %d) wrong at byte %d", p->m,
			     g_commname[p->ci], p->tag, i);
			break;
		}
	free(p->out);
	free(p->in);
}

/* Completes reqs[0..n) (some may be null or inactive persistent ones) in a
 * way and order of this rank's own. */
static int complete_all(int n, MPI_Request *reqs)
{
	int rc = MPI_SUCCESS, idx, flag, outcount;
	int *indices = malloc(sizeof(int) * (size_t)(n + 1));
	const int mode = local(9);
	switch (mode) {
	case 0:
		rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
		break;
	case 1:
		for (;;) {
			rc = MPI_Waitany(n, reqs, &idx, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS || idx == MPI_UNDEFINED)
				break;
		}
		break;
	case 2:
		for (;;) {
			rc = MPI_Waitsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
			if (rc != MPI_SUCCESS || outcount == MPI_UNDEFINED)
				break;
		}
		break;
	case 3:
		for (;;) {
			rc = MPI_Testsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
			if (rc != MPI_SUCCESS || outcount == MPI_UNDEFINED)
				break;
		}
		break;
	case 4:
		for (;;) {
			rc = MPI_Testany(n, reqs, &idx, &flag, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS || (flag && idx == MPI_UNDEFINED))
				break;
		}
		break;
	case 5:
		for (flag = 0; !flag && rc == MPI_SUCCESS;)
			rc = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
		break;
	case 6: /* one by one, in a random order */
	case 7: { /* tested round the array until each is done */
		int *order = malloc(sizeof(int) * (size_t)(n + 1));
		for (int i = 0; i < n; i++)
			order[i] = i;
		for (int i = n - 1; i > 0; i--) {
			const int j = local(i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		if (mode == 6) {
			for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
				rc = MPI_Wait(&reqs[order[i]], MPI_STATUS_IGNORE);
		} else {
			char *done = calloc((size_t)n + 1, 1);
			for (int left = n; left > 0 && rc == MPI_SUCCESS;)
				for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
					if (done[order[i]])
						continue;
					rc = MPI_Test(&reqs[order[i]], &flag, MPI_STATUS_IGNORE);
					if (flag) {
						done[order[i]] = 1;
						left--;
					}
				}
			free(done);
		}
		free(order);
		break;
	}
	default: /* one polled without being freed, then all waited for */
		if (n > 0) {
			const int k = local(n);
			for (flag = 0; !flag && rc == MPI_SUCCESS;)
				rc = MPI_Request_get_status(reqs[k], &flag, MPI_STATUS_IGNORE);
		}
		if (rc == MPI_SUCCESS)
			rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
		break;
	}
	free(indices);
	return rc;
}

static struct op *new_op(int id)
{
	struct op *o = calloc(1, sizeof *o);
	o->id = id;
	o->c = (enum coll)prog(NCOLL);
	const int f = prog(20);
	o->form = f < 12 ? NONBLOCKING : f < 15 ? BLOCKING : PERSISTENT;
#ifndef HAVE_PERSISTENT
	if (o->form == PERSISTENT)
		o->form = NONBLOCKING;
#endif
	o->starts_left = o->form == PERSISTENT ? 1 + prog(3) : 1;
	o->ci = prog(NCOMMS);
	o->dti = prog(NDT);
	const int reduces = o->c == REDUCE || o->c == ALLREDUCE || o->c == RSB;
	if (reduces)
		o->mop = op_for(o->dti, prog(6), &o->opname);
	o->n = draw_count();
	const int P = size_of(o);
	o->root = prog(1 << 16) % P; /* the same within each group of a split */
	o->inplace = o->c != BCAST && o->c != BARRIER && prog(4) == 0;
	if (o->c == BARRIER)
		o->n = 0;
	o->es = (size_t)(o->dti == DT_2INT ? 8 : o->dti == DT_DOUBLE || o->dti == DT_INT64 ? 8
						 : o->dti == DT_UCHAR ? 1 : o->dti == DT_SHORT ? 2 : 4);
	const size_t n = (size_t)o->n;
	o->sn = o->rn = n;
	switch (o->c) {
	case GATHER: case ALLGATHER: o->rn = (size_t)P * n; break;
	case SCATTER: o->sn = (size_t)P * n; break;
	case ALLTOALL: o->sn = o->rn = (size_t)P * n; break;
	case RSB: o->sn = (size_t)P * n; if (o->inplace) o->rn = (size_t)P * n; break;
	default: break;
	}
	o->send = malloc(o->sn * o->es + 1);
	o->recv = malloc(o->rn * o->es + 1);
	o->rsend = malloc(o->sn * o->es + 1);
	o->rrecv = malloc(o->rn * o->es + 1);
	o->req = o->handle = MPI_REQUEST_NULL;
	return o;
}

static void free_op(struct op *o)
{
	if (o->form == PERSISTENT && o->req != MPI_REQUEST_NULL) {
		MPI_Request_free(&o->req);
		if (o->req != MPI_REQUEST_NULL)
			FAIL("op #%d: MPI_Request_free left the persistent handle", o->id);
	}
	free(o->send);
	free(o->recv);
	free(o->rsend);
	free(o->rrecv);
	free(o);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
	int wsize;
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	unsigned long seed = 1;
	int rounds = 150;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else {
			if (g_wrank == 0)
				fprintf(stderr, "usage: mpi_stress [--seed S] [--rounds R]\n");
			MPI_Finalize();
			return 2;
		}
	}
	stress_seed(seed, g_wrank);
	MPI_Datatype dts[NDT] = { MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_INT64_T, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_2INT };
	memcpy(g_dt, dts, sizeof dts);
	g_comm[0] = MPI_COMM_WORLD;
	MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[1]);
	MPI_Comm_split(MPI_COMM_WORLD, g_wrank % 2, g_wrank, &g_comm[2]);
	MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - g_wrank, &g_comm[3]);
	MPI_Comm_split(MPI_COMM_WORLD, g_wrank < wsize / 2, g_wrank, &g_comm[4]);
	g_comm[5] = MPI_COMM_SELF;

	struct op *persistent = NULL; /* made in earlier rounds, in order */
	int ids = 0;
	for (g_round = 0; g_round < rounds; g_round++) {
		struct op *round[64];
		int nops = 0;
		MPI_Request reqs[160];
		struct op *owner[160];
		int nreqs = 0;
		/* The persistent ones made before, started again in order. */
		for (struct op *o = persistent; o; o = o->next) {
			o->salt = g_round * 64 + o->id;
			prepare(o);
			o->rc = MPI_Start(&o->req);
			round[nops++] = o;
			owner[nreqs] = o;
			reqs[nreqs++] = o->req;
		}
		const int fresh = 1 + prog(6);
		struct p2p pp[2];
		const int npp = prog(3);
		for (int k = 0; k < fresh; k++) {
			struct op *o = new_op(ids++);
			o->salt = g_round * 64 + o->id;
			prepare(o);
			if (o->form == PERSISTENT) {
				o->rc = call(o, &o->req);
				o->handle = o->req;
				if (o->rc == MPI_SUCCESS)
					o->rc = MPI_Start(&o->req);
			} else {
				o->rc = call(o, &o->req);
			}
			round[nops++] = o;
			if (o->form != BLOCKING) {
				owner[nreqs] = o;
				reqs[nreqs++] = o->req;
			}
			if (k == 0) /* messages in flight beside the collectives */
				for (int j = 0; j < npp; j++) {
					static const int sizes[] = { 0, 8, 4000, 70000, 300000 };
					pp[j].ci = prog(NCOMMS);
					pp[j].m = sizes[prog(5)];
					pp[j].tag = 100 + j;
					p2p_post(&pp[j]);
					owner[nreqs] = NULL;
					reqs[nreqs++] = pp[j].r[0];
					owner[nreqs] = NULL;
					reqs[nreqs++] = pp[j].r[1];
				}
		}
		const int rc = complete_all(nreqs, reqs);
		if (rc != MPI_SUCCESS)
			FAIL("completing %d requests: MPI error %d", nreqs, rc);
		for (int i = 0; i < nreqs; i++) {
			if (owner[i] && owner[i]->form == PERSISTENT) {
				owner[i]->req = reqs[i]; /* the same handle, checked */
				if (reqs[i] == MPI_REQUEST_NULL)
					FAIL("op #%d: a completed persistent request was freed", owner[i]->id);
			} else if (reqs[i] != MPI_REQUEST_NULL) {
				FAIL("a completed request (#%d of the round) is not MPI_REQUEST_NULL", i);
			}
		}
		for (int j = 0; j < npp; j++)
			p2p_check(&pp[j]);
		/* The references, in the order of the program. */
		for (int k = 0; k < nops; k++)
			check(round[k]);
		/* Persistent ones go on to later rounds until their starts are
		 * used: old ones first (in order), then this round's new ones. */
		struct op *keep = NULL, **tail = &keep;
		for (int k = 0; k < nops; k++) {
			struct op *o = round[k];
			o->next = NULL;
			if (o->form == PERSISTENT && --o->starts_left > 0 && o->rc == MPI_SUCCESS) {
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
	for (int i = 1; i < 5; i++)
		MPI_Comm_free(&g_comm[i]);
	int failures = 0, checks = 0;
	PMPI_Reduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	PMPI_Reduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (g_wrank == 0) {
		if (failures)
			printf("mpi_stress: %d failures (of %d checks, seed %lu)\n", failures, checks, seed);
		else
			printf("mpi_stress: ok (%d checks, seed %lu)\n", checks, seed);
	}
	MPI_Finalize();
	return failures ? 1 : 0;
}
