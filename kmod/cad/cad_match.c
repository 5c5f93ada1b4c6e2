// SPDX-License-Identifier: GPL-2.0
/*
 * cad_match.c - matching SEND and RECV nodes, copying transfers, local
 * nodes, and the bounded passes over a group's work.
 */
#include "cad_run.h"

static int key_cmp(const void *a, const void *b)
{
	const struct cad_key *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->peer != y->peer)
		return x->peer < y->peer ? -1 : 1;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return 0;
}

int cad_index_keys(struct cad_run *r)
{
	const struct cad_prog *p = &r->prog;
	u32 i, n = 0;

	r->occ = kvcalloc(p->n_nodes ? p->n_nodes : 1, sizeof(u32), GFP_KERNEL_ACCOUNT);
	r->keys = kvcalloc(p->n_nodes ? p->n_nodes : 1, sizeof(struct cad_key), GFP_KERNEL_ACCOUNT);
	if (!r->occ || !r->keys)
		return -ENOMEM;
	for (i = 0; i < p->n_nodes; i++) {
		const struct cad_node *nd = &p->nodes[i];

		if (nd->kind != CAD_NODE_SEND && nd->kind != CAD_NODE_RECV)
			continue;
		r->keys[n++] = (struct cad_key){
			.kind = nd->kind, .peer = nd->peer, .tag = nd->tag, .node = i
		};
	}
	sort(r->keys, n, sizeof(*r->keys), key_cmp, NULL);
	for (i = 0; i < n; i++) {
		struct cad_key *k = &r->keys[i];

		if (i && k->kind == k[-1].kind && k->peer == k[-1].peer && k->tag == k[-1].tag)
			k->occ = k[-1].occ + 1;
		r->occ[k->node] = k->occ;
	}
	r->nkeys = n;
	return 0;
}

/* The node of kind with (peer, tag, occ), or -1. */
static s64 find_key(const struct cad_run *r, u8 kind, u32 peer, u32 tag, u32 occ)
{
	u32 lo = 0, hi = r->nkeys;

	while (lo < hi) {
		const u32 mid = lo + (hi - lo) / 2;
		const struct cad_key *k = &r->keys[mid];
		int c;

		if (k->kind != kind)
			c = k->kind < kind ? -1 : 1;
		else if (k->peer != peer)
			c = k->peer < peer ? -1 : 1;
		else if (k->tag != tag)
			c = k->tag < tag ? -1 : 1;
		else if (k->occ != occ)
			c = k->occ < occ ? -1 : 1;
		else
			return k->node;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void copy_chunked(u8 *dst, const u8 *src, u64 len)
{
	while (len) {
		const u64 n = min_t(u64, len, COPY_CHUNK);

		memcpy(dst, src, n);
		dst += n;
		src += n;
		len -= n;
		if (len)
			cond_resched();
	}
}

static u8 *at(const struct cad_run *r, u32 buf, u64 off)
{
	return r->bufs[buf].kaddr + off;
}

/* Copies bytes [off, +len) of the transfer from sn to rn, a slice at a
 * time while b lasts (one at least); the bytes copied.
 */
u64 cad_transfer(struct cad_run *sr, const struct cad_node *sn, struct cad_run *rr,
		 const struct cad_node *rn, u64 off, u64 len, struct cad_budget *b)
{
	u64 done = 0;

	while (done < len && !(done && spent(b))) {
		const u64 n = min_t(u64, len - done, SLICE_BYTES);

		copy_chunked(at(rr, rn->dst_buf, rn->dst_off + off + done),
			     at(sr, sn->src_buf, sn->src_off + off + done), n);
		done += n;
		b->bytes -= (s64)n;
		if (done < len)
			cond_resched();
	}
	return done;
}

/* A transfer copied at once, more than a slice: what its pass's budget
 * does not cover becomes a queued part that any member may take
 * (go_on_later), in m, allocated before the copy.  Without m it is copied
 * whole, as before passes were bounded.  True when it is all done.
 */
static bool copy_now(struct cad_group *g, struct cad_run *sr, u32 snode, struct cad_run *rr,
		     u32 rnode, struct cad_budget *b)
{
	const struct cad_node *sn = &sr->prog.nodes[snode];
	const struct cad_node *rn = &rr->prog.nodes[rnode];
	struct cad_match *m = NULL;
	u64 done;

	if (sn->len > SLICE_BYTES)
		m = cad_new_match(sr, snode, rr, rnode);
	if (!m) {
		copy_chunked(at(rr, rn->dst_buf, rn->dst_off), at(sr, sn->src_buf, sn->src_off),
			     sn->len);
		b->bytes -= (s64)min_t(u64, sn->len, BUDGET_BYTES);
		return true;
	}
	done = cad_transfer(sr, sn, rr, rn, 0, sn->len, b);
	if (done == sn->len) {
		cad_free_match(m);
		return true;
	}
	atomic64_inc(&cad_cut);
	cad_queue_part(g, m, NULL, done, sn->len - done);
	cad_go_on_later(g);
	return false;
}

/* r's SEND or RECV node was posted: transfer now, within b, if its
 * partner is posted too (unless it is deferred, or the collective
 * failed).
 */
static void match(struct cad_group *g, struct cad_run *r, u32 node, struct cad_budget *b)
{
	const struct cad_node *nd = &r->prog.nodes[node];
	const u32 me = r->prog.hdr->rank;
	const u32 grank = r->ranks[nd->peer];
	struct cad_file *pf = g->members[grank];
	const struct cad_node *pn;
	struct cad_run *p, *sr, *rr;
	u32 su, ru;
	s64 m;

	if (!pf) {
		if (g->gone[grank])
			cad_fail_collective(g, r, -EPIPE);
		return;   /* not joined yet: its posting will find this one */
	}
	p = cad_find_running(pf, r->ctx, r->seq);
	if (!p)
		return;
	if (p->prog.hdr->rank != nd->peer || p->prog.hdr->nranks != r->prog.hdr->nranks ||
	    p->ranks[me] != r->file->rank || p->fp != r->fp) {
		cad_fail_collective(g, r, -EPROTO);
		return;
	}
	m = find_key(p, nd->kind == CAD_NODE_SEND ? CAD_NODE_RECV : CAD_NODE_SEND, me, nd->tag,
		     r->occ[node]);
	if (m < 0) {
		cad_fail_collective(g, r, -EPROTO);
		return;
	}
	if (p->ex.state[m] != CAD_NS_ISSUED)
		return;
	pn = &p->prog.nodes[m];
	if (pn->len != nd->len) {
		cad_fail_collective(g, r, -EPROTO);
		return;
	}
	if (nd->kind == CAD_NODE_SEND) {
		sr = r;
		su = node;
		rr = p;
		ru = (u32)m;
	} else {
		sr = p;
		su = (u32)m;
		rr = r;
		ru = node;
	}
	if (cad_defer_match(g, sr, su, rr, ru))
		return;
	if (!copy_now(g, sr, su, rr, ru, b))
		return;   /* (its nodes stay ISSUED until the rest is copied) */
	cad_exec_complete(&r->ex, node);
	cad_exec_complete(&p->ex, (u32)m);
	queue_work_run(g, p);
}

/* A COPY or REDUCE node, from where it stopped, a slice at a time while b
 * lasts (a REDUCE with a user-defined op costs by its instructions:
 * BUDGET_VM_INSNS in cad_run.h); true once it is done.
 */
static bool local_node(struct cad_group *g, struct cad_run *r, u32 node, struct cad_budget *b)
{
	const struct cad_node *nd = &r->prog.nodes[node];
	const bool user_op = nd->kind == CAD_NODE_REDUCE && nd->op == CAD_OP_USER;
	/* (instructions per element; whole VM blocks of a user-defined op,
	 * as apply.c cuts them)
	 */
	const u64 insns = user_op ? max_t(u64, 1, r->prog.ops[nd->user_op].code_count) : 0;
	const u64 esize = user_op ? r->prog.ops[nd->user_op].elem_size : 1;
	const u64 unit = nd->kind == CAD_NODE_COPY ? 1
			 : user_op ? esize * CAD_VM_LANES : cad_dtype_size(nd->dtype);
	const u64 slice = user_op ?
		max_t(u64, 1, min_t(u64, SLICE_BYTES / unit,
				    SLICE_VM_INSNS / (insns * CAD_VM_LANES))) * unit :
		max_t(u64, unit, SLICE_BYTES / unit * unit);

	while (r->part_done < nd->len) {
		const u64 n = min_t(u64, slice, nd->len - r->part_done);
		struct cad_node part = *nd;

		if (spent(b)) {
			if (b->insns <= 0)
				atomic64_inc(&cad_vm_cut);
			return false;
		}
		part.dst_off += r->part_done;
		part.src_off += r->part_done;
		part.len = n;
		if (nd->kind == CAD_NODE_COPY)
			memcpy(at(r, part.dst_buf, part.dst_off), at(r, part.src_buf, part.src_off),
			       n);
		else
			cad_reduce(&r->prog, &part, at(r, part.dst_buf, part.dst_off),
				   at(r, part.src_buf, part.src_off), g->vm_scratch);
		r->part_done += n;
		b->bytes -= (s64)n;
		if (user_op)
			b->insns -= (s64)min_t(u64, n / esize * insns, BUDGET_VM_INSNS);
		cond_resched();
	}
	return true;
}

/* Posts what is ready in r, performs its local nodes, finishes it when
 * every node is done.  The executor hands out ready transfers before ready
 * local nodes (cad_core.h), so a transfer to a peer that already posted
 * starts (here or on the CPU it is deferred to) before this CPU copies:
 * alltoall_rotated's own block is a copy ready at start beside the sends.
 * A failed match ends the run (its result is set): nothing more is
 * issued.
 */
static void issue(struct cad_group *g, struct cad_run *r, struct cad_budget *b)
{
	u32 node;

	while (r->running && !spent(b)) {
		const struct cad_node *nd;

		if (r->part_node >= 0)
			node = (u32)r->part_node;  /* a local node a pass cut */
		else if (!cad_exec_next(&r->ex, &node))
			break;
		nd = &r->prog.nodes[node];
		switch (nd->kind) {
		case CAD_NODE_COPY:
		case CAD_NODE_REDUCE:
			if (!local_node(g, r, node, b)) {
				r->part_node = node;
				atomic64_inc(&cad_cut);
				goto out;
			}
			r->part_node = -1;
			r->part_done = 0;
			spend(b, 0);
			cad_exec_complete(&r->ex, node);
			break;
		default:
			match(g, r, node, b);
			spend(b, 0);
			break;
		}
		if (!(b->nodes & 255))
			cond_resched();
	}
out:
	if (r->running && cad_exec_status(&r->ex) == 0)
		cad_finish(r, 0);
	else if (r->running && spent(b))
		queue_work_run(g, r);  /* ready nodes may be left: a later pass */
}

/* What a pass left (runs on the work list, queued parts) goes on
 * elsewhere: a member asleep in read() takes it (cad_wait_events), else
 * the group's work item, queued once.
 */
void cad_go_on_later(struct cad_group *g)
{
	u32 i;

	WRITE_ONCE(g->leftover, true);
	for (i = 0; i < g->nranks; i++) {
		struct cad_file *o = g->members[i];

		if (o && o->waiting && !cad_is_current(o)) {
			wake_up_interruptible(&o->wq);
			return;
		}
	}
	if (!g->more_queued) {
		g->more_queued = true;
		refcount_inc(&g->refs);
		queue_work(cad_wq, &g->more_work);
	}
}

void cad_progress(struct cad_group *g, struct cad_budget *b)
{
	struct cad_run *r;

	while (!spent(b) && (r = list_first_entry_or_null(&g->work, struct cad_run, work_link))) {
		list_del_init(&r->work_link);
		issue(g, r, b);
	}
	if (list_empty(&g->work))
		WRITE_ONCE(g->leftover, false);
	else
		cad_go_on_later(g);
}

/**
 * cad_start_locked() - start r as collective seq of its communicator
 * @g: r's group, its lock held
 * @r: a loaded run of the calling process
 * @seq: the collective's number
 *
 * A run whose mappings changed since it was pinned is looked up again
 * first (cad_revalidate()), and a run with bounce buffers copies them in
 * (cad_bounce_start()), without the group lock: looking pages up or
 * copying may fault, and a fault may wait for user space (a FUSE file,
 * userfaultfd) for as long as it likes, which no other member, work item
 * or release waiting for the lock may be made to wait for.  Meanwhile r
 * is marked revalidating: nobody starts or frees it, and the lock is
 * taken back (uninterruptibly, to clear that mark) before it goes on.
 *
 * Return: 0 (started, perhaps already ended), -EBUSY if r runs, is being
 * copied into or out of or revalidated, or another run of the file runs
 * collective seq of its communicator; -ESTALE if its pages are no longer
 * mapped where they were pinned; -EFAULT if a bounce buffer cannot be
 * read; -EINTR if the process is being killed while copying.
 */
int cad_start_locked(struct cad_group *g, struct cad_run *r, u64 seq)
{
	struct cad_tomb *t;

	if (r->running || r->inflight || r->revalidating || cad_find_running(r->file, r->ctx, seq))
		return -EBUSY;
	if (atomic_read(&r->stale) || r->bounced) {
		int err = cad_bounce_start(g, r);

		if (err)
			return err;
		/* (another run of the file may have started seq meanwhile) */
		if (r->running || r->inflight || cad_find_running(r->file, r->ctx, seq))
			return -EBUSY;
	}
	r->seq = seq;
	r->started = true;
	r->part_node = -1;
	r->part_done = 0;
	r->gen++;
	r->running = true;
	r->result = -EINPROGRESS;
	cad_exec_start(&r->ex);
	list_add_tail(&r->run_link, &r->file->running);
	cad_publish(r);
	if (g->ntombs)
		cad_tombs_passed(g, r->ctx, seq, r->file->rank);
	t = cad_find_tomb(g, r->ctx, seq);
	if (t) {
		cad_finish(r, t->err);
		cad_tomb_seen(g, t, r->file->rank);
		return 0;
	}
	queue_work_run(g, r);
	{
		struct cad_budget b = CAD_BUDGET;

		cad_progress(g, &b);
	}
	return 0;
}
