// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * exec_cases.c - the executor state machine: readiness, NOP joins,
 * failure, abort, restart; then whole collectives generated here (as the
 * KACC paper's Figure 2 does by hand) and run on every rank through the
 * loopback engine: a pipelined chain broadcast, a ring allreduce, and a
 * recursive-doubling allreduce with a non-commutative user op whose
 * operand order is checked.  A deadlock and a size mismatch must be
 * reported, not hang.
 */
#include "selftest.h"
#include "loopback.h"
#include "vm_progs.h"

/* ---- a small program builder: nodes, then edges as pairs ---- */

struct tb {
	struct cad_tctx *t;
	struct cad_node *nodes;
	__u32 n, cap;
	__u32 (*pairs)[2];
	__u32 np;
	struct cad_image_desc desc;
};

static bool tb_init(struct tb *b, struct cad_tctx *t, __u32 cap, __u32 rank, __u32 nranks,
		    const struct cad_buffer *bufs, __u32 n_bufs)
{
	cad_memset(b, 0, sizeof(*b));
	b->t = t;
	b->cap = cap;
	b->nodes = cad_talloc(t, (__u64)cap * sizeof(*b->nodes));
	b->pairs = cad_talloc(t, (__u64)cap * 4 * sizeof(*b->pairs));
	b->desc.rank = rank;
	b->desc.nranks = nranks;
	b->desc.buffers = bufs;
	b->desc.n_buffers = n_bufs;
	return b->nodes && b->pairs;
}

static __u32 tb_add(struct tb *b, struct cad_node n)
{
	n.line = CAD_NO_LINE;
	b->nodes[b->n] = n;
	return b->n++;
}

static void tb_edge(struct tb *b, __u32 from, __u32 to)
{
	b->pairs[b->np][0] = from;
	b->pairs[b->np][1] = to;
	b->np++;
}

/* Successor lists in node order, each sorted, without duplicates. */
static int tb_build(struct tb *b, struct cad_prog *prog)
{
	struct cad_edge *edges = cad_talloc(b->t, (__u64)(b->np + 1) * sizeof(*edges));
	__u32 i, k, e = 0;

	T_CHECK(b->t, edges, "out of work memory");
	for (i = 0; i < b->n; i++) {
		__u32 last = i;

		b->nodes[i].edge_first = e;
		for (;;) {  /* smallest successor above last: n is small */
			__u32 best = ~0u;

			for (k = 0; k < b->np; k++)
				if (b->pairs[k][0] == i && b->pairs[k][1] > last && b->pairs[k][1] < best)
					best = b->pairs[k][1];
			if (best == ~0u)
				break;
			edges[e++].to = best;
			last = best;
		}
		b->nodes[i].edge_count = e - b->nodes[i].edge_first;
	}
	b->desc.nodes = b->nodes;
	b->desc.n_nodes = b->n;
	b->desc.edges = edges;
	b->desc.n_edges = e;
	if (cad_tbuild(b->t, &b->desc, prog))
		return T_FAIL(b->t, "generated program rejected: %s", b->t->msg);
	return 0;
}

#define SENDN(b, off, n, to, tg) (struct cad_node){ .kind = CAD_NODE_SEND, .src_buf = (b), \
	.src_off = (off), .len = (n), .peer = (to), .tag = (tg) }
#define RECVN(b, off, n, from, tg) (struct cad_node){ .kind = CAD_NODE_RECV, .dst_buf = (b), \
	.dst_off = (off), .len = (n), .peer = (from), .tag = (tg) }
#define COPYN(db, doff, sb, soff, n) (struct cad_node){ .kind = CAD_NODE_COPY, .dst_buf = (db), \
	.dst_off = (doff), .src_buf = (sb), .src_off = (soff), .len = (n) }

static const struct cad_buffer one_buf[] = {
	{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = 64 },
};

/* ---- state machine cases ---- */

/* 0 -> 1 -> 2 */
static int run_chain(struct cad_tctx *t)
{
	struct cad_exec ex;
	struct cad_prog p;
	struct tb b;
	__u32 n;
	void *mem;

	T_CHECK(t, tb_init(&b, t, 8, 0, 2, one_buf, 1), "out of work memory");
	tb_edge(&b, tb_add(&b, RECVN(0, 0, 8, 1, 0)), 1);
	tb_edge(&b, tb_add(&b, COPYN(0, 8, 0, 0, 8)), 2);
	tb_add(&b, SENDN(0, 8, 8, 1, 0));
	if (tb_build(&b, &p))
		return -1;
	mem = cad_talloc(t, cad_exec_mem_size(&p));
	cad_exec_init(&ex, &p, mem);
	cad_exec_start(&ex);
	T_CHECK(t, cad_exec_status(&ex) == -EINPROGRESS, "not in progress at start");
	T_CHECK(t, cad_exec_next(&ex, &n) && n == 0, "first ready is not node 0");
	T_CHECK(t, !cad_exec_next(&ex, &n), "node 1 ready before node 0 completed");
	T_CHECK(t, cad_exec_complete(&ex, 0) == 0, "complete 0");
	T_CHECK(t, cad_exec_next(&ex, &n) && n == 1, "node 1 not ready after node 0");
	T_CHECK(t, cad_exec_complete(&ex, 1) == 0, "complete 1");
	T_CHECK(t, cad_exec_next(&ex, &n) && n == 2, "node 2 not ready");
	T_CHECK(t, cad_exec_status(&ex) == -EINPROGRESS, "done before the last node");
	T_CHECK(t, cad_exec_complete(&ex, 2) == 0, "complete 2");
	T_CHECK(t, cad_exec_status(&ex) == 0 && ex.n_done == 3, "not done at the end");
	T_CHECK(t, cad_exec_complete(&ex, 2) == -EFAULT, "a second completion was accepted");
	T_CHECK(t, cad_exec_fail(&ex, 1, -EIO) == -EFAULT, "failing a done node was accepted");
	T_CHECK(t, cad_exec_complete(&ex, 99) == -EFAULT, "completing node 99 was accepted");
	return 0;
}

/* 0 -> {1, 2} -> NOP 3 -> 4: the join needs both, the NOP is never handed out. */
static int run_diamond(struct cad_tctx *t)
{
	struct cad_exec ex;
	struct cad_prog p;
	struct tb b;
	__u32 n, first, second;

	T_CHECK(t, tb_init(&b, t, 8, 0, 2, one_buf, 1), "out of work memory");
	tb_add(&b, RECVN(0, 0, 8, 1, 0));
	tb_add(&b, COPYN(0, 8, 0, 0, 8));
	tb_add(&b, COPYN(0, 16, 0, 0, 8));
	tb_add(&b, (struct cad_node){ .kind = CAD_NODE_NOP });
	tb_add(&b, SENDN(0, 8, 16, 1, 0));
	tb_edge(&b, 0, 1);
	tb_edge(&b, 0, 2);
	tb_edge(&b, 1, 3);
	tb_edge(&b, 2, 3);
	tb_edge(&b, 3, 4);
	if (tb_build(&b, &p))
		return -1;
	cad_exec_init(&ex, &p, cad_talloc(t, cad_exec_mem_size(&p)));
	cad_exec_start(&ex);
	T_CHECK(t, cad_exec_next(&ex, &n) && n == 0, "root");
	cad_exec_complete(&ex, 0);
	T_CHECK(t, cad_exec_next(&ex, &first) && cad_exec_next(&ex, &second), "both branches ready");
	T_CHECK(t, first == 1 && second == 2, "branches in FIFO order: %u %u", first, second);
	T_CHECK(t, !cad_exec_next(&ex, &n), "join ready too early");
	cad_exec_complete(&ex, 2);
	T_CHECK(t, !cad_exec_next(&ex, &n), "join ready with one branch pending");
	cad_exec_complete(&ex, 1);
	T_CHECK(t, cad_exec_next(&ex, &n) && n == 4, "after the NOP comes node 4, got %u", n);
	T_CHECK(t, ex.state[3] == CAD_NS_DONE, "NOP not completed by the executor");
	cad_exec_complete(&ex, 4);
	T_CHECK(t, cad_exec_status(&ex) == 0, "not done");
	return 0;
}

static int run_only_nops(struct cad_tctx *t)
{
	struct cad_exec ex;
	struct cad_prog p;
	struct tb b;
	__u32 n;

	T_CHECK(t, tb_init(&b, t, 8, 0, 1, NULL, 0), "out of work memory");
	tb_add(&b, (struct cad_node){ .kind = CAD_NODE_NOP });
	tb_add(&b, (struct cad_node){ .kind = CAD_NODE_NOP });
	tb_add(&b, (struct cad_node){ .kind = CAD_NODE_NOP });
	tb_edge(&b, 0, 2);
	tb_edge(&b, 1, 2);
	if (tb_build(&b, &p))
		return -1;
	cad_exec_init(&ex, &p, cad_talloc(t, cad_exec_mem_size(&p)));
	cad_exec_start(&ex);
	T_CHECK(t, !cad_exec_next(&ex, &n), "a NOP was handed out");
	T_CHECK(t, cad_exec_status(&ex) == 0, "status %d", cad_exec_status(&ex));
	return 0;
}

static int run_empty(struct cad_tctx *t)
{
	const struct cad_image_desc d = { .nranks = 1 };
	struct cad_exec ex;
	struct cad_prog p;
	__u32 n;

	T_CHECK(t, cad_tbuild(t, &d, &p) == 0, "empty program rejected");
	T_CHECK(t, cad_exec_mem_size(&p) == 0, "memory for no nodes");
	cad_exec_init(&ex, &p, NULL);
	cad_exec_start(&ex);
	T_CHECK(t, !cad_exec_next(&ex, &n) && cad_exec_status(&ex) == 0, "empty program not done");
	return 0;
}

/* Three roots; one fails: nothing new is issued, the error shows once the
 * other issued node is back. */
static int run_failure(struct cad_tctx *t, bool abort_instead)
{
	struct cad_exec ex;
	struct cad_prog p;
	struct tb b;
	__u32 a, c, n;

	T_CHECK(t, tb_init(&b, t, 8, 0, 2, one_buf, 1), "out of work memory");
	tb_add(&b, RECVN(0, 0, 8, 1, 0));
	tb_add(&b, RECVN(0, 8, 8, 1, 1));
	tb_add(&b, RECVN(0, 16, 8, 1, 2));
	tb_add(&b, SENDN(0, 0, 8, 1, 0));
	tb_edge(&b, 0, 3);
	if (tb_build(&b, &p))
		return -1;
	cad_exec_init(&ex, &p, cad_talloc(t, cad_exec_mem_size(&p)));
	cad_exec_start(&ex);
	T_CHECK(t, cad_exec_next(&ex, &a) && cad_exec_next(&ex, &c), "two roots");
	if (abort_instead)
		cad_exec_abort(&ex, -ECANCELED);
	else
		T_CHECK(t, cad_exec_fail(&ex, a, -EPIPE) == 0, "fail");
	T_CHECK(t, !cad_exec_next(&ex, &n), "issued node %u after the failure", n);
	T_CHECK(t, cad_exec_status(&ex) == -EINPROGRESS, "reported before in-flight nodes returned");
	cad_exec_complete(&ex, c);
	if (abort_instead) {
		T_CHECK(t, cad_exec_status(&ex) == -EINPROGRESS, "node %u still issued", a);
		cad_exec_complete(&ex, a);
	}
	T_CHECK(t, cad_exec_status(&ex) == (abort_instead ? -ECANCELED : -EPIPE),
		"status %d", cad_exec_status(&ex));
	cad_exec_abort(&ex, -EIO);
	T_CHECK(t, cad_exec_status(&ex) == (abort_instead ? -ECANCELED : -EPIPE), "first error kept");
	return 0;
}

/* A persistent collective: start, run, start again. */
static int run_restart(struct cad_tctx *t)
{
	struct cad_exec ex;
	struct cad_prog p;
	struct tb b;
	__u32 n, round, done;

	T_CHECK(t, tb_init(&b, t, 8, 0, 2, one_buf, 1), "out of work memory");
	tb_add(&b, RECVN(0, 0, 8, 1, 0));
	tb_add(&b, SENDN(0, 0, 8, 1, 0));
	tb_add(&b, SENDN(0, 0, 8, 1, 1));
	tb_edge(&b, 0, 1);
	tb_edge(&b, 0, 2);
	if (tb_build(&b, &p))
		return -1;
	cad_exec_init(&ex, &p, cad_talloc(t, cad_exec_mem_size(&p)));
	for (round = 0; round < 3; round++) {
		cad_exec_start(&ex);
		for (done = 0; cad_exec_next(&ex, &n); done++)
			cad_exec_complete(&ex, n);
		T_CHECK(t, done == 3 && cad_exec_status(&ex) == 0, "round %u: %u nodes", round, done);
	}
	return 0;
}

/* Ready transfers before ready local nodes, each kind in FIFO order, also
 * for a transfer that a local node's completion makes ready:
 * roots COPY 0, SEND 1, COPY 2, RECV 3; 0 -> SEND 4.  Twice (restart). */
static int run_transfers_first(struct cad_tctx *t)
{
	struct cad_exec ex;
	struct cad_prog p;
	struct tb b;
	__u32 n, round, got[5];

	T_CHECK(t, tb_init(&b, t, 8, 0, 2, one_buf, 1), "out of work memory");
	tb_add(&b, COPYN(0, 32, 0, 0, 8));
	tb_add(&b, SENDN(0, 0, 8, 1, 0));
	tb_add(&b, COPYN(0, 48, 0, 8, 8));
	tb_add(&b, RECVN(0, 16, 8, 1, 1));
	tb_add(&b, SENDN(0, 32, 8, 1, 2));
	tb_edge(&b, 0, 4);
	if (tb_build(&b, &p))
		return -1;
	cad_exec_init(&ex, &p, cad_talloc(t, cad_exec_mem_size(&p)));
	for (round = 0; round < 2; round++) {
		cad_exec_start(&ex);
		T_CHECK(t, cad_exec_next(&ex, &got[0]) && cad_exec_next(&ex, &got[1]) && cad_exec_next(&ex, &got[2]),
			"round %u: three of four roots not handed out", round);
		T_CHECK(t, got[0] == 1 && got[1] == 3 && got[2] == 0,
			"round %u: roots in the order %u %u %u, not 1 3 0", round, got[0], got[1], got[2]);
		cad_exec_complete(&ex, 0);
		T_CHECK(t, cad_exec_next(&ex, &got[3]) && got[3] == 4,
			"round %u: the send made ready by the copy is not next (%u)", round, got[3]);
		T_CHECK(t, cad_exec_next(&ex, &got[4]) && got[4] == 2, "round %u: the second copy is not last (%u)",
			round, got[4]);
		T_CHECK(t, !cad_exec_next(&ex, &n), "round %u: node %u handed out twice", round, n);
		cad_exec_complete(&ex, 1);
		cad_exec_complete(&ex, 2);
		cad_exec_complete(&ex, 3);
		cad_exec_complete(&ex, 4);
		T_CHECK(t, cad_exec_status(&ex) == 0, "round %u: status %d", round, cad_exec_status(&ex));
	}
	return 0;
}

/* ---- whole collectives on the loopback engine ---- */

struct world {
	struct cad_lb_rank *ranks;
	__u32 nranks;
};

static int lb_run(struct cad_tctx *t, struct world *w, int expect)
{
	void *mem = cad_talloc(t, cad_lb_mem_size(w->ranks, w->nranks) + 8);
	char *why = cad_talloc(t, 1024);
	int err;

	T_CHECK(t, mem && why, "out of work memory");
	err = cad_lb_run(w->ranks, w->nranks, mem, t->vm_scratch, why, 1024);
	T_CHECK(t, err == expect, "loopback returned %d, expected %d: %s", err, expect, why);
	if (expect == -EDEADLK)
		T_CHECK(t, cad_tcontains(why, "deadlock: [rank 0 node 0 recv"), "report: %s", why);
	return 0;
}

static bool world_init(struct cad_tctx *t, struct world *w, __u32 nranks, __u32 nbufs)
{
	__u32 r;

	w->nranks = nranks;
	w->ranks = cad_talloc(t, nranks * sizeof(*w->ranks));
	if (!w->ranks)
		return false;
	for (r = 0; r < nranks; r++) {
		w->ranks[r].bufs = cad_talloc(t, nbufs * sizeof(void *));
		if (!w->ranks[r].bufs)
			return false;
	}
	return true;
}

/* Pipelined chain broadcast from rank 0: segment k flows 0 -> 1 -> ... */
static int run_bcast_chain(struct cad_tctx *t, __u32 P, __u32 segs, __u32 seg_bytes)
{
	const __u64 bytes = (__u64)segs * seg_bytes;
	const struct cad_buffer buf[] = {
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes },
	};
	struct world w;
	__u32 r, k;
	__u64 i;

	T_CHECK(t, world_init(t, &w, P, 1), "out of work memory");
	for (r = 0; r < P; r++) {
		__u8 *data = cad_talloc(t, bytes);
		struct tb b;

		T_CHECK(t, data && tb_init(&b, t, 2 * segs, r, P, buf, 1), "out of work memory");
		for (i = 0; i < bytes; i++)
			data[i] = r == 0 ? (__u8)(i * 7 + 1) : 0xee;
		w.ranks[r].bufs[0] = data;
		for (k = 0; k < segs; k++) {
			__u32 rn = ~0u, sn;

			if (r > 0)
				rn = tb_add(&b, RECVN(0, (__u64)k * seg_bytes, seg_bytes, r - 1, k));
			if (r + 1 < P) {
				sn = tb_add(&b, SENDN(0, (__u64)k * seg_bytes, seg_bytes, r + 1, k));
				if (rn != ~0u)
					tb_edge(&b, rn, sn);
			}
		}
		if (tb_build(&b, &w.ranks[r].prog))
			return -1;
	}
	if (lb_run(t, &w, 0))
		return -1;
	for (r = 0; r < P; r++)
		for (i = 0; i < bytes; i++)
			T_CHECK(t, ((__u8 *)w.ranks[r].bufs[0])[i] == (__u8)(i * 7 + 1),
				"rank %u byte %llu wrong", r, (unsigned long long)i);
	return 0;
}

/* Ring allreduce (reduce-scatter, then allgather) of P blocks of int32. */
static int run_ring_allreduce(struct cad_tctx *t, __u32 P, __u32 blk)
{
	const __u64 bb = (__u64)blk * 4, bytes = bb * P;
	const struct cad_buffer bufs[] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = bytes },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes },
		{ .kind = CAD_BUF_SCRATCH, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bb * (P - 1) },
	};
	struct world w;
	__u32 r, s;
	__u64 i;

	T_CHECK(t, world_init(t, &w, P, 3), "out of work memory");
	for (r = 0; r < P; r++) {
		__s32 *in = cad_talloc(t, bytes), *out = cad_talloc(t, bytes);
		void *tmp = cad_talloc(t, bb * P);
		__u32 copy, send[64], reduce[64], recv_ag = 0, prev;
		struct tb b;

		T_CHECK(t, in && out && tmp && P <= 64 && tb_init(&b, t, 6 * P, r, P, bufs, 3),
			"out of work memory");
		for (i = 0; i < bytes / 4; i++)
			in[i] = (__s32)(i * 1000003u + r * 0x7654321u);
		w.ranks[r].bufs[0] = in;
		w.ranks[r].bufs[1] = out;
		w.ranks[r].bufs[2] = tmp;
#define BLK(x) ((__u64)(((x) + 2 * P) % P) * bb)
		copy = tb_add(&b, COPYN(1, 0, 0, 0, bytes));
		for (s = 0; s + 1 < P; s++) {
			__u32 rv = tb_add(&b, RECVN(2, s * bb, bb, (r + P - 1) % P, s));

			send[s] = tb_add(&b, SENDN(1, BLK(r - s), bb, (r + 1) % P, s));
			tb_edge(&b, s ? reduce[s - 1] : copy, send[s]);
			reduce[s] = tb_add(&b, (struct cad_node){ .kind = CAD_NODE_REDUCE,
				.op = CAD_OP_SUM, .dtype = CAD_DT_INT32, .dst_buf = 1,
				.dst_off = BLK(r - s - 1), .src_buf = 2, .src_off = s * bb, .len = bb });
			tb_edge(&b, rv, reduce[s]);
			tb_edge(&b, copy, reduce[s]);
		}
		for (s = 0; s + 1 < P; s++) {
			__u32 sn = tb_add(&b, SENDN(1, BLK(r - s + 1), bb, (r + 1) % P, 100 + s));

			prev = recv_ag;
			tb_edge(&b, s ? prev : reduce[P - 2], sn);
			recv_ag = tb_add(&b, RECVN(1, BLK(r - s), bb, (r + P - 1) % P, 100 + s));
			tb_edge(&b, send[s], recv_ag);
			tb_edge(&b, s ? reduce[s - 1] : copy, recv_ag);
		}
#undef BLK
		if (tb_build(&b, &w.ranks[r].prog))
			return -1;
	}
	if (lb_run(t, &w, 0))
		return -1;
	for (r = 0; r < P; r++)
		for (i = 0; i < bytes / 4; i++) {
			__u32 want = 0, q;

			for (q = 0; q < P; q++)
				want += (__u32)(i * 1000003u + q * 0x7654321u);
			T_CHECK(t, ((__s32 *)w.ranks[r].bufs[1])[i] == (__s32)want,
				"rank %u element %llu: %d, expected %d", r, (unsigned long long)i,
				((__s32 *)w.ranks[r].bufs[1])[i], (__s32)want);
		}
	return 0;
}

/* Recursive doubling with the non-commutative affine op: every rank must
 * end with x0 o x1 o ... o x(P-1), lower ranks on the left. */
static int run_rd_affine(struct cad_tctx *t, __u32 P, __u32 count)
{
	const struct cad_vm_prog_def *op = &cad_vm_progs[CAD_VMP_AFFINE];
	const __u64 bytes = (__u64)count * 16;
	const struct cad_buffer bufs[] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = bytes },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes },
		{ .kind = CAD_BUF_SCRATCH, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes },
	};
	const struct cad_user_op uop = {
		.elem_size = 16, .code_count = op->n_code, .line = CAD_NO_LINE,
	};
	struct world w;
	__u32 r, mask, step;
	__u64 i;

	T_CHECK(t, world_init(t, &w, P, 3), "out of work memory");
	for (r = 0; r < P; r++) {
		__u64 *in = cad_talloc(t, bytes), *out = cad_talloc(t, bytes);
		void *tmp = cad_talloc(t, bytes);
		__u32 last_b1, last_b2 = ~0u;
		struct tb b;

		T_CHECK(t, in && out && tmp && tb_init(&b, t, 64, r, P, bufs, 3), "out of work memory");
		b.desc.ops = &uop;
		b.desc.n_ops = 1;
		b.desc.code = op->code;
		b.desc.n_code = op->n_code;
		for (i = 0; i < count; i++) {
			in[2 * i] = 2 * (i + r) + 3;        /* a: odd, so maps stay distinct */
			in[2 * i + 1] = i * 31 + r * 17 + 1; /* b */
		}
		w.ranks[r].bufs[0] = in;
		w.ranks[r].bufs[1] = out;
		w.ranks[r].bufs[2] = tmp;
		last_b1 = tb_add(&b, COPYN(1, 0, 0, 0, bytes));
		for (mask = 1, step = 0; mask < P; mask <<= 1, step++) {
			const __u32 partner = r ^ mask;
			__u32 sn = tb_add(&b, SENDN(1, 0, bytes, partner, step));
			__u32 rn = tb_add(&b, RECVN(2, 0, bytes, partner, step));
			struct cad_node red = { .kind = CAD_NODE_REDUCE, .op = CAD_OP_USER,
				.dtype = CAD_DT_USER, .len = bytes };
			__u32 rd;

			tb_edge(&b, last_b1, sn);
			if (last_b2 != ~0u)
				tb_edge(&b, last_b2, rn);
			if (partner < r) {          /* b1 = partner o b1 */
				red.dst_buf = 1;
				red.src_buf = 2;
				rd = tb_add(&b, red);
				tb_edge(&b, rn, rd);
				tb_edge(&b, sn, rd);
				last_b1 = last_b2 = rd;
			} else {                    /* b2 = b1 o partner; b1 = b2 */
				__u32 cp;

				red.dst_buf = 2;
				red.src_buf = 1;
				rd = tb_add(&b, red);
				tb_edge(&b, rn, rd);
				tb_edge(&b, last_b1, rd);
				cp = tb_add(&b, COPYN(1, 0, 2, 0, bytes));
				tb_edge(&b, rd, cp);
				tb_edge(&b, sn, cp);
				last_b1 = last_b2 = cp;
			}
		}
		if (tb_build(&b, &w.ranks[r].prog))
			return -1;
	}
	if (lb_run(t, &w, 0))
		return -1;
	for (i = 0; i < count; i++) {
		__u64 a = 1, c = 0;  /* identity map, composed from the right */
		__u32 q;

		for (q = P; q-- > 0;) {
			const __u64 *x = w.ranks[q].bufs[0];

			/* x_q o (a, c) = (x.a * a, x.a * c + x.b) */
			c = x[2 * i] * c + x[2 * i + 1];
			a = x[2 * i] * a;
		}
		for (r = 0; r < P; r++) {
			const __u64 *o = w.ranks[r].bufs[1];

			T_CHECK(t, o[2 * i] == a && o[2 * i + 1] == c,
				"P=%u rank %u element %llu: (%llu, %llu), expected (%llu, %llu)", P, r,
				(unsigned long long)i, (unsigned long long)o[2 * i],
				(unsigned long long)o[2 * i + 1], (unsigned long long)a,
				(unsigned long long)c);
		}
	}
	return 0;
}

/* Both ranks receive before they send: with rendezvous, a deadlock. */
static int run_deadlock(struct cad_tctx *t, bool size_mismatch)
{
	struct world w;
	__u32 r;

	T_CHECK(t, world_init(t, &w, 2, 1), "out of work memory");
	for (r = 0; r < 2; r++) {
		struct tb b;

		T_CHECK(t, tb_init(&b, t, 4, r, 2, one_buf, 1), "out of work memory");
		w.ranks[r].bufs[0] = cad_talloc(t, 64);
		if (size_mismatch) {
			tb_add(&b, r ? RECVN(0, 0, 16, 0, 0) : SENDN(0, 0, 8, 1, 0));
		} else {
			tb_edge(&b, tb_add(&b, RECVN(0, 0, 8, !r, 0)), 1);
			tb_add(&b, SENDN(0, 8, 8, !r, 0));
		}
		if (tb_build(&b, &w.ranks[r].prog))
			return -1;
	}
	return lb_run(t, &w, size_mismatch ? -EINVAL : -EDEADLK);
}

/* ---- the suite ---- */

static const char *const names[] = {
	"chain", "diamond-nop-join", "only-nops", "empty", "fail-stops-issuing",
	"abort-waits-for-issued", "restart", "bcast-chain-p2", "bcast-chain-p5",
	"bcast-chain-p7-1seg", "ring-allreduce-p3", "ring-allreduce-p4", "ring-allreduce-p7",
	"rd-affine-p2", "rd-affine-p4", "rd-affine-p8", "deadlock-reported",
	"size-mismatch-reported", "transfers-first",
};

static unsigned int ecount(void)
{
	return CAD_ARRAY_SIZE(names);
}

static void ename(unsigned int i, char *buf, size_t size)
{
	cad_snprintf(buf, size, "%s", names[i]);
}

static int erun(unsigned int i, struct cad_tctx *t)
{
	switch (i) {
	case 0: return run_chain(t);
	case 1: return run_diamond(t);
	case 2: return run_only_nops(t);
	case 3: return run_empty(t);
	case 4: return run_failure(t, false);
	case 5: return run_failure(t, true);
	case 6: return run_restart(t);
	case 7: return run_bcast_chain(t, 2, 3, 100);
	case 8: return run_bcast_chain(t, 5, 8, 4096);
	case 9: return run_bcast_chain(t, 7, 1, 1000);
	case 10: return run_ring_allreduce(t, 3, 257);
	case 11: return run_ring_allreduce(t, 4, 1000);
	case 12: return run_ring_allreduce(t, 7, 33);
	case 13: return run_rd_affine(t, 2, 100);
	case 14: return run_rd_affine(t, 4, 129);
	case 15: return run_rd_affine(t, 8, 65);
	case 16: return run_deadlock(t, false);
	case 17: return run_deadlock(t, true);
	default: return run_transfers_first(t);
	}
}

const struct cad_tsuite cad_suite_exec = { "exec", ecount, ename, erun };
