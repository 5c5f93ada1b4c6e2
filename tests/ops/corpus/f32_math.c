/* Float math: sqrtf, fabsf, fminf, fmaxf, and float-only arithmetic
 * (no promotion to double: float constants). */
#include <math.h>
#include "cad_op.h"

struct v2 {
	float x, y;
};

CAD_OP(commutative)
void f32_math(const struct v2 *in, struct v2 *inout)
{
	float n = sqrtf(in->x * in->x + in->y * in->y);
	float m = sqrtf(fabsf(inout->x) + fabsf(inout->y));
	inout->x = fmaxf(n, m) * 0.5f + 1.0f / 3.0f;
	inout->y = fminf(in->y - inout->y, 2.5f);
}
