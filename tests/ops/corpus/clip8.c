/* Eight float lanes added and clipped to [-1, 1], with a counter of the
 * lanes clipped so far. */
#include <stdint.h>
#include "cad_op.h"

struct lanes {
	float v[8];
	uint32_t clipped;
};

CAD_OP(commutative)
void clip8(const struct lanes *in, struct lanes *inout)
{
	uint32_t n = in->clipped + inout->clipped;
	for (int k = 0; k < 8; k++) {
		float s = in->v[k] + inout->v[k];
		if (s > 1.0f) {
			s = 1.0f;
			n++;
		} else if (s < -1.0f) {
			s = -1.0f;
			n++;
		}
		inout->v[k] = s;
	}
	inout->clipped = n;
}
