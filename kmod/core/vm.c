// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm.c - the reduction VM interpreter for user-defined operators.
 *
 * It runs verified code only (cad_vm_verify_op is the gate): an unknown
 * opcode here is a bug.  Compiled with floating point enabled: in the
 * kernel, call only between cad_fpu_begin() and cad_fpu_end().
 *
 * Elements are processed in blocks of CAD_VM_LANES: each instruction runs
 * over the whole block before the next one, so one dispatch serves many
 * elements and the per-instruction loops vectorise.  Registers and spill
 * slots are lane arrays in the caller's scratch (no large stack frame,
 * kernel-safe).  A conditional jump that goes the same way for every lane
 * of the block stays in block mode; a divergent one finishes the block
 * lane by lane from that jump.  Both modes expand the same per-opcode semantics below.
 * Integer code whose values fit 32 bits runs on 32-bit lanes in longer
 * blocks (narrow mode); in 64-bit lanes, a * b +- c * d runs as one loop
 * (dot2_plan).  Both plans are made once per call, from the code.
 *
 * The lane loops are marked CAD_IVDEP: register lanes are separate arrays,
 * a view starts at its block's first element with the lanes' stride, the
 * verifier rejects partially overlapping source and destination ranges,
 * and the buffers bound to a program must not overlap (the kernel module
 * and cadrt refuse overlapping buffers).  So any two arrays of a loop are
 * the same or disjoint.
 */
#include "cad_core.h"

#define LANES CAD_VM_LANES
#define NF_SKIP 0x1   /* per-pc flag: nothing to do here (an identity, or
		       * an FMUL that its NF_DOT2 reader computes) */
#define NF_DOT2 0x2   /* per-pc flag: FADD/FSUB of two skipped FMULs */
#define NF_LDOP 0x4   /* per-pc flag (narrow): a ring op on the two loads
		       * before it, which are skipped (ldop_plan) */
#define NF_PAIR 0x8   /* per-pc flag: an NF_DOT2 stored at once, whose next
		       * instruction run is another (pair_plan) */
#define NF_MAC  0x10  /* per-pc flag: FADD/FSUB of a register and one
		       * skipped FMUL */

typedef __s8  s8_u  CAD_UNALIGNED;
typedef __s16 s16_u CAD_UNALIGNED;
typedef __s32 s32_u CAD_UNALIGNED;
typedef __u8  u8_u  CAD_UNALIGNED;
typedef __u16 u16_u CAD_UNALIGNED;
typedef __u32 u32_u CAD_UNALIGNED;
typedef __u64 u64_u CAD_UNALIGNED;
typedef double f64_u CAD_UNALIGNED;

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

/* ------------------------------------------------------------------ */

/* The working memory of a call, in the caller's scratch: the register
 * lanes, the spill slots' lanes, then the plan made once per call from
 * the code. */
struct vm_scratch {
	__u64 R[CAD_VM_NREGS][LANES];
	__u64 S[CAD_VM_NSLOTS][LANES];    /* narrow mode: rows of 32-bit lanes */
	__u16 after[CAD_VM_MAX_INSNS];    /* per pc: registers read after pc */
	__u16 prod[CAD_VM_MAX_INSNS][2];  /* NF_DOT2, NF_MAC at pc: its operands' FMULs */
	__u8 flags[CAD_VM_MAX_INSNS];     /* per pc: NF_* */
};

_Static_assert(sizeof(struct vm_scratch) <= CAD_VM_SCRATCH_SIZE,
	       "CAD_VM_SCRATCH_SIZE holds the interpreter's working memory");

struct vm_env {
	const struct cad_vm_insn *code;
	const __u64 *consts;
	__u32 esz;          /* element size */
	__u8 *io;           /* first inout element of the block */
	const __u8 *ip;     /* first in element of the block */
	__u64 (*R)[LANES];  /* register lanes */
	__u64 (*S)[LANES];  /* spill slot lanes (never views) */
	const __u16 *after; /* per pc: registers read after pc */
	const __u16 (*prod)[2]; /* per NF_DOT2, NF_MAC pc: its FMULs (NO_PC: none) */
	const __u8 *flags;  /* per pc: NF_* */
	__u32 nl;           /* narrow mode: 32-bit lanes per register */
	const __u8 (*rmap)[4]; /* narrow mode, per pc: the rows its operands
			     * a, b and a SEL's imm are read from (consts_plan) */
};

/* One lane, from pc to EXIT. */
static void run_lane(const struct vm_env *e, __u32 pc, __u32 l)
{
	__u8 *io = e->io + (__u64)l * e->esz;
	const __u8 *ip = e->ip + (__u64)l * e->esz;
	__u64 (*R)[LANES] = e->R;

#define L_EXIT(name, w)   return
#define L_JA(name, w)     pc += in->imm
#define L_JCOND(name, w)  if ((R[in->a][l] == 0) == (CAD_VM_##name == CAD_VM_JZ)) \
				  pc += in->imm
#define L_LD(name, w)     R[in->dst][l] = LOAD_##name((in->a ? io : ip) + in->imm)
#define L_ST(name, w)     STORE_##name(io + in->imm, R[in->a][l])
#define L_MOVI(name, w)   R[in->dst][l] = (__u64)(__s64)in->imm
#define L_LDK(name, w)    R[in->dst][l] = e->consts[in->imm]
#define L_UN(name, w)     R[in->dst][l] = SEM_##name(R[in->a][l], 0)
#define L_BIN(name, w)    R[in->dst][l] = SEM_##name(R[in->a][l], R[in->b][l])
#define L_CMP(name, w)    L_BIN(name, w)
#define L_SEL(name, w)    R[in->dst][l] = R[in->a][l] ? R[in->b][l] : R[in->imm][l]
#define L_SPILL(name, w)  e->S[in->imm][l] = R[in->a][l]
#define L_FILL(name, w)   R[in->dst][l] = e->S[in->imm][l]
	for (;; pc++) {
		const struct cad_vm_insn *in = &e->code[pc];

		switch (in->code) {
#define L_CASE(name, value, fmt, width, str) \
		case CAD_VM_##name: L_##fmt(name, width); break;
		CAD_VM_OPCODES(L_CASE)
#undef L_CASE
		default:
			return;  /* unreachable for verified code */
		}
	}
}

/* Registers an instruction reads. */
static __u32 reads(const struct cad_vm_insn *in)
{
	switch (cad_vm_opcode_format(in->code)) {
	case CAD_VMF_SEL:
		return 1u << in->a | 1u << in->b | 1u << in->imm;
	case CAD_VMF_BIN:
	case CAD_VMF_CMP:
		return 1u << in->a | 1u << in->b;
	case CAD_VMF_UN:
	case CAD_VMF_ST:
	case CAD_VMF_JCOND:
	case CAD_VMF_SPILL:
		return 1u << in->a;
	default:
		return 0;
	}
}

/* Writes a register (dst): every format with one. */
static bool writes(const struct cad_vm_insn *in)
{
	switch (cad_vm_opcode_format(in->code)) {
	case CAD_VMF_LD: case CAD_VMF_MOVI: case CAD_VMF_LDK: case CAD_VMF_UN:
	case CAD_VMF_BIN: case CAD_VMF_CMP: case CAD_VMF_SEL: case CAD_VMF_FILL:
		return true;
	default:
		return false;
	}
}

/* The registers live on entry to pc, from those live after it. */
static __u32 live_in(const struct cad_vm_insn *in, __u32 out)
{
	if (in->code == CAD_VM_EXIT)
		return 0;
	if (writes(in))
		out &= ~(1u << in->dst);
	return out | reads(in);
}

/* after[pc]: the registers live after pc, those that some path from pc
 * reads before writing them.  Jumps only go forward, so one backward pass
 * is exact: the instructions after pc, and a jump's target, have larger
 * indexes.  Computed once per dispatch. */
static void reads_after(const struct cad_vm_insn *code, __u32 n, __u16 *after)
{
	while (n--) {
		const struct cad_vm_insn *in = &code[n];
		__u32 out = 0;

		if (in->code != CAD_VM_EXIT && in->code != CAD_VM_JA)
			out = live_in(&code[n + 1], after[n + 1]);
		if (in->code == CAD_VM_JA || in->code == CAD_VM_JZ || in->code == CAD_VM_JNZ)
			out |= live_in(&code[n + 1 + in->imm], after[n + 1 + in->imm]);
		after[n] = (__u16)out;
	}
}

#define NO_PC 0xffffu

/*
 * The wide plan's products: an FADD or FSUB whose operands are both
 * results of FMULs read by nothing else runs as one loop, (a * b) op
 * (c * d), with the products in CPU registers instead of lanes: the FMULs
 * are skipped (NF_SKIP), the sum (NF_DOT2) reads their operands.  With
 * one such operand, x op (c * d) or (c * d) op x is one loop likewise
 * (NF_MAC; prod names NO_PC for the register x).  Each
 * operation is still rounded on its own (the core is built with
 * -ffp-contract=off).  An FMUL at p is deferred to its reader q when
 * between them nothing reads its result or writes its operands or its
 * result and nothing is stored (an operand may be a view of element
 * memory), and its result is dead after q unless q overwrites it.  Code
 * with jumps is left alone: a deferred FMUL must run exactly when its
 * reader does.  One pass in program order over the pending FMULs, by the
 * register of their result.
 */
static void dot2_plan(const struct cad_vm_insn *code, __u32 count, const __u16 *after,
		      __u8 *flags, __u16 (*prod)[2])
{
	__u16 pend[CAD_VM_NREGS];
	__u32 pc, r;

	for (pc = 0; pc < count; pc++)
		if (code[pc].code == CAD_VM_JA || code[pc].code == CAD_VM_JZ ||
		    code[pc].code == CAD_VM_JNZ)
			return;
	for (r = 0; r < CAD_VM_NREGS; r++)
		pend[r] = NO_PC;
	for (pc = 0; pc < count; pc++) {
		const struct cad_vm_insn *in = &code[pc];
		const __u32 rd = reads(in);
		/* a product operand: pending, and dead after pc unless pc overwrites it */
		const bool pa = pend[in->a] != NO_PC &&
				(!(after[pc] & (1u << in->a)) || in->dst == in->a);
		const bool pb = pend[in->b] != NO_PC &&
				(!(after[pc] & (1u << in->b)) || in->dst == in->b);

		if ((in->code == CAD_VM_FADD || in->code == CAD_VM_FSUB) && in->a != in->b &&
		    (pa || pb)) {
			prod[pc][0] = pa ? pend[in->a] : NO_PC;
			prod[pc][1] = pb ? pend[in->b] : NO_PC;
			if (pa)
				flags[pend[in->a]] |= NF_SKIP;
			if (pb)
				flags[pend[in->b]] |= NF_SKIP;
			flags[pc] |= pa && pb ? NF_DOT2 : NF_MAC;
		}
		for (r = 0; r < CAD_VM_NREGS; r++)
			if (pend[r] != NO_PC &&
			    ((rd & (1u << r)) || cad_vm_opcode_format(in->code) == CAD_VMF_ST ||
			     (writes(in) && (reads(&code[pend[r]]) & (1u << in->dst)))))
				pend[r] = NO_PC;
		if (writes(in))
			pend[in->dst] = in->code == CAD_VM_FMUL ? (__u16)pc : NO_PC;
	}
}

/*
 * Pairs of stored products: an NF_DOT2 at q1 whose result only the ST_64
 * after it reads, where the next instruction run (after FMULs skipped for
 * the second) is another such at q2, storing to another field.  Complex
 * multiply is one: re = a.re * b.re - a.im * b.im; im = a.re * b.im +
 * a.im * b.re.  The pair runs as one loop (run_pair) that reads all eight
 * operands of an element before it writes its two fields, so the field
 * the first store overwrites need not be copied for the second product to
 * read.
 */
static __u32 pair_second(const __u8 *flags, __u32 q1)
{
	__u32 q = q1 + 2;

	while (flags[q] & NF_SKIP)
		q++;
	return q;
}

static bool dot2_stored(const struct cad_vm_insn *code, const __u16 *after, const __u8 *flags,
			__u32 q)
{
	return (flags[q] & NF_DOT2) && code[q + 1].code == CAD_VM_ST_64 &&
	       code[q + 1].a == code[q].dst && !(after[q + 1] & (1u << code[q].dst));
}

static void pair_plan(const struct cad_vm_insn *code, __u32 count, const __u16 *after,
		      __u8 *flags)
{
	__u32 q1, q2;

	for (q1 = 0; q1 + 1 < count; q1++) {
		__s32 d;

		if (!dot2_stored(code, after, flags, q1))
			continue;
		q2 = pair_second(flags, q1);  /* EXIT at the latest */
		if (q2 + 1 >= count || !dot2_stored(code, after, flags, q2))
			continue;
		d = code[q1 + 1].imm - code[q2 + 1].imm;
		if (d >= 8 || d <= -8) {
			flags[q1] |= NF_PAIR;
			q1 = q2 + 1;
		}
	}
}

/* Register r read through a view: lane l of it. */
#define AT(P, s, l) (*(const u64_u *)((P) + (__u64)(l) * (s)))

/* The register state of a block in 64-bit lanes: where each register is
 * read (its own lanes, stride 8, or a view of element memory, stride esz,
 * at byte off of the element) and which registers are views. */
struct regs {
	const __u8 *p[CAD_VM_NREGS];
	__u32 s[CAD_VM_NREGS];
	__s32 off[CAD_VM_NREGS];
	__u32 io_views, in_views;
};

/* Register r is read from its own lanes again: it stops being a view. */
static inline void own_lanes(__u64 (*R)[LANES], struct regs *g, __u32 r)
{
	g->p[r] = (const __u8 *)R[r];
	g->s[r] = 8;
	g->io_views &= ~(1u << r);
	g->in_views &= ~(1u << r);
}

/* Copy the views in mask into their registers' own lanes. */
static void materialise(__u64 (*R)[LANES], struct regs *g, __u32 *views, __u32 mask, __u32 n)
{
	__u32 r, l;

	if (!(*views & mask))
		return;
	for (r = 0; r < CAD_VM_NREGS; r++) {
		const __u8 *p = g->p[r];
		const __u32 s = g->s[r];

		if (!(*views & mask & (1u << r)))
			continue;
		if (s == 16)
			for (l = 0; l < n; l++)
				R[r][l] = AT(p, 16, l);
		else
			for (l = 0; l < n; l++)
				R[r][l] = AT(p, s, l);
		g->p[r] = (const __u8 *)R[r];
		g->s[r] = 8;
		*views &= ~(1u << r);
	}
}

/* The views among `views` that bytes [off, off + w) of the element overlap. */
static __u32 overlapping(const struct regs *g, __u32 views, __s32 off, __u32 w)
{
	__u32 r, m = 0;

	for (r = 0; views >> r; r++)
		if ((views & (1u << r)) && g->off[r] < off + (__s32)w && off < g->off[r] + 8)
			m |= 1u << r;
	return m;
}

/* Bit 63 set: the double v is a NaN or an infinity (its exponent is all
 * ones); 64-bit integer arithmetic only, which vectorises with SSE2. */
#define NAN_BITS(v) ((((v) & INF64) ^ INF64) - 1)
#define NAN_BITS32(v) ((((v) & INF32) ^ INF32) - 1)  /* a float's, in __u64 */
#define PLAIN_MUL(x, y) ((x) * (y))
#define PLAIN_ADD(x, y) ((x) + (y))
#define PLAIN_SUB(x, y) ((x) - (y))
#define PAIR_CHUNK 16

/*
 * The NF_PAIR at q1 and its second at q2 as one loop over n elements, if
 * no view of the two fields they store is read after them (the values
 * before the stores would then have to be kept).  Returns the pc of the
 * second store, where the block goes on; 0: not run, run them apart.
 */
static __u32 run_pair(const struct vm_env *e, struct regs *g, __u32 q1, __u32 n)
{
	const __u32 q2 = pair_second(e->flags, q1), esz = e->esz;
	const struct cad_vm_insn *c = e->code, *s1 = &c[q1 + 1], *s2 = &c[q2 + 1];
	const struct cad_vm_insn *m[4] = {
		&c[e->prod[q1][0]], &c[e->prod[q1][1]], &c[e->prod[q2][0]], &c[e->prod[q2][1]],
	};
	const __u8 *P[8];
	__u32 S[8], views = g->io_views, k, l, c0, cn;
	__u8 *const D1 = e->io + s1->imm, *const D2 = e->io + s2->imm;
	const bool sub1 = c[q1].code == CAD_VM_FSUB, sub2 = c[q2].code == CAD_VM_FSUB;

	if (e->ip == e->io)
		views |= g->in_views;
	views = overlapping(g, views, s1->imm, 8) | overlapping(g, views, s2->imm, 8);
	if (views & e->after[q2 + 1])
		return 0;
	for (k = 0; k < 4; k++) {
		P[2 * k] = g->p[m[k]->a];
		S[2 * k] = g->s[m[k]->a];
		P[2 * k + 1] = g->p[m[k]->b];
		S[2 * k + 1] = g->s[m[k]->b];
	}
/*
 * Both results of PAIR_CHUNK elements go to t1, t2 first, computed as C
 * writes them; if one is a NaN (or an infinity), the chunk again with
 * SSE's NaN of two (fmul_d, fadd_d: only a NaN operand makes a NaN that
 * the operands' order changes).  Its operands are all still there: the
 * stores of the chunk come after.  So NaN-free data pays a check, not a
 * blend per operation.
 */
#define PAIR_AT(k, st) f64(AT(P[k], st, l))
#define PAIR_LANES(mul, add, sub, st0, st1, st2, st3, st4, st5, st6, st7)  \
	CAD_IVDEP for (l = c0; l < c0 + cn; l++) {                         \
		const double x0 = mul(PAIR_AT(0, st0), PAIR_AT(1, st1));   \
		const double x1 = mul(PAIR_AT(2, st2), PAIR_AT(3, st3));   \
		const double y0 = mul(PAIR_AT(4, st4), PAIR_AT(5, st5));   \
		const double y1 = mul(PAIR_AT(6, st6), PAIR_AT(7, st7));   \
		const __u64 r1 = bits64(sub1 ? sub(x0, x1) : add(x0, x1)); \
		const __u64 r2 = bits64(sub2 ? sub(y0, y1) : add(y0, y1)); \
                                                                           \
		t1[l - c0] = r1;                                           \
		t2[l - c0] = r2;                                           \
		nan |= NAN_BITS(r1) | NAN_BITS(r2);                        \
	}
#define PAIR_LOOP(st0, st1, st2, st3, st4, st5, st6, st7, sd)              \
	for (c0 = 0; c0 < n; c0 += cn) {                                   \
		__u64 t1[PAIR_CHUNK], t2[PAIR_CHUNK], nan = 0;             \
                                                                           \
		cn = n - c0 < PAIR_CHUNK ? n - c0 : PAIR_CHUNK;            \
		PAIR_LANES(PLAIN_MUL, PLAIN_ADD, PLAIN_SUB, st0, st1, st2, st3, st4, st5, st6, \
			   st7)                                            \
		if (nan >> 63)                                             \
			PAIR_LANES(fmul_d, fadd_d, fsub_d, st0, st1, st2, st3, st4, st5, st6, \
				   st7)                                    \
		CAD_IVDEP for (l = c0; l < c0 + cn; l++) {                 \
			*(u64_u *)(D1 + (__u64)l * (sd)) = t1[l - c0];     \
			*(u64_u *)(D2 + (__u64)l * (sd)) = t2[l - c0];     \
		}                                                          \
	}
	for (k = 0; k < 8 && S[k] == esz; k++)
		;
	if (k == 8 && esz == 16 && sub1 && !sub2 && D2 == D1 + 8 &&
	    P[2] == P[0] + 8 && P[3] == P[1] + 8 && P[4] == P[0] && P[5] == P[3] &&
	    P[6] == P[2] && P[7] == P[1]) {
		/* the complex product, x * y on { re, im } pairs, operands in
		 * this order: written so that gcc runs both fields at once */
		const __u8 *const X = P[0], *const Y = P[1];

#define CMUL_LANES(mul, add, sub)                                          \
		CAD_IVDEP for (l = c0; l < c0 + cn; l++) {                 \
			const __u64 o = (__u64)l * 16;                     \
			const double xr = f64(*(const u64_u *)(X + o));    \
			const double xi = f64(*(const u64_u *)(X + o + 8)); \
			const double yr = f64(*(const u64_u *)(Y + o));    \
			const double yi = f64(*(const u64_u *)(Y + o + 8)); \
			const __u64 re = bits64(sub(mul(xr, yr), mul(xi, yi))); \
			const __u64 im = bits64(add(mul(xr, yi), mul(xi, yr))); \
                                                                           \
			t[l - c0][0] = re;                                 \
			t[l - c0][1] = im;                                 \
			nan |= NAN_BITS(re) | NAN_BITS(im);                \
		}
		for (c0 = 0; c0 < n; c0 += cn) {
			__u64 t[PAIR_CHUNK][2], nan = 0;

			cn = n - c0 < PAIR_CHUNK ? n - c0 : PAIR_CHUNK;
			CMUL_LANES(PLAIN_MUL, PLAIN_ADD, PLAIN_SUB)
			if (nan >> 63)
				CMUL_LANES(fmul_d, fadd_d, fsub_d)
			cad_memcpy(D1 + (__u64)c0 * 16, t, (size_t)cn * 16);
		}
#undef CMUL_LANES
	} else if (k == 8 && esz == 16) {
		PAIR_LOOP(16, 16, 16, 16, 16, 16, 16, 16, 16)
	} else {
		PAIR_LOOP(S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7], esz)
	}
#undef PAIR_LOOP
#undef PAIR_LANES
#undef PAIR_AT
	/* as before_store would: the views of the stored fields are dead */
	g->io_views &= ~views;
	g->in_views &= ~views;
	own_lanes(e->R, g, c[q1].dst);
	own_lanes(e->R, g, c[q2].dst);
	return q2 + 1;
}

/*
 * The block forms of the instructions, one function each.  Each runs the
 * instruction at pc over n elements and returns the pc the block goes on
 * from (that of the last instruction it ran: a store it fused, a jump's
 * target less one), or B_DONE when the block is finished.
 *
 * One function per instruction, never inlined: the loops of all of them
 * in one function made gcc's and clang's optimisers take minutes on this
 * file (passes quadratic in a function's blocks), and a call per
 * instruction per block of LANES elements costs nothing measurable.
 */
#define B_DONE ((__u32)-1)

/* Strided element access; a separate loop when elements are exactly w
 * bytes, so that the compiler sees a constant stride and vectorises. */
#define B_LOOP(w, body) do {                                               \
		if (esz == (w)) { CAD_IVDEP for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * (w); body; } } \
		else { for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * esz; body; } } \
	} while (0)
/* A loop over operands read with strides sa, sb, sc and a destination
 * written with stride sd: all 8 (own lanes) is the common, vectorised
 * case; then any strides. */
#define B_K(a, b, d, body)                                                 \
		CAD_IVDEP for (l = 0; l < n; l++) {                        \
			const __u64 ka_ = (a), kb_ = (b), kc_ = sc_, kd_ = (d); \
			(void)ka_; (void)kb_; (void)kc_; (void)kd_;       \
			body;                                              \
		}
#define B_OPLOOP(body) do {                                                \
		if ((sa_ | sb_ | sc_ | sd_) == 8) {                        \
			CAD_IVDEP for (l = 0; l < n; l++) {                \
				const __u64 ka_ = 8, kb_ = 8, kc_ = 8, kd_ = 8; \
				(void)ka_; (void)kb_; (void)kc_; (void)kd_; \
				body;                                      \
			}                                                  \
		} else if (esz == 16 && sc_ == 8 && (sa_ | sb_ | sd_) <= 24) { \
			switch ((sa_ >> 4) | (sb_ >> 4) << 1 | (sd_ >> 4) << 2) { \
			case 0: B_K(8, 8, 8, body) break;                  \
			case 1: B_K(16, 8, 8, body) break;                 \
			case 2: B_K(8, 16, 8, body) break;                 \
			case 3: B_K(16, 16, 8, body) break;                \
			case 4: B_K(8, 8, 16, body) break;                 \
			case 5: B_K(16, 8, 16, body) break;                \
			case 6: B_K(8, 16, 16, body) break;                \
			default: B_K(16, 16, 16, body) break;              \
			}                                                  \
		} else {                                                   \
			B_K(sa_, sb_, sd_, body)                           \
		}                                                          \
	} while (0)
#define OPA(l) AT(A, ka_, l)
#define OPB(l) AT(B, kb_, l)
#define OPC(l) AT(C, kc_, l)
#define OUT(l) (*(u64_u *)(D + (__u64)(l) * kd_))
/* The destination's own lanes; it stops being a view. */
#define B_DEST() own_lanes(R, g, in->dst)
/* D and its stride: the destination's own lanes, or, when the next
 * instruction stores this result as an 8-byte field of inout and nothing
 * reads it after, inout itself (and the store is skipped). */
#define B_DEST_FUSED() do {                                                \
		D = (__u8 *)R[in->dst];                                    \
		sd_ = 8;                                                   \
		if (in[1].code == CAD_VM_ST_64 && in[1].a == in->dst &&    \
		    !(e->after[pc + 1] & (1u << in->dst))) {               \
			before_store(pc + 1, in[1].imm, 8);                \
			D = e->io + in[1].imm;                             \
			sd_ = esz;                                         \
			pc++;                                              \
		}                                                          \
		B_DEST();                                                  \
	} while (0)
/* Before a store of w bytes at off at pc: the views it overwrites that
 * are still read afterwards are copied, the others dropped. */
#define before_store(pc_, off_, w_) do {                                   \
		const __u32 live_ = e->after[pc_];                         \
		__u32 hit_ = overlapping(g, g->io_views, (off_), (w_));    \
		materialise(R, g, &g->io_views, hit_ & live_, n);          \
		g->io_views &= ~hit_;                                      \
		if (e->ip == e->io) {                                      \
			hit_ = overlapping(g, g->in_views, (off_), (w_));  \
			materialise(R, g, &g->in_views, hit_ & live_, n);  \
			g->in_views &= ~hit_;                              \
		}                                                          \
	} while (0)
#define B_VARS  const __u8 *A, *B, *C; __u8 *D; __u32 sa_, sb_, sc_, sd_
#define B_EXIT(name, w)   return B_DONE
#define B_JA(name, w)     pc += in->imm
#define B_JCOND(name, w)  do {                                             \
		const __u8 *A = g->p[in->a];                               \
		const __u32 sa = g->s[in->a];                              \
		for (nz = 0, l = 0; l < n; l++)                            \
			nz += AT(A, sa, l) != 0;                           \
		if (nz != 0 && nz != n) {                                  \
			materialise(R, g, &g->io_views, ~0u, n);           \
			materialise(R, g, &g->in_views, ~0u, n);           \
			for (l = 0; l < n; l++)                            \
				run_lane(e, pc, l);                        \
			return B_DONE;                                     \
		}                                                          \
		if ((nz == 0) == (CAD_VM_##name == CAD_VM_JZ))             \
			pc += in->imm;                                     \
	} while (0)
#define B_LD(name, w)     do {                                             \
		const __u8 *p_ = (in->a ? e->io : e->ip) + in->imm;        \
		B_DEST();                                                  \
		if ((w) == 8 && esz <= 16) {                               \
			g->p[in->dst] = p_;                                \
			g->s[in->dst] = esz;                               \
			g->off[in->dst] = in->imm;                         \
			if (in->a)                                         \
				g->io_views |= 1u << in->dst;              \
			else                                               \
				g->in_views |= 1u << in->dst;              \
		} else {                                                   \
			__u64 *D_ = R[in->dst];                            \
			B_LOOP(w, D_[l] = LOAD_##name(p_ + s_));           \
		}                                                          \
	} while (0)
#define B_ST(name, w)     do {                                             \
		__u8 *p_ = e->io + in->imm;                                \
		const __u8 *A;                                             \
		__u32 sa;                                                  \
		/* the value stored must not be a view of what it overwrites */ \
		materialise(R, g, &g->io_views,                            \
			    overlapping(g, 1u << in->a, in->imm, w), n);   \
		if (e->ip == e->io)                                        \
			materialise(R, g, &g->in_views,                    \
				    overlapping(g, 1u << in->a, in->imm, w), n); \
		before_store(pc, in->imm, w);                              \
		A = g->p[in->a];                                           \
		sa = g->s[in->a];                                          \
		if (sa == 8)                                               \
			B_LOOP(w, STORE_##name(p_ + s_, AT(A, 8, l)));     \
		else                                                       \
			B_LOOP(w, STORE_##name(p_ + s_, AT(A, sa, l)));    \
	} while (0)
#define B_MOVI(name, w)   do {                                             \
		const __u64 v_ = (__u64)(__s64)in->imm;                    \
		__u64 *D_ = R[in->dst];                                    \
		B_DEST();                                                  \
		for (l = 0; l < n; l++)                                    \
			D_[l] = v_;                                        \
	} while (0)
#define B_LDK(name, w)    do {                                             \
		const __u64 v_ = e->consts[in->imm];                       \
		__u64 *D_ = R[in->dst];                                    \
		B_DEST();                                                  \
		for (l = 0; l < n; l++)                                    \
			D_[l] = v_;                                        \
	} while (0)
#define B_UN(name, w)     do {                                             \
		B_VARS;                                                    \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = C = A; sb_ = sc_ = sa_;                                \
		(void)B; (void)C;                                          \
		B_DEST_FUSED();                                            \
		B_OPLOOP(OUT(l) = SEM_##name(OPA(l), 0));                  \
	} while (0)
#define B_BIN(name, w)    do {                                             \
		if ((CAD_VM_##name == CAD_VM_FADD || CAD_VM_##name == CAD_VM_FSUB) && \
		    (e->flags[pc] & NF_DOT2)) {                            \
			const __u32 q_ = e->flags[pc] & NF_PAIR ? run_pair(e, g, pc, n) : 0; \
			if (q_) {                                          \
				pc = q_;                                   \
				break;                                     \
			}                                                  \
			B_DOT2(name);                                      \
			break;                                             \
		}                                                          \
		if ((CAD_VM_##name == CAD_VM_FADD || CAD_VM_##name == CAD_VM_FSUB) && \
		    (e->flags[pc] & NF_MAC)) {                             \
			B_MAC(name);                                       \
			break;                                             \
		}                                                          \
		B_VARS;                                                    \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = g->p[in->b]; sb_ = g->s[in->b];                        \
		C = A; sc_ = sa_;                                          \
		(void)C;                                                   \
		if (FARITH(CAD_VM_##name)) {                               \
			__u64 nan_ = 0;                                    \
                                                                           \
			B_DEST_FUSED();                                    \
			if (D == A) {  /* in place: operands checked first */ \
				B_OPLOOP(nan_ |= B_NAN_BITS(name, OPA(l)) | \
					 B_NAN_BITS(name, OPB(l)));        \
				if (nan_ >> 63)                            \
					B_OPLOOP(OUT(l) = SEM_##name(OPA(l), OPB(l))); \
				else                                       \
					B_OPLOOP(OUT(l) = B_PLAIN(name, OPA(l), OPB(l))); \
				break;                                     \
			}                                                  \
			B_OPLOOP(const __u64 r_ = B_PLAIN(name, OPA(l), OPB(l)); \
				 nan_ |= B_NAN_BITS(name, r_); OUT(l) = r_); \
			if (nan_ >> 63)                                    \
				B_OPLOOP(OUT(l) = B_FIRST_NAN(name, OPA(l), OUT(l))); \
			break;                                             \
		}                                                          \
		B_DEST_FUSED();                                            \
		B_OPLOOP(OUT(l) = SEM_##name(OPA(l), OPB(l)));             \
	} while (0)
/* B_DOT2's sum or difference, plain (only FADD and FSUB get there) */
#define PLAIN_DOT2(name, a, b) \
	(CAD_VM_##name == CAD_VM_FSUB ? PLAIN_FSUB(a, b) : PLAIN_FADD(a, b))
/*
 * The float arithmetic runs as C writes it, and then, if a result is a
 * NaN (or an infinity), again over the lanes whose first operand is a
 * NaN, whose result is that NaN quieted (SSE's NaN of two): NaN-free data
 * pays a check, not a blend per operation.  A result that overwrites its
 * first operand checks the operands first instead, and runs exactly
 * (SEM_) over the block if one is a NaN or an infinity.
 */
#define FARITH(c) (((c) >= CAD_VM_FADD && (c) <= CAD_VM_FDIV) ||           \
		   ((c) >= CAD_VM_SADD && (c) <= CAD_VM_SDIV))
#define B_PLAIN(name, a, b)                                                \
	(CAD_VM_##name == CAD_VM_FADD ? PLAIN_FADD(a, b)                   \
	 : CAD_VM_##name == CAD_VM_FSUB ? PLAIN_FSUB(a, b)                 \
	 : CAD_VM_##name == CAD_VM_FMUL ? PLAIN_FMUL(a, b)                 \
	 : CAD_VM_##name == CAD_VM_FDIV ? bits64(f64(a) / f64(b))          \
	 : CAD_VM_##name == CAD_VM_SADD ? bits32(f32(a) + f32(b))          \
	 : CAD_VM_##name == CAD_VM_SSUB ? bits32(f32(a) - f32(b))          \
	 : CAD_VM_##name == CAD_VM_SMUL ? bits32(f32(a) * f32(b))          \
	 : bits32(f32(a) / f32(b)))
#define B_NAN_BITS(name, r) \
	(CAD_VM_##name >= CAD_VM_SADD ? NAN_BITS32(r) : NAN_BITS(r))
#define B_FIRST_NAN(name, a, r)                                            \
	(CAD_VM_##name >= CAD_VM_SADD                                      \
	 ? (((__u32)(a) & 0x7fffffffu) > INF32 ? (__u64)((__u32)(a) | QNAN32) : (r)) \
	 : (((a) & ~SIGN64) > INF64 ? (a) | QNAN64 : (r)))
#define PLAIN_FADD(a, b) bits64(f64(a) + f64(b))
#define PLAIN_FSUB(a, b) bits64(f64(a) - f64(b))
#define PLAIN_FMUL(a, b) bits64(f64(a) * f64(b))
/* (a * b) op (c * d) of the two skipped FMULs prod names (dot2_plan).
 * Their operands are read as they are now: nothing wrote them since. */
#define B_DOT2(name)      do {                                             \
		const struct cad_vm_insn *m0_ = &e->code[e->prod[pc][0]];  \
		const struct cad_vm_insn *m1_ = &e->code[e->prod[pc][1]];  \
		const __u8 *P0 = g->p[m0_->a], *P1 = g->p[m0_->b];         \
		const __u8 *P2 = g->p[m1_->a], *P3 = g->p[m1_->b];         \
		const __u32 s0_ = g->s[m0_->a], s1_ = g->s[m0_->b];        \
		const __u32 s2_ = g->s[m1_->a], s3_ = g->s[m1_->b];        \
		__u8 *D;                                                   \
		__u32 sd_;                                                 \
		B_DEST_FUSED();                                            \
		B_FUSED_RUN(B_DOT2_LOOP, name, s0_, s1_, s2_, s3_);        \
	} while (0)
/*
 * A fused loop of operands P0..P3 (strides k0..k3) into D, run by LOOP
 * (name, plain, k0, k1, k2, k3, kd).  When the result overwrites none of
 * the operands, it runs plain first and then, if a result is a NaN (or an
 * infinity), again with SSE's NaNs.  When it overwrites one, the operands
 * are checked first instead: with no NaN among them (nor an infinity),
 * the plain result is exact.  All strides 8 is the vectorised loop.
 */
#define B_FUSED_RUN(LOOP, name, k0, k1, k2, k3) do {                       \
		const bool apart_ = D != P0 && D != P1 && D != P2 && D != P3; \
		bool exact_ = false;                                       \
		__u64 nan_ = 0;                                            \
		if (!apart_) {                                             \
			CAD_IVDEP for (l = 0; l < n; l++)                  \
				nan_ |= NAN_BITS(AT(P0, k0, l)) | NAN_BITS(AT(P1, k1, l)) | \
					NAN_BITS(AT(P2, k2, l)) | NAN_BITS(AT(P3, k3, l)); \
			exact_ = nan_ >> 63;                               \
		}                                                          \
		if (!exact_ && ((k0) | (k1) | (k2) | (k3) | sd_) == 8)     \
			LOOP(name, 1, 8, 8, 8, 8, 8)                       \
		else if (!exact_)                                          \
			LOOP(name, 1, k0, k1, k2, k3, sd_)                 \
		if (exact_ || (apart_ && (nan_ >> 63)))                    \
			LOOP(name, 0, k0, k1, k2, k3, sd_)                 \
	} while (0)
#define B_DOT2_LOOP(name, plain, k0, k1, k2, k3, kd)                       \
		CAD_IVDEP for (l = 0; l < n; l++) {                        \
			const __u64 a_ = AT(P0, k0, l), b_ = AT(P1, k1, l); \
			const __u64 c_ = AT(P2, k2, l), d_ = AT(P3, k3, l); \
			const __u64 x_ = (plain) ? PLAIN_FMUL(a_, b_) : SEM_FMUL(a_, b_); \
			const __u64 y_ = (plain) ? PLAIN_FMUL(c_, d_) : SEM_FMUL(c_, d_); \
			const __u64 r_ = (plain) ? PLAIN_DOT2(name, x_, y_) : SEM_##name(x_, y_); \
                                                                           \
			*(u64_u *)(D + (__u64)l * (kd)) = r_;              \
			if (plain)                                         \
				nan_ |= NAN_BITS(r_);                      \
		}
/* x op (c * d), or (c * d) op x when the product is the first operand
 * (pf), of the skipped FMUL prod names (dot2_plan), as B_DOT2 does. */
#define B_MAC(name)       do {                                             \
		const bool pf_ = e->prod[pc][0] != NO_PC;                  \
		const struct cad_vm_insn *m_ = &e->code[e->prod[pc][pf_ ? 0 : 1]]; \
		const __u32 rx_ = pf_ ? in->b : in->a;                     \
		const __u8 *P0 = g->p[rx_], *P2 = g->p[m_->a], *P3 = g->p[m_->b]; \
		const __u8 *const P1 = P0;                                 \
		const __u32 s0_ = g->s[rx_], s2_ = g->s[m_->a], s3_ = g->s[m_->b]; \
		__u8 *D;                                                   \
		__u32 sd_;                                                 \
		B_DEST_FUSED();                                            \
		if (pf_)                                                   \
			B_FUSED_RUN(B_MAC_LOOP_PF, name, s0_, s0_, s2_, s3_); \
		else                                                       \
			B_FUSED_RUN(B_MAC_LOOP_XF, name, s0_, s0_, s2_, s3_); \
	} while (0)
/* B_MAC's loops in B_FUSED_RUN's form (P1 is P0): product first, or x */
#define B_MAC_LOOP_PF(name, plain, k0, k1, k2, k3, kd) B_MAC_LOOP(name, plain, 1, k0, k2, k3, kd)
#define B_MAC_LOOP_XF(name, plain, k0, k1, k2, k3, kd) B_MAC_LOOP(name, plain, 0, k0, k2, k3, kd)
#define B_MAC_LOOP(name, plain, pf, k0, k2, k3, kd)                        \
		CAD_IVDEP for (l = 0; l < n; l++) {                        \
			const __u64 x_ = AT(P0, k0, l);                    \
			const __u64 c_ = AT(P2, k2, l), d_ = AT(P3, k3, l); \
			const __u64 y_ = (plain) ? PLAIN_FMUL(c_, d_) : SEM_FMUL(c_, d_); \
			const __u64 r_ = (plain) ? ((pf) ? PLAIN_DOT2(name, y_, x_) \
							 : PLAIN_DOT2(name, x_, y_)) \
					: ((pf) ? SEM_##name(y_, x_) : SEM_##name(x_, y_)); \
                                                                           \
			*(u64_u *)(D + (__u64)l * (kd)) = r_;              \
			if (plain)                                         \
				nan_ |= NAN_BITS(r_);                      \
		}
/* a op b ? x : y where x and y are a and b: a blend for the integer
 * compares, else a select of the bits.  (The f64 compares do not come
 * here: see B_FPICK.) */
#define B_PICK(name, a, b, x, y)                                           \
	(INT_CMP(CAD_VM_##name) ? BLEND64(SEM_##name(a, b), x, y)          \
	 : SEM_##name(a, b) ? (x) : (y))
/* The same for an f64 compare, over doubles loaded and stored as doubles:
 * only then is it gcc's maxpd or minpd (a < b ? b : a is exactly maxpd's
 * b > a ? b : a, NaNs and signed zeros included).  Loaded as integers and
 * selected as doubles, gcc folds the select back to one of integers, a
 * compare and three logical operations, at about half the speed. */
#define FAT(P, s, l) (*(const f64_u *)((P) + (__u64)(l) * (s)))
#define FOUT(l) (*(f64_u *)(D + (__u64)(l) * kd_))
#define B_FPICK(name, swap)                                                \
	B_OPLOOP(const double a_ = FAT(A, ka_, l); const double b_ = FAT(B, kb_, l); \
		 FOUT(l) = SEM_##name(bits64(a_), bits64(b_)) ? ((swap) ? b_ : a_) \
							     : ((swap) ? a_ : b_))
/* A compare whose result only the next SEL reads (as its condition) runs
 * with it as one loop, t = a op b; d = t ? x : y, which vectorises as a
 * compare and a blend.  The compare's register is then dead and never
 * written.  A, B: the compare's operands; C, X: the SEL's. */
#define B_CMP(name, w)    do {                                             \
		B_VARS;                                                    \
		const struct cad_vm_insn *sel_ = &in[1];                   \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = g->p[in->b]; sb_ = g->s[in->b];                        \
		const unsigned int mm_ = sel_->b == in->a && (__u32)sel_->imm == in->b ? 1 \
				       : sel_->b == in->b && (__u32)sel_->imm == in->a ? 2 : 0; \
		if (sel_->code == CAD_VM_SEL && sel_->a == in->dst &&      \
		    sel_->b != in->dst && (__u32)sel_->imm != in->dst &&   \
		    (mm_ || (g->s[sel_->b] == 8 && g->s[sel_->imm] == 8)) && \
		    !(e->after[pc + 1] & (1u << in->dst))) {              \
			const u64_u *X = (const u64_u *)g->p[sel_->b];     \
			const u64_u *Y = (const u64_u *)g->p[sel_->imm];   \
			B_DEST();                                          \
			pc++;                                              \
			in = sel_;                                         \
			C = A; sc_ = 8;                                    \
			(void)C;                                           \
			B_DEST_FUSED();                                    \
			if (F64_CMP(CAD_VM_##name) && mm_ == 1)            \
				B_FPICK(name, 0);                          \
			else if (F64_CMP(CAD_VM_##name) && mm_ == 2)       \
				B_FPICK(name, 1);                          \
			else if (mm_ == 1)  /* a op b ? a : b */           \
				B_OPLOOP(const __u64 a_ = OPA(l); const __u64 b_ = OPB(l); \
					 OUT(l) = B_PICK(name, a_, b_, a_, b_)); \
			else if (mm_ == 2)  /* a op b ? b : a */           \
				B_OPLOOP(const __u64 a_ = OPA(l); const __u64 b_ = OPB(l); \
					 OUT(l) = B_PICK(name, a_, b_, b_, a_)); \
			else                                               \
				B_OPLOOP(const __u64 x_ = X[l]; const __u64 y_ = Y[l]; \
					 OUT(l) = INT_CMP(CAD_VM_##name)   \
					 ? BLEND64(SEM_##name(OPA(l), OPB(l)), x_, y_) \
					 : SEM_##name(OPA(l), OPB(l)) ? x_ : y_); \
		} else {                                                   \
			C = A; sc_ = sa_;                                  \
			(void)C;                                           \
			B_DEST_FUSED();                                    \
			B_OPLOOP(OUT(l) = SEM_##name(OPA(l), OPB(l)));     \
		}                                                          \
	} while (0)
#define B_SEL(name, w)    do {                                             \
		B_VARS;                                                    \
		C = g->p[in->a]; sc_ = g->s[in->a];                        \
		A = g->p[in->b]; sa_ = g->s[in->b];                        \
		B = g->p[(__u32)in->imm]; sb_ = g->s[(__u32)in->imm];      \
		B_DEST_FUSED();                                            \
		B_OPLOOP(const __u64 a_ = OPA(l); const __u64 b_ = OPB(l); \
			 OUT(l) = BLEND64(NZ64(OPC(l)), a_, b_));          \
	} while (0)
/* A slot is lanes of its own, never a view: a SPILL copies the value as
 * it is now (also from a view, before the memory under it changes), a
 * FILL copies the lanes back, or stores them at once as B_DEST_FUSED
 * does. */
#define B_SPILL(name, w)  do {                                             \
		B_VARS;                                                    \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = C = A; sb_ = sc_ = sa_;                                \
		(void)B; (void)C;                                          \
		D = (__u8 *)e->S[in->imm];                                 \
		sd_ = 8;                                                   \
		B_OPLOOP(OUT(l) = OPA(l));                                 \
	} while (0)
#define B_FILL(name, w)   do {                                             \
		B_VARS;                                                    \
		A = B = C = (const __u8 *)e->S[in->imm];                   \
		sa_ = sb_ = sc_ = 8;                                       \
		(void)B; (void)C;                                          \
		B_DEST_FUSED();                                            \
		B_OPLOOP(OUT(l) = OPA(l));                                 \
	} while (0)
#define B_FN(name, value, fmt, width, str)                                 \
static __attribute__((__noinline__)) __u32 b_##name(const struct vm_env *e, struct regs *g, \
						    __u32 pc, __u32 n)     \
{                                                                          \
	__u64 (*const R)[LANES] = e->R;                                    \
	const __u32 esz = e->esz;                                          \
	const struct cad_vm_insn *in = &e->code[pc];                       \
	__u32 l = 0, nz = 0;                                               \
                                                                           \
	(void)R; (void)esz; (void)in; (void)l; (void)nz;                   \
	B_##fmt(name, width);                                              \
	return pc;                                                         \
}
CAD_VM_OPCODES(B_FN)
#undef B_FN

/*
 * n (1..LANES) elements from pc 0 to EXIT.
 *
 * Registers are read through g: normally their own lanes in R, but a load
 * of an 8-byte field of an element of at most 16 bytes copies nothing and
 * makes the register a view of the element memory, with the elements'
 * stride.  (Larger elements are copied into lanes: every instruction that
 * reads the field then runs vectorised, instead of striding over memory
 * that a block of them no longer keeps in the L1 cache.)  Results are written to the
 * register's own lanes, or, when the next instruction only stores them as
 * an 8-byte field, straight into inout.  A view is materialised before
 * the memory under it may change: before a store into the bytes it
 * covers (of inout, and of in when the node reduces a range into itself)
 * and before the switch to lane-by-lane execution, which reads R only.
 */
static void run_block(const struct vm_env *e, __u32 n)
{
	struct regs g;
	__u32 pc, r;

	for (r = 0; r < CAD_VM_NREGS; r++) {
		g.p[r] = (const __u8 *)e->R[r];
		g.s[r] = 8;
		g.off[r] = 0;
	}
	g.io_views = g.in_views = 0;
	for (pc = 0;; pc++) {
		if (e->flags[pc] & NF_SKIP)
			continue;
		switch (e->code[pc].code) {
#define B_CASE(name, value, fmt, width, str) \
		case CAD_VM_##name: pc = b_##name(e, &g, pc, n); break;
		CAD_VM_OPCODES(B_CASE)
#undef B_CASE
		default:
			return;  /* unreachable for verified code */
		}
		if (pc == B_DONE)
			return;
	}
}

/* ------------------------------------------------------------------ */
/*
 * Narrow mode: integer code whose values all fit in 32 bits runs on 32-bit
 * lanes, four to a vector instead of two, where SSE2 has the signed
 * compares that 64-bit lanes lack.  The plan tracks, for every register,
 * a width w: its value, as the 64-bit VM sees it, is the sign extension of
 * a w-bit value (w <= 32), so its low 32 bits say it all.  W_LOW marks a
 * value of which only the low 32 bits are known (an int addition that may
 * carry past bit 31, a zero-extended u32): only instructions whose result
 * depends on the low 32 bits of their operands alone may read it (the
 * ring operations, SEXT, ZEXT8/16, stores of at most 32 bits).  Code with
 * jumps, floating point, divisions or another read of a W_LOW value runs
 * in 64-bit lanes, as always.
 */
#define W_LOW 65

static unsigned int width_of(__s64 v)
{
	unsigned int w = 1;

	while (w < 64 && (v < -(1ll << (w - 1)) || v >= (1ll << (w - 1))))
		w++;
	return w;
}

static unsigned int wmax(unsigned int a, unsigned int b)
{
	return a > b ? a : b;
}

/* A result of width w: W_LOW past 32 bits (the caller checks the op may
 * wrap) or when an operand is W_LOW. */
static unsigned int wlow(unsigned int w)
{
	return w > 32 ? W_LOW : w;
}

/* The narrow plan of the code (flags per instruction); false: run wide.
 * after: registers read after each pc, for the SEXT-before-store skip;
 * *nregs: the registers written are r0 .. r(*nregs - 1) at most;
 * *nslots: the slots spilled to are s0 .. s(*nslots - 1) at most.  A slot
 * has the width of the value spilled to it. */
static bool narrow_plan(const struct cad_vm_insn *code, __u32 count, const __u64 *consts,
			const __u16 *after, __u8 *flags, __u32 *nregs, __u32 *nslots)
{
	__u8 w[CAD_VM_NREGS], ws[CAD_VM_NSLOTS];
	bool narrow = true;
	__u32 pc;

	cad_memset(w, 64, sizeof(w));
	cad_memset(ws, 64, sizeof(ws));
	for (pc = 0; pc < count; pc++) {
		const struct cad_vm_insn *in = &code[pc];
		const unsigned int fmt = cad_vm_opcode_format(in->code);
		unsigned int wa = 64, wb = 64, wr = 64;

		flags[pc] = 0;
		if (fmt == CAD_VMF_UN || fmt == CAD_VMF_BIN || fmt == CAD_VMF_CMP ||
		    fmt == CAD_VMF_ST || fmt == CAD_VMF_SEL || fmt == CAD_VMF_JCOND ||
		    fmt == CAD_VMF_SPILL)
			wa = w[in->a];
		if (fmt == CAD_VMF_BIN || fmt == CAD_VMF_CMP || fmt == CAD_VMF_SEL)
			wb = w[in->b];
		switch (in->code) {
		case CAD_VM_EXIT:
			continue;
		case CAD_VM_JA: case CAD_VM_JZ: case CAD_VM_JNZ:
			/* widths would have to merge at the targets: run wide, as written */
			cad_memset(flags, 0, count);
			return false;
		case CAD_VM_LD_I8:  wr = 8;  break;
		case CAD_VM_LD_U8:  wr = 9;  break;
		case CAD_VM_LD_I16: wr = 16; break;
		case CAD_VM_LD_U16: wr = 17; break;
		case CAD_VM_LD_I32: wr = 32; break;
		case CAD_VM_LD_U32: case CAD_VM_LD_64: case CAD_VM_ZEXT32:
			wr = W_LOW;
			break;
		case CAD_VM_ST_8: case CAD_VM_ST_16: case CAD_VM_ST_32:
			continue;
		case CAD_VM_ST_64:
			narrow &= wa <= 32;
			continue;
		case CAD_VM_SPILL:
			ws[in->imm] = (__u8)wa;
			*nslots = wmax(*nslots, (__u32)in->imm + 1);
			continue;
		case CAD_VM_FILL:
			wr = ws[in->imm];
			break;
		case CAD_VM_MOVI:
			wr = width_of(in->imm);
			break;
		case CAD_VM_LDK:
			wr = wlow(width_of((__s64)consts[in->imm]));
			break;
		case CAD_VM_MOV: case CAD_VM_NOT:
			wr = wa;
			break;
		case CAD_VM_NEG:
			wr = wlow(wa + 1);
			break;
		case CAD_VM_ADD: case CAD_VM_SUB:
			wr = wlow(wmax(wa, wb) + 1);
			break;
		case CAD_VM_MUL:
			wr = wlow(wa + wb);
			break;
		case CAD_VM_AND: case CAD_VM_OR: case CAD_VM_XOR:
			wr = wlow(wmax(wa, wb));
			break;
		case CAD_VM_SHL:
			wr = W_LOW;
			break;
		case CAD_VM_SHR_S:
			narrow &= wa <= 32;
			wr = wa;
			break;
		case CAD_VM_SEXT8: case CAD_VM_SEXT16: case CAD_VM_SEXT32: {
			const unsigned int k = in->code == CAD_VM_SEXT8 ? 8
					     : in->code == CAD_VM_SEXT16 ? 16 : 32;

			wr = wa <= k ? wa : k;
			if (wa <= k && in->dst == in->a)
				flags[pc] |= NF_SKIP;
			/* extending what only a store of at most k bits reads next */
			if (in->dst == in->a && pc + 1 < count &&
			    cad_vm_opcode_format(code[pc + 1].code) == CAD_VMF_ST &&
			    code[pc + 1].a == in->dst &&
			    cad_vm_opcode_width(code[pc + 1].code) * 8 <= k &&
			    !(after[pc + 1] & (1u << in->dst)))
				flags[pc] |= NF_SKIP;
			break;
		}
		case CAD_VM_ZEXT8:  wr = 9;  break;
		case CAD_VM_ZEXT16: wr = 17; break;
		case CAD_VM_EQ: case CAD_VM_NE: case CAD_VM_LT_S: case CAD_VM_LE_S:
		case CAD_VM_LT_U: case CAD_VM_LE_U:
			narrow &= wa <= 32 && wb <= 32;
			wr = 2;
			break;
		case CAD_VM_SEL:
			narrow &= wa <= 32;
			wr = wmax(wb, w[in->imm]);
			break;
		default:
			narrow = false;
			break;
		}
		w[in->dst] = (__u8)wr;
		*nregs = wmax(*nregs, in->dst + 1u);
	}
	return narrow;
}

/* Narrow semantics on the low 32 bits (operands as narrow_plan allows). */
#define N_MOV(a, b)    (a)
#define N_ADD(a, b)    ((a) + (b))
#define N_SUB(a, b)    ((a) - (b))
#define N_MUL(a, b)    ((a) * (b))
#define N_AND(a, b)    ((a) & (b))
#define N_OR(a, b)     ((a) | (b))
#define N_XOR(a, b)    ((a) ^ (b))
#define N_NOT(a, b)    (~(a))
#define N_NEG(a, b)    (0u - (a))
#define N_SHL(a, b)    (((b) & 63) < 32 ? (a) << ((b) & 31) : 0u)
#define N_SHR_S(a, b)  ((__u32)((__s32)(a) >> (((b) & 63) > 31 ? 31 : ((b) & 63))))
#define N_SEXT8(a, b)  ((__u32)(__s32)(__s8)(a))
#define N_SEXT16(a, b) ((__u32)(__s32)(__s16)(a))
#define N_SEXT32(a, b) (a)
#define N_ZEXT8(a, b)  ((a) & 0xffu)
#define N_ZEXT16(a, b) ((a) & 0xffffu)
#define N_ZEXT32(a, b) (a)
/* sign-extended values order as their low 32 bits do, signed or not */
#define N_EQ(a, b)     ((__u32)((a) == (b)))
#define N_NE(a, b)     ((__u32)((a) != (b)))
#define N_LT_S(a, b)   ((__u32)((__s32)(a) < (__s32)(b)))
#define N_LE_S(a, b)   ((__u32)((__s32)(a) <= (__s32)(b)))
#define N_LT_U(a, b)   ((__u32)((a) < (b)))
#define N_LE_U(a, b)   ((__u32)((a) <= (b)))

#define NLOAD_LD_I8(p)  ((__u32)(__s32)*(const s8_u *)(p))
#define NLOAD_LD_U8(p)  ((__u32)*(const u8_u *)(p))
#define NLOAD_LD_I16(p) ((__u32)(__s32)*(const s16_u *)(p))
#define NLOAD_LD_U16(p) ((__u32)*(const u16_u *)(p))
#define NLOAD_LD_I32(p) (*(const u32_u *)(p))
#define NLOAD_LD_U32(p) (*(const u32_u *)(p))
#define NLOAD_LD_64(p)  ((__u32)*(const u64_u *)(p))
#define NSTORE_ST_8(p, v)  (*(u8_u *)(p) = (__u8)(v))
#define NSTORE_ST_16(p, v) (*(u16_u *)(p) = (__u16)(v))
#define NSTORE_ST_32(p, v) (*(u32_u *)(p) = (v))
#define NSTORE_ST_64(p, v) (*(u64_u *)(p) = (__u64)(__s64)(__s32)(v))

/*
 * Loads fused into the ring operation that reads them (narrow mode):
 *   ld.K ra, [X+0]; ld.K rb, [Y+0]; OP d, ra, rb   (or OP d, rb, ra)
 * with the same load K of the whole element (its width is esz), OP one
 * of add, sub, mul, and, or, xor, and ra, rb dead after OP unless it
 * overwrites them: the elementwise integer operators (a sum, a product, a
 * bitwise op of 8-, 16- or 32-bit values).  OP then reads the elements
 * itself in one pass, instead of three passes through two rows.
 */
static bool ldop_op(unsigned int code)
{
	return code == CAD_VM_ADD || code == CAD_VM_SUB || code == CAD_VM_MUL ||
	       code == CAD_VM_AND || code == CAD_VM_OR || code == CAD_VM_XOR;
}

static void ldop_plan(const struct cad_vm_insn *code, __u32 count, __u32 esz, const __u16 *after,
		      __u8 *flags)
{
	__u32 pc;

	for (pc = 2; pc < count; pc++) {
		const struct cad_vm_insn *in = &code[pc], *l0 = in - 2, *l1 = in - 1;
		const __u32 ra = l0->dst, rb = l1->dst;

		if (!ldop_op(in->code) || l0->code != l1->code ||
		    cad_vm_opcode_format(l0->code) != CAD_VMF_LD || l0->code == CAD_VM_LD_64 ||
		    cad_vm_opcode_width(l0->code) != esz || l0->imm || l1->imm || ra == rb ||
		    !((in->a == ra && in->b == rb) || (in->a == rb && in->b == ra)) ||
		    ((flags[pc - 2] | flags[pc - 1] | flags[pc]) & (NF_SKIP | NF_LDOP)) ||
		    ((after[pc] & (1u << ra)) && in->dst != ra) ||
		    ((after[pc] & (1u << rb)) && in->dst != rb))
			continue;
		flags[pc - 2] |= NF_SKIP;
		flags[pc - 1] |= NF_SKIP;
		flags[pc] |= NF_LDOP;
	}
}

/*
 * Constants of narrow code in rows of their own, filled once per call.
 * Code compiled from C loads its constants into registers that it then
 * overwrites (a clamp: movi r1, 32767; ...; sel r1, t ? r1 : x), so the
 * MOVI would refill a row for every block.  Instead each distinct
 * constant value gets a row after the registers' rows, the MOVI or LDK is
 * skipped, and the instructions that read the register before it is next
 * written read that row (rmap).  Narrow code has no jumps, so the
 * definition that reaches each read is the last write before it.  An
 * instruction already skipped (an identity SEXT) leaves its register
 * where it was.  Returns the number of constant rows; kval: their values.
 */
#define NARROW_KROWS 8

static __u32 consts_plan(const struct cad_vm_insn *code, __u32 count, const __u64 *consts,
			 __u32 nregs, __u8 *flags, __u8 (*rmap)[4], __u32 *kval)
{
	__u8 cur[CAD_VM_NREGS];
	__u32 pc, r, k, v, nk = 0;

	for (r = 0; r < CAD_VM_NREGS; r++)
		cur[r] = (__u8)r;
	for (pc = 0; pc < count; pc++) {
		const struct cad_vm_insn *in = &code[pc];

		rmap[pc][0] = cur[in->a & (CAD_VM_NREGS - 1)];
		rmap[pc][1] = cur[in->b & (CAD_VM_NREGS - 1)];
		rmap[pc][2] = cur[(__u32)in->imm & (CAD_VM_NREGS - 1)];
		rmap[pc][3] = 0;
		if (!writes(in) || (flags[pc] & NF_SKIP))
			continue;
		cur[in->dst] = in->dst;
		if (in->code != CAD_VM_MOVI && in->code != CAD_VM_LDK)
			continue;
		v = in->code == CAD_VM_MOVI ? (__u32)in->imm : (__u32)consts[in->imm];
		for (k = 0; k < nk && kval[k] != v; k++)
			;
		if (k == nk) {
			if (nk == NARROW_KROWS)
				continue;  /* a row refilled per block, as written */
			kval[nk++] = v;
		}
		cur[in->dst] = (__u8)(CAD_VM_NREGS + k);
		flags[pc] |= NF_SKIP;
	}
	/* constant rows follow the nregs registers' rows */
	for (pc = 0; pc < count; pc++)
		for (r = 0; r < 3; r++)
			if (rmap[pc][r] >= CAD_VM_NREGS)
				rmap[pc][r] = (__u8)(rmap[pc][r] - CAD_VM_NREGS + nregs);
	return nk;
}

/* Whether the instruction after pc stores all of the element (esz bytes at
 * offset 0) from register r, which nothing reads afterwards: then the
 * instruction at pc writes its result straight into inout (run_block32). */
static bool narrow_store_next(const struct vm_env *e, __u32 pc, __u32 r)
{
	const struct cad_vm_insn *st = &e->code[pc + 1];

	return cad_vm_opcode_format(st->code) == CAD_VMF_ST && st->a == r && st->imm == 0 &&
	       cad_vm_opcode_width(st->code) == e->esz && !(e->after[pc + 1] & (1u << r));
}

/* An NF_LDOP instruction at pc over n elements; returns its pc, or that of
 * the store it did in the same loop. */
static __attribute__((__noinline__)) __u32 run_ldop(const struct vm_env *e, __u32 pc, __u32 n)
{
	const struct cad_vm_insn *in = &e->code[pc], *l0 = in - 2, *l1 = in - 1;
	const struct cad_vm_insn *la = in->a == l0->dst ? l0 : l1, *lb = la == l0 ? l1 : l0;
	const __u8 *const pa = la->a ? e->io : e->ip, *const pb = lb->a ? e->io : e->ip;
	__u8 *const o = e->io;
	__u32 *const D = (__u32 *)e->R + (__u64)in->dst * e->nl;
	const bool put = narrow_store_next(e, pc, in->dst);
	__u32 l;

#define LDOP_ST1 NSTORE_ST_8
#define LDOP_ST2 NSTORE_ST_16
#define LDOP_ST4 NSTORE_ST_32
#define LDOP_LOOP(k, w, op) do {                                           \
		if (put)                                                   \
			CAD_IVDEP for (l = 0; l < n; l++)                  \
				LDOP_ST##w(o + (__u64)l * (w), N_##op(NLOAD_##k(pa + (__u64)l * (w)), \
								     NLOAD_##k(pb + (__u64)l * (w)))); \
		else                                                       \
			CAD_IVDEP for (l = 0; l < n; l++)                  \
				D[l] = N_##op(NLOAD_##k(pa + (__u64)l * (w)), \
					      NLOAD_##k(pb + (__u64)l * (w))); \
	} while (0)
#define LDOP_OPS(k, w) case CAD_VM_##k:                                    \
		switch (in->code) {                                        \
		case CAD_VM_ADD: LDOP_LOOP(k, w, ADD); break;              \
		case CAD_VM_SUB: LDOP_LOOP(k, w, SUB); break;              \
		case CAD_VM_MUL: LDOP_LOOP(k, w, MUL); break;              \
		case CAD_VM_AND: LDOP_LOOP(k, w, AND); break;              \
		case CAD_VM_OR:  LDOP_LOOP(k, w, OR);  break;              \
		default:         LDOP_LOOP(k, w, XOR); break;              \
		}                                                          \
		break
	switch (l0->code) {
	LDOP_OPS(LD_I8, 1);
	LDOP_OPS(LD_U8, 1);
	LDOP_OPS(LD_I16, 2);
	LDOP_OPS(LD_U16, 2);
	LDOP_OPS(LD_I32, 4);
	default:
	LDOP_OPS(LD_U32, 4);
	}
#undef LDOP_OPS
#undef LDOP_LOOP
	return put ? pc + 1 : pc;
}

/* n (1..e->nl) elements of narrow code, from pc 0 to EXIT: the registers
 * are rows of e->nl 32-bit lanes in e->R, the slots such rows in e->S, no
 * views (every load copies).
 * Not inlined into its caller, whose frame (the plans) would then add to
 * this one's on the kernel stack. */
static __attribute__((__noinline__)) void run_block32(const struct vm_env *e, __u32 n)
{
	__u32 *const R0 = (__u32 *)e->R;
	const __u32 esz = e->esz, nl = e->nl;
	__u32 pc, l;

#define R(r) (R0 + (__u64)(r) * nl)

/* Element access with a constant stride for the common element sizes. */
#define N_LOOP(body) do {                                                  \
		switch (esz) {                                             \
		case 1: CAD_IVDEP for (l = 0; l < n; l++) { const __u64 s_ = l; body; } break; \
		case 2: CAD_IVDEP for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * 2; body; } break; \
		case 4: CAD_IVDEP for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * 4; body; } break; \
		case 8: CAD_IVDEP for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * 8; body; } break; \
		default: for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * esz; body; } break; \
		}                                                          \
	} while (0)
/* D[l] = v, where body sets v for lane l; or, when the next instruction
 * stores v as the whole element and nothing reads it after, that store in
 * the same loop (skipped at its own pc). */
#define N_PUT(r, body) do {                                                \
		if (narrow_store_next(e, pc, (r))) { /* esz is 1, 2, 4 or 8 */ \
			__u8 *const o_ = e->io;                            \
			switch (esz) {                                     \
			case 1: CAD_IVDEP for (l = 0; l < n; l++) { __u32 v; body; NSTORE_ST_8(o_ + l, v); } break; \
			case 2: CAD_IVDEP for (l = 0; l < n; l++) { __u32 v; body; NSTORE_ST_16(o_ + (__u64)l * 2, v); } break; \
			case 4: CAD_IVDEP for (l = 0; l < n; l++) { __u32 v; body; NSTORE_ST_32(o_ + (__u64)l * 4, v); } break; \
			default: CAD_IVDEP for (l = 0; l < n; l++) { __u32 v; body; NSTORE_ST_64(o_ + (__u64)l * 8, v); } break; \
			}                                                  \
			pc++;                                              \
		} else {                                                   \
			__u32 *const D_ = R(r);                            \
			CAD_IVDEP for (l = 0; l < n; l++) { __u32 v; body; D_[l] = v; } \
		}                                                          \
	} while (0)
#define N_CASE_LD(name) case CAD_VM_##name: {                              \
		const __u8 *p_ = (in->a ? e->io : e->ip) + in->imm;        \
		__u32 *D = R(in->dst);                                     \
		N_LOOP(D[l] = NLOAD_##name(p_ + s_));                      \
		break;                                                     \
	}
#define N_CASE_ST(name) case CAD_VM_##name: {                              \
		__u8 *p_ = e->io + in->imm;                                \
		const __u32 *A = R(M[0]);                                  \
		N_LOOP(NSTORE_##name(p_ + s_, A[l]));                      \
		break;                                                     \
	}
#define N_CASE_OP(name) case CAD_VM_##name: {                              \
		const __u32 *A = R(M[0]), *B = R(M[1]);                    \
		(void)B;                                                   \
		N_PUT(in->dst, v = N_##name(A[l], B[l]));                  \
		break;                                                     \
	}
/* As in 64-bit lanes, a compare only the next SEL reads runs with it. */
#define N_CASE_CMP(name) case CAD_VM_##name: {                             \
		const __u32 *A = R(M[0]), *B = R(M[1]);                    \
		const struct cad_vm_insn *sel_ = &in[1];                   \
		if (sel_->code == CAD_VM_SEL && sel_->a == in->dst &&      \
		    sel_->b != in->dst && (__u32)sel_->imm != in->dst &&   \
		    !(e->after[pc + 1] & (1u << in->dst))) {              \
			const __u8 *const MS = e->rmap[pc + 1];            \
			const __u32 *X = R(MS[1]), *Y = R(MS[2]);          \
			pc++;                                              \
			if (MS[1] == M[0] && MS[2] == M[1])                \
				N_PUT(sel_->dst, const __u32 a_ = A[l];    \
				      const __u32 b_ = B[l];               \
				      v = N_##name(a_, b_) ? a_ : b_);     \
			else if (MS[1] == M[1] && MS[2] == M[0])           \
				N_PUT(sel_->dst, const __u32 a_ = A[l];    \
				      const __u32 b_ = B[l];               \
				      v = N_##name(a_, b_) ? b_ : a_);     \
			else                                               \
				N_PUT(sel_->dst, const __u32 x_ = X[l];    \
				      const __u32 y_ = Y[l];               \
				      v = N_##name(A[l], B[l]) ? x_ : y_); \
		} else {                                                   \
			N_PUT(in->dst, v = N_##name(A[l], B[l]));          \
		}                                                          \
		break;                                                     \
	}
	for (pc = 0;; pc++) {
		const struct cad_vm_insn *in = &e->code[pc];
		const __u8 *const M = e->rmap[pc];

		if (e->flags[pc] & NF_SKIP)
			continue;
		if (e->flags[pc] & NF_LDOP) {
			pc = run_ldop(e, pc, n);
			continue;
		}
		switch (in->code) {
		N_CASE_LD(LD_I8) N_CASE_LD(LD_U8) N_CASE_LD(LD_I16) N_CASE_LD(LD_U16)
		N_CASE_LD(LD_I32) N_CASE_LD(LD_U32) N_CASE_LD(LD_64)
		N_CASE_ST(ST_8) N_CASE_ST(ST_16) N_CASE_ST(ST_32) N_CASE_ST(ST_64)
		N_CASE_OP(MOV) N_CASE_OP(ADD) N_CASE_OP(SUB) N_CASE_OP(MUL)
		N_CASE_OP(AND) N_CASE_OP(OR) N_CASE_OP(XOR) N_CASE_OP(NOT) N_CASE_OP(NEG)
		N_CASE_OP(SHL) N_CASE_OP(SHR_S)
		N_CASE_OP(SEXT8) N_CASE_OP(SEXT16) N_CASE_OP(SEXT32)
		N_CASE_OP(ZEXT8) N_CASE_OP(ZEXT16) N_CASE_OP(ZEXT32)
		N_CASE_CMP(EQ) N_CASE_CMP(NE) N_CASE_CMP(LT_S) N_CASE_CMP(LE_S)
		N_CASE_CMP(LT_U) N_CASE_CMP(LE_U)
		case CAD_VM_MOVI: case CAD_VM_LDK: {
			const __u32 v_ = in->code == CAD_VM_MOVI ? (__u32)in->imm
					 : (__u32)e->consts[in->imm];
			__u32 *D = R(in->dst);

			for (l = 0; l < n; l++)
				D[l] = v_;
			break;
		}
		case CAD_VM_SPILL: {
			const __u32 *A = R(M[0]);
			__u32 *const S = (__u32 *)e->S + (__u64)in->imm * nl;

			CAD_IVDEP for (l = 0; l < n; l++)
				S[l] = A[l];
			break;
		}
		case CAD_VM_FILL: {
			const __u32 *const S = (const __u32 *)e->S + (__u64)in->imm * nl;

			N_PUT(in->dst, v = S[l]);
			break;
		}
		case CAD_VM_SEL: {
			const __u32 *C = R(M[0]), *A = R(M[1]), *B = R(M[2]);
			__u32 *D = R(in->dst);

			CAD_IVDEP for (l = 0; l < n; l++) {
				const __u32 a_ = A[l], b_ = B[l];

				D[l] = C[l] ? a_ : b_;
			}
			break;
		}
		default:  /* EXIT; nothing else passes narrow_plan */
			return;
		}
	}
#undef R
}

/* Narrow mode's lanes per register: the register memory shared by the
 * registers the code uses (nregs, maybe 0), at most NARROW_LANES, a
 * multiple of 16 lanes (64 bytes).  Each instruction is a pass over the block, whose
 * fixed cost (dispatch, the loop's mispredicted exit) the longer rows
 * spread over more elements; the rows stay within L1 (32 KiB in all). */
#define NARROW_LANES 2048u

static __u32 narrow_lanes(__u32 nregs)
{
	const __u32 nl = (__u32)(sizeof(__u64[CAD_VM_NREGS][LANES]) / 4) / (nregs ? nregs : 1);

	return nl < NARROW_LANES ? nl & ~15u : NARROW_LANES;
}

/*
 * Constants hoisted out of the blocks.  A MOVI or LDK whose register no
 * other instruction writes gives that register the same value wherever it
 * is read (the verifier proves that every read follows a write on every
 * path), so the register's row is filled once per call, for the longest
 * block, and the instruction skipped in every block (NF_SKIP; the lane by
 * lane path still runs it, harmlessly).  64-bit lanes; narrow mode has
 * consts_plan.
 */
static void hoist_consts(const struct vm_env *e, __u32 count, __u8 *flags, __u32 lanes)
{
	__u8 nw[CAD_VM_NREGS] = { 0 };
	__u16 at[CAD_VM_NREGS];
	__u32 pc, r, l;

	for (pc = 0; pc < count; pc++)
		if (writes(&e->code[pc])) {
			r = e->code[pc].dst;
			nw[r] = (__u8)(nw[r] < 2 ? nw[r] + 1 : 2);
			at[r] = (__u16)pc;
		}
	for (r = 0; r < CAD_VM_NREGS; r++) {
		const struct cad_vm_insn *in;
		__u64 v;

		if (nw[r] != 1)
			continue;
		in = &e->code[at[r]];
		if ((in->code != CAD_VM_MOVI && in->code != CAD_VM_LDK) || (flags[at[r]] & NF_SKIP))
			continue;
		v = in->code == CAD_VM_MOVI ? (__u64)(__s64)in->imm : e->consts[in->imm];
		for (l = 0; l < lanes; l++)
			e->R[r][l] = v;
		flags[at[r]] |= NF_SKIP;
	}
}

void cad_vm_run_fpu(const struct cad_prog *prog, const struct cad_user_op *op,
		    void *inout, const void *in, __u64 count, void *scratch)
{
	struct vm_scratch *w = scratch;
	struct vm_env e = {
		.code = prog->code + op->code_first,
		/* no constants section: NULL, never NULL + 0 */
		.consts = op->const_count ? prog->consts + op->const_first : NULL,
		.esz = op->elem_size,
		.io = inout,
		.ip = in,
		.R = w->R,
		.S = w->S,
		.after = w->after,
		.prod = (const __u16 (*)[2])w->prod,
		.flags = w->flags,
	};
	__u32 nregs = 0, nslots = 0;
	bool narrow;

	reads_after(e.code, op->code_count, w->after);
	narrow = narrow_plan(e.code, op->code_count, e.consts, w->after, w->flags, &nregs,
			     &nslots);
	if (narrow) {
		__u8 (*rmap)[4] = (__u8 (*)[4])w->prod;
		__u32 kval[NARROW_KROWS], nk, k, l;

		nk = consts_plan(e.code, op->code_count, e.consts, nregs, w->flags, rmap, kval);
		e.nl = narrow_lanes(nregs + nk);
		if (nslots && e.nl > (__u32)(sizeof(w->S) / 4) / nslots)
			e.nl = ((__u32)(sizeof(w->S) / 4) / nslots) & ~15u;
		e.rmap = (const __u8 (*)[4])rmap;
		for (k = 0; k < nk; k++) {
			__u32 *row = (__u32 *)e.R + (__u64)(nregs + k) * e.nl;

			for (l = 0; l < e.nl && l < count; l++)
				row[l] = kval[k];
		}
		ldop_plan(e.code, op->code_count, e.esz, w->after, w->flags);
	} else {
		dot2_plan(e.code, op->code_count, w->after, w->flags, w->prod);
		pair_plan(e.code, op->code_count, w->after, w->flags);
		if (count)
			hoist_consts(&e, op->code_count, w->flags,
				     count < LANES ? (__u32)count : LANES);
	}
	while (count) {
		const __u32 max = narrow ? e.nl : LANES;
		const __u32 n = count < max ? (__u32)count : max;

		if (narrow)
			run_block32(&e, n);
		else
			run_block(&e, n);
		e.io += (__u64)n * e.esz;
		e.ip += (__u64)n * e.esz;
		count -= n;
	}
}
