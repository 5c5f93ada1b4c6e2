// SPDX-License-Identifier: GPL-2.0 OR MIT
/* vm_progs.c - the hand-written operators of vm_progs.h. */
#include "vm_progs.h"

#define I(c, d_, a_, b_, k_) { .code = CAD_VM_##c, .dst = (d_), .a = (a_), .b = (b_), .imm = (k_) }
#define IN 0
#define IO 1

static const struct cad_vm_insn sum_f64[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0), I(FADD, 2, 1, 0, 0),
	I(ST_64, 0, 2, 0, 0), I(EXIT, 0, 0, 0, 0),
};

static const struct cad_vm_insn max_f64[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0),
	I(FLT, 2, 0, 1, 0),             /* in < io, i.e. io > in */
	I(SEL, 3, 2, 1, 0),             /* ? io : in */
	I(ST_64, 0, 3, 0, 0), I(EXIT, 0, 0, 0, 0),
};

/*
 * The operators on structs and small integers are written as the operator
 * compiler emits them: branch-free (if/else as compare + SEL, && as AND of
 * 0/1), each field loaded once before its first use, a store right after
 * the value it stores, small integers kept extended (SEXT after arithmetic
 * and before a narrowing store).
 */

/* o.re = a.re b.re - a.im b.im; o.im = a.re b.im + a.im b.re (a = in, b =
 * io): o.re is stored while b.re, loaded before, is still to be read. */
static const struct cad_vm_insn cmul[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0), I(FMUL, 2, 0, 1, 0),
	I(LD_64, 3, IN, 0, 8), I(LD_64, 4, IO, 0, 8), I(FMUL, 5, 3, 4, 0),
	I(FSUB, 6, 2, 5, 0), I(ST_64, 0, 6, 0, 0),                        /* re */
	I(FMUL, 7, 0, 4, 0), I(FMUL, 8, 3, 1, 0), I(FADD, 9, 7, 8, 0),
	I(ST_64, 0, 9, 0, 8),                                              /* im */
	I(EXIT, 0, 0, 0, 0),
};

/* if (a.v > b.v) { b.v = a.v; b.i = a.i; }
 * else if (a.v == b.v && a.i < b.i) b.i = a.i; */
static const struct cad_vm_insn maxloc[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0),
	I(FLT, 2, 1, 0, 0),                               /* a.v > b.v */
	I(SEL, 3, 2, 0, 1), I(ST_64, 0, 3, 0, 0),          /* b.v */
	I(FEQ, 4, 0, 1, 0),
	I(LD_I32, 5, IN, 0, 8), I(LD_I32, 6, IO, 0, 8),
	I(LT_S, 7, 5, 6, 0), I(AND, 8, 4, 7, 0),           /* tie, smaller index */
	I(SEL, 9, 8, 5, 6), I(SEL, 10, 2, 5, 9),
	I(ST_32, 0, 10, 0, 8),                             /* b.i */
	I(EXIT, 0, 0, 0, 0),
};

/* int s = a + b; b = (short)(s > 32767 ? 32767 : s < -32768 ? -32768 : s) */
static const struct cad_vm_insn satadd_i16[] = {
	I(LD_I16, 0, IN, 0, 0), I(LD_I16, 1, IO, 0, 0),
	I(ADD, 2, 0, 1, 0), I(SEXT32, 2, 2, 0, 0),
	I(MOVI, 3, 0, 0, 32767), I(LT_S, 4, 3, 2, 0), I(SEL, 2, 4, 3, 2),
	I(MOVI, 5, 0, 0, -32768), I(LT_S, 6, 2, 5, 0), I(SEL, 2, 6, 5, 2),
	I(SEXT16, 2, 2, 0, 0), I(ST_16, 0, 2, 0, 0),
	I(EXIT, 0, 0, 0, 0),
};

static const struct cad_vm_insn vec3_sum[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0), I(FADD, 2, 1, 0, 0), I(ST_64, 0, 2, 0, 0),
	I(LD_64, 3, IN, 0, 8), I(LD_64, 4, IO, 0, 8), I(FADD, 5, 4, 3, 0), I(ST_64, 0, 5, 0, 8),
	I(LD_64, 6, IN, 0, 16), I(LD_64, 7, IO, 0, 16), I(FADD, 8, 7, 6, 0), I(ST_64, 0, 8, 0, 16),
	I(EXIT, 0, 0, 0, 0),
};

static const struct cad_vm_insn branchy[] = {
	/* 0 */ I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0),
	/* 2 */ I(MOVI, 2, 0, 0, 0), I(CVT_F64_S64, 3, 2, 0, 0),
	/* 4 */ I(FLT, 4, 0, 3, 0), I(JZ, 0, 4, 0, 3),          /* in < 0 ? */
	/* 6 */ I(FNEG, 5, 0, 0, 0), I(ST_64, 0, 5, 0, 0), I(EXIT, 0, 0, 0, 0),
	/* 9 */ I(FLT, 6, 1, 0, 0), I(JZ, 0, 6, 0, 4),          /* in > io ? */
	/* 11 */ I(LDK, 7, 0, 0, 0), I(FMUL, 8, 0, 7, 0), I(ST_64, 0, 8, 0, 0), I(EXIT, 0, 0, 0, 0),
	/* 15 */ I(EXIT, 0, 0, 0, 0),
};
static const __u64 branchy_k[] = { 0x4000000000000000ull /* 2.0 */ };

static const struct cad_vm_insn store_load[] = {
	I(LD_64, 0, IN, 0, 0), I(MOVI, 1, 0, 0, 1), I(ADD, 2, 0, 1, 0), I(ST_64, 0, 2, 0, 0),
	I(LD_64, 3, IO, 0, 0), I(MOVI, 4, 0, 0, 3), I(MUL, 5, 3, 4, 0), I(ST_64, 0, 5, 0, 8),
	I(EXIT, 0, 0, 0, 0),
};

static const struct cad_vm_insn int32_mix[] = {
	I(LD_I32, 0, IN, 0, 0), I(LD_I32, 1, IO, 0, 0),
	I(MOVI, 2, 0, 0, 3), I(MUL, 3, 0, 2, 0), I(SUB, 3, 3, 1, 0), I(SEXT32, 3, 3, 0, 0),
	I(MOVI, 4, 0, 0, 7), I(DIV_S, 5, 3, 4, 0),
	I(MOVI, 6, 0, 0, 3), I(SHR_S, 7, 0, 6, 0), I(XOR, 8, 5, 7, 0),
	I(ST_32, 0, 8, 0, 0), I(EXIT, 0, 0, 0, 0),
};

/* (ai, bi) o (ao, bo) = (ai ao, ai bo + bi): apply io's map, then in's. */
static const struct cad_vm_insn affine[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IN, 0, 8), I(LD_64, 2, IO, 0, 0), I(LD_64, 3, IO, 0, 8),
	I(MUL, 4, 0, 2, 0), I(MUL, 5, 0, 3, 0), I(ADD, 6, 5, 1, 0),
	I(ST_64, 0, 4, 0, 0), I(ST_64, 0, 6, 0, 8), I(EXIT, 0, 0, 0, 0),
};

/* b = io; io = in + b; io = in * b + (in + b) */
static const struct cad_vm_insn store_reuse[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0), I(ADD, 2, 0, 1, 0), I(ST_64, 0, 2, 0, 0),
	I(MUL, 3, 0, 1, 0), I(ADD, 4, 3, 2, 0), I(ST_64, 0, 4, 0, 0), I(EXIT, 0, 0, 0, 0),
};

/* io = in < io ? (in < io) : io, i.e. 1 or io */
static const struct cad_vm_insn sel_self[] = {
	I(LD_64, 0, IN, 0, 0), I(LD_64, 1, IO, 0, 0), I(LT_S, 2, 0, 1, 0), I(SEL, 3, 2, 2, 1),
	I(ST_64, 0, 3, 0, 0), I(EXIT, 0, 0, 0, 0),
};

#define PROG(id, nm, esz, comm, fpw, c, k, nk) \
	[id] = { nm, esz, comm, fpw, c, CAD_ARRAY_SIZE(c), k, nk }

const struct cad_vm_prog_def cad_vm_progs[CAD_VMP_COUNT] = {
	PROG(CAD_VMP_SUM_F64, "sum_f64", 8, true, true, sum_f64, NULL, 0),
	PROG(CAD_VMP_MAX_F64, "max_f64", 8, true, true, max_f64, NULL, 0),
	PROG(CAD_VMP_CMUL, "cmul", 16, false, true, cmul, NULL, 0),
	PROG(CAD_VMP_MAXLOC, "maxloc", 16, true, false, maxloc, NULL, 0),
	PROG(CAD_VMP_SATADD_I16, "satadd_i16", 2, true, false, satadd_i16, NULL, 0),
	PROG(CAD_VMP_VEC3_SUM, "vec3_sum", 24, true, true, vec3_sum, NULL, 0),
	PROG(CAD_VMP_BRANCHY, "branchy", 8, false, true, branchy, branchy_k, 1),
	PROG(CAD_VMP_STORE_LOAD, "store_load", 16, false, false, store_load, NULL, 0),
	PROG(CAD_VMP_INT32_MIX, "int32_mix", 4, false, false, int32_mix, NULL, 0),
	PROG(CAD_VMP_AFFINE, "affine", 16, false, false, affine, NULL, 0),
	PROG(CAD_VMP_STORE_REUSE, "store_reuse", 8, false, false, store_reuse, NULL, 0),
	PROG(CAD_VMP_SEL_SELF, "sel_self", 8, false, false, sel_self, NULL, 0),
};
