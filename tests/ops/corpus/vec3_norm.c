/* The larger of two 3-vectors by Euclidean norm, with a helper taking
 * the vector by value. */
#include <math.h>
#include "cad_op.h"

struct vec3 {
	double x, y, z;
};

static double norm(struct vec3 v)
{
	return sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
}

CAD_OP(commutative)
void vec3_norm(const struct vec3 *in, struct vec3 *inout)
{
	if (norm(*in) > norm(*inout))
		*inout = *in;
}
