// SPDX-License-Identifier: GPL-2.0 OR MIT
/* exercise.c - see exercise.h.  User space only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exercise.h"

const struct cad_limits cad_exercise_limits = {
	.max_image_size = 1u << 20,
	.max_nodes = 4096,
	.max_edges = 16384,
	.max_buffers = 16,
	.max_ops = 8,
	.max_code = 4096,
	.max_op_code = 1024,
	.max_consts = 256,
	.max_lines = 4096,
	.max_strings = 1u << 16,
	.max_buffer_size = 1u << 16,
	.max_scratch = 1u << 18,
};

static void sink(void *ctx, const char *text, __u32 len)
{
	size_t *total = ctx;

	*total += len;
	(void)text;
}

int cad_exercise(const struct cad_prog *p, char *why, size_t why_size)
{
	void **bufs = calloc(p->n_buffers + 1, sizeof(void *));
	void *mem = malloc(cad_exec_mem_size(p) + 1);
	void *scratch = aligned_alloc(64, CAD_VM_SCRATCH_SIZE);
	size_t text = 0;
	struct cad_exec ex;
	__u32 i, n, steps = 0;
	int rc = 0, status;
	char line[256];

	cad_disasm(p, sink, &text);
	for (i = 0; i < p->n_nodes; i++)
		cad_disasm_node(p, i, line, sizeof(line));
	for (i = 0; i < p->n_buffers; i++) {
		bufs[i] = malloc(p->buffers[i].size + 1);
		memset(bufs[i], (int)(i * 37 + 1), p->buffers[i].size + 1);
	}
	cad_exec_init(&ex, p, mem);
	cad_exec_start(&ex);
	while (cad_exec_next(&ex, &n)) {
		const struct cad_node *nd = &p->nodes[n];
		__u8 *dst = nd->kind == CAD_NODE_SEND || nd->kind == CAD_NODE_NOP ? NULL
			  : (__u8 *)bufs[nd->dst_buf] + nd->dst_off;
		const __u8 *src = nd->kind == CAD_NODE_RECV || nd->kind == CAD_NODE_NOP ? NULL
				: (const __u8 *)bufs[nd->src_buf] + nd->src_off;

		steps++;
		if (nd->kind == CAD_NODE_COPY)
			memcpy(dst, src, nd->len);
		else if (nd->kind == CAD_NODE_REDUCE)
			cad_reduce(p, nd, dst, src, scratch);
		else if (nd->kind == CAD_NODE_RECV)
			memset(dst, 0x5a, nd->len);
		if (cad_exec_complete(&ex, n)) {
			snprintf(why, why_size, "completing issued node %u failed", n);
			rc = -1;
			break;
		}
	}
	status = cad_exec_status(&ex);
	if (!rc && (status != 0 || ex.n_done != p->n_nodes)) {
		snprintf(why, why_size, "execution ended with status %d, %u of %u nodes done after %u steps",
			 status, ex.n_done, p->n_nodes, steps);
		rc = -1;
	}
	for (i = 0; i < p->n_buffers; i++)
		free(bufs[i]);
	free(bufs);
	free(mem);
	free(scratch);
	return rc;
}
