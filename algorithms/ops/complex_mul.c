/* Complex multiplication on { double re, im; } (MPI_C_DOUBLE_COMPLEX with
 * MPI_PROD).  Declared non-commutative so that the order the algorithms
 * keep is the MPI order; the products are the same either way. */
#include "cad_op.h"

struct cplx {
	double re, im;
};

CAD_OP(noncommutative)
void complex_mul(const struct cplx *in, struct cplx *inout)
{
	double re = in->re * inout->re - in->im * inout->im;
	double im = in->re * inout->im + in->im * inout->re;

	inout->re = re;
	inout->im = im;
}
