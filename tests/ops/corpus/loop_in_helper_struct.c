/* A helper with a loop over a struct's array, called twice; the result
 * decides which array is kept. */
#include <stdint.h>
#include "cad_op.h"

struct arr {
	int16_t v[5];
	int32_t score;
};

static int32_t score(struct arr a)
{
	int32_t s = 0;
	for (int k = 0; k < 5; k++)
		s += a.v[k] * (k + 1);
	return s;
}

CAD_OP(commutative)
void loop_in_helper_struct(const struct arr *in, struct arr *inout)
{
	int32_t a = score(*in), b = score(*inout);
	if (a > b || (a == b && in->v[0] < inout->v[0]))
		*inout = *in;
	inout->score = a > b ? a : b;
}
