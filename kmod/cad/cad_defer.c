// SPDX-License-Identifier: GPL-2.0
/*
 * cad_defer.c - transfers copied later, elsewhere (module parameter
 * defer), in parts; the members' and the group's work items; read().
 */
#include "cad_run.h"

/*
 * With defer=0 the process whose call completes a match copies the data
 * in that call, on its own CPU, under the group lock, before it returns
 * to computing.  The KACC paper moves such work to another CPU; the other
 * settings do that in two ways, both without a thread of our own:
 *
 *   1  a member of the group asleep in read() -- waiting for its own
 *      collectives, so its CPU is otherwise idle -- is woken and copies
 *      (cad_wait_events); nobody asleep: copy at once, as with 0.
 *   2  a member's work item, queued on the module's per-CPU
 *      workqueue on the CPU where that process last entered the module:
 *      the side the program's direction hint names; with no hint, the
 *      side that is not the caller (it posted first), so that the caller
 *      goes back to its work at once.  When neither side is the caller (a
 *      completion cascading in a third process), a transfer of at least
 *      split_min bytes is split in two halves, the receiver's CPU copying
 *      one and the sender's the other at the same time; shorter ones go
 *      to the receiver (its cache gets the data it is about to read).
 *      Splitting when the caller is a side too was measured: a lone
 *      broadcast waited for at once got faster, but its overlap fell
 *      from about 0 to -50 %, the caller's half running right after its
 *      start instead of during its computation.
 *
 * Not an IPI (irq_work, or a tasklet it schedules), as the KACC paper
 * does: the copy could start at the interrupt (about 15 of the 29 us a
 * work item waits under TCG), but completing the transfer -- successors
 * made ready, further matches and copies, page revalidation, wake-ups --
 * is the group's state under its mutex, and sleeps; a worker would still
 * be needed after the copy, on the same CPU (docs/kernel.md, "How it
 * runs").
 *
 * A deferred transfer is a cad_match of one or two parts (cad_xfer).  Its
 * nodes stay ISSUED until every part is copied.  A queued part is on the
 * group's deferred list; whoever takes it off moves it to the inflight
 * list, counts it in both runs' inflight, and copies without the group
 * lock (the pages are pinned and mapped until the runs are destroyed,
 * which waits for inflight to be 0), within its pass's budget: a part cut
 * short is queued again, first, for the rest.  The last part done
 * completes the nodes.  A run that ends meanwhile (cancel, a peer gone,
 * a mismatch) takes its queued parts off unrun and marks the match dead; its owner
 * is told it ended once no part of it is in flight any more.  Any member
 * entering read() drains the queue too, so nothing is left behind.
 */
/* A match of sr's node snode and rr's rnode, no part queued yet (a live
 * object until put_part() puts its last part, or cad_free_match()).
 */
struct cad_match *cad_new_match(struct cad_run *sr, u32 snode, struct cad_run *rr, u32 rnode)
{
	struct cad_match *m = kmalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);

	if (!m)
		return NULL;
	atomic64_inc(&cad_live_objects);
	*m = (struct cad_match){ .sr = sr, .rr = rr, .snode = snode, .rnode = rnode };
	return m;
}

void cad_free_match(struct cad_match *m)
{
	kfree(m);
	atomic64_dec(&cad_live_objects);
}

static void put_part(struct cad_match *m)
{
	if (!--m->parts)
		cad_free_match(m);
}

void cad_drop_deferred(struct cad_group *g, struct cad_run *r)
{
	struct cad_xfer *x, *tmp;

	if (!g)
		return;
	list_for_each_entry(x, &g->inflight, link)
		if (x->m->sr == r || x->m->rr == r)
			x->m->dead = true;
	list_for_each_entry_safe(x, tmp, &g->deferred, link)
		if (x->m->sr == r || x->m->rr == r) {
			list_del(&x->link);
			g->ndeferred--;
			x->m->dead = true;
			put_part(x->m);
		}
}

bool cad_is_current(const struct cad_file *f)
{
	return f->mm == current->mm;
}

/* The side whose CPU should copy: the program's direction hint, else the
 * receiver (its cache gets the data it is about to read).
 */
static struct cad_file *copier(const struct cad_run *sr, const struct cad_run *rr, u8 flags)
{
	return flags == CAD_XFER_SENDER_WRITES ? sr->file : rr->file;
}

/* The member of the group to wake for a deferred transfer: one asleep in
 * read(), the two sides first.
 */
static struct cad_file *idle_member(struct cad_group *g, struct cad_file *first,
				    struct cad_file *second)
{
	u32 i;

	if (first->waiting && !cad_is_current(first))
		return first;
	if (second->waiting && !cad_is_current(second))
		return second;
	for (i = 0; i < g->nranks; i++) {
		struct cad_file *o = g->members[i];

		if (o && o->waiting && !cad_is_current(o))
			return o;
	}
	return NULL;
}

static bool usable_cpu(int cpu)
{
	return cpu >= 0 && cpu < nr_cpu_ids && cpu_online(cpu);
}

void cad_queue_part(struct cad_group *g, struct cad_match *m, struct cad_file *owner,
		    u64 off, u64 len)
{
	struct cad_xfer *x = &m->part[m->parts++];

	*x = (struct cad_xfer){ .m = m, .owner = owner, .off = off, .len = len };
	list_add_tail(&x->link, &g->deferred);
	g->ndeferred++;
}

/* Whether the transfer was deferred (else the caller copies now). */
bool cad_defer_match(struct cad_group *g, struct cad_run *sr, u32 snode, struct cad_run *rr,
		     u32 rnode)
{
	const struct cad_node *sn = &sr->prog.nodes[snode], *rn = &rr->prog.nodes[rnode];
	const unsigned int mode = READ_ONCE(cad_defer), split_min = READ_ONCE(cad_split_min);
	const u8 hint = sn->flags | rn->flags;
	struct cad_file *wake = NULL, *owner = copier(sr, rr, hint);
	int cpu = -1, scpu = -1;
	struct cad_match *m;
	u64 half = 0;

	if (!mode || sn->len < READ_ONCE(cad_defer_min))
		return false;
	if (mode == 1) {
		wake = idle_member(g, owner, owner == rr->file ? sr->file : rr->file);
		if (!wake)
			return false;
	} else if (!hint && (cad_is_current(rr->file) || cad_is_current(sr->file))) {
		/* The caller goes back to its own work at once; the other side,
		 * which posted first, copies.
		 */
		owner = cad_is_current(rr->file) ? sr->file : rr->file;
	} else if (!hint && split_min && sn->len >= max_t(u64, split_min, 128)) {
		/* A cascade in a third process: both sides share the copy. */
		cpu = READ_ONCE(rr->file->cpu);
		scpu = READ_ONCE(sr->file->cpu);
		if (cpu != scpu && usable_cpu(cpu) && usable_cpu(scpu))
			half = round_up(sn->len / 2, 64);
	}
	if (mode == 2 && !half) {
		cpu = READ_ONCE(owner->cpu);
		if (cad_is_current(owner) || cpu == raw_smp_processor_id() || !usable_cpu(cpu))
			return false;
	}
	m = cad_new_match(sr, snode, rr, rnode);
	if (!m)
		return false;
	atomic64_inc(&cad_deferred);
	if (half) {
		/* The receiver's half first: its work item may start at once. */
		cad_queue_part(g, m, rr->file, 0, half);
		cad_queue_part(g, m, sr->file, half, sn->len - half);
		atomic64_inc(&cad_split);
		queue_work_on(cpu, cad_defer_wq, &rr->file->defer_work);
		queue_work_on(scpu, cad_defer_wq, &sr->file->defer_work);
	} else if (wake) {
		cad_queue_part(g, m, NULL, 0, sn->len);
		wake_up_interruptible(&wake->wq);
	} else {
		cad_queue_part(g, m, owner, 0, sn->len);
		queue_work_on(cpu, cad_defer_wq, &owner->defer_work);
	}
	return true;
}

/* After a copy in flight for r ended: if r ended meanwhile and nothing
 * of it is in flight any more, tell its owner now.
 */
static void settle(struct cad_run *r)
{
	if (!r->inflight && r->publish_pending) {
		r->publish_pending = false;
		cad_ended(r);
	}
}

/* The first queued part f may copy: its own, or any if f is NULL (a
 * process in read(): its CPU is idle).
 */
static struct cad_xfer *next_part(struct cad_group *g, struct cad_file *f)
{
	struct cad_xfer *x;

	list_for_each_entry(x, &g->deferred, link)
		if (!f || !x->owner || x->owner == f)
			return x;
	return NULL;
}

/* Copies queued parts (f's, or any if f is NULL), completes the nodes of
 * a transfer when its last part is done, and does what that makes ready,
 * within b.  Called and returns with the group lock held; drops it while
 * copying.  Parts of f's left over: its work item goes on with them (a
 * reader, f NULL, loops in cad_wait_events).
 */
static void run_deferred(struct cad_group *g, struct cad_file *f, struct cad_budget *b)
{
	struct cad_xfer *x;

	while (!spent(b) && (x = next_part(g, f))) {
		struct cad_match *m = x->m;
		struct cad_run *sr = m->sr, *rr = m->rr;
		const struct cad_node *sn = &sr->prog.nodes[m->snode];
		const struct cad_node *rn = &rr->prog.nodes[m->rnode];
		u64 done;

		list_move_tail(&x->link, &g->inflight);
		g->ndeferred--;
		sr->inflight++;
		rr->inflight++;
		mutex_unlock(&g->lock);
		done = cad_transfer(sr, sn, rr, rn, x->off, x->len, b);
		spend(b, 0);
		mutex_lock(&g->lock);
		sr->inflight--;
		rr->inflight--;
		if (done < x->len && !m->dead) {
			/* Cut by the budget: the rest is queued again, first. */
			x->off += done;
			x->len -= done;
			list_move(&x->link, &g->deferred);
			g->ndeferred++;
			atomic64_inc(&cad_cut);
			wake_up_all(&g->idle);
			continue;
		}
		list_del(&x->link);
		if (m->parts == 1 && !m->dead) {
			cad_exec_complete(&sr->ex, m->snode);
			cad_exec_complete(&rr->ex, m->rnode);
			queue_work_run(g, sr);
			queue_work_run(g, rr);
		}
		put_part(m);
		settle(sr);
		settle(rr);
		wake_up_all(&g->idle);
		cad_progress(g, b);
	}
	if (next_part(g, f)) {
		if (f)
			queue_work(cad_defer_wq, &f->defer_work);
		else
			cad_go_on_later(g);  /* (a reader that returns leaves them) */
	}
}

static void defer_worker(struct work_struct *w)
{
	struct cad_file *f = container_of(w, struct cad_file, defer_work);
	/* pairs with smp_store_release() of f->group in join() */
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_budget b = CAD_BUDGET;

	if (!g)
		return;
	mutex_lock(&g->lock);
	run_deferred(g, f, &b);
	mutex_unlock(&g->lock);
}

/* A pass over what others left in g: queued parts any member may copy,
 * and runs a pass ran out of budget on.  The group lock held.
 */
static void take_over(struct cad_group *g)
{
	struct cad_budget b = CAD_BUDGET;

	run_deferred(g, NULL, &b);
	if (g->leftover)
		cad_progress(g, &b);
}

/* The group's work item: a pass over what the last one left (it holds a
 * reference to the group, dropped here; the last one frees the group,
 * this item with it, which a work function may do).
 */
static void more_worker(struct work_struct *w)
{
	struct cad_group *g = container_of(w, struct cad_group, more_work);

	mutex_lock(&g->lock);
	g->more_queued = false;
	take_over(g);  /* (parts nobody else takes too: defer=1's, say) */
	mutex_unlock(&g->lock);
	cad_group_put(g);
}

void cad_group_hand_off(struct cad_group *g)
{
	mutex_lock(&g->lock);
	if (g->ndeferred || !list_empty(&g->work))
		cad_go_on_later(g);
	mutex_unlock(&g->lock);
}

void cad_group_init_defer(struct cad_group *g)
{
	INIT_LIST_HEAD(&g->tombs);
	hash_init(g->tomb_hash);
	INIT_LIST_HEAD(&g->deferred);
	INIT_LIST_HEAD(&g->inflight);
	init_waitqueue_head(&g->idle);
	INIT_WORK(&g->more_work, more_worker);
}

void cad_file_init_defer(struct cad_file *f)
{
	INIT_WORK(&f->defer_work, defer_worker);
}

void cad_run_wait_idle(struct cad_group *g, struct cad_run *r)
{
	for (;;) {
		u32 busy;

		mutex_lock(&g->lock);
		busy = r->inflight;
		mutex_unlock(&g->lock);
		if (!busy)
			return;
		wait_event(g->idle, !READ_ONCE(r->inflight));
	}
}

int cad_wait_events(struct cad_file *f, bool nonblock, u64 *n)
{
	/* pairs with smp_store_release() of f->group in join() */
	struct cad_group *g = smp_load_acquire(&f->group);
	int err = 0;

	for (;;) {
		/* Runs that wait for their copy out are told ended here. */
		if (READ_ONCE(f->ncopyout) && cad_bounce_flush(f))
			return -EINTR;
		*n = (u64)atomic_xchg(&f->events, 0);
		if (*n)
			return 0;
		if (nonblock)
			return -EAGAIN;
		/* (A wait whose condition holds at once -- work left over --
		 * looks at no signal.)
		 */
		if (signal_pending(current))
			return -ERESTARTSYS;
		if (g) {
			if (mutex_lock_killable(&g->lock))
				return -EINTR;
			take_over(g);
			f->waiting = true;
			mutex_unlock(&g->lock);
		}
		err = wait_event_interruptible(f->wq, atomic_read(&f->events) ||
					       (READ_ONCE(f->ncopyout) && cad_is_current(f)) ||
					       (g && (READ_ONCE(g->ndeferred) ||
						      READ_ONCE(g->leftover))));
		if (g) {
			/* Whatever was handed to this process while it slept is
			 * done here (a pass of it), even when a signal ends the
			 * wait; and waiting must be cleared, so this lock is not
			 * killable (no holder of it waits for user space).
			 */
			mutex_lock(&g->lock);
			f->waiting = false;
			take_over(g);
			mutex_unlock(&g->lock);
		}
		if (err)
			return -ERESTARTSYS;
	}
}
