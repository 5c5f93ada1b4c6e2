// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm_verify.c - verification of a user-defined operator's VM code.
 *
 * Accepts code in which: every opcode is known and its unused fields are
 * 0; registers exist; loads and stores stay inside one element; constants
 * exist; every jump goes forward and lands inside the code; every
 * instruction is reachable; no register or spill slot is read before it
 * is written on every path to the read; the last instruction is EXIT.
 * Because jumps only go forward, one pass in program order sees every
 * predecessor of an instruction before the instruction itself, so the
 * "defined registers and slots" dataflow is exact in one pass and every
 * element terminates in at most code_count steps.
 */
#include "verify_priv.h"

#define REACHED 0x10000u   /* per-instruction state: reachable ... */
#define DEFMASK 0x0ffffu   /* ... and the registers defined on every path */

/* Per instruction: the registers (with REACHED) and the spill slots
 * defined on every path to it. */
struct vm_state {
	__u64 slots;
	__u32 regs;
};

static void flow_to(struct vm_state *state, __u32 target, __u32 defined, __u64 slots)
{
	if (state[target].regs & REACHED) {
		state[target].regs &= REACHED | defined;
		state[target].slots &= slots;
	} else {
		state[target].regs = REACHED | defined;
		state[target].slots = slots;
	}
}

static int check_reg(struct vctx *v, const char *field, unsigned int r)
{
	if (r >= CAD_VM_NREGS)
		return cad_vreject(v, -EINVAL, "%s register r%u does not exist (r0..r%u)",
				   field, r, CAD_VM_NREGS - 1);
	return 0;
}

static int check_read(struct vctx *v, __u32 defined, unsigned int r)
{
	int err = check_reg(v, "source", r);

	if (err)
		return err;
	if (!(defined & (1u << r)))
		return cad_vreject(v, -EINVAL, "reads r%u before it is written", r);
	return 0;
}

static int check_slot(struct vctx *v, __s32 s)
{
	if (s < 0 || s >= CAD_VM_NSLOTS)
		return cad_vreject(v, -EINVAL, "spill slot s%d does not exist (s0..s%u)", s,
				   CAD_VM_NSLOTS - 1);
	return 0;
}

static int check_zero(struct vctx *v, const struct cad_vm_insn *in, bool dst, bool a,
		      bool b, bool imm)
{
	if (dst && in->dst)
		return cad_vreject(v, -EINVAL, "unused field dst is not 0");
	if (a && in->a)
		return cad_vreject(v, -EINVAL, "unused field a is not 0");
	if (b && in->b)
		return cad_vreject(v, -EINVAL, "unused field b is not 0");
	if (imm && in->imm)
		return cad_vreject(v, -EINVAL, "unused field imm is not 0");
	return 0;
}

static int check_jump(struct vctx *v, __u32 pc, __s32 off, __u32 n, __u32 *target)
{
	__u64 t;

	if (off < 0)
		return cad_vreject(v, -EINVAL, "backward jump (offset %d): only forward jumps", off);
	t = (__u64)pc + 1 + (__u64)off;
	if (t >= n)
		return cad_vreject(v, -EINVAL, "jump to %llu is past the last instruction %u",
				   (unsigned long long)t, n - 1);
	*target = (__u32)t;
	return 0;
}

static int check_access(struct vctx *v, const char *what, __s32 off, unsigned int width,
			__u32 elem)
{
	if (off < 0 || (__u64)off + width > elem)
		return cad_vreject(v, -EINVAL,
				   "%s of %u bytes at offset %d is outside the %u-byte element",
				   what, width, off, elem);
	return 0;
}

/* EXIT, JA, JCOND at pc of n instructions: a jump flows to its target. */
static int check_control(struct vctx *v, const struct cad_vm_insn *in, __u32 pc, __u32 n,
			 struct vm_state *state, __u32 defined, __u64 slots)
{
	__u32 target = 0;
	int err;

	if (cad_vm_opcode_format(in->code) == CAD_VMF_EXIT)
		return check_zero(v, in, true, true, true, true);
	if (cad_vm_opcode_format(in->code) == CAD_VMF_JA) {
		err = check_zero(v, in, true, true, true, false);
	} else {
		err = check_zero(v, in, true, false, true, false);
		if (!err)
			err = check_read(v, defined, in->a);
	}
	if (!err)
		err = check_jump(v, pc, in->imm, n, &target);
	if (!err)
		flow_to(state, target, defined, slots);
	return err;
}

/* LD, ST, LDK, SPILL, FILL: the element's bytes, the constants, the
 * slots (*slots: those written on every path to here, and by a SPILL). */
static int check_memory(struct vctx *v, const struct cad_user_op *op, const struct cad_vm_insn *in,
			__u32 defined, __u64 *slots)
{
	const unsigned int fmt = cad_vm_opcode_format(in->code);
	int err;

	if (fmt == CAD_VMF_ST || fmt == CAD_VMF_SPILL) {
		err = check_zero(v, in, true, false, true, false);
		if (!err)
			err = check_read(v, defined, in->a);
	} else {
		err = check_zero(v, in, false, fmt != CAD_VMF_LD, true, false);
		if (!err)
			err = check_reg(v, "destination", in->dst);
	}
	if (err)
		return err;
	switch (fmt) {
	case CAD_VMF_LD:
		if (in->a > 1)
			return cad_vreject(v, -EINVAL, "load from element %u: 0 is in, 1 is inout", in->a);
		return check_access(v, "load", in->imm, cad_vm_opcode_width(in->code), op->elem_size);
	case CAD_VMF_ST:
		return check_access(v, "store", in->imm, cad_vm_opcode_width(in->code),
				    op->elem_size);
	case CAD_VMF_LDK:
		if (in->imm < 0 || (__u32)in->imm >= op->const_count)
			return cad_vreject(v, -EINVAL, "constant %d does not exist (%u constants)",
					   in->imm, op->const_count);
		return 0;
	case CAD_VMF_SPILL:
		err = check_slot(v, in->imm);
		if (!err)
			*slots |= 1ull << in->imm;
		return err;
	default:  /* FILL */
		err = check_slot(v, in->imm);
		if (!err && !(*slots & (1ull << in->imm)))
			err = cad_vreject(v, -EINVAL, "reads slot s%d before it is written",
					  in->imm);
		return err;
	}
}

/* MOVI, UN, BIN, CMP, SEL: a destination and the registers read. */
static int check_compute(struct vctx *v, const struct cad_vm_insn *in, __u32 defined)
{
	const unsigned int fmt = cad_vm_opcode_format(in->code);
	int err = 0;

	if (fmt == CAD_VMF_MOVI)
		err = check_zero(v, in, false, true, true, false);
	else if (fmt == CAD_VMF_UN)
		err = check_zero(v, in, false, false, true, true);
	else if (fmt != CAD_VMF_SEL)
		err = check_zero(v, in, false, false, false, true);
	if (!err)
		err = check_reg(v, "destination", in->dst);
	if (!err && fmt != CAD_VMF_MOVI)
		err = check_read(v, defined, in->a);
	if (!err && (fmt == CAD_VMF_BIN || fmt == CAD_VMF_CMP || fmt == CAD_VMF_SEL))
		err = check_read(v, defined, in->b);
	if (err || fmt != CAD_VMF_SEL)
		return err;
	if (in->imm < 0 || in->imm >= CAD_VM_NREGS)
		return cad_vreject(v, -EINVAL, "source register r%d does not exist (r0..r%u)",
				   in->imm, CAD_VM_NREGS - 1);
	return check_read(v, defined, (unsigned int)in->imm);
}

static int check_insn(struct vctx *v, const struct cad_user_op *op, const struct cad_vm_insn *in,
		      __u32 pc, struct vm_state *state)
{
	const __u32 n = op->code_count;
	const unsigned int fmt = cad_vm_opcode_format(in->code);
	__u32 defined = state[pc].regs & DEFMASK;
	__u64 slots = state[pc].slots;
	int err;

	switch (fmt) {
	case CAD_VMF_EXIT:
	case CAD_VMF_JA:
	case CAD_VMF_JCOND:
		err = check_control(v, in, pc, n, state, defined, slots);
		break;
	case CAD_VMF_LD:
	case CAD_VMF_ST:
	case CAD_VMF_LDK:
	case CAD_VMF_SPILL:
	case CAD_VMF_FILL:
		err = check_memory(v, op, in, defined, &slots);
		break;
	case CAD_VMF_MOVI:
	case CAD_VMF_UN:
	case CAD_VMF_BIN:
	case CAD_VMF_CMP:
	case CAD_VMF_SEL:
		err = check_compute(v, in, defined);
		break;
	case CAD_VMF_INVALID:
	default:
		return cad_vreject(v, -EINVAL, "unknown opcode 0x%02x", in->code);
	}
	if (err)
		return err;
	if (fmt != CAD_VMF_ST && fmt != CAD_VMF_SPILL && fmt != CAD_VMF_EXIT && fmt != CAD_VMF_JA &&
	    fmt != CAD_VMF_JCOND)
		defined |= 1u << in->dst;
	if (fmt != CAD_VMF_EXIT && fmt != CAD_VMF_JA) {
		if (pc + 1 == n)
			return cad_vreject(v, -EINVAL, "falls off the end: the last instruction must be exit");
		flow_to(state, pc + 1, defined, slots);
	}
	return 0;
}

int cad_vm_verify_op(struct vctx *v, const struct cad_user_op *op)
{
	const struct cad_vm_insn *code = v->p->code + op->code_first;
	struct vm_state *state;
	__u32 pc;
	int err = 0;

	state = cad_zalloc((size_t)op->code_count * sizeof(*state));
	if (!state)
		return cad_vreject(v, -ENOMEM, "out of memory verifying %u instructions",
				   op->code_count);
	state[0].regs = REACHED;
	for (pc = 0; pc < op->code_count && !err; pc++) {
		v->insn = pc;
		if (!(state[pc].regs & REACHED))
			err = cad_vreject(v, -EINVAL, "unreachable instruction");
		else
			err = check_insn(v, op, &code[pc], pc, state);
	}
	cad_free(state);
	return err;
}
