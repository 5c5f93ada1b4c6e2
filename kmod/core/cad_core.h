/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * cad_core.h - the CAD core: program verifier, DAG executor, reductions,
 * reduction VM, disassembler and image writer.
 *
 * The same sources are compiled into the kernel module, into cadrt and into
 * cadc.  The invariant they keep: a struct cad_prog exists only if
 * cad_verify() accepted its image; the executor, the reductions, the VM and
 * the disassembler trust a verified program and nothing else.  The core
 * never prints: messages go to a caller-supplied struct cad_log.  It is not
 * thread-safe: callers serialise access to one program's state.
 */
#ifndef CAD_CORE_H
#define CAD_CORE_H

#include "cad_compat.h"
#include "../uapi/cad.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Log: a caller-supplied buffer that always stays NUL-terminated.      */

struct cad_log {
	char *buf;       /* may be NULL: messages are dropped */
	__u32 size;      /* bytes at buf */
	__u32 len;       /* bytes written, excluding the NUL */
	bool truncated;  /* a message did not fit */
};

void cad_log_init(struct cad_log *log, char *buf, __u32 size);
void cad_logf(struct cad_log *log, const char *fmt, ...) CAD_PRINTF(2, 3);
void cad_vlogf(struct cad_log *log, const char *fmt, va_list ap);

/* A small vsnprintf (%%, %c, %s, %d, %i, %u, %x with l/ll, width, '-', '0')
 * so that messages are byte-identical in the kernel and in user space.
 * Returns the length the full output would have had. */
int cad_snprintf(char *buf, size_t size, const char *fmt, ...) CAD_PRINTF(3, 4);
int cad_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);

/* ------------------------------------------------------------------ */
/* Names and sizes from the ABI lists.                                 */

const char *cad_node_kind_name(unsigned int kind);
const char *cad_dtype_name(unsigned int dtype);
const char *cad_op_name(unsigned int op);
const char *cad_collective_name(unsigned int coll);
const char *cad_buffer_kind_name(unsigned int kind);
const char *cad_section_name(unsigned int sec);
const char *cad_vm_opcode_name(unsigned int code);
/* Bytes per element; 0 for an unknown type and for CAD_DT_USER. */
__u32 cad_dtype_size(unsigned int dtype);

enum cad_vm_format {
	CAD_VMF_INVALID = 0,
	CAD_VMF_EXIT, CAD_VMF_JA, CAD_VMF_JCOND, CAD_VMF_LD, CAD_VMF_ST,
	CAD_VMF_MOVI, CAD_VMF_LDK, CAD_VMF_UN, CAD_VMF_BIN, CAD_VMF_CMP, CAD_VMF_SEL,
	CAD_VMF_SPILL, CAD_VMF_FILL,
};
/* Format of a VM opcode (CAD_VMF_INVALID if unknown) and its access width. */
enum cad_vm_format cad_vm_opcode_format(unsigned int code);
unsigned int cad_vm_opcode_width(unsigned int code);

/* ------------------------------------------------------------------ */
/* Verifier                                                            */

struct cad_limits {
	__u32 max_image_size;    /* bytes of a whole image */
	__u32 max_nodes;
	__u32 max_edges;
	__u32 max_buffers;
	__u32 max_ops;
	__u32 max_code;          /* VM instructions in all */
	__u32 max_op_code;       /* VM instructions of one operator */
	__u32 max_consts;
	__u32 max_lines;
	__u32 max_strings;       /* bytes of the string table */
	__aligned_u64 max_buffer_size;  /* bytes of one buffer */
	__aligned_u64 max_scratch;      /* bytes of all SCRATCH buffers */
};

extern const struct cad_limits cad_default_limits;

/* A verified program: views into the image it was verified from.  The
 * image must stay alive and unchanged (in the kernel: a kernel copy, never
 * user memory) for as long as the view is used. */
struct cad_prog {
	const struct cad_prog_header *hdr;
	const struct cad_buffer *buffers;
	const struct cad_node *nodes;
	const struct cad_edge *edges;
	const struct cad_user_op *ops;
	const struct cad_vm_insn *code;
	const __u64 *consts;
	const struct cad_line *lines;
	const char *strings;
	__u32 n_buffers, n_nodes, n_edges, n_ops, n_code, n_consts, n_lines;
	__u32 n_strings;
	__u64 scratch_bytes;     /* sum of the SCRATCH buffer sizes */
};

/*
 * Verify an image (8-byte aligned, size bytes) against limits (NULL: the
 * defaults).  On success fills *prog and returns 0.  On rejection returns
 * -EINVAL (malformed) or -E2BIG (over a limit), with one line in log:
 * "node 7 (bcast.cad:12:5): ...".  -ENOMEM if its working memory could not
 * be allocated.
 */
int cad_verify(const void *image, __u32 size, const struct cad_limits *limits,
	       struct cad_prog *prog, struct cad_log *log);

/* The string at a verified offset. */
const char *cad_prog_string(const struct cad_prog *prog, __u32 off);

/* ------------------------------------------------------------------ */
/* Executor: the DAG state machine.  No I/O: an engine pops ready nodes,
 * performs them (transfers, copies, reductions) and reports completion;
 * completion cascades readiness to successors at once.  NOP nodes are
 * completed inside the executor and never handed out.  Ready transfers
 * (SEND, RECV) are handed out before ready local nodes (COPY, REDUCE),
 * each kind in the order it became ready: an engine that performs a local
 * node where it pops it has every transfer ready beside it posted first,
 * so a peer can start on this rank's buffers while it copies or reduces
 * (alltoall_rotated's own block is a copy ready at start beside the sends;
 * copying it first delayed every send by the whole memcpy).  The verifier
 * proved nodes that are ready together race-free, so their order is free. */

enum cad_node_state {
	CAD_NS_WAITING = 0,  /* predecessors outstanding */
	CAD_NS_READY,        /* in the ready queue */
	CAD_NS_ISSUED,       /* handed to the engine */
	CAD_NS_DONE,
	CAD_NS_FAILED,
};

struct cad_exec {
	const struct cad_prog *prog;
	const __u32 *indegree;   /* per node, computed once */
	__u32 *pending;          /* per node: predecessors not yet done */
	__u8 *state;             /* per node: enum cad_node_state */
	__u32 *ready;            /* ready node indexes: transfers (and NOPs) in a
				  * FIFO from the front, local nodes in a FIFO
				  * from the back (a node is ready once a run,
				  * so the two never meet) */
	__u32 head, tail;        /* the front FIFO: ready[head..tail) */
	__u32 lhead, ltail;      /* the back one: ready[n-1-lhead] on, ltail - lhead of them */
	__u32 n_done;            /* nodes DONE */
	__u32 n_issued;          /* nodes ISSUED now */
	int error;               /* first failure, 0 if none */
};

/* Bytes of memory cad_exec_init needs for prog (4-byte aligned). */
__u64 cad_exec_mem_size(const struct cad_prog *prog);
/* Bind ex to prog and to mem; computes in-degrees.  Then cad_exec_start. */
void cad_exec_init(struct cad_exec *ex, const struct cad_prog *prog, void *mem);
/* Arm (or re-arm, for a persistent collective) all nodes. */
void cad_exec_start(struct cad_exec *ex);
/* Pop the next ready node, transfers first: true and *node set, marked
 * ISSUED.  False when nothing is ready or after a failure (nothing new is
 * issued then). */
bool cad_exec_next(struct cad_exec *ex, __u32 *node);
/* An ISSUED node finished: successors whose predecessors are all done
 * become ready.  Returns 0, or -EFAULT if node was not ISSUED (a bug). */
int cad_exec_complete(struct cad_exec *ex, __u32 node);
/* An ISSUED node failed with err (< 0): the collective fails with the
 * first error; its successors are never issued. */
int cad_exec_fail(struct cad_exec *ex, __u32 node, int err);
/* Stop issuing (cancel, peer death): fails the collective with err. */
void cad_exec_abort(struct cad_exec *ex, int err);
/* 0 when every node is done; -EINPROGRESS while nodes are outstanding;
 * the first error once a failed execution has nothing ISSUED. */
int cad_exec_status(const struct cad_exec *ex);

/* ------------------------------------------------------------------ */
/* Reductions: built-in ops and the VM for user-defined ops.           */

/* Whether a built-in op applies to a datatype, with MPI's rules. */
bool cad_reduce_supported(unsigned int op, unsigned int dtype);

/* Elements per VM dispatch (of 64-bit lanes), and the interpreter's
 * working memory: the register lanes, the spill slots' lanes, then per
 * instruction a 16-bit mask, two 16-bit instruction indexes and a byte of
 * flags (vm.c): 188 KiB. */
#define CAD_VM_LANES        256
#define CAD_VM_SCRATCH_SIZE ((CAD_VM_NREGS + CAD_VM_NSLOTS) * CAD_VM_LANES * 8 + \
			     CAD_VM_MAX_INSNS * 7)

/*
 * Perform a verified REDUCE node: dst and src point at the node's
 * destination and source ranges (buffer base + offset).  vm_scratch is
 * CAD_VM_SCRATCH_SIZE bytes, 8-byte aligned, used for user-defined ops
 * (may be NULL otherwise).  Runs in short FPU sections in the kernel.
 */
void cad_reduce(const struct cad_prog *prog, const struct cad_node *node,
		void *dst, const void *src, void *vm_scratch);

/* The parts cad_reduce uses, compiled with floating point enabled: only
 * call them between cad_fpu_begin() and cad_fpu_end(). */
void cad_reduce_builtin_fpu(void *inout, const void *in, __u64 count,
			    unsigned int op, unsigned int dtype);
void cad_vm_run_fpu(const struct cad_prog *prog, const struct cad_user_op *op,
		    void *inout, const void *in, __u64 count, void *scratch);

/* ------------------------------------------------------------------ */
/* Disassembler: text through a callback, a line per call ("\n" ended). */

typedef void (*cad_emit_fn)(void *ctx, const char *text, __u32 len);
void cad_disasm(const struct cad_prog *prog, cad_emit_fn emit, void *ctx);
/* One node, one line without "\n", into buf; returns the full length. */
int cad_disasm_node(const struct cad_prog *prog, __u32 index, char *buf, size_t size);

/* ------------------------------------------------------------------ */
/* Image writer: lays out sections after the header, 8-byte aligned, and
 * fills the header.  It does not validate: cad_verify does. */

struct cad_image_desc {
	__u32 rank, nranks, collective, name, flags;
	const struct cad_buffer *buffers;  __u32 n_buffers;
	const struct cad_node *nodes;      __u32 n_nodes;
	const struct cad_edge *edges;      __u32 n_edges;
	const struct cad_user_op *ops;     __u32 n_ops;
	const struct cad_vm_insn *code;    __u32 n_code;
	const __u64 *consts;               __u32 n_consts;
	const struct cad_line *lines;      __u32 n_lines;
	const char *strings;               __u32 n_strings;
};

/* Bytes the image of d needs (0 if it would exceed 4 GiB). */
__u64 cad_image_size(const struct cad_image_desc *d);
/* Write the image of d into out (8-byte aligned, size bytes). */
/* Length of the valid UTF-8 sequence at s[i] (of n bytes, i < n), 0 if it
 * is not one: no overlong forms, no surrogates, nothing above U+10FFFF.
 * The verifier's rule for strings; cadc's for source files. */
__u32 cad_utf8_length(const __u8 *s, __u32 i, __u32 n);

int cad_image_write(const struct cad_image_desc *d, void *out, __u64 size);

#ifdef __cplusplus
}
#endif

#endif /* CAD_CORE_H */
