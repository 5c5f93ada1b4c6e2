/* mpi_check - an ordinary MPI program (it knows nothing of cadrt) that
 * runs every collective twice on the same inputs: through the MPI_ entry
 * points (which libcadmpi.so takes over when preloaded) and through
 * PMPI_ (always Open MPI's own), and requires byte-identical results.
 * Each in its blocking, non-blocking and (where Open MPI has MPI-4's
 * persistent collectives, as MPIX_*_init) persistent form.  Non-blocking
 * and persistent forms complete through MPI_Wait, Waitall, Waitany,
 * Waitsome, Test, Testall, Testany, Testsome and Request_get_status in
 * turn, mixed with point-to-point requests in flight at the same time.
 * Communicators: the world, a dup, the halves of a split.  Also a bcast
 * of a derived datatype, and a case libcadmpi must leave to MPI (a user
 * op), checked the same way.  --datatypes: ranks that describe the same
 * data with different datatypes (see datatypes()).
 *
 *   mpirun -n P [-x LD_PRELOAD=libcadmpi.so] mpi_check [--quick]
 *          [--thread-multiple]
 *   mpirun -n P -x LD_PRELOAD=libcadmpi.so mpi_check --mismatch
 *   mpirun -n P -x LD_PRELOAD=libcadmpi.so mpi_check --freed-comm
 *   mpirun -n P [-x LD_PRELOAD=libcadmpi.so] mpi_check --datatypes
 *
 * Prints "mpi_check: ok (N checks)" at rank 0; exit 0 if all passed.
 */
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI's MPIX_*_init: MPI-4's persistent collectives */
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
static const int g_nforms = 3;
#else
static const int g_nforms = 2;
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failures, g_checks, g_wrank, g_round;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "mpi_check: rank %d: ", g_wrank);              \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		g_failures++;                                                  \
	} while (0)

enum coll { BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL, RSB, BARRIER, NCOLL };
static const char *names[NCOLL] = { "bcast", "reduce", "allreduce", "gather", "scatter",
				    "allgather", "alltoall", "reduce_scatter_block", "barrier" };

static double mine_value(int rank, size_t i, int salt)
{
	return (double)(((uint64_t)rank * 7919u + i * 104729u + (uint64_t)salt * 31u) % 97u) - 40;
}

static void fill(void *p, MPI_Datatype dt, size_t n, int rank, int salt)
{
	for (size_t i = 0; i < n; i++) {
		double v = mine_value(rank, i, salt);
		if (dt == MPI_DOUBLE)
			((double *)p)[i] = v;
		else if (dt == MPI_INT)
			((int *)p)[i] = (int)v;
		else if (dt == MPI_DOUBLE_INT) {
			struct { double v; int i; } *q = p;
			q[i].v = v;
			q[i].i = rank;
		} else if (dt == MPI_REAL) { /* Fortran's, by the size MPI gives them */
			((float *)p)[i] = (float)v;
		} else if (dt == MPI_DOUBLE_PRECISION) {
			((double *)p)[i] = v;
		} else if (dt == MPI_INTEGER || dt == MPI_AINT) {
			int sz;
			MPI_Type_size(dt, &sz);
			if (sz == 8)
				((int64_t *)p)[i] = (int64_t)v;
			else
				((int32_t *)p)[i] = (int32_t)v;
		} else if (dt == MPI_2INTEGER) {
			((int32_t *)p)[2 * i] = (int32_t)v;
			((int32_t *)p)[2 * i + 1] = rank;
		}
	}
}

static int esize(MPI_Datatype dt)
{
	MPI_Aint lb, ext;
	MPI_Type_get_extent(dt, &lb, &ext);
	return (int)ext;
}

/* The completion of round g_round: a different function each time, with a
 * ring exchange of point-to-point messages in flight. */
static int complete(MPI_Request coll, MPI_Comm comm)
{
	int rank, size, rc = MPI_SUCCESS;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	int out = rank * 1000 + g_round % 1000, in = -1;
	MPI_Request reqs[3];
	MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 77, comm, &reqs[0]);
	MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 77, comm, &reqs[1]);
	reqs[2] = coll;
	int mode = g_round++ % 9, flag = 0, idx, outcount, indices[3], left = 3;
	switch (mode) {
	case 0:
		rc = MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
		break;
	case 1:
		rc = MPI_Wait(&reqs[2], MPI_STATUS_IGNORE);
		rc |= MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
		break;
	case 2:
		while (left > 0 && rc == MPI_SUCCESS) {
			rc = MPI_Waitany(3, reqs, &idx, MPI_STATUS_IGNORE);
			left--;
		}
		break;
	case 3:
		while (left > 0 && rc == MPI_SUCCESS) {
			rc = MPI_Waitsome(3, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
			left -= outcount;
		}
		break;
	case 4:
		while (!flag && rc == MPI_SUCCESS)
			rc = MPI_Testall(3, reqs, &flag, MPI_STATUSES_IGNORE);
		break;
	case 5:
		for (int k = 0; k < 3; k++)
			for (flag = 0; !flag && rc == MPI_SUCCESS;)
				rc = MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE);
		break;
	case 6:
		while (left > 0 && rc == MPI_SUCCESS) {
			rc = MPI_Testany(3, reqs, &idx, &flag, MPI_STATUS_IGNORE);
			if (flag && idx != MPI_UNDEFINED)
				left--;
			else if (flag)
				break;
		}
		break;
	case 8: /* polled without being freed, then freed by a wait */
		while (!flag && rc == MPI_SUCCESS)
			rc = MPI_Request_get_status(reqs[2], &flag, MPI_STATUS_IGNORE);
		rc |= MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
		break;
	default:
		while (left > 0 && rc == MPI_SUCCESS) {
			rc = MPI_Testsome(3, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
			if (outcount == MPI_UNDEFINED)
				break;
			left -= outcount;
		}
		break;
	}
	if (in < 0 || in / 1000 != (rank + size - 1) % size)
		FAIL("point-to-point message next to a collective: got %d", in);
	return rc;
}

/* Which MPI_ form of a collective: MPI_Ibcast, MPI_Bcast, or persistent
 * (MPIX_Bcast_init, started twice, once by MPI_Start and once by
 * MPI_Startall, with new inputs each time, then freed). */
enum form { NONBLOCKING, BLOCKING, PERSISTENT, NFORMS };
static const char *form_names[NFORMS] = { "i", "", "persistent " };

/* One collective both ways. */
static void one(enum coll c, size_t n, int root, MPI_Datatype dt, MPI_Op op, int inplace, enum form form,
		MPI_Comm comm, const char *cname)
{
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	const size_t es = (size_t)esize(dt), P = (size_t)size;
	size_t sn = n, rn = n;
	switch (c) {
	case GATHER: case ALLGATHER: rn = P * n; break;
	case SCATTER: sn = P * n; break;
	case ALLTOALL: sn = rn = P * n; break;
	case RSB: sn = P * n; break;
	default: break;
	}
	if (inplace && c == RSB)
		rn = P * n;
	char *send = calloc(sn + 1, es), *a = calloc(rn + 1, es), *b = calloc(rn + 1, es);
	char *send2 = calloc(sn + 1, es);
	const void *sa = inplace ? MPI_IN_PLACE : send;
	const void *sb = inplace ? MPI_IN_PLACE : send2;
	void *ra = inplace && c == SCATTER ? MPI_IN_PLACE : a, *rb = inplace && c == SCATTER ? MPI_IN_PLACE : b;
	int cnt = (int)n, rc = MPI_SUCCESS;
	MPI_Request preq = MPI_REQUEST_NULL;
#ifdef HAVE_PERSISTENT
	MPI_Info info = MPI_INFO_NULL;
	if (form == PERSISTENT) { /* through MPI_ (libcadmpi when preloaded) */
		switch (c) {
		case BCAST: rc = MPIX_Bcast_init(a, cnt, dt, root, comm, info, &preq); break;
		case REDUCE: rc = MPIX_Reduce_init(sa, a, cnt, dt, op, root, comm, info, &preq); break;
		case ALLREDUCE: rc = MPIX_Allreduce_init(sa, a, cnt, dt, op, comm, info, &preq); break;
		case GATHER: rc = MPIX_Gather_init(sa, cnt, dt, a, cnt, dt, root, comm, info, &preq); break;
		case SCATTER: rc = MPIX_Scatter_init(send, cnt, dt, ra, cnt, dt, root, comm, info, &preq); break;
		case ALLGATHER: rc = MPIX_Allgather_init(sa, cnt, dt, a, cnt, dt, comm, info, &preq); break;
		case ALLTOALL: rc = MPIX_Alltoall_init(sa, cnt, dt, a, cnt, dt, comm, info, &preq); break;
		case RSB: rc = MPIX_Reduce_scatter_block_init(sa, a, cnt, dt, op, comm, info, &preq); break;
		case BARRIER: rc = MPIX_Barrier_init(comm, info, &preq); break;
		default: break;
		}
		if (rc != MPI_SUCCESS)
			FAIL("persistent %s on %s n=%zu root=%d: init: MPI error %d", names[c], cname, n, root, rc);
	}
#endif
	const int reps = form == PERSISTENT ? 2 : 1;
	for (int rep = 0; rep < reps && rc == MPI_SUCCESS; rep++) {
		const int salt = (int)(n + (size_t)root * 13 + (size_t)c * 101) + rep * 7;
		memset(a, 0, (rn + 1) * es);
		memset(b, 0, (rn + 1) * es);
		fill(send, dt, sn, rank, salt);
		memcpy(send2, send, sn * es);
		/* In place: the input is in the receive buffer. */
		if (inplace) {
			switch (c) {
			case REDUCE: case ALLREDUCE: case RSB:
				fill(a, dt, rn, rank, salt);
				fill(b, dt, rn, rank, salt);
				break;
			case GATHER: case ALLGATHER:
				fill(a + (size_t)rank * n * es, dt, n, rank, salt);
				fill(b + (size_t)rank * n * es, dt, n, rank, salt);
				break;
			case ALLTOALL:
				fill(a, dt, rn, rank, salt);
				fill(b, dt, rn, rank, salt);
				break;
			default: break;
			}
		}
		if (c == BCAST && rank == root) {
			fill(a, dt, n, rank, salt);
			fill(b, dt, n, rank, salt);
		}
		MPI_Request req = MPI_REQUEST_NULL;
		const int blocking = form == BLOCKING;
		/* Through MPI_ (libcadmpi when preloaded). */
		if (form == PERSISTENT) {
			req = preq;
			rc = rep % 2 ? MPI_Startall(1, &req) : MPI_Start(&req);
		} else {
			switch (c) {
			case BCAST: rc = blocking ? MPI_Bcast(a, cnt, dt, root, comm) : MPI_Ibcast(a, cnt, dt, root, comm, &req); break;
			case REDUCE: rc = blocking ? MPI_Reduce(sa, a, cnt, dt, op, root, comm) : MPI_Ireduce(sa, a, cnt, dt, op, root, comm, &req); break;
			case ALLREDUCE: rc = blocking ? MPI_Allreduce(sa, a, cnt, dt, op, comm) : MPI_Iallreduce(sa, a, cnt, dt, op, comm, &req); break;
			case GATHER: rc = blocking ? MPI_Gather(sa, cnt, dt, a, cnt, dt, root, comm) : MPI_Igather(sa, cnt, dt, a, cnt, dt, root, comm, &req); break;
			case SCATTER: rc = blocking ? MPI_Scatter(send, cnt, dt, ra, cnt, dt, root, comm)
						    : MPI_Iscatter(send, cnt, dt, ra, cnt, dt, root, comm, &req); break;
			case ALLGATHER: rc = blocking ? MPI_Allgather(sa, cnt, dt, a, cnt, dt, comm) : MPI_Iallgather(sa, cnt, dt, a, cnt, dt, comm, &req); break;
			case ALLTOALL: rc = blocking ? MPI_Alltoall(sa, cnt, dt, a, cnt, dt, comm) : MPI_Ialltoall(sa, cnt, dt, a, cnt, dt, comm, &req); break;
			case RSB: rc = blocking ? MPI_Reduce_scatter_block(sa, a, cnt, dt, op, comm) : MPI_Ireduce_scatter_block(sa, a, cnt, dt, op, comm, &req); break;
			case BARRIER: rc = blocking ? MPI_Barrier(comm) : MPI_Ibarrier(comm, &req); break;
			default: break;
			}
		}
		if (rc == MPI_SUCCESS && !blocking)
			rc = complete(req, comm);
		if (form == PERSISTENT && req != preq)
			FAIL("persistent %s: the handle changed when it was started or completed", names[c]);
		/* Open MPI's own. */
		switch (c) {
		case BCAST: PMPI_Bcast(b, cnt, dt, root, comm); break;
		case REDUCE: PMPI_Reduce(sb, b, cnt, dt, op, root, comm); break;
		case ALLREDUCE: PMPI_Allreduce(sb, b, cnt, dt, op, comm); break;
		case GATHER: PMPI_Gather(sb, cnt, dt, b, cnt, dt, root, comm); break;
		case SCATTER: PMPI_Scatter(send2, cnt, dt, rb, cnt, dt, root, comm); break;
		case ALLGATHER: PMPI_Allgather(sb, cnt, dt, b, cnt, dt, comm); break;
		case ALLTOALL: PMPI_Alltoall(sb, cnt, dt, b, cnt, dt, comm); break;
		case RSB: PMPI_Reduce_scatter_block(sb, b, cnt, dt, op, comm); break;
		default: break;
		}
		g_checks++;
		size_t cmp = rn * es;
		if ((c == REDUCE || c == GATHER) && rank != root)
			cmp = 0;
		if (c == RSB && inplace)
			cmp = n * es; /* the rest of the buffer is undefined */
		if (rc != MPI_SUCCESS)
			FAIL("%s%s on %s n=%zu root=%d: MPI error %d", form_names[form], names[c], cname, n, root, rc);
		else if (c == SCATTER && inplace && rank == root)
			; /* the root's data stays in place */
		else if (memcmp(a, b, cmp) != 0) {
			size_t k = 0;
			while (k < cmp && a[k] == b[k])
				k++;
			FAIL("%s%s%s on %s n=%zu root=%d: differs from Open MPI's at byte %zu (start %d)", form_names[form],
			     names[c], inplace ? " in place" : "", cname, n, root, k, rep);
		}
	}
	if (form == PERSISTENT) {
		if (preq != MPI_REQUEST_NULL)
			MPI_Request_free(&preq);
		if (preq != MPI_REQUEST_NULL)
			FAIL("persistent %s: MPI_Request_free left the handle", names[c]);
	}
	free(send);
	free(send2);
	free(a);
	free(b);
}

#ifdef HAVE_PERSISTENT
/* Two persistent collectives on different communicators and a persistent
 * point-to-point pair, started together by one MPI_Startall and completed
 * by one MPI_Waitall, three times with new inputs.  (Not freeing a
 * communicator between init and start: Open MPI's own persistent
 * collectives crash on that.) */
static void persistent_mix(void)
{
	int rank, size, orank, osize;
	MPI_Comm other;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &other);
	MPI_Comm_rank(other, &orank);
	MPI_Comm_size(other, &osize);
	double x[1000], y[1000], ref[1000];
	int v[64], out = 0, in = -1;
	MPI_Request r[4];
	MPI_Status st[4];
	MPIX_Allreduce_init(x, y, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]);
	MPIX_Bcast_init(v, 64, MPI_INT, osize - 1, other, MPI_INFO_NULL, &r[1]);
	MPI_Recv_init(&in, 1, MPI_INT, (rank + size - 1) % size, 78, MPI_COMM_WORLD, &r[2]);
	MPI_Send_init(&out, 1, MPI_INT, (rank + 1) % size, 78, MPI_COMM_WORLD, &r[3]);
	for (int it = 0; it < 3; it++) {
		for (int i = 0; i < 1000; i++)
			x[i] = mine_value(rank, (size_t)i, it);
		for (int i = 0; i < 64; i++)
			v[i] = orank == osize - 1 ? it * 100 + i : -1;
		out = rank * 10 + it;
		in = -1;
		int rc = MPI_Startall(4, r);
		if (rc == MPI_SUCCESS)
			rc = MPI_Waitall(4, r, st);
		PMPI_Allreduce(x, ref, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		g_checks++;
		if (rc != MPI_SUCCESS)
			FAIL("persistent Startall/Waitall, start %d: MPI error %d", it, rc);
		if (memcmp(y, ref, sizeof y))
			FAIL("persistent allreduce next to a persistent bcast, start %d: differs from Open MPI's", it);
		for (int i = 0; i < 64; i++)
			if (v[i] != it * 100 + i) {
				FAIL("persistent bcast next to a persistent allreduce, start %d: v[%d] = %d", it, i, v[i]);
				break;
			}
		if (in != ((rank + size - 1) % size) * 10 + it || st[2].MPI_SOURCE != (rank + size - 1) % size)
			FAIL("persistent receive next to persistent collectives, start %d: got %d", it, in);
		for (int k = 0; k < 4; k++)
			if (r[k] == MPI_REQUEST_NULL)
				FAIL("MPI_Waitall set persistent request %d to MPI_REQUEST_NULL", k);
	}
	for (int k = 0; k < 4; k++)
		MPI_Request_free(&r[k]);
	MPI_Comm_free(&other);
}

/* The completion calls on a persistent broadcast whose handle is the only
 * active request of its array (the others MPI_REQUEST_NULL), five starts:
 * MPI_Testany and MPI_Testsome must not report "nothing active" while it
 * runs, and each call gives its index; once completed the handle is
 * inactive, as any persistent request: a second Wait, Test, Waitany or
 * Testsome returns at once (index MPI_UNDEFINED, outcount MPI_UNDEFINED)
 * and MPI_Request_get_status says complete.  Run with Open MPI alone too
 * (test_mpi.py), which keeps these expectations MPI's. */
static void persistent_completion(void)
{
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	enum { N = 1000 };
	static int v[N];
	MPI_Request r[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
	MPI_Status st[2];
	MPIX_Bcast_init(v, N, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]);
	for (int it = 0; it < 5; it++) {
		for (int i = 0; i < N; i++)
			v[i] = rank == 0 ? it * 10000 + i : -1;
		int rc = MPI_Start(&r[1]), flag = 0, idx = -5, out = -5, indices[2] = { -5, -5 };
		switch (it) {
		case 0: /* Testany, then again: all inactive */
			while (rc == MPI_SUCCESS && !flag) {
				rc = MPI_Testany(2, r, &idx, &flag, &st[0]);
				if (flag && idx != 1)
					FAIL("persistent bcast: MPI_Testany completed index %d, not 1", idx);
			}
			rc |= MPI_Testany(2, r, &idx, &flag, &st[0]);
			if (!flag || idx != MPI_UNDEFINED)
				FAIL("persistent bcast: MPI_Testany after completion: flag %d index %d", flag, idx);
			break;
		case 1: /* Testsome, then again: MPI_UNDEFINED */
			while (rc == MPI_SUCCESS && out <= 0) {
				rc = MPI_Testsome(2, r, &out, indices, st);
				if (out == MPI_UNDEFINED)
					FAIL("persistent bcast: MPI_Testsome found nothing active while it ran");
			}
			if (out != 1 || indices[0] != 1)
				FAIL("persistent bcast: MPI_Testsome completed %d, index %d", out, indices[0]);
			rc |= MPI_Testsome(2, r, &out, indices, st);
			if (out != MPI_UNDEFINED)
				FAIL("persistent bcast: MPI_Testsome after completion: outcount %d", out);
			break;
		case 2: /* Waitsome, then Waitany: MPI_UNDEFINED */
			rc = MPI_Waitsome(2, r, &out, indices, st);
			if (out != 1 || indices[0] != 1)
				FAIL("persistent bcast: MPI_Waitsome completed %d, index %d", out, indices[0]);
			rc |= MPI_Waitany(2, r, &idx, &st[0]);
			if (idx != MPI_UNDEFINED)
				FAIL("persistent bcast: MPI_Waitany after completion: index %d", idx);
			break;
		case 3: /* Request_get_status until complete, Wait, Wait again */
			while (rc == MPI_SUCCESS && !flag)
				rc = MPI_Request_get_status(r[1], &flag, &st[0]);
			rc |= MPI_Wait(&r[1], &st[0]);
			rc |= MPI_Wait(&r[1], &st[0]);
			break;
		default: /* Waitany, then Test: complete at once */
			rc = MPI_Waitany(2, r, &idx, &st[0]);
			if (idx != 1)
				FAIL("persistent bcast: MPI_Waitany completed index %d, not 1", idx);
			flag = 0;
			rc |= MPI_Test(&r[1], &flag, &st[0]);
			if (!flag)
				FAIL("persistent bcast: MPI_Test of the completed handle: not complete");
			break;
		}
		flag = 0;
		rc |= MPI_Request_get_status(r[1], &flag, MPI_STATUS_IGNORE);
		if (!flag)
			FAIL("persistent bcast: MPI_Request_get_status of the completed handle: not complete");
		g_checks++;
		if (rc != MPI_SUCCESS)
			FAIL("persistent bcast, start %d: MPI error %d", it, rc);
		if (r[1] == MPI_REQUEST_NULL) {
			FAIL("persistent bcast, start %d: the handle was freed", it);
			return;
		}
		for (int i = 0; i < N; i++)
			if (v[i] != it * 10000 + i) {
				FAIL("persistent bcast, start %d: v[%d] = %d", it, i, v[i]);
				break;
			}
	}
	MPI_Request_free(&r[1]);
}

/* --mismatch: rank 1 gives a persistent broadcast another count (erroneous
 * in MPI, so only run through libcadmpi), started twice, completed by
 * MPI_Wait and then by MPI_Waitall, errors returned: rank 1 must get
 * MPI_ERR_OTHER (MPI_ERR_IN_STATUS with it in the status from Waitall),
 * nobody hangs, a rank without an error has the right data, and a
 * persistent allreduce on the same communicator works afterwards. */
static int mismatch(void)
{
	int rank, size, bad = 0, all_bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	const int n = rank == 1 ? 3000 : 2000;
	int *buf = malloc((size_t)n * sizeof *buf);
	MPI_Request r;
	int rc = MPIX_Bcast_init(buf, n, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
	for (int start = 0; start < 2 && rc == MPI_SUCCESS; start++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank == 0 ? i + start : -1;
		MPI_Status st[1];
		st[0].MPI_ERROR = -1;
		int err = MPI_Start(&r), cls = MPI_SUCCESS;
		if (err == MPI_SUCCESS)
			err = start == 0 ? MPI_Wait(&r, MPI_STATUS_IGNORE) : MPI_Waitall(1, &r, st);
		MPI_Error_class(err, &cls);
		if (rank == 1) {
			const int want = start == 0 ? MPI_ERR_OTHER : MPI_ERR_IN_STATUS;
			if (cls != want || (start == 1 && st[0].MPI_ERROR != MPI_ERR_OTHER)) {
				fprintf(stderr, "mpi_check: rank 1, start %d: error %d (status %d), expected %d\n", start,
					cls, st[0].MPI_ERROR, want);
				bad = 1;
			} else {
				printf("mpi_check: rank 1: start %d: error as expected\n", start);
			}
		} else if (err == MPI_SUCCESS) {
			for (int i = 0; i < n; i++)
				if (buf[i] != i + start) {
					fprintf(stderr, "mpi_check: rank %d, start %d: element %d is %d\n", rank, start, i,
						buf[i]);
					bad = 1;
					break;
				}
		}
		if (r == MPI_REQUEST_NULL) {
			fprintf(stderr, "mpi_check: rank %d: the failed persistent request was freed\n", rank);
			bad = 1;
			break;
		}
	}
	MPI_Request_free(&r);
	/* The same mismatch in the non-blocking form, completed by MPI_Wait and
	 * then by MPI_Waitall (the handle freed all the same), and in the
	 * blocking one. */
	static const char *fname[] = { "ibcast + wait", "ibcast + waitall", "bcast" };
	for (int form = 0; form < 3 && rc == MPI_SUCCESS; form++) {
		for (int i = 0; i < n; i++)
			buf[i] = rank == 0 ? i + 10 + form : -1;
		MPI_Request q = MPI_REQUEST_NULL;
		MPI_Status st[1];
		st[0].MPI_ERROR = -1;
		int err, cls = MPI_SUCCESS;
		if (form == 2) {
			err = MPI_Bcast(buf, n, MPI_INT, 0, MPI_COMM_WORLD);
		} else {
			err = MPI_Ibcast(buf, n, MPI_INT, 0, MPI_COMM_WORLD, &q);
			if (err == MPI_SUCCESS)
				err = form == 0 ? MPI_Wait(&q, MPI_STATUS_IGNORE) : MPI_Waitall(1, &q, st);
		}
		MPI_Error_class(err, &cls);
		if (rank == 1) {
			const int want = form == 1 ? MPI_ERR_IN_STATUS : MPI_ERR_OTHER;
			if (cls != want || (form == 1 && st[0].MPI_ERROR != MPI_ERR_OTHER) || q != MPI_REQUEST_NULL) {
				fprintf(stderr, "mpi_check: rank 1, %s: error %d (status %d, handle %s), expected %d\n",
					fname[form], cls, st[0].MPI_ERROR, q == MPI_REQUEST_NULL ? "freed" : "left", want);
				bad = 1;
			} else {
				printf("mpi_check: rank 1: %s: error as expected\n", fname[form]);
			}
		} else if (err == MPI_SUCCESS) {
			for (int i = 0; i < n; i++)
				if (buf[i] != i + 10 + form) {
					fprintf(stderr, "mpi_check: rank %d, %s: element %d is %d\n", rank, fname[form], i,
						buf[i]);
					bad = 1;
					break;
				}
		}
	}
	double x = rank + 1, sum = 0;
	rc = MPIX_Allreduce_init(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
	if (rc == MPI_SUCCESS)
		rc = MPI_Start(&r);
	if (rc == MPI_SUCCESS)
		rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
	if (rc != MPI_SUCCESS || sum != size * (size + 1) / 2.0) {
		fprintf(stderr, "mpi_check: rank %d: the allreduce after the failure: error %d, sum %g\n", rank, rc,
			sum);
		bad = 1;
	}
	MPI_Request_free(&r);
	free(buf);
	PMPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && !all_bad)
		printf("mpi_check: mismatch ok\n");
	MPI_Finalize();
	return all_bad;
}

/* --freed-comm: persistent collectives made on a split and on a dup whose
 * handles the program frees before it ever starts them (MPI allows it: a
 * request keeps what it uses), started three times with new inputs, each
 * result compared with Open MPI's on a communicator of the same ranks;
 * then the requests are freed.  Only through libcadmpi: Open MPI's own
 * persistent collectives crash on it. */
static int g_unfreed;

static int freed_comm(void)
{
	int rank, size, bad = 0, all_bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm half, dup, ref_half;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
	PMPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &ref_half);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	int hrank, hsize;
	MPI_Comm_rank(half, &hrank);
	MPI_Comm_size(half, &hsize);
	enum { N = 3000 };
	static double x[N], y[N], ref[N];
	static int v[N];
	MPI_Request r[2];
	MPIX_Allreduce_init(x, y, N, MPI_DOUBLE, MPI_SUM, dup, MPI_INFO_NULL, &r[0]);
	MPIX_Bcast_init(v, N, MPI_INT, hsize - 1, half, MPI_INFO_NULL, &r[1]);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&half);
	if (dup != MPI_COMM_NULL || half != MPI_COMM_NULL) {
		fprintf(stderr, "mpi_check: rank %d: MPI_Comm_free left a handle\n", rank);
		bad = 1;
	}
	for (int it = 0; it < 3 && !bad; it++) {
		for (int i = 0; i < N; i++) {
			x[i] = mine_value(rank, (size_t)i, it);
			v[i] = hrank == hsize - 1 ? it * 1000 + i : -1;
		}
		int rc = MPI_Startall(2, r);
		if (rc == MPI_SUCCESS)
			rc = MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
		PMPI_Allreduce(x, ref, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS) {
			fprintf(stderr, "mpi_check: rank %d, start %d: MPI error %d\n", rank, it, rc);
			bad = 1;
		} else if (memcmp(y, ref, sizeof y)) {
			fprintf(stderr, "mpi_check: rank %d, start %d: the allreduce on a freed dup differs\n", rank, it);
			bad = 1;
		} else {
			for (int i = 0; i < N; i++)
				if (v[i] != it * 1000 + i) {
					fprintf(stderr, "mpi_check: rank %d, start %d: the bcast on a freed split: v[%d] = %d\n",
						rank, it, i, v[i]);
					bad = 1;
					break;
				}
		}
	}
	if (!g_unfreed) { /* --unfreed: MPI_Finalize frees them */
		MPI_Request_free(&r[0]);
		MPI_Request_free(&r[1]);
	}
	PMPI_Comm_free(&ref_half);
	PMPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && !all_bad)
		printf("mpi_check: freed-comm ok\n");
	MPI_Finalize();
	if (rank == 0 && !all_bad)
		printf("mpi_check: finalized\n");
	return all_bad;
}
#endif

/* --datatypes: the ranks describe the same ints in different ways, as MPI
 * lets them (only the type signatures must match), and libcadmpi must
 * take the call on every rank or on none.  Four kinds:
 *   0: MPI_INT, N of them;
 *   1: a contiguous type of 4 MPI_INT (used where it lies), N/4;
 *   2: a vector of 4 MPI_INT with a gap after each (packed), N/4;
 *   3: an indexed type that keeps its 4 ints in the order 2 3 0 1 (no
 *      gap, but out of order: packed), N/4.
 * Each rank's send and receive sides take different kinds, rotating with
 * the rank, the collective and the form; results are compared with Open
 * MPI's for the same descriptions, gaps included (nothing may be written
 * into them).  Then a pair type with a gap: a bcast of MPI_SHORT_INT (6
 * bytes in 8) on some ranks, of a resized copy of it on the others; and a
 * derived datatype in a reduction, which MPI refuses (MPI has a
 * reduction's predefined op take a predefined type). */
enum { KINDS = 4, GAP = -7777 };
static MPI_Datatype g_kind[KINDS];

static void make_kinds(void)
{
	MPI_Datatype v;
	g_kind[0] = MPI_INT;
	MPI_Type_contiguous(4, MPI_INT, &g_kind[1]);
	MPI_Type_vector(4, 1, 2, MPI_INT, &v);
	MPI_Type_create_resized(v, 0, 8 * (MPI_Aint)sizeof(int), &g_kind[2]);
	MPI_Type_free(&v);
	int len[2] = { 2, 2 }, disp[2] = { 2, 0 };
	MPI_Type_indexed(2, len, disp, MPI_INT, &g_kind[3]);
	for (int k = 1; k < KINDS; k++)
		MPI_Type_commit(&g_kind[k]);
}

/* Where the i-th int of the signature is in memory, in ints. */
static size_t kpos(int kind, size_t i)
{
	switch (kind) {
	case 2: return i / 4 * 8 + i % 4 * 2;
	case 3: return i / 4 * 4 + (i % 4 + 2) % 4;
	default: return i;
	}
}
static size_t kints(int kind, size_t n) { return kind == 2 ? 2 * n : n; } /* memory for n ints */
static int kcount(int kind, size_t n) { return (int)(kind == 0 ? n : n / 4); }

/* n ints of values (rank, salt) from the i0-th of the signature on. */
static void kfill(int *p, int kind, size_t i0, size_t n, int rank, int salt)
{
	for (size_t i = i0; i < i0 + n; i++)
		p[kpos(kind, i)] = (int)mine_value(rank, i, salt);
}

static int *kalloc(int kind, size_t n)
{
	int *p = malloc((kints(kind, n) + 1) * sizeof *p);
	for (size_t i = 0; i < kints(kind, n) + 1; i++)
		p[i] = GAP;
	return p;
}

static void one_mixed(enum coll c, size_t N, int root, int inplace, enum form form, MPI_Comm comm)
{
	int rank, size;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	const size_t P = (size_t)size;
	const int ks = (rank + (int)c + (int)form) % KINDS, kr = (ks + 1) % KINDS;
	const MPI_Datatype st = g_kind[ks], rt = g_kind[kr];
	size_t sn = N, rn = N;
	switch (c) {
	case GATHER: case ALLGATHER: rn = P * N; break;
	case SCATTER: sn = P * N; break;
	case ALLTOALL: sn = rn = P * N; break;
	default: break;
	}
	const int scnt = kcount(ks, N), rcnt = kcount(kr, N);
	/* a, b: the receive sides of the two runs (the bcast's buffer); send. */
	int *send = kalloc(ks, sn), *a = kalloc(kr, rn), *b = kalloc(kr, rn);
	const int rooted = c == BCAST || c == GATHER || c == SCATTER;
	const int ip = inplace && (!rooted || rank == root);
	const void *sbuf = ip && c != SCATTER ? MPI_IN_PLACE : send;
	void *ra = ip && c == SCATTER ? MPI_IN_PLACE : a, *rb = ip && c == SCATTER ? MPI_IN_PLACE : b;
	int rc = MPI_SUCCESS;
	MPI_Request preq = MPI_REQUEST_NULL;
#ifdef HAVE_PERSISTENT
	if (form == PERSISTENT) {
		MPI_Info in = MPI_INFO_NULL;
		switch (c) {
		case BCAST: rc = MPIX_Bcast_init(a, rcnt, rt, root, comm, in, &preq); break;
		case GATHER: rc = MPIX_Gather_init(sbuf, scnt, st, a, rcnt, rt, root, comm, in, &preq); break;
		case SCATTER: rc = MPIX_Scatter_init(send, scnt, st, ra, rcnt, rt, root, comm, in, &preq); break;
		case ALLGATHER: rc = MPIX_Allgather_init(sbuf, scnt, st, a, rcnt, rt, comm, in, &preq); break;
		case ALLTOALL: rc = MPIX_Alltoall_init(sbuf, scnt, st, a, rcnt, rt, comm, in, &preq); break;
		default: break;
		}
	}
#endif
	const int reps = form == PERSISTENT ? 2 : 1;
	for (int rep = 0; rep < reps && rc == MPI_SUCCESS; rep++) {
		const int salt = (int)(N + (size_t)c * 101) + rep * 7;
		kfill(send, ks, 0, sn, rank, salt);
		for (int *q = a, k = 0; k < 2; q = b, k++) {
			for (size_t i = 0; i < rn; i++)
				q[kpos(kr, i)] = -1;
			if (c == BCAST && rank == root)
				kfill(q, kr, 0, N, rank, salt);
			if (ip && (c == GATHER || c == ALLGATHER))
				kfill(q, kr, (size_t)rank * N, N, rank, salt);
			if (ip && c == ALLTOALL) /* every block's input, in the receive datatype */
				kfill(q, kr, 0, rn, rank, salt);
		}
		MPI_Request req = MPI_REQUEST_NULL;
		const int blocking = form == BLOCKING;
		if (form == PERSISTENT) {
			req = preq;
			rc = MPI_Start(&req);
		} else {
			switch (c) {
			case BCAST: rc = blocking ? MPI_Bcast(a, rcnt, rt, root, comm) : MPI_Ibcast(a, rcnt, rt, root, comm, &req); break;
			case GATHER: rc = blocking ? MPI_Gather(sbuf, scnt, st, a, rcnt, rt, root, comm) : MPI_Igather(sbuf, scnt, st, a, rcnt, rt, root, comm, &req); break;
			case SCATTER: rc = blocking ? MPI_Scatter(send, scnt, st, ra, rcnt, rt, root, comm) : MPI_Iscatter(send, scnt, st, ra, rcnt, rt, root, comm, &req); break;
			case ALLGATHER: rc = blocking ? MPI_Allgather(sbuf, scnt, st, a, rcnt, rt, comm) : MPI_Iallgather(sbuf, scnt, st, a, rcnt, rt, comm, &req); break;
			case ALLTOALL: rc = blocking ? MPI_Alltoall(sbuf, scnt, st, a, rcnt, rt, comm) : MPI_Ialltoall(sbuf, scnt, st, a, rcnt, rt, comm, &req); break;
			default: break;
			}
		}
		if (rc == MPI_SUCCESS && !blocking)
			rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
		switch (c) {
		case BCAST: PMPI_Bcast(b, rcnt, rt, root, comm); break;
		case GATHER: PMPI_Gather(sbuf, scnt, st, b, rcnt, rt, root, comm); break;
		case SCATTER: PMPI_Scatter(send, scnt, st, rb, rcnt, rt, root, comm); break;
		case ALLGATHER: PMPI_Allgather(sbuf, scnt, st, b, rcnt, rt, comm); break;
		case ALLTOALL: PMPI_Alltoall(sbuf, scnt, st, b, rcnt, rt, comm); break;
		default: break;
		}
		g_checks++;
		/* The defined part of the receive side, in signature ints. */
		size_t cmp = rn;
		if (c == GATHER && rank != root)
			cmp = 0;
		if (c == SCATTER && ip)
			cmp = 0;
		const char *ipn = ip ? " in place" : "";
		if (rc != MPI_SUCCESS) {
			FAIL("%s%s%s, kinds %d/%d, N=%zu: MPI error %d", form_names[form], names[c], ipn, ks, kr, N, rc);
			continue;
		}
		for (size_t i = 0; i < cmp; i++)
			if (a[kpos(kr, i)] != b[kpos(kr, i)]) {
				FAIL("%s%s%s, kinds %d/%d, N=%zu root=%d: int %zu is %d, Open MPI's %d", form_names[form],
				     names[c], ipn, ks, kr, N, root, i, a[kpos(kr, i)], b[kpos(kr, i)]);
				break;
			}
		if (kr == 2 && !(c == SCATTER && ip))
			for (size_t i = 1; i < kints(kr, rn) + 1; i += 2)
				if (a[i] != GAP) {
					FAIL("%s%s%s, kinds %d/%d, N=%zu: the gap at int %zu was written", form_names[form],
					     names[c], ipn, ks, kr, N, i);
					break;
				}
	}
	if (preq != MPI_REQUEST_NULL)
		MPI_Request_free(&preq);
	free(send);
	free(a);
	free(b);
}

/* A derived datatype in a reduction is MPI's, which refuses it: the same
 * error (MPI_ERR_OP, returned on a communicator that returns errors) with
 * or without libcadmpi. */
static void derived_reduction(void)
{
	MPI_Comm comm;
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	int in[8] = { 0 }, out[8], cls = MPI_SUCCESS;
	const int rc = MPI_Allreduce(in, out, 2, g_kind[1], MPI_SUM, comm);
	MPI_Error_class(rc, &cls);
	g_checks++;
	if (cls != MPI_ERR_OP)
		FAIL("allreduce of a contiguous type with MPI_SUM: error class %d, not MPI_ERR_OP", cls);
	MPI_Comm_free(&comm);
}

/* A bcast of MPI_SHORT_INT (6 bytes in 8) on even ranks, of a resized copy
 * of it (a derived type of the same layout) on odd ones. */
static void gapped_pairs(void)
{
	struct si { short s; int i; } s[100], sref[100];
	MPI_Datatype two_s;
	MPI_Type_create_resized(MPI_SHORT_INT, 0, sizeof(struct si), &two_s);
	MPI_Type_commit(&two_s);
	const int odd = g_wrank % 2;
	for (int k = 0; k < 2; k++) {
		struct si *q = k ? sref : s;
		memset(q, 0x5c, sizeof s);
		for (int i = 0; i < 100; i++)
			if (g_wrank == 0) {
				q[i].s = (short)i;
				q[i].i = 1000 + i;
			}
	}
	MPI_Bcast(s, 100, odd ? two_s : MPI_SHORT_INT, 0, MPI_COMM_WORLD);
	PMPI_Bcast(sref, 100, odd ? two_s : MPI_SHORT_INT, 0, MPI_COMM_WORLD);
	g_checks++;
	if (memcmp(s, sref, sizeof s))
		FAIL("bcast of MPI_SHORT_INT and a resized one: differs from Open MPI's (gaps included)");
	MPI_Type_free(&two_s);
}

static int datatypes(void)
{
	int size, failures = 0;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	make_kinds();
	static const size_t sizes[] = { 4, 1000, 70000 };
	static const enum coll moving[] = { BCAST, GATHER, SCATTER, ALLGATHER, ALLTOALL };
	for (int m = 0; m < 5; m++)
		for (int s = 0; s < 3; s++)
			for (int root = 0; root < size; root += (size > 1 ? size - 1 : 1))
				for (int form = 0; form < g_nforms; form++)
					for (int inplace = 0; inplace < 2; inplace++) {
						const enum coll c = moving[m];
						int rooted = c == BCAST || c == GATHER || c == SCATTER;
						if ((inplace && c == BCAST) || (!rooted && root > 0))
							continue;
						one_mixed(c, sizes[s], root, inplace, (enum form)form, MPI_COMM_WORLD);
					}
	gapped_pairs();
	derived_reduction();
	for (int k = 1; k < KINDS; k++)
		MPI_Type_free(&g_kind[k]);
	PMPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (g_wrank == 0 && !failures)
		printf("mpi_check: datatypes ok (%d checks)\n", g_checks);
	MPI_Finalize();
	return failures ? 1 : 0;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		((int *)inout)[i] += ((int *)in)[i];
}

static void all(MPI_Comm comm, const char *cname, int quick)
{
	int size;
	MPI_Comm_size(comm, &size);
	static const size_t full[] = { 0, 1, 7, 1000, 70000 }, small[] = { 1, 1000, 70000 };
	const size_t *sizes = quick ? small : full;
	const int ns = quick ? 3 : 5;
	for (int c = 0; c < NCOLL; c++)
		for (int s = 0; s < ns; s++)
			for (int root = 0; root < size; root += (size > 1 ? size - 1 : 1))
				for (int form = 0; form < g_nforms; form++)
					for (int inplace = 0; inplace < 2; inplace++) {
						if (inplace && (c == BCAST || c == BARRIER))
							continue;
						if (c == BARRIER && s > 0)
							continue;
						int rooted = c == BCAST || c == REDUCE || c == GATHER || c == SCATTER;
						if (!rooted && root > 0)
							continue;
						/* MPI's in place is the root's only, for rooted ones. */
						int rank;
						MPI_Comm_rank(comm, &rank);
						int ip = inplace && (!rooted || rank == root);
						MPI_Datatype dt = (s % 2) ? MPI_DOUBLE : MPI_INT;
						MPI_Op op = (s % 3 == 1) ? MPI_MAX : MPI_SUM;
						one((enum coll)c, sizes[s], root, dt, op, ip, (enum form)form, comm, cname);
					}
}

int main(int argc, char **argv)
{
	int quick = 0, multiple = 0, mismatched = 0, freed = 0, types = 0;
	for (int i = 1; i < argc; i++) {
		quick |= !strcmp(argv[i], "--quick");
		multiple |= !strcmp(argv[i], "--thread-multiple");
		mismatched |= !strcmp(argv[i], "--mismatch");
		freed |= !strcmp(argv[i], "--freed-comm");
		types |= !strcmp(argv[i], "--datatypes");
#ifdef HAVE_PERSISTENT
		g_unfreed |= !strcmp(argv[i], "--unfreed");
#endif
	}
	if (multiple) {
		int provided;
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	} else {
		MPI_Init(&argc, &argv);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
	if (types)
		return datatypes();
#ifdef HAVE_PERSISTENT
	if (mismatched)
		return mismatch();
	if (freed)
		return freed_comm();
#else
	(void)mismatched;
	(void)freed;
#endif
	int size;
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	all(MPI_COMM_WORLD, "world", quick);
	MPI_Comm dup, half;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	all(dup, "dup", 1);
	MPI_Comm_split(MPI_COMM_WORLD, g_wrank % 2, -g_wrank, &half);
	all(half, "half", 1);

	/* MINLOC on (double, int) pairs. */
	one(ALLREDUCE, 500, 0, MPI_DOUBLE_INT, MPI_MINLOC, 0, NONBLOCKING, MPI_COMM_WORLD, "world");
	one(REDUCE, 500, size - 1, MPI_DOUBLE_INT, MPI_MAXLOC, 0, BLOCKING, MPI_COMM_WORLD, "world");

	/* Fortran's types (what ScaLAPACK's BLACS reduce), MPI_AINT. */
	one(ALLREDUCE, 1000, 0, MPI_INTEGER, MPI_SUM, 0, BLOCKING, MPI_COMM_WORLD, "world");
	one(ALLREDUCE, 7, 0, MPI_INTEGER, MPI_MAX, 1, NONBLOCKING, MPI_COMM_WORLD, "world");
	one(REDUCE, 1000, size - 1, MPI_INTEGER, MPI_MIN, 0, BLOCKING, MPI_COMM_WORLD, "world");
	one(ALLREDUCE, 1000, 0, MPI_DOUBLE_PRECISION, MPI_SUM, 0, NONBLOCKING, MPI_COMM_WORLD, "world");
	one(RSB, 100, 0, MPI_REAL, MPI_SUM, 0, BLOCKING, MPI_COMM_WORLD, "world");
	one(ALLREDUCE, 300, 0, MPI_2INTEGER, MPI_MINLOC, 0, BLOCKING, MPI_COMM_WORLD, "world");
	one(ALLREDUCE, 100, 0, MPI_AINT, MPI_SUM, 0, NONBLOCKING, MPI_COMM_WORLD, "world");

	/* A derived datatype (cadrt's since it takes every datatype in the
	 * collectives that move data); left to MPI: a user op. */
	MPI_Datatype pair;
	MPI_Type_contiguous(2, MPI_INT, &pair);
	MPI_Type_commit(&pair);
	{
		int buf[200], ref[200];
		for (int i = 0; i < 200; i++)
			buf[i] = ref[i] = g_wrank == 0 ? i * 3 : -1;
		MPI_Bcast(buf, 100, pair, 0, MPI_COMM_WORLD);
		PMPI_Bcast(ref, 100, pair, 0, MPI_COMM_WORLD);
		g_checks++;
		if (memcmp(buf, ref, sizeof buf))
			FAIL("bcast of a derived datatype differs from Open MPI's");
#ifdef HAVE_PERSISTENT
		MPI_Request pr;
		for (int i = 0; i < 200; i++)
			buf[i] = ref[i] = g_wrank == 0 ? i * 5 : -1;
		MPIX_Bcast_init(buf, 100, pair, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
		MPI_Start(&pr);
		MPI_Wait(&pr, MPI_STATUS_IGNORE);
		MPI_Request_free(&pr);
		PMPI_Bcast(ref, 100, pair, 0, MPI_COMM_WORLD);
		g_checks++;
		if (memcmp(buf, ref, sizeof buf))
			FAIL("persistent bcast of a derived datatype differs from Open MPI's");
#endif
	}
	MPI_Type_free(&pair);
	MPI_Op mysum;
	MPI_Op_create(user_sum, 1, &mysum);
	{
		int in[100], a[100], b[100];
		for (int i = 0; i < 100; i++)
			in[i] = g_wrank + i;
		MPI_Request r;
		MPI_Iallreduce(in, a, 100, MPI_INT, mysum, MPI_COMM_WORLD, &r);
		MPI_Wait(&r, MPI_STATUS_IGNORE);
		PMPI_Allreduce(in, b, 100, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		g_checks++;
		if (memcmp(a, b, sizeof a))
			FAIL("allreduce with a user op differs from Open MPI's");
	}
	MPI_Op_free(&mysum);

#ifdef HAVE_PERSISTENT
	persistent_mix();
	persistent_completion();
#endif
	MPI_Comm_free(&dup);
	MPI_Comm_free(&half);
	int failures = 0;
	PMPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (g_wrank == 0 && !failures)
		printf("mpi_check: ok (%d checks)\n", g_checks);
	MPI_Finalize();
	return failures ? 1 : 0;
}
