/* A chain of ?: classifying the pair, integers and doubles mixed. */
#include <stdint.h>
#include "cad_op.h"

struct cls {
	double v;
	int32_t code;
};

CAD_OP(noncommutative)
void ternary_chain(const struct cls *in, struct cls *inout)
{
	double a = in->v, b = inout->v;
	int32_t code = a != a ? 1 : b != b ? 2 : a < b ? 3 : a > b ? 4 : a == 0 ? 5 : 6;
	double v = code == 1 ? b : code == 2 ? a : code == 3 ? b - a : code == 4 ? a - b : a * b;
	inout->v = v;
	inout->code = code * 10 + (in->code > inout->code ? 1 : in->code < inout->code ? -1 : 0);
}
