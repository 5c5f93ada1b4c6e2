// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * reduce.c - the built-in reduction operators, inout = op(inout, in),
 * elementwise.  Compiled with floating point enabled: in the kernel, call
 * only between cad_fpu_begin() and cad_fpu_end() (cad_reduce does).
 *
 * Semantics are MPI's, and where MPI is silent they are Open MPI's, so
 * that results are bit-identical to its own collectives:
 *   sum, prod   inout + in, inout * in; integers wrap (two's complement)
 *   min, max    inout < in ? inout : in, inout > in ? inout : in
 *               (so a NaN in inout is replaced by in, a NaN in in is kept)
 *   band, bor, bxor   integers and bytes
 *   land, lor, lxor   integers: the result is 0 or 1
 *   minloc, maxloc    pairs (value, int32 index): in replaces inout when
 *               its value is strictly smaller (larger); on equal values
 *               inout keeps its value and takes the smaller index
 */
#include "reduce_priv.h"

/* Element types, and views of them that need neither alignment nor strict
 * aliasing (buffers are bound at run time). */
#define ELEMENT_TYPE(name, T) typedef T name; typedef T name##_u CAD_UNALIGNED;
ELEMENT_TYPE(es8, __s8)
ELEMENT_TYPE(es16, __s16)
ELEMENT_TYPE(es32, __s32)
ELEMENT_TYPE(es64, __s64)
ELEMENT_TYPE(eu8, __u8)
ELEMENT_TYPE(eu16, __u16)
ELEMENT_TYPE(eu32, __u32)
ELEMENT_TYPE(eu64, __u64)
ELEMENT_TYPE(ef32, float)
ELEMENT_TYPE(ef64, double)

/* One loop per (op, type).  W is the unsigned type the integer arithmetic
 * runs in, so that overflow wraps instead of being undefined. */
#define ELEMENTWISE(name, T, W, expr)                                           \
	static void name(void *inout_, const void *in_, __u64 count)            \
	{                                                                       \
		T##_u *o = inout_;                                              \
		const T##_u *i = in_;                                           \
		__u64 k;                                                        \
		for (k = 0; k < count; k++) {                                   \
			T a = o[k], b = i[k];                                   \
			o[k] = (T)(expr);                                       \
		}                                                               \
	}

#define INT_OPS(T, W)                                                           \
	ELEMENTWISE(sum_##T,  T, W, (W)a + (W)b)                                \
	ELEMENTWISE(prod_##T, T, W, (W)a * (W)b)                                \
	ELEMENTWISE(min_##T,  T, W, a < b ? a : b)                              \
	ELEMENTWISE(max_##T,  T, W, a > b ? a : b)                              \
	ELEMENTWISE(band_##T, T, W, a & b)                                      \
	ELEMENTWISE(bor_##T,  T, W, a | b)                                      \
	ELEMENTWISE(bxor_##T, T, W, a ^ b)                                      \
	ELEMENTWISE(land_##T, T, W, a && b)                                     \
	ELEMENTWISE(lor_##T,  T, W, a || b)                                     \
	ELEMENTWISE(lxor_##T, T, W, !a != !b)

#define FLOAT_OPS(T)                                                            \
	ELEMENTWISE(sum_##T,  T, T, a + b)                                      \
	ELEMENTWISE(prod_##T, T, T, a * b)                                      \
	ELEMENTWISE(min_##T,  T, T, a < b ? a : b)                              \
	ELEMENTWISE(max_##T,  T, T, a > b ? a : b)

/* 8- and 16-bit values are promoted to int; unsigned int keeps every sum
 * and product of two of them defined. */
INT_OPS(es8, unsigned int)
INT_OPS(es16, unsigned int)
INT_OPS(es32, __u32)
INT_OPS(es64, __u64)
INT_OPS(eu8, unsigned int)
INT_OPS(eu16, unsigned int)
INT_OPS(eu32, __u32)
INT_OPS(eu64, __u64)
FLOAT_OPS(ef32)
FLOAT_OPS(ef64)

/* (value, index) pairs with C struct layout, accessed by copy.  `better`
 * is < for minloc, > for maxloc. */
#define LOC_FN(fn, name, better)                                                \
	static void fn##_##name(void *inout_, const void *in_, __u64 count)     \
	{                                                                       \
		__u8 *o = inout_;                                               \
		const __u8 *i = in_;                                            \
		const __u64 sz = sizeof(struct pair_##name);                    \
		struct pair_##name a, b;                                        \
		__u64 k;                                                        \
		for (k = 0; k < count; k++, o += sz, i += sz) {                  \
			cad_memcpy(&a, o, sz);                                  \
			cad_memcpy(&b, i, sz);                                  \
			if (b.v better a.v) {                                   \
				a.v = b.v;                                      \
				a.k = b.k;                                      \
				cad_memcpy(o, &a, sz);                          \
			} else if (b.v == a.v && b.k < a.k) {                   \
				a.k = b.k;    /* a tie keeps inout's value */   \
				cad_memcpy(o, &a, sz);                          \
			}                                                       \
		}                                                               \
	}
#define LOC_OPS(name, VT)                                                       \
	struct pair_##name { VT v; __s32 k; };                                  \
	LOC_FN(minloc, name, <)                                                 \
	LOC_FN(maxloc, name, >)

LOC_OPS(float_int, float)
LOC_OPS(double_int, double)
LOC_OPS(int_int, __s32)
LOC_OPS(long_int, __s64)
LOC_OPS(short_int, __s16)

#define ALL_ARITH(T, DT)                                                        \
	[CAD_OP_SUM][CAD_DT_##DT] = sum_##T,                                    \
	[CAD_OP_PROD][CAD_DT_##DT] = prod_##T,                                  \
	[CAD_OP_MIN][CAD_DT_##DT] = min_##T,                                    \
	[CAD_OP_MAX][CAD_DT_##DT] = max_##T
#define ALL_INT(T, DT)                                                          \
	ALL_ARITH(T, DT),                                                       \
	[CAD_OP_BAND][CAD_DT_##DT] = band_##T,                                  \
	[CAD_OP_BOR][CAD_DT_##DT] = bor_##T,                                    \
	[CAD_OP_BXOR][CAD_DT_##DT] = bxor_##T,                                  \
	[CAD_OP_LAND][CAD_DT_##DT] = land_##T,                                  \
	[CAD_OP_LOR][CAD_DT_##DT] = lor_##T,                                    \
	[CAD_OP_LXOR][CAD_DT_##DT] = lxor_##T
#define ALL_LOC(name, DT)                                                       \
	[CAD_OP_MINLOC][CAD_DT_##DT] = minloc_##name,                           \
	[CAD_OP_MAXLOC][CAD_DT_##DT] = maxloc_##name

const cad_reduce_fn cad_reduce_table[CAD_OP_COUNT][CAD_DT_COUNT] = {
	ALL_INT(es8, INT8), ALL_INT(es16, INT16), ALL_INT(es32, INT32), ALL_INT(es64, INT64),
	ALL_INT(eu8, UINT8), ALL_INT(eu16, UINT16), ALL_INT(eu32, UINT32), ALL_INT(eu64, UINT64),
	ALL_ARITH(ef32, FLOAT), ALL_ARITH(ef64, DOUBLE),
	/* MPI_BYTE takes the bitwise ops only. */
	[CAD_OP_BAND][CAD_DT_BYTE] = band_eu8,
	[CAD_OP_BOR][CAD_DT_BYTE] = bor_eu8,
	[CAD_OP_BXOR][CAD_DT_BYTE] = bxor_eu8,
	ALL_LOC(float_int, FLOAT_INT), ALL_LOC(double_int, DOUBLE_INT),
	ALL_LOC(int_int, INT_INT), ALL_LOC(long_int, LONG_INT),
	ALL_LOC(short_int, SHORT_INT),
};

void cad_reduce_builtin_fpu(void *inout, const void *in, __u64 count,
			    unsigned int op, unsigned int dtype)
{
	/* Verified programs only name supported pairs. */
	cad_reduce_table[op][dtype](inout, in, count);
}
