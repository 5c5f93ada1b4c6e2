/* Double-double addition (Knuth's TwoSum, then renormalisation), with
 * helpers returning a struct. */
#include "cad_op.h"

struct dd {
	double hi, lo;
};

static struct dd two_sum(double a, double b)
{
	struct dd r;
	double s = a + b;
	double bb = s - a;
	r.hi = s;
	r.lo = (a - (s - bb)) + (b - bb);
	return r;
}

static struct dd quick_two_sum(double a, double b)
{
	struct dd r;
	r.hi = a + b;
	r.lo = b - (r.hi - a);
	return r;
}

CAD_OP(commutative)
void double_double(const struct dd *in, struct dd *inout)
{
	struct dd s = two_sum(in->hi, inout->hi);
	struct dd t = two_sum(in->lo, inout->lo);
	s.lo = s.lo + t.hi;
	s = quick_two_sum(s.hi, s.lo);
	s.lo = s.lo + t.lo;
	*inout = quick_two_sum(s.hi, s.lo);
}
