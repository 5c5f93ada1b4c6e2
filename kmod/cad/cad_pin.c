// SPDX-License-Identifier: GPL-2.0
/*
 * cad_pin.c - a run's buffers: pinned (charged to the limits of
 * kernel-limits.md), watched, looked up again after a change, bound to
 * the program's buffers; scratch.  Copied through the module's pages
 * instead when RLIMIT_MEMLOCK refuses a pin and the load allows it:
 * cad_bounce.c.
 */
#include "cad_run.h"

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
 * too, the module's total.
 */
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
		[CAD_LIMIT_MEMLOCK] =
			"RLIMIT_MEMLOCK of the process, shared with io_uring and RDMA pins (raise it: ulimit -l, limits.conf memlock, systemd LimitMEMLOCK; or give the process CAP_IPC_LOCK)",
		[CAD_LIMIT_USER] = "limit per user (max_pinned_mb), a parameter of cad.ko",
		[CAD_LIMIT_TOTAL] =
			"limit for all users (max_pinned_total_mb), a parameter of cad.ko",
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
 * buffer there is refused and a read-only one pinned without FOLL_WRITE.
 */
static bool shared_file(struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_SHARED) && vma->vm_file && !shmem_file(vma->vm_file) &&
	       !is_vm_hugetlb_page(vma);
}

/* Pins pages [done, +seg) of b, one mapping's: for writing if want_write
 * and the mapping allows it, else (a buffer the program only reads: !write)
 * as the mapping is; *wrote says which.  On failure nothing of the segment
 * stays pinned.  The mm's lock held.
 */
static int pin_segment(struct cad_kbuf *b, u64 first, u64 done, u64 seg, bool want_write,
		       bool write, bool *wrote)
{
	u64 got = 0;

	while (got < seg) {
		const long want = (long)min_t(u64, seg - got, 1u << 16);
		const unsigned int flags = FOLL_LONGTERM | (want_write ? FOLL_WRITE : 0);
		const long n = pin_user_pages(first + (done + got) * PAGE_SIZE, want, flags,
					      b->pages + done + got, NULL);

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

void cad_unpin_buffer(struct cad_file *f, struct cad_kbuf *b)
{
	if (b->watched)
		mmu_interval_notifier_remove(&b->mn);
	if (b->vbase)
		vunmap(b->vbase);
	if (b->bounce) {
		cad_bounce_free(b);
		kvfree(b->pages);
	} else if (b->pages) {
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
 * under the mm's lock, so that they cannot change in between.
 */
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
	if (which == CAD_LIMIT_MEMLOCK && b->run->may_bounce)
		return cad_bounce_buffer(f, b, addr, size, write, index, name, log);
	if (which != CAD_LIMIT_NONE)
		return refuse_pin(which, limit, npages, index, name, log);
	/* (the page array is the run's kernel memory: given back with it) */
	err = cad_user_charge(f->cu, npages * sizeof(*b->pages), &b->run->kmem, log);
	if (err) {
		uncharge(f, npages);
		return err;
	}
	b->pages = kvmalloc_array(npages, sizeof(*b->pages), GFP_KERNEL_ACCOUNT);
	if (!b->pages) {
		uncharge(f, npages);
		return -ENOMEM;
	}
	err = mmu_interval_notifier_insert(&b->mn, f->mm, first, npages << PAGE_SHIFT,
					   &notifier_ops);
	if (err) {
		kvfree(b->pages);
		b->pages = NULL;
		uncharge(f, npages);
		/* A process's first notifier takes all its mm's locks
		 * (mm_take_all_locks) and gives up with -EINTR when any signal
		 * is pending -- a profiler's SIGPROF, an alarm.  The load is
		 * undone: restart it after the handler (the caller sees EINTR
		 * only from a handler without SA_RESTART).  fuzz-kmod's
		 * SIGALRM exercises it.
		 */
		return err == -EINTR ? -ERESTARTSYS : err;
	}
	/* Mapping by mapping: FOLL_WRITE where the mapping takes it, so that a
	 * read-only buffer spanning a shared file and never-written anonymous
	 * memory does not pin the zero page for the latter.
	 */
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
			cad_logf(log,
				 "buffer %u (%s): [0x%llx, +%llu) is in a shared file mapping, which cannot be pinned for writing: use anonymous or shared memory",
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
			cad_unpin_buffer(f, b);
			return -ENOMEM;
		}
		b->kaddr = (u8 *)b->vbase + off;
	}
	return 0;
}

/* After an invalidation: whether the process still maps the pinned pages
 * at the buffer's addresses.  The owner's context, group lock not held
 * (looking the pages up may fault).
 */
static bool still_mapped(struct cad_kbuf *b)
{
	struct page *tmp[64];
	int tries;

	for (tries = 0; tries < 3; tries++) {
		unsigned long seq = mmu_interval_read_begin(&b->mn);
		u64 done = 0;

		while (done < b->npages) {
			int want = (int)min_t(u64, b->npages - done, ARRAY_SIZE(tmp));
			int n = pin_user_pages_fast(b->uaddr + done * PAGE_SIZE, want, b->gup_flags,
						    tmp);
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

int cad_revalidate(struct cad_run *r)
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
 * the element type (the user's own struct is read byte by byte).
 */
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

int cad_bind_buffers(struct cad_file *f, struct cad_run *r, const u64 *addrs, struct cad_log *log)
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
				cad_logf(log,
					 "buffer %u (%s): a scratch buffer has no address: pass 0",
					 i, name);
				err = -EINVAL;
			}
			continue;
		}
		if (!b->size)
			continue;
		if (!addrs[i]) {
			cad_logf(log, "buffer %u (%s): no address for %llu bytes", i, name,
				 b->size);
			err = -EFAULT;
		} else if (addrs[i] % align[i]) {
			cad_logf(log,
				 "buffer %u (%s): address 0x%llx is not aligned to the %u bytes its reductions need",
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
			err = cad_user_charge(f->cu, b->size, &r->kmem, log);
			if (err)
				return err;
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
