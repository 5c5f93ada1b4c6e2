/* INFINITY, NAN and HUGE_VAL from <math.h> as constants. */
#include <math.h>
#include "cad_op.h"

struct lim {
	double hi, lo;
	float fh;
};

CAD_OP(commutative)
void inf_nan_consts(const struct lim *in, struct lim *inout)
{
	double hi = in->hi > inout->hi ? in->hi : inout->hi;
	double lo = in->lo < inout->lo ? in->lo : inout->lo;
	float fh = in->fh + inout->fh;
	inout->hi = hi == HUGE_VAL ? NAN : hi;
	inout->lo = lo != lo ? -INFINITY : lo;
	inout->fh = fh > 1e30f ? INFINITY : fh;
}
