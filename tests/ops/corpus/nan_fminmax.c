/* fmin and fmax with quiet and signalling NaNs, signed zeros, infinities. */
#include <math.h>
#include "cad_op.h"

struct mm {
	double lo, hi;
	float flo, fhi;
};

CAD_OP(commutative)
void nan_fminmax(const struct mm *in, struct mm *inout)
{
	double lo = fmin(in->lo, inout->lo);
	double hi = fmax(in->hi, inout->hi);
	float flo = fminf(in->flo, inout->flo);
	float fhi = fmaxf(in->fhi, inout->fhi);
	inout->lo = lo;
	inout->hi = hi;
	inout->flo = flo;
	inout->fhi = fhi;
}
