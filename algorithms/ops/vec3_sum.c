/* The sum of 3-vectors of doubles. */
#include "cad_op.h"

struct vec3 {
	double x[3];
};

CAD_OP(commutative)
void vec3_sum(const struct vec3 *in, struct vec3 *inout)
{
	for (int k = 0; k < 3; k++)
		inout->x[k] += in->x[k];
}
