/* The four operations on doubles, fed NaNs with payloads and signs (quiet
 * and signalling): with one NaN operand the result is it, quieted; with two,
 * the first operand's (C source order). */
#include "cad_op.h"

struct four {
	double add, sub, mul, div;
};

CAD_OP(noncommutative)
void nan_arith_f64(const struct four *in, struct four *inout)
{
	double a = in->add + inout->add;
	double s = in->sub - inout->sub;
	double m = in->mul * inout->mul;
	double d = in->div / inout->div;
	inout->add = a;
	inout->sub = s;
	inout->mul = m;
	inout->div = d;
}
