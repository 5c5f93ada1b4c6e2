/* 4x4 double matrix product inout = in x inout (noncommutative), with
 * nested constant-bound loops. */
#include "cad_op.h"

struct m4 {
	double a[4][4];
};

CAD_OP(noncommutative)
void matmul4(const struct m4 *in, struct m4 *inout)
{
	struct m4 r;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			double s = 0.0;
			for (int k = 0; k < 4; k++)
				s = s + in->a[i][k] * inout->a[k][j];
			r.a[i][j] = s;
		}
	*inout = r;
}
