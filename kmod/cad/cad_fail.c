// SPDX-License-Identifier: GPL-2.0
/*
 * cad_fail.c - how runs end: their owners told, collectives failed on
 * every rank, tombstones for later starts, a member leaving.
 */
#include "cad_run.h"

void cad_publish(struct cad_run *r)
{
	struct cad_status *st = &r->file->status[r->handle];

	WRITE_ONCE(st->gen, r->gen);
	/* gen before result: readers of the status page read result, then gen */
	smp_wmb();
	WRITE_ONCE(st->result, r->result);
}

/* Tells r's owner that r ended: the status page, poll() and read(). */
void cad_tell(struct cad_run *r)
{
	struct cad_file *f = r->file;

	cad_publish(r);
	atomic_inc(&f->events);
	wake_up_interruptible(&f->wq);
}

/* Tells r's owner that r ended -- unless it ended well and must copy
 * bounce buffers out first (cad_bounce.c): then it is woken to do that,
 * and told after.
 */
void cad_ended(struct cad_run *r)
{
	if (r->bounce_out && !r->result)
		cad_bounce_ended(r);
	else
		cad_tell(r);
}

/* r ends with result.  While a copy into or out of its buffers is still
 * in flight (it failed meanwhile), its owner is told only when that copy
 * is done: the process must not reuse memory the module is copying.
 */
void cad_finish(struct cad_run *r, int result)
{
	cad_drop_deferred(r->file->group, r);
	r->running = false;
	r->result = result;
	list_del_init(&r->run_link);
	list_del_init(&r->work_link);
	if (r->inflight)
		r->publish_pending = true;
	else
		cad_ended(r);
}

struct cad_run *cad_find_running(struct cad_file *f, u64 ctx, u64 seq)
{
	struct cad_run *q;

	list_for_each_entry(q, &f->running, run_link)
		if (q->ctx == ctx && q->seq == seq)
			return q;
	return NULL;
}

/* The bucket key of (ctx, seq): hash_add() mixes it (hash_64), so
 * consecutive seqs of one ctx spread over the buckets.
 */
static u64 tomb_key(u64 ctx, u64 seq)
{
	return ctx ^ seq;
}

struct cad_tomb *cad_find_tomb(struct cad_group *g, u64 ctx, u64 seq)
{
	struct cad_tomb *t;

	hash_for_each_possible(g->tomb_hash, t, hnode, tomb_key(ctx, seq))
		if (t->ctx == ctx && t->seq == seq)
			return t;
	return NULL;
}

static void drop_tomb(struct cad_group *g, struct cad_tomb *t)
{
	list_del(&t->link);
	hash_del(&t->hnode);
	g->ntombs--;
	kfree(t);
	atomic64_dec(&cad_live_objects);
}

/* Group rank grank has seen t (it started t's collective, or left). */
void cad_tomb_seen(struct cad_group *g, struct cad_tomb *t, u32 grank)
{
	if (test_and_clear_bit(grank, t->unseen) && !--t->pending)
		drop_tomb(g, t);
}

/* The ranks of q's program that are still in the group (a rank not
 * joined yet may join and start it).
 */
static void add_ranks(struct cad_group *g, struct cad_tomb *t, const struct cad_run *q)
{
	u32 i;

	for (i = 0; i < q->prog.hdr->nranks; i++)
		if (!g->gone[q->ranks[i]])
			__set_bit(q->ranks[i], t->unseen);
}

/* Whether o started (ctx, seq) or has gone past it: a run of ctx of its
 * was last started as collective seq or a later one.  It is running it
 * (and ends with it now), it ended before the failure, or it ended and
 * o started later collectives of ctx since (cadrt starts one handle for
 * every call of an instance: its part of a collective may end, and the
 * next calls start, before a peer that still runs it cancels).  Ranks
 * number the collectives of a communicator in order (cad.h, struct
 * cad_ioc_start), so a rank past seq never starts it: a tombstone need
 * not wait for it.
 */
static bool started_it(const struct cad_file *o, u64 ctx, u64 seq)
{
	u32 h;

	for (h = 0; h < CAD_MAX_PROGRAMS; h++) {
		const struct cad_run *q = o->runs[h];

		if (q && q->ctx == ctx && q->started && q->seq >= seq)
			return true;
	}
	return false;
}

/* Group rank grank starts collective seq of ctx: it is past every earlier
 * one of ctx (started_it()), so their tombstones stop waiting for it.
 */
void cad_tombs_passed(struct cad_group *g, u64 ctx, u64 seq, u32 grank)
{
	struct cad_tomb *t, *tmp;

	list_for_each_entry_safe(t, tmp, &g->tombs, link)
		if (t->ctx == ctx && t->seq < seq)
			cad_tomb_seen(g, t, grank);
}

/* A tombstone for r's collective (r running it).  Its ranks are those of
 * every run of it in the group (with mismatched programs they may not
 * agree) that have not started it.  At the limit, or without memory, the
 * oldest one is reused.
 */
static void bury(struct cad_group *g, const struct cad_run *r, int err)
{
	struct cad_tomb *t;
	u32 i;

	if (cad_find_tomb(g, r->ctx, r->seq))
		return;
	t = g->ntombs < CAD_MAX_TOMBS ? kzalloc(struct_size(t, unseen, BITS_TO_LONGS(g->nranks)),
						GFP_KERNEL_ACCOUNT) : NULL;
	if (t) {
		atomic64_inc(&cad_live_objects);
		g->ntombs++;
	} else {
		t = list_first_entry_or_null(&g->tombs, struct cad_tomb, link);
		if (!t)
			return;
		list_del(&t->link);
		hash_del(&t->hnode);
		bitmap_zero(t->unseen, g->nranks);
	}
	t->ctx = r->ctx;
	t->seq = r->seq;
	t->err = err;
	add_ranks(g, t, r);
	for (i = 0; i < g->nranks; i++) {
		/* (a file runs a (ctx, seq) once at most: start_locked) */
		const struct cad_run *q = g->members[i] ?
			cad_find_running(g->members[i], r->ctx, r->seq) : NULL;

		if (q && q != r)
			add_ranks(g, t, q);
		cond_resched();
	}
	for (i = 0; i < g->nranks; i++) {
		if (test_bit(i, t->unseen) && g->members[i] &&
		    started_it(g->members[i], r->ctx, r->seq))
			__clear_bit(i, t->unseen);
		if (!(i & 255))
			cond_resched();
	}
	t->pending = bitmap_weight(t->unseen, g->nranks);
	list_add_tail(&t->link, &g->tombs);
	hash_add(g->tomb_hash, &t->hnode, tomb_key(t->ctx, t->seq));
	if (!t->pending)
		drop_tomb(g, t);
}

void cad_group_free_tombs(struct cad_group *g)
{
	struct cad_tomb *t, *tmp;

	list_for_each_entry_safe(t, tmp, &g->tombs, link)
		drop_tomb(g, t);
}

/* Collective (ctx, seq) of r failed: every run of it in the group ends
 * with err, and so will every later start of it.
 */
void cad_fail_collective(struct cad_group *g, const struct cad_run *r, int err)
{
	const u64 ctx = r->ctx, seq = r->seq;
	u32 i;

	bury(g, r, err);
	for (i = 0; i < g->nranks; i++) {
		struct cad_file *f = g->members[i];
		struct cad_run *q, *tmp;

		if (!f)
			continue;
		list_for_each_entry_safe(q, tmp, &f->running, run_link)
			if (q->ctx == ctx && q->seq == seq)
				cad_finish(q, err);
	}
}

/* Whether r still needs group rank grank: a transfer with it not done. */
static bool needs(const struct cad_run *r, u32 grank)
{
	u32 i;

	for (i = 0; i < r->prog.n_nodes; i++) {
		const struct cad_node *nd = &r->prog.nodes[i];

		if ((nd->kind == CAD_NODE_SEND || nd->kind == CAD_NODE_RECV) &&
		    r->ranks[nd->peer] == grank && r->ex.state[i] != CAD_NS_DONE)
			return true;
	}
	return false;
}

void cad_group_leave_locked(struct cad_group *g, struct cad_file *f)
{
	struct cad_run *q, *tmp;
	struct cad_tomb *t, *tt;
	u32 i;

	list_for_each_entry_safe(q, tmp, &f->running, run_link)
		cad_fail_collective(g, q, -EPIPE);  /* (q the only run of it in f) */
	g->members[f->rank] = NULL;
	g->gone[f->rank] = 1;
	g->alive--;
	list_for_each_entry_safe(t, tt, &g->tombs, link)
		cad_tomb_seen(g, t, f->rank);
	for (i = 0; i < g->nranks; i++) {
		struct cad_file *o = g->members[i];

		if (!o)
			continue;
		list_for_each_entry_safe(q, tmp, &o->running, run_link)
			if (needs(q, f->rank))
				cad_fail_collective(g, q, -EPIPE);
	}
}
