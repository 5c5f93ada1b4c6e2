/* Early returns at several depths: keep inout on NaN, take in when larger,
 * otherwise average. */
#include "cad_op.h"

CAD_OP(noncommutative)
void early_returns(const double *in, double *inout)
{
	double a = *in, b = *inout;
	if (b != b)
		return;
	if (a != a) {
		*inout = 0.0;
		return;
	}
	if (a > b) {
		if (a > 1e300)
			return;
		*inout = a;
		return;
	}
	*inout = (a + b) * 0.5;
}
