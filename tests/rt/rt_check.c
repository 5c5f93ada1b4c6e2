/* rt_check - runs collectives through cadrt under cadrun and checks every
 * result against a reference each rank computes on its own: the inputs
 * are a function of (rank, element), so the expected output of every
 * collective is known without communicating.
 *
 *   cadrun -n P rt_check [--coll NAME|all] [--sizes 0,1,7,1000,100000]
 *          [--persistent] [--outstanding K] [--roots N] [--inplace] [--mismatch
 *          [--late R] [--mismatch-op] [--start-late R] [--wait-late MS]] [--split] [--fork] [--app-handler K] [--app-handler-after K] [--app-handler-restored K] [--app-blocks K] [--iters N] [--repeat N] [--skew R] [--churn N] [--test
 *          [--jitter]] [--other-thread] [--algorithms COLL=NAME,...] [--show-algorithms]
 *
 * --persistent   the _init forms, started --iters times
 * --iters N      (without --persistent) the whole run N times over
 * --repeat N     (without --persistent) each call N times in a row with
 *                the same buffers, fresh contents before each: the same
 *                call again, which cadrt starts from the request of the
 *                call before as it was bound (Runtime::reuse)
 * --outstanding  K collectives in flight at once, then waitall
 * --test         complete every request by calling cadrt_test until it
 *                says done (the kernel engine answers most of these calls
 *                from its status page alone), instead of cadrt_wait(all);
 *                with --die too
 * --jitter       with --test: between two tests, compute outside the
 *                library for 0 to 40 us (pseudo-random), so that the
 *                thread engine's progress thread makes passes while the
 *                rank is out, and the rank comes back in while one may be
 *                under way: the handshake that lets the main thread's own
 *                passes go without a lock (Runtime::own) is what keeps the
 *                two apart
 * --other-thread every call after cadrt_init from another thread, while
 *                the thread that initialised cadrt waits in pthread_join
 *                (as MPI_THREAD_SERIALIZED allows): the signal engine must
 *                interrupt the thread that calls, not the one that
 *                initialised, whose handler would otherwise progress
 *                while the caller is inside the library
 * --algorithms COLL=NAME,...  each algorithm in turn, for its collective
 *                only, forced by CADRT_ALGORITHM_<COLL> on a communicator
 *                of its own (the setting is read at a communicator's first
 *                call); prints "rt_check: algorithm NAME: ok (engine E)",
 *                "...: does not apply to this P (...)" or "...: FAILED (...)"
 *                for each, and fails if one did.  One job for many algorithms: a job's start is
 *                most of a small one's time in qemu (3 s at P = 8).
 * --compute US  every rank computes US microseconds (outside the library)
 *                between starting its collectives and completing them, as
 *                an application overlapping them would
 * --show-algorithms  rank 0 prints the algorithm each call ran, as
 *                "rt_check: alltoall n=7 in place ran alltoall_bruck"
 * --roots N      rooted collectives at N roots (0, P - 1 and spread
 *                between), not all P
 * --inplace      CADRT_IN_PLACE where MPI allows it
 * --enomem      an alltoall in place whose own memory the process cannot
 *                have (the request's copy of 128 GiB per peer of receive
 *                buffer, mapped MAP_NORESERVE and never touched, under a
 *                library whose alltoall does not declare `inplace`):
 *                -ENOMEM with a message, then a small alltoall in place
 *                runs right.  (Scratch cannot get there: the verifier
 *                allows 4 GiB of it per program.)
 * --mismatch     rank 1 passes a different count: rank 1 must get an
 *                error and no rank may hang; a rank whose own part of the
 *                collective matched may complete, but then with the right
 *                result (as in MPI, where such a program is erroneous and
 *                only the ranks that meet the mismatch can notice it)
 * --late R       with --mismatch: rank R is a reader that comes late.  It
 *                progresses (a barrier on a copy of the world, tested)
 *                for 100 ms, so that rank 0's message telling where to
 *                read is taken in; then it stops calling cadrt for 200 ms,
 *                while rank 1 (which starts at 150 ms) fails rank 0; then
 *                it starts the collective.  A rank that fails overwrites
 *                its buffers, which are its own again, before freeing them,
 *                so a peer that read them after that would see it
 * --mismatch-op  with --mismatch: 16 elements (eager messages), and rank 1
 *                passes the same count but MAX for
 *                SUM (a reducing collective): every message has the length
 *                its receiver expects, only the fingerprint differs
 * --mismatch-inplace  with --mismatch: rank 1 calls in place, the others
 *                not, with the same count (erroneous in MPI for allreduce,
 *                allgather, alltoall and reduce_scatter_block; where the
 *                library's rules select by in place the ranks run different
 *                algorithms, and rank 1 must get an error)
 * --start-late R with --mismatch: rank R starts the collective 100 ms after
 *                the others, so what they send it waits in its unexpected
 *                queue until it posts; it must check those messages too
 * --wait-late MS with --mismatch: rank 0 computes outside the library for
 *                MS ms between its start and its wait, so that under the
 *                signal engine the failure of the others reaches it in
 *                its signal handler
 * --skew R       rank R starts every collective 2 ms after the others (its
 *                peers' receives from it are posted first: offered to it)
 * --split        also run everything on the halves of the world
 * --churn N      then N times: split a copy of the world, run everything
 *                on it, free it, then start a persistent allreduce made
 *                on it twice and free that; the heap (mallinfo2) must not
 *                grow with N: what cadrt keeps for a communicator goes
 *                with it, or with its last persistent request
 * --leave R      as --die, but rank R calls exit(0) without cadrt_finalize
 *                (--leave-hard R: _exit(0), so that only cadrun can tell
 *                its peers; --leave-exec R: before it starts the
 *                allreduce it runs a shell in its place, with the same
 *                pid, which waits until the others' allreduce is
 *                done): the others' allreduce must fail, naming it;
 *                then an allreduce on a communicator of the others (split
 *                off before) must complete with the right result, and they
 *                exit 0
 * --many N       N allreduces of 4 int32 at once, non-blocking, checked;
 *                --many-persistent N: N persistent ones, started 8 at a
 *                time, three times each (the kernel engine holds at most
 *                512 programs per process: it makes room from those not
 *                running)
 * --die R        rank R starts an allreduce and kills itself: the others
 *                must not hang (cadrun ends the job); with --skew R, the
 *                others start a broadcast from R, which R, 2 ms late,
 *                never starts
 * --away DIR     asynchronous progress: rank 0 computes without calling
 *                cadrt until every other rank has completed a collective
 *                (each makes the file DIR/done.R) or --away-for seconds
 *                (default 30) have passed; then it waits.  Exit 3 (results
 *                right) if the others had not completed by then (not with
 *                --away-fails).  The
 *                ranks post in an order fixed by files (DIR/posted.R):
 * --away-posts first  (the default) rank 0 starts an allreduce of the
 *                first --sizes elements (int32, sum) and leaves the call
 *                before any other rank starts it.  Rank 0's CPU must do its
 *                part of the reduction, so the others complete only if an
 *                engine progresses it while it computes
 * --away-posts last   every other rank starts a broadcast of the first
 *                --sizes elements from rank 1 first; rank 0 starts it last.
 *                Rank 1's announcement is in rank 0's ring by then, so the
 *                others complete if rank 0 takes it in while it starts the
 *                broadcast (under every engine, poll included) -- with P <=
 *                3, where rank 0 is a leaf of the broadcast
 * --away-for S   see --away
 * --away-fails   in --away, every rank's collective must fail (each prints
 *                "error as expected" and its error; one that completes is
 *                a failure): with a fault of rt_check_san's cadrt.  Its
 *                output buffer must then stay as the rank leaves it for
 *                100 ms (a peer that still writes into it is a failure)
 * --away-rank R  the rank that computes in --away instead of rank 0 (with
 *                --away-posts first and allreduce_linear at P = 2, rank 1
 *                posts first and computes, and rank 0, which makes every
 *                copy, completes without interrupting it: nothing of it
 *                needs rank 1's CPU)
 * --busy-peer DIR  rank 1 polls the library (cadrt_poll_begin) without
 *                starting anything until rank 0 has started a broadcast of
 *                the first --sizes elements from rank 1 (DIR/posted.0);
 *                then it starts the broadcast.  Rank 0's start must not
 *                wait for ever for rank 1's announcement because rank 1 is
 *                in the library (the rendezvous at start is bounded)
 * --app-handler K  the application installs a handler of SIGRTMIN+K
 *                before cadrt_init; it must still be there at the end
 *                (the signal engine must not take it over)
 * --app-handler-after K  the application installs a handler of
 *                SIGRTMIN+K after cadrt_init, then sleeps 500 ms: from then
 *                on the handler must not run (under the signal engine on
 *                that signal, which finds the handler not its own and sends
 *                it no more), and it must still be there at the end, after
 *                cadrt_finalize
 * --app-handler-restored K  as --app-handler-after, then the application
 *                puts back what was there before (cadrt's handler, under
 *                the signal engine on that signal) and sleeps 500 ms more:
 *                the engine must interrupt the rank again
 * --app-blocks K the application blocks SIGRTMIN+K in its main thread
 *                before cadrt_init
 * --fork         first, every rank forks a child while an allreduce of
 *                100000 elements and a persistent one are in flight (under
 *                the thread engine, maybe while its progress thread holds
 *                the library's lock): in the child every cadrt call fails
 *                with -EPERM, cadrt_finalize does nothing, and its exit()
 *                returns 0 (no abort for the progress thread it lacks);
 *                then the parent completes both, with the right results,
 *                and runs the rest: the child took none of its messages
 *                and did not tell the job that its rank had left
 * Prints one line per failure and "rt_check: ok (N checks)" at rank 0.
 * Exit 0 if every check passed; 1 on a wrong result or an error; 77 if a
 * forced algorithm (CADRT_ALGORITHM_*) does not apply to this P.
 */
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cadrt/cadrt.h"

static int g_rank, g_size, g_failures, g_checks;
static int g_away_fails;
static int g_repeat = 1;
static int g_show_algorithms, g_mismatch_inplace;
static double g_compute; /* seconds, --compute */
static int g_persistent, g_outstanding = 1, g_roots, g_inplace, g_iters = 1, g_late = -1, g_test, g_mismatch_op, g_start_late = -1;
static int g_wait_late_ms, g_skew = -1;
static int g_jitter;

static double now(void);

/* Work outside the library for s seconds. */
static void compute_for(double s)
{
	const double end = now() + s;
	volatile double v = 1;

	while (now() < end)
		v = v * 1.0000001 + 1e-9;
}

/* --jitter: up to 40 us of work outside the library. */
static void jitter(void)
{
	static uint64_t x = 88172645463325252ull;

	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	compute_for(1e-9 * (double)((x ^ (uint64_t)g_rank * 0x9e3779b97f4a7c15ull) % 40000));
}

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "rt_check: rank %d: ", g_rank);                \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		g_failures++;                                                  \
	} while (0)

/* The first error of K requests, each completed by cadrt_waitall or, with
 * --test, by cadrt_test calls in turn until all are done.  A request that
 * ends with an error ends the loop (as cadrt_waitall would). */
static int complete(int K, cadrt_request *req)
{
	int left = K, done[16] = { 0 };

	if (!g_test)
		return K == 1 ? cadrt_wait(&req[0]) : cadrt_waitall(K, req);
	if (cadrt_request_get_status(req[0], NULL) != -EINVAL)
		FAIL("cadrt_request_get_status took a NULL flag");
	if (cadrt_request_peek(req[0], NULL) != -EINVAL)
		FAIL("cadrt_request_peek took a NULL flag");
	while (left) {
		for (int j = 0; j < K; j++) {
			int flag = 0, err;

			if (done[j])
				continue;
			/* cadrt_request_peek looks without progress,
			 * cadrt_request_get_status progresses once: what
			 * either calls complete, a test completes at once;
			 * what a test completed (freed, or inactive), both
			 * call complete. */
			int seen = 0, was = 0, now = 0;

			if (cadrt_request_peek(req[j], &seen))
				FAIL("cadrt_request_peek: %s", cadrt_error_message());
			if (cadrt_request_get_status(req[j], &was))
				FAIL("cadrt_request_get_status: %s", cadrt_error_message());
			if (seen && !was)
				FAIL("cadrt_request_peek said complete, cadrt_request_get_status did not");
			if (g_jitter)
				jitter();
			if ((err = cadrt_test(&req[j], &flag)))
				return err;
			if (was && !flag)
				FAIL("cadrt_request_get_status said complete, cadrt_test did not");
			if (flag && (cadrt_request_get_status(req[j], &now) || !now))
				FAIL("a completed request is not complete to cadrt_request_get_status");
			if (flag && (cadrt_request_peek(req[j], &now) || !now))
				FAIL("a completed request is not complete to cadrt_request_peek");
			if (flag) {
				done[j] = 1;
				left--;
			}
		}
	}
	return 0;
}

/* Inputs: small integers, so that sums and products of doubles are exact. */
static int32_t gen(int r, size_t i, int salt)
{
	return (int32_t)((((uint64_t)r * 1000003u + i * 7919u + (uint64_t)salt * 31u) % 199u) + 1);
}

/* gen(r, i, salt), gen(r, i + 1, salt), ... without a division for each:
 * one step adds 7919 mod 199.  (With a division per element, filling and
 * checking buffers takes half of a large case's time, on the host and in
 * qemu, where a 64-bit division is a helper call.) */
struct gen_run {
	uint32_t v; /* gen() - 1 */
};

static struct gen_run gen_from(int r, size_t i, int salt)
{
	return (struct gen_run){ (uint32_t)gen(r, i, salt) - 1 };
}

static inline int32_t gen_next(struct gen_run *g)
{
	const int32_t out = (int32_t)g->v + 1;

	g->v += 7919u % 199u;
	if (g->v >= 199u)
		g->v -= 199u;
	return out;
}

enum coll { BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL, RSB, BARRIER, NCOLL };
static const char *names[NCOLL] = { "bcast", "reduce", "allreduce", "gather", "scatter",
				    "allgather", "alltoall", "reduce_scatter_block", "barrier" };

struct call {
	enum coll c;
	size_t n;
	int root;
	cadrt_datatype dt;
	cadrt_op op;
	int inplace;
	void *send, *recv;
	size_t send_elems, recv_elems;
};

static double value(cadrt_datatype dt, const void *p, size_t i)
{
	return dt == CADRT_DOUBLE ? ((const double *)p)[i] : (double)((const int32_t *)p)[i];
}

static void put(cadrt_datatype dt, void *p, size_t i, double v)
{
	if (dt == CADRT_DOUBLE)
		((double *)p)[i] = v;
	else
		((int32_t *)p)[i] = (int32_t)v;
}

static double combine(cadrt_op op, double a, double b)
{
	switch (op) {
	case CADRT_MAX: return a > b ? a : b;
	case CADRT_MIN: return a < b ? a : b;
	case CADRT_PROD: return a * b;
	default: return a + b;
	}
}

/* want[t] = gen(r, i + t, salt) for t < len. */
static void gen_fill(double *want, size_t len, int r, size_t i, int salt)
{
	struct gen_run g = gen_from(r, i, salt);

	for (size_t t = 0; t < len; t++)
		want[t] = gen_next(&g);
}

/* Elements first..first + len of buffer p (of type dt) := gen(r, i + t, salt). */
static void put_gen(cadrt_datatype dt, void *p, size_t first, size_t len, int r, size_t i, int salt)
{
	struct gen_run g = gen_from(r, i, salt);

	if (dt == CADRT_DOUBLE)
		for (size_t t = 0; t < len; t++)
			((double *)p)[first + t] = gen_next(&g);
	else
		for (size_t t = 0; t < len; t++)
			((int32_t *)p)[first + t] = gen_next(&g);
}

/* want[t] = the reduction over all ranks of their element idx + t, t < len
 * (sums and maxima of values up to 199 are exact in int32 and double). */
static void reduced_fill(double *want, size_t len, cadrt_op op, int salt, size_t idx)
{
	gen_fill(want, len, 0, idx, salt);
	for (int q = 1; q < g_size; q++) {
		struct gen_run g = gen_from(q, idx, salt);

		for (size_t t = 0; t < len; t++)
			want[t] = combine(op, want[t], gen_next(&g));
	}
}

static void setup(struct call *k, int salt)
{
	const size_t n = k->n, P = (size_t)g_size, es = cadrt_datatype_size(k->dt);
	size_t se = 0, re = 0;

	switch (k->c) {
	case BCAST: re = n; break;
	case REDUCE: se = n; re = g_rank == k->root ? n : 0; break;
	case ALLREDUCE: se = n; re = n; break;
	case GATHER: se = n; re = g_rank == k->root ? P * n : 0; break;
	case SCATTER: se = g_rank == k->root ? P * n : 0; re = n; break;
	case ALLGATHER: se = n; re = P * n; break;
	case ALLTOALL: se = P * n; re = P * n; break;
	case RSB: se = P * n; re = k->inplace ? P * n : n; break;
	default: break;
	}
	if (k->inplace) {
		/* The input lives in the receive buffer (scatter: the root's
		 * send buffer keeps everything). */
		if (k->c == SCATTER)
			re = 0;
		else
			se = 0;
	}
	k->send_elems = se;
	k->recv_elems = re;
	k->send = calloc(se ? se : 1, es);
	k->recv = calloc(re ? re : 1, es);
	/* The send buffer: block b of an alltoall is gen(rank * 64 + b, j),
	 * of a scatter gen(b, j, salt + 1); else element i is gen(rank, i). */
	if (k->c == ALLTOALL || k->c == SCATTER)
		for (size_t b = 0; n && b < se / n; b++)
			put_gen(k->dt, k->send, b * n, n, k->c == ALLTOALL ? g_rank * 64 + (int)b : (int)b, 0,
				k->c == ALLTOALL ? salt : salt + 1);
	else
		put_gen(k->dt, k->send, 0, se, g_rank, 0, salt);
	for (size_t i = 0; i < re; i++)
		put(k->dt, k->recv, i, -1);
	if (k->c == BCAST && g_rank == k->root)
		put_gen(k->dt, k->recv, 0, n, k->root, 0, salt);
	if (k->inplace) {
		/* Where MPI takes the input from in place. */
		switch (k->c) {
		case REDUCE: case ALLREDUCE:
			put_gen(k->dt, k->recv, 0, n, g_rank, 0, salt);
			break;
		case GATHER: case ALLGATHER:
			put_gen(k->dt, k->recv, (size_t)g_rank * n, n, g_rank, 0, salt);
			break;
		case SCATTER:
			k->send_elems = P * n;
			free(k->send);
			k->send = calloc(P * n > 0 ? P * n : 1, es);
			for (size_t b = 0; n && b < P; b++)
				put_gen(k->dt, k->send, b * n, n, (int)b, 0, salt + 1);
			break;
		case RSB:
			put_gen(k->dt, k->recv, 0, P * n, g_rank, 0, salt);
			break;
		case ALLTOALL:
			for (size_t b = 0; n && b < P; b++)
				put_gen(k->dt, k->recv, b * n, n, g_rank * 64 + (int)b, 0, salt);
			break;
		default:
			break;
		}
	}
}

/* What element j0 + t of block blk of the result should be, t < len. */
static void expected(const struct call *k, int salt, size_t blk, size_t j0, size_t len, double *want)
{
	switch (k->c) {
	case BCAST: gen_fill(want, len, k->root, j0, salt); break;
	case REDUCE: case ALLREDUCE: reduced_fill(want, len, k->op, salt, j0); break;
	case GATHER: case ALLGATHER: gen_fill(want, len, (int)blk, j0, salt); break;
	case SCATTER: gen_fill(want, len, g_rank, j0, salt + 1); break;
	case ALLTOALL: gen_fill(want, len, (int)blk * 64 + g_rank, j0, salt); break;
	case RSB: reduced_fill(want, len, k->op, salt, (size_t)g_rank * k->n + j0); break;
	default: break;
	}
}

static void check(struct call *k, int salt)
{
	const size_t n = k->n, P = (size_t)g_size;
	const void *out = (k->c == SCATTER && k->inplace) ? k->send : k->recv;
	const size_t base = (k->c == SCATTER && k->inplace) ? (size_t)g_rank * n : 0;
	const size_t blocks = k->c == GATHER || k->c == ALLGATHER || k->c == ALLTOALL ? P : 1;
	double want[1024];

	g_checks++;
	if (k->c == BARRIER || ((k->c == REDUCE || k->c == GATHER) && g_rank != k->root))
		return;
	for (size_t blk = 0; blk < blocks; blk++)
		for (size_t j0 = 0; j0 < n; j0 += 1024) {
			const size_t len = n - j0 < 1024 ? n - j0 : 1024;

			expected(k, salt, blk, j0, len, want);
			for (size_t t = 0; t < len; t++) {
				const size_t i = blk * n + j0 + t;
				const double got = value(k->dt, out, base + i);

				if (got != want[t]) {
					FAIL("%s n=%zu root=%d%s: element %zu is %g, expected %g", names[k->c], n,
					     k->root, k->inplace ? " in place" : "", i, got, want[t]);
					return;
				}
			}
		}
}

/* --skew R: rank R starts every collective 2 ms after the others (it
 * computes meanwhile): their receives from it are posted first. */
static void skew(void)
{
	if (g_rank == g_skew)
		compute_for(0.002);
}

static int start(struct call *k, cadrt_comm comm, cadrt_request *req)
{
	const void *s = k->inplace && k->c != SCATTER ? CADRT_IN_PLACE : k->send;
	void *r = k->inplace && k->c == SCATTER ? CADRT_IN_PLACE : k->recv;
	const int p = g_persistent;

	switch (k->c) {
	case BCAST: return p ? cadrt_bcast_init(k->recv, k->n, k->dt, k->root, comm, req)
			   : cadrt_ibcast(k->recv, k->n, k->dt, k->root, comm, req);
	case REDUCE: return p ? cadrt_reduce_init(s, r, k->n, k->dt, k->op, k->root, comm, req)
			    : cadrt_ireduce(s, r, k->n, k->dt, k->op, k->root, comm, req);
	case ALLREDUCE: return p ? cadrt_allreduce_init(s, r, k->n, k->dt, k->op, comm, req)
			       : cadrt_iallreduce(s, r, k->n, k->dt, k->op, comm, req);
	case GATHER: return p ? cadrt_gather_init(s, r, k->n, k->dt, k->root, comm, req)
			    : cadrt_igather(s, r, k->n, k->dt, k->root, comm, req);
	case SCATTER: return p ? cadrt_scatter_init(s, r, k->n, k->dt, k->root, comm, req)
			     : cadrt_iscatter(s, r, k->n, k->dt, k->root, comm, req);
	case ALLGATHER: return p ? cadrt_allgather_init(s, r, k->n, k->dt, comm, req)
			       : cadrt_iallgather(s, r, k->n, k->dt, comm, req);
	case ALLTOALL: return p ? cadrt_alltoall_init(s, r, k->n, k->dt, comm, req)
			      : cadrt_ialltoall(s, r, k->n, k->dt, comm, req);
	case RSB: return p ? cadrt_reduce_scatter_block_init(s, r, k->n, k->dt, k->op, comm, req)
			   : cadrt_ireduce_scatter_block(s, r, k->n, k->dt, k->op, comm, req);
	default: return p ? cadrt_barrier_init(comm, req) : cadrt_ibarrier(comm, req);
	}
}

static int has_inplace(enum coll c)
{
	return c != BCAST && c != BARRIER;
}

static int rooted(enum coll c)
{
	return c == BCAST || c == REDUCE || c == GATHER || c == SCATTER;
}

/* K calls of one kind at once; returns -1 if a forced algorithm does not apply. */
static int run(enum coll c, size_t n, int root, cadrt_datatype dt, cadrt_op op, int inplace, cadrt_comm comm)
{
	struct call k[16];
	cadrt_request req[16];
	int K = g_outstanding, err;

	if (inplace && rooted(c) && g_rank != root)
		inplace = 0; /* only the root passes CADRT_IN_PLACE */
	for (int j = 0; j < K; j++) {
		k[j] = (struct call){ .c = c, .n = n, .root = root, .dt = dt, .op = op, .inplace = inplace };
		setup(&k[j], j);
		if (!g_persistent)
			skew();
		err = start(&k[j], comm, &req[j]);
		if (err) {
			if (strstr(cadrt_error_message(), "does not apply"))
				return -1;
			FAIL("%s n=%zu root=%d: %s", names[c], n, root, cadrt_error_message());
			return 0;
		}
		if (g_show_algorithms && g_rank == 0 && j == 0)
			printf("rt_check: %s n=%zu%s ran %s\n", names[c], n, inplace ? " in place" : "",
			       cadrt_request_algorithm(req[0]));
	}
	for (int it = 0; it < (g_persistent ? g_iters : g_repeat); it++) {
		if (g_persistent || it > 0) {
			/* The same buffers, fresh contents, started (again). */
			for (int j = 0; j < K && it > 0; j++) {
				struct call fresh = k[j];
				const size_t es = cadrt_datatype_size(dt);

				setup(&fresh, j + it);
				memcpy(k[j].send, fresh.send, (fresh.send_elems ? fresh.send_elems : 1) * es);
				memcpy(k[j].recv, fresh.recv, (fresh.recv_elems ? fresh.recv_elems : 1) * es);
				free(fresh.send);
				free(fresh.recv);
			}
			skew();
			for (int j = 0; j < K; j++)
				if (g_persistent ? cadrt_start(&req[j]) : start(&k[j], comm, &req[j]))
					FAIL("%s: %s", g_persistent ? "cadrt_start" : names[c], cadrt_error_message());
		}
		if (g_compute > 0)
			compute_for(g_compute);
		if ((err = complete(K, req)))
			FAIL("%s n=%zu root=%d: %s", names[c], n, root, cadrt_error_message());
		for (int j = 0; j < K; j++)
			check(&k[j], j + it);
	}
	for (int j = 0; j < K; j++) {
		if (g_persistent)
			cadrt_req_free(&req[j]);
		free(k[j].send);
		free(k[j].recv);
	}
	return 0;
}

static int run_all(const char *only, const size_t *sizes, int nsizes, cadrt_comm comm)
{
	int applied = 0, skipped = 0;
	int size;

	cadrt_comm_size(comm, &size);
	/* --iters N without --persistent: every call of the run N times over
	 * (fresh requests each time, the instances cached). */
	for (int it = 0; it < (g_persistent ? 1 : g_iters); it++)
	for (int c = 0; c < NCOLL; c++) {
		if (only && strcmp(only, "all") && strcmp(only, names[c]))
			continue;
		for (int s = 0; s < nsizes; s++) {
			size_t n = c == BARRIER ? 0 : sizes[s];
			/* --roots N: N roots spread from 0 to size - 1 (0, size - 1,
			 * and between), for runs where the roots are not what is tested. */
			const int nroots = !rooted(c) ? 1 : g_roots > 0 && g_roots < size ? g_roots : size;
			for (int r = 0; r < nroots; r++) {
				const int root = nroots == size ? r : nroots == 1 ? 0 : r * (size - 1) / (nroots - 1);
				int reducing = c == REDUCE || c == ALLREDUCE || c == RSB;
				cadrt_datatype dt = (s % 2 && reducing) ? CADRT_DOUBLE : CADRT_INT32;
				cadrt_op op = !reducing ? CADRT_SUM : (s % 3 == 2) ? CADRT_MAX : CADRT_SUM;
				int inplace = g_inplace && has_inplace(c);

				if (run(c, n, root, dt, op, inplace, comm) < 0)
					skipped++;
				else
					applied++;
			}
			if (c == BARRIER)
				break;
		}
	}
	return applied == 0 && skipped > 0 ? -1 : 0;
}

/* --algorithms: see the header (a failure counts in g_failures). */
static void each_algorithm(const char *list, const size_t *sizes, int nsizes)
{
	char *copy = strdup(list), *save = NULL;

	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *name = strchr(item, '='), var[64];
		cadrt_comm c = NULL;
		int known = 0;

		if (name)
			*name++ = 0;
		for (int i = 0; i < NCOLL; i++)
			known |= !strcmp(item, names[i]);
		if (!name || !*name || !known) {
			FAIL("--algorithms: %s%s%s is not COLL=NAME", item, name ? "=" : "", name ? name : "");
			continue;
		}
		snprintf(var, sizeof var, "CADRT_ALGORITHM_%s", item);
		for (char *q = var; *q; q++)
			*q = (char)toupper((unsigned char)*q);
		setenv(var, name, 1);
		const int before = g_failures;
		int r = 0;
		if (cadrt_comm_split(cadrt_comm_world(), 0, g_rank, &c)) {
			FAIL("cadrt_comm_split: %s", cadrt_error_message());
		} else {
			r = run_all(item, sizes, nsizes, c);
			if (cadrt_comm_free(&c))
				FAIL("cadrt_comm_free: %s", cadrt_error_message());
		}
		unsetenv(var);
		if (g_rank == 0 || g_failures > before)
			printf("rt_check: algorithm %s: %s (engine %s)\n", name,
			       g_failures > before ? "FAILED" : r < 0 ? "does not apply to this P" : "ok", cadrt_engine());
		fflush(stdout);
	}
	free(copy);
}

/* --enomem (above). */
static int no_memory(void)
{
	const size_t block = (size_t)128 << 30, P = (size_t)g_size;
	unsigned char *big = mmap(NULL, block * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0);
	cadrt_request req = NULL;
	int err;

	if (big == MAP_FAILED) {
		printf("rt_check: enomem: skipped: mmap of %zu GiB: %s\n", (block * P) >> 30, strerror(errno));
		return 0;
	}
	err = cadrt_ialltoall(CADRT_IN_PLACE, big, block, CADRT_BYTE, cadrt_comm_world(), &req);
	if (err != -ENOMEM || req)
		FAIL("an alltoall in place of %zu GiB a rank: %d (%s), not -ENOMEM", (block * P) >> 30, err,
		     err ? cadrt_error_message() : "started");
	else
		printf("rt_check: rank %d: -ENOMEM as expected: %s\n", g_rank, cadrt_error_message());
	munmap(big, block * P);
	/* The runtime works on: a small one in place, checked. */
	struct call k = { .c = ALLTOALL, .n = 1000, .root = 0, .dt = CADRT_INT32, .op = CADRT_SUM, .inplace = 1 };
	setup(&k, 7);
	if ((err = start(&k, cadrt_comm_world(), &req)) || (err = cadrt_wait(&req)))
		FAIL("the alltoall after: %s", cadrt_error_message());
	else
		check(&k, 7);
	free(k.send);
	free(k.recv);
	if (g_rank == 0 && !g_failures)
		printf("rt_check: enomem: ok\n");
	return g_failures ? 1 : 0;
}

/* Rank 1 passes a different count: every rank must see an error. */
static int mismatch(const char *only)
{
	enum coll c = BCAST;
	struct call k;
	cadrt_request req, breq = NULL;
	cadrt_comm dup = NULL;
	int err;

	for (int i = 0; i < NCOLL; i++)
		if (only && !strcmp(only, names[i]))
			c = (enum coll)i;
	k = (struct call){ .c = c, .n = g_mismatch_op ? 16 : g_rank == 1 && !g_mismatch_inplace ? 3000 : 2000,
			   .root = 0, .dt = CADRT_INT32, .op = g_rank == 1 && g_mismatch_op ? CADRT_MAX : CADRT_SUM,
			   .inplace = g_mismatch_inplace && g_rank == 1 };
	setup(&k, 0);
	if (g_late >= 0) {
		/* A barrier that completes after the collective (see --late). */
		if (cadrt_comm_split(cadrt_comm_world(), 0, g_rank, &dup) || cadrt_ibarrier(dup, &breq)) {
			FAIL("split or barrier: %s", cadrt_error_message());
			return 1;
		}
		if (g_rank == 1)
			usleep(150000);
		if (g_rank == g_late) {
			int flag = 0;
			for (int i = 0; i < 100; i++) {
				cadrt_test(&breq, &flag);
				usleep(1000);
			}
			usleep(200000);
		}
	}
	if (g_rank == g_start_late)
		usleep(100000);
	err = start(&k, cadrt_comm_world(), &req);
	if (!err && g_rank == 0 && g_wait_late_ms)
		compute_for(g_wait_late_ms / 1000.0);
	if (!err)
		err = cadrt_wait(&req);
	if (!err && g_rank == 1)
		FAIL("a mismatched %s completed without an error", names[c]);
	else if (!err)
		check(&k, 0);
	else
		printf("rt_check: rank %d: error as expected: %s\n", g_rank, cadrt_error_message());
	if (err) {
		/* The request is over: its buffers are the application's again. */
		const size_t es = cadrt_datatype_size(k.dt);
		memset(k.send, 0xEE, (k.send_elems ? k.send_elems : 1) * es);
		memset(k.recv, 0xEE, (k.recv_elems ? k.recv_elems : 1) * es);
	}
	/* The communicator is still usable after a failed collective (and no
	 * rank leaves while a peer may still read its memory). */
	if ((err = cadrt_ibarrier(cadrt_comm_world(), &req)) || (err = cadrt_wait(&req)))
		FAIL("a barrier after the failed %s: %s", names[c], cadrt_error_message());
	if (breq && cadrt_wait(&breq))
		FAIL("the barrier on the copy of the world: %s", cadrt_error_message());
	if (dup)
		cadrt_comm_free(&dup);
	free(k.send);
	free(k.recv);
	return g_failures ? 1 : 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Waits (computing nothing) until DIR/posted.R exists; 0 once it does, -1
 * after 60 s. */
static int wait_for_file(const char *dir, const char *what, int r)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/%s.%d", dir, what, r);
	for (const double t0 = now(); access(path, F_OK) != 0;) {
		if (now() - t0 > 60) {
			FAIL("%s did not appear", path);
			return -1;
		}
		usleep(100);
	}
	return 0;
}

static void make_file(const char *dir, const char *what)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/%s.%d", dir, what, g_rank);
	FILE *f = fopen(path, "w");
	if (!f || fclose(f))
		FAIL("cannot make %s", path);
}

/* --away: see the header.  Returns 0, 1 (an error or a wrong result) or 3
 * (right results, but the away rank's peers completed only after it came
 * back).  In the comments "rank 0" is the away rank. */
static int away(const char *dir, size_t n, double seconds, int posts_last, int me_away)
{
	int32_t *in = malloc((n ? n : 1) * sizeof *in), *out = malloc((n ? n : 1) * sizeof *out);
	char path[4096];
	cadrt_request req;
	int err = 0, peers_done = 0;

	if (!in || !out)
		return 1;
	for (size_t i = 0; i < n; i++) {
		in[i] = gen(g_rank, i, 7);
		out[i] = posts_last && g_rank == 1 ? gen(1, i, 9) : -1;
	}
	/* The order of the posts: rank 0 first, or every other rank first. */
	if (g_rank != me_away && !posts_last && wait_for_file(dir, "posted", me_away))
		return 1;
	for (int r = 0; g_rank == me_away && posts_last && r < g_size; r++)
		if (r != me_away && wait_for_file(dir, "posted", r))
			return 1;
	if (posts_last)
		err = cadrt_ibcast(out, n, CADRT_INT32, 1 % g_size, cadrt_comm_world(), &req);
	else
		err = cadrt_iallreduce(in, out, n, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &req);
	if (err) {
		FAIL("starting the collective: %s", cadrt_error_message());
		return 1;
	}
	make_file(dir, "posted");
	if (g_rank == me_away) {
		/* Compute: no cadrt call, a look at the files every millisecond. */
		const double t0 = now();
		volatile double x = 1.0;

		while (!peers_done && now() - t0 < seconds) {
			for (int i = 0; i < 20000; i++)
				x = x * 1.0000001 + 1e-9;
			peers_done = 1;
			for (int r = 0; r < g_size && peers_done; r++) {
				if (r == me_away)
					continue;
				snprintf(path, sizeof path, "%s/done.%d", dir, r);
				peers_done = access(path, F_OK) == 0;
			}
		}
		printf("rt_check: away: the peers %s %d %s\n",
		       peers_done ? "completed while rank" : "had not completed when rank", me_away,
		       peers_done ? "computed" : "came back");
	}
	if ((err = cadrt_wait(&req)) && g_away_fails) {
		printf("rt_check: rank %d: error as expected: %s\n", g_rank, cadrt_error_message());
		/* A failed collective has returned: no peer writes into its
		 * buffer any more (a peer still copying makes the request
		 * drain until it is done).  A mark in every element, kept
		 * through 100 ms in which a late copy would overwrite it. */
		for (size_t i = 0; i < n; i++)
			out[i] = -5;
		usleep(100000);
		for (size_t i = 0; i < n; i++)
			if (out[i] != -5) {
				FAIL("away: element %zu was written after the collective failed", i);
				break;
			}
	} else if (err)
		FAIL("cadrt_wait: %s", cadrt_error_message());
	else if (g_away_fails)
		FAIL("away: the collective completed without an error");
	for (size_t i = 0; !err && i < n; i++) {
		int32_t want = 0;

		for (int r = 0; r < g_size; r++)
			want += gen(r, i, 7);
		if (posts_last)
			want = g_size > 1 ? gen(1, i, 9) : -1;
		if (out[i] != want) {
			FAIL("away: element %zu is %d, expected %d", i, out[i], want);
			break;
		}
	}
	if (g_rank != me_away)
		make_file(dir, "done");
	free(in);
	free(out);
	/* No rank leaves while a peer may still read its memory. */
	if ((err = cadrt_ibarrier(cadrt_comm_world(), &req)) || (err = cadrt_wait(&req)))
		FAIL("the barrier after the collective: %s", cadrt_error_message());
	return g_failures ? 1 : g_rank == me_away && !peers_done && !g_away_fails ? 3 : 0;
}

/* --many N: N allreduces of 4 int32 at once (non-blocking), checked.
 * --many-persistent N: N persistent allreduces, started 8 at a time, all
 * of them three times over, checked each time. */
static int many(int n, int persistent)
{
	int32_t (*in)[4] = calloc((size_t)n, sizeof *in), (*out)[4] = calloc((size_t)n, sizeof *out);
	cadrt_request *req = calloc((size_t)n, sizeof *req);
	int err = 0, rounds = persistent ? 3 : 1;

	if (!in || !out || !req)
		return 1;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 4; k++)
			in[i][k] = (g_rank + 1) * (i + k);
	for (int i = 0; persistent && !err && i < n; i++)
		if ((err = cadrt_allreduce_init(in[i], out[i], 4, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &req[i])))
			fprintf(stderr, "rt_check: rank %d: cadrt_allreduce_init %d: %s\n", g_rank, i, cadrt_error_message());
	for (int round = 0; !err && round < rounds; round++) {
		memset(out, 0xee, (size_t)n * sizeof *out);
		if (persistent) {
			for (int i = 0; !err && i < n; i += 8) {
				int k = n - i < 8 ? n - i : 8;

				for (int j = 0; !err && j < k; j++)
					err = cadrt_start(&req[i + j]);
				if (!err)
					err = cadrt_waitall(k, req + i);
				if (err)
					fprintf(stderr, "rt_check: rank %d: round %d, requests %d..: %s\n", g_rank, round, i,
						cadrt_error_message());
			}
		} else {
			for (int i = 0; !err && i < n; i++)
				if ((err = cadrt_iallreduce(in[i], out[i], 4, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &req[i])))
					fprintf(stderr, "rt_check: rank %d: cadrt_iallreduce %d: %s\n", g_rank, i, cadrt_error_message());
			if (!err && (err = cadrt_waitall(n, req)))
				fprintf(stderr, "rt_check: rank %d: many: %s\n", g_rank, cadrt_error_message());
		}
		for (int i = 0; !err && i < n; i++)
			for (int k = 0; k < 4; k++)
				if (out[i][k] != g_size * (g_size + 1) / 2 * (i + k)) {
					FAIL("many: round %d, allreduce %d, element %d is %d", round, i, k, out[i][k]);
					err = 1;
					break;
				}
	}
	for (int i = 0; persistent && i < n; i++)
		if (req[i])
			cadrt_req_free(&req[i]);
	free(in);
	free(out);
	free(req);
	if (!err && g_rank == 0)
		printf("rt_check: many: %d %s allreduces right\n", n, persistent ? "persistent" : "non-blocking");
	return err ? 1 : 0;
}

/* --busy-peer: see the header. */
static int busy_peer(const char *dir, size_t n)
{
	int32_t *buf = malloc((n ? n : 1) * sizeof *buf);
	cadrt_request req;
	int err;

	if (!buf)
		return 1;
	for (size_t i = 0; i < n; i++)
		buf[i] = g_rank == 1 ? gen(1, i, 5) : -1;
	if (g_rank == 1) {
		cadrt_poll_begin();
		wait_for_file(dir, "posted", 0);
		cadrt_poll_end();
	} else if (g_rank == 0) {
		usleep(50000); /* rank 1 is polling by now */
	}
	if ((err = cadrt_ibcast(buf, n, CADRT_INT32, 1 % g_size, cadrt_comm_world(), &req))) {
		FAIL("cadrt_ibcast: %s", cadrt_error_message());
		return 1;
	}
	if (g_rank == 0)
		make_file(dir, "posted");
	if ((err = cadrt_wait(&req)))
		FAIL("cadrt_wait: %s", cadrt_error_message());
	for (size_t i = 0; !err && i < n; i++)
		if (buf[i] != (g_size > 1 ? gen(1, i, 5) : -1)) {
			FAIL("busy-peer: element %zu is %d, expected %d", i, buf[i], gen(1, i, 5));
			break;
		}
	free(buf);
	if ((err = cadrt_ibarrier(cadrt_comm_world(), &req)) || (err = cadrt_wait(&req)))
		FAIL("the barrier after the broadcast: %s", cadrt_error_message());
	if (g_rank == 0 && !g_failures)
		printf("rt_check: busy-peer: ok\n");
	return g_failures ? 1 : 0;
}

static int parse_sizes(const char *s, size_t *out, int max)
{
	int n = 0;

	while (*s && n < max) {
		char *end;
		out[n++] = (size_t)strtoull(s, &end, 10);
		s = *end == ',' ? end + 1 : end;
		if (end == s && *s)
			break;
	}
	return n;
}

static int body(int argc, char **argv);
static int g_argc;
static char **g_argv;
static int g_body_result;

static void *other_thread(void *unused)
{
	(void)unused;
	g_body_result = body(g_argc, g_argv);
	return NULL;
}

/* --app-handler(-after) K: the application's own handler of SIGRTMIN+K;
 * how many times it ran. */
static volatile sig_atomic_t g_app_signals;

static void app_handler(int sig)
{
	(void)sig;
	g_app_signals++;
}

static void install_app_handler(int sig, struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = app_handler;
	sigaction(sig, &sa, old);
}

int main(int argc, char **argv)
{
	int other = 0, app_signal = 0, app_after = 0, app_blocks = 0, err;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--other-thread"))
			other = 1;
		else if (!strcmp(argv[i], "--app-handler") && i + 1 < argc)
			app_signal = SIGRTMIN + atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--app-handler-after") && i + 1 < argc)
			app_signal = SIGRTMIN + atoi(argv[i + 1]), app_after = 1;
		else if (!strcmp(argv[i], "--app-handler-restored") && i + 1 < argc)
			app_signal = SIGRTMIN + atoi(argv[i + 1]), app_after = 2;
		else if (!strcmp(argv[i], "--app-blocks") && i + 1 < argc)
			app_blocks = SIGRTMIN + atoi(argv[i + 1]);
	if (app_blocks) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, app_blocks);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	if (app_signal && !app_after)
		install_app_handler(app_signal, NULL);
	if ((err = cadrt_init())) {
		fprintf(stderr, "rt_check: cadrt_init: %s\n", cadrt_error_message());
		return 1;
	}
	cadrt_comm_rank(cadrt_comm_world(), &g_rank);
	if (app_after) {
		const struct timespec half = {0, 500000000};

		struct sigaction before;

		install_app_handler(app_signal, &before);
		nanosleep(&half, NULL);
		if (app_after == 2) {
			sigaction(app_signal, &before, NULL);
			nanosleep(&half, NULL);
			app_signal = 0;  /* not the application's any more */
		}
		g_app_signals = 0;
	}
	if ((app_signal || app_blocks) && g_rank == 0)
		printf("rt_check: engine %s beside the application's %s of signal %d\n", cadrt_engine(),
		       app_signal ? "handler" : "block", app_signal ? app_signal : app_blocks);
	if (!other) {
		err = body(argc, argv);
	} else {
		pthread_t t;

		g_argc = argc;
		g_argv = argv;
		if (pthread_create(&t, NULL, other_thread, NULL)) {
			fprintf(stderr, "rt_check: pthread_create failed\n");
			return 1;
		}
		pthread_join(t, NULL);
		err = g_body_result;
	}
	if (app_signal) {
		struct sigaction now;

		if (sigaction(app_signal, NULL, &now) || now.sa_handler != app_handler) {
			fprintf(stderr, "rt_check: rank %d: the application's handler of signal %d was replaced\n", g_rank,
				app_signal);
			return 1;
		}
		if (app_after && g_app_signals) {
			fprintf(stderr, "rt_check: rank %d: the application's handler of signal %d ran %d times\n",
				g_rank, app_signal, (int)g_app_signals);
			return 1;
		}
	}
	return err;
}

/* --fork: see the top.  The child's checks, then its exit code. */
static int in_forked_child(cadrt_request *running, cadrt_request *persistent)
{
	int bad = 0, flag = 0, x = 1, y = 0;
	cadrt_request r = NULL;
	cadrt_comm c = NULL;
	struct {
		const char *what;
		int err;
	} calls[] = {
		{ "cadrt_iallreduce", cadrt_iallreduce(&x, &y, 1, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &r) },
		{ "cadrt_test", cadrt_test(running, &flag) },
		{ "cadrt_wait", cadrt_wait(running) },
		{ "cadrt_start", cadrt_start(persistent) },
		{ "cadrt_comm_split", cadrt_comm_split(cadrt_comm_world(), 0, 0, &c) },
		{ "cadrt_init", cadrt_init() },
	};

	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
		if (calls[i].err != -EPERM) {
			fprintf(stderr, "rt_check: rank %d: forked child: %s gave %d (%s), expected -EPERM\n", g_rank,
				calls[i].what, calls[i].err, cadrt_error_message());
			bad = 1;
		}
	/* The message of the last call. */
	if (!strstr(cadrt_error_message(), "forked")) {
		fprintf(stderr, "rt_check: rank %d: forked child: message \"%s\"\n", g_rank, cadrt_error_message());
		bad = 1;
	}
	if (cadrt_finalize()) {
		fprintf(stderr, "rt_check: rank %d: forked child: cadrt_finalize: %s\n", g_rank, cadrt_error_message());
		bad = 1;
	}
	return bad;
}

static void fork_check(void)
{
	static int32_t in[100000], out[100000];
	int one = 1, sum = 0, status = 0, err;
	cadrt_request running = NULL, persistent = NULL;

	for (int i = 0; i < 100000; i++)
		in[i] = g_rank + i;
	if ((err = cadrt_allreduce_init(&one, &sum, 1, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &persistent)) ||
	    (err = cadrt_start(&persistent)) ||
	    (err = cadrt_iallreduce(in, out, 100000, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &running))) {
		FAIL("--fork: starting: %s", cadrt_error_message());
		return;
	}
	fflush(NULL);
	const pid_t child = fork();
	if (child == 0)
		exit(in_forked_child(&running, &persistent)); /* (exit: atexit handlers and destructors run) */
	if (child < 0 || waitpid(child, &status, 0) != child)
		FAIL("--fork: fork or waitpid: %s", strerror(errno));
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("--fork: the child %s %d", WIFEXITED(status) ? "exited with" : "was killed by signal",
		     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	if (cadrt_wait(&running) || cadrt_wait(&persistent)) {
		FAIL("--fork: completing after the child: %s", cadrt_error_message());
		return;
	}
	g_checks += 2;
	for (int i = 0; i < 100000; i++)
		if (out[i] != (int32_t)((int64_t)g_size * i + (int64_t)g_size * (g_size - 1) / 2)) {
			FAIL("--fork: allreduce element %d: %d", i, out[i]);
			break;
		}
	if (sum != g_size)
		FAIL("--fork: persistent allreduce: %d, expected %d", sum, g_size);
	sum = 0;
	if (cadrt_start(&persistent) || cadrt_wait(&persistent) || sum != g_size)
		FAIL("--fork: the persistent allreduce again: %s (%d)", cadrt_error_message(), sum);
	cadrt_req_free(&persistent);
}

/* Everything after cadrt_init (main's thread, or another: --other-thread). */
static int body(int argc, char **argv)
{
	const char *only = "all", *algorithms = NULL;
	size_t sizes[16] = { 0, 1, 7, 1000, 100000 };
	int nsizes = 5, want_mismatch = 0, want_enomem = 0, want_split = 0, want_fork = 0, die = -1, leave = 0, churn = 0, err;
	int many_n = 0, many_persistent = 0;
	const char *away_dir = NULL;
	double away_for = 30;
	int away_last = 0;
	long away_rank = 0;
	const char *away_rank_arg = "0";
	const char *busy_dir = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--coll") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--algorithms") && i + 1 < argc)
			algorithms = argv[++i];
		else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
			nsizes = parse_sizes(argv[++i], sizes, 16);
		else if (!strcmp(argv[i], "--persistent"))
			g_persistent = 1;
		else if (!strcmp(argv[i], "--outstanding") && i + 1 < argc)
			g_outstanding = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			g_iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			g_repeat = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--roots") && i + 1 < argc)
			g_roots = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--inplace"))
			g_inplace = 1;
		else if (!strcmp(argv[i], "--show-algorithms"))
			g_show_algorithms = 1;
		else if (!strcmp(argv[i], "--compute") && i + 1 < argc)
			g_compute = atof(argv[++i]) * 1e-6;
		else if (!strcmp(argv[i], "--test"))
			g_test = 1;
		else if (!strcmp(argv[i], "--jitter"))
			g_jitter = 1;
		else if (!strcmp(argv[i], "--other-thread"))
			continue;  /* main() */
		else if (!strcmp(argv[i], "--mismatch"))
			want_mismatch = 1;
		else if (!strcmp(argv[i], "--enomem"))
			want_enomem = 1;
		else if (!strcmp(argv[i], "--split"))
			want_split = 1;
		else if (!strcmp(argv[i], "--fork"))
			want_fork = 1;
		else if ((!strcmp(argv[i], "--app-handler") || !strcmp(argv[i], "--app-handler-after") ||
			  !strcmp(argv[i], "--app-handler-restored") ||
			  !strcmp(argv[i], "--app-blocks")) && i + 1 < argc)
			i++; /* (main's) */
		else if (!strcmp(argv[i], "--late") && i + 1 < argc)
			g_late = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mismatch-op"))
			g_mismatch_op = 1;
		else if (!strcmp(argv[i], "--mismatch-inplace"))
			g_mismatch_inplace = 1;
		else if (!strcmp(argv[i], "--start-late") && i + 1 < argc)
			g_start_late = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--wait-late") && i + 1 < argc)
			g_wait_late_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--skew") && i + 1 < argc)
			g_skew = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--die") && i + 1 < argc)
			die = atoi(argv[++i]);
		else if ((!strcmp(argv[i], "--leave") || !strcmp(argv[i], "--leave-hard") ||
			  !strcmp(argv[i], "--leave-exec")) && i + 1 < argc)
			leave = !argv[i][7] ? 1 : argv[i][8] == 'h' ? 2 : 3, die = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--churn") && i + 1 < argc)
			churn = atoi(argv[++i]);
		else if ((!strcmp(argv[i], "--many") || !strcmp(argv[i], "--many-persistent")) && i + 1 < argc)
			many_n = atoi(argv[i + 1]), many_persistent = argv[i][6] != 0, i++;
		else if (!strcmp(argv[i], "--away") && i + 1 < argc)
			away_dir = argv[++i];
		else if (!strcmp(argv[i], "--away-posts") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "first") || !strcmp(argv[i + 1], "last")))
			away_last = !strcmp(argv[++i], "last");
		else if (!strcmp(argv[i], "--away-fails"))
			g_away_fails = 1;
		else if (!strcmp(argv[i], "--busy-peer") && i + 1 < argc)
			busy_dir = argv[++i];
		else if (!strcmp(argv[i], "--away-rank") && i + 1 < argc) {
			char *end;

			away_rank_arg = argv[++i];
			away_rank = strtol(away_rank_arg, &end, 10);
			if (end == argv[i] || *end)
				away_rank = -1; /* refused below, with the job's size */
		}
		else if (!strcmp(argv[i], "--away-for") && i + 1 < argc)
			away_for = atof(argv[++i]);
		else {
			fprintf(stderr, "rt_check: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (g_outstanding < 1 || g_outstanding > 16 || g_iters < 1 || g_repeat < 1) {
		fprintf(stderr, "rt_check: --outstanding takes 1..16, --iters and --repeat at least 1\n");
		return 2;
	}
	cadrt_comm_rank(cadrt_comm_world(), &g_rank);
	cadrt_comm_size(cadrt_comm_world(), &g_size);
	if (die >= 0) {
		static int32_t in[1 << 20], out[1 << 20];
		cadrt_request req;
		cadrt_comm rest = NULL;
		char leave_done[64];

		if (leave && cadrt_comm_split(cadrt_comm_world(), g_rank == die, g_rank, &rest)) {
			fprintf(stderr, "rt_check: cadrt_comm_split: %s\n", cadrt_error_message());
			return 1;
		}
		/* Rank R leaves only when the others' split has ended: a split
		 * (an allgather) that ended on R may still wait for R's part on a
		 * peer, and fails there when R leaves.  Each of
		 * the others makes a file when its split has returned; R waits
		 * for them all (30 s at most) and removes them. */
		if (leave) {
			char split_done[80];

			for (int q = 0; q < g_size; q++) {
				if (q == die || (g_rank != die && q != g_rank))
					continue;  /* (R: every other rank; the others: their own) */
				snprintf(split_done, sizeof split_done, "/tmp/rt_check.split.%d.%d", (int)getppid(), q);
				if (g_rank == die) {
					for (int i = 0; access(split_done, F_OK) && i < 30000; i++)
						usleep(1000);
					unlink(split_done);
				} else {
					FILE *f = fopen(split_done, "w");

					if (f)
						fclose(f);
				}
			}
		}
		/* The shell waits for a file rank 0 makes when the others are done. */
		snprintf(leave_done, sizeof leave_done, "/tmp/rt_check.leave.%d", (int)getppid());
		if (g_rank == die && leave == 3) {
			execlp("sh", "sh", "-c",
			       "i=0; while [ ! -e \"$0\" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; rm -f \"$0\"",
			       leave_done, (char *)NULL);
			perror("rt_check: exec sh");
			_exit(1);
		}
		/* With --skew R (R the rank that dies): a broadcast of 80 kB from
		 * R, which R never starts -- it is killed 2 ms late -- so that the
		 * others' receives from it are offered to it when it dies. */
		if (g_skew == die && g_rank == die) {
			skew();
			if (leave == 1)
				exit(0);
			if (leave == 2)
				_exit(0);
			raise(SIGKILL);
		}
		if (g_skew == die ? cadrt_ibcast(out, 20000, CADRT_INT32, die, cadrt_comm_world(), &req)
				  : cadrt_iallreduce(in, out, 1 << 20, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &req))
			return 1;
		if (g_rank == die && leave == 1)
			exit(0);
		if (g_rank == die && leave == 2)
			_exit(0);
		if (g_rank == die)
			raise(SIGKILL);
		err = complete(1, &req);
		fprintf(stderr, "rt_check: rank %d: the allreduce ended: %s\n", g_rank,
			err ? cadrt_error_message() : "no error");
		if (leave) {
			/* The others' own communicator runs on. */
			enum { N = 1000 };

			for (int i = 0; i < N; i++)
				in[i] = (g_rank + 1) * (i % 7 + 1);
			err = cadrt_iallreduce(in, out, N, CADRT_INT32, CADRT_SUM, rest, &req) || complete(1, &req);
			for (int i = 0; !err && i < N; i++) {
				int32_t want = 0;

				for (int r = 0; r < g_size; r++)
					want += r == die ? 0 : (r + 1) * (i % 7 + 1);
				if (out[i] != want)
					FAIL("leave: element %d of the others' allreduce is %d, expected %d", i, out[i], want);
			}
			fprintf(stderr, "rt_check: rank %d: the others' allreduce ended: %s\n", g_rank,
				err ? cadrt_error_message() : g_failures ? "wrong result" : "right");
			cadrt_comm_free(&rest);
			err = err || g_failures;
			if (leave == 3 && g_rank == (die == 0 ? 1 : 0)) {
				FILE *f = fopen(leave_done, "w");

				if (f)
					fclose(f);
			}
		}
		cadrt_finalize();
		return err ? 1 : 0;
	}
	if (away_rank < 0 || away_rank >= g_size) {
		fprintf(stderr, "rt_check: --away-rank %s: not a rank of this job (0..%d)\n", away_rank_arg, g_size - 1);
		cadrt_finalize();
		return 2;
	}
	if (away_dir) {
		err = away(away_dir, nsizes ? sizes[0] : 0, away_for, away_last, (int)away_rank);
		cadrt_finalize();
		return err;
	}
	if (busy_dir) {
		err = busy_peer(busy_dir, nsizes ? sizes[0] : 0);
		cadrt_finalize();
		return err;
	}
	if (want_enomem) {
		err = no_memory();
		cadrt_finalize();
		return err;
	}
	if (want_mismatch) {
		err = mismatch(only);
		cadrt_finalize();
		return err;
	}
	if (many_n > 0) {
		err = many(many_n, many_persistent);
		cadrt_finalize();
		return err;
	}
	if (want_fork)
		fork_check();
	if (algorithms) {
		each_algorithm(algorithms, sizes, nsizes);
	} else if (run_all(only, sizes, nsizes, cadrt_comm_world()) < 0) {
		if (g_rank == 0)
			printf("rt_check: the forced algorithm does not apply to P=%d\n", g_size);
		cadrt_finalize();
		return 77;
	}
	if (want_split && g_size > 1) {
		cadrt_comm half;
		int world_rank = g_rank, world_size = g_size;

		if ((err = cadrt_comm_split(cadrt_comm_world(), g_rank % 2, -g_rank, &half)))
			FAIL("cadrt_comm_split: %s", cadrt_error_message());
		else {
			cadrt_comm_rank(half, &g_rank);
			cadrt_comm_size(half, &g_size);
			if (g_rank != (world_size - 1 - world_rank) / 2 && world_size % 2 == 0)
				FAIL("split: rank %d in the half, expected %d", g_rank, (world_size - 1 - world_rank) / 2);
			run_all(only, sizes, nsizes, half);
			cadrt_comm_free(&half);
			g_rank = world_rank;
			g_size = world_size;
		}
	}
	if (churn > 0) {
		/* The heap after a quarter of the cycles (caches warm, free
		 * lists grown) against after all of them. */
		size_t warm = 0;

		for (int i = 0; i < churn; i++) {
			cadrt_comm c;

			if (i == churn / 4)
				warm = mallinfo2().uordblks;
			if ((err = cadrt_comm_split(cadrt_comm_world(), 0, g_rank, &c))) {
				FAIL("cadrt_comm_split: %s", cadrt_error_message());
				break;
			}
			/* A persistent collective outlives its communicator:
			 * it runs after cadrt_comm_free, and its cadrt_req_free
			 * deletes the communicator (the heap check sees a leak). */
			int one = 1, sum = 0;
			cadrt_request p = NULL;
			if (cadrt_allreduce_init(&one, &sum, 1, CADRT_INT32, CADRT_SUM, c, &p))
				FAIL("cadrt_allreduce_init: %s", cadrt_error_message());
			run_all(only, sizes, nsizes, c);
			if ((err = cadrt_comm_free(&c)))
				FAIL("cadrt_comm_free: %s", cadrt_error_message());
			for (int start = 0; start < 2 && p; start++) {
				sum = 0;
				if (cadrt_start(&p) || cadrt_wait(&p))
					FAIL("a persistent allreduce after its communicator's free: %s", cadrt_error_message());
				else if (sum != g_size)
					FAIL("a persistent allreduce after its communicator's free: %d, expected %d", sum, g_size);
			}
			if (p && cadrt_req_free(&p))
				FAIL("cadrt_req_free: %s", cadrt_error_message());
		}
		const double grew = ((double)mallinfo2().uordblks - (double)warm) / (churn - churn / 4);
		if (grew > 64)
			FAIL("the heap grew by %.0f bytes per communicator split, used and freed", grew);
		else if (g_rank == 0)
			printf("rt_check: %.0f bytes of heap per communicator split, used and freed\n", grew);
	}
	if ((err = cadrt_finalize()))
		FAIL("cadrt_finalize: %s", cadrt_error_message());
	if (g_failures)
		return 1;
	if (g_rank == 0)
		printf("rt_check: ok (%d checks, engine %s)\n", g_checks, cadrt_engine());
	return 0;
}
