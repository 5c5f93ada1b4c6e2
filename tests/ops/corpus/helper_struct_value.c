/* Helpers that take complex numbers by value and return them. */
#include "cad_op.h"

struct cplx {
	double re, im;
};

static struct cplx cmul(struct cplx a, struct cplx b)
{
	struct cplx r;
	r.re = a.re * b.re - a.im * b.im;
	r.im = a.re * b.im + a.im * b.re;
	return r;
}

static struct cplx cadd(struct cplx a, struct cplx b)
{
	struct cplx r = { a.re + b.re, a.im + b.im };
	return r;
}

CAD_OP(commutative)
void cmuladd(const struct cplx *in, struct cplx *inout)
{
	struct cplx a = *in, b = *inout;
	*inout = cadd(cmul(a, b), a);
}
