/* The same on float, and with the operands the other way round. */
#include "cad_op.h"

struct four {
	float add, sub, mul, div;
};

CAD_OP(noncommutative)
void nan_arith_f32(const struct four *in, struct four *inout)
{
	float a = inout->add + in->add;
	float s = inout->sub - in->sub;
	float m = inout->mul * in->mul;
	float d = inout->div / in->div;
	inout->add = a;
	inout->sub = s;
	inout->mul = m;
	inout->div = d;
}
