/* SPDX-License-Identifier: MIT */
/*
 * cadrt_net.h - a network transport for the ranks of a job that are on
 * other nodes.  cadrt itself needs no network library: whoever starts a
 * job across nodes hands it one.  libcadrt_mpi.so (cadrt_init_mpi) passes
 * MPI point-to-point on a duplicated communicator, so that cadrt's tags
 * never meet the application's.
 *
 * How cadrt uses it.  Ranks on one node talk through shared memory and
 * single copies, as always.  To a rank on another node, every control
 * message (the same messages as in shared memory: eager data up to 1984
 * bytes, clear-to-send, abort, release) is one message with tag 0, and
 * cadrt keeps one receive of tag 0 posted per remote rank, so they arrive
 * in order.  A larger transfer is a rendezvous: the receiver posts a
 * receive into the destination with a tag it chooses (1 .. tag_ub), tells
 * the sender that tag in a clear-to-send, and the sender sends from the
 * source buffer: the data moves once, from buffer to buffer.
 *
 * The functions are called only from the thread that called
 * cadrt_init_job_net, inside cadrt calls, never from a signal handler or
 * cadrt's progress thread (an MPI library initialised with
 * MPI_THREAD_SINGLE or FUNNELED allows no more).  So transfers to other
 * nodes progress while the application is inside cadrt (test, wait);
 * those within the node progress as the engine allows.
 */
#ifndef CADRT_NET_H
#define CADRT_NET_H

#include <stddef.h>

#include "cadrt/cadrt.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cadrt_net {
	void *ctx;
	int tag_ub; /* the largest tag (at least 2) */
	/* Start sending / receiving len bytes to / from rank `peer` of the
	 * job with tag; *handle identifies the operation until it completes.
	 * 0 or a negative errno. */
	int (*isend)(void *ctx, int peer, int tag, const void *buf, size_t len, void **handle);
	int (*irecv)(void *ctx, int peer, int tag, void *buf, size_t len, void **handle);
	/* *done = 1 once the operation is complete (the handle is then
	 * spent).  0 or a negative errno. */
	int (*test)(void *ctx, void *handle, int *done);
	/* Cancel a receive; it must still be tested until done. */
	int (*cancel)(void *ctx, void *handle);
};

/*
 * cadrt_init_job for a job whose ranks may be on several nodes: ranks that
 * share a node (the same boot id and host name) share memory as under
 * cadrun, the others talk through net.  net is copied.
 *
 * For testing one machine as several nodes: CADRT_RANKS_PER_NODE=k puts
 * ranks 0..k-1 on one node, k..2k-1 on the next, and so on.  (It is read
 * only here: under cadrun, or cadrt_init_job without a net, all ranks are
 * on one node.)
 */
int cadrt_init_job_net(int rank, int size, cadrt_allgather_fn allgather, void *ctx, const struct cadrt_net *net);

#ifdef __cplusplus
}
#endif

#endif /* CADRT_NET_H */
