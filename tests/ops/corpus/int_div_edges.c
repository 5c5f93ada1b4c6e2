/* Signed division and modulo with the cases C leaves undefined handled by
 * the operator itself: x / 0 and x % 0 keep x, INT_MIN / -1 is INT_MIN and
 * INT_MIN % -1 is 0 (wrapping negation, -fwrapv). */
#include <stdint.h>
#include "cad_op.h"

struct dm {
	int32_t q32, r32;
	int64_t q64, r64;
};

static int32_t div32(int32_t a, int32_t b)
{
	if (b == 0)
		return a;
	if (b == -1)
		return (int32_t)(0u - (uint32_t)a);
	return a / b;
}

static int32_t mod32(int32_t a, int32_t b)
{
	if (b == 0)
		return a;
	if (b == -1)
		return 0;
	return a % b;
}

CAD_OP(noncommutative)
void int_div_edges(const struct dm *in, struct dm *inout)
{
	int64_t a = in->q64, b = inout->q64;
	int64_t c = in->r64, d = inout->r64;
	int32_t q = div32(in->q32, inout->q32);
	int32_t r = mod32(in->r32, inout->r32);
	inout->q32 = q;
	inout->r32 = r;
	inout->q64 = b == 0 ? a : b == -1 ? (int64_t)(0ull - (uint64_t)a) : a / b;
	inout->r64 = d == 0 ? c : d == -1 ? 0 : c % d;
}
