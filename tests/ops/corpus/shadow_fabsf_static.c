/* A static fabsf and fminf of the user's (no <math.h>) on float. */
#include "cad_op.h"

static float fabsf(float x)
{
	return x < 0 ? -x : x + 1.0f;
}

static float fminf(float a, float b)
{
	return a < b ? a : b;
}

CAD_OP(commutative)
void my_fminabs(const float *in, float *inout)
{
	*inout = fminf(fabsf(*in), fabsf(*inout));
}
