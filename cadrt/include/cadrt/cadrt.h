/* SPDX-License-Identifier: MIT */
/*
 * cadrt.h - the CAD runtime: verified collective algorithms as
 * non-blocking collectives.
 *
 * Every call returns 0 or a negative errno; cadrt_error_message() then
 * holds a line saying why ("cadrt_ibcast: root 7 is not below the 4 ranks
 * of the communicator").  Nothing prints unless CADRT_VERBOSE=1.
 *
 * Threads: calls come from one thread at a time (as MPI_THREAD_SERIALIZED),
 * any thread, not only the one that called cadrt_init; the thread and
 * signal engines progress in the background on their own (the signal
 * engine interrupts the thread that made the last call).
 *
 * Environment:
 *   CADRT_LIBRARY=FILE          the .cadlib to load (default: the standard
 *                               library beside libcadrt.so)
 *   CADRT_ALGORITHM_<COLL>=NAME[:PARAM=INT,...]  force an algorithm and
 *                               maybe its parameters (CADRT_ALGORITHM_BCAST=
 *                               bcast_chain_pipeline:seg=8192), overriding
 *                               the rules; read at a communicator's first
 *                               call with given arguments
 *   CADRT_ENGINE=poll|thread|signal|kernel|auto   see docs/runtime.md, "Engines"
 *   CADRT_THREAD_SPIN=1         the progress thread spins instead of sleeping
 *   CADRT_THREAD_CPU=N          pin the progress thread to CPU N
 *   CADRT_TOPOLOGY=FILE         a topology file (cadc topo) instead of hwloc
 *   CADRT_CMA=0                 do not use process_vm_readv/writev
 *   CADRT_VERBOSE=1             print errors and notices to stderr
 *   CADRT_EXPLAIN=1             rank 0 of each communicator prints each
 *                               algorithm it selects (once per call with
 *                               new arguments) and why, as cadc select
 *                               --explain does
 *   CADRT_PROOF=online|exact|strict|off  an instance outside the domain
 *                               its algorithm's proof covers is proven when
 *                               it first arrives (online, the default), or
 *                               refused (strict): either way one that is
 *                               not proven goes to the next rule; exact
 *                               also verifies each size no proof verified
 *                               (not taken on the size-class argument); off
 *                               runs whatever the rules select, unproven (a
 *                               warning at init)
 *   CADRT_PROOF_MAX_OPS=N       the largest instance (operations of all
 *                               ranks) proven on arrival; a larger one is
 *                               refused (default 4194304)
 *   CADRT_PROOF_CACHE=FILE      online proofs' verdicts kept in FILE for
 *                               later jobs (keyed by the library's hash;
 *                               whoever can write FILE decides what runs)
 */
#ifndef CADRT_H
#define CADRT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Datatypes and built-in ops, with the values of kmod/uapi/cad.h. */
typedef enum cadrt_datatype {
	CADRT_BYTE = 0,
	CADRT_INT8 = 1, CADRT_INT16 = 2, CADRT_INT32 = 3, CADRT_INT64 = 4,
	CADRT_UINT8 = 5, CADRT_UINT16 = 6, CADRT_UINT32 = 7, CADRT_UINT64 = 8,
	CADRT_FLOAT = 9, CADRT_DOUBLE = 10,
	/* { value; int32_t index; } pairs, as MPI_FLOAT_INT ... MPI_SHORT_INT */
	CADRT_FLOAT_INT = 11, CADRT_DOUBLE_INT = 12, CADRT_INT_INT = 13,
	CADRT_LONG_INT = 14, CADRT_SHORT_INT = 15,
	/* The element type of a user-defined op (cadrt_op_lookup): with such an
	 * op, counts are elements of the op's own type. */
	CADRT_USER = 16,
} cadrt_datatype;

typedef enum cadrt_op {
	CADRT_SUM = 1, CADRT_PROD = 2, CADRT_MIN = 3, CADRT_MAX = 4,
	CADRT_BAND = 5, CADRT_BOR = 6, CADRT_BXOR = 7,
	CADRT_LAND = 8, CADRT_LOR = 9, CADRT_LXOR = 10,
	CADRT_MINLOC = 11, CADRT_MAXLOC = 12,
	/* User-defined ops: the values cadrt_op_lookup gives, in this range. */
	CADRT_USER_OP_FIRST = 256, CADRT_USER_OP_LAST = 256 + 1023,
} cadrt_op;

/* MPI_IN_PLACE: as the send buffer where MPI allows it (scatter's root:
 * as the receive buffer), alltoall's too.  The selected algorithm runs on
 * the caller's buffers if it declares `inplace`; else its program for
 * separate buffers runs from a copy of the in-place input that the
 * request keeps and each start refreshes. */
#define CADRT_IN_PLACE ((void *)1)

typedef struct cadrt_comm_s *cadrt_comm;
typedef struct cadrt_request_s *cadrt_request;

/* A message for the last error of the calling thread ("" if none). */
const char *cadrt_error_message(void);
/* Bytes per element of a datatype; 0 if unknown. */
size_t cadrt_datatype_size(cadrt_datatype dt);

/* ---- Start and end --------------------------------------------------- */

/*
 * Join the job: under cadrun the world is its N processes; a process
 * started on its own is a world of one.  Loads the library (CADRT_LIBRARY
 * or the standard one): a corrupt or foreign file fails here.
 */
int cadrt_init(void);
/* Completes nothing: every request must be complete or freed before. */
int cadrt_finalize(void);

/*
 * For launchers and glue (cadrt_mpi.h uses it under MPI): join a job of
 * `size` processes on this machine, this one being `rank`, instead of
 * cadrun's.  allgather(ctx, mine, all, bytes) must gather `bytes` from
 * every rank into all[rank * bytes] on every rank (a collective over the
 * job, e.g. MPI_Allgather); it returns 0 or non-zero on failure.  The job
 * then shares memory as under cadrun: rank 0 creates the segment and the
 * others open it through /proc/<pid>/fd.  Collective over the job.
 */
typedef int (*cadrt_allgather_fn)(void *ctx, const void *mine, void *all, size_t bytes);
int cadrt_init_job(int rank, int size, cadrt_allgather_fn allgather, void *ctx);
/* The engine in use: "poll", "thread", "signal" or "kernel". */
const char *cadrt_engine(void);

/* ---- User-defined operators ------------------------------------------ */
/*
 * A user-defined reduction operator by name (C compiled by `cadc op` into
 * verified VM bytecode; see algorithms/ops/cad_op.h): from the job's
 * library when lib is NULL, else from a .cadlib or a .cadop file (verified
 * again when read).  *op is usable in every reducing collective, blocking
 * or persistent, on every engine (the kernel engine runs it in cad.ko),
 * with CADRT_USER as the datatype; the order of contributions is MPI's
 * (inout = in op inout, in from the lower ranks) and a non-commutative op
 * is combined in rank order.  Every rank must look the op up.  After
 * cadrt_init; the same name gives the same op; -ENOENT if there is none,
 * -EEXIST if another op of that name was looked up before.
 */
int cadrt_op_lookup(const char *lib, const char *name, cadrt_op *op);
/* Bytes per element of an op's type (0 for a built-in op: the datatype
 * says) and whether it is commutative. */
int cadrt_op_info(cadrt_op op, size_t *elem_size, int *commutative);

/* ---- Communicators --------------------------------------------------- */

cadrt_comm cadrt_comm_world(void);
int cadrt_comm_rank(cadrt_comm comm, int *rank);
int cadrt_comm_size(cadrt_comm comm, int *size);
/* Collective over comm, as MPI_Comm_split: ranks with the same color form
 * a communicator, ordered by key, then by rank in comm.  A negative color
 * (as MPI_UNDEFINED) gives *out = NULL. */
int cadrt_comm_split(cadrt_comm comm, int color, int key, cadrt_comm *out);
/* A communicator of the ranks parent_ranks[0..n-1] of parent (the
 * calling rank among them), in that order, without communicating: every
 * member must call it with the same list and the same id, and no two
 * communicators the members share may have the same id (MPI glue derives
 * it from an agreement over the MPI communicator). */
int cadrt_comm_create(cadrt_comm parent, int n, const int *parent_ranks, unsigned long long id,
		      cadrt_comm *out);
/* Frees a communicator made by a split (not the world); sets *comm NULL.
 * -EBUSY while collectives on it are active.  Persistent requests made on
 * it keep working: it goes when the last of them is freed. */
int cadrt_comm_free(cadrt_comm *comm);

/* ---- Non-blocking collectives (MPI's argument order and meaning) ----- */
/* Counts are elements per rank.  Send and receive buffers must not
 * overlap: use CADRT_IN_PLACE.  The gather, scatter, allgather and
 * alltoall forms take one count and one datatype for both sides. */

int cadrt_ibcast(void *buf, size_t count, cadrt_datatype dt, int root, cadrt_comm comm,
		 cadrt_request *req);
int cadrt_ireduce(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		  cadrt_op op, int root, cadrt_comm comm, cadrt_request *req);
int cadrt_iallreduce(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		     cadrt_op op, cadrt_comm comm, cadrt_request *req);
int cadrt_igather(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		  int root, cadrt_comm comm, cadrt_request *req);
int cadrt_iscatter(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		   int root, cadrt_comm comm, cadrt_request *req);
int cadrt_iallgather(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		     cadrt_comm comm, cadrt_request *req);
int cadrt_ialltoall(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		    cadrt_comm comm, cadrt_request *req);
int cadrt_ireduce_scatter_block(const void *sendbuf, void *recvbuf, size_t count,
				cadrt_datatype dt, cadrt_op op, cadrt_comm comm,
				cadrt_request *req);
int cadrt_ibarrier(cadrt_comm comm, cadrt_request *req);

/* ---- Persistent collectives: select, instantiate, verify once -------- */
/* The same arguments; the request starts inactive.  cadrt_start runs it,
 * cadrt_wait/test complete it and leave it inactive for the next start;
 * cadrt_req_free releases it. */

int cadrt_bcast_init(void *buf, size_t count, cadrt_datatype dt, int root, cadrt_comm comm,
		     cadrt_request *req);
int cadrt_reduce_init(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		      cadrt_op op, int root, cadrt_comm comm, cadrt_request *req);
int cadrt_allreduce_init(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
			 cadrt_op op, cadrt_comm comm, cadrt_request *req);
int cadrt_gather_init(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		      int root, cadrt_comm comm, cadrt_request *req);
int cadrt_scatter_init(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
		       int root, cadrt_comm comm, cadrt_request *req);
int cadrt_allgather_init(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
			 cadrt_comm comm, cadrt_request *req);
int cadrt_alltoall_init(const void *sendbuf, void *recvbuf, size_t count, cadrt_datatype dt,
			cadrt_comm comm, cadrt_request *req);
int cadrt_reduce_scatter_block_init(const void *sendbuf, void *recvbuf, size_t count,
				    cadrt_datatype dt, cadrt_op op, cadrt_comm comm,
				    cadrt_request *req);
int cadrt_barrier_init(cadrt_comm comm, cadrt_request *req);
int cadrt_start(cadrt_request *req);

/* ---- Completion ------------------------------------------------------ */
/* A completed non-persistent request is freed and *req set to NULL; the
 * return value is the collective's result (0, or why it failed). */

int cadrt_test(cadrt_request *req, int *flag);
int cadrt_wait(cadrt_request *req);
/* As MPI_Request_get_status: *flag = 1 if req has completed (a test would
 * complete it at once), or is inactive or NULL; nothing is freed or
 * waited for, but, as in MPI, one turn of progress is made when it has
 * not completed, so a loop of it alone completes the collective.  A
 * request whose sends all went into the peers' rings in its start (a
 * small broadcast's root) has completed there. */
int cadrt_request_get_status(cadrt_request req, int *flag);
/* The same answer without progress: a look at the request alone (a load
 * or two; the kernel engine's status page), for a caller that must not
 * pay a progress pass now.  A loop of it alone completes nothing under
 * the poll engine. */
int cadrt_request_peek(cadrt_request req, int *flag);
/* Waits for all; returns the first failure, 0 if none.  NULL entries are
 * skipped. */
int cadrt_waitall(int n, cadrt_request reqs[]);
/* Frees an inactive persistent request, or a completed one; an active
 * non-persistent request is waited for first. */
int cadrt_req_free(cadrt_request *req);

/* For glue that polls cadrt in a loop together with another library's
 * progress (libcadmpi's MPI_Wait): between begin and end the caller
 * promises to call cadrt_test often, and the signal engine neither wakes
 * its helper nor interrupts the caller for each message; peers take it
 * as waiting (as in cadrt_wait), so exchanges with them may go through
 * the shared-memory lanes (docs/runtime.md, "Transports").  They nest. */
void cadrt_poll_begin(void);
void cadrt_poll_end(void);

/* The algorithm a request runs ("bcast_binomial"), for reports. */
const char *cadrt_request_algorithm(cadrt_request req);

/* ---- Hand-built CADs (the KACC paper's interface) -------------------- */
/*
 * Declare the memory, add nodes (each returns its index), connect them,
 * issue.  The program is verified by the same core verifier as compiled
 * ones before it runs; a rejection is -EINVAL with the verifier's line.
 * A send on one rank meets the receive on its peer with the same tag, the
 * k-th with the k-th.  Edges may be added in any order; a cycle is an
 * error at issue.  A CAD can be issued again once its request completed.
 */
typedef struct cadrt_cad_s *cadrt_cad;

int cadrt_cad_new(cadrt_comm comm, cadrt_cad *cad);
/* Memory the nodes use: [base, base + size); writable or read-only.
 * *buf receives its index. */
int cadrt_cad_buffer(cadrt_cad cad, void *base, size_t size, int writable, int *buf);
int cadrt_cad_send(cadrt_cad cad, int buf, size_t offset, size_t len, int peer, unsigned tag,
		   int *node);
int cadrt_cad_recv(cadrt_cad cad, int buf, size_t offset, size_t len, int peer, unsigned tag,
		   int *node);
int cadrt_cad_copy(cadrt_cad cad, int dst_buf, size_t dst_offset, int src_buf,
		   size_t src_offset, size_t len, int *node);
/* dst <- op(dst, src), count elements of dt; with a user-defined op
 * (cadrt_op_lookup), dt is CADRT_USER and count counts its elements. */
int cadrt_cad_reduce(cadrt_cad cad, int dst_buf, size_t dst_offset, int src_buf,
		     size_t src_offset, size_t count, cadrt_datatype dt, cadrt_op op,
		     int *node);
/* to runs after from. */
int cadrt_cad_connect(cadrt_cad cad, int from, int to);
int cadrt_cad_issue(cadrt_cad cad, cadrt_request *req);
/* As cadrt_test. */
int cadrt_cad_query(cadrt_request *req, int *done);
int cadrt_cad_free(cadrt_cad *cad);

#ifdef __cplusplus
}
#endif

#endif /* CADRT_H */
