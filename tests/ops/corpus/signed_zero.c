/* Signed zeros: x + 0, 0 - x, x * -2, -x, and a sign test through 1/x. */
#include "cad_op.h"

struct z {
	double a, b, c, d;
	int neg;
};

CAD_OP(noncommutative)
void signed_zero(const struct z *in, struct z *inout)
{
	double x = in->a, y = inout->a;
	double a = x + 0.0;
	double b = 0.0 - y;
	double c = in->c * -2.0;   /* not -1.0: gcc folds x * -1.0 into -x, which flips a NaN's sign */
	double d = -(x * y);
	int neg = x == 0 ? (1.0 / x < 0) : (x < 0);
	inout->a = a;
	inout->b = b;
	inout->c = c;
	inout->d = d;
	inout->neg = neg;
}
