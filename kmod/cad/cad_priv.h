/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cad_priv.h - the module's objects.
 *
 *   cad_group  the ranks of one job on one node (a key); one mutex over
 *              everything of the group: its members' runs, their status
 *              pages, the transfers between them
 *   cad_file   an open /dev/cad: one member of at most one group
 *   cad_run    a loaded program (a handle) with its pinned buffers; it is
 *              running from a start until every node is done or it fails
 *
 * Locks: cad_groups_lock guards the hash table of groups (finding or making one,
 * taking it off) and the last reference's drop; it is never held while
 * waiting for a group's lock, which a member may hold for a while (its
 * program running), so that no group can hold up another user's joins or
 * releases.  Everything below runs in process context (ioctl, read,
 * release, the members' work items for deferred transfers, and a group's
 * work item that goes on with what a pass left) and may sleep.  A
 * transfer copied at once holds the group lock (giving the CPU back
 * between chunks, and leaving what its pass's budget does not cover as a
 * queued part, like a deferred transfer); a deferred one is copied without it, so that two CPUs
 * can copy for one group at the same time: its runs count it in
 * `inflight`, and nothing frees them or tells their owners they ended
 * while that is not 0.  One pass does a bounded amount of work (struct
 * cad_budget in cad_run.h) and leaves the rest to a member asleep in
 * read() or to the group's work item.  Nothing that holds a group's lock
 * waits for user space: no page is pinned or looked up and no user memory
 * is read or written under it (a fault may wait for a FUSE server or a
 * userfaultfd handler as long as it likes).  So an ioctl waits for the
 * lock killably (mutex_lock_killable: -EINTR); a release, a work item
 * and the end of a read(), which must go on, wait uninterruptibly, but
 * no longer than a pass.
 */
#ifndef CAD_PRIV_H
#define CAD_PRIV_H

#include <linux/bits.h>
#include <linux/hashtable.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/uidgid.h>
#include <linux/cred.h>
#include <linux/mm_types.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/user.h>

#include "../core/cad_core.h"

/* The largest value of the pinned-memory limits, MiB: 1 PiB, so that a
 * limit in pages fits any counter.
 */
#define CAD_MAX_PINNED_MB BIT(30)

/* Tombstones a group keeps at most: past that, the oldest goes.  They are
 * found by (ctx, seq) in 2^CAD_TOMB_HASH_BITS buckets (at most 8 a bucket
 * on average when full), since every start looks while there are any.
 */
#define CAD_MAX_TOMBS 1024
#define CAD_TOMB_HASH_BITS 7

/* A collective that failed: later starts of it fail at once.  Kept until
 * every rank of it that had not started it has started it since, or a
 * later collective of the communicator, or left: a rank may start it any
 * time later (one that cancels many
 * collectives its peers have not reached yet must not make those peers
 * wait forever).
 */
struct cad_tomb {
	struct list_head link;          /* in group->tombs, oldest first */
	struct hlist_node hnode;        /* in group->tomb_hash */
	u64 ctx, seq;
	int err;
	u32 pending;                    /* bits set in unseen */
	unsigned long unseen[];         /* group ranks that still may start it */
};

/* What a user holds of the module's kernel memory (cad_user.c), against
 * the limits max_user_programs, max_user_kmem_mb and max_user_groups.
 */
struct cad_user {
	struct hlist_node hnode;        /* in cad_users, by uid */
	kuid_t uid;
	refcount_t refs;                /* files it opened, groups it made */
	atomic_t programs;              /* loaded */
	atomic64_t kmem;                /* bytes of their images, scratch, tables */
	atomic_t groups;                /* made and not freed */
};

/* Groups are found by key in 2^CAD_GROUP_HASH_BITS buckets. */
#define CAD_GROUP_HASH_BITS 10

struct cad_group {
	struct hlist_node hnode;        /* in cad_groups, by key; unhashed once dead */
	struct cad_user *owner;         /* who made it: charged for it */
	u64 key;
	u32 nranks;
	const struct cred *cred;        /* the creator's, when it made the group */
	struct mutex lock;
	struct cad_file **members;      /* [nranks]: NULL until joined, after leaving */
	u8 *gone;                       /* [nranks]: joined once, left since */
	u32 alive;                      /* members joined and not gone */
	bool dead;                      /* alive fell to 0: no join any more */
	refcount_t refs;                /* members whose release has not ended
					 * (a member that left still waits on the
					 * lock and on idle, and its work item
					 * may still run, after alive is 0), a
					 * join on its way, the queued more_work
					 */
	struct list_head work;          /* runs with nodes to issue */
	struct list_head tombs;         /* cad_tomb */
	DECLARE_HASHTABLE(tomb_hash, CAD_TOMB_HASH_BITS); /* the same, by (ctx, seq) */
	u32 ntombs;
	void *vm_scratch;               /* CAD_VM_SCRATCH_SIZE, for user ops */
	struct list_head deferred;      /* cad_xfer: matched, not copied yet */
	u32 ndeferred;
	struct list_head inflight;      /* cad_xfer: being copied, lock dropped */
	wait_queue_head_t idle;         /* woken when a copy in flight ends */
	bool leftover;                  /* a pass ran out of budget with runs on work */
	bool more_queued;               /* more_work queued (it holds a reference) */
	struct work_struct more_work;   /* goes on with what a pass left, on cad_wq */
};

struct cad_file {
	struct cad_group *group;        /* set once, by JOIN */
	atomic_t joining;               /* a JOIN is under way or succeeded */
	u32 rank;
	struct mm_struct *mm;           /* the opener's: only it loads programs */
	struct user_struct *user;       /* the opener's: pinned pages are charged to it */
	struct cad_user *cu;            /* the opener's: programs and kernel memory too */
	struct cad_status *status;      /* the status page */
	struct cad_run *runs[CAD_MAX_PROGRAMS];
	struct list_head running;       /* runs started and not finished */
	wait_queue_head_t wq;
	atomic_t events;                /* completions since the last read() */
	int cpu;                        /* where the process last entered the module */
	u32 ncopyout;                   /* runs with copyout set: group lock */
	bool waiting;                   /* asleep in read(): group lock */
	struct work_struct defer_work;  /* copies the transfers handed to its CPU */
};

/* A buffer of a run: its first byte in the kernel's address space.  A
 * pinned one is watched: when the kernel invalidates any part of the range
 * (munmap, mremap, mprotect, madvise, but also khugepaged trying to
 * collapse it), the run is marked; its next start looks the pages up
 * again, and if the process no longer maps the pinned ones there, the
 * start fails with -ESTALE and the caller loads afresh.  That makes it
 * safe for cadrt to keep a loaded program for addresses it sees again.
 * A bounce buffer (pages of the module's, RLIMIT_MEMLOCK having refused
 * the pin: cad_bounce.c) is not watched: it is copied in at each start
 * and out after each run that ended well, by the owner, lock dropped.
 */
struct cad_kbuf {
	struct mmu_interval_notifier mn;
	bool watched;
	unsigned int gup_flags;         /* how it was pinned */
	u64 uaddr;                      /* its first page in the process */
	struct cad_run *run;
	u8 *kaddr;
	struct page **pages;            /* pinned user pages, or NULL (scratch) */
	u64 npages;
	void *vbase;                    /* vmap of several pages, or NULL */
	void *scratch;                  /* kvzalloc'd scratch, or NULL */
	bool dirty;                     /* written: mark the pages dirty */
	bool bounce;                    /* pages are the module's own (cad_bounce.c) */
	bool written;                   /* the program writes it: copied out after a run */
	u64 addr, size;                 /* a bounce buffer's place in the process */
};

/* A SEND or RECV node's place in the matching: k-th of (kind, peer, tag). */
struct cad_key {
	u8 kind;
	u32 peer, tag, occ, node;
};

struct cad_run {
	struct cad_file *file;
	u32 handle;
	void *image;
	struct cad_prog prog;
	struct cad_exec ex;
	void *exec_mem;
	u32 *occ;                       /* per node */
	struct cad_key *keys;           /* SEND and RECV nodes, sorted */
	u32 nkeys;
	u32 *ranks;                     /* group rank of each program rank */
	u64 ctx, seq;                   /* seq: as last started */
	u64 fp;                         /* see struct cad_ioc_load */
	bool counted;                   /* in its user's programs */
	u64 kmem;                       /* bytes charged to its user's kmem */
	struct cad_kbuf *bufs;
	u32 nbufs;
	bool running;
	bool started;
	bool revalidating;              /* its pages are looked up, or copied into or
					 * out of bounce pages, lock dropped
					 */
	bool may_bounce;                /* loaded with CAD_LOAD_BOUNCE */
	bool bounced;                   /* has bounce buffers (cad_bounce.c) */
	bool bounce_out;                /* has bounce buffers it writes */
	bool copyout;                   /* ended well: copy out, then tell the owner */
	atomic_t stale;                 /* a watched mapping changed */
	int result;
	u32 gen;
	u32 inflight;                   /* parts of its transfers being copied */
	s64 part_node;                  /* a COPY or REDUCE a pass cut, or -1 */
	u64 part_done;                  /* bytes of it done */
	bool publish_pending;           /* ended while inflight: tell when 0 */
	struct list_head run_link;      /* in file->running */
	struct list_head work_link;     /* in group->work */
};

/* cad_run.c and the files cad_run.h lists */
int cad_run_load(struct cad_file *f, struct cad_ioc_load *arg);
/* START (seq), TEST (*result), CANCEL or FREE of a handle; all but TEST
 * only from the process that loaded it (-EPERM).
 */
int cad_run_op(struct cad_file *f, unsigned int cmd, u32 handle, u64 seq, int *result);
/* A member leaves (its file is released): its runs go, its peers' runs
 * that still need it fail with -EPIPE.  Group lock held.
 */
void cad_group_leave_locked(struct cad_group *g, struct cad_file *f);
void cad_run_destroy(struct cad_run *r);
/* read(): waits for completions (and does deferred transfers meanwhile). */
int cad_wait_events(struct cad_file *f, bool nonblock, u64 *n);
void cad_group_init_defer(struct cad_group *g);
/* Frees what is left of the group's tombstones (the group is going). */
void cad_group_free_tombs(struct cad_group *g);
/* After a member's work item is cancelled: what is left over in the group
 * (queued parts its item might have taken) goes on elsewhere.
 */
void cad_group_hand_off(struct cad_group *g);
void cad_file_init_defer(struct cad_file *f);
/* Waits until no copy into or out of r is in flight (no lock held). */
void cad_run_wait_idle(struct cad_group *g, struct cad_run *r);

/* cad_main.c: a group reference dropped (the last frees it); the module's
 * unbound workqueue (a group's more_work)
 */
void cad_group_put(struct cad_group *g);
extern struct workqueue_struct *cad_wq;

/* cad_user.c */
struct cad_user *cad_user_get(kuid_t uid);
void cad_user_put(struct cad_user *u);
/* A program more for u: 0, or -EMFILE over max_user_programs (logged). */
int cad_user_add_program(struct cad_user *u, struct cad_log *log);
void cad_user_sub_program(struct cad_user *u);
/* bytes more of u's kernel memory, added to *charged: 0, or -ENOMEM over
 * max_user_kmem_mb (logged, nothing charged).
 */
int cad_user_charge(struct cad_user *u, u64 bytes, u64 *charged, struct cad_log *log);
void cad_user_uncharge(struct cad_user *u, u64 bytes);
/* A group more made by u: 0, or -ENOSPC over max_user_groups (logged). */
int cad_user_add_group(struct cad_user *u);
void cad_user_sub_group(struct cad_user *u);
struct kernel_param;
int cad_users_show(char *buf, const struct kernel_param *kp);
extern atomic64_t cad_programs;
extern atomic64_t cad_kmem_bytes;
extern atomic64_t cad_groups_now;
extern unsigned int cad_max_user_programs;
extern unsigned int cad_max_user_kmem_mb;
extern unsigned int cad_max_user_groups;

/* cad_main.c: counters (module parameters, read only) */
extern atomic64_t cad_pinned_pages;
extern atomic64_t cad_live_objects;
extern atomic64_t cad_deferred;
extern atomic64_t cad_split;
extern atomic64_t cad_cut;
extern atomic64_t cad_vm_cut;
extern atomic64_t cad_bounce_pages;
extern atomic64_t cad_bounced;
extern struct workqueue_struct *cad_defer_wq;
extern unsigned int cad_max_pinned_mb;
extern unsigned int cad_max_pinned_total_mb;
extern unsigned int cad_max_programs;
extern unsigned int cad_max_image_kb;
extern unsigned int cad_max_scratch_mb;
extern unsigned int cad_defer;
extern unsigned int cad_defer_min;
extern unsigned int cad_split_min;

#endif /* CAD_PRIV_H */
