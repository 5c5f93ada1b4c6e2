/* Nested structs, initialisers, struct assignment of a whole member. */
#include <stdint.h>
#include "cad_op.h"

struct point {
	float x, y;
};

struct box {
	struct point lo, hi;
	int32_t count;
};

CAD_OP(commutative)
void nested_struct(const struct box *in, struct box *inout)
{
	struct box b = *inout;
	struct point lo = { in->lo.x < b.lo.x ? in->lo.x : b.lo.x, in->lo.y < b.lo.y ? in->lo.y : b.lo.y };
	struct point hi = { .y = in->hi.y > b.hi.y ? in->hi.y : b.hi.y, .x = in->hi.x > b.hi.x ? in->hi.x : b.hi.x };
	b.lo = lo;
	b.hi = hi;
	b.count = (int32_t)((uint32_t)b.count + (uint32_t)in->count);
	*inout = b;
}
