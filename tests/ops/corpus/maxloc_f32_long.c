/* MAXLOC on { float; long } with the index first. */
#include "cad_op.h"

struct floc {
	long idx;
	float val;
};

CAD_OP(commutative)
void maxloc_f32_long(const struct floc *in, struct floc *inout)
{
	int take = in->val > inout->val || (in->val == inout->val && in->idx < inout->idx);
	long i = take ? in->idx : inout->idx;
	float v = take ? in->val : inout->val;
	inout->idx = i;
	inout->val = v;
}
