// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * apply.c - performing a REDUCE node.  Compiled without floating point: it
 * opens a short FPU section around each chunk of the work done by the
 * floating-point files (reduce.c, vm.c), so that in the kernel preemption
 * is never off for more than one chunk.
 */
#include "reduce_priv.h"

/* Bytes reduced per FPU section: a few microseconds of work. */
#define CHUNK_BYTES (64u << 10)
/* And for a user-defined op, elements x its instructions per section: a
 * long operator (up to CAD_VM_MAX_INSNS) on small elements must not keep
 * preemption off for 64 Ki elements, 2^28 instructions: about a
 * millisecond at most (a VM block, CAD_VM_LANES elements, is the least). */
#define CHUNK_WORK (1u << 20)

bool cad_reduce_supported(unsigned int op, unsigned int dtype)
{
	return op < CAD_OP_COUNT && dtype < CAD_DT_COUNT && cad_reduce_table[op][dtype];
}

void cad_reduce(const struct cad_prog *prog, const struct cad_node *node,
		void *dst, const void *src, void *vm_scratch)
{
	const struct cad_user_op *uop = NULL;
	__u32 esz;
	__u64 count, chunk;
	__u8 *d = dst;
	const __u8 *s = src;

	if (node->op == CAD_OP_USER) {
		uop = &prog->ops[node->user_op];
		esz = uop->elem_size;
		/* Whole VM blocks per chunk, so no chunk ends in a partial block. */
		chunk = CHUNK_BYTES / ((__u64)esz * CAD_VM_LANES);
		if (chunk > CHUNK_WORK / ((__u64)(uop->code_count ? uop->code_count : 1) * CAD_VM_LANES))
			chunk = CHUNK_WORK / ((__u64)(uop->code_count ? uop->code_count : 1) * CAD_VM_LANES);
		chunk = (chunk ? chunk : 1) * CAD_VM_LANES;
	} else {
		esz = cad_dtype_size(node->dtype);
		chunk = CHUNK_BYTES / esz;
	}
	count = node->len / esz;

	while (count) {
		__u64 n = count < chunk ? count : chunk;

		cad_fpu_begin();
		if (uop)
			cad_vm_run_fpu(prog, uop, d, s, n, vm_scratch);
		else
			cad_reduce_builtin_fpu(d, s, n, node->op, node->dtype);
		cad_fpu_end();
		d += n * esz;
		s += n * esz;
		count -= n;
		if (count)
			cad_yield();  /* a long REDUCE holds no CPU for long */
	}
}
