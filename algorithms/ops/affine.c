/* Composition of affine maps x -> a x + b on 64-bit integers (wrapping):
 * associative and not commutative, so a result tells the order in which
 * the contributions were combined.  inout becomes in o inout, i.e. the
 * map that applies inout first, then in. */
#include "cad_op.h"

struct affine {
	int64_t a, b;
};

CAD_OP(noncommutative)
void affine(const struct affine *in, struct affine *inout)
{
	uint64_t a = (uint64_t)in->a * (uint64_t)inout->a;
	uint64_t b = (uint64_t)in->a * (uint64_t)inout->b + (uint64_t)in->b;

	inout->a = (int64_t)a;
	inout->b = (int64_t)b;
}
