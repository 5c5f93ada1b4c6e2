/* Negation, fabs and sqrt of NaNs keep or set the sign bit and the payload
 * as the hardware does: -x and fabs touch only the sign, sqrt quiets. */
#include <math.h>
#include "cad_op.h"

struct u {
	double neg, abs, root;
	float fneg;
};

CAD_OP(noncommutative)
void nan_unary(const struct u *in, struct u *inout)
{
	double n = -in->neg;
	double a = fabs(in->abs);
	double r = sqrt(in->root);
	float f = -in->fneg;
	inout->neg = n;
	inout->abs = a;
	inout->root = r;
	inout->fneg = f;
}
