/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * loopback.h - every rank of a collective in one address space, driven by
 * the core executor: a reference engine for tests and the demo.
 *
 * Matching follows the ABI: the k-th SEND from rank s to rank d with tag t
 * (in s's node order) meets the k-th RECV on d from s with tag t.  A
 * transfer happens when both sides are issued (rendezvous, one copy), so a
 * program that needs buffering to make progress is reported as a
 * deadlock instead of hanging.
 */
#ifndef CAD_LOOPBACK_H
#define CAD_LOOPBACK_H

#include "../../kmod/core/cad_core.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cad_lb_rank {
	struct cad_prog prog;     /* verified */
	void **bufs;              /* base address of each buffer */
	/* the rest is the engine's */
	struct cad_exec ex;
	__u32 *seq;               /* per node: k for the k-th SEND/RECV of its key */
	__u32 *posted;            /* issued, unmatched SEND/RECV nodes */
	__u32 n_posted;
};

/* Bytes of memory cad_lb_run needs for these ranks. */
__u64 cad_lb_mem_size(const struct cad_lb_rank *ranks, __u32 nranks);

/*
 * Run every rank to completion.  Returns 0 when all completed; -EDEADLK
 * (with the stuck nodes described in why) when nothing can progress;
 * -EINVAL when matched sizes differ.  vm_scratch: CAD_VM_SCRATCH_SIZE.
 */
int cad_lb_run(struct cad_lb_rank *ranks, __u32 nranks, void *mem, void *vm_scratch,
	       char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* CAD_LOOPBACK_H */
