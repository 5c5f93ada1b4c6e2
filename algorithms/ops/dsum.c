/* The sum of doubles, as MPI_SUM on MPI_DOUBLE: the reference point of the
 * interpreter's benchmark. */
#include "cad_op.h"

CAD_OP(commutative)
void dsum(const double *in, double *inout)
{
	*inout = *in + *inout;
}
