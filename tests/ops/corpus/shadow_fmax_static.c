/* The file defines its own static fmax (no <math.h>): it returns the first
 * operand on ties and on NaN, unlike C's fmax.  The native build calls this
 * function; so must the VM. */
#include "cad_op.h"

static double fmax(double a, double b)
{
	return b > a ? b : a;
}

CAD_OP(noncommutative)
void my_fmax(const double *in, double *inout)
{
	*inout = fmax(*in, *inout);
}
