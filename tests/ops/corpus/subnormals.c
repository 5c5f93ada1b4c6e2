/* Results that are subnormal or underflow to zero, in double and float
 * (no flush to zero anywhere). */
#include "cad_op.h"

struct s {
	double d;
	float f;
	double q;
};

CAD_OP(commutative)
void subnormals(const struct s *in, struct s *inout)
{
	double d = in->d * 0x1p-1000 * inout->d;
	float f = in->f * 0x1p-120f + inout->f * 0x1p-140f;
	double q = (in->q + inout->q) / 0x1p1000;
	inout->d = d;
	inout->f = f;
	inout->q = q;
}
