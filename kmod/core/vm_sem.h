/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vm_sem.h - the semantics of the VM's instructions on 64-bit lanes, one
 * macro per opcode (SEM_*, LOAD_*, STORE_*), and the floating-point
 * helpers behind them.  Included by vm.c only, whose block and lane
 * executors both expand them: floating point, so in the kernel only in
 * the objects built with it (kmod/core/Kbuild.inc).
 */
#ifndef CAD_VM_SEM_H
#define CAD_VM_SEM_H

#include "vm_priv.h"

static inline double f64(__u64 v)
{
	double d;

	cad_memcpy(&d, &v, sizeof(d));
	return d;
}

static inline __u64 bits64(double d)
{
	__u64 v;

	cad_memcpy(&v, &d, sizeof(v));
	return v;
}

static inline float f32(__u64 v)
{
	__u32 w = (__u32)v;
	float f;

	cad_memcpy(&f, &w, sizeof(f));
	return f;
}

static inline __u64 bits32(float f)
{
	__u32 w;

	cad_memcpy(&w, &f, sizeof(w));
	return w;
}

#define SIGN64 0x8000000000000000ull
#define INDEF64 SIGN64                     /* x86 "integer indefinite" */
#define INDEF32 0xffffffff80000000ull      /* ... of 32 bits, sign-extended */

/* Float to integer, truncating; NaN and out of range give the indefinite
 * value, as cvttsd2si does. */
static inline __u64 cvt_s64(double x)
{
	return (x >= -0x1p63 && x < 0x1p63) ? (__u64)(__s64)x : INDEF64;
}

static inline __u64 cvt_s32(double x)
{
	return (x > -2147483649.0 && x < 2147483648.0) ? (__u64)(__s64)(__s32)x : INDEF32;
}

/* gcc's x86-64 sequence for (unsigned long)x. */
static inline __u64 cvt_u64(double x)
{
	return !(x >= 0x1p63) ? cvt_s64(x) : cvt_s64(x - 0x1p63) ^ SIGN64;
}

/*
 * NaNs as SSE gives them: an operation on two NaNs gives its first
 * operand's, quieted.  The compiler may commute the operands of + and *
 * (and does, to save a register move), and not every processor follows
 * SSE's rule (qemu's emulation gives the larger payload), so an operation
 * runs as x op first_nan(x, y): with x a NaN that is x op x, x quieted,
 * whichever operand the processor picks; otherwise x op y, where at most
 * one operand is a NaN.
 */
#define QNAN64 0x0008000000000000ull   /* the quiet bit of a double NaN */
#define QNAN32 0x00400000u             /* ... of a float NaN */
#define INF64 0x7ff0000000000000ull
#define INF32 0x7f800000u

static inline double first_nan(double x, double y)
{
	return x != x ? x : y;
}

static inline float first_nanf(float x, float y)
{
	return x != x ? x : y;
}

static inline double fadd_d(double x, double y)
{
	return x + first_nan(x, y);
}

static inline double fsub_d(double x, double y)
{
	return x - first_nan(x, y);
}

static inline double fmul_d(double x, double y)
{
	return x * first_nan(x, y);
}

/*
 * glibc's fmin and fmax on x86-64.  With ordered operands, minsd's
 * x < y ? x : y (maxsd's x > y ? x : y), which gives the second of +0
 * and -0.  With a NaN: a quiet NaN yields the other operand; a signalling
 * one, or two NaNs, give x + y (the first NaN, quieted).
 */
static inline __u64 minmax_nan64(__u64 a, __u64 b)
{
	const bool an = (a & ~SIGN64) > INF64, bn = (b & ~SIGN64) > INF64;

	if (an && (bn || !(a & QNAN64)))
		return a | QNAN64;
	if (bn && !(b & QNAN64))
		return b | QNAN64;
	return an ? b : a;
}

static inline __u64 minmax_nan32(__u32 a, __u32 b)
{
	const bool an = (a & 0x7fffffffu) > INF32, bn = (b & 0x7fffffffu) > INF32;

	if (an && (bn || !(a & QNAN32)))
		return a | QNAN32;
	if (bn && !(b & QNAN32))
		return b | QNAN32;
	return an ? b : a;
}

static inline __u64 fmin64(__u64 a, __u64 b)
{
	double x = f64(a), y = f64(b);

	return x < y ? a : x >= y ? b : minmax_nan64(a, b);
}

static inline __u64 fmax64(__u64 a, __u64 b)
{
	double x = f64(a), y = f64(b);

	return x > y ? a : x <= y ? b : minmax_nan64(a, b);
}

static inline __u64 fmin32(__u64 a, __u64 b)
{
	float x = f32(a), y = f32(b);

	return x < y ? (__u32)a : x >= y ? (__u32)b : minmax_nan32((__u32)a, (__u32)b);
}

static inline __u64 fmax32(__u64 a, __u64 b)
{
	float x = f32(a), y = f32(b);

	return x > y ? (__u32)a : x <= y ? (__u32)b : minmax_nan32((__u32)a, (__u32)b);
}

/* ------------------------------------------------------------------ */
/* Semantics, one macro per opcode: SEM_<NAME>(a, b) on __u64 values.   */

#define SEM_MOV(a, b)    (a)
#define SEM_ADD(a, b)    ((a) + (b))
#define SEM_SUB(a, b)    ((a) - (b))
#define SEM_MUL(a, b)    ((a) * (b))
#define SEM_DIV_S(a, b)  ((b) == 0 ? 0 : ((a) == SIGN64 && (b) == ~0ull) ? (a) \
			  : (__u64)((__s64)(a) / (__s64)(b)))
#define SEM_DIV_U(a, b)  ((b) == 0 ? 0 : (a) / (b))
#define SEM_MOD_S(a, b)  ((b) == 0 ? (a) : (b) == ~0ull ? 0 \
			  : (__u64)((__s64)(a) % (__s64)(b)))
#define SEM_MOD_U(a, b)  ((b) == 0 ? (a) : (a) % (b))
#define SEM_AND(a, b)    ((a) & (b))
#define SEM_OR(a, b)     ((a) | (b))
#define SEM_XOR(a, b)    ((a) ^ (b))
#define SEM_SHL(a, b)    ((a) << ((b) & 63))
#define SEM_SHR_U(a, b)  ((a) >> ((b) & 63))
#define SEM_SHR_S(a, b)  ((__u64)((__s64)(a) >> ((b) & 63)))
#define SEM_NEG(a, b)    (0 - (a))
#define SEM_NOT(a, b)    (~(a))
#define SEM_SEXT8(a, b)  ((__u64)(__s64)(__s8)(a))
#define SEM_SEXT16(a, b) ((__u64)(__s64)(__s16)(a))
#define SEM_SEXT32(a, b) ((__u64)(__s64)(__s32)(a))
#define SEM_ZEXT8(a, b)  ((a) & 0xffull)
#define SEM_ZEXT16(a, b) ((a) & 0xffffull)
#define SEM_ZEXT32(a, b) ((a) & 0xffffffffull)
/* The integer compares as bit arithmetic (Hacker's Delight 2-12), which
 * vectorises with SSE2 where a 64-bit compare does not. */
#define NZ64(x)          (((x) | (0 - (x))) >> 63)          /* x != 0 */
#define SEM_EQ(a, b)     (NZ64((a) ^ (b)) ^ 1)
#define SEM_NE(a, b)     NZ64((a) ^ (b))
#define SEM_LT_S(a, b)   ((((a) - (b)) ^ (((a) ^ (b)) & (((a) - (b)) ^ (a)))) >> 63)
#define SEM_LE_S(a, b)   (SEM_LT_S(b, a) ^ 1)
#define SEM_LT_U(a, b)   (((~(a) & (b)) | ((~((a) ^ (b))) & ((a) - (b)))) >> 63)
#define SEM_LE_U(a, b)   (SEM_LT_U(b, a) ^ 1)
#define INT_CMP(c)       ((c) >= CAD_VM_EQ && (c) <= CAD_VM_LE_U)
#define F64_CMP(c)       ((c) >= CAD_VM_FEQ && (c) <= CAD_VM_FLE)
/* t ? x : y for t = 0 or 1, as a blend with an all-ones or all-zero mask */
#define BLEND64(t, x, y) ((((x) ^ (y)) & (0 - (t))) ^ (y))

#define SEM_FADD(a, b)   bits64(fadd_d(f64(a), f64(b)))
#define SEM_FSUB(a, b)   bits64(fsub_d(f64(a), f64(b)))
#define SEM_FMUL(a, b)   bits64(fmul_d(f64(a), f64(b)))
#define SEM_FDIV(a, b)   bits64(f64(a) / first_nan(f64(a), f64(b)))
#define SEM_FMIN(a, b)   fmin64(a, b)
#define SEM_FMAX(a, b)   fmax64(a, b)
#define SEM_FNEG(a, b)   ((a) ^ SIGN64)
#define SEM_FABS(a, b)   ((a) & ~SIGN64)
#define SEM_FSQRT(a, b)  bits64(__builtin_sqrt(f64(a)))
#define SEM_FEQ(a, b)    ((__u64)(f64(a) == f64(b)))
#define SEM_FNE(a, b)    ((__u64)(f64(a) != f64(b)))
#define SEM_FLT(a, b)    ((__u64)(f64(a) < f64(b)))
#define SEM_FLE(a, b)    ((__u64)(f64(a) <= f64(b)))

#define SEM_SADD(a, b)   bits32(f32(a) + first_nanf(f32(a), f32(b)))
#define SEM_SSUB(a, b)   bits32(f32(a) - first_nanf(f32(a), f32(b)))
#define SEM_SMUL(a, b)   bits32(f32(a) * first_nanf(f32(a), f32(b)))
#define SEM_SDIV(a, b)   bits32(f32(a) / first_nanf(f32(a), f32(b)))
#define SEM_SMIN(a, b)   fmin32(a, b)
#define SEM_SMAX(a, b)   fmax32(a, b)
#define SEM_SNEG(a, b)   ((__u64)((__u32)(a) ^ 0x80000000u))
#define SEM_SABS(a, b)   ((__u64)((__u32)(a) & 0x7fffffffu))
#define SEM_SSQRT(a, b)  bits32(__builtin_sqrtf(f32(a)))
#define SEM_SEQ(a, b)    ((__u64)(f32(a) == f32(b)))
#define SEM_SNE(a, b)    ((__u64)(f32(a) != f32(b)))
#define SEM_SLT(a, b)    ((__u64)(f32(a) < f32(b)))
#define SEM_SLE(a, b)    ((__u64)(f32(a) <= f32(b)))

#define SEM_CVT_F64_S64(a, b) bits64((double)(__s64)(a))
#define SEM_CVT_F64_U64(a, b) bits64((double)(a))
#define SEM_CVT_S64_F64(a, b) cvt_s64(f64(a))
#define SEM_CVT_U64_F64(a, b) cvt_u64(f64(a))
#define SEM_CVT_S32_F64(a, b) cvt_s32(f64(a))
#define SEM_CVT_F32_S64(a, b) bits32((float)(__s64)(a))
#define SEM_CVT_F32_U64(a, b) bits32((float)(a))
#define SEM_CVT_S64_F32(a, b) cvt_s64((double)f32(a))
#define SEM_CVT_U64_F32(a, b) cvt_u64((double)f32(a))
#define SEM_CVT_S32_F32(a, b) cvt_s32((double)f32(a))
#define SEM_CVT_F64_F32(a, b) bits64((double)f32(a))
#define SEM_CVT_F32_F64(a, b) bits32((float)f64(a))

#define LOAD_LD_I8(p)  ((__u64)(__s64)*(const s8_u *)(p))
#define LOAD_LD_U8(p)  ((__u64)*(const u8_u *)(p))
#define LOAD_LD_I16(p) ((__u64)(__s64)*(const s16_u *)(p))
#define LOAD_LD_U16(p) ((__u64)*(const u16_u *)(p))
#define LOAD_LD_I32(p) ((__u64)(__s64)*(const s32_u *)(p))
#define LOAD_LD_U32(p) ((__u64)*(const u32_u *)(p))
#define LOAD_LD_64(p)  (*(const u64_u *)(p))

#define STORE_ST_8(p, v)  (*(u8_u *)(p) = (__u8)(v))
#define STORE_ST_16(p, v) (*(u16_u *)(p) = (__u16)(v))
#define STORE_ST_32(p, v) (*(u32_u *)(p) = (__u32)(v))
#define STORE_ST_64(p, v) (*(u64_u *)(p) = (v))

#endif /* CAD_VM_SEM_H */
