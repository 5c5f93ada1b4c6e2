/* The gcd of unsigned 32-bit values: a helper with a constant-bound loop
 * (48 steps are enough for 32-bit operands). */
#include <stdint.h>
#include "cad_op.h"

static uint32_t gcd(uint32_t a, uint32_t b)
{
	for (int k = 0; k < 48; k++) {
		if (b != 0) {
			uint32_t t = a % b;
			a = b;
			b = t;
		}
	}
	return a;
}

CAD_OP(commutative)
void gcd_op(const uint32_t *in, uint32_t *inout)
{
	*inout = gcd(*in, *inout);
}
