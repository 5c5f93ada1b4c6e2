/* Conversions between floating point and integers at the edges of the
 * ranges, with the saturation done by the operator (values outside the
 * range are never converted, so the C is defined). */
#include <stdint.h>
#include "cad_op.h"

struct conv {
	double d;
	int32_t i;
	float f;
	int64_t l;
	uint32_t u;
	uint64_t ul;
};

static int32_t sat_i32(double x)
{
	if (x != x)
		return 0;
	if (x >= 2147483648.0)
		return INT32_MAX;
	if (x <= -2147483649.0)
		return INT32_MIN;
	return (int32_t)x;
}

static uint32_t sat_u32(float x)
{
	if (!(x > -1.0f))
		return 0;
	if (x >= 4294967296.0f)
		return UINT32_MAX;
	return (uint32_t)x;
}

static int64_t sat_i64(double x)
{
	if (x != x)
		return 0;
	if (x >= 9223372036854775808.0)
		return INT64_MAX;
	if (x < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)x;
}

CAD_OP(noncommutative)
void float_int_conv(const struct conv *in, struct conv *inout)
{
	double d = (double)in->l + (double)inout->ul;
	int32_t i = sat_i32(in->d + inout->d);
	float f = (float)in->ul + (float)inout->i;
	int64_t l = sat_i64(in->d) ^ sat_i64((double)in->f);
	uint32_t u = sat_u32(in->f + inout->f);
	uint64_t ul = (uint64_t)(uint32_t)in->i * 3u + (uint64_t)(in->f >= 0.0f && in->f < 1e19f ? (uint64_t)in->f : 7u);
	inout->d = d;
	inout->i = i;
	inout->f = f;
	inout->l = l;
	inout->u = u;
	inout->ul = ul;
}
