// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm_plan.c - the plans of the reduction VM interpreter, made once per
 * call from the code before its blocks run (cad_vm_run_fpu in vm.c): the
 * registers live after each instruction, the fused products of 64-bit
 * lanes (dot2_plan, pair_plan), the constants hoisted out of the blocks,
 * and narrow mode's plans (narrow_plan, ldop_plan, consts_plan).  They
 * set per-pc flags (NF_*, vm_priv.h) that the executors read.
 */
#include "vm_priv.h"

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
void cad_vm_reads_after(const struct cad_vm_insn *code, __u32 n, __u16 *after)
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
void cad_vm_dot2_plan(const struct cad_vm_insn *code, __u32 count, const __u16 *after,
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

static bool dot2_stored(const struct cad_vm_insn *code, const __u16 *after, const __u8 *flags,
			__u32 q)
{
	return (flags[q] & NF_DOT2) && code[q + 1].code == CAD_VM_ST_64 &&
	       code[q + 1].a == code[q].dst && !(after[q + 1] & (1u << code[q].dst));
}

void cad_vm_pair_plan(const struct cad_vm_insn *code, __u32 count, const __u16 *after,
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

#define W_NONE 0     /* narrow_data, narrow_arith: no register written */
#define W_JUMP 254   /* narrow_data: a jump */
#define W_ARITH 255  /* narrow_data: an instruction for narrow_arith */

/* Loads, stores, spills, fills, constants and jumps in the narrow plan:
 * the width of the result, W_NONE or W_JUMP; W_ARITH for any other
 * instruction.  wa: the width of operand a; ws: of each slot. */
static unsigned int narrow_data(const struct cad_vm_insn *in, const __u64 *consts,
				unsigned int wa, __u8 *ws, __u32 *nslots, bool *narrow)
{
	switch (in->code) {
	case CAD_VM_EXIT:
		return W_NONE;
	case CAD_VM_JA: case CAD_VM_JZ: case CAD_VM_JNZ:
		return W_JUMP;
	case CAD_VM_LD_I8:  return 8;
	case CAD_VM_LD_U8:  return 9;
	case CAD_VM_LD_I16: return 16;
	case CAD_VM_LD_U16: return 17;
	case CAD_VM_LD_I32: return 32;
	case CAD_VM_LD_U32: case CAD_VM_LD_64: case CAD_VM_ZEXT32:
		return W_LOW;
	case CAD_VM_ST_8: case CAD_VM_ST_16: case CAD_VM_ST_32:
		return W_NONE;
	case CAD_VM_ST_64:
		*narrow &= wa <= 32;
		return W_NONE;
	case CAD_VM_SPILL:
		ws[in->imm] = (__u8)wa;
		*nslots = wmax(*nslots, (__u32)in->imm + 1);
		return W_NONE;
	case CAD_VM_FILL:
		return ws[in->imm];
	case CAD_VM_MOVI:
		return width_of(in->imm);
	case CAD_VM_LDK:
		return wlow(width_of((__s64)consts[in->imm]));
	default:
		return W_ARITH;
	}
}

/* The width of the result of the operation at pc in the narrow plan, of
 * operands of widths wa and wb (w: of each register).  *narrow cleared
 * when it cannot run on 32-bit lanes; flags[pc]: NF_SKIP for an
 * extension that changes nothing. */
static unsigned int narrow_arith(const struct cad_vm_insn *code, __u32 count, __u32 pc,
				 const __u16 *after, const __u8 *w, unsigned int wa,
				 unsigned int wb, __u8 *flags, bool *narrow)
{
	const struct cad_vm_insn *in = &code[pc];

	switch (in->code) {
	case CAD_VM_MOV: case CAD_VM_NOT:
		return wa;
	case CAD_VM_NEG:
		return wlow(wa + 1);
	case CAD_VM_ADD: case CAD_VM_SUB:
		return wlow(wmax(wa, wb) + 1);
	case CAD_VM_MUL:
		return wlow(wa + wb);
	case CAD_VM_AND: case CAD_VM_OR: case CAD_VM_XOR:
		return wlow(wmax(wa, wb));
	case CAD_VM_SHL:
		return W_LOW;
	case CAD_VM_SHR_S:
		*narrow &= wa <= 32;
		return wa;
	case CAD_VM_SEXT8: case CAD_VM_SEXT16: case CAD_VM_SEXT32: {
		const unsigned int k = in->code == CAD_VM_SEXT8 ? 8
				     : in->code == CAD_VM_SEXT16 ? 16 : 32;

		if (wa <= k && in->dst == in->a)
			flags[pc] |= NF_SKIP;
		/* extending what only a store of at most k bits reads next */
		if (in->dst == in->a && pc + 1 < count &&
		    cad_vm_opcode_format(code[pc + 1].code) == CAD_VMF_ST &&
		    code[pc + 1].a == in->dst &&
		    cad_vm_opcode_width(code[pc + 1].code) * 8 <= k &&
		    !(after[pc + 1] & (1u << in->dst)))
			flags[pc] |= NF_SKIP;
		return wa <= k ? wa : k;
	}
	case CAD_VM_ZEXT8:  return 9;
	case CAD_VM_ZEXT16: return 17;
	case CAD_VM_EQ: case CAD_VM_NE: case CAD_VM_LT_S: case CAD_VM_LE_S:
	case CAD_VM_LT_U: case CAD_VM_LE_U:
		*narrow &= wa <= 32 && wb <= 32;
		return 2;
	case CAD_VM_SEL:
		*narrow &= wa <= 32;
		return wmax(wb, w[in->imm]);
	default:
		*narrow = false;
		return 64;
	}
}

/* The narrow plan of the code (flags per instruction); false: run wide.
 * after: registers read after each pc, for the SEXT-before-store skip;
 * *nregs: the registers written are r0 .. r(*nregs - 1) at most;
 * *nslots: the slots spilled to are s0 .. s(*nslots - 1) at most.  A slot
 * has the width of the value spilled to it. */
bool cad_vm_narrow_plan(const struct cad_vm_insn *code, __u32 count, const __u64 *consts,
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
		unsigned int wa = 64, wb = 64, wr;

		flags[pc] = 0;
		if (fmt == CAD_VMF_UN || fmt == CAD_VMF_BIN || fmt == CAD_VMF_CMP ||
		    fmt == CAD_VMF_ST || fmt == CAD_VMF_SEL || fmt == CAD_VMF_JCOND ||
		    fmt == CAD_VMF_SPILL)
			wa = w[in->a];
		if (fmt == CAD_VMF_BIN || fmt == CAD_VMF_CMP || fmt == CAD_VMF_SEL)
			wb = w[in->b];
		wr = narrow_data(in, consts, wa, ws, nslots, &narrow);
		if (wr == W_ARITH)
			wr = narrow_arith(code, count, pc, after, w, wa, wb, flags, &narrow);
		if (wr == W_JUMP) {
			/* widths would have to merge at the targets: run wide, as written */
			cad_memset(flags, 0, count);
			return false;
		}
		if (wr == W_NONE)
			continue;
		w[in->dst] = (__u8)wr;
		*nregs = wmax(*nregs, in->dst + 1u);
	}
	return narrow;
}


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

void cad_vm_ldop_plan(const struct cad_vm_insn *code, __u32 count, __u32 esz, const __u16 *after,
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

__u32 cad_vm_consts_plan(const struct cad_vm_insn *code, __u32 count, const __u64 *consts,
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

/*
 * Constants hoisted out of the blocks.  A MOVI or LDK whose register no
 * other instruction writes gives that register the same value wherever it
 * is read (the verifier proves that every read follows a write on every
 * path), so the register's row is filled once per call, for the longest
 * block, and the instruction skipped in every block (NF_SKIP; the lane by
 * lane path still runs it, harmlessly).  64-bit lanes; narrow mode has
 * consts_plan.
 */
void cad_vm_hoist_consts(const struct vm_env *e, __u32 count, __u8 *flags, __u32 lanes)
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
