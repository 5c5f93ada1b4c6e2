/* A static helper taking and returning a scalar: sum of squares. */
#include "cad_op.h"

static double sq(double x)
{
	return x * x;
}

CAD_OP(commutative)
void sumsq(const double *in, double *inout)
{
	*inout = sq(*in) + sq(*inout);
}
