// SPDX-License-Identifier: GPL-2.0 OR MIT
/* loopback.c - all ranks in one address space; see loopback.h. */
#include "loopback.h"

#define ALIGN8(x) (((x) + 7) & ~7ull)

__u64 cad_lb_mem_size(const struct cad_lb_rank *ranks, __u32 nranks)
{
	__u64 total = 0;
	__u32 r;

	for (r = 0; r < nranks; r++)
		total += ALIGN8(cad_exec_mem_size(&ranks[r].prog)) +
			 2 * ALIGN8((__u64)ranks[r].prog.n_nodes * sizeof(__u32));
	return total;
}

static bool is_transfer(const struct cad_node *n)
{
	return n->kind == CAD_NODE_SEND || n->kind == CAD_NODE_RECV;
}

/* seq[i]: how many earlier nodes share node i's (kind, peer, tag). */
static void number_transfers(struct cad_lb_rank *r)
{
	const struct cad_node *nodes = r->prog.nodes;
	__u32 i, j;

	for (i = 0; i < r->prog.n_nodes; i++) {
		r->seq[i] = 0;
		if (!is_transfer(&nodes[i]))
			continue;
		for (j = 0; j < i; j++)
			r->seq[i] += nodes[j].kind == nodes[i].kind && nodes[j].peer == nodes[i].peer &&
				     nodes[j].tag == nodes[i].tag;
	}
}

static __u8 *at(struct cad_lb_rank *r, __u32 buf, __u64 off)
{
	return (__u8 *)r->bufs[buf] + off;
}

/* Issue what is ready on rank r: local work runs now, transfers post. */
static bool issue(struct cad_lb_rank *r, void *vm_scratch)
{
	bool progress = false;
	__u32 i;

	while (cad_exec_next(&r->ex, &i)) {
		const struct cad_node *n = &r->prog.nodes[i];

		progress = true;
		switch (n->kind) {
		case CAD_NODE_COPY:
			if (n->len)
				cad_memcpy(at(r, n->dst_buf, n->dst_off), at(r, n->src_buf, n->src_off),
					   (size_t)n->len);
			cad_exec_complete(&r->ex, i);
			break;
		case CAD_NODE_REDUCE:
			cad_reduce(&r->prog, n, at(r, n->dst_buf, n->dst_off),
				   at(r, n->src_buf, n->src_off), vm_scratch);
			cad_exec_complete(&r->ex, i);
			break;
		default:
			r->posted[r->n_posted++] = i;
			break;
		}
	}
	return progress;
}

static void unpost(struct cad_lb_rank *r, __u32 slot)
{
	r->posted[slot] = r->posted[--r->n_posted];
}

/* Match every posted SEND of rank s with its RECV; -EINVAL on a size mismatch. */
static int match(struct cad_lb_rank *ranks, __u32 s, bool *progress, char *why, size_t why_size)
{
	struct cad_lb_rank *rs = &ranks[s];
	__u32 a = 0, b;

	while (a < rs->n_posted) {
		const __u32 si = rs->posted[a];
		const struct cad_node *sn = &rs->prog.nodes[si];
		struct cad_lb_rank *rd;
		bool matched = false;

		if (sn->kind != CAD_NODE_SEND) {
			a++;
			continue;
		}
		rd = &ranks[sn->peer];
		for (b = 0; b < rd->n_posted; b++) {
			const __u32 ri = rd->posted[b];
			const struct cad_node *rn = &rd->prog.nodes[ri];

			if (rn->kind != CAD_NODE_RECV || rn->peer != s || rn->tag != sn->tag ||
			    rd->seq[ri] != rs->seq[si])
				continue;
			if (rn->len != sn->len) {
				cad_snprintf(why, why_size,
					     "rank %u node %u sends %llu bytes, rank %u node %u receives %llu",
					     s, si, (unsigned long long)sn->len, sn->peer, ri,
					     (unsigned long long)rn->len);
				return -EINVAL;
			}
			if (sn->len)
				cad_memcpy(at(rd, rn->dst_buf, rn->dst_off),
					   at(rs, sn->src_buf, sn->src_off), (size_t)sn->len);
			cad_exec_complete(&rd->ex, ri);
			cad_exec_complete(&rs->ex, si);
			unpost(rd, b);
			unpost(rs, a);
			matched = true;
			*progress = true;
			break;
		}
		if (!matched)
			a++;
	}
	return 0;
}

static void describe_stuck(struct cad_lb_rank *ranks, __u32 nranks, char *why, size_t size)
{
	size_t used = 0;
	__u32 r, k;

	used += (size_t)cad_snprintf(why, size, "deadlock:");
	for (r = 0; r < nranks && used < size; r++)
		for (k = 0; k < ranks[r].n_posted && used < size; k++) {
			used += (size_t)cad_snprintf(why + used, size - used, " [rank %u ", r);
			if (used < size)
				used += (size_t)cad_disasm_node(&ranks[r].prog, ranks[r].posted[k],
								why + used, size - used);
			if (used < size)
				used += (size_t)cad_snprintf(why + used, size - used, "]");
		}
}

int cad_lb_run(struct cad_lb_rank *ranks, __u32 nranks, void *mem, void *vm_scratch,
	       char *why, size_t why_size)
{
	__u8 *m = mem;
	__u32 r;
	int err;

	why[0] = '\0';
	for (r = 0; r < nranks; r++) {
		struct cad_lb_rank *rk = &ranks[r];
		const __u64 nodes = ALIGN8((__u64)rk->prog.n_nodes * sizeof(__u32));

		cad_exec_init(&rk->ex, &rk->prog, m);
		m += ALIGN8(cad_exec_mem_size(&rk->prog));
		rk->seq = (__u32 *)m;
		rk->posted = (__u32 *)(m + nodes);
		m += 2 * nodes;
		rk->n_posted = 0;
		number_transfers(rk);
		cad_exec_start(&rk->ex);
	}
	for (;;) {
		bool progress = false, running = false;

		for (r = 0; r < nranks; r++)
			progress |= issue(&ranks[r], vm_scratch);
		for (r = 0; r < nranks; r++) {
			err = match(ranks, r, &progress, why, why_size);
			if (err)
				return err;
		}
		for (r = 0; r < nranks; r++) {
			err = cad_exec_status(&ranks[r].ex);
			if (err == -EINPROGRESS)
				running = true;
			else if (err)
				return err;
		}
		if (!running)
			return 0;
		if (!progress) {
			describe_stuck(ranks, nranks, why, why_size);
			return -EDEADLK;
		}
	}
}
