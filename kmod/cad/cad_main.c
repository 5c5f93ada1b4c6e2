// SPDX-License-Identifier: GPL-2.0
/*
 * cad_main.c - /dev/cad: the misc device, its file operations, groups, the
 * ioctl structs' size protocol, and the module's parameters and counters.
 * The programs themselves: cad_run.c and the files cad_run.h lists.  The ABI: kmod/uapi/cad.h.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "cad_priv.h"

/* ------------------------------------------------------------------ */
/* Parameters and counters                                             */

/* A writable uint parameter that refuses values outside [lo, hi] (and
 * keeps the one it had).  Every writable parameter is one: none takes a
 * value the code was not written for.
 */
#define CAD_PARAM_RANGE(name, var, lo, hi)                                   \
	static int set_##name(const char *val, const struct kernel_param *kp) \
	{                                                                     \
		return param_set_uint_minmax(val, kp, lo, hi);                \
	}                                                                     \
	static const struct kernel_param_ops name##_ops = {                   \
		.set = set_##name,                                            \
		.get = param_get_uint,                                        \
	};                                                                    \
	module_param_cb(name, &name##_ops, &(var), 0644)

/* Per user, not per process: a process's pins live as long as its file,
 * which can outlive it (an exec, a fork, a descriptor passed on), and a
 * user may run any number of processes, so only a bound per user bounds
 * anything.  0 at load: half the machine's memory, at least 1 GiB.
 */
unsigned int cad_max_pinned_mb;
CAD_PARAM_RANGE(max_pinned_mb, cad_max_pinned_mb, 1, CAD_MAX_PINNED_MB);
MODULE_PARM_DESC(max_pinned_mb, "Memory a user may have pinned by the module, MiB (default: half the RAM, at least 1024; at most 2^30)");

/* All users together: 0 at load, the machine's memory (a page pinned
 * by several programs counts once for each).
 */
unsigned int cad_max_pinned_total_mb;
CAD_PARAM_RANGE(max_pinned_total_mb, cad_max_pinned_total_mb, 1, CAD_MAX_PINNED_MB);
MODULE_PARM_DESC(max_pinned_total_mb, "Memory all users together may have pinned by the module, MiB (default: the RAM, at least 1024; at most 2^30)");

unsigned int cad_max_programs = CAD_MAX_PROGRAMS;
CAD_PARAM_RANGE(max_programs, cad_max_programs, 1, CAD_MAX_PROGRAMS);
MODULE_PARM_DESC(max_programs,
		 "Programs loaded per open file (1.." __stringify(CAD_MAX_PROGRAMS) ")");

/* At most the verifier's own limit (cad_default_limits). */
#define CAD_MAX_IMAGE_KB 262144
unsigned int cad_max_image_kb = 64 << 10;
CAD_PARAM_RANGE(max_image_kb, cad_max_image_kb, 1, CAD_MAX_IMAGE_KB);
MODULE_PARM_DESC(max_image_kb,
		 "Bytes of one program image, KiB (1.." __stringify(CAD_MAX_IMAGE_KB) ")");

/* The scratch buffers of one program are kernel memory (charged to the
 * process's memory cgroup, like its image); below 2 GiB, so that no
 * single allocation goes past what kvmalloc takes.
 */
unsigned int cad_max_scratch_mb = 1024;
CAD_PARAM_RANGE(max_scratch_mb, cad_max_scratch_mb, 1, 2047);
MODULE_PARM_DESC(max_scratch_mb, "Bytes of all scratch buffers of one program, MiB (1..2047)");

/*
 * Who copies a matched transfer (see cad_defer.c):
 * 0, the process whose call completed the match, in that call; 1, a
 * member of the group asleep in read() (an idle CPU), else as 0; 2, a
 * work item on another CPU: the side the direction hint names, with no
 * hint the side that is not the caller (it posted first), or both halves
 * split when neither side is the caller; else as 0.  Transfers below
 * defer_min bytes are always done at once.  bench/kernel_vm.py measures
 * the settings in one boot.  The default, 2, is what those numbers
 * favour: with two ranks on two busy CPUs it overlaps ialltoall of 64 KiB
 * about 50 % against about 8 % and 1 MiB broadcasts and alltoalls about
 * 60 % against 30 %, at the same CPU loss; what it costs is a wake-up on
 * the other CPU: ialltoall of 64 KiB waited for without computing takes
 * about 2x the poll engine's time against 0.8x with 0.
 */
unsigned int cad_defer = 2;
CAD_PARAM_RANGE(defer, cad_defer, 0, 2);
MODULE_PARM_DESC(defer, "Who copies a matched transfer: 0 the caller, 1 an idle member, 2 a work item on another CPU");

/* 32 KiB: handing a shorter copy to another CPU costs more than making
 * it.  Queueing the work item (queue_work_on, an inter-processor
 * interrupt) takes longer than copying 4 KiB, in qemu (the KACC codelet
 * of bench/report.md) and on hardware, where a 32 KiB memcpy (~1 us) is
 * shorter than waking a worker on a busy CPU.
 */
unsigned int cad_defer_min = 32768;
CAD_PARAM_RANGE(defer_min, cad_defer_min, 0, 1u << 30);
MODULE_PARM_DESC(defer_min, "Transfers shorter than this (bytes) are never deferred (0..2^30)");

/* With defer=2, a transfer with no direction hint of at least split_min
 * bytes that neither side's call matched (a completion cascading in a
 * third process) is copied half by the receiver's CPU and half by the
 * sender's, at the same time; 0 never splits.
 */
unsigned int cad_split_min = 16384;
CAD_PARAM_RANGE(split_min, cad_split_min, 0, 1u << 30);
MODULE_PARM_DESC(split_min, "With defer=2, unhinted transfers from this size (bytes) matched by neither side are copied half by each side's CPU; 0: never (0..2^30)");

/* A group's arrays are sized by its ranks: 65536 of them are 576 KiB. */
#define CAD_MAX_RANKS 65536
static unsigned int cad_max_ranks = 4096;
CAD_PARAM_RANGE(max_ranks, cad_max_ranks, 1, CAD_MAX_RANKS);
MODULE_PARM_DESC(max_ranks, "Ranks of one group (1.." __stringify(CAD_MAX_RANKS) ")");

/* Per user (its files and groups together, whatever the processes): the
 * kernel memory a user's programs take besides their pins.  A program
 * holds its image (max_image_kb), scratch (max_scratch_mb) and the
 * tables sized by its nodes and buffers; max_programs bounds a file, not
 * a user, who may open any number of files.  The defaults leave a job of
 * a few hundred ranks on one node plenty; 0 at load for max_user_kmem_mb:
 * a quarter of the RAM, at least 1024 MiB (a program's scratch may be
 * 1024 MiB by default).
 */
#define CAD_MAX_USER_PROGRAMS (1u << 20)
unsigned int cad_max_user_programs = 16384;
CAD_PARAM_RANGE(max_user_programs, cad_max_user_programs, 1, CAD_MAX_USER_PROGRAMS);
MODULE_PARM_DESC(max_user_programs,
		 "Programs a user may have loaded, all its files together (1.."
		 __stringify(CAD_MAX_USER_PROGRAMS) ")");

unsigned int cad_max_user_kmem_mb;
CAD_PARAM_RANGE(max_user_kmem_mb, cad_max_user_kmem_mb, 1, CAD_MAX_PINNED_MB);
MODULE_PARM_DESC(max_user_kmem_mb, "Kernel memory a user's programs may take (images, scratch, tables, bounce buffers), MiB (default: a quarter of the RAM, at least 1024; at most 2^30)");

/* A group's arrays are sized by its ranks (max_ranks); its VM scratch is
 * CAD_VM_SCRATCH_SIZE.
 */
#define CAD_MAX_USER_GROUPS 65536
unsigned int cad_max_user_groups = 1024;
CAD_PARAM_RANGE(max_user_groups, cad_max_user_groups, 1, CAD_MAX_USER_GROUPS);
MODULE_PARM_DESC(max_user_groups,
		 "Groups a user may have made that are still alive (1.."
		 __stringify(CAD_MAX_USER_GROUPS) ")");

atomic64_t cad_pinned_pages = ATOMIC64_INIT(0);
atomic64_t cad_live_objects = ATOMIC64_INIT(0);
atomic64_t cad_deferred = ATOMIC64_INIT(0);
atomic64_t cad_split = ATOMIC64_INIT(0);
atomic64_t cad_cut = ATOMIC64_INIT(0);
atomic64_t cad_vm_cut = ATOMIC64_INIT(0);
atomic64_t cad_bounce_pages = ATOMIC64_INIT(0);
atomic64_t cad_bounced = ATOMIC64_INIT(0);

static int get_counter(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(kp->arg));
}

static const struct kernel_param_ops counter_ops = { .get = get_counter };
/* Read only: pages pinned now, groups, files, programs and tombstones
 * alive, transfers deferred (and split) so far, and nodes a pass cut.
 */
module_param_cb(pinned_pages, &counter_ops, &cad_pinned_pages, 0444);
MODULE_PARM_DESC(pinned_pages, "Pages pinned now (read only)");
module_param_cb(live_objects, &counter_ops, &cad_live_objects, 0444);
MODULE_PARM_DESC(live_objects, "Groups, open files, programs, tombstones and deferred transfers alive now (read only)");
module_param_cb(deferred, &counter_ops, &cad_deferred, 0444);
MODULE_PARM_DESC(deferred, "Transfers deferred to another CPU since the module was loaded (read only)");
module_param_cb(split, &counter_ops, &cad_split, 0444);
MODULE_PARM_DESC(split, "Deferred transfers split between the two sides' CPUs since the module was loaded (read only)");
module_param_cb(cut, &counter_ops, &cad_cut, 0444);
MODULE_PARM_DESC(cut, "Times a pass ran out of budget inside a transfer or a local node, leaving the rest for later (read only)");
module_param_cb(vm_cut, &counter_ops, &cad_vm_cut, 0444);
MODULE_PARM_DESC(vm_cut, "Of those, times a pass stopped inside a user-defined reduction, its VM instructions spent (read only)");
module_param_cb(bounce_pages, &counter_ops, &cad_bounce_pages, 0444);
MODULE_PARM_DESC(bounce_pages, "Pages of buffers copied through kernel memory now, RLIMIT_MEMLOCK having refused their pins (read only)");
module_param_cb(bounced, &counter_ops, &cad_bounced, 0444);
MODULE_PARM_DESC(bounced, "Buffers copied through kernel memory since the module was loaded (read only)");
/* What the users hold now (cad_user.c), all together and one by one. */
module_param_cb(programs, &counter_ops, &cad_programs, 0444);
MODULE_PARM_DESC(programs, "Programs loaded now, all users (read only)");
module_param_cb(kmem_bytes, &counter_ops, &cad_kmem_bytes, 0444);
MODULE_PARM_DESC(kmem_bytes, "Bytes of kernel memory charged to the users' programs now (read only)");
module_param_cb(groups, &counter_ops, &cad_groups_now, 0444);
MODULE_PARM_DESC(groups, "Groups alive now (read only)");
static const struct kernel_param_ops users_ops = { .get = cad_users_show };
module_param_cb(users, &users_ops, NULL, 0444);
MODULE_PARM_DESC(users, "A line per user with a file or group: uid, programs, kernel memory bytes, groups (read only)");

/* ------------------------------------------------------------------ */
/* Groups                                                              */

static DEFINE_HASHTABLE(cad_groups, CAD_GROUP_HASH_BITS);
static DEFINE_MUTEX(cad_groups_lock);
struct workqueue_struct *cad_wq;
/* The members' work items (deferred copies): per CPU, since defer=2
 * picks the CPU, at normal priority (not the system's high-priority
 * queue, nice -20: a user's copies must not preempt other users'
 * tasks), and the module's own, so that it can be flushed and is not
 * shared with the rest of the kernel.
 */
struct workqueue_struct *cad_defer_wq;

static void group_free(struct cad_group *g)
{
	if (g->cred)
		put_cred(g->cred);
	cad_group_free_tombs(g);
	kvfree(g->vm_scratch);
	kvfree(g->members);
	kvfree(g->gone);
	if (g->owner) {
		cad_user_sub_group(g->owner);
		cad_user_put(g->owner);
	}
	kfree(g);
	atomic64_dec(&cad_live_objects);
}

/* Takes g out of the hash table (once). cad_groups_lock held. */
static void unlist(struct cad_group *g)
{
	if (!hlist_unhashed(&g->hnode))
		hash_del(&g->hnode);
}

/* The last reference is dropped under cad_groups_lock, which every
 * reference taken from the list is taken under too: nobody finds a group
 * on its way out.
 */
void cad_group_put(struct cad_group *g)
{
	mutex_lock(&cad_groups_lock);
	if (!refcount_dec_and_test(&g->refs)) {
		mutex_unlock(&cad_groups_lock);
		return;
	}
	unlist(g);
	mutex_unlock(&cad_groups_lock);
	group_free(g);
}

/**
 * may_join() - whether the calling process may join a group
 * @g: the group
 *
 * Only from the user namespace the group was made in.  There, with the
 * creator's effective uid or CAP_SYS_ADMIN; and with what ptrace's
 * PTRACE_MODE_ATTACH_REALCREDS asks of a tracer, against the creator's
 * credentials when it made the group: the caller's real uid is the
 * creator's real, effective and saved uid, its real gid the creator's
 * three gids, or it has CAP_SYS_PTRACE in the creator's namespace.
 * (Members copy each other's memory, as process_vm_readv does, which
 * asks for as much.)  ptrace_may_access() itself, which also consults
 * the creator's dumpable flag and the security modules (Yama), is not
 * exported to modules.
 *
 * Return: true if it may.
 */
static bool may_join(const struct cad_group *g)
{
	const struct cred *c = current_cred(), *t = g->cred;

	if (c->user_ns != t->user_ns)
		return false;
	if (capable(CAP_SYS_ADMIN))
		return true;
	if (!uid_eq(c->euid, t->euid))
		return false;
	if (uid_eq(c->uid, t->euid) && uid_eq(c->uid, t->suid) && uid_eq(c->uid, t->uid) &&
	    gid_eq(c->gid, t->egid) && gid_eq(c->gid, t->sgid) && gid_eq(c->gid, t->gid))
		return true;
	return ns_capable(t->user_ns, CAP_SYS_PTRACE);
}

/* The group of key, found or made (charged to f's user), with a
 * reference for the caller; a dead one (its last member left) is taken
 * out of the table on the way.  cad_groups_lock held.
 */
static struct cad_group *find_group(struct cad_file *f, const struct cad_ioc_join *a, int *err)
{
	struct cad_group *g;
	struct hlist_node *tmp;

	hash_for_each_possible_safe(cad_groups, g, tmp, hnode, a->key) {
		if (g->key != a->key)
			continue;
		if (READ_ONCE(g->dead)) {
			unlist(g);
			continue;
		}
		if (!may_join(g))
			*err = -EPERM;
		else if (g->nranks != a->nranks)
			*err = -EINVAL;
		else
			refcount_inc(&g->refs);
		return *err ? NULL : g;
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL_ACCOUNT);
	if (!g) {
		*err = -ENOMEM;
		return NULL;
	}
	atomic64_inc(&cad_live_objects);
	INIT_HLIST_NODE(&g->hnode);
	cad_group_init_defer(g);
	*err = cad_user_add_group(f->cu);
	if (*err) {
		group_free(g);
		return NULL;
	}
	refcount_inc(&f->cu->refs);
	g->owner = f->cu;
	g->members = kvcalloc(a->nranks, sizeof(*g->members), GFP_KERNEL_ACCOUNT);
	g->gone = kvcalloc(a->nranks, 1, GFP_KERNEL_ACCOUNT);
	if (!g->members || !g->gone) {
		group_free(g);
		*err = -ENOMEM;
		return NULL;
	}
	g->key = a->key;
	g->nranks = a->nranks;
	g->cred = get_current_cred();
	mutex_init(&g->lock);
	INIT_LIST_HEAD(&g->work);
	refcount_set(&g->refs, 1);
	hash_add(cad_groups, &g->hnode, g->key);
	return g;
}

/* Key, owner and size are checked under cad_groups_lock; the membership
 * under the group's lock alone, which may be held for a while by a
 * member's program (never the global lock meanwhile: another group's
 * joins and releases do not wait for this one).
 */
static int join(struct cad_file *f, const struct cad_ioc_join *a)
{
	struct cad_group *g;
	int err;

	if (a->flags)
		return -EINVAL;
	if (!a->nranks || a->nranks > cad_max_ranks || a->rank >= a->nranks)
		return -EINVAL;
	if (atomic_cmpxchg(&f->joining, 0, 1))
		return -EALREADY;
	do {
		err = 0;
		mutex_lock(&cad_groups_lock);
		g = find_group(f, a, &err);
		mutex_unlock(&cad_groups_lock);
		if (!g)
			break;
		if (mutex_lock_killable(&g->lock)) {
			cad_group_put(g);
			err = -EINTR;
			break;
		}
		if (g->dead)
			err = -EAGAIN;  /* its last member left meanwhile: a new one */
		else if (g->members[a->rank])
			err = -EBUSY;
		else if (g->gone[a->rank])
			err = -EPIPE;
		if (!err) {
			/* The reference is the member's now, dropped when its
			 * release ends.
			 */
			g->members[a->rank] = f;
			g->alive++;
			f->rank = a->rank;
			/* f->rank set first: pairs with the smp_load_acquire()s of f->group */
			smp_store_release(&f->group, g);
		}
		mutex_unlock(&g->lock);
		if (err)
			cad_group_put(g);
	} while (err == -EAGAIN);
	if (err)
		atomic_set(&f->joining, 0);
	return err;
}

/* ------------------------------------------------------------------ */
/* File operations                                                     */

static int cad_open(struct inode *inode, struct file *file)
{
	struct cad_file *f = kvzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (!f)
		return -ENOMEM;
	f->status = (struct cad_status *)get_zeroed_page(GFP_KERNEL_ACCOUNT);
	if (!f->status) {
		kvfree(f);
		return -ENOMEM;
	}
	f->mm = current->mm;
	mmgrab(f->mm);
	f->cu = cad_user_get(current_uid());
	if (!f->cu) {
		free_page((unsigned long)f->status);
		kvfree(f);
		return -ENOMEM;
	}
	f->user = get_current_user();
	INIT_LIST_HEAD(&f->running);
	init_waitqueue_head(&f->wq);
	cad_file_init_defer(f);
	atomic64_inc(&cad_live_objects);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int cad_release(struct inode *inode, struct file *file)
{
	struct cad_file *f = file->private_data;
	struct cad_group *g = f->group;
	u32 h;

	if (g) {
		bool dead;

		mutex_lock(&g->lock);
		cad_group_leave_locked(g, f);
		dead = !g->alive;
		if (dead)  /* no join takes it any more */
			WRITE_ONCE(g->dead, true);
		mutex_unlock(&g->lock);
		if (dead) {
			mutex_lock(&cad_groups_lock);
			unlist(g);
			mutex_unlock(&cad_groups_lock);
		}
		/* Nobody hands f's work item anything now (f's runs ended and
		 * f is no member); copies still in flight into or out of f's
		 * runs, by it or by other members, end before they go.
		 */
		cancel_work_sync(&f->defer_work);
		cad_group_hand_off(g);
		for (h = 0; h < CAD_MAX_PROGRAMS; h++)
			if (f->runs[h])
				cad_run_wait_idle(g, f->runs[h]);
		/* Not when alive reached 0: the member that left last may end
		 * its release before one that left earlier, which still waits
		 * above (on g's lock and idle queue) or runs its work item.
		 */
		cad_group_put(g);
	}
	/* Nobody reaches f's runs now: the group forgot f. */
	for (h = 0; h < CAD_MAX_PROGRAMS; h++)
		cad_run_destroy(f->runs[h]);
	free_page((unsigned long)f->status);
	free_uid(f->user);
	cad_user_put(f->cu);
	mmdrop(f->mm);
	kvfree(f);
	atomic64_dec(&cad_live_objects);
	return 0;
}

/* The status page, read only. */
static int cad_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct cad_file *f = file->private_data;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != CAD_STATUS_SIZE)
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	return vm_insert_page(vma, vma->vm_start, virt_to_page(f->status));
}

static __poll_t cad_poll(struct file *file, poll_table *wait)
{
	struct cad_file *f = file->private_data;

	poll_wait(file, &f->wq, wait);
	/* (a run waiting for its copy out: read() does it, then counts it) */
	return atomic_read(&f->events) || (READ_ONCE(f->ncopyout) && f->mm == current->mm) ?
	       EPOLLIN | EPOLLRDNORM : 0;
}

/* The number of completions since the last read, as a __u64; blocks while
 * it is 0 unless the file is non-blocking.
 */
static ssize_t cad_read(struct file *file, char __user *buf, size_t len, loff_t *pos)
{
	struct cad_file *f = file->private_data;
	u64 n;
	int err;

	if (len < sizeof(n))
		return -EINVAL;
	WRITE_ONCE(f->cpu, raw_smp_processor_id());
	err = cad_wait_events(f, file->f_flags & O_NONBLOCK, &n);
	if (err)
		return err;
	if (copy_to_user(buf, &n, sizeof(n))) {
		atomic_add((int)n, &f->events);
		return -EFAULT;
	}
	return sizeof(n);
}

/*
 * The size protocol: the caller's struct starts with its size.  Sizes from
 * the first version's (min) up are accepted; bytes past what this module
 * knows (known) must be zero; the reply is cut to the caller's size.
 */
static int copy_in(void *kstruct, u32 min, u32 known, const void __user *uarg, u32 *usize)
{
	u32 size;
	int err;

	if (get_user(size, (const u32 __user *)uarg))
		return -EFAULT;
	if (size < min || size > PAGE_SIZE)
		return -EINVAL;
	if (size > known) {
		err = check_zeroed_user((const u8 __user *)uarg + known, size - known);
		if (err <= 0)
			return err ? err : -E2BIG;
	}
	memset(kstruct, 0, known);
	if (copy_from_user(kstruct, uarg, min_t(u32, size, known)))
		return -EFAULT;
	*usize = size;
	return 0;
}

static int copy_out(void __user *uarg, const void *kstruct, u32 known, u32 usize)
{
	return copy_to_user(uarg, kstruct, min(known, usize)) ? -EFAULT : 0;
}

#define COPY_IN(k, uarg, usize) copy_in(&(k), sizeof(k), sizeof(k), (uarg), (usize))

static long cad_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct cad_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;
	u32 usize;
	long err;

	WRITE_ONCE(f->cpu, raw_smp_processor_id());
	switch (cmd) {
	case CAD_IOC_VERSION: {
		struct cad_ioc_version v;

		err = COPY_IN(v, uarg, &usize);
		if (err)
			return err;
		v.version = CAD_VERSION;
		v.features = CAD_FEAT_PIN | CAD_FEAT_STATUS_PAGE | CAD_FEAT_POLL |
			     CAD_FEAT_USER_OPS | CAD_FEAT_VM_SLOTS;
		v.max_programs = cad_max_programs;
		v.status_size = CAD_STATUS_SIZE;
		return copy_out(uarg, &v, sizeof(v), usize);
	}
	case CAD_IOC_JOIN: {
		struct cad_ioc_join j;

		err = COPY_IN(j, uarg, &usize);
		if (err)
			return err;
		return join(f, &j);  /* one at a time per file: f->joining */
	}
	case CAD_IOC_LOAD: {
		struct cad_ioc_load l;

		/* fp came after the first version: its callers load with 0 */
		err = copy_in(&l, offsetofend(struct cad_ioc_load, seq), sizeof(l), uarg, &usize);
		if (err)
			return err;
		/* handle is ~0 unless the program was loaded (perhaps
		 * without starting: CAD_LOAD_START and a failed start).
		 */
		l.handle = ~0u;
		err = cad_run_load(f, &l);
		if (copy_out(uarg, &l, sizeof(l), usize))
			return -EFAULT;
		return err;
	}
	case CAD_IOC_START: {
		struct cad_ioc_start s;

		err = COPY_IN(s, uarg, &usize);
		if (err)
			return err;
		return cad_run_op(f, cmd, s.handle, s.seq, NULL);
	}
	case CAD_IOC_TEST:
	case CAD_IOC_CANCEL:
	case CAD_IOC_FREE: {
		struct cad_ioc_handle h;
		int result = 0;

		err = COPY_IN(h, uarg, &usize);
		if (err)
			return err;
		if (h.reserved)
			return -EINVAL;
		err = cad_run_op(f, cmd, h.handle, 0, &result);
		if (err || cmd != CAD_IOC_TEST)
			return err;
		h.result = result;
		return copy_out(uarg, &h, sizeof(h), usize);
	}
	default:
		return -ENOTTY;
	}
}

static const struct file_operations cad_fops = {
	.owner = THIS_MODULE,
	.open = cad_open,
	.release = cad_release,
	.unlocked_ioctl = cad_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = cad_mmap,
	.poll = cad_poll,
	.read = cad_read,
	.llseek = no_llseek,
};

/* Anyone may open it: the verifier is the gate for programs, and a group
 * admits only its creator's user, in its user namespace (may_join()).
 */
static struct miscdevice cad_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "cad",
	.fops = &cad_fops,
	.mode = 0666,
};

static int __init cad_init(void)
{
	const unsigned long ram_mb = totalram_pages() >> (20 - PAGE_SHIFT);
	int err;

	if (!cad_max_pinned_mb)
		cad_max_pinned_mb = max_t(unsigned long, 1024, ram_mb / 2);
	if (!cad_max_pinned_total_mb)
		cad_max_pinned_total_mb = max_t(unsigned long, 1024, ram_mb);
	if (!cad_max_user_kmem_mb)
		cad_max_user_kmem_mb = max_t(unsigned long, 1024, ram_mb / 4);
	cad_max_user_kmem_mb = min_t(unsigned int, cad_max_user_kmem_mb, CAD_MAX_PINNED_MB);
	cad_max_pinned_mb = min_t(unsigned int, cad_max_pinned_mb, CAD_MAX_PINNED_MB);
	cad_max_pinned_total_mb = min_t(unsigned int, cad_max_pinned_total_mb, CAD_MAX_PINNED_MB);
	cad_wq = alloc_workqueue("cad", WQ_UNBOUND, 0);
	if (!cad_wq)
		return -ENOMEM;
	cad_defer_wq = alloc_workqueue("cad_defer", 0, 0);
	if (!cad_defer_wq) {
		destroy_workqueue(cad_wq);
		return -ENOMEM;
	}
	err = misc_register(&cad_misc);
	if (err) {
		destroy_workqueue(cad_defer_wq);
		destroy_workqueue(cad_wq);
		return err;
	}
	pr_info("cad: /dev/cad ready (program format %u)\n", CAD_VERSION);
	return 0;
}

static void __exit cad_exit(void)
{
	misc_deregister(&cad_misc);
	destroy_workqueue(cad_wq);  /* a group's last work item ends first */
	destroy_workqueue(cad_defer_wq);
	if (atomic64_read(&cad_pinned_pages) || atomic64_read(&cad_live_objects))
		pr_warn("cad: unloading with %lld pinned pages and %lld objects\n",
			(long long)atomic64_read(&cad_pinned_pages),
			(long long)atomic64_read(&cad_live_objects));
}

module_init(cad_init);
module_exit(cad_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("CAD: verified collective programs executed in the kernel");
