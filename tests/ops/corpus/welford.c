/* Merging two (count, mean, M2) summaries (Chan et al.): a division by the
 * count, guarded for empty summaries. */
#include <stdint.h>
#include "cad_op.h"

struct stats {
	uint64_t n;
	double mean, m2;
};

CAD_OP(commutative)
void welford(const struct stats *in, struct stats *inout)
{
	uint64_t na = in->n & 0xffffffffu, nb = inout->n & 0xffffffffu;
	uint64_t n = na + nb;
	double delta = inout->mean - in->mean;
	double mean = in->mean;
	double m2 = in->m2 + inout->m2;
	if (n != 0) {
		mean = in->mean + delta * ((double)nb / (double)n);
		m2 = m2 + delta * delta * ((double)na * (double)nb / (double)n);
	}
	inout->n = n;
	inout->mean = mean;
	inout->m2 = m2;
}
