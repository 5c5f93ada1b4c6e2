/* Kahan (compensated) summation: { sum, compensation }. */
#include "cad_op.h"

struct ksum {
	double s, c;
};

CAD_OP(commutative)
void kahan(const struct ksum *in, struct ksum *inout)
{
	double y = in->s - (in->c + inout->c);
	double t = inout->s + y;
	double c = (t - inout->s) - y;
	inout->s = t;
	inout->c = c;
}
