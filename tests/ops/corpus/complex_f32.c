/* Complex multiply on float pairs. */
#include "cad_op.h"

typedef struct {
	float re, im;
} cfloat;

CAD_OP(commutative)
void complex_f32(const cfloat *in, cfloat *inout)
{
	float re = in->re * inout->re - in->im * inout->im;
	float im = in->re * inout->im + in->im * inout->re;
	inout->re = re;
	inout->im = im;
}
