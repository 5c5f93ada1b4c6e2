/* Saturating additions for int16 and int32 through helpers, without
 * relying on signed overflow (the sum is formed in a wider type). */
#include <stdint.h>
#include "cad_op.h"

struct sat {
	int16_t h;
	int32_t w;
};

static int16_t sat16(int32_t x)
{
	return x > INT16_MAX ? INT16_MAX : x < INT16_MIN ? INT16_MIN : (int16_t)x;
}

static int32_t sat32(int64_t x)
{
	return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
}

CAD_OP(commutative)
void sat_add(const struct sat *in, struct sat *inout)
{
	int16_t h = sat16((int32_t)in->h + inout->h);
	int32_t w = sat32((int64_t)in->w + inout->w);
	inout->h = h;
	inout->w = w;
}
