/* Shifts with counts masked to the width: logical and arithmetic right
 * shifts, left shifts into the sign bit, narrow types promoted to int. */
#include <stdint.h>
#include "cad_op.h"

struct sh {
	uint32_t u;
	int32_t s;
	int64_t l;
	uint64_t ul;
	uint8_t b;
	int16_t h;
};

CAD_OP(noncommutative)
void shifts(const struct sh *in, struct sh *inout)
{
	uint32_t u = in->u << (inout->u & 31) | in->u >> ((32 - (inout->u & 31)) & 31);
	int32_t s = in->s >> (inout->s & 31);
	int64_t l = (int64_t)((uint64_t)in->l << (inout->l & 63)) >> 1;
	uint64_t ul = in->ul >> (inout->ul & 63);
	uint8_t b = (uint8_t)(in->b << (inout->b & 7) | in->b >> 1);
	int16_t h = (int16_t)(in->h >> (inout->h & 15));
	inout->u = u;
	inout->s = s;
	inout->l = l;
	inout->ul = ul;
	inout->b = b;
	inout->h = h;
}
