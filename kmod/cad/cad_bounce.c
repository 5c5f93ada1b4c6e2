// SPDX-License-Identifier: GPL-2.0
/*
 * cad_bounce.c - buffers copied through the module's own pages, for a
 * LOAD with CAD_LOAD_BOUNCE whose pin the caller's RLIMIT_MEMLOCK refused.
 *
 * A bounce buffer is a page array like a pinned one (the transfers, COPY
 * and REDUCE see no difference), of pages allocated here: charged to the
 * user's max_user_kmem_mb and to its memory cgroup, never to locked_vm.
 * Peers see nothing of it either: the run is the same collective, with
 * the data copied in before it starts and out after it ends, both in the
 * owner's context and without the group lock (nothing that holds it
 * touches user memory, cad_priv.h):
 *
 *   in   START, before the run starts: every bounce buffer, from the
 *        process (a buffer the program only writes too, so that bytes it
 *        does not write come back as they were); the lock is dropped
 *        meanwhile, the run marked revalidating as for a page lookup.
 *        A range the process no longer maps fails the START (-EFAULT).
 *   out  a run with bounce buffers it writes that ends well is marked
 *        copyout and its owner woken, but its end is not published: the
 *        owner's next read(), TEST or START copies the written buffers
 *        out and only then publishes it (status page, read()'s count).
 *        So no one sees it ended before the data is in place.  A range
 *        gone meanwhile ends the run with -EFAULT.
 *
 * A bounce buffer has no notifier: munmap between LOAD and START changes
 * nothing until START copies in.  Failed runs copy nothing out.
 */
#include "cad_run.h"

/* Bytes copied in or out between chances to reschedule. */
#define BOUNCE_CHUNK BIT(20)

static void free_pages_of(struct cad_kbuf *b, u64 n)
{
	while (n)
		__free_page(b->pages[--n]);
}

/**
 * cad_bounce_buffer() - a buffer of the module's own pages instead of pinned ones
 * @f: the loading file
 * @b: the buffer, its run set
 * @addr: its address in the process
 * @size: its bytes
 * @write: the program writes it
 * @index: its index in the program, for the log
 * @name: its name, for the log
 * @log: the load's log
 *
 * The pages are laid out as the process's would be (the same offset in
 * the first page), so that alignment is the same.
 *
 * Return: 0, or -ENOMEM (over max_user_kmem_mb, logged; or no memory).
 */
int cad_bounce_buffer(struct cad_file *f, struct cad_kbuf *b, u64 addr, u64 size, bool write,
		      u32 index, const char *name, struct cad_log *log)
{
	const u64 off = addr & ~PAGE_MASK;
	const u64 npages = (off + size + PAGE_SIZE - 1) >> PAGE_SHIFT;
	u64 i;
	int err;

	err = cad_user_charge(f->cu, npages * (PAGE_SIZE + sizeof(*b->pages)), &b->run->kmem, log);
	if (err)
		return err;
	b->pages = kvmalloc_array(npages, sizeof(*b->pages), GFP_KERNEL_ACCOUNT);
	if (!b->pages)
		return -ENOMEM;
	for (i = 0; i < npages; i++) {
		b->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		err = !b->pages[i] ? -ENOMEM : fatal_signal_pending(current) ? -EINTR : 0;
		if (err) {
			free_pages_of(b, b->pages[i] ? i + 1 : i);
			kvfree(b->pages);
			b->pages = NULL;
			return err;
		}
		cond_resched();
	}
	b->npages = npages;
	b->bounce = true;
	b->written = write;
	b->addr = addr;
	b->size = size;
	atomic64_add(npages, &cad_bounce_pages);
	if (npages == 1) {
		b->kaddr = (u8 *)page_address(b->pages[0]) + off;
	} else {
		/* Writable in the kernel even if the program only reads: START
		 * copies in through it.
		 */
		b->vbase = vmap(b->pages, npages, VM_MAP, PAGE_KERNEL);
		if (!b->vbase) {
			cad_unpin_buffer(f, b);
			return -ENOMEM;
		}
		b->kaddr = (u8 *)b->vbase + off;
	}
	b->run->bounce_out |= write;
	b->run->bounced = true;
	atomic64_inc(&cad_bounced);
	/* (a line per such buffer, "; " between them) */
	cad_logf(log,
		 "%sbuffer %u (%s): pinning %llu pages (%llu KiB) exceeds the RLIMIT_MEMLOCK of the process; copying through kernel memory instead",
		 log->len ? "; " : "", index, name, npages, npages << (PAGE_SHIFT - 10));
	pr_info_ratelimited("cad: %s[%d] uid %u: buffer %u: RLIMIT_MEMLOCK refused %llu KiB; copying through kernel memory instead\n",
			    current->comm, task_pid_nr(current),
			    from_kuid_munged(current_user_ns(), current_uid()), index,
			    npages << (PAGE_SHIFT - 10));
	return 0;
}

void cad_bounce_free(struct cad_kbuf *b)
{
	free_pages_of(b, b->npages);
	atomic64_sub(b->npages, &cad_bounce_pages);
}

/* Copies [b->addr, +size) between the process and the pages, in or out,
 * a chunk at a time: 0, -EFAULT, or -EINTR if the process is being killed.
 */
static int copy_bounce(struct cad_kbuf *b, bool in)
{
	u64 done = 0;

	while (done < b->size) {
		const u64 n = min_t(u64, b->size - done, BOUNCE_CHUNK);
		void __user *u = u64_to_user_ptr(b->addr + done);
		unsigned long left;

		if (in)
			left = copy_from_user(b->kaddr + done, u, n);
		else
			left = copy_to_user(u, b->kaddr + done, n);
		if (left)
			return -EFAULT;
		done += n;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

/* Copies the bounce buffers of r in from the process (in) or, those r
 * writes, out to it: 0, -EFAULT, or -EINTR (killed).
 */
static int copy_all(struct cad_run *r, bool in)
{
	u32 i;
	int err;

	for (i = 0; i < r->nbufs; i++) {
		if (!r->bufs[i].bounce || (!in && !r->bufs[i].written))
			continue;
		err = copy_bounce(&r->bufs[i], in);
		if (err)
			return err;
	}
	return 0;
}

/* r ended well and waits for its copy out (group lock held): its owner
 * is woken (read(), poll()) to do it.
 */
void cad_bounce_ended(struct cad_run *r)
{
	r->copyout = true;
	r->file->ncopyout++;
	wake_up_interruptible(&r->file->wq);
}

/* r's copy out is done (err 0) or failed (-EFAULT): r is told it ended.
 * Group lock held.
 */
static void copied_out(struct cad_run *r, int err)
{
	r->copyout = false;
	r->file->ncopyout--;
	if (err && !r->result)
		r->result = err;
	cad_tell(r);
}

/**
 * cad_bounce_start() - what START does in the process's memory
 * @g: r's group, its lock held; dropped meanwhile, taken back
 * @r: a run about to start, not running, nothing of it in flight
 *
 * Its pages looked up again if a watched mapping changed, the copy out of
 * its last run if still pending (that run told ended), its bounce buffers
 * copied in.  r is marked revalidating meanwhile: nobody starts or frees
 * it.
 *
 * Return: 0; -ESTALE (pages remapped), -EFAULT (a bounce buffer not
 * readable) or -EINTR (killed): r not to be started.
 */
int cad_bounce_start(struct cad_group *g, struct cad_run *r)
{
	const bool out = r->copyout;
	int err = 0, oerr = 0;

	r->revalidating = true;
	mutex_unlock(&g->lock);
	if (atomic_read(&r->stale))
		err = cad_revalidate(r);
	if (out)
		oerr = copy_all(r, false);
	if (!err && oerr != -EINTR && r->bounced)
		err = copy_all(r, true);
	mutex_lock(&g->lock);
	r->revalidating = false;
	if (out && oerr != -EINTR)
		copied_out(r, oerr);
	return oerr == -EINTR ? oerr : err;
}

/* Runs copied out in one round of cad_bounce_flush(). */
#define FLUSH_BATCH 16

/**
 * cad_bounce_flush() - copy out what f's ended runs wrote, and tell them ended
 * @f: a file of the calling process (its owner's: only it reaches the memory)
 *
 * Return: 0, or -EINTR (the process is being killed; what it has not
 * copied out stays for later, or for its release).
 */
int cad_bounce_flush(struct cad_file *f)
{
	/* pairs with smp_store_release() of f->group in join() */
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_run *batch[FLUSH_BATCH];
	int errs[FLUSH_BATCH];
	int err = 0;

	if (!g || !cad_is_current(f))
		return 0;
	while (!err && READ_ONCE(f->ncopyout)) {
		u32 h, n = 0, i;

		if (mutex_lock_killable(&g->lock))
			return -EINTR;
		for (h = 0; h < CAD_MAX_PROGRAMS && n < FLUSH_BATCH; h++) {
			struct cad_run *r = f->runs[h];

			if (r && r->copyout && !r->revalidating) {
				r->revalidating = true;
				batch[n++] = r;
			}
		}
		mutex_unlock(&g->lock);
		if (!n)
			return 0;  /* (another thread of the process copies them) */
		for (i = 0; i < n; i++) {
			errs[i] = err ? err : copy_all(batch[i], false);
			if (errs[i] == -EINTR)
				err = -EINTR;
		}
		/* Uninterruptibly: the marks must go (no holder waits for user space). */
		mutex_lock(&g->lock);
		for (i = 0; i < n; i++) {
			batch[i]->revalidating = false;
			if (errs[i] != -EINTR)  /* (else copied out later) */
				copied_out(batch[i], errs[i]);
		}
		mutex_unlock(&g->lock);
	}
	return err;
}

/* FREE of r (group lock held): a copy out it still waited for is dropped. */
void cad_bounce_forget(struct cad_run *r)
{
	if (r->copyout) {
		r->copyout = false;
		r->file->ncopyout--;
	}
}
