/* while and do-while loops with a constant bound, a counter going down. */
#include <stdint.h>
#include "cad_op.h"

CAD_OP(noncommutative)
void while_do_loops(const int32_t *in, int32_t *inout)
{
	uint32_t h = (uint32_t)*inout;
	int k = 10;
	while (k > 0) {
		h = h * 31u + (uint32_t)*in + (uint32_t)k;
		k -= 3;
	}
	int j = 0;
	do {
		h ^= h >> 7;
		j++;
	} while (j < 3);
	*inout = (int32_t)h;
}
