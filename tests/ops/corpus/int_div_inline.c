/* The same guards written inline, unsigned division, and narrow types that
 * promote to int (INT8_MIN / -1 is 128, which fits an int). */
#include <stdint.h>
#include "cad_op.h"

struct e {
	uint32_t uq;
	uint64_t ur;
	int8_t n8;
	int16_t n16;
};

CAD_OP(noncommutative)
void int_div_inline(const struct e *in, struct e *inout)
{
	uint32_t uq = inout->uq ? in->uq / inout->uq : in->uq;
	uint64_t ur = inout->ur ? in->ur % inout->ur : 0;
	int8_t n8 = inout->n8 ? (int8_t)(in->n8 / inout->n8) : in->n8;
	int16_t n16 = inout->n16 ? (int16_t)(in->n16 % inout->n16) : (int16_t)-1;
	inout->uq = uq;
	inout->ur = ur;
	inout->n8 = n8;
	inout->n16 = n16;
}
