// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm_narrow.c - narrow mode of the reduction VM interpreter: integer code
 * whose values all fit in 32 bits (narrow_plan, vm_plan.c) runs on rows
 * of 32-bit lanes, in longer blocks than the 64-bit lanes of vm.c.
 * Compiled with floating point enabled, as vm.c: in the kernel, call only
 * between cad_fpu_begin() and cad_fpu_end().
 */
#include "vm_priv.h"

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

/* The forms of narrow instructions in run_block32, which defines R0, nl,
 * esz, n, pc, l, in and M (the rows of its operands). */
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
/* n (1..e->nl) elements of narrow code, from pc 0 to EXIT: the registers
 * are rows of e->nl 32-bit lanes in e->R, the slots such rows in e->S, no
 * views (every load copies).
 * Not inlined into its caller, whose frame (the plans) would then add to
 * this one's on the kernel stack. */
__attribute__((__noinline__)) void cad_vm_run_block32(const struct vm_env *e, __u32 n)
{
	__u32 *const R0 = (__u32 *)e->R;
	const __u32 esz = e->esz, nl = e->nl;
	__u32 pc, l;

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

__u32 cad_vm_narrow_lanes(__u32 nregs)
{
	const __u32 nl = (__u32)(sizeof(__u64[CAD_VM_NREGS][LANES]) / 4) / (nregs ? nregs : 1);

	return nl < NARROW_LANES ? nl & ~15u : NARROW_LANES;
}
