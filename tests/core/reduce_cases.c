// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * reduce_cases.c - every built-in op on every datatype it applies to,
 * through a verified REDUCE node and cad_reduce, against the reference in
 * ref_fpu.c.  Inputs pair every special value with every other (NaN,
 * infinities, signed zero, denormals, integer limits for wrap-around),
 * then random ones; each case runs at aligned and misaligned addresses.
 * Plus the support matrix (MPI's rules, written out again here) and a
 * reduction long enough to span several FPU sections.
 */
#include "selftest.h"
#include "ref_fpu.h"

#define N_ELEMS 1200

struct pair { __u8 op, dtype; };

/* MPI's table of which op applies to which type. */
static bool mpi_allows(unsigned int op, unsigned int dt)
{
	bool integer = dt >= CAD_DT_INT8 && dt <= CAD_DT_UINT64;
	bool floating = dt == CAD_DT_FLOAT || dt == CAD_DT_DOUBLE;
	bool pair = dt >= CAD_DT_FLOAT_INT && dt <= CAD_DT_SHORT_INT;

	switch (op) {
	case CAD_OP_SUM: case CAD_OP_PROD: case CAD_OP_MIN: case CAD_OP_MAX:
		return integer || floating;
	case CAD_OP_BAND: case CAD_OP_BOR: case CAD_OP_BXOR:
		return integer || dt == CAD_DT_BYTE;
	case CAD_OP_LAND: case CAD_OP_LOR: case CAD_OP_LXOR:
		return integer;
	case CAD_OP_MINLOC: case CAD_OP_MAXLOC:
		return pair;
	default:
		return false;
	}
}

static unsigned int n_pairs(void)
{
	unsigned int op, dt, n = 0;

	for (op = 0; op < CAD_OP_COUNT; op++)
		for (dt = 0; dt < CAD_DT_COUNT; dt++)
			n += mpi_allows(op, dt);
	return n;
}

static struct pair nth_pair(unsigned int i)
{
	struct pair p = { 0, 0 };
	unsigned int op, dt;

	for (op = 0; op < CAD_OP_COUNT; op++)
		for (dt = 0; dt < CAD_DT_COUNT; dt++)
			if (mpi_allows(op, dt) && i-- == 0) {
				p.op = (__u8)op;
				p.dtype = (__u8)dt;
				return p;
			}
	return p;
}

/* Special values as raw bits, per element width. */
static const __u64 special_int[] = {
	0, 1, 2, 3, ~0ull, ~0ull - 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff,
	0x7fffffff, 0x80000000, 0xffffffff, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0x5555555555555555ull, 0xaaaaaaaaaaaaaaaaull, 100, 0x10000,
};
static const __u64 special_f64[] = {
	0x0000000000000000ull, 0x8000000000000000ull, /* +0, -0 */
	0x3ff0000000000000ull, 0xbff0000000000000ull, /* 1, -1 */
	0x3ff8000000000000ull, 0x4008000000000000ull, /* 1.5, 3 */
	0x3fb999999999999aull,                         /* 0.1 */
	0x0000000000000001ull, 0x8000000000000001ull, /* +-denormal min */
	0x000fffffffffffffull, 0x0010000000000000ull, /* max denormal, min normal */
	0x7fefffffffffffffull, 0xffefffffffffffffull, /* +-max */
	0x7ff0000000000000ull, 0xfff0000000000000ull, /* +-inf */
	0x7ff8000000000000ull, 0xfff8000000000000ull, /* +-qNaN */
	0x7ff0000000000001ull, 0x7ff8dead00000000ull, /* sNaN, NaN payload */
	0x5fe0000000000000ull,                         /* 2^511 */
};
static const __u32 special_f32[] = {
	0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3fc00000, 0x40400000,
	0x3dcccccd, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff,
	0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
	0x7fcdead0, 0x5f000000,
};
static const __s32 special_index[] = { 0, 1, 2, -1, (__s32)0x80000000, 7 };

/* Value and index offsets of the pair types. */
static void pair_layout(unsigned int dt, unsigned int *vsize, unsigned int *koff)
{
	*vsize = dt == CAD_DT_DOUBLE_INT || dt == CAD_DT_LONG_INT ? 8
	       : dt == CAD_DT_SHORT_INT ? 2 : 4;
	*koff = *vsize == 8 ? 8 : 4;
}

/* Element i of an input vector: the (i % n)-th special for inout (which 0),
 * the (i / n)-th for in (which 1), so every pair of specials meets once;
 * random bits past n * n. */
static void fill(unsigned int dt, __u8 *p, unsigned int which, __u64 *rng)
{
	unsigned int esz = cad_dtype_size(dt), vsize = esz, koff = 0, i, n, k;
	const bool pair = dt >= CAD_DT_FLOAT_INT && dt <= CAD_DT_SHORT_INT;
	const bool fl = dt == CAD_DT_FLOAT || dt == CAD_DT_FLOAT_INT;
	const bool db = dt == CAD_DT_DOUBLE || dt == CAD_DT_DOUBLE_INT;

	if (pair)
		pair_layout(dt, &vsize, &koff);
	n = fl ? CAD_ARRAY_SIZE(special_f32) : db ? CAD_ARRAY_SIZE(special_f64)
	   : CAD_ARRAY_SIZE(special_int);
	for (i = 0; i < N_ELEMS; i++, p += esz) {
		unsigned int s = which ? i / n : i % n;
		__u64 v = cad_trand(rng);

		if (s < n && i < n * n)
			v = fl ? special_f32[s] : db ? special_f64[s] : special_int[s];
		if (pair && (cad_trand(rng) & 3) == 0)
			v = 0;  /* equal values: the index decides */
		cad_memcpy(p, &v, vsize);  /* little-endian: the low bytes */
		if (pair) {
			__s32 kv = special_index[(i / 3 + which) % CAD_ARRAY_SIZE(special_index)];

			for (k = vsize; k < koff; k++)
				p[k] = (__u8)(0xa0 + k);  /* padding: must stay inout's */
			cad_memcpy(p + koff, &kv, 4);
			for (k = koff + 4; k < esz; k++)
				p[k] = (__u8)(0xb0 + k);
		}
	}
}

static int reduce_once(struct cad_tctx *t, struct pair pr, unsigned int misalign)
{
	const __u32 esz = cad_dtype_size(pr.dtype);
	const __u64 bytes = (__u64)N_ELEMS * esz;
	const struct cad_buffer bufs[] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = bytes + 8 },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes + 8 },
	};
	const struct cad_node node = {
		.kind = CAD_NODE_REDUCE, .op = pr.op, .dtype = pr.dtype,
		.dst_buf = 1, .dst_off = misalign, .src_buf = 0, .src_off = misalign * 3,
		.len = bytes, .line = CAD_NO_LINE,
	};
	const struct cad_image_desc desc = {
		.nranks = 1, .buffers = bufs, .n_buffers = 2, .nodes = &node, .n_nodes = 1,
	};
	__u8 *in = cad_talloc(t, bytes + 8), *io = cad_talloc(t, bytes + 8);
	__u8 *orig = cad_talloc(t, bytes), *expect = cad_talloc(t, bytes);
	__u64 rng = 0x9e3779b97f4a7c15ull ^ ((__u64)pr.op << 8) ^ pr.dtype;
	struct cad_prog prog;
	__u64 i;
	int err;

	T_CHECK(t, in && io && orig && expect, "out of work memory");
	err = cad_tbuild(t, &desc, &prog);
	T_CHECK(t, err == 0, "program rejected: %s", t->msg);
	fill(pr.dtype, io + node.dst_off, 0, &rng);
	fill(pr.dtype, in + node.src_off, 1, &rng);
	cad_memcpy(orig, io + node.dst_off, (size_t)bytes);

	cad_reduce(&prog, &prog.nodes[0], io + node.dst_off, in + node.src_off, t->vm_scratch);

	cad_fpu_begin();  /* one section: the reference and the comparison */
	cad_ref_reduce_fpu(pr.op, pr.dtype, expect, orig, in + node.src_off, N_ELEMS);
	for (i = 0; i < N_ELEMS; i++)
		if (!cad_ref_same_fpu(pr.dtype, io + node.dst_off + i * esz, expect + i * esz))
			break;
	cad_fpu_end();
	if (i < N_ELEMS) {
		__u64 g = 0, w = 0, a = 0, b = 0;
		unsigned int n = esz < 8 ? esz : 8;

		cad_memcpy(&g, io + node.dst_off + i * esz, n);
		cad_memcpy(&w, expect + i * esz, n);
		cad_memcpy(&a, orig + i * esz, n);
		cad_memcpy(&b, in + node.src_off + i * esz, n);
		return T_FAIL(t, "%s.%s%s element %llu: op(0x%llx, 0x%llx) gave 0x%llx, expected 0x%llx",
			      cad_op_name(pr.op), cad_dtype_name(pr.dtype),
			      misalign ? " misaligned" : "", (unsigned long long)i,
			      (unsigned long long)a, (unsigned long long)b,
			      (unsigned long long)g, (unsigned long long)w);
	}
	return 0;
}

static int run_pair(struct cad_tctx *t, struct pair pr)
{
	int err = reduce_once(t, pr, 0);

	return err ? err : reduce_once(t, pr, 1);
}

static int run_matrix(struct cad_tctx *t)
{
	unsigned int op, dt;

	for (op = 0; op < CAD_OP_COUNT + 2; op++)
		for (dt = 0; dt < CAD_DT_COUNT + 2; dt++)
			T_CHECK(t, cad_reduce_supported(op, dt) == mpi_allows(op, dt),
				"op %s on %s: core says %d, MPI says %d", cad_op_name(op),
				cad_dtype_name(dt), cad_reduce_supported(op, dt), mpi_allows(op, dt));
	return 0;
}

/* 1.6 MB of doubles: many FPU sections of cad_reduce. */
static int run_long(struct cad_tctx *t)
{
	const __u64 count = 200000, bytes = count * 8;
	const struct cad_buffer bufs[] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = bytes },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes },
	};
	const struct cad_node node = {
		.kind = CAD_NODE_REDUCE, .op = CAD_OP_SUM, .dtype = CAD_DT_INT64,
		.dst_buf = 1, .src_buf = 0, .len = bytes, .line = CAD_NO_LINE,
	};
	const struct cad_image_desc desc = {
		.nranks = 1, .buffers = bufs, .n_buffers = 2, .nodes = &node, .n_nodes = 1,
	};
	__s64 *in = cad_talloc(t, bytes), *io = cad_talloc(t, bytes);
	struct cad_prog prog;
	__u64 i;

	T_CHECK(t, in && io, "out of work memory");
	T_CHECK(t, cad_tbuild(t, &desc, &prog) == 0, "program rejected: %s", t->msg);
	for (i = 0; i < count; i++) {
		in[i] = (__s64)i * 3;
		io[i] = -(__s64)i;
	}
	cad_reduce(&prog, &prog.nodes[0], io, in, t->vm_scratch);
	for (i = 0; i < count; i++)
		T_CHECK(t, io[i] == (__s64)i * 2, "element %llu is %lld", (unsigned long long)i,
			(long long)io[i]);
	return 0;
}

static unsigned int rcount(void)
{
	return n_pairs() + 2;
}

static void rname(unsigned int i, char *buf, size_t size)
{
	unsigned int n = n_pairs();
	struct pair p;

	if (i == n) {
		cad_snprintf(buf, size, "support-matrix");
	} else if (i == n + 1) {
		cad_snprintf(buf, size, "long-sum-i64");
	} else {
		p = nth_pair(i);
		cad_snprintf(buf, size, "%s-%s", cad_op_name(p.op), cad_dtype_name(p.dtype));
	}
}

static int rrun(unsigned int i, struct cad_tctx *t)
{
	unsigned int n = n_pairs();

	if (i == n)
		return run_matrix(t);
	if (i == n + 1)
		return run_long(t);
	return run_pair(t, nth_pair(i));
}

const struct cad_tsuite cad_suite_reduce = { "reduce", rcount, rname, rrun };
