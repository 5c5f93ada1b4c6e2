// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ref_fpu.c - reference implementations for the tests, written apart from
 * the core (plain scalar C, a switch per opcode, no shared macros), so that
 * a slip in the core's tables or block loops shows up as a difference.
 * Compiled with floating point: in the kernel, only inside an FPU section.
 */
#include "ref_fpu.h"
#include "vm_progs.h"

static __u64 ld(const __u8 *p, unsigned int w)
{
	__u64 v = 0;

	cad_memcpy(&v, p, w);
	return v;
}

static void st(__u8 *p, unsigned int w, __u64 v)
{
	cad_memcpy(p, &v, w);
}

static __s64 sext(__u64 v, unsigned int w)
{
	return w == 8 ? (__s64)v : w == 4 ? (__s32)v : w == 2 ? (__s16)v : (__s8)v;
}

static double d_of(__u64 v) { double d; cad_memcpy(&d, &v, 8); return d; }
static __u64 d_bits(double d) { __u64 v; cad_memcpy(&v, &d, 8); return v; }
static float f_of(__u64 v) { __u32 w = (__u32)v; float f; cad_memcpy(&f, &w, 4); return f; }
static __u64 f_bits(float f) { __u32 w; cad_memcpy(&w, &f, 4); return w; }

static __u64 int_op(unsigned int op, __u64 a, __u64 b, bool is_signed, unsigned int w)
{
	__s64 sa = sext(a, w), sb = sext(b, w);
	bool lt = is_signed ? sa < sb : a < b;
	bool gt = is_signed ? sa > sb : a > b;

	switch (op) {
	case CAD_OP_SUM:  return a + b;
	case CAD_OP_PROD: return a * b;
	case CAD_OP_MIN:  return lt ? a : b;
	case CAD_OP_MAX:  return gt ? a : b;
	case CAD_OP_BAND: return a & b;
	case CAD_OP_BOR:  return a | b;
	case CAD_OP_BXOR: return a ^ b;
	case CAD_OP_LAND: return (a & (~0ull >> (64 - 8 * w))) && (b & (~0ull >> (64 - 8 * w)));
	case CAD_OP_LOR:  return (a & (~0ull >> (64 - 8 * w))) || (b & (~0ull >> (64 - 8 * w)));
	case CAD_OP_LXOR: return ((a & (~0ull >> (64 - 8 * w))) != 0) !=
				 ((b & (~0ull >> (64 - 8 * w))) != 0);
	}
	return 0;
}

/* The value of a pair, widened so that comparisons are exact. */
struct pval { bool fp; double d; __s64 i; };

static struct pval pair_value(unsigned int dt, const __u8 *p)
{
	struct pval v = { false, 0, 0 };

	switch (dt) {
	case CAD_DT_FLOAT_INT:  v.fp = true; v.d = f_of(ld(p, 4)); break;
	case CAD_DT_DOUBLE_INT: v.fp = true; v.d = d_of(ld(p, 8)); break;
	case CAD_DT_INT_INT:    v.i = sext(ld(p, 4), 4); break;
	case CAD_DT_LONG_INT:   v.i = (__s64)ld(p, 8); break;
	default:                v.i = sext(ld(p, 2), 2); break;
	}
	return v;
}

static void loc_op(unsigned int op, unsigned int dt, __u8 *out, const __u8 *in)
{
	const unsigned int vsize = dt == CAD_DT_DOUBLE_INT || dt == CAD_DT_LONG_INT ? 8
				 : dt == CAD_DT_SHORT_INT ? 2 : 4;
	const unsigned int koff = vsize == 8 ? 8 : 4;
	struct pval a = pair_value(dt, out), b = pair_value(dt, in);
	__s32 ka = (__s32)ld(out + koff, 4), kb = (__s32)ld(in + koff, 4);
	bool better, equal;

	if (a.fp) {
		better = op == CAD_OP_MINLOC ? b.d < a.d : b.d > a.d;
		equal = b.d == a.d;
	} else {
		better = op == CAD_OP_MINLOC ? b.i < a.i : b.i > a.i;
		equal = b.i == a.i;
	}
	if (better) {
		cad_memcpy(out, in, vsize);
		st(out + koff, 4, (__u32)kb);
	} else if (equal && kb < ka) {
		st(out + koff, 4, (__u32)kb);
	}
}

void cad_ref_reduce_fpu(unsigned int op, unsigned int dt, void *expect_,
			const void *inout_, const void *in_, __u64 count)
{
	const unsigned int w = cad_dtype_size(dt);
	const __u8 *io = inout_, *in = in_;
	__u8 *e = expect_;
	__u64 i;

	cad_memcpy(e, io, (size_t)(count * w));
	for (i = 0; i < count; i++, e += w, in += w) {
		if (dt >= CAD_DT_FLOAT_INT && dt <= CAD_DT_SHORT_INT) {
			loc_op(op, dt, e, in);
		} else if (dt == CAD_DT_DOUBLE) {
			double a = d_of(ld(e, 8)), b = d_of(ld(in, 8));
			double r = op == CAD_OP_SUM ? a + b : op == CAD_OP_PROD ? a * b
				 : op == CAD_OP_MIN ? (a < b ? a : b) : (a > b ? a : b);

			st(e, 8, d_bits(r));
		} else if (dt == CAD_DT_FLOAT) {
			float a = f_of(ld(e, 4)), b = f_of(ld(in, 4));
			float r = op == CAD_OP_SUM ? a + b : op == CAD_OP_PROD ? a * b
				: op == CAD_OP_MIN ? (a < b ? a : b) : (a > b ? a : b);

			st(e, 4, f_bits(r));
		} else {
			bool is_signed = dt >= CAD_DT_INT8 && dt <= CAD_DT_INT64;

			st(e, w, int_op(op, ld(e, w), ld(in, w), is_signed, w));
		}
	}
}

bool cad_ref_same_fpu(unsigned int dt, const void *a_, const void *b_)
{
	const __u8 *a = a_, *b = b_;

	if (dt == CAD_DT_DOUBLE || dt == CAD_DT_DOUBLE_INT) {
		double x = d_of(ld(a, 8)), y = d_of(ld(b, 8));

		if (x != x && y != y)
			return cad_tmemcmp(a + 8, b + 8, cad_dtype_size(dt) - 8) == 0;
	} else if (dt == CAD_DT_FLOAT || dt == CAD_DT_FLOAT_INT) {
		float x = f_of(ld(a, 4)), y = f_of(ld(b, 4));

		if (x != x && y != y)
			return cad_tmemcmp(a + 4, b + 4, cad_dtype_size(dt) - 4) == 0;
	}
	return cad_tmemcmp(a, b, cad_dtype_size(dt)) == 0;
}

/* ------------------------------------------------------------------ */

static __u64 cvt_u64_gcc(double x)
{
	return (__u64)x;  /* gcc's x86-64 sequence, which the ABI adopts */
}

/* NaNs as SSE's addsd gives them: a NaN operand quieted, the first of two;
 * otherwise r, the operation's result. */
static __u64 sse_nan64(__u64 a, __u64 b, __u64 r)
{
	const __u64 mag = 0x7fffffffffffffffull, inf = 0x7ff0000000000000ull;

	if ((a & mag) > inf)
		return a | 0x0008000000000000ull;
	if ((b & mag) > inf)
		return b | 0x0008000000000000ull;
	return r;
}

static __u64 sse_nan32(__u64 a, __u64 b, __u64 r)
{
	const __u32 x = (__u32)a, y = (__u32)b;

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return x | 0x00400000u;
	if ((y & 0x7fffffffu) > 0x7f800000u)
		return y | 0x00400000u;
	return r;
}

/* glibc's fmin/fmax (x86-64, s_fmin.S): with ordered operands minsd's
 * (maxsd's) choice, lt: whether to take a; with a NaN, a + b when either
 * NaN is signalling or both are NaNs, else the operand that is not NaN. */
static __u64 glibc_minmax(__u64 a, __u64 b, bool a_nan, bool b_nan, bool a_snan, bool b_snan,
			  bool take_a, __u64 sum)
{
	if (!a_nan && !b_nan)
		return take_a ? a : b;
	if ((a_nan && b_nan) || a_snan || b_snan)
		return sum;
	return a_nan ? b : a;
}

static __u64 glibc_fminmax64(__u64 a, __u64 b, bool max)
{
	const double x = d_of(a), y = d_of(b);
	const bool an = x != x, bn = y != y;

	return glibc_minmax(a, b, an, bn, an && !(a & 0x0008000000000000ull),
			    bn && !(b & 0x0008000000000000ull), max ? x > y : x < y,
			    sse_nan64(a, b, 0));
}

static __u64 glibc_fminmax32(__u64 a, __u64 b, bool max)
{
	const float x = f_of(a), y = f_of(b);
	const bool an = x != x, bn = y != y;

	return glibc_minmax((__u32)a, (__u32)b, an, bn, an && !(a & 0x00400000u),
			    bn && !(b & 0x00400000u), max ? x > y : x < y, sse_nan32(a, b, 0));
}

__u64 cad_ref_vm_op_fpu(unsigned int code, __u64 a, __u64 b)
{
	const __s64 sa = (__s64)a, sb = (__s64)b;
	const double da = d_of(a), db = d_of(b);
	const float fa = f_of(a), fb = f_of(b);

	switch (code) {
	case CAD_VM_MOV:    return a;
	case CAD_VM_ADD:    return a + b;
	case CAD_VM_SUB:    return a - b;
	case CAD_VM_MUL:    return a * b;
	case CAD_VM_DIV_S:
		if (b == 0)
			return 0;
		if (sb == -1)
			return 0 - a;   /* wraps for INT64_MIN, as x86 would trap */
		return (__u64)(sa / sb);
	case CAD_VM_DIV_U:  return b ? a / b : 0;
	case CAD_VM_MOD_S:
		if (b == 0)
			return a;
		if (sb == -1)
			return 0;
		return (__u64)(sa % sb);
	case CAD_VM_MOD_U:  return b ? a % b : a;
	case CAD_VM_AND:    return a & b;
	case CAD_VM_OR:     return a | b;
	case CAD_VM_XOR:    return a ^ b;
	case CAD_VM_SHL:    return a << (b % 64);
	case CAD_VM_SHR_U:  return a >> (b % 64);
	case CAD_VM_SHR_S:  return sa < 0 ? ~(~a >> (b % 64)) : a >> (b % 64);
	case CAD_VM_NEG:    return ~a + 1;
	case CAD_VM_NOT:    return ~a;
	case CAD_VM_SEXT8:  return (__u64)sext(a, 1);
	case CAD_VM_SEXT16: return (__u64)sext(a, 2);
	case CAD_VM_SEXT32: return (__u64)sext(a, 4);
	case CAD_VM_ZEXT8:  return (__u8)a;
	case CAD_VM_ZEXT16: return (__u16)a;
	case CAD_VM_ZEXT32: return (__u32)a;
	case CAD_VM_EQ:     return a == b;
	case CAD_VM_NE:     return a != b;
	case CAD_VM_LT_S:   return sa < sb;
	case CAD_VM_LE_S:   return sa <= sb;
	case CAD_VM_LT_U:   return a < b;
	case CAD_VM_LE_U:   return a <= b;
	case CAD_VM_FADD:   return sse_nan64(a, b, d_bits(da + db));
	case CAD_VM_FSUB:   return sse_nan64(a, b, d_bits(da - db));
	case CAD_VM_FMUL:   return sse_nan64(a, b, d_bits(da * db));
	case CAD_VM_FDIV:   return sse_nan64(a, b, d_bits(da / db));
	case CAD_VM_FMIN:   return glibc_fminmax64(a, b, false);
	case CAD_VM_FMAX:   return glibc_fminmax64(a, b, true);
	case CAD_VM_FNEG:   return d_bits(-da);
	case CAD_VM_FABS:   return d_bits(__builtin_fabs(da));
	case CAD_VM_FSQRT:  return sse_nan64(a, a, d_bits(__builtin_sqrt(da)));
	case CAD_VM_FEQ:    return da == db;
	case CAD_VM_FNE:    return da != db;
	case CAD_VM_FLT:    return da < db;
	case CAD_VM_FLE:    return da <= db;
	case CAD_VM_SADD:   return sse_nan32(a, b, f_bits(fa + fb));
	case CAD_VM_SSUB:   return sse_nan32(a, b, f_bits(fa - fb));
	case CAD_VM_SMUL:   return sse_nan32(a, b, f_bits(fa * fb));
	case CAD_VM_SDIV:   return sse_nan32(a, b, f_bits(fa / fb));
	case CAD_VM_SMIN:   return glibc_fminmax32(a, b, false);
	case CAD_VM_SMAX:   return glibc_fminmax32(a, b, true);
	case CAD_VM_SNEG:   return f_bits(-fa);
	case CAD_VM_SABS:   return (__u32)a & 0x7fffffffu;
	case CAD_VM_SSQRT:  return sse_nan32(a, a, f_bits(__builtin_sqrtf(fa)));
	case CAD_VM_SEQ:    return fa == fb;
	case CAD_VM_SNE:    return fa != fb;
	case CAD_VM_SLT:    return fa < fb;
	case CAD_VM_SLE:    return fa <= fb;
	/* Conversions as gcc compiles C casts for x86-64 (the ABI's definition). */
	case CAD_VM_CVT_F64_S64: return d_bits((double)sa);
	case CAD_VM_CVT_F64_U64: return d_bits((double)a);
	case CAD_VM_CVT_S64_F64: return (__u64)(__s64)da;
	case CAD_VM_CVT_U64_F64: return cvt_u64_gcc(da);
	case CAD_VM_CVT_S32_F64: return (__u64)(__s64)(__s32)da;
	case CAD_VM_CVT_F32_S64: return f_bits((float)sa);
	case CAD_VM_CVT_F32_U64: return f_bits((float)a);
	case CAD_VM_CVT_S64_F32: return (__u64)(__s64)fa;
	case CAD_VM_CVT_U64_F32: return cvt_u64_gcc(fa);
	case CAD_VM_CVT_S32_F32: return (__u64)(__s64)(__s32)fa;
	/* a NaN's payload as cvtss2sd and cvtsd2ss keep it, quieted */
	case CAD_VM_CVT_F64_F32:
		if (fa != fa)
			return (a & 0x80000000u) << 32 | 0x7ff8000000000000ull |
			       (a & 0x003fffffu) << 29;
		return d_bits((double)fa);
	case CAD_VM_CVT_F32_F64:
		if (da != da)
			return (a >> 32 & 0x80000000u) | 0x7fc00000u | (a >> 29 & 0x003fffffu);
		return f_bits((float)da);
	}
	return 0xdeadbeefdeadbeefull;
}

/* ------------------------------------------------------------------ */
/* The VM test programs in plain C (vm_progs.c has their VM code).      */

struct cplx { double re, im; };
struct dloc { double v; __s32 i; };
struct vec3 { double x, y, z; };

static void one_element(unsigned int which, __u8 *io, const __u8 *in)
{
	switch (which) {
	case CAD_VMP_SUM_F64: {
		double a = d_of(ld(in, 8)), b = d_of(ld(io, 8));

		st(io, 8, d_bits(b + a));
		break;
	}
	case CAD_VMP_MAX_F64: {
		double a = d_of(ld(in, 8)), b = d_of(ld(io, 8));

		st(io, 8, d_bits(b > a ? b : a));
		break;
	}
	case CAD_VMP_CMUL: {
		struct cplx a, b, r;

		cad_memcpy(&a, in, sizeof(a));
		cad_memcpy(&b, io, sizeof(b));
		r.re = a.re * b.re - a.im * b.im;
		r.im = a.re * b.im + a.im * b.re;
		cad_memcpy(io, &r, sizeof(r));
		break;
	}
	case CAD_VMP_MAXLOC: {
		struct dloc a, b;

		cad_memcpy(&a, in, sizeof(a));
		cad_memcpy(&b, io, sizeof(b));
		if (a.v > b.v) {
			b.v = a.v;
			b.i = a.i;
		} else if (a.v == b.v && a.i < b.i) {
			b.i = a.i;
		}
		st(io, 8, d_bits(b.v));
		st(io + 8, 4, (__u32)b.i);
		break;
	}
	case CAD_VMP_SATADD_I16: {
		__s32 s = (__s16)ld(in, 2) + (__s16)ld(io, 2);

		st(io, 2, (__u16)(s > 32767 ? 32767 : s < -32768 ? -32768 : s));
		break;
	}
	case CAD_VMP_VEC3_SUM: {
		struct vec3 a, b;

		cad_memcpy(&a, in, sizeof(a));
		cad_memcpy(&b, io, sizeof(b));
		b.x += a.x;
		b.y += a.y;
		b.z += a.z;
		cad_memcpy(io, &b, sizeof(b));
		break;
	}
	case CAD_VMP_BRANCHY: {
		double a = d_of(ld(in, 8)), b = d_of(ld(io, 8));

		if (a < 0)
			b = -a;
		else if (a > b)
			b = a * 2;
		st(io, 8, d_bits(b));
		break;
	}
	case CAD_VMP_STORE_LOAD: {
		__u64 a = ld(in, 8);

		st(io, 8, a + 1);  /* wraps, as the VM's ADD */
		st(io + 8, 8, ld(io, 8) * 3);
		break;
	}
	case CAD_VMP_INT32_MIX: {
		__s32 a = (__s32)ld(in, 4), b = (__s32)ld(io, 4);
		__s32 t = (__s32)((__u32)a * 3u - (__u32)b);  /* wraps */

		st(io, 4, (__u32)((t / 7) ^ (a >> 3)));
		break;
	}
	case CAD_VMP_STORE_REUSE: {
		__u64 a = ld(in, 8), b = ld(io, 8);

		st(io, 8, a + b);
		st(io, 8, a * b + (a + b));
		break;
	}
	case CAD_VMP_SEL_SELF: {
		__s64 a = (__s64)ld(in, 8), b = (__s64)ld(io, 8);

		st(io, 8, a < b ? 1 : (__u64)b);
		break;
	}
	case CAD_VMP_AFFINE: {
		__u64 ai = ld(in, 8), bi = ld(in + 8, 8), ao = ld(io, 8), bo = ld(io + 8, 8);

		st(io, 8, ai * ao);
		st(io + 8, 8, ai * bo + bi);
		break;
	}
	}
}

void cad_ref_vm_prog_fpu(unsigned int which, void *inout, const void *in, __u64 count)
{
	const __u32 esz = cad_vm_progs[which].elem_size;
	__u8 *io = inout;
	const __u8 *ip = in;
	__u64 i;

	for (i = 0; i < count; i++)
		one_element(which, io + i * esz, ip + i * esz);
}

void cad_ref_fill_uniform_fpu(double *in, double *io, __u64 count, __u32 lanes)
{
	__u64 i;

	for (i = 0; i < count; i++) {
		__u64 blk = i / lanes;

		in[i] = blk == 0 ? -1.0 - (double)i : blk == 1 ? 100.0 + (double)i : 1.0;
		io[i] = blk == 2 ? 50.0 : 3.0;
	}
}
