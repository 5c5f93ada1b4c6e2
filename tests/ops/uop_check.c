/*
 * uop_check.c - user-defined operators end to end through cadrt: run under
 * `cadrun -n N uop_check [OPS.cadop]` on any engine (the kernel engine runs
 * the operators inside cad.ko).  Every rank checks its result against the
 * same operator applied in rank order by plain C here:
 *   - allreduce with complex multiply on Gaussian integers (exact products);
 *   - allreduce and reduce (every root) with affine-map composition, which
 *     is associative and not commutative: a wrong order gives another map;
 *   - allreduce and reduce_scatter_block with maxloc, ties included;
 *   - reduce_scatter_block with affine maps, in place too;
 *   - a persistent allreduce started three times, and in place;
 *   - a hand-built CAD (the builder API) with two user-defined operators;
 *   - counts 0, 1, 7 and 1000; the errors of misuse.
 * Prints "uop_check: ok (N checks, engine E)"; exit 1 on a failed check.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cadrt/cadrt.h>

#include "uop_common.h"

int g_checks, g_rank;
const char *g_prog = "uop_check";

static int wait_ok(cadrt_request *req) { return cadrt_wait(req); }

int main(int argc, char **argv)
{
	static const size_t counts[] = { 0, 1, 7, 1000 };
	cadrt_comm w;
	cadrt_op op_cmul, op_aff, op_max, again;
	cadrt_request req;
	int P, c, root;
	size_t esz;
	int commutative;

	CHECK(cadrt_init() == 0, "cadrt_init");
	w = cadrt_comm_world();
	cadrt_comm_rank(w, &g_rank);
	cadrt_comm_size(w, &P);
	CHECK(cadrt_op_lookup(NULL, "complex_mul", &op_cmul) == 0, "lookup complex_mul");
	CHECK(cadrt_op_lookup(NULL, "affine", &op_aff) == 0, "lookup affine");
	CHECK(cadrt_op_lookup(argc > 1 ? argv[1] : NULL, "maxloc", &op_max) == 0, "lookup maxloc");
	CHECK(cadrt_op_lookup(NULL, "complex_mul", &again) == 0 && again == op_cmul, "the same name, the same op");
	CHECK(cadrt_op_lookup(NULL, "no_such_op", &again) == -ENOENT, "an unknown op is -ENOENT");
	CHECK(cadrt_op_info(op_aff, &esz, &commutative) == 0 && esz == 16 && !commutative, "affine's info");
	CHECK(cadrt_op_info(op_max, &esz, &commutative) == 0 && esz == 16 && commutative, "maxloc's info");

	for (c = 0; c < 4; c++) {
		const size_t n = counts[c];
		struct cplx *cs = calloc(n + 1, sizeof(*cs)), *cr = calloc(n + 1, sizeof(*cr));
		struct affine *as = calloc(n + 1, sizeof(*as)), *ar = calloc(n + 1, sizeof(*ar));
		struct dloc *ds = calloc(n * P + 1, sizeof(*ds)), *dr = calloc(n * P + 1, sizeof(*dr));
		size_t k;

		for (k = 0; k < n; k++) {
			cs[k] = cplx_of(g_rank, k);
			as[k] = affine_of(g_rank, k);
		}
		for (k = 0; k < n * P; k++)
			ds[k] = dloc_of(g_rank, k);

		/* complex multiply */
		CHECK(cadrt_iallreduce(cs, cr, n, CADRT_USER, op_cmul, w, &req) == 0, "iallreduce complex_mul n=%zu", n);
		CHECK(wait_ok(&req) == 0, "wait complex_mul n=%zu", n);
		for (k = 0; k < n; k++) {
			struct cplx e = cplx_fold(P, k);
			CHECK(cr[k].re == e.re && cr[k].im == e.im, "complex_mul n=%zu k=%zu: (%g,%g) expected (%g,%g)",
			      n, k, cr[k].re, cr[k].im, e.re, e.im);
		}

		/* affine maps: the order is checked */
		CHECK(cadrt_iallreduce(as, ar, n, CADRT_USER, op_aff, w, &req) == 0, "iallreduce affine n=%zu", n);
		CHECK(wait_ok(&req) == 0, "wait affine n=%zu", n);
		for (k = 0; k < n; k++) {
			struct affine e = affine_fold(P, k);
			CHECK(ar[k].a == e.a && ar[k].b == e.b, "allreduce affine n=%zu k=%zu: wrong map (order?)", n, k);
		}
		for (root = 0; root < P; root++) {
			memset(ar, 0, (n + 1) * sizeof(*ar));
			CHECK(cadrt_ireduce(as, ar, n, CADRT_USER, op_aff, root, w, &req) == 0, "ireduce affine root %d", root);
			CHECK(wait_ok(&req) == 0, "wait reduce affine root %d", root);
			if (g_rank == root)
				for (k = 0; k < n; k++) {
					struct affine e = affine_fold(P, k);
					CHECK(ar[k].a == e.a && ar[k].b == e.b, "reduce affine root %d n=%zu k=%zu", root, n, k);
				}
		}

		/* maxloc: allreduce and reduce_scatter_block */
		CHECK(cadrt_iallreduce(ds, dr, n, CADRT_USER, op_max, w, &req) == 0, "iallreduce maxloc");
		CHECK(wait_ok(&req) == 0, "wait maxloc");
		for (k = 0; k < n; k++) {
			struct dloc e = dloc_fold(P, k);
			CHECK(dr[k].v == e.v && dr[k].i == e.i, "maxloc n=%zu k=%zu: (%g,%d) expected (%g,%d)", n, k,
			      dr[k].v, dr[k].i, e.v, e.i);
		}
		CHECK(cadrt_ireduce_scatter_block(ds, dr, n, CADRT_USER, op_max, w, &req) == 0, "reduce_scatter maxloc");
		CHECK(wait_ok(&req) == 0, "wait reduce_scatter maxloc");
		for (k = 0; k < n; k++) {
			const size_t at = (size_t)g_rank * n + k;
			struct dloc e = dloc_fold(P, at);
			CHECK(dr[k].v == e.v && dr[k].i == e.i, "reduce_scatter maxloc n=%zu k=%zu", n, k);
		}

		/* reduce_scatter_block with affine maps: the order is checked
		 * (reduce_scatter_block_linear), out of place and in place */
		{
			struct affine *bs = calloc(n * P + 1, sizeof(*bs)), *br = calloc(n + 1, sizeof(*br));
			int inplace;

			for (inplace = 0; inplace < 2; inplace++) {
				for (k = 0; k < n * P; k++)
					bs[k] = affine_of(g_rank, k);
				CHECK(cadrt_ireduce_scatter_block(inplace ? CADRT_IN_PLACE : bs, inplace ? bs : br, n, CADRT_USER,
								  op_aff, w, &req) == 0,
				      "reduce_scatter affine n=%zu inplace=%d: %s", n, inplace, cadrt_error_message());
				CHECK(wait_ok(&req) == 0, "wait reduce_scatter affine");
				for (k = 0; k < n; k++) {
					const struct affine *got = inplace ? &bs[k] : &br[k];
					struct affine e = affine_fold(P, (size_t)g_rank * n + k);
					CHECK(got->a == e.a && got->b == e.b, "reduce_scatter affine n=%zu inplace=%d k=%zu: wrong map (order?)",
					      n, inplace, k);
				}
			}
			free(bs);
			free(br);
		}

		/* persistent, started three times, in place */
		if (n) {
			int s;
			CHECK(cadrt_allreduce_init(CADRT_IN_PLACE, ar, n, CADRT_USER, op_aff, w, &req) == 0, "allreduce_init");
			for (s = 0; s < 3; s++) {
				for (k = 0; k < n; k++)
					ar[k] = affine_of(g_rank, k);
				CHECK(cadrt_start(&req) == 0, "start");
				CHECK(cadrt_wait(&req) == 0, "wait persistent");
				for (k = 0; k < n; k++) {
					struct affine e = affine_fold(P, k);
					CHECK(ar[k].a == e.a && ar[k].b == e.b, "persistent affine start %d k=%zu", s, k);
				}
			}
			CHECK(cadrt_req_free(&req) == 0, "free persistent");
		}
		free(cs); free(cr); free(as); free(ar); free(ds); free(dr);
	}

	/* The builder: a hand-built CAD with two user-defined operators.  Each
	 * rank sends its affine maps and (value, index) pairs to the next rank
	 * and combines what the previous one sent into copies of its own. */
	if (P >= 2) {
		enum { N = 5 };
		struct affine am[N], ain[N], aout[N];
		struct dloc dm[N], din[N], dout[N];
		const int next = (g_rank + 1) % P, prev = (g_rank + P - 1) % P;
		int b_am, b_ain, b_aout, b_dm, b_din, b_dout, s1, r1, c1, x1, s2, r2, c2, x2, round;
		cadrt_cad cad;
		size_t k;

		for (k = 0; k < N; k++) {
			am[k] = affine_of(g_rank, k);
			dm[k] = dloc_of(g_rank, k);
		}
		CHECK(cadrt_cad_new(w, &cad) == 0, "cadrt_cad_new");
		CHECK(cadrt_cad_buffer(cad, am, sizeof am, 0, &b_am) == 0 && cadrt_cad_buffer(cad, ain, sizeof ain, 1, &b_ain) == 0 &&
		      cadrt_cad_buffer(cad, aout, sizeof aout, 1, &b_aout) == 0 && cadrt_cad_buffer(cad, dm, sizeof dm, 0, &b_dm) == 0 &&
		      cadrt_cad_buffer(cad, din, sizeof din, 1, &b_din) == 0 && cadrt_cad_buffer(cad, dout, sizeof dout, 1, &b_dout) == 0,
		      "cadrt_cad_buffer");
		CHECK(cadrt_cad_send(cad, b_am, 0, sizeof am, next, 0, &s1) == 0 &&
		      cadrt_cad_recv(cad, b_ain, 0, sizeof ain, prev, 0, &r1) == 0 &&
		      cadrt_cad_copy(cad, b_aout, 0, b_am, 0, sizeof am, &c1) == 0 &&
		      cadrt_cad_reduce(cad, b_aout, 0, b_ain, 0, N, CADRT_USER, op_aff, &x1) == 0 &&
		      cadrt_cad_send(cad, b_dm, 0, sizeof dm, next, 1, &s2) == 0 &&
		      cadrt_cad_recv(cad, b_din, 0, sizeof din, prev, 1, &r2) == 0 &&
		      cadrt_cad_copy(cad, b_dout, 0, b_dm, 0, sizeof dm, &c2) == 0 &&
		      cadrt_cad_reduce(cad, b_dout, 0, b_din, 0, N, CADRT_USER, op_max, &x2) == 0, "builder nodes");
		CHECK(cadrt_cad_connect(cad, r1, x1) == 0 && cadrt_cad_connect(cad, c1, x1) == 0 &&
		      cadrt_cad_connect(cad, r2, x2) == 0 && cadrt_cad_connect(cad, c2, x2) == 0, "builder edges");
		(void)s1;
		(void)s2;
		for (round = 0; round < 2; round++) {  /* issued twice */
			CHECK(cadrt_cad_issue(cad, &req) == 0, "cadrt_cad_issue with user ops: %s", cadrt_error_message());
			CHECK(cadrt_wait(&req) == 0, "wait the hand-built CAD");
			for (k = 0; k < N; k++) {
				struct affine x = affine_of(prev, k), e = affine_of(g_rank, k);
				struct dloc y = dloc_of(prev, k), f = dloc_of(g_rank, k);
				compose(&x, &e);
				maxloc(&y, &f);
				CHECK(aout[k].a == e.a && aout[k].b == e.b, "builder affine k=%zu", k);
				CHECK(dout[k].v == f.v && dout[k].i == f.i, "builder maxloc k=%zu", k);
			}
		}
		{
			int bad;
			CHECK(cadrt_cad_reduce(cad, b_aout, 0, b_ain, 0, N, CADRT_DOUBLE, op_aff, &bad) == -EINVAL &&
			      strstr(cadrt_error_message(), "CADRT_USER"), "builder: a user op with a built-in datatype");
			CHECK(cadrt_cad_reduce(cad, b_aout, 0, b_ain, 0, N, CADRT_USER, CADRT_SUM, &bad) == -EINVAL,
			      "builder: CADRT_USER with SUM");
			CHECK(cadrt_cad_reduce(cad, b_aout, 0, b_ain, 0, N, CADRT_USER, (cadrt_op)(CADRT_USER_OP_FIRST + 999), &bad) ==
			      -EINVAL, "builder: an op nobody looked up");
		}
		CHECK(cadrt_cad_free(&cad) == 0, "cadrt_cad_free");
	}

	/* Misuse: clear errors, nothing started. */
	{
		double x = 1, y;
		CHECK(cadrt_iallreduce(&x, &y, 1, CADRT_DOUBLE, op_cmul, w, &req) == -EINVAL &&
		      strstr(cadrt_error_message(), "CADRT_USER"), "a user op with a built-in datatype");
		CHECK(cadrt_iallreduce(&x, &y, 1, CADRT_USER, CADRT_SUM, w, &req) == -EINVAL, "CADRT_USER with SUM");
		CHECK(cadrt_iallreduce(&x, &y, 1, CADRT_USER, (cadrt_op)(CADRT_USER_OP_FIRST + 999), w, &req) == -EINVAL,
		      "an op nobody looked up");
	}
	CHECK(cadrt_finalize() == 0, "finalize");
	if (g_rank == 0)
		printf("uop_check: ok (%d checks, engine %s)\n", g_checks, cadrt_engine());
	return 0;
}
