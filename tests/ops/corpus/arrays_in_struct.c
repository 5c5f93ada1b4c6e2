/* A histogram (int array) and a weight vector in one struct. */
#include <stdint.h>
#include "cad_op.h"

struct hist {
	int32_t bins[6];
	double w[3];
	int16_t total;
};

CAD_OP(commutative)
void arrays_in_struct(const struct hist *in, struct hist *inout)
{
	int32_t t = 0;
	for (int k = 0; k < 6; k++) {
		inout->bins[k] = (int32_t)((uint32_t)in->bins[k] + (uint32_t)inout->bins[k]);
		t += inout->bins[k] & 1;
	}
	for (int k = 0; k < 3; k++)
		inout->w[k] = in->w[k] + inout->w[k];
	inout->total = (int16_t)(in->total + inout->total + t);
}
