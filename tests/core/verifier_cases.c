// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * verifier_cases.c - the verifier's table: programs, accepted or rejected,
 * each rejection with the expected errno and message fragment.  The same
 * table runs under GoogleTest and inside the kernel (tests/kmod/coretest).
 *
 * Most rejections start from GOOD, a valid rank-1-of-4 pipeline, and change
 * one thing: a field in the description, a poke into the serialised image,
 * a mutation of its size, or a tighter limit.
 */
#include "selftest.h"
#include "verifier_cases.h"

#define R  CAD_ACC_READ
#define W  CAD_ACC_WRITE
#define RW (CAD_ACC_READ | CAD_ACC_WRITE)

/* Strings: offsets of each name in STRS. */
#define STRS "\0sendbuf\0recvbuf\0tmp\0bcast.cad\0cmul\0"
enum { S_SEND = 1, S_RECV = 9, S_TMP = 17, S_FILE = 21, S_CMUL = 31 };
#define STRINGS .strings = STRS, .n_strings = sizeof(STRS) - 1

#define ARR(field, T, ...) \
	.field = (const T[]){ __VA_ARGS__ }, \
	.n_##field = CAD_ARRAY_SIZE(((const T[]){ __VA_ARGS__ }))
#define BUFFERS(...) ARR(buffers, struct cad_buffer, __VA_ARGS__)
#define NODES(...)   ARR(nodes, struct cad_node, __VA_ARGS__)
#define EDGES(...)   ARR(edges, struct cad_edge, __VA_ARGS__)
#define OPS(...)     ARR(ops, struct cad_user_op, __VA_ARGS__)
#define CODE(...)    ARR(code, struct cad_vm_insn, __VA_ARGS__)
#define CONSTS(...)  ARR(consts, __u64, __VA_ARGS__)
#define LINES(...)   ARR(lines, struct cad_line, __VA_ARGS__)

#define HDR .rank = 1, .nranks = 4, .collective = CAD_COLL_BCAST

/* b0 send (r, 1024), b1 recv (rw, 1024), b2 scratch (rw, 512) */
#define BUF(k, acc, sz, nm) { .kind = CAD_BUF_##k, .access = (acc), .size = (sz), .name = (nm) }
#define STD_BUFFERS BUFFERS(BUF(SEND, R, 1024, S_SEND), BUF(RECV, RW, 1024, S_RECV), \
			    BUF(SCRATCH, RW, 512, S_TMP))
#define STD_LINES LINES({ .file = S_FILE, .line = 12, .col = 5 }, \
			{ .file = S_FILE, .line = 13, .col = 9 })

#define NODE(k, ...) { .kind = CAD_NODE_##k, .line = CAD_NO_LINE, __VA_ARGS__ }
#define SEND(b, off, n, to, tg, ...) \
	NODE(SEND, .src_buf = (b), .src_off = (off), .len = (n), .peer = (to), .tag = (tg), __VA_ARGS__)
#define RECV(b, off, n, from, tg, ...) \
	NODE(RECV, .dst_buf = (b), .dst_off = (off), .len = (n), .peer = (from), .tag = (tg), __VA_ARGS__)
#define COPY(db, doff, sb, soff, n, ...) \
	NODE(COPY, .dst_buf = (db), .dst_off = (doff), .src_buf = (sb), .src_off = (soff), \
	     .len = (n), __VA_ARGS__)
#define REDUCE(o, dt, db, doff, sb, soff, n, ...) \
	NODE(REDUCE, .op = CAD_OP_##o, .dtype = CAD_DT_##dt, .dst_buf = (db), .dst_off = (doff), \
	     .src_buf = (sb), .src_off = (soff), .len = (n), __VA_ARGS__)
#define UREDUCE(u, db, sb, n, ...) \
	NODE(REDUCE, .op = CAD_OP_USER, .dtype = CAD_DT_USER, .user_op = (u), .dst_buf = (db), \
	     .src_buf = (sb), .len = (n), __VA_ARGS__)
#define E(first, count) .edge_first = (first), .edge_count = (count)

/* GOOD: receive two segments from rank 0, forward each to rank 2. */
#define GOOD_NODES NODES(RECV(1, 0, 512, 0, 1, E(0, 1), .line = 0),                \
			 RECV(1, 512, 512, 0, 2, E(1, 1), .line = 1),              \
			 SEND(1, 0, 512, 2, 1, E(2, 0)),                           \
			 SEND(1, 512, 512, 2, 2, E(2, 0)))
#define GOOD_EDGES EDGES({ 2 }, { 3 })
#define GOOD { HDR, STD_BUFFERS, GOOD_NODES, GOOD_EDGES, STD_LINES, STRINGS }

/* One node program around node n (no edges). */
#define ONE(n) { HDR, STD_BUFFERS, NODES(n), STD_LINES, STRINGS }

/* VM instructions and a program whose node 0 reduces b1 <- b2 with op 0. */
#define I(c, d_, a_, b_, k_) { .code = CAD_VM_##c, .dst = (d_), .a = (a_), .b = (b_), .imm = (k_) }
#define UOP(esz, ncode, ...) { .name = S_CMUL, .elem_size = (esz), .code_count = (ncode), \
			       .line = CAD_NO_LINE, __VA_ARGS__ }
#define VMPROG(esz, ...) { HDR, STD_BUFFERS, NODES(UREDUCE(0, 1, 2, 512)), STD_LINES, STRINGS, \
			   OPS(UOP(esz, CAD_ARRAY_SIZE(((const struct cad_vm_insn[]){ __VA_ARGS__ })))), \
			   CODE(__VA_ARGS__) }
#define VMPROGK(esz, nk, ...) { HDR, STD_BUFFERS, NODES(UREDUCE(0, 1, 2, 512)), STD_LINES, STRINGS, \
				OPS(UOP(esz, CAD_ARRAY_SIZE(((const struct cad_vm_insn[]){ __VA_ARGS__ })), \
					.const_count = (nk))), \
				CONSTS(0x3ff0000000000000ull, 7), CODE(__VA_ARGS__) }

/* Complex multiply, inout = in * inout, on { double re, im; }. */
#define CMUL_CODE \
	I(LD_64, 0, 0, 0, 0), I(LD_64, 1, 0, 0, 8), I(LD_64, 2, 1, 0, 0), I(LD_64, 3, 1, 0, 8), \
	I(FMUL, 4, 0, 2, 0), I(FMUL, 5, 1, 3, 0), I(FSUB, 6, 4, 5, 0),                          \
	I(FMUL, 7, 0, 3, 0), I(FMUL, 8, 1, 2, 0), I(FADD, 9, 7, 8, 0),                          \
	I(ST_64, 0, 6, 0, 0), I(ST_64, 0, 9, 0, 8), I(EXIT, 0, 0, 0, 0)

#define HOFF(field) __builtin_offsetof(struct cad_prog_header, field)
#define POKE(sec, off, sz, val) .poke_sec = (sec), .poke_off = (off), .poke_size = (sz), .poke_val = (val)
#define POKE_HDR(field, sz, val) POKE(0, HOFF(field), sz, val)
#define POKE_NODE(i, field, sz, val) \
	POKE(CAD_SEC_NODES + 1, (i) * sizeof(struct cad_node) + \
	     __builtin_offsetof(struct cad_node, field), sz, val)

#define ACCEPT .result = 0
#define REJECT(err, msg) .result = -(err), .errstr = (msg)

/* Mutations of the serialised size, and tighter limits. */
static void mut_short(__u8 *img, __u32 *size) { *size = 100; }
static void mut_padded(__u8 *img, __u32 *size) { *size += 8; }
static void mut_cut8(__u8 *img, __u32 *size)
{
	struct cad_prog_header *h = (void *)img;

	*size -= 8;
	h->total_size -= 8;
}
static void lim_image(struct cad_limits *l) { l->max_image_size = 256; }
static void lim_nodes3(struct cad_limits *l) { l->max_nodes = 3; }
static void lim_nodes4(struct cad_limits *l) { l->max_nodes = 4; }
static void lim_edges1(struct cad_limits *l) { l->max_edges = 1; }
static void lim_buffers2(struct cad_limits *l) { l->max_buffers = 2; }
static void lim_code4(struct cad_limits *l) { l->max_code = 4; }
static void lim_opcode4(struct cad_limits *l) { l->max_op_code = 4; }
static void lim_bufsize(struct cad_limits *l) { l->max_buffer_size = 1000; }
static void lim_scratch(struct cad_limits *l) { l->max_scratch = 500; }
static void lim_huge_edges(struct cad_limits *l) { l->max_edges = 0xffffffffu; }
static void lim_huge_code(struct cad_limits *l) { l->max_op_code = l->max_code = 100000; }

/* One instruction past the hard cap (all EXIT: the cap is checked first). */
static const struct cad_vm_insn too_long[CAD_VM_MAX_INSNS + 1];

const struct cad_vcase cad_vcases[] = {
	/* ---- accepted ---- */
	{ "accept-good", .desc = GOOD, ACCEPT },
	{ "accept-empty", .desc = { .nranks = 1 }, ACCEPT },
	{ "accept-only-buffers", .desc = { HDR, STD_BUFFERS, STRINGS }, ACCEPT },
	{ "accept-copy-then-reduce", .desc = { HDR, STD_BUFFERS, STRINGS,
		NODES(COPY(1, 0, 0, 0, 512, E(0, 1)), REDUCE(SUM, DOUBLE, 1, 0, 2, 0, 512, E(1, 0))),
		EDGES({ 1 }) }, ACCEPT },
	{ "accept-nop-join", .desc = { HDR, STD_BUFFERS, STRINGS,
		NODES(RECV(1, 0, 8, 0, 1, E(0, 1)), RECV(1, 8, 8, 3, 1, E(1, 1)),
		      NODE(NOP, E(2, 1)), SEND(1, 0, 16, 2, 1, E(3, 0))),
		EDGES({ 2 }, { 2 }, { 3 }) }, ACCEPT },
	{ "accept-reduce-in-place", .desc = ONE(REDUCE(MAX, INT32, 1, 64, 1, 64, 64)), ACCEPT },
	{ "accept-zero-length-at-end", .desc = ONE(SEND(1, 1024, 0, 0, 9)), ACCEPT },
	{ "accept-direction-hints", .desc = { HDR, STD_BUFFERS, STRINGS,
		NODES(SEND(0, 0, 64, 0, 1, .flags = CAD_XFER_RECEIVER_READS),
		      RECV(1, 0, 64, 2, 1, .flags = CAD_XFER_SENDER_WRITES)) }, ACCEPT },
	{ "accept-minloc-pairs", .desc = ONE(REDUCE(MINLOC, DOUBLE_INT, 1, 0, 2, 0, 512)), ACCEPT },
	{ "accept-band-bytes", .desc = ONE(REDUCE(BAND, BYTE, 1, 3, 2, 5, 7)), ACCEPT },
	{ "accept-user-op-cmul", .desc = VMPROG(16, CMUL_CODE), ACCEPT },
	{ "accept-user-op-branches", .desc = VMPROGK(8, 1,
		I(LD_64, 0, 0, 0, 0), I(LD_64, 1, 1, 0, 0), I(FLT, 2, 0, 1, 0), I(JZ, 0, 2, 0, 2),
		I(ST_64, 0, 0, 0, 0), I(EXIT, 0, 0, 0, 0), I(LDK, 3, 0, 0, 0),
		I(SEL, 4, 2, 0, 3), I(ST_64, 0, 4, 0, 0), I(EXIT, 0, 0, 0, 0)), ACCEPT },
	{ "accept-spill-fill", .desc = VMPROG(8,
		I(LD_64, 0, 0, 0, 0), I(SPILL, 0, 0, 0, 0), I(JZ, 0, 0, 0, 2), I(SPILL, 0, 0, 0, 63),
		I(JA, 0, 0, 0, 1), I(SPILL, 0, 0, 0, 63), I(FILL, 15, 0, 0, 63), I(FILL, 1, 0, 0, 0),
		I(ADD, 2, 1, 15, 0), I(ST_64, 0, 2, 0, 0), I(EXIT, 0, 0, 0, 0)), ACCEPT },
	{ "accept-at-node-limit", .desc = GOOD, .limits = lim_nodes4, ACCEPT },
	{ "accept-all-collectives-field", .desc = { .nranks = 3, .rank = 2,
		.collective = CAD_COLL_BARRIER }, ACCEPT },

	/* ---- header ---- */
	{ "header-truncated", .desc = GOOD, .mutate = mut_short,
	  REJECT(EINVAL, "header: truncated: 100 bytes, the header alone is 160") },
	{ "header-misaligned", .desc = GOOD, .misalign = 1,
	  REJECT(EINVAL, "image is not 8-byte aligned") },
	{ "header-bad-magic", .desc = GOOD, POKE_HDR(magic, 4, 0x464c457f),
	  REJECT(EINVAL, "bad magic 0x464c457f") },
	{ "header-bad-version", .desc = GOOD, POKE_HDR(version, 2, 2),
	  REJECT(EINVAL, "unsupported version 2") },
	{ "header-bad-header-size", .desc = GOOD, POKE_HDR(header_size, 2, 128),
	  REJECT(EINVAL, "header_size 128, expected 160") },
	{ "header-padded-image", .desc = GOOD, .mutate = mut_padded,
	  REJECT(EINVAL, "(truncated or padded)") },
	{ "header-unknown-flags", .desc = GOOD, POKE_HDR(flags, 4, 1),
	  REJECT(EINVAL, "header: unknown flags 0x1") },
	{ "header-nranks-zero", .desc = GOOD, POKE_HDR(nranks, 4, 0),
	  REJECT(EINVAL, "nranks is 0") },
	{ "header-rank-out-of-range", .desc = GOOD, POKE_HDR(rank, 4, 4),
	  REJECT(EINVAL, "rank 4 is not below nranks 4") },
	{ "header-unknown-collective", .desc = GOOD, POKE_HDR(collective, 4, 77),
	  REJECT(EINVAL, "unknown collective 77") },
	{ "header-image-over-limit", .desc = GOOD, .limits = lim_image,
	  REJECT(E2BIG, "exceeds the limit of 256") },
	{ "header-name-outside-strings", .desc = GOOD, POKE_HDR(name, 4, 36),
	  REJECT(EINVAL, "header: name offset 36 is outside the 36-byte string table") },

	/* ---- sections ---- */
	{ "section-wrong-entsize", .desc = GOOD, POKE_HDR(sec[CAD_SEC_NODES].entsize, 4, 32),
	  REJECT(EINVAL, "section nodes: entry size 32, expected 64") },
	{ "section-reserved", .desc = GOOD, POKE_HDR(sec[CAD_SEC_EDGES].reserved, 4, 1),
	  REJECT(EINVAL, "section edges: reserved field is not 0") },
	{ "section-empty-with-offset", .desc = GOOD, POKE_HDR(sec[CAD_SEC_OPS].off, 4, 160),
	  REJECT(EINVAL, "section ops: empty, but has offset 160") },
	{ "section-unaligned", .desc = GOOD, POKE_HDR(sec[CAD_SEC_BUFFERS].off, 4, 164),
	  REJECT(EINVAL, "section buffers: offset 164 is not 8-byte aligned") },
	{ "section-overlaps-header", .desc = GOOD, POKE_HDR(sec[CAD_SEC_BUFFERS].off, 4, 8),
	  REJECT(EINVAL, "section buffers: offset 8 overlaps the 160-byte header") },
	{ "section-truncated", .desc = GOOD, .mutate = mut_cut8,
	  REJECT(EINVAL, "section strings: truncated: needs bytes") },
	{ "section-overlap", .desc = GOOD, POKE_HDR(sec[CAD_SEC_NODES].off, 4, 160),
	  REJECT(EINVAL, "section nodes: overlaps section buffers") },
	{ "section-count-over-limit", .desc = GOOD, POKE_HDR(sec[CAD_SEC_NODES].count, 4, 0x10000000),
	  REJECT(E2BIG, "section nodes: 268435456 entries exceed the limit of 2097152") },
	{ "section-count-overflow", .desc = GOOD, .limits = lim_huge_edges,
	  POKE_HDR(sec[CAD_SEC_EDGES].count, 4, 0xfffffff0),
	  REJECT(EINVAL, "section edges: truncated: needs bytes") },
	{ "too-many-nodes", .desc = GOOD, .limits = lim_nodes3,
	  REJECT(E2BIG, "section nodes: 4 entries exceed the limit of 3") },
	{ "too-many-edges", .desc = GOOD, .limits = lim_edges1,
	  REJECT(E2BIG, "section edges: 2 entries exceed the limit of 1") },
	{ "too-many-buffers", .desc = GOOD, .limits = lim_buffers2,
	  REJECT(E2BIG, "section buffers: 3 entries exceed the limit of 2") },
	{ "too-much-code", .desc = VMPROG(16, CMUL_CODE), .limits = lim_code4,
	  REJECT(E2BIG, "section code: 13 entries exceed the limit of 4") },
	{ "edges-not-covered", .desc = { HDR, STD_BUFFERS, GOOD_NODES, EDGES({ 2 }, { 3 }, { 3 }),
		STD_LINES, STRINGS },
	  REJECT(EINVAL, "section edges: 3 edges, but the nodes' successor lists use 2") },

	/* ---- strings and lines ---- */
	{ "strings-no-leading-nul", .desc = { HDR, .strings = "x\0", .n_strings = 2 },
	  REJECT(EINVAL, "section strings: must start with the empty string") },
	{ "strings-no-trailing-nul", .desc = { HDR, .strings = "\0ab", .n_strings = 3 },
	  REJECT(EINVAL, "section strings: does not end with a NUL byte") },
	{ "strings-control-char", .desc = { HDR, .strings = "\0a\nb\0", .n_strings = 5 },
	  REJECT(EINVAL, "control character 0x0a at offset 2") },
	{ "strings-invalid-utf8", .desc = { HDR, .strings = "\0ab\xc3(\0", .n_strings = 6 },
	  REJECT(EINVAL, "section strings: invalid UTF-8 at offset 3") },
	{ "strings-truncated-utf8", .desc = { HDR, .strings = "\0\xe2\x82\0", .n_strings = 4 },
	  REJECT(EINVAL, "invalid UTF-8 at offset 1") },
	{ "strings-overlong-utf8", .desc = { HDR, .strings = "\0\xc0\xaf\0", .n_strings = 4 },
	  REJECT(EINVAL, "invalid UTF-8 at offset 1") },
	{ "accept-utf8-names", .desc = { HDR, .strings = "\0caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\0",
		.n_strings = 16 }, ACCEPT },
	{ "line-file-outside-strings", .desc = { HDR, STRINGS, LINES({ .file = 99 }) },
	  REJECT(EINVAL, "line 0: file offset 99 is outside the 36-byte string table") },
	{ "line-reserved", .desc = { HDR, STRINGS, LINES({ .file = S_FILE, .reserved = 3 }) },
	  REJECT(EINVAL, "line 0: reserved field is not 0") },

	/* ---- buffers ---- */
	{ "buffer-unknown-kind", .desc = { HDR, STRINGS, BUFFERS(BUF(SEND, R, 8, 0), { .kind = 9, .access = R }) },
	  REJECT(EINVAL, "buffer 1: unknown kind 9") },
	{ "buffer-unknown-access", .desc = { HDR, STRINGS, BUFFERS(BUF(RECV, RW | 4, 8, 0)) },
	  REJECT(EINVAL, "buffer 0: unknown access bits 0x4") },
	{ "buffer-no-access", .desc = { HDR, STRINGS, BUFFERS(BUF(SCRATCH, 0, 8, 0)) },
	  REJECT(EINVAL, "buffer 0: no access rights") },
	{ "buffer-writable-send", .desc = { HDR, STRINGS, BUFFERS(BUF(SEND, RW, 8, S_SEND)) },
	  REJECT(EINVAL, "buffer 0: a send buffer cannot be writable") },
	{ "buffer-name-outside-strings", .desc = { HDR, STRINGS, BUFFERS(BUF(SEND, R, 8, 500)) },
	  REJECT(EINVAL, "buffer 0: name offset 500 is outside") },
	{ "buffer-reserved", .desc = { HDR, STRINGS, BUFFERS({ .kind = CAD_BUF_RECV, .access = W, .reserved = 1 }) },
	  REJECT(EINVAL, "buffer 0: reserved field is not 0") },
	{ "buffer-over-size-limit", .desc = GOOD, .limits = lim_bufsize,
	  REJECT(E2BIG, "buffer 0: 1024 bytes exceed the limit of 1000") },
	{ "scratch-over-limit", .desc = { HDR, STRINGS, BUFFERS(BUF(SCRATCH, RW, 300, 0), BUF(RECV, RW, 9000, 0),
		BUF(SCRATCH, RW, 300, 0)) }, .limits = lim_scratch,
	  REJECT(E2BIG, "buffer 2: scratch buffers total 600 bytes, over the limit of 500") },

	/* ---- nodes: structure and edges ---- */
	{ "node-unknown-kind", .desc = GOOD, POKE_NODE(2, kind, 1, 9),
	  REJECT(EINVAL, "node 2: unknown node kind 9") },
	{ "node-reserved", .desc = GOOD, POKE_NODE(1, reserved, 4, 1),
	  REJECT(EINVAL, "node 1 (bcast.cad:13:9): reserved field is not 0") },
	{ "node-line-outside-table", .desc = GOOD, POKE_NODE(3, line, 4, 2),
	  REJECT(EINVAL, "node 3: line index 2 is outside the line table (2 entries)") },
	{ "edge-first-not-canonical", .desc = GOOD, POKE_NODE(1, edge_first, 4, 0),
	  REJECT(EINVAL, "node 1 (bcast.cad:13:9): edge_first 0, expected 1") },
	{ "edges-run-past", .desc = GOOD, POKE_NODE(1, edge_count, 4, 5),
	  REJECT(EINVAL, "successors [1, +5) run past the 2 edges") },
	{ "back-edge", .desc = { HDR, STD_BUFFERS, STRINGS,
		NODES(RECV(1, 0, 8, 0, 1, E(0, 1)), SEND(1, 0, 8, 2, 1, E(1, 1))), EDGES({ 1 }, { 0 }) },
	  REJECT(EINVAL, "node 1: edge to node 0 is not forward (a back-edge or self-loop)") },
	{ "self-loop", .desc = { HDR, STD_BUFFERS, STRINGS,
		NODES(RECV(1, 0, 8, 0, 1, E(0, 1))), EDGES({ 0 }) },
	  REJECT(EINVAL, "node 0: edge to node 0 is not forward") },
	{ "dangling-edge", .desc = { HDR, STD_BUFFERS, STRINGS,
		NODES(RECV(1, 0, 8, 0, 1, E(0, 1)), SEND(1, 0, 8, 2, 1, E(1, 0))), EDGES({ 7 }) },
	  REJECT(EINVAL, "node 0: edge to node 7 dangles: the program has 2 nodes") },
	{ "duplicate-edge", .desc = { HDR, STD_BUFFERS, STRINGS,
		NODES(RECV(1, 0, 8, 0, 1, E(0, 2)), SEND(1, 0, 8, 2, 1, E(2, 0))), EDGES({ 1 }, { 1 }) },
	  REJECT(EINVAL, "successors not strictly increasing: node 1 after node 1") },
	{ "nop-with-length", .desc = ONE(NODE(NOP, .len = 8)),
	  REJECT(EINVAL, "field len must be 0 in a nop node (is 8)") },
	{ "nop-with-peer", .desc = ONE(NODE(NOP, .peer = 2)),
	  REJECT(EINVAL, "field peer must be 0 in a nop node (is 2)") },

	/* ---- nodes: transfers ---- */
	{ "send-peer-out-of-range", .desc = GOOD, POKE_NODE(2, peer, 4, 4),
	  REJECT(EINVAL, "node 2: peer 4 is not below nranks 4") },
	{ "send-to-self", .desc = ONE(SEND(0, 0, 8, 1, 0)),
	  REJECT(EINVAL, "send to its own rank 1: use a copy node") },
	{ "recv-from-self", .desc = ONE(RECV(1, 0, 8, 1, 0)),
	  REJECT(EINVAL, "recv to its own rank 1") },
	{ "send-both-directions", .desc = ONE(SEND(0, 0, 8, 0, 0, .flags = 3)),
	  REJECT(EINVAL, "both receiver-reads and sender-writes") },
	{ "send-unknown-flags", .desc = ONE(SEND(0, 0, 8, 0, 0, .flags = 0x10)),
	  REJECT(EINVAL, "unknown transfer flags 0x10") },
	{ "send-with-dst-field", .desc = ONE(SEND(0, 0, 8, 0, 0, .dst_off = 4)),
	  REJECT(EINVAL, "field dst_off must be 0 in a send node (is 4)") },
	{ "recv-with-dtype", .desc = ONE(RECV(1, 0, 8, 0, 0, .dtype = CAD_DT_DOUBLE)),
	  REJECT(EINVAL, "field dtype must be 0 in a recv node (is 10)") },
	{ "send-missing-buffer", .desc = ONE(SEND(5, 0, 8, 0, 0)),
	  REJECT(EINVAL, "source buffer 5 does not exist (3 buffers)") },
	{ "send-out-of-bounds", .desc = ONE(SEND(0, 1000, 100, 0, 0)),
	  REJECT(EINVAL, "source range [1000, 1100) is outside buffer 0 'sendbuf' of 1024 bytes") },
	{ "send-offset-overflow", .desc = ONE(SEND(0, 0xfffffffffffffff8ull, 16, 0, 0)),
	  REJECT(EINVAL, "source offset 18446744073709551608 + length 16 overflows") },
	{ "send-unreadable", .desc = { HDR, STRINGS, BUFFERS(BUF(RECV, W, 64, S_RECV)),
		NODES(SEND(0, 0, 8, 0, 0)) },
	  REJECT(EINVAL, "source buffer 0 'recvbuf' is not readable") },
	{ "recv-into-read-only", .desc = ONE(RECV(0, 0, 8, 0, 0)),
	  REJECT(EINVAL, "destination buffer 0 'sendbuf' is read-only") },
	{ "recv-out-of-bounds", .desc = ONE(RECV(2, 256, 257, 0, 0)),
	  REJECT(EINVAL, "destination range [256, 513) is outside buffer 2 'tmp' of 512 bytes") },
	{ "located-rejection", .desc = ONE(RECV(2, 0, 600, 0, 0, .line = 1)),
	  REJECT(EINVAL, "node 0 (bcast.cad:13:9): destination range [0, 600)") },

	/* ---- nodes: copy and reduce ---- */
	{ "copy-overlap", .desc = ONE(COPY(1, 0, 1, 100, 200)),
	  REJECT(EINVAL, "source and destination overlap in buffer 1") },
	{ "copy-to-read-only", .desc = ONE(COPY(0, 0, 1, 0, 8)),
	  REJECT(EINVAL, "destination buffer 0 'sendbuf' is read-only") },
	{ "copy-with-op", .desc = ONE(COPY(1, 0, 0, 0, 8, .op = CAD_OP_SUM)),
	  REJECT(EINVAL, "field op must be 0 in a copy node (is 1)") },
	{ "reduce-unknown-op", .desc = ONE(NODE(REDUCE, .op = 42, .dtype = CAD_DT_INT32, .dst_buf = 1, .len = 4)),
	  REJECT(EINVAL, "unknown reduction op 42") },
	{ "reduce-op-none", .desc = ONE(REDUCE(NONE, INT32, 1, 0, 2, 0, 4)),
	  REJECT(EINVAL, "unknown reduction op 0") },
	{ "reduce-unknown-dtype", .desc = ONE(NODE(REDUCE, .op = CAD_OP_SUM, .dtype = 99, .dst_buf = 1, .len = 4)),
	  REJECT(EINVAL, "unknown datatype 99") },
	{ "reduce-band-on-double", .desc = ONE(REDUCE(BAND, DOUBLE, 1, 0, 2, 0, 8)),
	  REJECT(EINVAL, "op band does not apply to datatype f64") },
	{ "reduce-lxor-on-float", .desc = ONE(REDUCE(LXOR, FLOAT, 1, 0, 2, 0, 8)),
	  REJECT(EINVAL, "op lxor does not apply to datatype f32") },
	{ "reduce-minloc-on-int", .desc = ONE(REDUCE(MINLOC, INT32, 1, 0, 2, 0, 8)),
	  REJECT(EINVAL, "op minloc does not apply to datatype i32") },
	{ "reduce-sum-on-pairs", .desc = ONE(REDUCE(SUM, DOUBLE_INT, 1, 0, 2, 0, 16)),
	  REJECT(EINVAL, "op sum does not apply to datatype f64_i32") },
	{ "reduce-sum-on-bytes", .desc = ONE(REDUCE(SUM, BYTE, 1, 0, 2, 0, 16)),
	  REJECT(EINVAL, "op sum does not apply to datatype byte") },
	{ "reduce-len-not-multiple", .desc = ONE(REDUCE(SUM, DOUBLE, 1, 0, 2, 0, 12)),
	  REJECT(EINVAL, "length 12 is not a multiple of the 8-byte element") },
	{ "reduce-partial-overlap", .desc = ONE(REDUCE(SUM, INT32, 1, 0, 1, 4, 8)),
	  REJECT(EINVAL, "source and destination partially overlap in buffer 1") },
	{ "reduce-dst-not-readable", .desc = { HDR, STRINGS, BUFFERS(BUF(RECV, W, 64, S_RECV),
		BUF(SEND, R, 64, S_SEND)), NODES(REDUCE(SUM, INT32, 0, 0, 1, 0, 8)) },
	  REJECT(EINVAL, "destination buffer 0 'recvbuf' is not readable") },
	{ "reduce-into-send-buffer", .desc = ONE(REDUCE(SUM, INT32, 0, 0, 2, 0, 8)),
	  REJECT(EINVAL, "destination buffer 0 'sendbuf' is read-only") },
	{ "reduce-src-out-of-bounds", .desc = ONE(REDUCE(SUM, INT64, 1, 0, 2, 512, 8)),
	  REJECT(EINVAL, "source range [512, 520) is outside buffer 2") },
	{ "reduce-with-tag", .desc = ONE(REDUCE(SUM, INT64, 1, 0, 2, 0, 8, .tag = 3)),
	  REJECT(EINVAL, "field tag must be 0 in a reduce node (is 3)") },
	{ "reduce-missing-user-op", .desc = ONE(UREDUCE(0, 1, 2, 16)),
	  REJECT(EINVAL, "user op 0 does not exist (0 ops)") },
	{ "reduce-user-op-wrong-dtype", .desc = { HDR, STD_BUFFERS, STRINGS, OPS(UOP(16, 13)),
		CODE(CMUL_CODE), NODES(NODE(REDUCE, .op = CAD_OP_USER, .dtype = CAD_DT_DOUBLE,
		.dst_buf = 1, .src_buf = 2, .len = 16)) },
	  REJECT(EINVAL, "a user op takes datatype user, not f64") },
	{ "reduce-builtin-with-user-op", .desc = ONE(REDUCE(SUM, INT64, 1, 0, 2, 0, 8, .user_op = 1)),
	  REJECT(EINVAL, "field user_op must be 0 for built-in op sum") },
	{ "reduce-user-len-not-multiple", .desc = { HDR, STD_BUFFERS, STRINGS, OPS(UOP(16, 13)),
		CODE(CMUL_CODE), NODES(UREDUCE(0, 1, 2, 24)) },
	  REJECT(EINVAL, "length 24 is not a multiple of the 16-byte element") },

	/* ---- user ops ---- */
	{ "op-elem-size-zero", .desc = VMPROG(0, I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "op 0 'cmul': element size 0 is outside 1..256") },
	{ "op-elem-size-too-big", .desc = VMPROG(257, I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "element size 257 is outside 1..256") },
	{ "op-no-code", .desc = { HDR, STD_BUFFERS, STRINGS, OPS(UOP(8, 0)) },
	  REJECT(EINVAL, "op 0 'cmul': has no code") },
	{ "op-code-outside-section", .desc = { HDR, STD_BUFFERS, STRINGS, OPS(UOP(8, 2, .code_first = 12)),
		CODE(CMUL_CODE) },
	  REJECT(EINVAL, "code [12, +2) is outside the code section (13 instructions)") },
	{ "op-consts-outside-section", .desc = { HDR, STD_BUFFERS, STRINGS,
		OPS(UOP(8, 1, .const_first = 1, .const_count = 2)), CODE(I(EXIT, 0, 0, 0, 0)), CONSTS(1, 2) },
	  REJECT(EINVAL, "constants [1, +2) are outside the consts section (2 entries)") },
	{ "op-unknown-flags", .desc = { HDR, STD_BUFFERS, STRINGS, OPS(UOP(8, 1, .flags = 7)),
		CODE(I(EXIT, 0, 0, 0, 0)) },
	  REJECT(EINVAL, "op 0 'cmul': unknown flags 0x6") },
	{ "op-line-outside-table", .desc = { HDR, STD_BUFFERS, STRINGS, OPS(UOP(8, 1, .line = 5)),
		CODE(I(EXIT, 0, 0, 0, 0)) },
	  REJECT(EINVAL, "line index 5 is outside the line table (0 entries)") },
	{ "op-name-outside-strings", .desc = { HDR, STD_BUFFERS, STRINGS, OPS({ .name = 77, .elem_size = 8,
		.code_count = 1, .line = CAD_NO_LINE }), CODE(I(EXIT, 0, 0, 0, 0)) },
	  REJECT(EINVAL, "name offset 77 is outside the 36-byte string table") },
	{ "op-too-long", .desc = VMPROG(16, CMUL_CODE), .limits = lim_opcode4,
	  REJECT(E2BIG, "op 0 'cmul': 13 instructions exceed the limit of 4") },
	{ "op-over-hard-cap", .desc = { HDR, STD_BUFFERS, STRINGS, OPS(UOP(8, CAD_VM_MAX_INSNS + 1)),
		.code = too_long, .n_code = CAD_VM_MAX_INSNS + 1 }, .limits = lim_huge_code,
	  REJECT(E2BIG, "op 0 'cmul': 4097 instructions exceed the limit of 4096") },

	/* ---- VM code ---- */
	{ "vm-unknown-opcode", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), { .code = 0xee }, I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "op 0 'cmul' insn 1: unknown opcode 0xee") },
	{ "vm-backward-jump", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(JA, 0, 0, 0, -2), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: backward jump (offset -2): only forward jumps") },
	{ "vm-jump-to-self", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(JNZ, 0, 0, 0, -1), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: backward jump (offset -1)") },
	{ "vm-jump-past-end", .desc = VMPROG(8, I(JA, 0, 0, 0, 5), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 0: jump to 6 is past the last instruction 1") },
	{ "vm-jump-overflow", .desc = VMPROG(8, I(JA, 0, 0, 0, 0x7fffffff), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "jump to 2147483648 is past the last instruction 1") },
	{ "vm-read-undefined", .desc = VMPROG(8, I(LD_64, 0, 0, 0, 0), I(FADD, 2, 0, 1, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: reads r1 before it is written") },
	{ "vm-undefined-on-one-path", .desc = VMPROG(8, I(LD_64, 0, 0, 0, 0), I(JZ, 0, 0, 0, 1),
		I(MOVI, 1, 0, 0, 5), I(ST_64, 0, 1, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 3: reads r1 before it is written") },
	{ "vm-store-undefined", .desc = VMPROG(8, I(ST_64, 0, 3, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 0: reads r3 before it is written") },
	{ "vm-load-outside-element", .desc = VMPROG(16, I(LD_64, 0, 0, 0, 12), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 0: load of 8 bytes at offset 12 is outside the 16-byte element") },
	{ "vm-load-negative-offset", .desc = VMPROG(16, I(LD_U8, 0, 1, 0, -1), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "load of 1 bytes at offset -1 is outside") },
	{ "vm-store-outside-element", .desc = VMPROG(4, I(MOVI, 0, 0, 0, 1), I(ST_64, 0, 0, 0, 0),
		I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: store of 8 bytes at offset 0 is outside the 4-byte element") },
	{ "vm-load-bad-element", .desc = VMPROG(8, I(LD_64, 0, 2, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "load from element 2: 0 is in, 1 is inout") },
	{ "vm-register-out-of-range", .desc = VMPROG(8, I(MOVI, 16, 0, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "destination register r16 does not exist (r0..r15)") },
	{ "vm-source-register-out-of-range", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 0), I(ADD, 1, 0, 200, 0),
		I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "source register r200 does not exist") },
	{ "vm-falls-off-end", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1)),
	  REJECT(EINVAL, "insn 0: falls off the end: the last instruction must be exit") },
	{ "vm-unreachable", .desc = VMPROG(8, I(EXIT, 0, 0, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: unreachable instruction") },
	{ "vm-exit-with-imm", .desc = VMPROG(8, I(EXIT, 0, 0, 0, 3)),
	  REJECT(EINVAL, "insn 0: unused field imm is not 0") },
	{ "vm-binop-with-imm", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(ADD, 1, 0, 0, 4), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: unused field imm is not 0") },
	{ "vm-store-with-dst", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(ST_8, 2, 0, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: unused field dst is not 0") },
	{ "vm-ldk-out-of-range", .desc = VMPROGK(8, 2, I(LDK, 0, 0, 0, 2), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 0: constant 2 does not exist (2 constants)") },
	{ "vm-sel-bad-register", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SEL, 1, 0, 0, 16), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: source register r16 does not exist") },
	{ "vm-sel-undefined", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SEL, 1, 0, 0, 5), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: reads r5 before it is written") },
	{ "vm-spill-slot-out-of-range", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 0, 0, 0, 64),
		I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: spill slot s64 does not exist (s0..s63)") },
	{ "vm-spill-slot-negative", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 0, 0, 0, -1),
		I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: spill slot s-1 does not exist (s0..s63)") },
	{ "vm-fill-slot-out-of-range", .desc = VMPROG(8, I(FILL, 0, 0, 0, 64), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 0: spill slot s64 does not exist (s0..s63)") },
	{ "vm-spill-undefined-register", .desc = VMPROG(8, I(SPILL, 0, 4, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 0: reads r4 before it is written") },
	{ "vm-fill-unwritten-slot", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 0, 0, 0, 2),
		I(FILL, 1, 0, 0, 3), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 2: reads slot s3 before it is written") },
	{ "vm-fill-slot-written-on-one-path", .desc = VMPROG(8, I(LD_64, 0, 0, 0, 0),
		I(JZ, 0, 0, 0, 1), I(SPILL, 0, 0, 0, 3), I(FILL, 1, 0, 0, 3), I(ST_64, 0, 1, 0, 0),
		I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 3: reads slot s3 before it is written") },
	{ "vm-fill-slot-skipped-by-ja", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(JA, 0, 0, 0, 1),
		I(SPILL, 0, 0, 0, 9), I(FILL, 1, 0, 0, 9), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 2: unreachable instruction") },
	{ "vm-spill-with-dst", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 1, 0, 0, 0),
		I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: unused field dst is not 0") },
	{ "vm-spill-with-b", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 0, 0, 1, 0),
		I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 1: unused field b is not 0") },
	{ "vm-fill-with-a", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 0, 0, 0, 0),
		I(FILL, 1, 1, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 2: unused field a is not 0") },
	{ "vm-fill-with-b", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 0, 0, 0, 0),
		I(FILL, 1, 0, 2, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 2: unused field b is not 0") },
	{ "vm-fill-bad-register", .desc = VMPROG(8, I(MOVI, 0, 0, 0, 1), I(SPILL, 0, 0, 0, 0),
		I(FILL, 16, 0, 0, 0), I(EXIT, 0, 0, 0, 0)),
	  REJECT(EINVAL, "insn 2: destination register r16 does not exist") },
};

const unsigned int cad_vcases_count = CAD_ARRAY_SIZE(cad_vcases);

/* ------------------------------------------------------------------ */

static void poke(__u8 *at, unsigned int size, __u64 val)
{
	switch (size) {
	case 1: { __u8 v = (__u8)val; cad_memcpy(at, &v, 1); break; }
	case 2: { __u16 v = (__u16)val; cad_memcpy(at, &v, 2); break; }
	case 4: { __u32 v = (__u32)val; cad_memcpy(at, &v, 4); break; }
	default: cad_memcpy(at, &val, 8); break;
	}
}

int cad_vcase_run(const struct cad_vcase *c, struct cad_tctx *t)
{
	struct cad_limits limits = cad_default_limits;
	__u64 want = cad_image_size(&c->desc);
	char *log_buf;
	struct cad_log log;
	struct cad_prog prog;
	__u8 *img;
	__u32 size;
	int err;

	/* Room for a padded image and a misaligned copy. */
	img = cad_talloc(t, want + 16);
	log_buf = cad_talloc(t, 1024);
	T_CHECK(t, img && log_buf && want, "no room for a %llu-byte image", (unsigned long long)want);
	T_CHECK(t, cad_image_write(&c->desc, img, want) == 0, "cad_image_write failed");
	size = (__u32)want;
	if (c->poke_size) {
		__u32 base = c->poke_sec ? ((struct cad_prog_header *)img)->sec[c->poke_sec - 1].off : 0;

		poke(img + base + c->poke_off, c->poke_size, c->poke_val);
	}
	if (c->mutate)
		c->mutate(img, &size);
	if (c->limits)
		c->limits(&limits);
	if (c->misalign) {
		__u32 k;

		for (k = size; k-- > 0;)  /* overlapping move, last byte first */
			img[k + 4] = img[k];
		img += 4;
	}
	cad_log_init(&log, log_buf, 1024);
	err = cad_verify(img, size, &limits, &prog, &log);
	if (c->result == 0) {
		T_CHECK(t, err == 0, "expected accept, got %d: %s", err, log_buf);
		T_CHECK(t, log.len == 0, "accepted with a message: %s", log_buf);
		T_CHECK(t, prog.n_nodes == c->desc.n_nodes && prog.n_buffers == c->desc.n_buffers,
			"view does not match the description");
		return 0;
	}
	T_CHECK(t, err == c->result, "expected %d, got %d: %s", c->result, err, log_buf);
	T_CHECK(t, cad_tcontains(log_buf, c->errstr), "message \"%s\" lacks \"%s\"", log_buf,
		c->errstr);
	T_CHECK(t, log.len > 0 && log_buf[log.len - 1] == '\n', "message is not one line: %s", log_buf);
	return 0;
}

static unsigned int vcount(void)
{
	return cad_vcases_count;
}

static void vname(unsigned int i, char *buf, size_t size)
{
	cad_snprintf(buf, size, "%s", cad_vcases[i].name);
}

static int vrun(unsigned int i, struct cad_tctx *t)
{
	return cad_vcase_run(&cad_vcases[i], t);
}

const struct cad_tsuite cad_suite_verifier = { "verifier", vcount, vname, vrun };
