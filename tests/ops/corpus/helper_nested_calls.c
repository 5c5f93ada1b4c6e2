/* Non-static helpers that call each other and the math builtins. */
#include <math.h>
#include "cad_op.h"

double clamp(double x, double lo, double hi)
{
	return fmin(fmax(x, lo), hi);
}

double lerp(double a, double b, double t)
{
	return a + (b - a) * clamp(t, 0.0, 1.0);
}

double blend(double a, double b)
{
	return lerp(a, b, 0.25) + lerp(b, a, 0.75) * 0.5;
}

CAD_OP(noncommutative)
void blend_op(const double *in, double *inout)
{
	*inout = blend(*in, *inout);
}
