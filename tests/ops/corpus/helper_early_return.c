/* A helper with early returns, used for each field of a struct. */
#include <stdint.h>
#include "cad_op.h"

struct pair {
	int32_t a;
	int64_t b;
};

static int64_t pick(int64_t x, int64_t y)
{
	if (x < 0 && y < 0)
		return x > y ? x : y;
	if (x < 0)
		return y;
	if (y < 0)
		return x;
	return x < y ? x : y;
}

CAD_OP(commutative)
void pick_op(const struct pair *in, struct pair *inout)
{
	int64_t a = pick(in->a, inout->a);
	int64_t b = pick(in->b, inout->b);
	inout->a = (int32_t)a;
	inout->b = b;
}
