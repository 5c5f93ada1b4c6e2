/*
 * uop_select.c - selection of an algorithm written for one user-defined
 * operator: run under `cadrun -n N uop_select` with CADRT_LIBRARY set to a
 * library whose rules send allreduce calls with complex_mul to an
 * algorithm that names complex_mul (test_op_algorithms.py builds it).
 *   - an allreduce with complex_mul runs that algorithm and is right;
 *   - one with affine (another operator) and one with a built-in op run
 *     the general algorithm;
 *   - forcing the complex_mul algorithm on another op is -EINVAL.
 * Prints "uop_select: ok (N checks)"; exit 1 on a failed check.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cadrt/cadrt.h>

#include "uop_common.h"

int g_checks, g_rank;
const char *g_prog = "uop_select";

int main(void)
{
	enum { N = 9 };
	struct cplx cs[N], cr[N];
	struct affine as[N], ar[N];
	double x[N], y[N];
	cadrt_comm w;
	cadrt_op op_cmul, op_aff;
	cadrt_request req;
	int P;
	size_t k;

	CHECK(cadrt_init() == 0, "cadrt_init");
	w = cadrt_comm_world();
	cadrt_comm_rank(w, &g_rank);
	cadrt_comm_size(w, &P);
	CHECK(cadrt_op_lookup(NULL, "complex_mul", &op_cmul) == 0, "lookup complex_mul");
	CHECK(cadrt_op_lookup(NULL, "affine", &op_aff) == 0, "lookup affine");
	for (k = 0; k < N; k++) {
		cs[k] = cplx_of(g_rank, k);
		as[k] = affine_of(g_rank, k);
		x[k] = g_rank + (double)k;
	}

	CHECK(cadrt_iallreduce(cs, cr, N, CADRT_USER, op_cmul, w, &req) == 0, "iallreduce complex_mul");
	CHECK(strcmp(cadrt_request_algorithm(req), "allreduce_cmul") == 0, "complex_mul ran %s",
	      cadrt_request_algorithm(req));
	CHECK(cadrt_wait(&req) == 0, "wait complex_mul");
	for (k = 0; k < N; k++) {
		struct cplx e = cplx_fold(P, k);
		CHECK(cr[k].re == e.re && cr[k].im == e.im, "complex_mul k=%zu", k);
	}

	CHECK(cadrt_iallreduce(as, ar, N, CADRT_USER, op_aff, w, &req) == 0, "iallreduce affine");
	CHECK(strcmp(cadrt_request_algorithm(req), "allreduce_recursive_doubling") == 0, "affine ran %s",
	      cadrt_request_algorithm(req));
	CHECK(cadrt_wait(&req) == 0, "wait affine");
	for (k = 0; k < N; k++) {
		struct affine e = affine_fold(P, k);
		CHECK(ar[k].a == e.a && ar[k].b == e.b, "affine k=%zu", k);
	}

	CHECK(cadrt_iallreduce(x, y, N, CADRT_DOUBLE, CADRT_SUM, w, &req) == 0, "iallreduce sum");
	CHECK(strcmp(cadrt_request_algorithm(req), "allreduce_recursive_doubling") == 0, "sum ran %s",
	      cadrt_request_algorithm(req));
	CHECK(cadrt_wait(&req) == 0, "wait sum");
	for (k = 0; k < N; k++)
		CHECK(y[k] == (double)P * (P - 1) / 2 + (double)P * k, "sum k=%zu", k);

	/* Forced on calls with other ops (new sizes: not cached). */
	setenv("CADRT_ALGORITHM_ALLREDUCE", "allreduce_cmul", 1);
	CHECK(cadrt_iallreduce(as, ar, N - 1, CADRT_USER, op_aff, w, &req) == -EINVAL &&
	      strstr(cadrt_error_message(), "written for the op complex_mul"), "forced on affine");
	CHECK(cadrt_iallreduce(x, y, N - 1, CADRT_DOUBLE, CADRT_SUM, w, &req) == -EINVAL, "forced on sum");
	CHECK(cadrt_iallreduce(cs, cr, N - 1, CADRT_USER, op_cmul, w, &req) == 0 && cadrt_wait(&req) == 0,
	      "forced on complex_mul");
	unsetenv("CADRT_ALGORITHM_ALLREDUCE");

	CHECK(cadrt_finalize() == 0, "finalize");
	if (g_rank == 0)
		printf("uop_select: ok (%d checks)\n", g_checks);
	return 0;
}
