/* A 4x4 double matrix product, inout = in x inout: every element of the
 * result reads a row of in and a column of inout, so all 32 inputs are
 * live until the last store and the compiler must spill. */
#include "cad_op.h"

struct mat4 {
	double m[4][4];
};

CAD_OP(noncommutative)
void matmul4(const struct mat4 *in, struct mat4 *inout)
{
	struct mat4 r;

	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			double s = 0;

			for (int k = 0; k < 4; k++)
				s += in->m[i][k] * inout->m[k][j];
			r.m[i][j] = s;
		}
	*inout = r;
}
