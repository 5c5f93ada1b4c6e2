/* Saturating addition of int16_t: the sum clamped to [-32768, 32767]. */
#include "cad_op.h"

CAD_OP(commutative)
void sat_add_i16(const int16_t *in, int16_t *inout)
{
	int s = *in + *inout;

	if (s > INT16_MAX)
		s = INT16_MAX;
	if (s < INT16_MIN)
		s = INT16_MIN;
	*inout = (int16_t)s;
}
