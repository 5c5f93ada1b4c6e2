/* Eight lanes summed and clipped to [-1, 1], with a count of the lanes
 * that were clipped: a helper per lane, the counter live across all of
 * them. */
#include "cad_op.h"

struct clip8 {
	float v[8];
	int clipped;
};

static float clip(float x, int *count)
{
	if (x > 1.0f) {
		*count += 1;
		return 1.0f;
	}
	if (x < -1.0f) {
		*count += 1;
		return -1.0f;
	}
	return x;
}

CAD_OP(commutative)
void clip8(const struct clip8 *in, struct clip8 *inout)
{
	int count = in->clipped + inout->clipped;
	float s[8];

	for (int l = 0; l < 8; l++)
		s[l] = in->v[l] + inout->v[l];
	for (int l = 0; l < 8; l++)
		inout->v[l] = clip(s[l], &count);
	inout->clipped = count;
}
