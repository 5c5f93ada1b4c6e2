/*
 * uop_common.h - what uop_check.c and uop_select.c share: the element
 * types of the standard operators, the same operators in plain C
 * (inout = in op inout, as algorithms/ops/ defines them), the inputs each
 * rank contributes, and CHECK.
 */
#ifndef UOP_COMMON_H
#define UOP_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cadrt/cadrt.h>

struct cplx { double re, im; };
struct affine { int64_t a, b; };
struct dloc { double v; int i; };

extern int g_checks, g_rank;
extern const char *g_prog;  /* for messages */

#define CHECK(cond, ...) do {                                                   \
		g_checks++;                                                     \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s: rank %d: line %d: ", g_prog, g_rank, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                           \
			fprintf(stderr, " (%s)\n", cadrt_error_message());      \
			exit(1);                                                \
		}                                                               \
	} while (0)

/* The operators as C, inout = in op inout (algorithms/ops/). */
static inline void cmul(const struct cplx *in, struct cplx *io)
{
	double re = in->re * io->re - in->im * io->im, im = in->re * io->im + in->im * io->re;
	io->re = re;
	io->im = im;
}

static inline void compose(const struct affine *in, struct affine *io)
{
	uint64_t a = (uint64_t)in->a * (uint64_t)io->a, b = (uint64_t)in->a * (uint64_t)io->b + (uint64_t)in->b;
	io->a = (int64_t)a;
	io->b = (int64_t)b;
}

static inline void maxloc(const struct dloc *in, struct dloc *io)
{
	if (in->v > io->v) {
		io->v = in->v;
		io->i = in->i;
	} else if (in->v == io->v && in->i < io->i) {
		io->i = in->i;
	}
}

static inline struct cplx cplx_of(int r, size_t k) { return (struct cplx){ (double)((int)((r + k) % 3) - 1), (double)((r * 7 + k) % 3) }; }
static inline struct affine affine_of(int r, size_t k) { return (struct affine){ (int64_t)(2 * r + 3 + k), (int64_t)(r * 7919 + k) - 5 }; }
static inline struct dloc dloc_of(int r, size_t k) { return (struct dloc){ (double)((r * 5 + k) % 4), r }; }

/* What a reduction of every rank's k-th element must give, in MPI's order:
 * x_0 op (x_1 op (... op x_{P-1})). */
#define UOP_FOLD(T, OF, OP)                                                    \
	static inline struct T T##_fold(int P, size_t k)                        \
	{                                                                      \
		struct T e = OF(P - 1, k);                                     \
		for (int q = P - 2; q >= 0; q--) {                             \
			struct T x = OF(q, k);                                 \
			OP(&x, &e);                                            \
		}                                                              \
		return e;                                                      \
	}
UOP_FOLD(cplx, cplx_of, cmul)
UOP_FOLD(affine, affine_of, compose)
UOP_FOLD(dloc, dloc_of, maxloc)

#endif
