/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vm_progs.h - user-defined operators written by hand in VM code, apart
 * from the operator compiler (cadc/opc), so the core's tests need no
 * compiler: the VM tests run them against plain C (ref_fpu.c) and
 * bench/core_bench measures them against native code.
 */
#ifndef CAD_VM_PROGS_H
#define CAD_VM_PROGS_H

#include "../../kmod/core/cad_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	CAD_VMP_SUM_F64,     /* io = io + in                      double */
	CAD_VMP_MAX_F64,     /* io = io > in ? io : in             double */
	CAD_VMP_CMUL,        /* io = in * io          { double re, im; } */
	CAD_VMP_MAXLOC,      /* MPI maxloc          { double v; int i; } */
	CAD_VMP_SATADD_I16,  /* saturating add                     int16 */
	CAD_VMP_VEC3_SUM,    /* io += in              { double x, y, z; } */
	CAD_VMP_BRANCHY,     /* if/else-if with forward jumps      double */
	CAD_VMP_STORE_LOAD,  /* a load sees an earlier store     int64[2] */
	CAD_VMP_INT32_MIX,   /* wrap, signed division, shifts      int32 */
	CAD_VMP_AFFINE,      /* io = in o io, maps x -> a x + b   { int64 a, b; }:
			      * associative, not commutative */
	CAD_VMP_STORE_REUSE, /* loaded values used after a store   int64:
			      * in place, the load must keep the old value */
	CAD_VMP_SEL_SELF,    /* a SEL whose condition is also a value  int64 */
	CAD_VMP_COUNT
};

struct cad_vm_prog_def {
	const char *name;
	__u32 elem_size;
	bool commutative;
	bool fp_words;   /* results are doubles: compare NaN to any NaN */
	const struct cad_vm_insn *code;
	__u32 n_code;
	const __u64 *consts;
	__u32 n_consts;
};

extern const struct cad_vm_prog_def cad_vm_progs[CAD_VMP_COUNT];

#ifdef __cplusplus
}
#endif

#endif /* CAD_VM_PROGS_H */
