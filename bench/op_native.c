/* op_native.c - the operators of algorithms/ops/ compiled natively by gcc
 * (-O3), and the spilling ones of bench/CMakeLists.txt, applied over arrays: the reference of
 * bench/op_bench.cpp. */
#include <stddef.h>

#include "../algorithms/ops/complex_mul.c"
#include "../algorithms/ops/dsum.c"
#include "../algorithms/ops/maxloc.c"
#include "../algorithms/ops/sat_add_i16.c"
#include "../tests/ops/corpus/matmul4.c"
#include "ops/clip8.c"

#define LOOP(fn, T)                                                             \
	void native_##fn(void *inout, const void *in, size_t n)                 \
	{                                                                       \
		T *o = inout;                                                   \
		const T *i = in;                                                \
		for (size_t k = 0; k < n; k++)                                  \
			fn(&i[k], &o[k]);                                       \
	}

LOOP(complex_mul, struct cplx)
LOOP(dsum, double)
LOOP(maxloc, struct dloc)
LOOP(sat_add_i16, int16_t)
LOOP(matmul4, struct m4)
LOOP(clip8, struct clip8)
