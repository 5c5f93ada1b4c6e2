/* MPI_MAXLOC on { double value; int index; }: the larger value wins; on a
 * tie the smaller index. */
#include "cad_op.h"

struct dloc {
	double v;
	int i;
};

CAD_OP(commutative)
void maxloc(const struct dloc *in, struct dloc *inout)
{
	if (in->v > inout->v) {
		inout->v = in->v;
		inout->i = in->i;
	} else if (in->v == inout->v && in->i < inout->i) {
		inout->i = in->i;
	}
}
