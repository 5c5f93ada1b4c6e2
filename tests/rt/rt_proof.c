/*
 * rt_proof.c - the proof gate end to end.  Run under `cadrun -n P` (or,
 * built as mpi_proof with PROOF_MPI, under mpirun with libcadmpi.so
 * preloaded) with CADRT_LIBRARY set to the library of tests/rt/proof_lib,
 * whose rules give algorithms calls beyond what their proofs cover:
 *   - a broadcast wrong from P = 4 on, proven for P = 1..3, given 4..64;
 *   - a pipelined broadcast at seg = 16, where it is wrong, and seg = 4,
 *     where it is right, neither proven by its sweep;
 *   - an allreduce proven for elements of up to 8 bytes, wrong for
 *     MINLOC's 16-byte pairs, and one written for sum alone.
 * Every result is checked against what the collective defines.  The cadrt
 * build also checks which algorithm each call ran (the rules, and what
 * CADRT_PROOF lets through: online proves on arrival and refuses what
 * does not verify, strict refuses whatever is outside, off lets all run).
 * Prints "rt_proof: ok (N checks)"; a wrong result or algorithm is a line
 * "rt_proof: WRONG ..." and exit 1 (the expected end under CADRT_PROOF=off).
 * --trap: instead, a broadcast at a size none of its algorithm's size
 * classes meets, where it is wrong: only CADRT_PROOF=exact keeps it out.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PROOF_MPI
#include <mpi.h>
#else
#include <cadrt/cadrt.h>
#endif

static int g_rank, g_size, g_checks, g_wrong;
static const char *g_policy = "online";

#define WRONG(...)                                                          \
	do {                                                                \
		fprintf(stderr, "rt_proof: WRONG: rank %d: ", g_rank);      \
		fprintf(stderr, __VA_ARGS__);                               \
		fputc('\n', stderr);                                        \
		g_wrong++;                                                  \
	} while (0)

struct pair {
	double v;
	int32_t i;
};

enum kind { I32, I64, F64, PAIR };
enum op { SUM, MAX, MINLOC };

#ifdef PROOF_MPI
static MPI_Datatype mpi_type(enum kind k)
{
	return k == I32 ? MPI_INT32_T : k == I64 ? MPI_INT64_T : k == F64 ? MPI_DOUBLE : MPI_DOUBLE_INT;
}

static MPI_Op mpi_op(enum op o)
{
	return o == SUM ? MPI_SUM : o == MAX ? MPI_MAX : MPI_MINLOC;
}
#else
static cadrt_datatype rt_type(enum kind k)
{
	return k == I32 ? CADRT_INT32 : k == I64 ? CADRT_INT64 : k == F64 ? CADRT_DOUBLE : CADRT_DOUBLE_INT;
}

static cadrt_op rt_op(enum op o)
{
	return o == SUM ? CADRT_SUM : o == MAX ? CADRT_MAX : CADRT_MINLOC;
}

/* Completes req and checks the algorithm it ran. */
static void ran(cadrt_request req, const char *what, const char *want)
{
	const char *got = cadrt_request_algorithm(req);

	g_checks++;
	if (strcmp(got, want))
		WRONG("%s ran %s, not %s (CADRT_PROOF=%s)", what, got, want, g_policy);
	else if (g_rank == 0)
		printf("rt_proof: %s ran %s\n", what, got);
	if (cadrt_wait(&req))
		WRONG("%s: %s", what, cadrt_error_message());
}
#endif

/* A broadcast of n int32 from rank 0; want: the algorithm it must run. */
static void bcast(int n, const char *want)
{
	int32_t *buf = malloc(sizeof *buf * (size_t)(n ? n : 1));
	char what[64];

	snprintf(what, sizeof what, "bcast of %d B", 4 * n);
	for (int i = 0; i < n; i++)
		buf[i] = g_rank == 0 ? 1000 * i + 7 : -1;
#ifdef PROOF_MPI
	(void)want;
	MPI_Bcast(buf, n, MPI_INT32_T, 0, MPI_COMM_WORLD);
#else
	cadrt_request req;
	if (cadrt_ibcast(buf, (size_t)n, CADRT_INT32, 0, cadrt_comm_world(), &req))
		WRONG("%s: %s", what, cadrt_error_message());
	else
		ran(req, what, want);
#endif
	g_checks++;
	for (int i = 0; i < n; i++)
		if (buf[i] != 1000 * i + 7) {
			WRONG("%s: element %d is %d, not %d", what, i, buf[i], 1000 * i + 7);
			break;
		}
	free(buf);
}

/* Rank r's element i, and the reduction of element i over the ranks. */
static double input(int r, int i, enum op o)
{
	return o == MINLOC ? (r * 13 + i * 7) % 5 : o == MAX ? (r * 37 + i * 11) % 101 : r * 100 + i;
}

static struct pair reduced(int i, enum op o)
{
	struct pair p = { input(0, i, o), 0 };

	for (int r = 1; r < g_size; r++) {
		const double v = input(r, i, o);

		if (o == SUM)
			p.v += v;
		else if (o == MAX ? v > p.v : v < p.v)
			p = (struct pair){ v, r };
	}
	return p;
}

static void allreduce(int n, enum kind k, enum op o, const char *want)
{
	static const char *kinds[] = { "i32", "i64", "f64", "f64_i32" }, *ops[] = { "sum", "max", "minloc" };
	const size_t es = k == I32 ? 4 : k == PAIR ? sizeof(struct pair) : 8;
	char *in = calloc((size_t)n + 1, es), *out = calloc((size_t)n + 1, es);
	char what[64];

	snprintf(what, sizeof what, "allreduce of %d %s with %s", n, kinds[k], ops[o]);
	for (int i = 0; i < n; i++) {
		const double v = input(g_rank, i, o);

		if (k == I32)
			((int32_t *)in)[i] = (int32_t)v;
		else if (k == I64)
			((int64_t *)in)[i] = (int64_t)v;
		else if (k == F64)
			((double *)in)[i] = v;
		else
			((struct pair *)in)[i] = (struct pair){ v, g_rank };
	}
#ifdef PROOF_MPI
	(void)want;
	MPI_Allreduce(in, out, n, mpi_type(k), mpi_op(o), MPI_COMM_WORLD);
#else
	cadrt_request req;
	if (cadrt_iallreduce(in, out, (size_t)n, rt_type(k), rt_op(o), cadrt_comm_world(), &req))
		WRONG("%s: %s", what, cadrt_error_message());
	else
		ran(req, what, want);
#endif
	g_checks++;
	for (int i = 0; i < n; i++) {
		const struct pair w = reduced(i, o);
		double got = 0;
		int32_t at = w.i;

		if (k == I32)
			got = ((int32_t *)out)[i];
		else if (k == I64)
			got = (double)((int64_t *)out)[i];
		else if (k == F64)
			got = ((double *)out)[i];
		else
			got = ((struct pair *)out)[i].v, at = ((struct pair *)out)[i].i;
		if (got != w.v || at != w.i) {
			WRONG("%s: element %d is %g (at %d), not %g (at %d)", what, i, got, at, w.v, w.i);
			break;
		}
	}
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	const char *policy = getenv("CADRT_PROOF");

	const int trap = argc > 1 && !strcmp(argv[1], "--trap");

	if (policy && *policy)
		g_policy = policy;
#ifdef PROOF_MPI
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#else
	if (cadrt_init()) {
		fprintf(stderr, "rt_proof: cadrt_init: %s\n", cadrt_error_message());
		return 2;
	}
	cadrt_comm_rank(cadrt_comm_world(), &g_rank);
	cadrt_comm_size(cadrt_comm_world(), &g_size);
#endif
	const int P = g_size, exact = !strcmp(g_policy, "exact"), online = exact || !strcmp(g_policy, "online"),
		  off = !strcmp(g_policy, "off");

	if (trap) {
		/* A size no proof verified, where the algorithm is wrong: run on
		 * the size-class argument but under exact, which verifies it. */
		bcast(41, exact && P > 1 ? "bcast_linear" : "bcast_trap");
		goto done;
	}

	/* P beyond the proof: proven 1..3, wrong from 4 on. */
	bcast(10, P <= 3 || off ? "bcast_wrong_from_4" : "bcast_linear");
	/* A parameter beyond the proof: wrong at seg = 16 but at P = 1. */
	bcast(100, off || (online && P == 1) ? "bcast_segments" : "bcast_linear");
	/* And one beyond it where it is right: seg = 4. */
	bcast(1000, online || off ? "bcast_segments" : "bcast_linear");
	/* The op: an algorithm written for sum takes sum alone. */
	allreduce(10, I32, SUM, "allreduce_for_sum");
	allreduce(10, I64, SUM, "allreduce_for_sum");
	allreduce(10, I32, MAX, "allreduce_wide_drops_last");
	allreduce(10, F64, MAX, "allreduce_wide_drops_last");
	/* An element size beyond the proof: 16-byte pairs, wrong from P = 2. */
	allreduce(10, PAIR, MINLOC, off || (online && P == 1) ? "allreduce_wide_drops_last" : "allreduce_in_order");
done:
#ifdef PROOF_MPI
	MPI_Finalize();
#else
	cadrt_finalize();
#endif
	if (g_wrong)
		return 1;
	printf("rt_proof: ok (%d checks)\n", g_checks);
	return 0;
}
