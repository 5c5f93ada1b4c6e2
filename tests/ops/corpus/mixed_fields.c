/* A struct of mixed integer, float and bool fields with padding between. */
#include <stdbool.h>
#include <stdint.h>
#include "cad_op.h"

struct mixed {
	int8_t a;
	double b;
	uint16_t c;
	float d;
	int64_t e;
	bool f;
	uint8_t g;
};

CAD_OP(commutative)
void mixed_fields(const struct mixed *in, struct mixed *inout)
{
	int8_t a = (int8_t)(in->a + inout->a);
	double b = in->b > inout->b ? in->b : inout->b;
	uint16_t c = (uint16_t)(in->c ^ inout->c);
	float d = in->d * inout->d;
	int64_t e = in->e + inout->e;
	bool f = in->f || inout->f;
	uint8_t g = in->g > inout->g ? in->g : inout->g;
	inout->a = a;
	inout->b = b;
	inout->c = c;
	inout->d = d;
	inout->e = e;
	inout->f = f;
	inout->g = g;
}
