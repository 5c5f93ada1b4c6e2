/* Every comparison operator with NaN operands, as 0/1 in bit fields of a
 * result, and a select on each. */
#include <stdint.h>
#include "cad_op.h"

struct fc {
	double x;
	float y;
	uint32_t bits;
};

CAD_OP(noncommutative)
void float_compare_nan(const struct fc *in, struct fc *inout)
{
	double a = in->x, b = inout->x;
	float c = in->y, d = inout->y;
	uint32_t bits = (uint32_t)(a < b) | (uint32_t)(a <= b) << 1 | (uint32_t)(a > b) << 2 | (uint32_t)(a >= b) << 3 |
			(uint32_t)(a == b) << 4 | (uint32_t)(a != b) << 5 | (uint32_t)(c < d) << 6 |
			(uint32_t)(c >= d) << 7 | (uint32_t)!(c == d) << 8;
	inout->x = a >= b ? a : b;
	inout->y = !(c < d) ? d : c;
	inout->bits = bits ^ (in->bits << 9);
}
