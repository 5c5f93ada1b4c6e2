/* Nested constant-bound loops: a triangular sum and a polynomial in
 * Horner form with the coefficients in a local array. */
#include "cad_op.h"

struct poly {
	double x, y;
	long n;
};

CAD_OP(noncommutative)
void nested_loops(const struct poly *in, struct poly *inout)
{
	const double c[5] = { 1.0, -0.5, 0.25, -0.125, 0.0625 };
	double h = 0.0;
	long n = 0;
	for (int k = 4; k >= 0; k--)
		h = h * in->x + c[k];
	for (int i = 0; i < 5; i++)
		for (int j = 0; j <= i; j++)
			n += (long)(i * j) + (in->n & 1);
	inout->x = h + inout->x;
	inout->y = in->y * h - inout->y;
	inout->n = (long)((unsigned long)inout->n + (unsigned long)n);
}
