/* Logical and/or/xor on bool fields and a count of the true ones. */
#include <stdbool.h>
#include <stdint.h>
#include "cad_op.h"

struct flags {
	bool all, any, odd;
	uint16_t trues;
};

CAD_OP(commutative)
void bool_fields(const struct flags *in, struct flags *inout)
{
	bool all = in->all && inout->all;
	bool any = in->any || inout->any;
	bool odd = in->odd != inout->odd;
	uint16_t t = (uint16_t)(in->trues + inout->trues + all + any + odd);
	inout->all = all;
	inout->any = any;
	inout->odd = odd;
	inout->trues = t;
}
