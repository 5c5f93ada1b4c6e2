/* Out-of-range float-to-integer conversions, which C leaves undefined: the
 * VM promises what gcc's x86-64 code gives (cvttsd2si: the "integer
 * indefinite" value 0x80000000...).  Kept to signed targets, where gcc
 * emits the plain instruction. */
#include <stdint.h>
#include "cad_op.h"

CAD_OP(noncommutative)
void float_int_indefinite(const double *in, double *inout)
{
	int32_t i = (int32_t)(*in * 1e10);
	int64_t l = (int64_t)(*inout * 1e20);
	int32_t f = (int32_t)(float)*in;
	*inout = (double)i + (double)l + (double)f;
}
