// SPDX-License-Identifier: GPL-2.0 OR MIT
/* cad_fuzz_seeds DIR - writes the verifier table's programs and the
 * hand-written VM operators as seed files for the fuzzer. */
#include <stdio.h>
#include <stdlib.h>

#include "../core/verifier_cases.h"
#include "../core/vm_progs.h"

static int write_seed(const char *dir, const char *name, const struct cad_image_desc *d)
{
	__u64 size = cad_image_size(d);
	void *img = aligned_alloc(8, size + 8);
	char path[512];
	FILE *f;

	if (!img || cad_image_write(d, img, size))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(img, 1, size, f) != size) {
		perror(path);
		return -1;
	}
	fclose(f);
	free(img);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int i;

	if (argc != 2) {
		fprintf(stderr, "usage: cad_fuzz_seeds DIR\n");
		return 2;
	}
	for (i = 0; i < cad_vcases_count; i++)
		if (write_seed(argv[1], cad_vcases[i].name, &cad_vcases[i].desc))
			return 1;
	for (i = 0; i < CAD_VMP_COUNT; i++) {
		const struct cad_vm_prog_def *p = &cad_vm_progs[i];
		const struct cad_buffer bufs[] = {
			{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = p->elem_size * 4 },
			{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = p->elem_size * 4 },
		};
		const struct cad_user_op op = {
			.elem_size = p->elem_size, .code_count = p->n_code, .const_count = p->n_consts,
			.line = CAD_NO_LINE,
		};
		const struct cad_node node = {
			.kind = CAD_NODE_REDUCE, .op = CAD_OP_USER, .dtype = CAD_DT_USER,
			.dst_buf = 1, .len = p->elem_size * 4, .line = CAD_NO_LINE,
		};
		const struct cad_image_desc d = {
			.nranks = 1, .buffers = bufs, .n_buffers = 2, .nodes = &node, .n_nodes = 1,
			.ops = &op, .n_ops = 1, .code = p->code, .n_code = p->n_code,
			.consts = p->consts, .n_consts = p->n_consts,
		};
		char name[64];

		snprintf(name, sizeof(name), "vm-%s", p->name);
		if (write_seed(argv[1], name, &d))
			return 1;
	}
	return 0;
}
