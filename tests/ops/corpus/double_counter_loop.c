/* A loop whose counter is a double with a constant bound: it runs four
 * times (t = 0, 0.25, 0.5, 0.75). */
#include "cad_op.h"

CAD_OP(noncommutative)
void double_counter_loop(const double *in, double *inout)
{
	double acc = *inout;
	for (double t = 0.0; t < 1.0; t += 0.25)
		acc = acc * t + *in;
	*inout = acc;
}
