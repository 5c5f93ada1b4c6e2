/* isnan, isinf, isfinite on double and float, counting classes. */
#include <math.h>
#include <stdint.h>
#include "cad_op.h"

struct c {
	double d;
	float f;
	uint32_t nans, infs, finites;
};

CAD_OP(commutative)
void classify(const struct c *in, struct c *inout)
{
	uint32_t n = in->nans + inout->nans + (isnan(in->d) ? 1u : 0u) + (isnan(in->f) != 0);
	uint32_t i = in->infs + inout->infs + (isinf(inout->d) ? 1u : 0u) + (isinf(inout->f) != 0);
	uint32_t fin = in->finites + inout->finites + !!isfinite(in->d * inout->d) + !!isfinite(in->f + inout->f);
	double d = isfinite(in->d) ? in->d : 0.0;
	float f = isnan(inout->f) ? in->f : inout->f;
	inout->nans = n;
	inout->infs = i;
	inout->finites = fin;
	inout->d = d;
	inout->f = f;
}
