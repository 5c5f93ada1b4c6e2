/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vm_priv.h - what the files of the reduction VM interpreter share: the
 * per-pc flags of the plans, the working memory of a call, the
 * interpreter's environment, and the functions one file calls in another.
 *
 *   vm.c        the driver (cad_vm_run_fpu) and the 64-bit block and lane
 *               executors, with the semantics of vm_sem.h;
 *   vm_plan.c   the plans made once per call from the code (liveness,
 *               dot2_plan, pair_plan, narrow_plan, ldop_plan, consts_plan,
 *               hoist_consts);
 *   vm_narrow.c the 32-bit lanes of narrow mode (run_block32).
 *
 * Every function of a block's hot loops stays static in the file that
 * runs it; across files go only the calls made once per call or per block.
 */
#ifndef CAD_VM_PRIV_H
#define CAD_VM_PRIV_H

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

#define NO_PC 0xffffu

/* Narrow mode's constant rows at most (consts_plan). */
#define NARROW_KROWS 8

/* The second of the pair whose first NF_DOT2 is at q1 (pair_plan): the
 * next instruction run after the first's store. */
static inline __u32 pair_second(const __u8 *flags, __u32 q1)
{
	__u32 q = q1 + 2;

	while (flags[q] & NF_SKIP)
		q++;
	return q;
}

/* vm_plan.c */
void cad_vm_reads_after(const struct cad_vm_insn *code, __u32 n, __u16 *after);
void cad_vm_dot2_plan(const struct cad_vm_insn *code, __u32 count, const __u16 *after,
		      __u8 *flags, __u16 (*prod)[2]);
void cad_vm_pair_plan(const struct cad_vm_insn *code, __u32 count, const __u16 *after,
		      __u8 *flags);
bool cad_vm_narrow_plan(const struct cad_vm_insn *code, __u32 count, const __u64 *consts,
			const __u16 *after, __u8 *flags, __u32 *nregs, __u32 *nslots);
void cad_vm_ldop_plan(const struct cad_vm_insn *code, __u32 count, __u32 esz,
		      const __u16 *after, __u8 *flags);
__u32 cad_vm_consts_plan(const struct cad_vm_insn *code, __u32 count, const __u64 *consts,
			 __u32 nregs, __u8 *flags, __u8 (*rmap)[4], __u32 *kval);
void cad_vm_hoist_consts(const struct vm_env *e, __u32 count, __u8 *flags, __u32 lanes);

/* vm_narrow.c */
__u32 cad_vm_narrow_lanes(__u32 nregs);
void cad_vm_run_block32(const struct vm_env *e, __u32 n);

#endif /* CAD_VM_PRIV_H */
