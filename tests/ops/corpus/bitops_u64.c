/* Bit manipulation on u64: popcount by a loop, rotations, a mix. */
#include <stdint.h>
#include "cad_op.h"

static uint64_t rotl(uint64_t x, unsigned r)
{
	return x << (r & 63) | x >> ((64 - r) & 63);
}

static uint32_t popcount(uint64_t x)
{
	uint32_t n = 0;
	for (int k = 0; k < 64; k++)
		n += (uint32_t)((x >> k) & 1);
	return n;
}

struct bits {
	uint64_t mix;
	uint32_t pop;
	uint32_t lead;
};

CAD_OP(noncommutative)
void bitops_u64(const struct bits *in, struct bits *inout)
{
	uint64_t m = rotl(in->mix, 13) ^ (inout->mix * 0x9e3779b97f4a7c15ull);
	uint32_t lead = 64;
	for (int k = 0; k < 64; k++)
		if ((m >> k) & 1)
			lead = (uint32_t)(63 - k);
	inout->mix = m;
	inout->pop = in->pop + popcount(m);
	inout->lead = lead ^ inout->lead;
}
