// SPDX-License-Identifier: GPL-2.0
/*
 * cad_run.c - loading, pinning and running verified programs.
 *
 * A run's SEND or RECV node is "posted" when the core's executor issues it
 * (state ISSUED).  Posting looks for the peer's run of the same (ctx, seq)
 * and its node of the opposite kind with the same (tag, occurrence): if
 * that one is posted too, the data moves now, from the sender's pinned
 * pages to the receiver's, and both nodes complete; their successors, in
 * both ranks, are posted in turn (the group's work list, no recursion).
 * Otherwise the node waits, and the peer's posting finds it later.  So a
 * whole pipeline advances inside one process's start ioctl while the other
 * processes compute: progress without threads, as in the KACC paper.
 *
 * Who copies: by default (module parameter defer=2) a work item on the
 * CPU of the side the program's direction hint (CAD_XFER_*) names, with
 * no hint the side that did not make the match; or whichever process
 * posts second, in that call (see "Deferred transfers" below).
 *
 * Failures are per collective: a run that fails (a peer left, a cancel, a
 * mismatch between the ranks' programs) fails every run of its (ctx, seq)
 * in the group, and a tombstone makes later starts of it fail too, so no
 * rank waits for a partner that will never come.  The tombstone lasts
 * until every rank of the collective that had not started it then has
 * started it, or a later collective of the communicator, or left (at most
 * CAD_MAX_TOMBS a group: past that the oldest goes).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/shmem_fs.h>
#include <linux/hugetlb_inline.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cad_priv.h"

/* Bytes copied between two chances to reschedule. */
#define COPY_CHUNK (256u << 10)

/* ------------------------------------------------------------------ */
/* Buffers                                                             */

static bool on_invalidate(struct mmu_interval_notifier *mn, const struct mmu_notifier_range *range,
			  unsigned long cur_seq)
{
	struct cad_kbuf *b = container_of(mn, struct cad_kbuf, mn);

	mmu_interval_set_seq(mn, cur_seq);
	atomic_set(&b->run->stale, 1);
	return true;
}

static const struct mmu_interval_notifier_ops notifier_ops = {
	.invalidate = on_invalidate,
};

/* Pinned pages are charged to the opener's user, as io_uring and RDMA
 * charge theirs (user->locked_vm), and shown in its mm's VmPin.  Not to
 * the mm alone: the pins live as long as the file, which may outlive the
 * process that pinned (an exec, a fork, SCM_RIGHTS), so a per-mm count
 * would let one user pin without bound.  They count in cad_pinned_pages
 * too, the module's total. */
static void uncharge(struct cad_file *f, u64 npages)
{
	atomic_long_sub(npages, &f->user->locked_vm);
	atomic64_sub(npages, &f->mm->pinned_vm);
	atomic64_sub(npages, &cad_pinned_pages);
}

/* The limits charge() holds pins to; which one refused a pin. */
enum cad_pin_limit {
	CAD_LIMIT_NONE,
	CAD_LIMIT_MEMLOCK,      /* the loader's RLIMIT_MEMLOCK */
	CAD_LIMIT_USER,         /* max_pinned_mb, per user */
	CAD_LIMIT_TOTAL,        /* max_pinned_total_mb, all users */
};

/**
 * charge() - count pages about to be pinned against the limits
 * @f: the file whose user the pages are charged to
 * @npages: how many
 * @limit: out: the limit that refused them, in pages
 *
 * The user's locked_vm may reach neither max_pinned_mb nor, unless the
 * caller has CAP_IPC_LOCK, the caller's RLIMIT_MEMLOCK (the budget io_uring
 * and RDMA take their pins from too); the module's total may not reach
 * max_pinned_total_mb.  Each is raised with a compare-exchange, so that
 * two loads at once cannot both pass a limit that has room for one.
 * uncharge() gives the pages back.
 *
 * Return: CAD_LIMIT_NONE with the pages charged, else the limit that
 * refused them (nothing charged).
 */
static enum cad_pin_limit charge(struct cad_file *f, u64 npages, u64 *limit)
{
	const u64 user_max = (u64)READ_ONCE(cad_max_pinned_mb) << (20 - PAGE_SHIFT);
	const u64 total_max = (u64)READ_ONCE(cad_max_pinned_total_mb) << (20 - PAGE_SHIFT);
	enum cad_pin_limit which = CAD_LIMIT_USER;
	u64 max = user_max;
	long cur, next;
	s64 tcur;

	if (!capable(CAP_IPC_LOCK)) {
		const u64 memlock = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

		if (memlock < max) {
			max = memlock;
			which = CAD_LIMIT_MEMLOCK;
		}
	}
	cur = atomic_long_read(&f->user->locked_vm);
	do {
		if (npages > max || cur < 0 || (u64)cur > max - npages) {
			*limit = max;
			return which;
		}
		next = cur + (long)npages;
	} while (!atomic_long_try_cmpxchg(&f->user->locked_vm, &cur, next));

	tcur = atomic64_read(&cad_pinned_pages);
	do {
		if (npages > total_max || (u64)tcur > total_max - npages) {
			atomic_long_sub(npages, &f->user->locked_vm);
			*limit = total_max;
			return CAD_LIMIT_TOTAL;
		}
	} while (!atomic64_try_cmpxchg(&cad_pinned_pages, &tcur, tcur + npages));
	atomic64_add(npages, &f->mm->pinned_vm);
	return CAD_LIMIT_NONE;
}

/**
 * refuse_pin() - say why pages could not be pinned
 * @which: the limit that refused them (charge())
 * @limit: that limit, in pages
 * @npages: the pages the buffer needs
 * @index: the buffer's index in the program
 * @name: the buffer's name
 * @log: the load's log
 *
 * Into the load's log, and (ratelimited) into the kernel's, for the
 * administrator: which limit, and how to raise it.
 *
 * Return: -ENOMEM.
 */
static int refuse_pin(enum cad_pin_limit which, u64 limit, u64 npages, u32 index, const char *name,
		      struct cad_log *log)
{
	static const char *const what[] = {
		[CAD_LIMIT_MEMLOCK] = "RLIMIT_MEMLOCK of the process, shared with io_uring and RDMA pins "
				      "(raise it: ulimit -l, limits.conf memlock, systemd LimitMEMLOCK; "
				      "or give the process CAP_IPC_LOCK)",
		[CAD_LIMIT_USER] = "limit per user (max_pinned_mb), a parameter of cad.ko",
		[CAD_LIMIT_TOTAL] = "limit for all users (max_pinned_total_mb), a parameter of cad.ko",
	};
	const unsigned long long kib = limit << (PAGE_SHIFT - 10);

	cad_logf(log, "buffer %u (%s): pinning %llu more pages (%llu KiB) exceeds the %llu KiB %s",
		 index, name, npages, npages << (PAGE_SHIFT - 10), kib, what[which]);
	pr_warn_ratelimited("cad: %s[%d] uid %u: cannot pin %llu KiB more: it exceeds the %llu KiB %s\n",
			    current->comm, task_pid_nr(current),
			    from_kuid_munged(current_user_ns(), current_uid()),
			    npages << (PAGE_SHIFT - 10), kib, what[which]);
	return -ENOMEM;
}

/* A shared mapping of a file that is not shared memory: a page of one
 * written through a long-term pin behind the file system's back breaks its
 * writeback (Linux 6.5 refuses such pins; 6.1 does not), so a writable
 * buffer there is refused and a read-only one pinned without FOLL_WRITE. */
static bool shared_file(struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_SHARED) && vma->vm_file && !shmem_file(vma->vm_file) && !is_vm_hugetlb_page(vma);
}

/* Pins pages [done, +seg) of b, one mapping's: for writing if want_write
 * and the mapping allows it, else (a buffer the program only reads: !write)
 * as the mapping is; *wrote says which.  On failure nothing of the segment
 * stays pinned.  The mm's lock held. */
static int pin_segment(struct cad_kbuf *b, u64 first, u64 done, u64 seg, bool want_write, bool write, bool *wrote)
{
	u64 got = 0;

	while (got < seg) {
		const long want = (long)min_t(u64, seg - got, 1u << 16);
		const unsigned int flags = FOLL_LONGTERM | (want_write ? FOLL_WRITE : 0);
		const long n = pin_user_pages(first + (done + got) * PAGE_SIZE, want, flags, b->pages + done + got, NULL);

		if (n <= 0 && want_write && !write && got == 0) {
			want_write = false;   /* a read-only mapping: pin it as it is */
			continue;
		}
		if (n <= 0) {
			if (got)
				unpin_user_pages(b->pages + done, got);
			return n ? (int)n : -EFAULT;
		}
		got += n;
	}
	*wrote = want_write;
	return 0;
}

static void unpin_buffer(struct cad_file *f, struct cad_kbuf *b)
{
	if (b->watched)
		mmu_interval_notifier_remove(&b->mn);
	if (b->vbase)
		vunmap(b->vbase);
	if (b->pages) {
		if (b->dirty)
			unpin_user_pages_dirty_lock(b->pages, b->npages, true);
		else
			unpin_user_pages(b->pages, b->npages);
		uncharge(f, b->npages);
		kvfree(b->pages);
	}
	kvfree(b->scratch);
	memset(b, 0, sizeof(*b));
}

/* Pins [addr, +size) of the calling process and maps it contiguously into
 * the kernel.  Writable buffers are pinned for writing.  A read-only one is
 * pinned for writing too where the mapping allows it: that breaks any
 * copy-on-write sharing now, so later writes by the process land in the
 * pages the module holds (pinning the shared zero page of a buffer never
 * written yet would freeze it at zero).  The range is watched before it is
 * pinned: an invalidation in between marks the run stale, and its first
 * start looks the pages up again.  The mappings are checked and pinned
 * under the mm's lock, so that they cannot change in between. */
static int pin_buffer(struct cad_file *f, struct cad_kbuf *b, u64 addr, u64 size, bool write,
		      u32 index, const char *name, struct cad_log *log)
{
	const u64 off = addr & ~PAGE_MASK;
	const u64 first = addr & PAGE_MASK;
	u64 npages, limit, done = 0;
	enum cad_pin_limit which;
	bool refused = false;  /* by us, with a message of its own */
	int err;

	if (addr + size < addr || !access_ok((void __user *)(uintptr_t)addr, size)) {
		cad_logf(log, "buffer %u (%s): [0x%llx, +%llu) is not a user address range",
			 index, name, addr, size);
		return -EFAULT;
	}
	npages = (off + size + PAGE_SIZE - 1) >> PAGE_SHIFT;
	which = charge(f, npages, &limit);
	if (which != CAD_LIMIT_NONE)
		return refuse_pin(which, limit, npages, index, name, log);
	b->pages = kvmalloc_array(npages, sizeof(*b->pages), GFP_KERNEL_ACCOUNT);
	if (!b->pages) {
		uncharge(f, npages);
		return -ENOMEM;
	}
	err = mmu_interval_notifier_insert(&b->mn, f->mm, first, npages << PAGE_SHIFT, &notifier_ops);
	if (err) {
		kvfree(b->pages);
		b->pages = NULL;
		uncharge(f, npages);
		/* A process's first notifier takes all its mm's locks
		 * (mm_take_all_locks) and gives up with -EINTR when any signal
		 * is pending -- a profiler's SIGPROF, an alarm.  The load is
		 * undone: restart it after the handler (the caller sees EINTR
		 * only from a handler without SA_RESTART).  fuzz-kmod's
		 * SIGALRM exercises it. */
		return err == -EINTR ? -ERESTARTSYS : err;
	}
	/* Mapping by mapping: FOLL_WRITE where the mapping takes it, so that a
	 * read-only buffer spanning a shared file and never-written anonymous
	 * memory does not pin the zero page for the latter. */
	mmap_read_lock(f->mm);
	b->gup_flags = FOLL_LONGTERM | FOLL_WRITE;
	while (!err && done < npages) {
		const u64 at_addr = first + done * PAGE_SIZE;
		struct vm_area_struct *vma = vma_lookup(f->mm, at_addr);
		u64 seg;
		bool wrote;

		if (!vma) {
			err = -EFAULT;
			break;
		}
		if (write && shared_file(vma)) {
			cad_logf(log, "buffer %u (%s): [0x%llx, +%llu) is in a shared file mapping, which cannot be pinned for writing: use anonymous or shared memory",
				 index, name, addr, size);
			err = -EINVAL;
			refused = true;
			break;
		}
		seg = min_t(u64, npages - done, (vma->vm_end - at_addr) >> PAGE_SHIFT);
		err = pin_segment(b, first, done, seg, !shared_file(vma), write, &wrote);
		if (!err) {
			done += seg;
			if (!wrote)  /* still_mapped() looks the pages up as they were pinned */
				b->gup_flags = FOLL_LONGTERM;
		}
	}
	mmap_read_unlock(f->mm);
	if (err) {
		if (done)
			unpin_user_pages(b->pages, done);
		mmu_interval_notifier_remove(&b->mn);
		kvfree(b->pages);
		b->pages = NULL;
		uncharge(f, npages);
		if (refused || err == -ENOMEM)
			return err;
		cad_logf(log, "buffer %u (%s): [0x%llx, +%llu) is not mapped %s in the process",
			 index, name, addr, size, write ? "writable" : "readable");
		return -EFAULT;
	}
	b->watched = true;
	b->uaddr = first;
	b->npages = npages;
	b->dirty = write;
	if (npages == 1 && !IS_ENABLED(CONFIG_HIGHMEM)) {
		b->kaddr = (u8 *)page_address(b->pages[0]) + off;
	} else {
		/* Read-only in the kernel too where the program only reads. */
		b->vbase = vmap(b->pages, npages, VM_MAP, write ? PAGE_KERNEL : PAGE_KERNEL_RO);
		if (!b->vbase) {
			unpin_buffer(f, b);
			return -ENOMEM;
		}
		b->kaddr = (u8 *)b->vbase + off;
	}
	return 0;
}

/* After an invalidation: whether the process still maps the pinned pages
 * at the buffer's addresses.  The owner's context, group lock not held
 * (looking the pages up may fault). */
static bool still_mapped(struct cad_kbuf *b)
{
	struct page *tmp[64];
	int tries;

	for (tries = 0; tries < 3; tries++) {
		unsigned long seq = mmu_interval_read_begin(&b->mn);
		u64 done = 0;

		while (done < b->npages) {
			int want = (int)min_t(u64, b->npages - done, ARRAY_SIZE(tmp));
			int n = pin_user_pages_fast(b->uaddr + done * PAGE_SIZE, want, b->gup_flags, tmp);
			bool same;
			int i;

			if (n <= 0)
				return false;
			same = true;
			for (i = 0; i < n; i++)
				same &= tmp[i] == b->pages[done + i];
			unpin_user_pages(tmp, n);
			if (!same)
				return false;
			done += n;
		}
		if (!mmu_interval_read_retry(&b->mn, seq))
			return true;
	}
	return false;
}

static int revalidate(struct cad_run *r)
{
	u32 i;

	if (current->mm != r->file->mm)
		return -ESTALE;
	atomic_set(&r->stale, 0);
	for (i = 0; i < r->nbufs; i++)
		if (r->bufs[i].watched && !still_mapped(&r->bufs[i])) {
			atomic_set(&r->stale, 1);
			return -ESTALE;
		}
	return 0;
}

/* The alignment a REDUCE over dtype needs of its buffers: C's alignment of
 * the element type (the user's own struct is read byte by byte). */
static u32 dtype_align(unsigned int dtype)
{
	switch (dtype) {
	case CAD_DT_FLOAT_INT: case CAD_DT_INT_INT: case CAD_DT_SHORT_INT:
		return 4;
	case CAD_DT_DOUBLE_INT: case CAD_DT_LONG_INT:
		return 8;
	case CAD_DT_USER:
		return 1;
	default:
		return cad_dtype_size(dtype);
	}
}

static int bind_buffers(struct cad_file *f, struct cad_run *r, const u64 *addrs, struct cad_log *log)
{
	const struct cad_prog *p = &r->prog;
	u32 *align;
	u32 i, j;
	int err = 0;

	align = kvcalloc(p->n_buffers ? p->n_buffers : 1, sizeof(*align), GFP_KERNEL_ACCOUNT);
	if (!align)
		return -ENOMEM;
	for (i = 0; i < p->n_buffers; i++)
		align[i] = 1;
	for (i = 0; i < p->n_nodes; i++) {
		const struct cad_node *nd = &p->nodes[i];

		if (nd->kind != CAD_NODE_REDUCE)
			continue;
		align[nd->dst_buf] = max(align[nd->dst_buf], dtype_align(nd->dtype));
		align[nd->src_buf] = max(align[nd->src_buf], dtype_align(nd->dtype));
	}

	for (i = 0; i < p->n_buffers && !err; i++) {
		const struct cad_buffer *b = &p->buffers[i];
		const char *name = cad_prog_string(p, b->name);

		if (b->kind == CAD_BUF_SCRATCH) {
			if (addrs[i]) {
				cad_logf(log, "buffer %u (%s): a scratch buffer has no address: pass 0", i, name);
				err = -EINVAL;
			}
			continue;
		}
		if (!b->size)
			continue;
		if (!addrs[i]) {
			cad_logf(log, "buffer %u (%s): no address for %llu bytes", i, name, b->size);
			err = -EFAULT;
		} else if (addrs[i] % align[i]) {
			cad_logf(log, "buffer %u (%s): address 0x%llx is not aligned to the %u bytes its reductions need",
				 i, name, addrs[i], align[i]);
			err = -EINVAL;
		}
		for (j = 0; j < i && !err; j++) {
			const struct cad_buffer *o = &p->buffers[j];

			if (o->kind == CAD_BUF_SCRATCH || !o->size)
				continue;
			if (addrs[i] < addrs[j] + o->size && addrs[j] < addrs[i] + b->size) {
				cad_logf(log, "buffers %u (%s) and %u (%s) overlap", j,
					 cad_prog_string(p, o->name), i, name);
				err = -EINVAL;
			}
		}
	}
	kvfree(align);
	if (err)
		return err;

	for (i = 0; i < p->n_buffers; i++) {
		const struct cad_buffer *b = &p->buffers[i];
		struct cad_kbuf *kb = &r->bufs[i];

		kb->run = r;
		if (!b->size)
			continue;
		if (b->kind == CAD_BUF_SCRATCH) {
			kb->scratch = kvzalloc(b->size, GFP_KERNEL_ACCOUNT);
			if (!kb->scratch)
				return -ENOMEM;
			kb->kaddr = kb->scratch;
			continue;
		}
		err = pin_buffer(f, kb, addrs[i], b->size, b->access & CAD_ACC_WRITE, i,
				 cad_prog_string(p, b->name), log);
		if (err)
			return err;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Matching keys                                                       */

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

static int index_keys(struct cad_run *r)
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
		r->keys[n++] = (struct cad_key){ .kind = nd->kind, .peer = nd->peer, .tag = nd->tag, .node = i };
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

/* ------------------------------------------------------------------ */
/* Running                                                             */

static void publish(struct cad_run *r)
{
	struct cad_status *st = &r->file->status[r->handle];

	WRITE_ONCE(st->gen, r->gen);
	smp_wmb();
	WRITE_ONCE(st->result, r->result);
}

static void drop_deferred(struct cad_group *g, struct cad_run *r);

/* Tells r's owner that r ended: the status page, poll() and read(). */
static void tell(struct cad_run *r)
{
	struct cad_file *f = r->file;

	publish(r);
	atomic_inc(&f->events);
	wake_up_interruptible(&f->wq);
}

/* r ends with result.  While a copy into or out of its buffers is still
 * in flight (it failed meanwhile), its owner is told only when that copy
 * is done: the process must not reuse memory the module is copying. */
static void finish(struct cad_run *r, int result)
{
	drop_deferred(r->file->group, r);
	r->running = false;
	r->result = result;
	list_del_init(&r->run_link);
	list_del_init(&r->work_link);
	if (r->inflight)
		r->publish_pending = true;
	else
		tell(r);
}

static struct cad_run *find_running(struct cad_file *f, u64 ctx, u64 seq)
{
	struct cad_run *q;

	list_for_each_entry(q, &f->running, run_link)
		if (q->ctx == ctx && q->seq == seq)
			return q;
	return NULL;
}

/* The bucket key of (ctx, seq): hash_add() mixes it (hash_64), so
 * consecutive seqs of one ctx spread over the buckets. */
static u64 tomb_key(u64 ctx, u64 seq)
{
	return ctx ^ seq;
}

static struct cad_tomb *find_tomb(struct cad_group *g, u64 ctx, u64 seq)
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
static void tomb_seen(struct cad_group *g, struct cad_tomb *t, u32 grank)
{
	if (test_and_clear_bit(grank, t->unseen) && !--t->pending)
		drop_tomb(g, t);
}

/* The ranks of q's program that are still in the group (a rank not
 * joined yet may join and start it). */
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
 * not wait for it. */
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
 * one of ctx (started_it()), so their tombstones stop waiting for it. */
static void tombs_passed(struct cad_group *g, u64 ctx, u64 seq, u32 grank)
{
	struct cad_tomb *t, *tmp;

	list_for_each_entry_safe(t, tmp, &g->tombs, link)
		if (t->ctx == ctx && t->seq < seq)
			tomb_seen(g, t, grank);
}

/* A tombstone for r's collective (r running it).  Its ranks are those of
 * every run of it in the group (with mismatched programs they may not
 * agree) that have not started it.  At the limit, or without memory, the
 * oldest one is reused. */
static void bury(struct cad_group *g, const struct cad_run *r, int err)
{
	struct cad_tomb *t;
	u32 i;

	if (find_tomb(g, r->ctx, r->seq))
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
		const struct cad_run *q = g->members[i] ? find_running(g->members[i], r->ctx, r->seq) : NULL;

		if (q && q != r)
			add_ranks(g, t, q);
		cond_resched();
	}
	for (i = 0; i < g->nranks; i++) {
		if (test_bit(i, t->unseen) && g->members[i] && started_it(g->members[i], r->ctx, r->seq))
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
 * with err, and so will every later start of it. */
static void fail_collective(struct cad_group *g, const struct cad_run *r, int err)
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
				finish(q, err);
	}
}

/*
 * What one pass does before it leaves the rest to another: a pass holds
 * the group lock, runs in a system call that a fatal signal must be able
 * to end, or in a worker of a shared workqueue, and a program may ask for
 * any amount of work (a million COPY nodes of 512 MiB each pass the
 * verifier).  A pass stops after BUDGET_BYTES copied or reduced or
 * BUDGET_NODES nodes (a COPY, a REDUCE or a transfer is cut between
 * slices of SLICE_BYTES: local_node() resumes a local node where it
 * stopped, and what is left of a transfer is queued as a part, like a
 * deferred one), or when the calling process is being killed;
 * go_on_later() hands what is left to a member asleep in
 * read() (its CPU is idle, and the work is its group's), else to the
 * group's work item on cad_wq.  Real collectives stay far below it: a
 * cascade moves what the job's buffers hold.
 */
#define BUDGET_BYTES (64ll << 20)
#define BUDGET_NODES 16384
#define SLICE_BYTES  (1ull << 20)  /* copied or reduced between looks at the budget */

struct cad_budget {
	s64 bytes;
	u32 nodes;
};

#define CAD_BUDGET { .bytes = BUDGET_BYTES, .nodes = BUDGET_NODES }

static bool spent(const struct cad_budget *b)
{
	return b->bytes <= 0 || !b->nodes || fatal_signal_pending(current);
}

static void spend(struct cad_budget *b, u64 bytes)
{
	b->bytes -= (s64)min_t(u64, bytes, BUDGET_BYTES);
	if (b->nodes)
		b->nodes--;
}

static void queue_work_run(struct cad_group *g, struct cad_run *r)
{
	if (list_empty(&r->work_link))
		list_add_tail(&r->work_link, &g->work);
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
 * time while b lasts (one at least); the bytes copied. */
static u64 transfer(struct cad_run *sr, const struct cad_node *sn, struct cad_run *rr, const struct cad_node *rn,
		    u64 off, u64 len, struct cad_budget *b)
{
	u64 done = 0;

	while (done < len && !(done && spent(b))) {
		const u64 n = min_t(u64, len - done, SLICE_BYTES);

		copy_chunked(at(rr, rn->dst_buf, rn->dst_off + off + done), at(sr, sn->src_buf, sn->src_off + off + done),
			     n);
		done += n;
		b->bytes -= (s64)n;
		if (done < len)
			cond_resched();
	}
	return done;
}

/* ------------------------------------------------------------------ */
/* Deferred transfers                                                  */
/*
 * With defer=0 the process whose call completes a match copies the data
 * in that call, on its own CPU, under the group lock, before it returns
 * to computing.  The KACC paper moves such work to another CPU; the other
 * settings do that in two ways, both without a thread of our own:
 *
 *   1  a member of the group asleep in read() -- waiting for its own
 *      collectives, so its CPU is otherwise idle -- is woken and copies
 *      (cad_wait_events); nobody asleep: copy at once, as with 0.
 *   2  a member's work item, queued on the high-priority system
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
struct cad_match;

struct cad_xfer {
	struct list_head link;          /* in group->deferred or group->inflight */
	struct cad_match *m;
	struct cad_file *owner;         /* whose work item copies it; NULL: read() */
	u64 off, len;                   /* the part of the transfer */
};

struct cad_match {
	struct cad_run *sr, *rr;
	u32 snode, rnode;
	u32 parts;                      /* parts not copied yet */
	bool dead;                      /* a run of it ended: complete nothing */
	struct cad_xfer part[2];
};

/* A match of sr's node snode and rr's rnode, no part queued yet (a live
 * object until put_part() puts its last part, or free_match()). */
static struct cad_match *new_match(struct cad_run *sr, u32 snode, struct cad_run *rr, u32 rnode)
{
	struct cad_match *m = kmalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);

	if (!m)
		return NULL;
	atomic64_inc(&cad_live_objects);
	*m = (struct cad_match){ .sr = sr, .rr = rr, .snode = snode, .rnode = rnode };
	return m;
}

static void free_match(struct cad_match *m)
{
	kfree(m);
	atomic64_dec(&cad_live_objects);
}

static void put_part(struct cad_match *m)
{
	if (!--m->parts)
		free_match(m);
}

static void drop_deferred(struct cad_group *g, struct cad_run *r)
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

static bool is_current(const struct cad_file *f)
{
	return f->mm == current->mm;
}

/* The side whose CPU should copy: the program's direction hint, else the
 * receiver (its cache gets the data it is about to read). */
static struct cad_file *copier(const struct cad_run *sr, const struct cad_run *rr, u8 flags)
{
	return flags == CAD_XFER_SENDER_WRITES ? sr->file : rr->file;
}

/* The member of the group to wake for a deferred transfer: one asleep in
 * read(), the two sides first. */
static struct cad_file *idle_member(struct cad_group *g, struct cad_file *first, struct cad_file *second)
{
	u32 i;

	if (first->waiting && !is_current(first))
		return first;
	if (second->waiting && !is_current(second))
		return second;
	for (i = 0; i < g->nranks; i++) {
		struct cad_file *o = g->members[i];

		if (o && o->waiting && !is_current(o))
			return o;
	}
	return NULL;
}

static bool usable_cpu(int cpu)
{
	return cpu >= 0 && cpu < nr_cpu_ids && cpu_online(cpu);
}

static void queue_part(struct cad_group *g, struct cad_match *m, struct cad_file *owner, u64 off, u64 len)
{
	struct cad_xfer *x = &m->part[m->parts++];

	*x = (struct cad_xfer){ .m = m, .owner = owner, .off = off, .len = len };
	list_add_tail(&x->link, &g->deferred);
	g->ndeferred++;
}

/* Whether the transfer was deferred (else the caller copies now). */
static bool defer(struct cad_group *g, struct cad_run *sr, u32 snode, struct cad_run *rr, u32 rnode)
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
	} else if (!hint && (is_current(rr->file) || is_current(sr->file))) {
		/* The caller goes back to its own work at once; the other side,
		 * which posted first, copies. */
		owner = is_current(rr->file) ? sr->file : rr->file;
	} else if (!hint && split_min && sn->len >= max_t(u64, split_min, 128)) {
		/* A cascade in a third process: both sides share the copy. */
		cpu = READ_ONCE(rr->file->cpu);
		scpu = READ_ONCE(sr->file->cpu);
		if (cpu != scpu && usable_cpu(cpu) && usable_cpu(scpu))
			half = round_up(sn->len / 2, 64);
	}
	if (mode == 2 && !half) {
		cpu = READ_ONCE(owner->cpu);
		if (is_current(owner) || cpu == raw_smp_processor_id() || !usable_cpu(cpu))
			return false;
	}
	m = new_match(sr, snode, rr, rnode);
	if (!m)
		return false;
	atomic64_inc(&cad_deferred);
	if (half) {
		/* The receiver's half first: its work item may start at once. */
		queue_part(g, m, rr->file, 0, half);
		queue_part(g, m, sr->file, half, sn->len - half);
		atomic64_inc(&cad_split);
		queue_work_on(cpu, system_highpri_wq, &rr->file->defer_work);
		queue_work_on(scpu, system_highpri_wq, &sr->file->defer_work);
	} else if (wake) {
		queue_part(g, m, NULL, 0, sn->len);
		wake_up_interruptible(&wake->wq);
	} else {
		queue_part(g, m, owner, 0, sn->len);
		queue_work_on(cpu, system_highpri_wq, &owner->defer_work);
	}
	return true;
}

static void progress(struct cad_group *g, struct cad_budget *b);
static void go_on_later(struct cad_group *g);

/* After a copy in flight for r ended: if r ended meanwhile and nothing
 * of it is in flight any more, tell its owner now. */
static void settle(struct cad_run *r)
{
	if (!r->inflight && r->publish_pending) {
		r->publish_pending = false;
		tell(r);
	}
}

/* The first queued part f may copy: its own, or any if f is NULL (a
 * process in read(): its CPU is idle). */
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
 * reader, f NULL, loops in cad_wait_events). */
static void run_deferred(struct cad_group *g, struct cad_file *f, struct cad_budget *b)
{
	struct cad_xfer *x;

	while (!spent(b) && (x = next_part(g, f))) {
		struct cad_match *m = x->m;
		struct cad_run *sr = m->sr, *rr = m->rr;
		const struct cad_node *sn = &sr->prog.nodes[m->snode], *rn = &rr->prog.nodes[m->rnode];
		u64 done;

		list_move_tail(&x->link, &g->inflight);
		g->ndeferred--;
		sr->inflight++;
		rr->inflight++;
		mutex_unlock(&g->lock);
		done = transfer(sr, sn, rr, rn, x->off, x->len, b);
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
		progress(g, b);
	}
	if (next_part(g, f)) {
		if (f)
			queue_work(system_highpri_wq, &f->defer_work);
		else
			go_on_later(g);  /* (a reader that returns leaves them) */
	}
}

static void defer_worker(struct work_struct *w)
{
	struct cad_file *f = container_of(w, struct cad_file, defer_work);
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_budget b = CAD_BUDGET;

	if (!g)
		return;
	mutex_lock(&g->lock);
	run_deferred(g, f, &b);
	mutex_unlock(&g->lock);
}

/* A pass over what others left in g: queued parts any member may copy,
 * and runs a pass ran out of budget on.  The group lock held. */
static void take_over(struct cad_group *g)
{
	struct cad_budget b = CAD_BUDGET;

	run_deferred(g, NULL, &b);
	if (g->leftover)
		progress(g, &b);
}

/* The group's work item: a pass over what the last one left (it holds a
 * reference to the group, dropped here; the last one frees the group,
 * this item with it, which a work function may do). */
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
		go_on_later(g);
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
	struct cad_group *g = smp_load_acquire(&f->group);
	int err = 0;

	for (;;) {
		*n = (u64)atomic_xchg(&f->events, 0);
		if (*n)
			return 0;
		if (nonblock)
			return -EAGAIN;
		/* (A wait whose condition holds at once -- work left over --
		 * looks at no signal.) */
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
						      (g && (READ_ONCE(g->ndeferred) || READ_ONCE(g->leftover))));
		if (g) {
			/* Whatever was handed to this process while it slept is
			 * done here (a pass of it), even when a signal ends the
			 * wait; and waiting must be cleared, so this lock is not
			 * killable (no holder of it waits for user space). */
			mutex_lock(&g->lock);
			f->waiting = false;
			take_over(g);
			mutex_unlock(&g->lock);
		}
		if (err)
			return -ERESTARTSYS;
	}
}

/* A transfer copied at once, more than a slice: what its pass's budget
 * does not cover becomes a queued part that any member may take
 * (go_on_later), in m, allocated before the copy.  Without m it is copied
 * whole, as before passes were bounded.  True when it is all done. */
static bool copy_now(struct cad_group *g, struct cad_run *sr, u32 snode, struct cad_run *rr, u32 rnode,
		     struct cad_budget *b)
{
	const struct cad_node *sn = &sr->prog.nodes[snode], *rn = &rr->prog.nodes[rnode];
	struct cad_match *m = NULL;
	u64 done;

	if (sn->len > SLICE_BYTES)
		m = new_match(sr, snode, rr, rnode);
	if (!m) {
		copy_chunked(at(rr, rn->dst_buf, rn->dst_off), at(sr, sn->src_buf, sn->src_off), sn->len);
		b->bytes -= (s64)min_t(u64, sn->len, BUDGET_BYTES);
		return true;
	}
	done = transfer(sr, sn, rr, rn, 0, sn->len, b);
	if (done == sn->len) {
		free_match(m);
		return true;
	}
	atomic64_inc(&cad_cut);
	queue_part(g, m, NULL, done, sn->len - done);
	go_on_later(g);
	return false;
}

/* r's SEND or RECV node was posted: transfer now, within b, if its
 * partner is posted too (unless it is deferred, or the collective
 * failed). */
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
			fail_collective(g, r, -EPIPE);
		return;   /* not joined yet: its posting will find this one */
	}
	p = find_running(pf, r->ctx, r->seq);
	if (!p)
		return;
	if (p->prog.hdr->rank != nd->peer || p->prog.hdr->nranks != r->prog.hdr->nranks ||
	    p->ranks[me] != r->file->rank || p->fp != r->fp) {
		fail_collective(g, r, -EPROTO);
		return;
	}
	m = find_key(p, nd->kind == CAD_NODE_SEND ? CAD_NODE_RECV : CAD_NODE_SEND, me, nd->tag, r->occ[node]);
	if (m < 0) {
		fail_collective(g, r, -EPROTO);
		return;
	}
	if (p->ex.state[m] != CAD_NS_ISSUED)
		return;
	pn = &p->prog.nodes[m];
	if (pn->len != nd->len) {
		fail_collective(g, r, -EPROTO);
		return;
	}
	if (nd->kind == CAD_NODE_SEND) {
		sr = r, su = node, rr = p, ru = (u32)m;
	} else {
		sr = p, su = (u32)m, rr = r, ru = node;
	}
	if (defer(g, sr, su, rr, ru))
		return;
	if (!copy_now(g, sr, su, rr, ru, b))
		return;   /* (its nodes stay ISSUED until the rest is copied) */
	cad_exec_complete(&r->ex, node);
	cad_exec_complete(&p->ex, (u32)m);
	queue_work_run(g, p);
}

/* A COPY or REDUCE node, from where it stopped, a slice at a time while b
 * lasts (a REDUCE with a user-defined op costs by its length: 1 GiB of a
 * 4096-instruction op is 2^42 instructions, a long time to hold a group's
 * lock and to ignore SIGKILL); true once it is done. */
static bool local_node(struct cad_group *g, struct cad_run *r, u32 node, struct cad_budget *b)
{
	const struct cad_node *nd = &r->prog.nodes[node];
	const bool user_op = nd->kind == CAD_NODE_REDUCE && nd->op == CAD_OP_USER;
	const u64 cost = user_op ? max_t(u64, 1, r->prog.ops[nd->user_op].code_count / 16) : 1;
	/* (whole VM blocks of a user-defined op, as apply.c cuts them) */
	const u64 unit = nd->kind == CAD_NODE_COPY ? 1
			 : user_op ? (u64)r->prog.ops[nd->user_op].elem_size * CAD_VM_LANES
				   : cad_dtype_size(nd->dtype);
	const u64 slice = max_t(u64, unit, SLICE_BYTES / cost / unit * unit);

	while (r->part_done < nd->len) {
		const u64 n = min_t(u64, slice, nd->len - r->part_done);
		struct cad_node part = *nd;

		if (spent(b))
			return false;
		part.dst_off += r->part_done;
		part.src_off += r->part_done;
		part.len = n;
		if (nd->kind == CAD_NODE_COPY)
			memcpy(at(r, part.dst_buf, part.dst_off), at(r, part.src_buf, part.src_off), n);
		else
			cad_reduce(&r->prog, &part, at(r, part.dst_buf, part.dst_off),
				   at(r, part.src_buf, part.src_off), g->vm_scratch);
		r->part_done += n;
		b->bytes -= (s64)min_t(u64, n * cost, BUDGET_BYTES);
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
 * issued. */
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
		finish(r, 0);
	else if (r->running && spent(b))
		queue_work_run(g, r);  /* ready nodes may be left: a later pass */
}

/* What a pass left (runs on the work list, queued parts) goes on
 * elsewhere: a member asleep in read() takes it (cad_wait_events), else
 * the group's work item, queued once. */
static void go_on_later(struct cad_group *g)
{
	u32 i;

	WRITE_ONCE(g->leftover, true);
	for (i = 0; i < g->nranks; i++) {
		struct cad_file *o = g->members[i];

		if (o && o->waiting && !is_current(o)) {
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

static void progress(struct cad_group *g, struct cad_budget *b)
{
	struct cad_run *r;

	while (!spent(b) && (r = list_first_entry_or_null(&g->work, struct cad_run, work_link))) {
		list_del_init(&r->work_link);
		issue(g, r, b);
	}
	if (list_empty(&g->work))
		WRITE_ONCE(g->leftover, false);
	else
		go_on_later(g);
}

/**
 * start_locked() - start r as collective seq of its communicator
 * @g: r's group, its lock held
 * @r: a loaded run of the calling process
 * @seq: the collective's number
 *
 * A run whose mappings changed since it was pinned is looked up again
 * first (revalidate()), without the group lock: looking pages up may
 * fault, and a fault may wait for user space (a FUSE file, userfaultfd)
 * for as long as it likes, which no other member, work item or release
 * waiting for the lock may be made to wait for.  Meanwhile r is marked
 * revalidating: nobody starts or frees it, and the lock is taken back
 * (uninterruptibly, to clear that mark) before it goes on.
 *
 * Return: 0 (started, perhaps already ended), -EBUSY if r runs, is being
 * copied into or out of or revalidated, or another run of the file runs
 * collective seq of its communicator; -ESTALE if its pages are no longer
 * mapped where they were pinned.
 */
static int start_locked(struct cad_group *g, struct cad_run *r, u64 seq)
{
	struct cad_tomb *t;

	if (r->running || r->inflight || r->revalidating || find_running(r->file, r->ctx, seq))
		return -EBUSY;
	if (atomic_read(&r->stale)) {
		int err;

		r->revalidating = true;
		mutex_unlock(&g->lock);
		err = revalidate(r);
		mutex_lock(&g->lock);
		r->revalidating = false;
		if (err)
			return err;
		/* (another run of the file may have started seq meanwhile) */
		if (r->running || r->inflight || find_running(r->file, r->ctx, seq))
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
	publish(r);
	if (g->ntombs)
		tombs_passed(g, r->ctx, seq, r->file->rank);
	t = find_tomb(g, r->ctx, seq);
	if (t) {
		finish(r, t->err);
		tomb_seen(g, t, r->file->rank);
		return 0;
	}
	queue_work_run(g, r);
	{
		struct cad_budget b = CAD_BUDGET;

		progress(g, &b);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The ioctls                                                          */

void cad_run_destroy(struct cad_run *r)
{
	u32 i;

	if (!r)
		return;
	if (r->bufs) {
		for (i = 0; i < r->nbufs; i++)
			unpin_buffer(r->file, &r->bufs[i]);
		kvfree(r->bufs);
	}
	kvfree(r->ranks);
	kvfree(r->keys);
	kvfree(r->occ);
	kvfree(r->exec_mem);
	kvfree(r->image);
	kfree(r);
	atomic64_dec(&cad_live_objects);
}

static struct cad_run *lookup(struct cad_file *f, u32 handle)
{
	return handle < CAD_MAX_PROGRAMS ? f->runs[handle] : NULL;
}

static int load(struct cad_file *f, struct cad_ioc_load *a, struct cad_run *r, struct cad_log *log)
{
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_limits limits = cad_default_limits;
	const struct cad_prog_header *hdr;
	u64 *addrs = NULL;
	u32 i;
	int err;

	if (current->mm != f->mm) {
		cad_logf(log, "load: /dev/cad was opened by another process");
		return -EINVAL;
	}
	if (a->flags & ~CAD_LOAD_START) {
		cad_logf(log, "load: unknown flags 0x%x", a->flags & ~CAD_LOAD_START);
		return -EINVAL;
	}
	limits.max_image_size = min_t(u64, limits.max_image_size, (u64)cad_max_image_kb << 10);
	limits.max_scratch = min_t(u64, limits.max_scratch, (u64)READ_ONCE(cad_max_scratch_mb) << 20);
	if (a->prog_size > limits.max_image_size) {
		cad_logf(log, "load: the image has %u bytes, more than the limit of %u (max_image_kb)",
			 a->prog_size, limits.max_image_size);
		return -E2BIG;
	}
	if (a->prog_size < sizeof(struct cad_prog_header)) {
		cad_logf(log, "load: the image has %u bytes, less than a program header", a->prog_size);
		return -EINVAL;
	}
	/* Verified from a kernel copy: the process cannot change it after. */
	r->image = kvmalloc(a->prog_size, GFP_KERNEL_ACCOUNT);
	if (!r->image)
		return -ENOMEM;
	if (copy_from_user(r->image, u64_to_user_ptr(a->prog), a->prog_size)) {
		cad_logf(log, "load: the image at 0x%llx is not readable", a->prog);
		return -EFAULT;
	}
	err = cad_verify(r->image, a->prog_size, &limits, &r->prog, log);
	if (err)
		return err;
	hdr = r->prog.hdr;

	if (hdr->nranks > g->nranks) {
		cad_logf(log, "load: the program is for %u ranks, the group has %u", hdr->nranks, g->nranks);
		return -EINVAL;
	}
	r->ranks = kvcalloc(hdr->nranks, sizeof(u32), GFP_KERNEL_ACCOUNT);
	if (!r->ranks)
		return -ENOMEM;
	if (a->ranks) {
		if (copy_from_user(r->ranks, u64_to_user_ptr(a->ranks), hdr->nranks * sizeof(u32))) {
			cad_logf(log, "load: the rank map at 0x%llx is not readable", a->ranks);
			return -EFAULT;
		}
	} else {
		for (i = 0; i < hdr->nranks; i++)
			r->ranks[i] = i;
	}
	for (i = 0; i < hdr->nranks; i++) {
		u32 j;

		if (r->ranks[i] >= g->nranks) {
			cad_logf(log, "load: rank map: program rank %u is group rank %u of %u", i, r->ranks[i],
				 g->nranks);
			return -EINVAL;
		}
		for (j = 0; j < i; j++)
			if (r->ranks[j] == r->ranks[i]) {
				cad_logf(log, "load: rank map: program ranks %u and %u are both group rank %u", j, i,
					 r->ranks[i]);
				return -EINVAL;
			}
	}
	if (r->ranks[hdr->rank] != f->rank) {
		cad_logf(log, "load: the program is rank %u's, which is group rank %u, not this process's %u",
			 hdr->rank, r->ranks[hdr->rank], f->rank);
		return -EINVAL;
	}

	if (a->nbufs != r->prog.n_buffers) {
		cad_logf(log, "load: %u buffer addresses for a program of %u buffers", a->nbufs, r->prog.n_buffers);
		return -EINVAL;
	}
	r->nbufs = r->prog.n_buffers;
	r->bufs = kvcalloc(r->nbufs ? r->nbufs : 1, sizeof(*r->bufs), GFP_KERNEL_ACCOUNT);
	addrs = kvcalloc(r->nbufs ? r->nbufs : 1, sizeof(u64), GFP_KERNEL_ACCOUNT);
	if (!r->bufs || !addrs) {
		kvfree(addrs);
		return -ENOMEM;
	}
	if (r->nbufs && copy_from_user(addrs, u64_to_user_ptr(a->buf_addrs), r->nbufs * sizeof(u64))) {
		cad_logf(log, "load: the buffer addresses at 0x%llx are not readable", a->buf_addrs);
		kvfree(addrs);
		return -EFAULT;
	}
	err = bind_buffers(f, r, addrs, log);
	kvfree(addrs);
	if (err)
		return err;

	err = index_keys(r);
	if (err)
		return err;
	r->exec_mem = kvzalloc(cad_exec_mem_size(&r->prog) + 4, GFP_KERNEL_ACCOUNT);
	if (!r->exec_mem)
		return -ENOMEM;
	cad_exec_init(&r->ex, &r->prog, r->exec_mem);
	r->ctx = a->ctx;
	r->fp = a->fp;
	return 0;
}

int cad_run_load(struct cad_file *f, struct cad_ioc_load *a)
{
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_run *r;
	struct cad_log log;
	char *logmem = NULL;
	u32 h;
	int err;

	if (a->log_size) {
		logmem = kzalloc(min_t(u32, a->log_size, 4096), GFP_KERNEL_ACCOUNT);
		if (!logmem)
			return -ENOMEM;
	}
	cad_log_init(&log, logmem, logmem ? min_t(u32, a->log_size, 4096) : 0);

	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r) {
		kfree(logmem);
		return -ENOMEM;
	}
	atomic64_inc(&cad_live_objects);
	r->file = f;
	INIT_LIST_HEAD(&r->run_link);
	INIT_LIST_HEAD(&r->work_link);

	if (!g) {
		cad_logf(&log, "load: join a group first");
		err = -ENOTCONN;
	} else {
		err = load(f, a, r, &log);
	}
	if (!err && r->prog.n_ops && !READ_ONCE(g->vm_scratch)) {
		void *s = kvzalloc(CAD_VM_SCRATCH_SIZE, GFP_KERNEL_ACCOUNT);

		if (mutex_lock_killable(&g->lock)) {
			err = -EINTR;
		} else {
			if (!g->vm_scratch)
				g->vm_scratch = s, s = NULL;
			mutex_unlock(&g->lock);
			if (!g->vm_scratch)
				err = -ENOMEM;
		}
		kvfree(s);
	}
	if (!err && mutex_lock_killable(&g->lock))
		err = -EINTR;  /* killed while waiting: r goes below */
	if (!err) {
		/* Read once: root may change it meanwhile (it is <= CAD_MAX_PROGRAMS). */
		const u32 max = READ_ONCE(cad_max_programs);

		for (h = 0; h < max && f->runs[h]; h++)
			;
		if (h == max) {
			cad_logf(&log, "load: this file has %u programs loaded, the limit (max_programs)", h);
			err = -EMFILE;
		} else {
			r->handle = h;
			f->runs[h] = r;
			f->status[h] = (struct cad_status){ 0, 0 };
			a->handle = h;
			if (a->flags & CAD_LOAD_START)
				err = start_locked(g, r, a->seq);
			r = NULL;  /* the file's now, even if it could not start */
		}
		mutex_unlock(&g->lock);
	}
	if (err && a->log_size && copy_to_user(u64_to_user_ptr(a->log_buf), logmem, log.len + 1))
		err = -EFAULT;
	kfree(logmem);
	cad_run_destroy(r);
	return err;
}

int cad_run_op(struct cad_file *f, unsigned int cmd, u32 handle, u64 seq, int *result)
{
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_run *r, *gone = NULL;
	int err = 0;

	if (!g)
		return -ENOTCONN;
	/* A program is started, cancelled and freed only by the process
	 * that loaded it (the opener, as load() requires): not by a child
	 * that inherited the file, nor one it was passed to. */
	if (cmd != CAD_IOC_TEST && current->mm != f->mm)
		return -EPERM;
	if (mutex_lock_killable(&g->lock))
		return -EINTR;
	r = lookup(f, handle);
	if (!r) {
		err = -EBADF;
	} else if (cmd == CAD_IOC_START) {
		err = start_locked(g, r, seq);
	} else if (cmd == CAD_IOC_TEST) {
		if (!r->started)
			err = -EINVAL;
		else
			*result = r->running || r->publish_pending ? -EINPROGRESS : r->result;
	} else if (cmd == CAD_IOC_FREE && r->revalidating) {
		err = -EBUSY;  /* its START, in another thread, goes on with it */
	} else {  /* CANCEL, FREE */
		if (r->running)
			fail_collective(g, r, -ECANCELED);
		if (cmd == CAD_IOC_FREE) {
			f->runs[handle] = NULL;
			r->publish_pending = false;  /* its status slot may be reused */
			gone = r;
		}
	}
	mutex_unlock(&g->lock);
	if (gone) {
		cad_run_wait_idle(g, gone);
		cad_run_destroy(gone);
	}
	return err;
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
		fail_collective(g, q, -EPIPE);  /* (q the only run of it in f) */
	g->members[f->rank] = NULL;
	g->gone[f->rank] = 1;
	g->alive--;
	list_for_each_entry_safe(t, tt, &g->tombs, link)
		tomb_seen(g, t, f->rank);
	for (i = 0; i < g->nranks; i++) {
		struct cad_file *o = g->members[i];

		if (!o)
			continue;
		list_for_each_entry_safe(q, tmp, &o->running, run_link)
			if (needs(q, f->rank))
				fail_collective(g, q, -EPIPE);
	}
}
