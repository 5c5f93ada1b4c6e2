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
 * elements and the per-instruction loops vectorise.  Registers are lane
 * arrays in the caller's scratch (no large stack frame, kernel-safe).  A
 * conditional jump that goes the same way for every lane of the block
 * stays in block mode; a divergent one finishes the block lane by lane
 * from that jump.  Both modes expand the same per-opcode semantics below.
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

typedef __s8  s8_u  CAD_UNALIGNED;
typedef __s16 s16_u CAD_UNALIGNED;
typedef __s32 s32_u CAD_UNALIGNED;
typedef __u8  u8_u  CAD_UNALIGNED;
typedef __u16 u16_u CAD_UNALIGNED;
typedef __u32 u32_u CAD_UNALIGNED;
typedef __u64 u64_u CAD_UNALIGNED;

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

/* C's fmin/fmax (a NaN operand yields the other), and the first operand
 * where C leaves the result open: equal operands (+0 and -0), two NaNs. */
static inline __u64 fmin64(__u64 a, __u64 b)
{
	double x = f64(a), y = f64(b);

	return x <= y ? a : x > y ? b : y != y ? a : b;
}

static inline __u64 fmax64(__u64 a, __u64 b)
{
	double x = f64(a), y = f64(b);

	return x >= y ? a : x < y ? b : y != y ? a : b;
}

static inline __u64 fmin32(__u64 a, __u64 b)
{
	float x = f32(a), y = f32(b);

	return (__u32)(x <= y ? a : x > y ? b : y != y ? a : b);
}

static inline __u64 fmax32(__u64 a, __u64 b)
{
	float x = f32(a), y = f32(b);

	return (__u32)(x >= y ? a : x < y ? b : y != y ? a : b);
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
#define SEM_EQ(a, b)     ((__u64)((a) == (b)))
#define SEM_NE(a, b)     ((__u64)((a) != (b)))
#define SEM_LT_S(a, b)   ((__u64)((__s64)(a) < (__s64)(b)))
#define SEM_LE_S(a, b)   ((__u64)((__s64)(a) <= (__s64)(b)))
#define SEM_LT_U(a, b)   ((__u64)((a) < (b)))
#define SEM_LE_U(a, b)   ((__u64)((a) <= (b)))

#define SEM_FADD(a, b)   bits64(f64(a) + f64(b))
#define SEM_FSUB(a, b)   bits64(f64(a) - f64(b))
#define SEM_FMUL(a, b)   bits64(f64(a) * f64(b))
#define SEM_FDIV(a, b)   bits64(f64(a) / f64(b))
#define SEM_FMIN(a, b)   fmin64(a, b)
#define SEM_FMAX(a, b)   fmax64(a, b)
#define SEM_FNEG(a, b)   ((a) ^ SIGN64)
#define SEM_FABS(a, b)   ((a) & ~SIGN64)
#define SEM_FSQRT(a, b)  bits64(__builtin_sqrt(f64(a)))
#define SEM_FEQ(a, b)    ((__u64)(f64(a) == f64(b)))
#define SEM_FNE(a, b)    ((__u64)(f64(a) != f64(b)))
#define SEM_FLT(a, b)    ((__u64)(f64(a) < f64(b)))
#define SEM_FLE(a, b)    ((__u64)(f64(a) <= f64(b)))

#define SEM_SADD(a, b)   bits32(f32(a) + f32(b))
#define SEM_SSUB(a, b)   bits32(f32(a) - f32(b))
#define SEM_SMUL(a, b)   bits32(f32(a) * f32(b))
#define SEM_SDIV(a, b)   bits32(f32(a) / f32(b))
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

struct vm_env {
	const struct cad_vm_insn *code;
	const __u64 *consts;
	__u32 esz;          /* element size */
	__u8 *io;           /* first inout element of the block */
	const __u8 *ip;     /* first in element of the block */
	__u64 (*R)[LANES];  /* register lanes */
	const __u16 *after; /* per pc: registers read after pc */
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
		return 1u << in->a;
	default:
		return 0;
	}
}

/* after[pc]: the registers that an instruction after pc may read.  Jumps
 * only go forward, so whatever runs after pc has a larger index: a sound
 * over-estimate of what is live after pc, computed once per dispatch. */
static void reads_after(const struct cad_vm_insn *code, __u32 n, __u16 *after)
{
	__u32 mask = 0;

	while (n--) {
		after[n] = (__u16)mask;
		mask |= reads(&code[n]);
	}
}

/* Copy the views in mask into their registers' own lanes. */
static void materialise(__u64 (*R)[LANES], const u64_u **Rp, __u32 *views, __u32 mask, __u32 n)
{
	__u32 r, l;

	if (!(*views & mask))
		return;
	for (r = 0; r < CAD_VM_NREGS; r++) {
		if (!(*views & mask & (1u << r)))
			continue;
		for (l = 0; l < n; l++)
			R[r][l] = Rp[r][l];
		Rp[r] = R[r];
		*views &= ~(1u << r);
	}
}

/*
 * n (1..LANES) elements from pc 0 to EXIT.
 *
 * Registers are read through Rp: normally their own lanes in R, but a
 * load of a whole 8-byte element from a contiguous array copies nothing
 * and makes the register a view of the element memory.  Results are
 * always written to the register's own lanes.  A view is materialised
 * before the memory under it may change: before a store into inout (and
 * into in, when the node reduces a range into itself) and before the
 * switch to lane-by-lane execution, which reads R only.
 */
static void run_block(const struct vm_env *e, __u32 n)
{
	__u64 (*R)[LANES] = e->R;
	const __u32 esz = e->esz;
	const u64_u *Rp[CAD_VM_NREGS];
	__u32 io_views = 0, in_views = 0, pc, l, nz, r;

	for (r = 0; r < CAD_VM_NREGS; r++)
		Rp[r] = R[r];

/* Strided element access; a separate loop when elements are exactly w
 * bytes, so that the compiler sees a constant stride and vectorises. */
#define B_LOOP(w, body) do {                                               \
		if (esz == (w)) { CAD_IVDEP for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * (w); body; } } \
		else { for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * esz; body; } } \
	} while (0)
/* The destination's own lanes; it stops being a view. */
#define B_DEST(D) __u64 *D = R[in->dst]; \
		Rp[in->dst] = D; io_views &= ~(1u << in->dst); in_views &= ~(1u << in->dst)
/* The same, except that when the next instruction stores this result as a
 * whole 8-byte element of a contiguous inout and nothing reads it after,
 * the result goes straight to inout and the store is skipped. */
#define B_DEST_FUSED(D) u64_u *D = R[in->dst];                             \
		if (esz == 8 && in[1].code == CAD_VM_ST_64 && in[1].a == in->dst && \
		    !(e->after[pc + 1] & (1u << in->dst))) {               \
			before_store(pc + 1);                              \
			D = (u64_u *)e->io;                                \
			pc++;                                              \
		}                                                          \
		Rp[in->dst] = R[in->dst];                                  \
		io_views &= ~(1u << in->dst); in_views &= ~(1u << in->dst)
#define B_EXIT(name, w)   return
#define B_JA(name, w)     pc += in->imm
#define B_JCOND(name, w)  do {                                             \
		const u64_u *A = Rp[in->a];                                \
		for (nz = 0, l = 0; l < n; l++)                            \
			nz += A[l] != 0;                                   \
		if (nz != 0 && nz != n) {                                  \
			materialise(R, Rp, &io_views, ~0u, n);             \
			materialise(R, Rp, &in_views, ~0u, n);             \
			for (l = 0; l < n; l++)                            \
				run_lane(e, pc, l);                        \
			return;                                            \
		}                                                          \
		if ((nz == 0) == (CAD_VM_##name == CAD_VM_JZ))             \
			pc += in->imm;                                     \
	} while (0)
#define B_LD(name, w)     do {                                             \
		const __u8 *p_ = (in->a ? e->io : e->ip) + in->imm;        \
		if ((w) == 8 && esz == 8) {                                \
			B_DEST(D_);                                        \
			(void)D_;                                          \
			Rp[in->dst] = (const u64_u *)p_;                   \
			if (in->a)                                         \
				io_views |= 1u << in->dst;                 \
			else                                               \
				in_views |= 1u << in->dst;                 \
		} else {                                                   \
			B_DEST(D);                                         \
			B_LOOP(w, D[l] = LOAD_##name(p_ + s_));            \
		}                                                          \
	} while (0)
/* Before the store at pc: keep the views it would overwrite that are
 * still read afterwards (the others are simply dropped). */
#define before_store(pc_) do {                                             \
		const __u32 live_ = e->after[pc_];                         \
		materialise(R, Rp, &io_views, live_, n);                   \
		if (e->ip == e->io)                                        \
			materialise(R, Rp, &in_views, live_, n);           \
		io_views &= live_;                                         \
		if (e->ip == e->io)                                        \
			in_views &= live_;                                 \
	} while (0)
#define B_ST(name, w)     do {                                             \
		__u8 *p_ = e->io + in->imm;                                \
		const u64_u *A;                                            \
		/* the value stored must not be a view of what it overwrites */ \
		materialise(R, Rp, &io_views, 1u << in->a, n);             \
		if (e->ip == e->io)                                        \
			materialise(R, Rp, &in_views, 1u << in->a, n);     \
		before_store(pc);                                          \
		A = Rp[in->a];                                             \
		B_LOOP(w, STORE_##name(p_ + s_, A[l]));                    \
	} while (0)
#define B_MOVI(name, w)   do {                                             \
		const __u64 v_ = (__u64)(__s64)in->imm;                    \
		B_DEST(D);                                                 \
		for (l = 0; l < n; l++)                                    \
			D[l] = v_;                                         \
	} while (0)
#define B_LDK(name, w)    do {                                             \
		const __u64 v_ = e->consts[in->imm];                       \
		B_DEST(D);                                                 \
		for (l = 0; l < n; l++)                                    \
			D[l] = v_;                                         \
	} while (0)
#define B_UN(name, w)     do {                                             \
		const u64_u *A = Rp[in->a];                                \
		B_DEST_FUSED(D);                                           \
		CAD_IVDEP for (l = 0; l < n; l++)                          \
			D[l] = SEM_##name(A[l], 0);                        \
	} while (0)
#define B_BIN(name, w)    do {                                             \
		const u64_u *A = Rp[in->a], *B = Rp[in->b];                \
		B_DEST_FUSED(D);                                           \
		CAD_IVDEP for (l = 0; l < n; l++)                          \
			D[l] = SEM_##name(A[l], B[l]);                     \
	} while (0)
/* A compare whose result only the next SEL reads (as its condition) runs
 * with it as one loop, t = a op b; d = t ? x : y, which vectorises as a
 * compare and a blend (a SEL on its own does not: SSE2 has no 64-bit
 * compare).  The compare's register is then dead and never written. */
#define B_CMP(name, w)    do {                                             \
		const u64_u *A = Rp[in->a], *B = Rp[in->b];                \
		const struct cad_vm_insn *sel_ = &in[1];                   \
		if (sel_->code == CAD_VM_SEL && sel_->a == in->dst &&      \
		    sel_->b != in->dst && (__u32)sel_->imm != in->dst &&   \
		    !(e->after[pc + 1] & (1u << in->dst))) {              \
			const u64_u *X = Rp[sel_->b], *Y = Rp[sel_->imm];  \
			{ B_DEST(T_); (void)T_; }                          \
			pc++;                                              \
			in = sel_;                                         \
			{                                                  \
				B_DEST_FUSED(D);                           \
				CAD_IVDEP for (l = 0; l < n; l++) {        \
					const __u64 x_ = X[l], y_ = Y[l];  \
					D[l] = SEM_##name(A[l], B[l]) ? x_ : y_; \
				}                                          \
			}                                                  \
		} else {                                                   \
			B_DEST_FUSED(D);                                   \
			CAD_IVDEP for (l = 0; l < n; l++)                  \
				D[l] = SEM_##name(A[l], B[l]);             \
		}                                                          \
	} while (0)
#define B_SEL(name, w)    do {                                             \
		const u64_u *C = Rp[in->a], *A = Rp[in->b], *B = Rp[in->imm]; \
		B_DEST_FUSED(D);                                           \
		CAD_IVDEP for (l = 0; l < n; l++) {                        \
			const __u64 a_ = A[l], b_ = B[l];                  \
			D[l] = C[l] ? a_ : b_;                             \
		}                                                          \
	} while (0)
	for (pc = 0;; pc++) {
		const struct cad_vm_insn *in = &e->code[pc];

		switch (in->code) {
#define B_CASE(name, value, fmt, width, str) \
		case CAD_VM_##name: B_##fmt(name, width); break;
		CAD_VM_OPCODES(B_CASE)
#undef B_CASE
		default:
			return;  /* unreachable for verified code */
		}
	}
}

void cad_vm_run_fpu(const struct cad_prog *prog, const struct cad_user_op *op,
		    void *inout, const void *in, __u64 count, void *scratch)
{
	struct vm_env e = {
		.code = prog->code + op->code_first,
		/* no constants section: NULL, never NULL + 0 */
		.consts = op->const_count ? prog->consts + op->const_first : NULL,
		.esz = op->elem_size,
		.io = inout,
		.ip = in,
		.R = scratch,
		.after = (const __u16 *)((__u8 *)scratch + sizeof(__u64[CAD_VM_NREGS][LANES])),
	};
	const __u64 block = (__u64)LANES * op->elem_size;

	reads_after(e.code, op->code_count, (__u16 *)e.after);
	while (count) {
		__u32 n = count < LANES ? (__u32)count : LANES;

		run_block(&e, n);
		e.io += block;
		e.ip += block;
		count -= n;
	}
}
