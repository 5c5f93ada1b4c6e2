/* Composition of affine maps x -> a*x + b (noncommutative): in is applied
 * after inout, through a helper taking both by value. */
#include "cad_op.h"

struct aff {
	double a, b;
};

static struct aff compose(struct aff outer, struct aff inner)
{
	struct aff r;
	r.a = outer.a * inner.a;
	r.b = outer.a * inner.b + outer.b;
	return r;
}

CAD_OP(noncommutative)
void affine_compose(const struct aff *in, struct aff *inout)
{
	*inout = compose(*in, *inout);
}
