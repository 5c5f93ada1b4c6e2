// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * writer.c - serialise a program description into the ABI image: the
 * header, then the sections in ABI order, each 8-byte aligned.  Used by
 * cadc's emitter, cadrt's hand-built programs and the tests.  It checks
 * only that the image fits; cad_verify judges the content.
 */
#include "cad_core.h"

struct layout {
	__u32 off[CAD_SEC_COUNT];
	__u32 count[CAD_SEC_COUNT];
	__u32 entsize[CAD_SEC_COUNT];
	const void *data[CAD_SEC_COUNT];
	__u64 total;
};

static void plan(const struct cad_image_desc *d, struct layout *l)
{
	__u64 cur = sizeof(struct cad_prog_header);
	unsigned int s;

#define SEC(id, ptr, n, T) \
	(l->data[id] = (ptr), l->count[id] = (n), l->entsize[id] = sizeof(T))
	SEC(CAD_SEC_BUFFERS, d->buffers, d->n_buffers, struct cad_buffer);
	SEC(CAD_SEC_NODES, d->nodes, d->n_nodes, struct cad_node);
	SEC(CAD_SEC_EDGES, d->edges, d->n_edges, struct cad_edge);
	SEC(CAD_SEC_OPS, d->ops, d->n_ops, struct cad_user_op);
	SEC(CAD_SEC_CODE, d->code, d->n_code, struct cad_vm_insn);
	SEC(CAD_SEC_CONSTS, d->consts, d->n_consts, __u64);
	SEC(CAD_SEC_LINES, d->lines, d->n_lines, struct cad_line);
	SEC(CAD_SEC_STRINGS, d->strings, d->n_strings, char);
#undef SEC
	for (s = 0; s < CAD_SEC_COUNT; s++) {
		if (!l->count[s]) {
			l->off[s] = 0;
			continue;
		}
		cur = (cur + 7) & ~7ull;
		l->off[s] = cur <= 0xffffffffull ? (__u32)cur : 0;
		cur += (__u64)l->count[s] * l->entsize[s];
	}
	l->total = (cur + 7) & ~7ull;
}

__u64 cad_image_size(const struct cad_image_desc *d)
{
	struct layout l;

	plan(d, &l);
	return l.total <= 0xffffffffull ? l.total : 0;
}

int cad_image_write(const struct cad_image_desc *d, void *out, __u64 size)
{
	struct cad_prog_header *h = out;
	struct layout l;
	unsigned int s;

	plan(d, &l);
	if (l.total > 0xffffffffull)
		return -E2BIG;
	if (size < l.total || ((cad_uptr)out & 7))
		return -EINVAL;
	cad_memset(out, 0, (size_t)l.total);
	h->magic = CAD_MAGIC;
	h->version = CAD_VERSION;
	h->header_size = sizeof(*h);
	h->total_size = (__u32)l.total;
	h->flags = d->flags;
	h->rank = d->rank;
	h->nranks = d->nranks;
	h->collective = d->collective;
	h->name = d->name;
	for (s = 0; s < CAD_SEC_COUNT; s++) {
		h->sec[s].off = l.off[s];
		h->sec[s].count = l.count[s];
		h->sec[s].entsize = l.entsize[s];
		if (l.count[s])
			cad_memcpy((__u8 *)out + l.off[s], l.data[s],
				   (size_t)l.count[s] * l.entsize[s]);
	}
	return 0;
}
