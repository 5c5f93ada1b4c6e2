// SPDX-License-Identifier: GPL-2.0
/*
 * cad_run.c - loading, pinning and running verified programs: the
 * ioctls here; the rest in the files cad_run.h lists.
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
#include "cad_run.h"

void cad_run_destroy(struct cad_run *r)
{
	u32 i;

	if (!r)
		return;
	if (r->bufs) {
		for (i = 0; i < r->nbufs; i++)
			cad_unpin_buffer(r->file, &r->bufs[i]);
		kvfree(r->bufs);
	}
	kvfree(r->ranks);
	kvfree(r->keys);
	kvfree(r->occ);
	kvfree(r->exec_mem);
	kvfree(r->image);
	cad_user_uncharge(r->file->cu, r->kmem);
	if (r->counted)
		cad_user_sub_program(r->file->cu);
	kfree(r);
	atomic64_dec(&cad_live_objects);
}

static struct cad_run *lookup(struct cad_file *f, u32 handle)
{
	return handle < CAD_MAX_PROGRAMS ? f->runs[handle] : NULL;
}

static int load(struct cad_file *f, struct cad_ioc_load *a, struct cad_run *r, struct cad_log *log)
{
	/* pairs with smp_store_release() of f->group in join() */
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_limits limits = cad_default_limits;
	const struct cad_prog_header *hdr;
	u64 *addrs = NULL;
	u32 i;
	int err;

	if (current->mm != f->mm) {
		cad_logf(log, "%s: /dev/cad was opened by another process", __func__);
		return -EINVAL;
	}
	if (a->flags & ~(CAD_LOAD_START | CAD_LOAD_BOUNCE)) {
		cad_logf(log, "%s: unknown flags 0x%x", __func__,
			 a->flags & ~(CAD_LOAD_START | CAD_LOAD_BOUNCE));
		return -EINVAL;
	}
	r->may_bounce = a->flags & CAD_LOAD_BOUNCE;
	limits.max_image_size = min_t(u64, limits.max_image_size, (u64)cad_max_image_kb << 10);
	limits.max_scratch = min_t(u64, limits.max_scratch,
				   (u64)READ_ONCE(cad_max_scratch_mb) << 20);
	if (a->prog_size > limits.max_image_size) {
		cad_logf(log,
			 "%s: the image has %u bytes, more than the limit of %u (max_image_kb)",
			 __func__, a->prog_size, limits.max_image_size);
		return -E2BIG;
	}
	if (a->prog_size < sizeof(struct cad_prog_header)) {
		cad_logf(log, "%s: the image has %u bytes, less than a program header", __func__,
			 a->prog_size);
		return -EINVAL;
	}
	/* Verified from a kernel copy: the process cannot change it after. */
	err = cad_user_charge(f->cu, a->prog_size, &r->kmem, log);
	if (err)
		return err;
	r->image = kvmalloc(a->prog_size, GFP_KERNEL_ACCOUNT);
	if (!r->image)
		return -ENOMEM;
	if (copy_from_user(r->image, u64_to_user_ptr(a->prog), a->prog_size)) {
		cad_logf(log, "%s: the image at 0x%llx is not readable", __func__, a->prog);
		return -EFAULT;
	}
	err = cad_verify(r->image, a->prog_size, &limits, &r->prog, log);
	if (err)
		return err;
	hdr = r->prog.hdr;

	if (hdr->nranks > g->nranks) {
		cad_logf(log, "%s: the program is for %u ranks, the group has %u", __func__,
			 hdr->nranks, g->nranks);
		return -EINVAL;
	}
	/* The tables sized by the program: its rank map, buffers (and
	 * their addresses while loading), matching keys, executor state.
	 */
	err = cad_user_charge(f->cu, (u64)hdr->nranks * sizeof(u32) +
			      (u64)(r->prog.n_buffers + 1) * (sizeof(*r->bufs) + sizeof(u64)) +
			      (u64)(r->prog.n_nodes + 1) * (sizeof(u32) + sizeof(struct cad_key)) +
			      cad_exec_mem_size(&r->prog) + 4, &r->kmem, log);
	if (err)
		return err;
	r->ranks = kvcalloc(hdr->nranks, sizeof(u32), GFP_KERNEL_ACCOUNT);
	if (!r->ranks)
		return -ENOMEM;
	if (a->ranks) {
		if (copy_from_user(r->ranks, u64_to_user_ptr(a->ranks),
				   hdr->nranks * sizeof(u32))) {
			cad_logf(log, "%s: the rank map at 0x%llx is not readable", __func__,
				 a->ranks);
			return -EFAULT;
		}
	} else {
		for (i = 0; i < hdr->nranks; i++)
			r->ranks[i] = i;
	}
	for (i = 0; i < hdr->nranks; i++) {
		u32 j;

		if (r->ranks[i] >= g->nranks) {
			cad_logf(log, "%s: rank map: program rank %u is group rank %u of %u",
				 __func__, i, r->ranks[i], g->nranks);
			return -EINVAL;
		}
		for (j = 0; j < i; j++)
			if (r->ranks[j] == r->ranks[i]) {
				cad_logf(log,
					 "%s: rank map: program ranks %u and %u are both group rank %u",
					 __func__, j, i, r->ranks[i]);
				return -EINVAL;
			}
	}
	if (r->ranks[hdr->rank] != f->rank) {
		cad_logf(log,
			 "%s: the program is rank %u's, which is group rank %u, not this process's %u",
			 __func__, hdr->rank, r->ranks[hdr->rank], f->rank);
		return -EINVAL;
	}

	if (a->nbufs != r->prog.n_buffers) {
		cad_logf(log, "%s: %u buffer addresses for a program of %u buffers", __func__,
			 a->nbufs, r->prog.n_buffers);
		return -EINVAL;
	}
	r->nbufs = r->prog.n_buffers;
	r->bufs = kvcalloc(r->nbufs ? r->nbufs : 1, sizeof(*r->bufs), GFP_KERNEL_ACCOUNT);
	addrs = kvcalloc(r->nbufs ? r->nbufs : 1, sizeof(u64), GFP_KERNEL_ACCOUNT);
	if (!r->bufs || !addrs) {
		kvfree(addrs);
		return -ENOMEM;
	}
	if (r->nbufs &&
	    copy_from_user(addrs, u64_to_user_ptr(a->buf_addrs), r->nbufs * sizeof(u64))) {
		cad_logf(log, "%s: the buffer addresses at 0x%llx are not readable", __func__,
			 a->buf_addrs);
		kvfree(addrs);
		return -EFAULT;
	}
	err = cad_bind_buffers(f, r, addrs, log);
	kvfree(addrs);
	if (err)
		return err;

	err = cad_index_keys(r);
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
	/* pairs with smp_store_release() of f->group in join() */
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
		err = cad_user_add_program(f->cu, &log);
		r->counted = !err;
		if (!err)
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
			cad_logf(&log,
				 "load: this file has %u programs loaded, the limit (max_programs)",
				 h);
			err = -EMFILE;
		} else {
			r->handle = h;
			if (r->bounced)
				a->flags |= CAD_LOAD_BOUNCED;
			f->runs[h] = r;
			f->status[h] = (struct cad_status){ 0, 0 };
			a->handle = h;
			if (a->flags & CAD_LOAD_START)
				err = cad_start_locked(g, r, a->seq);
			r = NULL;  /* the file's now, even if it could not start */
		}
		mutex_unlock(&g->lock);
	}
	/* (on success too when buffers are copied: the log says which) */
	if ((err || (a->flags & CAD_LOAD_BOUNCED)) && a->log_size &&
	    copy_to_user(u64_to_user_ptr(a->log_buf), logmem, log.len + 1))
		err = -EFAULT;
	kfree(logmem);
	cad_run_destroy(r);
	return err;
}

int cad_run_op(struct cad_file *f, unsigned int cmd, u32 handle, u64 seq, int *result)
{
	/* pairs with smp_store_release() of f->group in join() */
	struct cad_group *g = smp_load_acquire(&f->group);
	struct cad_run *r, *gone = NULL;
	int err = 0;

	if (!g)
		return -ENOTCONN;
	/* A program is started, cancelled and freed only by the process
	 * that loaded it (the opener, as load() requires): not by a child
	 * that inherited the file, nor one it was passed to.
	 */
	if (cmd != CAD_IOC_TEST && current->mm != f->mm)
		return -EPERM;
	/* TEST in the owner copies out what ended runs wrote, so that they
	 * show as ended (cad_bounce.c).
	 */
	if (cmd == CAD_IOC_TEST && READ_ONCE(f->ncopyout) && cad_bounce_flush(f))
		return -EINTR;
	if (mutex_lock_killable(&g->lock))
		return -EINTR;
	r = lookup(f, handle);
	if (!r) {
		err = -EBADF;
	} else if (cmd == CAD_IOC_START) {
		err = cad_start_locked(g, r, seq);
	} else if (cmd == CAD_IOC_TEST) {
		if (!r->started)
			err = -EINVAL;
		else
			*result = r->running || r->publish_pending || r->copyout ? -EINPROGRESS :
				  r->result;
	} else if (cmd == CAD_IOC_FREE && r->revalidating) {
		err = -EBUSY;  /* its START, in another thread, goes on with it */
	} else {  /* CANCEL, FREE */
		if (r->running)
			cad_fail_collective(g, r, -ECANCELED);
		if (cmd == CAD_IOC_FREE) {
			f->runs[handle] = NULL;
			r->publish_pending = false;  /* its status slot may be reused */
			cad_bounce_forget(r);
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
