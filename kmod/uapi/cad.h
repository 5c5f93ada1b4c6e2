/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * cad.h - the CAD ABI: the binary per-rank CAD program and the /dev/cad ioctls.
 *
 * A CAD program is one rank's part of one collective instance: a DAG of
 * nodes (SEND, RECV, COPY, REDUCE, NOP) over a table of buffers, stored in
 * topological order so that every edge points forward.  The image is
 * little-endian, uses fixed-width types only and holds no pointers: buffer
 * addresses are bound when the program is loaded, never stored in it.
 *
 * Image layout: a struct cad_prog_header, then sections placed anywhere
 * after it (8-byte aligned, not overlapping), each described in the header
 * by offset, entry count and entry size:
 *
 *   BUFFERS  struct cad_buffer      the buffer table
 *   NODES    struct cad_node        the DAG, topological order
 *   EDGES    struct cad_edge        successors of every node, node by node
 *   OPS      struct cad_user_op     user-defined reduction operators
 *   CODE     struct cad_vm_insn     their reduction VM code
 *   CONSTS   __u64                  their 64-bit constants
 *   LINES    struct cad_line        source locations (file, line, column)
 *   STRINGS  char                   NUL-terminated strings; offset 0 = ""
 *
 * Every field that a node kind does not use, and every reserved field,
 * must be zero, so that later versions can give them a meaning.
 * The verifier in kmod/core is the only gate for all of this.
 *
 * Lists below are X-macros: X(NAME, value, ...).  Each list is expanded into
 * the enum here and into every table that needs it (names, verifier rules,
 * interpreter dispatch), so adding an entry is one line.
 */
#ifndef _UAPI_LINUX_CAD_H
#define _UAPI_LINUX_CAD_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define CAD_MAGIC   0x50444143u /* "CADP" read as a little-endian __u32 */
#define CAD_VERSION 1           /* program format version */

#define CAD_NO_LINE 0xffffffffu /* cad_node.line / cad_user_op.line: none */

/* ------------------------------------------------------------------ */
/* Sections                                                            */

#define CAD_SECTIONS(X)                                                 \
	X(BUFFERS, 0, "buffers")                                        \
	X(NODES,   1, "nodes")                                          \
	X(EDGES,   2, "edges")                                          \
	X(OPS,     3, "ops")                                            \
	X(CODE,    4, "code")                                           \
	X(CONSTS,  5, "consts")                                         \
	X(LINES,   6, "lines")                                          \
	X(STRINGS, 7, "strings")

enum cad_section_id {
#define CAD_X_ENUM(name, value, str) CAD_SEC_##name = value,
	CAD_SECTIONS(CAD_X_ENUM)
#undef CAD_X_ENUM
	CAD_SEC_COUNT
};

struct cad_section {
	__u32 off;      /* byte offset from the image start, multiple of 8; 0 if empty */
	__u32 count;    /* number of entries */
	__u32 entsize;  /* bytes per entry: sizeof the struct of this version */
	__u32 reserved;
};

/* ------------------------------------------------------------------ */
/* Collectives (informational: what the program implements)             */

#define CAD_COLLECTIVES(X)                                              \
	X(CUSTOM,               0, "custom")                            \
	X(BCAST,                1, "bcast")                             \
	X(REDUCE,               2, "reduce")                            \
	X(ALLREDUCE,            3, "allreduce")                         \
	X(GATHER,               4, "gather")                            \
	X(SCATTER,              5, "scatter")                           \
	X(ALLGATHER,            6, "allgather")                         \
	X(ALLTOALL,             7, "alltoall")                          \
	X(REDUCE_SCATTER_BLOCK, 8, "reduce_scatter_block")              \
	X(BARRIER,              9, "barrier")

enum cad_collective {
#define CAD_X_ENUM(name, value, str) CAD_COLL_##name = value,
	CAD_COLLECTIVES(CAD_X_ENUM)
#undef CAD_X_ENUM
	CAD_COLL_COUNT
};

struct cad_prog_header {
	__u32 magic;        /* CAD_MAGIC */
	__u16 version;      /* CAD_VERSION */
	__u16 header_size;  /* sizeof(struct cad_prog_header) */
	__u32 total_size;   /* bytes in the whole image */
	__u32 flags;        /* none defined yet: 0 */
	__u32 rank;         /* this program's rank, < nranks */
	__u32 nranks;       /* ranks in the group, >= 1 */
	__u32 collective;   /* enum cad_collective */
	__u32 name;         /* string offset: algorithm name */
	struct cad_section sec[CAD_SEC_COUNT];
};

/* ------------------------------------------------------------------ */
/* Buffers                                                             */

#define CAD_BUFFER_KINDS(X)                                             \
	X(SEND,    0, "send")    /* the caller's send buffer (read-only) */    \
	X(RECV,    1, "recv")    /* the caller's receive buffer */             \
	X(SCRATCH, 2, "scratch") /* allocated and zeroed by the engine */

enum cad_buffer_kind {
#define CAD_X_ENUM(name, value, str) CAD_BUF_##name = value,
	CAD_BUFFER_KINDS(CAD_X_ENUM)
#undef CAD_X_ENUM
	CAD_BUF_KIND_COUNT
};

/* cad_buffer.access: what the program's own nodes may do with it.  A
 * SEND node needs READ on its source; RECV needs WRITE on its destination;
 * COPY needs READ / WRITE; REDUCE needs READ on the source and READ|WRITE
 * on the destination.  A peer reaches a buffer only through a matched
 * SEND (it reads that range) or RECV (it writes that range). */
#define CAD_ACC_READ  0x1u
#define CAD_ACC_WRITE 0x2u

struct cad_buffer {
	__u32 kind;          /* enum cad_buffer_kind */
	__u32 access;        /* CAD_ACC_* */
	__aligned_u64 size;  /* bytes */
	__u32 name;          /* string offset */
	__u32 reserved;
};

/* ------------------------------------------------------------------ */
/* Datatypes: X(NAME, value, size in bytes, "name")                     */
/* The pair types are C structs { value; __s32 index; } with C layout,  */
/* as MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_2INT, MPI_LONG_INT,            */
/* MPI_SHORT_INT on x86-64.                                             */

#define CAD_DATATYPES(X)                                                \
	X(BYTE,       0,  1, "byte")                                    \
	X(INT8,       1,  1, "i8")                                      \
	X(INT16,      2,  2, "i16")                                     \
	X(INT32,      3,  4, "i32")                                     \
	X(INT64,      4,  8, "i64")                                     \
	X(UINT8,      5,  1, "u8")                                      \
	X(UINT16,     6,  2, "u16")                                     \
	X(UINT32,     7,  4, "u32")                                     \
	X(UINT64,     8,  8, "u64")                                     \
	X(FLOAT,      9,  4, "f32")                                     \
	X(DOUBLE,     10, 8, "f64")                                     \
	X(FLOAT_INT,  11, 8, "f32_i32")                                 \
	X(DOUBLE_INT, 12, 16, "f64_i32")                                \
	X(INT_INT,    13, 8, "i32_i32")                                 \
	X(LONG_INT,   14, 16, "i64_i32")                                \
	X(SHORT_INT,  15, 8, "i16_i32")                                 \
	X(USER,       16, 0, "user") /* element of a user op: its elem_size */

enum cad_datatype {
#define CAD_X_ENUM(name, value, size, str) CAD_DT_##name = value,
	CAD_DATATYPES(CAD_X_ENUM)
#undef CAD_X_ENUM
	CAD_DT_COUNT
};

/* ------------------------------------------------------------------ */
/* Reduction operators: X(NAME, value, "name").  All built-ins are       */
/* commutative; MPI's semantics (see kmod/core/reduce.c for the exact    */
/* rules, NaN and ties included).                                       */

#define CAD_OPS(X)                                                      \
	X(NONE,   0,  "none")                                           \
	X(SUM,    1,  "sum")                                            \
	X(PROD,   2,  "prod")                                           \
	X(MIN,    3,  "min")                                            \
	X(MAX,    4,  "max")                                            \
	X(BAND,   5,  "band")                                           \
	X(BOR,    6,  "bor")                                            \
	X(BXOR,   7,  "bxor")                                           \
	X(LAND,   8,  "land")                                           \
	X(LOR,    9,  "lor")                                            \
	X(LXOR,   10, "lxor")                                           \
	X(MINLOC, 11, "minloc")                                         \
	X(MAXLOC, 12, "maxloc")                                         \
	X(USER,   13, "user") /* cad_node.user_op names the operator */

enum cad_op {
#define CAD_X_ENUM(name, value, str) CAD_OP_##name = value,
	CAD_OPS(CAD_X_ENUM)
#undef CAD_X_ENUM
	CAD_OP_COUNT
};

/* ------------------------------------------------------------------ */
/* Nodes                                                               */

#define CAD_NODE_KINDS(X)                                               \
	X(NOP,    0, "nop")    /* a join: completes as soon as it is ready */ \
	X(SEND,   1, "send")   /* src_buf[src_off, +len) -> peer, tag */      \
	X(RECV,   2, "recv")   /* dst_buf[dst_off, +len) <- peer, tag */      \
	X(COPY,   3, "copy")   /* dst <- src, len bytes, no overlap */        \
	X(REDUCE, 4, "reduce") /* dst <- op(dst, src) elementwise */

enum cad_node_kind {
#define CAD_X_ENUM(name, value, str) CAD_NODE_##name = value,
	CAD_NODE_KINDS(CAD_X_ENUM)
#undef CAD_X_ENUM
	CAD_NODE_KIND_COUNT
};

/* cad_node.flags for SEND and RECV: who performs the single copy (the
 * KNEM direction control).  Neither bit: the transport decides. */
#define CAD_XFER_RECEIVER_READS 0x1u
#define CAD_XFER_SENDER_WRITES  0x2u

/*
 * A node.  Offsets and lengths are in bytes.  SEND and RECV are matched
 * per (group, source, destination, tag) in node order, as MPI matches in
 * posting order.  A REDUCE's len is a multiple of its element size; its
 * source and destination may be the same range, not partially overlap.
 */
struct cad_node {
	__u8  kind;           /* enum cad_node_kind */
	__u8  dtype;          /* REDUCE: enum cad_datatype */
	__u8  op;             /* REDUCE: enum cad_op */
	__u8  flags;          /* SEND, RECV: CAD_XFER_* */
	__u32 peer;           /* SEND, RECV: peer rank, != own rank */
	__u32 tag;            /* SEND, RECV */
	__u32 user_op;        /* REDUCE with CAD_OP_USER: index in OPS */
	__u32 dst_buf;        /* RECV, COPY, REDUCE */
	__u32 src_buf;        /* SEND, COPY, REDUCE */
	__aligned_u64 dst_off;
	__aligned_u64 src_off;
	__aligned_u64 len;
	__u32 edge_first;     /* successors: EDGES[edge_first, +edge_count), */
	__u32 edge_count;     /* strictly increasing, all > this node's index */
	__u32 line;           /* index in LINES, or CAD_NO_LINE */
	__u32 reserved;
};

/* Successor lists are stored node after node: node i's edge_first is the
 * sum of the edge_count of nodes 0..i-1. */
struct cad_edge {
	__u32 to;
};

struct cad_line {
	__u32 file;     /* string offset */
	__u32 line;     /* 1-based; 0 = unknown */
	__u32 col;      /* 1-based; 0 = unknown */
	__u32 reserved;
};

/* ------------------------------------------------------------------ */
/* User-defined operators and the reduction VM                          */

#define CAD_UOP_COMMUTATIVE 0x1u

struct cad_user_op {
	__u32 name;         /* string offset */
	__u32 elem_size;    /* bytes per element, 1 .. CAD_VM_MAX_ELEM */
	__u32 code_first;   /* its code: CODE[code_first, +code_count) */
	__u32 code_count;
	__u32 const_first;  /* its constants: CONSTS[const_first, +const_count) */
	__u32 const_count;
	__u32 flags;        /* CAD_UOP_* */
	__u32 line;         /* where it is defined: index in LINES or CAD_NO_LINE */
};

#define CAD_VM_NREGS     16
#define CAD_VM_NSLOTS    64     /* spill slots of 64 bits, per element */
#define CAD_VM_MAX_ELEM  256
#define CAD_VM_MAX_INSNS 4096   /* instructions of one operator, at most */

/*
 * The reduction VM applies one operator to one element pair: `in` (read
 * only) and `inout` (read and written).  Registers r0..r15 are 64-bit; all
 * are undefined at entry, and reading one before it is written on every
 * path is rejected.  Spill slots s0..s63 hold 64 bits each, per element,
 * where a register allocator keeps values it has no register for; like
 * the registers they are undefined at entry, and a FILL of a slot not
 * written on every path to it is rejected.  Integers live in a register
 * extended as their C type says (the compiler emits SEXT/ZEXT); a double
 * is its IEEE bits; a float is its IEEE bits in the low 32 bits with the
 * upper 32 bits zero.
 *
 * Instruction formats (cad_vm_insn fields not listed must be 0):
 *   EXIT   -                 end of the operator for this element
 *   JA     imm               pc += 1 + imm, imm >= 0 (forward only)
 *   JCOND  a, imm            JZ: if r[a] == 0, JNZ: if r[a] != 0, jump as JA
 *   LD     dst, a, imm       r[dst] = load width bytes at byte imm of the
 *                            element (a = 0: in, a = 1: inout)
 *   ST     a, imm            store the low width bytes of r[a] at byte imm
 *                            of inout
 *   MOVI   dst, imm          r[dst] = (__s64)imm
 *   LDK    dst, imm          r[dst] = CONSTS[const_first + imm]
 *   UN     dst, a            r[dst] = f(r[a])
 *   BIN    dst, a, b         r[dst] = f(r[a], r[b])
 *   CMP    dst, a, b         r[dst] = r[a] op r[b] ? 1 : 0 (encoded as BIN)
 *   SEL    dst, a, b, imm    r[dst] = r[a] != 0 ? r[b] : r[imm]
 *   SPILL  a, imm            slot[imm] = r[a], 0 <= imm < CAD_VM_NSLOTS
 *   FILL   dst, imm          r[dst] = slot[imm], 0 <= imm < CAD_VM_NSLOTS
 *
 * Semantics that C leaves undefined are defined here, as on x86-64:
 * integer arithmetic wraps; DIV by 0 gives 0 and MOD by 0 gives the
 * dividend (as eBPF); INT64_MIN / -1 = INT64_MIN and INT64_MIN % -1 = 0;
 * shift counts are taken mod 64.  Float to integer conversion truncates;
 * NaN and out-of-range give the "integer indefinite" 0x80..0 of the
 * target width (CVT_U64_* follows gcc's x86-64 sequence).  Compares give
 * 0 or 1; FNE is true on NaN.
 *
 * NaNs are as x86-64 SSE code gives them (gcc -O2, glibc).  A float
 * operation (FADD FSUB FMUL FDIV and the S forms) with one NaN operand
 * gives that NaN, quieted; with two NaN operands the result is the first
 * operand's NaN, quieted, as SSE's addsd does; FSQRT of a signalling NaN
 * quiets it; CVT_F64_F32 and CVT_F32_F64 keep a NaN's payload as
 * cvtss2sd and cvtsd2ss do (quieted, widened or truncated).  FNEG and
 * FABS only change the sign bit.  FMIN is glibc's fmin (FMAX its fmax,
 * SMIN/SMAX fminf/fmaxf): with ordered operands minsd's a < b ? a : b
 * (so fmin(+0, -0) is -0, the second operand, as maxsd's a > b ? a : b
 * makes fmax(+0, -0) -0); a quiet NaN operand yields the other operand;
 * a signalling NaN operand, or two NaNs, give a + b: the NaN as above.
 *
 * X(NAME, value, format, access width in bytes, "mnemonic")
 */
#define CAD_VM_OPCODES(X)                                               \
	X(EXIT,        0x00, EXIT,  0, "exit")                          \
	X(JA,          0x01, JA,    0, "ja")                            \
	X(JZ,          0x02, JCOND, 0, "jz")                            \
	X(JNZ,         0x03, JCOND, 0, "jnz")                           \
	X(LD_I8,       0x10, LD,    1, "ld.i8")                         \
	X(LD_U8,       0x11, LD,    1, "ld.u8")                         \
	X(LD_I16,      0x12, LD,    2, "ld.i16")                        \
	X(LD_U16,      0x13, LD,    2, "ld.u16")                        \
	X(LD_I32,      0x14, LD,    4, "ld.i32")                        \
	X(LD_U32,      0x15, LD,    4, "ld.u32")                        \
	X(LD_64,       0x16, LD,    8, "ld.64")                         \
	X(ST_8,        0x18, ST,    1, "st.8")                          \
	X(ST_16,       0x19, ST,    2, "st.16")                         \
	X(ST_32,       0x1a, ST,    4, "st.32")                         \
	X(ST_64,       0x1b, ST,    8, "st.64")                         \
	X(SPILL,       0x1c, SPILL, 8, "spill")                         \
	X(FILL,        0x1d, FILL,  8, "fill")                          \
	X(MOVI,        0x20, MOVI,  0, "movi")                          \
	X(LDK,         0x21, LDK,   0, "ldk")                           \
	X(MOV,         0x22, UN,    0, "mov")                           \
	X(ADD,         0x30, BIN,   0, "add")                           \
	X(SUB,         0x31, BIN,   0, "sub")                           \
	X(MUL,         0x32, BIN,   0, "mul")                           \
	X(DIV_S,       0x33, BIN,   0, "div.s")                         \
	X(DIV_U,       0x34, BIN,   0, "div.u")                         \
	X(MOD_S,       0x35, BIN,   0, "mod.s")                         \
	X(MOD_U,       0x36, BIN,   0, "mod.u")                         \
	X(AND,         0x37, BIN,   0, "and")                           \
	X(OR,          0x38, BIN,   0, "or")                            \
	X(XOR,         0x39, BIN,   0, "xor")                           \
	X(SHL,         0x3a, BIN,   0, "shl")                           \
	X(SHR_U,       0x3b, BIN,   0, "shr.u")                         \
	X(SHR_S,       0x3c, BIN,   0, "shr.s")                         \
	X(NEG,         0x3d, UN,    0, "neg")                           \
	X(NOT,         0x3e, UN,    0, "not")                           \
	X(SEXT8,       0x40, UN,    0, "sext8")                         \
	X(SEXT16,      0x41, UN,    0, "sext16")                        \
	X(SEXT32,      0x42, UN,    0, "sext32")                        \
	X(ZEXT8,       0x43, UN,    0, "zext8")                         \
	X(ZEXT16,      0x44, UN,    0, "zext16")                        \
	X(ZEXT32,      0x45, UN,    0, "zext32")                        \
	X(EQ,          0x48, CMP,   0, "eq")                            \
	X(NE,          0x49, CMP,   0, "ne")                            \
	X(LT_S,        0x4a, CMP,   0, "lt.s")                          \
	X(LE_S,        0x4b, CMP,   0, "le.s")                          \
	X(LT_U,        0x4c, CMP,   0, "lt.u")                          \
	X(LE_U,        0x4d, CMP,   0, "le.u")                          \
	X(FADD,        0x50, BIN,   0, "fadd")                          \
	X(FSUB,        0x51, BIN,   0, "fsub")                          \
	X(FMUL,        0x52, BIN,   0, "fmul")                          \
	X(FDIV,        0x53, BIN,   0, "fdiv")                          \
	X(FMIN,        0x54, BIN,   0, "fmin")                          \
	X(FMAX,        0x55, BIN,   0, "fmax")                          \
	X(FNEG,        0x56, UN,    0, "fneg")                          \
	X(FABS,        0x57, UN,    0, "fabs")                          \
	X(FSQRT,       0x58, UN,    0, "fsqrt")                         \
	X(FEQ,         0x59, CMP,   0, "feq")                           \
	X(FNE,         0x5a, CMP,   0, "fne")                           \
	X(FLT,         0x5b, CMP,   0, "flt")                           \
	X(FLE,         0x5c, CMP,   0, "fle")                           \
	X(SADD,        0x60, BIN,   0, "sadd")                          \
	X(SSUB,        0x61, BIN,   0, "ssub")                          \
	X(SMUL,        0x62, BIN,   0, "smul")                          \
	X(SDIV,        0x63, BIN,   0, "sdiv")                          \
	X(SMIN,        0x64, BIN,   0, "smin")                          \
	X(SMAX,        0x65, BIN,   0, "smax")                          \
	X(SNEG,        0x66, UN,    0, "sneg")                          \
	X(SABS,        0x67, UN,    0, "sabs")                          \
	X(SSQRT,       0x68, UN,    0, "ssqrt")                         \
	X(SEQ,         0x69, CMP,   0, "seq")                           \
	X(SNE,         0x6a, CMP,   0, "sne")                           \
	X(SLT,         0x6b, CMP,   0, "slt")                           \
	X(SLE,         0x6c, CMP,   0, "sle")                           \
	X(CVT_F64_S64, 0x70, UN,    0, "cvt.f64.s64")                   \
	X(CVT_F64_U64, 0x71, UN,    0, "cvt.f64.u64")                   \
	X(CVT_S64_F64, 0x72, UN,    0, "cvt.s64.f64")                   \
	X(CVT_U64_F64, 0x73, UN,    0, "cvt.u64.f64")                   \
	X(CVT_S32_F64, 0x74, UN,    0, "cvt.s32.f64")                   \
	X(CVT_F32_S64, 0x75, UN,    0, "cvt.f32.s64")                   \
	X(CVT_F32_U64, 0x76, UN,    0, "cvt.f32.u64")                   \
	X(CVT_S64_F32, 0x77, UN,    0, "cvt.s64.f32")                   \
	X(CVT_U64_F32, 0x78, UN,    0, "cvt.u64.f32")                   \
	X(CVT_S32_F32, 0x79, UN,    0, "cvt.s32.f32")                   \
	X(CVT_F64_F32, 0x7a, UN,    0, "cvt.f64.f32")                   \
	X(CVT_F32_F64, 0x7b, UN,    0, "cvt.f32.f64")                   \
	X(SEL,         0x80, SEL,   0, "sel")

enum cad_vm_opcode {
#define CAD_X_ENUM(name, value, fmt, width, str) CAD_VM_##name = value,
	CAD_VM_OPCODES(CAD_X_ENUM)
#undef CAD_X_ENUM
};

struct cad_vm_insn {
	__u8  code;  /* enum cad_vm_opcode */
	__u8  dst;
	__u8  a;
	__u8  b;
	__s32 imm;
};

/* ------------------------------------------------------------------ */
/* /dev/cad (kmod/cad): groups, programs, starts.                      */
/*
 * A process opens /dev/cad and JOINs a group: the ranks of one job on one
 * node, named by a key the job chooses.  It LOADs programs (each a handle)
 * with the addresses of its buffers: the module verifies the image again,
 * pins the buffers and maps them into the kernel.  START runs a loaded
 * program as collective number seq of communicator ctx: SEND and RECV
 * nodes of the runs with the same (ctx, seq) in the group are matched per
 * (source, destination, tag) in node order, as cadrt matches messages.
 * A transfer happens as soon as both its nodes are posted, in the context
 * of whichever event posted the second one (a start, or the completion of
 * a predecessor in any rank of the group): no kernel thread, one copy.
 *
 * Completion: the status page (mmap the file, read only, offset 0,
 * CAD_STATUS_SIZE bytes) holds a struct cad_status per handle.  poll()
 * says POLLIN when some program of the file completed since the last
 * read(); read() of 8 bytes returns that count and resets it (blocking
 * while it is 0, unless O_NONBLOCK) -- eventfd's contract.  A waiter
 * checks its status slot, then reads, then checks again.
 *
 * Every struct starts with its own size: the module accepts any size from
 * its first version's up, ignores nothing (bytes past the struct it knows
 * must be zero) and writes back no more than the caller's size.
 * Errors: the ioctl fails with the errno; LOAD also writes a one-line
 * message into log_buf (the verifier's, or the module's own).
 */

#define CAD_IOC_MAGIC 0xCA   /* numbers 0x40..0x4f; 0xCA 0x00..0x2f are cxl/ocxl */

#define CAD_FEAT_PIN         (1ull << 0)  /* buffers pinned, single-copy transfers */
#define CAD_FEAT_STATUS_PAGE (1ull << 1)  /* completion in an mmapped page */
#define CAD_FEAT_POLL        (1ull << 2)  /* poll() and read() on completions */
#define CAD_FEAT_USER_OPS    (1ull << 3)  /* the reduction VM runs in the kernel */
#define CAD_FEAT_VM_SLOTS    (1ull << 4)  /* the VM has SPILL, FILL and CAD_VM_NSLOTS */

struct cad_ioc_version {
	__u32 size;
	__u32 version;               /* out: CAD_VERSION */
	__aligned_u64 features;      /* out: CAD_FEAT_* */
	__u32 max_programs;          /* out: handles per open file */
	__u32 status_size;           /* out: bytes of the status page */
};

struct cad_ioc_join {
	__u32 size;
	__u32 rank;                  /* this process's rank in the group */
	__u32 nranks;                /* ranks in the group: the same on every rank */
	__u32 flags;                 /* none defined: 0 */
	__aligned_u64 key;           /* chosen by the job, same on every rank */
};

#define CAD_LOAD_START 0x1u          /* start at once as collective seq */
/* A buffer whose pages the caller's RLIMIT_MEMLOCK does not let the
 * module pin is copied through the module's own pages instead (charged
 * to max_user_kmem_mb and the memory cgroup, not to locked_vm): START
 * copies the buffers in from the process, and a run that ends well
 * copies the buffers it wrote out to the process in the owner's next
 * read(), TEST or START, and only then shows as ended (status page,
 * read()).  The other limits still refuse.  A caller that polls only
 * the status page calls TEST (or read()) for such a program.
 */
#define CAD_LOAD_BOUNCE 0x2u
/* Out, set in flags by a LOAD that succeeded: some buffer is copied so
 * (the log says which).  0 in (-EINVAL), like every bit not defined.
 */
#define CAD_LOAD_BOUNCED 0x4u

struct cad_ioc_load {
	__u32 size;
	__u32 prog_size;             /* bytes at prog */
	__aligned_u64 prog;          /* user pointer to the program image */
	__aligned_u64 buf_addrs;     /* user pointer to __u64[nbufs]; 0 for scratch */
	__u32 nbufs;                 /* the program's buffer count */
	__u32 log_size;
	__aligned_u64 log_buf;       /* user pointer: why the load failed, or
	                              * (CAD_LOAD_BOUNCED) which buffers are copied */
	__aligned_u64 ranks;         /* user pointer to __u32[nranks]: the group
	                              * rank of each program rank; 0: the same */
	__aligned_u64 ctx;           /* communicator: runs match by (ctx, seq) */
	__u32 flags;                 /* CAD_LOAD_*; out: CAD_LOAD_BOUNCED added */
	__u32 handle;                /* out */
	__aligned_u64 seq;           /* with CAD_LOAD_START */
	__aligned_u64 fp;            /* what the ranks must agree on (collective,
	                              * count, datatype, op, root, algorithm and
	                              * its parameters), hashed by the caller:
	                              * runs of a (ctx, seq) match only if theirs
	                              * are equal, else the collective fails with
	                              * -EPROTO.  Transfer lengths alone miss a
	                              * MAX against a SUM.  0 on every rank: no
	                              * check (hand-built programs) */
};

/* START fails with -ESTALE once the process changed the mapping of one of
 * the program's buffers since it was loaded (the module watches them):
 * free it and load again.  START, CANCEL and FREE fail with -EPERM in any
 * process but the one that opened the file and loaded the program (a
 * child that inherited the file, a process it was passed to); TEST works
 * in any.  An ioctl that waits for the group's lock ends with -EINTR
 * when the process is killed.  LOAD fails with -ENOMEM when the buffers'
 * pages would exceed the caller's RLIMIT_MEMLOCK (shared with io_uring
 * and RDMA pins; not applied with CAP_IPC_LOCK) or the module's limits
 * per user and in all (docs/kernel-limits.md); the log says which.
 * With CAD_LOAD_BOUNCE, START fails with -EFAULT (nothing started) when
 * a copied buffer cannot be read from the process, and a run ends with
 * -EFAULT when its data cannot be written back. */
struct cad_ioc_start {
	__u32 size;
	__u32 handle;
	__aligned_u64 seq;           /* collective number on ctx, as on every rank;
	                              * a process numbers the collectives it starts
	                              * on a ctx in increasing order (one it skips,
	                              * it never starts later: the failure of an
	                              * earlier one stops waiting for it) */
};

struct cad_ioc_handle {
	__u32 size;
	__u32 handle;
	__s32 result;                /* out (TEST): 0 done, -EINPROGRESS, or -errno */
	__u32 reserved;              /* 0, else -EINVAL */
};

/* The status page: slot h for handle h.  gen counts the starts of the
 * handle; result is -EINPROGRESS from a start until the run ends, then 0
 * or the error (-EPIPE: a peer went away; -ECANCELED: cancelled; -EPROTO:
 * the ranks' programs do not match).  The module writes result last. */
struct cad_status {
	__u32 gen;
	__s32 result;
};

#define CAD_STATUS_SIZE  4096
#define CAD_MAX_PROGRAMS (CAD_STATUS_SIZE / 8)  /* handles per open file, at most */

#define CAD_IOC_VERSION _IOWR(CAD_IOC_MAGIC, 0x40, struct cad_ioc_version)
#define CAD_IOC_JOIN    _IOWR(CAD_IOC_MAGIC, 0x41, struct cad_ioc_join)
#define CAD_IOC_LOAD    _IOWR(CAD_IOC_MAGIC, 0x42, struct cad_ioc_load)
#define CAD_IOC_START   _IOWR(CAD_IOC_MAGIC, 0x43, struct cad_ioc_start)
#define CAD_IOC_TEST    _IOWR(CAD_IOC_MAGIC, 0x44, struct cad_ioc_handle)
#define CAD_IOC_CANCEL  _IOWR(CAD_IOC_MAGIC, 0x45, struct cad_ioc_handle)
#define CAD_IOC_FREE    _IOWR(CAD_IOC_MAGIC, 0x46, struct cad_ioc_handle)

#endif /* _UAPI_LINUX_CAD_H */
