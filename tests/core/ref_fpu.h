/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * ref_fpu.h - reference implementations for the tests, written apart from
 * the core's.  They use floating point: in the kernel, call them only
 * between cad_fpu_begin() and cad_fpu_end().
 */
#ifndef CAD_REF_FPU_H
#define CAD_REF_FPU_H

#include "selftest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* expect[i] = op(inout[i], in[i]) for count elements of dtype. */
void cad_ref_reduce_fpu(unsigned int op, unsigned int dtype, void *expect,
			const void *inout, const void *in, __u64 count);

/* Whether two elements of dtype are equal, NaN equal to any NaN. */
bool cad_ref_same_fpu(unsigned int dtype, const void *a, const void *b);

/* The VM opcode semantics (UN and BIN formats) on raw register values. */
__u64 cad_ref_vm_op_fpu(unsigned int code, __u64 a, __u64 b);

/* Reference C for the VM test programs, by name index (see vm_cases.c). */
void cad_ref_vm_prog_fpu(unsigned int which, void *inout, const void *in, __u64 count);

/* Inputs for the branchy operator where every lane of a block takes the same
 * path: block 0 all in < 0, block 1 all in > io, block 2 neither. */
void cad_ref_fill_uniform_fpu(double *in, double *io, __u64 count, __u32 lanes);

#ifdef __cplusplus
}
#endif

#endif /* CAD_REF_FPU_H */
