/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cad_run.h - what the files that load and run programs share:
 *
 *   cad_run.c    the ioctls: LOAD, START, TEST, CANCEL, FREE
 *   cad_pin.c    buffers: pinning, charging, revalidating, binding
 *   cad_bounce.c buffers copied through the module's pages instead
 *   cad_match.c  matching keys, transfers, passes over a group's work
 *   cad_defer.c  deferred transfers: parts, work items, read()
 *   cad_fail.c   ends of runs: telling owners, tombstones, leaving
 */
#ifndef CAD_RUN_H
#define CAD_RUN_H

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
 * cad_go_on_later() hands what is left to a member asleep in
 * read() (its CPU is idle, and the work is its group's), else to the
 * group's work item on cad_wq.  Real collectives stay far below it: a
 * cascade moves what the job's buffers hold.
 */
#define BUDGET_BYTES (64ll << 20)
#define BUDGET_NODES 16384
#define SLICE_BYTES  BIT_ULL(20)  /* copied or reduced between looks at the budget */
/*
 * A REDUCE with a user-defined operator costs by its instructions, not
 * its bytes: an element runs at most code_count of them (the VM's jumps
 * go forward only), and 1 GiB of 8-byte elements under a 4096-instruction
 * operator is 2^39 element-instructions.  A pass runs at most
 * BUDGET_VM_INSNS of them (elements x code_count), SLICE_VM_INSNS between
 * looks at the budget (whole VM blocks of CAD_VM_LANES elements, one at
 * least).  Measured in qemu without KVM (kcad_check vmbudget, the time of
 * a pass printed): docs/kernel-limits.md.
 */
#define BUDGET_VM_INSNS BIT_ULL(22)
#define SLICE_VM_INSNS  BIT_ULL(20)

struct cad_budget {
	s64 bytes;
	s64 insns;                      /* of user-defined operators */
	u32 nodes;
};

#define CAD_BUDGET { .bytes = BUDGET_BYTES, .insns = BUDGET_VM_INSNS, .nodes = BUDGET_NODES }

static inline bool spent(const struct cad_budget *b)
{
	return b->bytes <= 0 || b->insns <= 0 || !b->nodes || fatal_signal_pending(current);
}

static inline void spend(struct cad_budget *b, u64 bytes)
{
	b->bytes -= (s64)min_t(u64, bytes, BUDGET_BYTES);
	if (b->nodes)
		b->nodes--;
}

static inline void queue_work_run(struct cad_group *g, struct cad_run *r)
{
	if (list_empty(&r->work_link))
		list_add_tail(&r->work_link, &g->work);
}

/* Deferred transfers (cad_defer.c) */
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

/* cad_pin.c */
void cad_unpin_buffer(struct cad_file *f, struct cad_kbuf *b);
int cad_revalidate(struct cad_run *r);
int cad_bind_buffers(struct cad_file *f, struct cad_run *r, const u64 *addrs, struct cad_log *log);

/* cad_bounce.c */
int cad_bounce_buffer(struct cad_file *f, struct cad_kbuf *b, u64 addr, u64 size, bool write,
		      u32 index, const char *name, struct cad_log *log);
void cad_bounce_free(struct cad_kbuf *b);
int cad_bounce_start(struct cad_group *g, struct cad_run *r);
void cad_bounce_ended(struct cad_run *r);
int cad_bounce_flush(struct cad_file *f);
void cad_bounce_forget(struct cad_run *r);

/* cad_match.c */
int cad_index_keys(struct cad_run *r);
u64 cad_transfer(struct cad_run *sr, const struct cad_node *sn, struct cad_run *rr,
		 const struct cad_node *rn, u64 off, u64 len, struct cad_budget *b);
void cad_go_on_later(struct cad_group *g);
void cad_progress(struct cad_group *g, struct cad_budget *b);
int cad_start_locked(struct cad_group *g, struct cad_run *r, u64 seq);

/* cad_defer.c */
struct cad_match *cad_new_match(struct cad_run *sr, u32 snode, struct cad_run *rr, u32 rnode);
void cad_free_match(struct cad_match *m);
void cad_queue_part(struct cad_group *g, struct cad_match *m, struct cad_file *owner,
		    u64 off, u64 len);
void cad_drop_deferred(struct cad_group *g, struct cad_run *r);
bool cad_is_current(const struct cad_file *f);
bool cad_defer_match(struct cad_group *g, struct cad_run *sr, u32 snode, struct cad_run *rr,
		     u32 rnode);

/* cad_fail.c */
void cad_publish(struct cad_run *r);
void cad_tell(struct cad_run *r);
void cad_ended(struct cad_run *r);
void cad_finish(struct cad_run *r, int result);
struct cad_run *cad_find_running(struct cad_file *f, u64 ctx, u64 seq);
struct cad_tomb *cad_find_tomb(struct cad_group *g, u64 ctx, u64 seq);
void cad_tomb_seen(struct cad_group *g, struct cad_tomb *t, u32 grank);
void cad_tombs_passed(struct cad_group *g, u64 ctx, u64 seq, u32 grank);
void cad_fail_collective(struct cad_group *g, const struct cad_run *r, int err);

#endif /* CAD_RUN_H */
