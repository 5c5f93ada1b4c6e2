/* MPI_MINLOC on { double; int }: the smaller value, on a tie the smaller
 * index; a NaN in inout is replaced by in. */
#include "cad_op.h"

struct dloc {
	double v;
	int i;
};

CAD_OP(commutative)
void minloc(const struct dloc *in, struct dloc *inout)
{
	if (in->v < inout->v || inout->v != inout->v) {
		inout->v = in->v;
		inout->i = in->i;
		return;
	}
	if (in->v == inout->v && in->i < inout->i)
		inout->i = in->i;
}
