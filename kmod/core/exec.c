// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * exec.c - the DAG executor state machine.
 *
 * Invariant: pending[i] is the number of predecessors of node i not yet
 * DONE; a node enters a ready FIFO exactly once, when its pending count
 * reaches 0 (roots at start): local nodes (COPY, REDUCE) the one that
 * grows from the back of ready[], the others the one from the front.  So
 * the two together never hold more than n_nodes entries and never overlap.
 * After a failure nothing new is issued; the run ends when nothing is
 * ISSUED.
 */
#include "cad_core.h"

__u64 cad_exec_mem_size(const struct cad_prog *prog)
{
	/* indegree, pending, ready: __u32 each; state: __u8 */
	return (__u64)prog->n_nodes * (3 * sizeof(__u32) + sizeof(__u8));
}

void cad_exec_init(struct cad_exec *ex, const struct cad_prog *prog, void *mem)
{
	const __u32 n = prog->n_nodes;
	__u32 *indegree = mem;
	__u32 e;

	cad_memset(ex, 0, sizeof(*ex));
	ex->prog = prog;
	ex->indegree = indegree;
	ex->pending = indegree + n;
	ex->ready = indegree + 2 * n;
	ex->state = (__u8 *)(indegree + 3 * n);
	if (n)
		cad_memset(indegree, 0, (size_t)n * sizeof(__u32));
	for (e = 0; e < prog->n_edges; e++)
		indegree[prog->edges[e].to]++;
}

CAD_HOT static bool is_local(const struct cad_exec *ex, __u32 node)
{
	const __u8 kind = ex->prog->nodes[node].kind;

	return kind == CAD_NODE_COPY || kind == CAD_NODE_REDUCE;
}

CAD_HOT static void make_ready(struct cad_exec *ex, __u32 node)
{
	ex->state[node] = CAD_NS_READY;
	if (is_local(ex, node))
		ex->ready[ex->prog->n_nodes - 1 - ex->ltail++] = node;
	else
		ex->ready[ex->tail++] = node;
}

CAD_HOT void cad_exec_start(struct cad_exec *ex)
{
	const __u32 n = ex->prog->n_nodes;
	__u32 i;

	/* One pass, no memcpy or memset: most programs have a few nodes, and
	 * a small collective's start paid two calls into libc for them. */
	ex->head = ex->tail = ex->lhead = ex->ltail = 0;
	ex->n_done = ex->n_issued = 0;
	ex->error = 0;
	for (i = 0; i < n; i++) {
		const __u32 d = ex->indegree[i];

		ex->pending[i] = d;
		ex->state[i] = CAD_NS_WAITING;
		if (!d)
			make_ready(ex, i);
	}
}

CAD_HOT static void finish(struct cad_exec *ex, __u32 node)
{
	const struct cad_node *nd = &ex->prog->nodes[node];
	const __u32 first = nd->edge_first, end = first + nd->edge_count;
	__u32 e;

	ex->state[node] = CAD_NS_DONE;
	ex->n_done++;
	for (e = first; e < end; e++) {
		const __u32 to = ex->prog->edges[e].to;

		if (--ex->pending[to] == 0)
			make_ready(ex, to);
	}
}

CAD_HOT bool cad_exec_next(struct cad_exec *ex, __u32 *node)
{
	while (!ex->error && (ex->head != ex->tail || ex->lhead != ex->ltail)) {
		__u32 i;

		if (ex->head != ex->tail) {
			i = ex->ready[ex->head++];
			if (ex->prog->nodes[i].kind == CAD_NODE_NOP) {
				finish(ex, i);
				continue;
			}
		} else {
			i = ex->ready[ex->prog->n_nodes - 1 - ex->lhead++];
		}
		ex->state[i] = CAD_NS_ISSUED;
		ex->n_issued++;
		*node = i;
		return true;
	}
	return false;
}

CAD_HOT int cad_exec_complete(struct cad_exec *ex, __u32 node)
{
	if (node >= ex->prog->n_nodes || ex->state[node] != CAD_NS_ISSUED)
		return -EFAULT;
	ex->n_issued--;
	finish(ex, node);
	return 0;
}

int cad_exec_fail(struct cad_exec *ex, __u32 node, int err)
{
	if (node >= ex->prog->n_nodes || ex->state[node] != CAD_NS_ISSUED)
		return -EFAULT;
	ex->n_issued--;
	ex->state[node] = CAD_NS_FAILED;
	cad_exec_abort(ex, err);
	return 0;
}

void cad_exec_abort(struct cad_exec *ex, int err)
{
	if (!ex->error)
		ex->error = err < 0 ? err : -ECANCELED;
}

CAD_HOT int cad_exec_status(const struct cad_exec *ex)
{
	if (ex->error)
		return ex->n_issued ? -EINPROGRESS : ex->error;
	if (ex->n_done == ex->prog->n_nodes)
		return 0;
	return -EINPROGRESS;
}
