// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * core_demo - the CAD core at work, end to end in one process:
 *  1. generate a pipelined chain broadcast for every rank (by hand, as the
 *     KACC paper's Figure 2 does; the compiler will write these), with
 *     line info pointing at the lines below that generated each node;
 *  2. verify each rank's program and disassemble one;
 *  3. run all ranks through the executor (loopback engine) and check that
 *     every rank holds the root's data;
 *  4. corrupt one node and show the verifier's located rejection;
 *  5. an allreduce with a user-defined, non-commutative VM operator.
 * `make demo` builds and runs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cad_core.h"
#include "../tests/core/loopback.h"
#include "../tests/core/vm_progs.h"

#define P        4
#define SEGMENTS 4
#define SEG      16384

static const char strings[] = "\0demo/core_demo.c\0data\0affine\0bcast_chain\0allreduce_rd\0";
enum { S_FILE = 1, S_DATA = 18, S_AFFINE = 23, S_BCAST = 30, S_ALLREDUCE = 42 };

struct builder {
	struct cad_node nodes[64];
	struct cad_line lines[64];
	__u32 pairs[128];          /* edges as from << 16 | to */
	struct cad_edge edges[128];
	__u32 n, np, ne;
};

/* Add a node generated at source line `line`; returns its index. */
static __u32 add(struct builder *b, struct cad_node n, int line)
{
	b->lines[b->n] = (struct cad_line){ .file = S_FILE, .line = (__u32)line, .col = 5 };
	n.line = b->n;
	b->nodes[b->n] = n;
	return b->n++;
}

static void link(struct builder *b, __u32 from, __u32 to)
{
	b->pairs[b->np++] = from << 16 | to;
}

static int cmp_u32(const void *x, const void *y)
{
	__u32 a = *(const __u32 *)x, c = *(const __u32 *)y;

	return a < c ? -1 : a > c;
}

/* Successor lists, node after node, each sorted and without duplicates. */
static void successor_lists(struct builder *b)
{
	__u32 k = 0, n;

	qsort(b->pairs, b->np, sizeof(b->pairs[0]), cmp_u32);
	b->ne = 0;
	for (n = 0; n < b->n; n++) {
		b->nodes[n].edge_first = b->ne;
		for (; k < b->np && b->pairs[k] >> 16 == n; k++)
			if (!k || b->pairs[k] != b->pairs[k - 1])
				b->edges[b->ne++].to = b->pairs[k] & 0xffff;
		b->nodes[n].edge_count = b->ne - b->nodes[n].edge_first;
	}
}

static void *finish(struct builder *b, __u32 rank, __u32 nranks, const struct cad_buffer *bufs,
		    __u32 nbufs, struct cad_prog *prog, __u32 *size_out)
{
	struct cad_image_desc d = {
		.rank = rank, .nranks = nranks, .collective = CAD_COLL_BCAST, .name = S_BCAST,
		.buffers = bufs, .n_buffers = nbufs, .nodes = b->nodes, .n_nodes = b->n,
		.edges = b->edges, .lines = b->lines, .n_lines = b->n,
		.strings = strings, .n_strings = sizeof(strings) - 1,
	};
	char msg[512];
	struct cad_log log;
	__u64 size;
	void *img;

	successor_lists(b);
	d.n_edges = b->ne;
	size = cad_image_size(&d);
	img = aligned_alloc(8, (size + 7) & ~7ull);
	cad_log_init(&log, msg, sizeof(msg));
	if (!img || cad_image_write(&d, img, size) ||
	    cad_verify(img, (__u32)size, NULL, prog, &log)) {
		printf("rank %u rejected: %s", rank, msg);
		exit(1);
	}
	if (size_out)
		*size_out = (__u32)size;
	return img;
}

/* The disassembler emits text in pieces; indent each line once. */
static void print_text(void *ctx, const char *text, __u32 len)
{
	bool *at_line_start = ctx;
	__u32 i;

	for (i = 0; i < len; i++) {
		if (*at_line_start)
			fputs("    ", stdout);
		putchar(text[i]);
		*at_line_start = text[i] == '\n';
	}
}

/* Rank r of a chain broadcast from rank 0: segment k arrives from r - 1
 * and leaves for r + 1 as soon as it is in; segments overlap in flight. */
static void *bcast_chain(__u32 r, struct cad_prog *prog, __u32 *size)
{
	static const struct cad_buffer buf = {
		.kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE,
		.size = SEGMENTS * SEG, .name = S_DATA,
	};
	struct builder b = { .n = 0 };
	__u32 k;

	for (k = 0; k < SEGMENTS; k++) {
		__u32 in = ~0u, out;

		if (r > 0)
			in = add(&b, (struct cad_node){ .kind = CAD_NODE_RECV, .dst_buf = 0,
				.dst_off = k * SEG, .len = SEG, .peer = r - 1, .tag = k,
				.flags = CAD_XFER_RECEIVER_READS }, __LINE__);
		if (r + 1 < P) {
			out = add(&b, (struct cad_node){ .kind = CAD_NODE_SEND, .src_buf = 0,
				.src_off = k * SEG, .len = SEG, .peer = r + 1, .tag = k,
				.flags = CAD_XFER_RECEIVER_READS }, __LINE__);
			if (in != ~0u)
				link(&b, in, out);  /* forward segment k once it is in */
		}
	}
	return finish(&b, r, P, &buf, 1, prog, size);
}

static int demo_bcast(void)
{
	struct cad_lb_rank ranks[P];
	void *imgs[P], *mem, *scratch = aligned_alloc(64, CAD_VM_SCRATCH_SIZE);
	__u8 *data[P];
	char why[1024];
	__u32 r, i, size;
	int err;

	printf("1. A pipelined chain broadcast, P = %d, %d segments of %d bytes, generated per rank.\n",
	       P, SEGMENTS, SEG);
	for (r = 0; r < P; r++) {
		memset(&ranks[r], 0, sizeof(ranks[r]));
		imgs[r] = bcast_chain(r, &ranks[r].prog, &size);
		data[r] = malloc(SEGMENTS * SEG);
		for (i = 0; i < SEGMENTS * SEG; i++)
			data[r][i] = r == 0 ? (__u8)(i * 13 + 7) : 0;
		ranks[r].bufs = (void **)&data[r];
		printf("   rank %u: %u nodes, %u edges, %u-byte image: verified\n", r,
		       ranks[r].prog.n_nodes, ranks[r].prog.n_edges, size);
	}
	printf("\n2. Rank 1's program, as the disassembler prints it:\n");
	cad_disasm(&ranks[1].prog, print_text, &(bool){ true });

	mem = malloc(cad_lb_mem_size(ranks, P) + 8);
	err = cad_lb_run(ranks, P, mem, scratch, why, sizeof(why));
	printf("\n3. Executing every rank's DAG (loopback engine): %s\n", err ? why : "all done");
	for (r = 0; r < P && !err; r++)
		for (i = 0; i < SEGMENTS * SEG; i++)
			if (data[r][i] != (__u8)(i * 13 + 7)) {
				printf("   rank %u byte %u is wrong\n", r, i);
				err = 1;
				break;
			}
	if (!err)
		printf("   every rank holds the root's %d bytes\n", SEGMENTS * SEG);

	printf("\n4. The same program with node 3 reaching past its buffer:\n");
	{
		struct cad_prog_header *h = imgs[1];
		struct cad_node *n = (struct cad_node *)((__u8 *)imgs[1] + h->sec[CAD_SEC_NODES].off);
		char msg[512];
		struct cad_log log;
		struct cad_prog p;
		int rc;

		n[3].src_off = SEGMENTS * SEG - 100;
		cad_log_init(&log, msg, sizeof(msg));
		rc = cad_verify(imgs[1], h->total_size, NULL, &p, &log);
		printf("   cad_verify: %d (%s)\n   %s", rc, rc == -EINVAL ? "-EINVAL" : "?", msg);
		if (rc != -EINVAL)
			err = 1;
	}
	for (r = 0; r < P; r++) {
		free(imgs[r]);
		free(data[r]);
	}
	free(mem);
	free(scratch);
	return err;
}

/* Recursive doubling allreduce of maps x -> a x + b under composition,
 * which is associative but not commutative: every rank must end with
 * x0 o x1 o ... o x(P-1), lower ranks on the left. */
static int demo_allreduce(void)
{
	enum { N = 1000, BYTES = N * 16 };
	const struct cad_vm_prog_def *op = &cad_vm_progs[CAD_VMP_AFFINE];
	const struct cad_buffer bufs[] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = BYTES },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = BYTES },
		{ .kind = CAD_BUF_SCRATCH, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = BYTES },
	};
	const struct cad_user_op uop = {
		.name = S_AFFINE, .elem_size = 16, .code_count = op->n_code, .line = CAD_NO_LINE,
	};
	struct cad_lb_rank ranks[P];
	void *imgs[P], *bufp[P][3], *mem, *scratch = aligned_alloc(64, CAD_VM_SCRATCH_SIZE);
	char why[1024];
	__u32 r, i, mask, step;
	int err = 0;

	printf("\n5. Allreduce by recursive doubling with a user-defined VM operator,\n"
	       "   affine-map composition (associative, not commutative), P = %d, %d elements:\n",
	       P, N);
	for (r = 0; r < P; r++) {
		struct builder b = { .n = 0 };
		struct cad_image_desc d;
		__u32 last_b1, last_b2 = ~0u;
		__u64 size, *x;

		for (i = 0; i < 3; i++)
			bufp[r][i] = calloc(1, BYTES);
		x = bufp[r][0];
		for (i = 0; i < N; i++) {
			x[2 * i] = 2 * (i + r) + 3;
			x[2 * i + 1] = i + 10 * r;
		}
		last_b1 = add(&b, (struct cad_node){ .kind = CAD_NODE_COPY, .dst_buf = 1, .src_buf = 0,
			.len = BYTES }, __LINE__);
		for (mask = 1, step = 0; mask < P; mask <<= 1, step++) {
			const __u32 partner = r ^ mask;
			__u32 s, v, red, cp;

			s = add(&b, (struct cad_node){ .kind = CAD_NODE_SEND, .src_buf = 1, .len = BYTES,
				.peer = partner, .tag = step }, __LINE__);
			v = add(&b, (struct cad_node){ .kind = CAD_NODE_RECV, .dst_buf = 2, .len = BYTES,
				.peer = partner, .tag = step }, __LINE__);
			/* partner below: b1 = b2 o b1; above: b2 = b1 o b2, then b1 = b2 */
			red = add(&b, (struct cad_node){ .kind = CAD_NODE_REDUCE, .op = CAD_OP_USER,
				.dtype = CAD_DT_USER, .dst_buf = partner < r ? 1 : 2,
				.src_buf = partner < r ? 2 : 1, .len = BYTES }, __LINE__);
			cp = partner < r ? red : add(&b, (struct cad_node){ .kind = CAD_NODE_COPY,
				.dst_buf = 1, .src_buf = 2, .len = BYTES }, __LINE__);
			link(&b, last_b1, s);                 /* send what b1 holds */
			if (last_b2 != ~0u)
				link(&b, last_b2, v);         /* b2 free again */
			link(&b, v, red);
			link(&b, partner < r ? s : last_b1, red);
			if (cp != red) {
				link(&b, red, cp);
				link(&b, s, cp);              /* b1 sent before overwritten */
			}
			last_b1 = last_b2 = cp;
		}
		successor_lists(&b);
		d = (struct cad_image_desc){ .rank = r, .nranks = P, .collective = CAD_COLL_ALLREDUCE,
			.name = S_ALLREDUCE,
			.buffers = bufs, .n_buffers = 3, .nodes = b.nodes, .n_nodes = b.n,
			.edges = b.edges, .n_edges = b.ne, .lines = b.lines, .n_lines = b.n,
			.ops = &uop, .n_ops = 1, .code = op->code, .n_code = op->n_code,
			.strings = strings, .n_strings = sizeof(strings) - 1 };
		size = cad_image_size(&d);
		imgs[r] = aligned_alloc(8, (size + 7) & ~7ull);
		memset(&ranks[r], 0, sizeof(ranks[r]));
		if (cad_image_write(&d, imgs[r], size) ||
		    cad_verify(imgs[r], (__u32)size, NULL, &ranks[r].prog, NULL)) {
			printf("   rank %u: program rejected\n", r);
			return 1;
		}
		ranks[r].bufs = bufp[r];
	}
	printf("   rank 0's program:\n");
	cad_disasm(&ranks[0].prog, print_text, &(bool){ true });
	mem = malloc(cad_lb_mem_size(ranks, P) + 8);
	if (cad_lb_run(ranks, P, mem, scratch, why, sizeof(why))) {
		printf("   %s\n", why);
		return 1;
	}
	for (i = 0; i < N && !err; i++) {
		__u64 a = 1, c = 0;
		__u32 q;

		for (q = P; q-- > 0;) {
			const __u64 *x = bufp[q][0];

			c = x[2 * i] * c + x[2 * i + 1];
			a = x[2 * i] * a;
		}
		for (r = 0; r < P; r++) {
			const __u64 *o = bufp[r][1];

			if (o[2 * i] != a || o[2 * i + 1] != c) {
				printf("   rank %u element %u is wrong\n", r, i);
				err = 1;
			}
		}
	}
	if (!err)
		printf("   every rank holds x0 o x1 o x2 o x3 for all %d elements, in rank order\n", N);
	for (r = 0; r < P; r++) {
		free(imgs[r]);
		for (i = 0; i < 3; i++)
			free(bufp[r][i]);
	}
	free(mem);
	free(scratch);
	return err;
}

int main(void)
{
	int err = demo_bcast();

	err |= demo_allreduce();
	printf("\n%s\n", err ? "core_demo: FAILED" : "core_demo: all checks passed");
	return err;
}
