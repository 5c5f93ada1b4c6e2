/* Chains of narrowing and widening casts, sign and zero extension. */
#include <stdint.h>
#include "cad_op.h"

struct cc {
	int64_t a;
	uint32_t b;
	int16_t c;
	uint8_t d;
};

CAD_OP(noncommutative)
void cast_chain(const struct cc *in, struct cc *inout)
{
	int64_t a = (int64_t)(int8_t)in->a + (int64_t)(uint16_t)inout->a + (int32_t)(uint32_t)in->a;
	uint32_t b = (uint32_t)(int16_t)in->b ^ (uint32_t)(uint8_t)inout->b;
	int16_t c = (int16_t)(uint16_t)((int32_t)in->c * 3);
	uint8_t d = (uint8_t)((int8_t)in->d >> 2);
	inout->a = a;
	inout->b = b;
	inout->c = c;
	inout->d = d;
}
