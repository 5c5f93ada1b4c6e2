// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm_cases.c - the reduction VM through verified programs and cad_reduce:
 *   op-*     every UN, BIN and CMP opcode on all pairs of special values, against
 *            the switch in ref_fpu.c;
 *   load-*, store-*   every access width at the edges of the element;
 *   prog-*   the hand-written operators of vm_progs.c against plain C, at
 *            counts around the block size (1, 63, 64, 65, 1000), also in
 *            place (the node reduces a range into itself);
 *   uniform-branches  blocks whose lanes all take the same path.
 */
#include "selftest.h"
#include "ref_fpu.h"
#include "vm_progs.h"

#define I(c, d_, a_, b_, k_) { .code = (c), .dst = (d_), .a = (a_), .b = (b_), .imm = (k_) }

static const __u64 specials[] = {
	0, 1, 2, 3, 7, 63, 64, 65, ~0ull, ~0ull - 6, 0x7f, 0x80, 0xff, 0x8000, 0xffff,
	0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
	0x7fffffffffffffffull, 0x8000000000000000ull,
	/* doubles: 1.5, -2.25, 0.1, -0, denormal, max, +-inf, NaNs, 2^63, 2^64,
	 * -2^63 - 2048 (just below), 3e9, -3e9, 2^31 */
	0x3ff8000000000000ull, 0xc002000000000000ull, 0x3fb999999999999aull,
	0x8000000000000000ull, 0x0000000000000001ull, 0x7fefffffffffffffull,
	0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull,
	0xfff8000000000001ull, 0x43e0000000000000ull, 0x43f0000000000000ull,
	0xc3e0000000000001ull, 0x41e65a0bc0000000ull, 0xc1e65a0bc0000000ull,
	0x41e0000000000000ull,
	/* floats in the low half: 1.5f, -0f, inf, NaN, 3e9f, 2^63f, 1e-45f */
	0x3fc00000, 0x80000000, 0x7f800000, 0x7fc00000, 0x4f32d05e, 0x5f000000, 0x00000001,
};
#define NS CAD_ARRAY_SIZE(specials)

static const __u8 un_bin_ops[] = {
#define UNBIN(name, value, fmt, width, str) \
	CAD_VMF_##fmt == CAD_VMF_UN || CAD_VMF_##fmt == CAD_VMF_BIN || \
	CAD_VMF_##fmt == CAD_VMF_CMP ? value : 0xff,
	CAD_VM_OPCODES(UNBIN)
#undef UNBIN
};
static const __u8 load_ops[] = {
#define LOADS(name, value, fmt, width, str) CAD_VMF_##fmt == CAD_VMF_LD ? value : 0xff,
	CAD_VM_OPCODES(LOADS)
#undef LOADS
};
static const __u8 store_ops[] = {
#define STORES(name, value, fmt, width, str) CAD_VMF_##fmt == CAD_VMF_ST ? value : 0xff,
	CAD_VM_OPCODES(STORES)
#undef STORES
};

/* The i-th opcode of a list, skipping the 0xff holes. */
static int nth(const __u8 *list, unsigned int n, unsigned int i)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		if (list[k] != 0xff && i-- == 0)
			return list[k];
	return -1;
}

static unsigned int count_of(const __u8 *list, unsigned int n)
{
	unsigned int k, c = 0;

	for (k = 0; k < n; k++)
		c += list[k] != 0xff;
	return c;
}

#define N_UNBIN  count_of(un_bin_ops, sizeof(un_bin_ops))
#define N_LOAD   count_of(load_ops, sizeof(load_ops))
#define N_STORE  count_of(store_ops, sizeof(store_ops))
static const __u32 prog_counts[] = { 1, 63, 64, 65, 1000 };
#define N_PROGS (2 * CAD_VMP_COUNT * CAD_ARRAY_SIZE(prog_counts))  /* also in place */

/* A verified program: node 0 reduces b1 (inout) with b0 (in), op 0. */
static int build_node(struct cad_tctx *t, const struct cad_vm_insn *code, __u32 n_code,
		      const __u64 *consts, __u32 n_consts, __u32 esz, __u64 count,
		      bool in_place, struct cad_prog *prog)
{
	const struct cad_buffer bufs[] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = count * esz },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = count * esz },
	};
	const struct cad_user_op op = {
		.elem_size = esz, .code_count = n_code, .const_count = n_consts,
		.line = CAD_NO_LINE,
	};
	const struct cad_node node = {
		.kind = CAD_NODE_REDUCE, .op = CAD_OP_USER, .dtype = CAD_DT_USER,
		.dst_buf = 1, .src_buf = in_place ? 1 : 0, .len = count * esz, .line = CAD_NO_LINE,
	};
	const struct cad_image_desc desc = {
		.nranks = 1, .buffers = bufs, .n_buffers = 2, .nodes = &node, .n_nodes = 1,
		.ops = &op, .n_ops = 1, .code = code, .n_code = n_code,
		.consts = consts, .n_consts = n_consts,
	};
	int err = cad_tbuild(t, &desc, prog);

	if (err)
		return T_FAIL(t, "VM program rejected (%d): %s", err, t->msg);
	return 0;
}

static int build(struct cad_tctx *t, const struct cad_vm_insn *code, __u32 n_code,
		 const __u64 *consts, __u32 n_consts, __u32 esz, __u64 count,
		 struct cad_prog *prog)
{
	return build_node(t, code, n_code, consts, n_consts, esz, count, false, prog);
}

/* The datatype of an opcode's computed float result, or 0 (results that
 * are copies, bit operations or integers must match exactly).  Two NaNs
 * may differ in payload when the compiler commutes an operation. */
static unsigned int float_result(unsigned int code)
{
	switch (code) {
	case CAD_VM_FADD: case CAD_VM_FSUB: case CAD_VM_FMUL: case CAD_VM_FDIV:
	case CAD_VM_FSQRT: case CAD_VM_CVT_F64_F32:
		return CAD_DT_DOUBLE;
	case CAD_VM_SADD: case CAD_VM_SSUB: case CAD_VM_SMUL: case CAD_VM_SDIV:
	case CAD_VM_SSQRT: case CAD_VM_CVT_F32_F64:
		return CAD_DT_FLOAT;
	default:
		return 0;
	}
}

static int run_unbin(struct cad_tctx *t, unsigned int code)
{
	const bool unary = cad_vm_opcode_format(code) == CAD_VMF_UN;
	const struct cad_vm_insn prog_code[] = {
		I(CAD_VM_LD_64, 0, 0, 0, 0), I(CAD_VM_LD_64, 1, 1, 0, 0),
		I(code, 2, 0, unary ? 0 : 1, 0),
		I(CAD_VM_ST_64, 0, 2, 0, 0), I(CAD_VM_EXIT, 0, 0, 0, 0),
	};
	const __u64 count = NS * NS + 200;
	__u64 *in = cad_talloc(t, count * 8), *io = cad_talloc(t, count * 8);
	__u64 *orig = cad_talloc(t, count * 8), rng = 0x1234567 + code, i, want = 0;
	struct cad_prog prog;

	T_CHECK(t, in && io && orig, "out of work memory");
	if (build(t, prog_code, 5, NULL, 0, 8, count, &prog))
		return -1;
	for (i = 0; i < count; i++) {
		in[i] = i < NS * NS ? specials[i % NS] : cad_trand(&rng);
		io[i] = orig[i] = i < NS * NS ? specials[i / NS] : cad_trand(&rng) >> (i & 63);
	}
	cad_reduce(&prog, &prog.nodes[0], io, in, t->vm_scratch);
	cad_fpu_begin();  /* one section for the whole comparison */
	for (i = 0; i < count; i++) {
		want = cad_ref_vm_op_fpu(code, in[i], orig[i]);
		if (io[i] != want &&
		    !(float_result(code) && cad_ref_same_fpu(float_result(code), &io[i], &want)))
			break;
	}
	cad_fpu_end();
	if (i < count)
		return T_FAIL(t, "%s(0x%llx, 0x%llx) = 0x%llx, expected 0x%llx",
			      cad_vm_opcode_name(code), (unsigned long long)in[i],
			      (unsigned long long)orig[i], (unsigned long long)io[i],
			      (unsigned long long)want);
	return 0;
}

static __u64 extend(unsigned int code, __u64 raw, unsigned int w)
{
	const char *name = cad_vm_opcode_name(code);  /* ld.i8 ... ld.64 */

	if (name[3] == 'i')
		return w == 1 ? (__u64)(__s64)(__s8)raw : w == 2 ? (__u64)(__s64)(__s16)raw
		     : (__u64)(__s64)(__s32)raw;
	return raw;
}

/* load-*: io = ext(in[8 - w .. 8]) + ext(io[0 .. w]); store-*: the low w
 * bytes of in go to io[8 - w .. 8], the rest of io stays. */
static int run_access(struct cad_tctx *t, unsigned int code, bool load)
{
	const unsigned int w = cad_vm_opcode_width(code);
	const struct cad_vm_insn lcode[] = {
		I(code, 0, 0, 0, 8 - w), I(code, 1, 1, 0, 0), I(CAD_VM_ADD, 2, 0, 1, 0),
		I(CAD_VM_ST_64, 0, 2, 0, 0), I(CAD_VM_EXIT, 0, 0, 0, 0),
	};
	const struct cad_vm_insn scode[] = {
		I(CAD_VM_LD_64, 0, 0, 0, 0), I(code, 0, 0, 0, 8 - w), I(CAD_VM_EXIT, 0, 0, 0, 0),
	};
	const __u64 count = 300;
	__u64 *in = cad_talloc(t, count * 8), *io = cad_talloc(t, count * 8);
	__u64 *orig = cad_talloc(t, count * 8), rng = 99 + code, i;
	struct cad_prog prog;

	T_CHECK(t, in && io && orig, "out of work memory");
	if (build(t, load ? lcode : scode, load ? 5 : 3, NULL, 0, 8, count, &prog))
		return -1;
	for (i = 0; i < count; i++) {
		in[i] = i < NS ? specials[i] : cad_trand(&rng);
		io[i] = orig[i] = i < NS ? specials[NS - 1 - i] : cad_trand(&rng);
	}
	cad_reduce(&prog, &prog.nodes[0], io, in, t->vm_scratch);
	for (i = 0; i < count; i++) {
		const __u64 mask = w == 8 ? ~0ull : (1ull << (8 * w)) - 1;
		__u64 want;

		if (load)
			want = extend(code, (in[i] >> (8 * (8 - w))) & mask, w) +
			       extend(code, orig[i] & mask, w);
		else
			want = (orig[i] & ~(mask << (8 * (8 - w)))) | ((in[i] & mask) << (8 * (8 - w)));
		T_CHECK(t, io[i] == want, "%s: element %llu is 0x%llx, expected 0x%llx",
			cad_vm_opcode_name(code), (unsigned long long)i,
			(unsigned long long)io[i], (unsigned long long)want);
	}
	return 0;
}

static void fill_words(__u8 *p, __u64 bytes, unsigned int which, __u64 *rng)
{
	__u64 k;

	for (k = 0; k * 8 < bytes; k++) {
		__u64 s = which ? k % NS : (k / NS) % NS, v;

		v = k < NS * NS && (k % 5) ? specials[s] : cad_trand(rng);
		cad_memcpy(p + k * 8, &v, bytes - k * 8 < 8 ? bytes - k * 8 : 8);
	}
}

static int check_prog(struct cad_tctx *t, unsigned int which, __u64 count, const __u8 *in,
		      const __u8 *orig, const __u8 *got)
{
	const struct cad_vm_prog_def *d = &cad_vm_progs[which];
	const __u64 bytes = count * d->elem_size;
	__u8 *want = cad_talloc(t, bytes);
	__u64 k, g = 0, w = 0, n;

	T_CHECK(t, want, "out of work memory");
	cad_memcpy(want, orig, (size_t)bytes);
	cad_fpu_begin();  /* one section: the reference and the comparison */
	cad_ref_vm_prog_fpu(which, want, in, count);
	for (k = 0; k < bytes; k += 8) {
		n = bytes - k < 8 ? bytes - k : 8;
		g = w = 0;
		cad_memcpy(&g, got + k, n);
		cad_memcpy(&w, want + k, n);
		if (g != w && !(d->fp_words && cad_ref_same_fpu(CAD_DT_DOUBLE, &g, &w)))
			break;
	}
	cad_fpu_end();
	if (k < bytes)
		return T_FAIL(t, "%s over %llu elements: byte %llu (element %llu) is 0x%llx, expected 0x%llx",
			      d->name, (unsigned long long)count, (unsigned long long)k,
			      (unsigned long long)(k / d->elem_size),
			      (unsigned long long)g, (unsigned long long)w);
	return 0;
}

/* in_place: the node reduces a range into itself (in and inout are the
 * same memory), so a store changes what later loads of in see. */
static int run_prog(struct cad_tctx *t, unsigned int which, __u64 count, bool in_place)
{
	const struct cad_vm_prog_def *d = &cad_vm_progs[which];
	const __u64 bytes = count * d->elem_size;
	__u8 *in = cad_talloc(t, bytes), *io = cad_talloc(t, bytes), *orig = cad_talloc(t, bytes);
	__u64 rng = 0xabcdef + which * 31 + count;
	struct cad_prog prog;

	T_CHECK(t, in && io && orig, "out of work memory");
	if (build_node(t, d->code, d->n_code, d->consts, d->n_consts, d->elem_size, count,
		       in_place, &prog))
		return -1;
	fill_words(in, bytes, 1, &rng);
	fill_words(io, bytes, 0, &rng);
	cad_memcpy(orig, io, (size_t)bytes);
	if (in_place) {
		cad_reduce(&prog, &prog.nodes[0], io, io, t->vm_scratch);
		return check_prog(t, which, count, orig, orig, io);
	}
	cad_reduce(&prog, &prog.nodes[0], io, in, t->vm_scratch);
	return check_prog(t, which, count, in, orig, io);
}

/* BRANCHY over blocks where every lane goes the same way: all in < 0, all
 * in > io, all neither. */
static int run_uniform(struct cad_tctx *t)
{
	const struct cad_vm_prog_def *d = &cad_vm_progs[CAD_VMP_BRANCHY];
	const __u64 count = 3 * CAD_VM_LANES;
	double *in = cad_talloc(t, count * 8), *io = cad_talloc(t, count * 8);
	double *orig = cad_talloc(t, count * 8);
	struct cad_prog prog;

	T_CHECK(t, in && io && orig, "out of work memory");
	if (build(t, d->code, d->n_code, d->consts, d->n_consts, 8, count, &prog))
		return -1;
	cad_fpu_begin();
	cad_ref_fill_uniform_fpu(in, io, count, CAD_VM_LANES);
	cad_fpu_end();
	cad_memcpy(orig, io, (size_t)(count * 8));
	cad_reduce(&prog, &prog.nodes[0], io, in, t->vm_scratch);
	return check_prog(t, CAD_VMP_BRANCHY, count, (const __u8 *)in, (const __u8 *)orig,
			  (const __u8 *)io);
}

static unsigned int vmcount(void)
{
	return N_UNBIN + N_LOAD + N_STORE + N_PROGS + 1;
}

static void vmname(unsigned int i, char *buf, size_t size)
{
	const char *kind = "op";
	int code = -1;
	unsigned int p;

	if (i < N_UNBIN) {
		code = nth(un_bin_ops, sizeof(un_bin_ops), i);
	} else if ((i -= N_UNBIN) < N_LOAD) {
		code = nth(load_ops, sizeof(load_ops), i);
		kind = "load";
	} else if ((i -= N_LOAD) < N_STORE) {
		code = nth(store_ops, sizeof(store_ops), i);
		kind = "store";
	} else if ((i -= N_STORE) < N_PROGS) {
		p = i / 2 / CAD_ARRAY_SIZE(prog_counts);
		cad_snprintf(buf, size, "prog-%s-%u%s", cad_vm_progs[p].name,
			     prog_counts[i / 2 % CAD_ARRAY_SIZE(prog_counts)],
			     i % 2 ? "-in-place" : "");
		return;
	} else {
		cad_snprintf(buf, size, "uniform-branches");
		return;
	}
	cad_snprintf(buf, size, "%s-%s", kind, cad_vm_opcode_name((unsigned int)code));
}

static int vmrun(unsigned int i, struct cad_tctx *t)
{
	if (i < N_UNBIN)
		return run_unbin(t, (unsigned int)nth(un_bin_ops, sizeof(un_bin_ops), i));
	if ((i -= N_UNBIN) < N_LOAD)
		return run_access(t, (unsigned int)nth(load_ops, sizeof(load_ops), i), true);
	if ((i -= N_LOAD) < N_STORE)
		return run_access(t, (unsigned int)nth(store_ops, sizeof(store_ops), i), false);
	if ((i -= N_STORE) < N_PROGS)
		return run_prog(t, i / 2 / CAD_ARRAY_SIZE(prog_counts),
				prog_counts[i / 2 % CAD_ARRAY_SIZE(prog_counts)], i % 2);
	return run_uniform(t);
}

const struct cad_tsuite cad_suite_vm = { "vm", vmcount, vmname, vmrun };
