/* Non-static sqrt and fabs of the user's own, without <math.h>: a fixed
 * number of Newton steps, and an fabs that keeps -0 and -NaN (x < 0 is false
 * for them).  Both differ visibly from the library's. */
#include "cad_op.h"

double fabs(double x)
{
	return x < 0 ? -x : x;
}

double sqrt(double x)
{
	double r = x > 1 ? x : 1.0;
	for (int k = 0; k < 8; k++)
		r = 0.5 * (r + x / r);
	return r;
}

CAD_OP(commutative)
void my_norm(const double *in, double *inout)
{
	*inout = sqrt(fabs(*in) + fabs(*inout));
}
