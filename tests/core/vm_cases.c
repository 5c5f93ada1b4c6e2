// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm_cases.c - the reduction VM through verified programs and cad_reduce:
 *   op-*     every UN, BIN and CMP opcode on all pairs of special values, against
 *            the switch in ref_fpu.c;
 *   load-*, store-*   every access width at the edges of the element;
 *   prog-*   the hand-written operators of vm_progs.c against plain C, at
 *            counts around the block size (1, 63, 64, 65, 1000), also in
 *            place (the node reduces a range into itself);
 *   uniform-branches  blocks whose lanes all take the same path;
 *   narrow-*, wide-*  the 32-bit lane mode and programs just outside it,
 *            against a one-element reference interpreter (see below);
 *   dot2-*   the products a * b +- c * d that 64-bit lanes run as one loop,
 *            and the programs whose FMULs must not be deferred, against it;
 *   mac-*    x +- a * b and a * b +- x as one loop, in place too;
 *   spill-*  SPILL and FILL in every mode: narrow, wide with views, lane by
 *            lane after a divergent jump, around deferred products;
 *   nan-*    NaN payloads, quiet and signalling, through every mode: the
 *            first operand's NaN of two, as SSE gives it, bit for bit.
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
	/* NaNs with payloads: signalling of both signs, quiet */
	0x7ff0000000000001ull, 0xfff4000000000abcull, 0x7ff800000000deadull,
	/* floats in the low half: 1.5f, -0f, inf, NaN, 3e9f, 2^63f, 1e-45f;
	 * NaNs with payloads: signalling of both signs, quiet and negative */
	0x3fc00000, 0x80000000, 0x7f800000, 0x7fc00000, 0x4f32d05e, 0x5f000000, 0x00000001,
	0x7fa00001, 0xff800123, 0xffc00abc,
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
		if (io[i] != want)  /* NaNs too, bit for bit */
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

/* ------------------------------------------------------------------ */
/*
 * narrow-*, wide-*: the 32-bit lane mode of vm.c (narrow_plan) through
 * programs of the shapes it takes (no jumps, integer ops of its list, no
 * value that may exceed 32 bits read by a 64-bit consumer), and programs
 * just outside it (wide-*), which must keep the exact 64-bit semantics.
 * Every program runs at its element size and 3 bytes more (the lane loop
 * of an odd stride), at counts around the 256-lane block, apart and in
 * place, against ref_vm_elem: one element at a time, from
 * cad_ref_vm_op_fpu and the load, store, MOVI, LDK and SEL semantics of
 * uapi/cad.h, never from vm.c.
 */
#define LD(c, d, buf, off) I(CAD_VM_##c, d, buf, 0, off)   /* buf 0: in, 1: inout */
#define ST(c, r, off)      I(CAD_VM_##c, 0, r, 0, off)
#define OP(c, d, a, b)     I(CAD_VM_##c, d, a, b, 0)
#define UN(c, d, a)        I(CAD_VM_##c, d, a, 0, 0)
#define MOVI(d, k)         I(CAD_VM_MOVI, d, 0, 0, k)
#define LDK(d, k)          I(CAD_VM_LDK, d, 0, 0, k)
#define SEL(d, c, x, y)    I(CAD_VM_SEL, d, c, x, y)
#define SPILL(k, r)        I(CAD_VM_SPILL, 0, r, 0, k)
#define FILL(d, k)         I(CAD_VM_FILL, d, 0, 0, k)
#define EXIT               I(CAD_VM_EXIT, 0, 0, 0, 0)
#define NMAX_CODE 28

/* 32-bit halves of the elements: all pairs come in the first N32^2. */
static const __u32 edges32[] = {
	0, 1, 2, 31, 32, 33, 63, 64, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x10000,
	0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0xffff8000, 0xffffff80,
	0x80008080, 0xffff7fff,
};
#define N32 CAD_ARRAY_SIZE(edges32)
/* 2049: past the longest block of narrow mode (2048 lanes, for code using
 * at most 4 registers), and several blocks of shorter ones. */
static const __u32 narrow_counts[] = { 1, 63, 255, 256, 257, 1000, 2049 };

/* which 0 (in): element i has edges32[i % N32] in its low half; which 1
 * (inout): edges32[i / N32 % N32]; the high halves and the later chunks
 * of long elements cycle too; random values of any magnitude past N32^2. */
static void fill_edges(__u8 *p, __u64 count, __u32 esz, unsigned int which, __u64 *rng)
{
	__u64 i, c, v;

	for (i = 0; i < count; i++)
		for (c = 0; c * 8 < esz; c++) {
			if (i < N32 * N32) {
				const __u64 lo = which ? i / N32 % N32 : i % N32;
				const __u64 hi = which ? (i * 7 + c) % N32 : (i / N32 + 3 * c + 5) % N32;

				v = edges32[(lo + c * 11) % N32] | (__u64)edges32[hi] << 32;
			} else {
				v = cad_trand(rng);
				v = i & 1 ? (__u64)((__s64)v >> (v & 63)) : v >> (v & 63);
			}
			cad_memcpy(p + i * esz + c * 8, &v, esz - c * 8 < 8 ? esz - c * 8 : 8);
		}
}

/* The operator on one element pair, as uapi/cad.h defines it. */
static void ref_vm_elem(const struct cad_vm_insn *code, __u32 n, const __u64 *consts,
			__u8 *io, const __u8 *in)
{
	__u64 r[CAD_VM_NREGS] = { 0 }, slot[CAD_VM_NSLOTS] = { 0 };
	__u32 pc;

	for (pc = 0; pc < n; pc++) {
		const struct cad_vm_insn *x = &code[pc];
		const __u8 *p = x->a ? io : in;  /* a load's element, at x->imm */
		__u8 b8;
		__u16 b16;
		__u32 b32;
		__u64 b64;

		switch (x->code) {
		case CAD_VM_EXIT:
			return;
		case CAD_VM_JA:
			pc += (__u32)x->imm;
			break;
		case CAD_VM_JZ: case CAD_VM_JNZ:
			if ((r[x->a] != 0) == (x->code == CAD_VM_JNZ))
				pc += (__u32)x->imm;
			break;
		case CAD_VM_LD_I8:  cad_memcpy(&b8, p + x->imm, 1);  r[x->dst] = (__u64)(__s64)(__s8)b8; break;
		case CAD_VM_LD_U8:  cad_memcpy(&b8, p + x->imm, 1);  r[x->dst] = b8; break;
		case CAD_VM_LD_I16: cad_memcpy(&b16, p + x->imm, 2); r[x->dst] = (__u64)(__s64)(__s16)b16; break;
		case CAD_VM_LD_U16: cad_memcpy(&b16, p + x->imm, 2); r[x->dst] = b16; break;
		case CAD_VM_LD_I32: cad_memcpy(&b32, p + x->imm, 4); r[x->dst] = (__u64)(__s64)(__s32)b32; break;
		case CAD_VM_LD_U32: cad_memcpy(&b32, p + x->imm, 4); r[x->dst] = b32; break;
		case CAD_VM_LD_64:  cad_memcpy(&b64, p + x->imm, 8); r[x->dst] = b64; break;
		case CAD_VM_ST_8:  b8 = (__u8)r[x->a];   cad_memcpy(io + x->imm, &b8, 1);  break;
		case CAD_VM_ST_16: b16 = (__u16)r[x->a]; cad_memcpy(io + x->imm, &b16, 2); break;
		case CAD_VM_ST_32: b32 = (__u32)r[x->a]; cad_memcpy(io + x->imm, &b32, 4); break;
		case CAD_VM_ST_64: b64 = r[x->a];        cad_memcpy(io + x->imm, &b64, 8); break;
		case CAD_VM_MOVI:
			r[x->dst] = (__u64)(__s64)x->imm;
			break;
		case CAD_VM_LDK:
			r[x->dst] = consts[x->imm];
			break;
		case CAD_VM_SEL:
			r[x->dst] = r[x->a] ? r[x->b] : r[(__u32)x->imm];
			break;
		case CAD_VM_SPILL:
			slot[x->imm] = r[x->a];
			break;
		case CAD_VM_FILL:
			r[x->dst] = slot[x->imm];
			break;
		default:  /* UN, BIN, CMP */
			r[x->dst] = cad_ref_vm_op_fpu(x->code, r[x->a], r[x->b]);
			break;
		}
	}
}

/* The (up to) 8 bytes of an element's chunk at byte k of a buffer. */
static __u64 chunk_at(const __u8 *p, __u64 elem_start, __u64 elem_end, __u64 k)
{
	__u64 v = 0, at = k - (k - elem_start) % 8;

	cad_memcpy(&v, p + at, (size_t)(elem_end - at < 8 ? elem_end - at : 8));
	return v;
}

/* Floating-point operands: doubles, and floats in the low half of a zero
 * high half; NaNs of both kinds and signs, with payloads. */
static const __u64 fp_edges[] = {
	0, 0x8000000000000000ull, 0x3ff8000000000000ull, 0xc002000000000000ull,
	0x7ff0000000000000ull, 0xfff0000000000000ull, 0x0000000000000001ull,
	0x7fefffffffffffffull, 0x7ff8000000000000ull, 0xfff8000000000123ull,
	0x7ff800000000deadull, 0x7ff0000000000001ull, 0xfff4000000000abcull,
	0x7ff7ffffffffffffull,
	0x3fc00000, 0x80000000, 0x7f800000, 0xff800000, 0x00000001, 0x7fc00000,
	0xffc00abc, 0x7fc0dead, 0x7fa00001, 0xff800123,
};
#define NFP CAD_ARRAY_SIZE(fp_edges)

/* As fill_edges, for floating-point code: the 8-byte fields of in and
 * inout take all pairs of fp_edges in the first NFP^2 elements, then
 * random picks (or random bits). */
static void fill_fp(__u8 *p, __u64 count, __u32 esz, unsigned int which, __u64 *rng)
{
	__u64 i, c, v;

	for (i = 0; i < count; i++)
		for (c = 0; c * 8 < esz; c++) {
			if (i < NFP * NFP)
				v = fp_edges[(which ? i / NFP + 3 * c : i + 5 * c) % NFP];
			else if ((v = cad_trand(rng)) & 3)
				v = fp_edges[(v >> 2) % NFP];
			cad_memcpy(p + i * esz + c * 8, &v, esz - c * 8 < 8 ? esz - c * 8 : 8);
		}
}

/* One program at esz over count elements, apart or in place; fp: its
 * inputs from fp_edges (floating-point code).  Bit for bit, NaNs too. */
static int run_narrow_once(struct cad_tctx *t, const char *name, const struct cad_vm_insn *code,
			   __u32 n, const __u64 *consts, __u32 n_consts, __u32 esz, __u64 count,
			   bool in_place, bool fp)
{
	const __u64 bytes = count * esz, mark = t->work_used;
	__u8 *in = cad_talloc(t, bytes), *io = cad_talloc(t, bytes);
	__u8 *orig = cad_talloc(t, bytes), *want = cad_talloc(t, bytes);
	__u64 rng = 0x5eed + count * 131 + esz * 7 + in_place, i, k, s;
	struct cad_prog prog;

	T_CHECK(t, in && io && orig && want, "out of work memory");
	if (build_node(t, code, n, consts, n_consts, esz, count, in_place, &prog))
		return -1;
	(fp ? fill_fp : fill_edges)(in, count, esz, 0, &rng);
	(fp ? fill_fp : fill_edges)(io, count, esz, 1, &rng);
	cad_memcpy(orig, io, (size_t)bytes);
	cad_memcpy(want, io, (size_t)bytes);
	cad_reduce(&prog, &prog.nodes[0], io, in_place ? io : in, t->vm_scratch);
	cad_fpu_begin();  /* one section for the reference */
	for (i = 0; i < count; i++)
		ref_vm_elem(code, n, consts, want + i * esz, in_place ? want + i * esz : in + i * esz);
	cad_fpu_end();
	for (k = 0; k < bytes && io[k] == want[k]; k++)
		;
	if (k == bytes) {
		t->work_used = mark;
		return 0;
	}
	i = k / esz;
	s = i * esz;
	return T_FAIL(t, "%s, esz %u, %llu elements%s: element %llu, bytes from %llu: 0x%llx, "
		      "expected 0x%llx (inout was 0x%llx, in 0x%llx)", name, esz,
		      (unsigned long long)count, in_place ? " in place" : "",
		      (unsigned long long)i, (unsigned long long)(k - (k - s) % 8 - s),
		      (unsigned long long)chunk_at(io, s, s + esz, k),
		      (unsigned long long)chunk_at(want, s, s + esz, k),
		      (unsigned long long)chunk_at(orig, s, s + esz, k),
		      (unsigned long long)chunk_at(in_place ? orig : in, s, s + esz, k));
}

/* At esz and esz + 3, all counts, apart and in place. */
static int run_narrow_prog(struct cad_tctx *t, const char *name, const struct cad_vm_insn *code,
			   __u32 n, const __u64 *consts, __u32 n_consts, __u32 esz, bool fp)
{
	unsigned int e, c, p;

	for (e = 0; e < 2; e++)
		for (c = 0; c < CAD_ARRAY_SIZE(narrow_counts); c++)
			for (p = 0; p < 2; p++)
				if (run_narrow_once(t, name, code, n, consts, n_consts, esz + 3 * e,
						    narrow_counts[c], p, fp))
					return -1;
	return 0;
}

/* narrow-<op>: each op in three shapes:
 *   esz 8: ld.i16 r0,[in+0]; ld.i32 r1,[inout+0]; op r2,r1,r0; sext32 r2
 *          (when the op may carry past bit 31); st.64 [inout+0],r2
 *   esz 4: ld.i16 r0,[in+2]; ld.i32 r1,[inout+0]; op r2,r1,r0; st.32 [inout+0],r2
 *   esz 2: ld.i8 r0,[in+1]; ld.i16 r1,[inout+0]; op r2,r1,r0; st.16 [inout+0],r2
 * A unary op takes both: op r2,r1; op r3,r0; sub r2,r2,r3 (then as above).
 * A compare: at esz 8 the next SEL alone reads it (fused: op r4,r1,r0;
 * sel r2,r4,r1,r0), at esz 2 a SEL and an add read it, at esz 4 the store. */
static const __u8 narrow_ops[] = {
	CAD_VM_ADD, CAD_VM_SUB, CAD_VM_MUL, CAD_VM_SHL, CAD_VM_SHR_S, CAD_VM_SHR_U,
	CAD_VM_AND, CAD_VM_OR, CAD_VM_XOR,
	CAD_VM_EQ, CAD_VM_NE, CAD_VM_LT_S, CAD_VM_LE_S, CAD_VM_LT_U, CAD_VM_LE_U,
	CAD_VM_MOV, CAD_VM_NEG, CAD_VM_NOT, CAD_VM_SEXT8, CAD_VM_SEXT16, CAD_VM_SEXT32,
	CAD_VM_ZEXT8, CAD_VM_ZEXT16, CAD_VM_ZEXT32,
};
#define N_NOPS CAD_ARRAY_SIZE(narrow_ops)

static __u32 narrow_op_code(unsigned int op, __u32 esz, struct cad_vm_insn *c)
{
	const unsigned int fmt = cad_vm_opcode_format(op);
	__u32 n = 0;

	if (esz == 8) {
		c[n++] = (struct cad_vm_insn)LD(LD_I16, 0, 0, 0);
		c[n++] = (struct cad_vm_insn)LD(LD_I32, 1, 1, 0);
	} else if (esz == 4) {
		c[n++] = (struct cad_vm_insn)LD(LD_I16, 0, 0, 2);
		c[n++] = (struct cad_vm_insn)LD(LD_I32, 1, 1, 0);
	} else {
		c[n++] = (struct cad_vm_insn)LD(LD_I8, 0, 0, 1);
		c[n++] = (struct cad_vm_insn)LD(LD_I16, 1, 1, 0);
	}
	if (fmt == CAD_VMF_UN) {
		c[n++] = (struct cad_vm_insn)I(op, 2, 1, 0, 0);
		c[n++] = (struct cad_vm_insn)I(op, 3, 0, 0, 0);
		c[n++] = (struct cad_vm_insn)OP(SUB, 2, 2, 3);
	} else if (fmt == CAD_VMF_CMP && esz == 8) {
		c[n++] = (struct cad_vm_insn)I(op, 4, 1, 0, 0);
		c[n++] = (struct cad_vm_insn)SEL(2, 4, 1, 0);
	} else {
		c[n++] = (struct cad_vm_insn)I(op, 2, 1, 0, 0);
	}
	if (fmt == CAD_VMF_CMP && esz == 2) {
		c[n++] = (struct cad_vm_insn)SEL(3, 2, 0, 1);
		c[n++] = (struct cad_vm_insn)OP(ADD, 2, 3, 2);
	}
	if (esz == 8) {
		/* a result of more than 32 bits: only its low half goes to st.64 */
		if (fmt == CAD_VMF_UN || op == CAD_VM_ADD || op == CAD_VM_SUB ||
		    op == CAD_VM_MUL || op == CAD_VM_SHL || op == CAD_VM_SHR_U)
			c[n++] = (struct cad_vm_insn)UN(SEXT32, 2, 2);
		c[n++] = (struct cad_vm_insn)ST(ST_64, 2, 0);
	} else {
		c[n++] = esz == 4 ? (struct cad_vm_insn)ST(ST_32, 2, 0)
				  : (struct cad_vm_insn)ST(ST_16, 2, 0);
	}
	c[n++] = (struct cad_vm_insn)EXIT;
	return n;
}

static int run_narrow_op(struct cad_tctx *t, unsigned int op)
{
	static const __u32 eszs[] = { 8, 4, 2 };
	struct cad_vm_insn code[NMAX_CODE];
	unsigned int k;
	__u32 n;

	for (k = 0; k < CAD_ARRAY_SIZE(eszs); k++) {
		n = narrow_op_code(op, eszs[k], code);
		if (run_narrow_prog(t, cad_vm_opcode_name(op), code, n, NULL, 0, eszs[k], false))
			return -1;
	}
	return 0;
}

/* narrow-ld.<w>, at esz 16: ld r0,[in+16-w]; ld r1,[inout+0]; add r2,r0,r1;
 * sext32 r2; st.64 [inout+0],r2; then r0 itself (sext32 of it when it may
 * exceed 32 bits) to st.64 [inout+8].  At esz w < 8: ld r0,[in+0];
 * ld r1,[inout+0]; sub r2,r0,r1; a store of w bytes. */
static const __u8 narrow_loads[] = {
	CAD_VM_LD_I8, CAD_VM_LD_U8, CAD_VM_LD_I16, CAD_VM_LD_U16,
	CAD_VM_LD_I32, CAD_VM_LD_U32, CAD_VM_LD_64,
};
#define N_NLD CAD_ARRAY_SIZE(narrow_loads)

static int run_narrow_load(struct cad_tctx *t, unsigned int ld)
{
	const int w = (int)cad_vm_opcode_width(ld);
	const bool low = ld == CAD_VM_LD_U32 || ld == CAD_VM_LD_64;
	const __u8 st = w == 1 ? CAD_VM_ST_8 : w == 2 ? CAD_VM_ST_16 : CAD_VM_ST_32;
	const struct cad_vm_insn wide[] = {
		I(ld, 0, 0, 0, 16 - w), I(ld, 1, 1, 0, 0), OP(ADD, 2, 0, 1), UN(SEXT32, 2, 2),
		ST(ST_64, 2, 0), UN(SEXT32, 3, 0), ST(ST_64, low ? 3 : 0, 8), EXIT,
	};
	const struct cad_vm_insn narrow[] = {
		I(ld, 0, 0, 0, 0), I(ld, 1, 1, 0, 0), OP(SUB, 2, 0, 1), I(st, 0, 2, 0, 0), EXIT,
	};

	if (run_narrow_prog(t, cad_vm_opcode_name(ld), wide, CAD_ARRAY_SIZE(wide), NULL, 0, 16,
			    false))
		return -1;
	if (w == 8)
		return 0;
	return run_narrow_prog(t, cad_vm_opcode_name(ld), narrow, CAD_ARRAY_SIZE(narrow),
			       NULL, 0, (__u32)w, false);
}

/* narrow-st.<w>, at esz 8: ld.i32 r0,[in+4]; ld.i16 r1,[inout+0];
 * sub r2,r0,r1; sext32 r2; st [inout+8-w],r2 (the other bytes stay).  At
 * esz w < 8: loads of w bytes, mul r2,r0,r1 and the store alone. */
static const __u8 narrow_stores[] = { CAD_VM_ST_8, CAD_VM_ST_16, CAD_VM_ST_32, CAD_VM_ST_64 };
#define N_NST CAD_ARRAY_SIZE(narrow_stores)

static int run_narrow_store(struct cad_tctx *t, unsigned int st)
{
	const int w = (int)cad_vm_opcode_width(st);
	const __u8 ld = w == 1 ? CAD_VM_LD_I8 : w == 2 ? CAD_VM_LD_U16 : CAD_VM_LD_I32;
	const struct cad_vm_insn at8[] = {
		LD(LD_I32, 0, 0, 4), LD(LD_I16, 1, 1, 0), OP(SUB, 2, 0, 1), UN(SEXT32, 2, 2),
		I(st, 0, 2, 0, 8 - w), EXIT,
	};
	const struct cad_vm_insn alone[] = {
		I(ld, 0, 0, 0, 0), I(ld, 1, 1, 0, 0), OP(MUL, 2, 0, 1), I(st, 0, 2, 0, 0), EXIT,
	};

	if (run_narrow_prog(t, cad_vm_opcode_name(st), at8, CAD_ARRAY_SIZE(at8), NULL, 0, 8, false))
		return -1;
	if (w == 8)
		return 0;
	return run_narrow_prog(t, cad_vm_opcode_name(st), alone, CAD_ARRAY_SIZE(alone),
			       NULL, 0, (__u32)w, false);
}

/* Whole programs, in and out of narrow mode. */
struct narrow_prog {
	const char *name;
	__u32 elem_size;
	__u32 n_code;
	struct cad_vm_insn code[NMAX_CODE];
	__u32 n_consts;
	__u64 consts[4];
	bool fp;  /* floating point: see run_narrow_once */
};

#define NPROG(nm, esz, ...) { .name = nm, .elem_size = esz, \
	.n_code = CAD_ARRAY_SIZE(((const struct cad_vm_insn[]){ __VA_ARGS__ })), \
	.code = { __VA_ARGS__ } }
#define NPROGK(nm, esz, k0, k1, k2, k3, ...) { .name = nm, .elem_size = esz, \
	.n_code = CAD_ARRAY_SIZE(((const struct cad_vm_insn[]){ __VA_ARGS__ })), \
	.code = { __VA_ARGS__ }, .n_consts = 4, .consts = { k0, k1, k2, k3 } }
#define FPROG(nm, esz, ...) { .name = nm, .elem_size = esz, \
	.n_code = CAD_ARRAY_SIZE(((const struct cad_vm_insn[]){ __VA_ARGS__ })), \
	.code = { __VA_ARGS__ }, .fp = true }

static const struct narrow_prog narrow_progs[] = {
	/* narrow: MOVI of the 32-bit edges, into every op kind */
	NPROG("narrow-movi", 16,
	      LD(LD_I16, 0, 0, 0), MOVI(1, -2147483647 - 1), MOVI(2, 2147483647), MOVI(3, -1),
	      MOVI(4, 0xffff), MOVI(5, 0x8000), OP(ADD, 6, 0, 1), UN(SEXT32, 6, 6),
	      ST(ST_64, 6, 0), OP(AND, 7, 0, 4), OP(XOR, 7, 7, 2), ST(ST_32, 7, 8),
	      OP(MUL, 8, 0, 3), OP(LT_S, 9, 0, 5), OP(ADD, 8, 8, 9), ST(ST_16, 8, 12),
	      OP(LE_U, 10, 0, 1), ST(ST_8, 10, 14), OP(SUB, 11, 2, 0), ST(ST_8, 11, 15), EXIT),
	/* narrow: LDK of constants that fit 32 bits sign-extended */
	NPROGK("narrow-ldk", 16, 0x7fffffff, 0xffffffff80000000ull, 0xffff, ~0ull,
	       LD(LD_I32, 0, 0, 0), LD(LD_U16, 1, 1, 8), LDK(2, 0), LDK(3, 1), LDK(4, 2),
	       LDK(5, 3), OP(LT_S, 6, 0, 2), SEL(7, 6, 3, 0), ST(ST_64, 7, 0),
	       OP(XOR, 8, 1, 4), OP(MUL, 8, 8, 5), ST(ST_64, 8, 8), EXIT),
	/* narrow: SEL on an unfused compare and on a plain value */
	NPROG("narrow-sel", 16,
	      LD(LD_I16, 0, 0, 0), LD(LD_I32, 1, 1, 0), LD(LD_U8, 2, 0, 9),
	      OP(LT_U, 3, 1, 0), SEL(4, 3, 0, 1), OP(ADD, 5, 4, 3), UN(SEXT32, 5, 5),
	      ST(ST_64, 5, 0),
	      SEL(6, 0, 1, 2), ST(ST_64, 6, 8), EXIT),
	/* narrow: a compare fused with the SEL that overwrites an operand */
	NPROG("narrow-sel-fused-self", 8,
	      LD(LD_I32, 0, 0, 4), LD(LD_I32, 1, 1, 0), OP(LE_S, 2, 0, 1), SEL(0, 2, 1, 0),
	      ST(ST_64, 0, 0), EXIT),
	/* narrow: SEXT before a store no wider than it is skipped... */
	NPROG("narrow-sext-store", 8,
	      LD(LD_I32, 0, 0, 0), LD(LD_U32, 1, 1, 4), OP(ADD, 2, 0, 1), UN(SEXT16, 2, 2),
	      ST(ST_16, 2, 0), OP(MUL, 3, 0, 1), UN(SEXT8, 3, 3), ST(ST_8, 3, 2), EXIT),
	/* ... but not when the register is read again or the store is wider */
	NPROG("narrow-sext-reread", 8,
	      LD(LD_I32, 0, 0, 0), LD(LD_U32, 1, 1, 4), OP(ADD, 2, 0, 1), UN(SEXT16, 2, 2),
	      ST(ST_16, 2, 0), ST(ST_32, 2, 4), OP(SUB, 3, 0, 1), UN(SEXT8, 3, 3),
	      ST(ST_16, 3, 2), EXIT),
	/* narrow: SEXT and ZEXT of 64-bit loads, low halves only */
	NPROG("narrow-ext-ld64", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 8), UN(SEXT32, 2, 0), UN(ZEXT16, 3, 1),
	      OP(LT_S, 4, 2, 3), UN(SEXT8, 5, 1), OP(SHR_S, 6, 2, 1), OP(ADD, 6, 6, 4),
	      OP(SUB, 6, 6, 5), UN(SEXT32, 6, 6), ST(ST_64, 6, 0), UN(ZEXT8, 7, 0),
	      OP(SHL, 7, 7, 1),
	      UN(SEXT32, 7, 7), ST(ST_64, 7, 8), EXIT),
	/* narrow: SEXT of zero-extended values is no identity (0xffff, 0x80) */
	NPROG("narrow-zext-sext", 16,
	      LD(LD_I32, 1, 1, 0), UN(ZEXT16, 2, 1), UN(SEXT16, 2, 2), UN(ZEXT8, 3, 1),
	      UN(SEXT8, 3, 3), OP(ADD, 2, 2, 3), ST(ST_64, 2, 0), LD(LD_U8, 4, 0, 0),
	      UN(SEXT8, 4, 4), LD(LD_U16, 5, 0, 2), UN(SEXT16, 5, 5), OP(SUB, 4, 4, 5),
	      ST(ST_64, 4, 8), EXIT),
	/* narrow: a longer chain through every kind of op */
	NPROG("narrow-chain", 8,
	      LD(LD_U8, 0, 0, 0), LD(LD_I8, 1, 0, 1), LD(LD_U16, 2, 1, 0), LD(LD_I16, 3, 1, 2),
	      OP(MUL, 4, 0, 1), OP(MUL, 5, 2, 3), OP(ADD, 5, 5, 4), UN(SEXT32, 5, 5),
	      OP(XOR, 6, 5, 0), OP(SHR_S, 6, 6, 1), UN(NOT, 7, 6), OP(LE_S, 8, 7, 3),
	      SEL(9, 8, 7, 2), UN(NEG, 10, 9), UN(SEXT32, 10, 10), OP(OR, 10, 10, 8),
	      ST(ST_64, 10, 0), EXIT),
	/* wide: values that may exceed 32 bits reach st.64, a compare, a
	 * SEL condition or shr.s; or an op narrow mode lacks */
	NPROG("wide-add-u32", 8,
	      LD(LD_U32, 0, 0, 0), LD(LD_U32, 1, 1, 0), OP(ADD, 2, 0, 1), ST(ST_64, 2, 0), EXIT),
	NPROG("wide-add-i32", 8,
	      LD(LD_I32, 0, 0, 0), LD(LD_I32, 1, 1, 0), OP(ADD, 2, 0, 1), ST(ST_64, 2, 0), EXIT),
	NPROG("wide-sub-i32", 8,
	      LD(LD_I32, 0, 0, 4), LD(LD_I32, 1, 1, 0), OP(SUB, 2, 1, 0), ST(ST_64, 2, 0), EXIT),
	NPROG("wide-mul-i32", 8,
	      LD(LD_I32, 0, 0, 0), LD(LD_I32, 1, 1, 0), OP(MUL, 2, 0, 1), ST(ST_64, 2, 0), EXIT),
	NPROG("wide-mul-i16-u16", 8,
	      LD(LD_I16, 0, 0, 0), LD(LD_U16, 1, 1, 0), OP(MUL, 2, 0, 1), OP(MUL, 2, 2, 1),
	      ST(ST_64, 2, 0), EXIT),
	NPROG("wide-neg-i32", 8,
	      LD(LD_I32, 0, 1, 0), UN(NEG, 1, 0), ST(ST_64, 1, 0), EXIT),
	NPROG("wide-zext32", 8,
	      LD(LD_I32, 0, 1, 0), UN(ZEXT32, 1, 0), ST(ST_64, 1, 0), EXIT),
	NPROG("wide-shl", 8,
	      LD(LD_I16, 0, 0, 0), LD(LD_I32, 1, 1, 0), OP(SHL, 2, 1, 0), ST(ST_64, 2, 0), EXIT),
	NPROG("wide-movi-add", 8,
	      LD(LD_I16, 0, 0, 0), MOVI(1, 2147483647), OP(ADD, 2, 0, 1), ST(ST_64, 2, 0), EXIT),
	NPROGK("wide-ldk", 8, 0x100000001ull, 0x80000000, 0, 0,
	       LD(LD_I16, 0, 0, 0), LDK(1, 0), LDK(2, 1), OP(ADD, 3, 0, 1), OP(XOR, 3, 3, 2),
	       ST(ST_64, 3, 0), EXIT),
	NPROG("wide-and-add", 8,
	      LD(LD_I32, 0, 0, 0), LD(LD_I32, 1, 1, 0), OP(AND, 2, 0, 1), OP(ADD, 3, 2, 0),
	      ST(ST_64, 3, 0), EXIT),
	NPROG("wide-cmp-ld64", 8,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(LT_U, 2, 0, 1), OP(EQ, 3, 0, 1),
	      OP(ADD, 2, 2, 3), OP(SHL, 2, 2, 3), ST(ST_64, 2, 0), EXIT),
	NPROG("wide-cmp-u32", 8,
	      LD(LD_U32, 0, 0, 0), LD(LD_I32, 1, 1, 0), OP(LT_S, 2, 0, 1), SEL(3, 2, 0, 1),
	      UN(SEXT32, 3, 3), ST(ST_64, 3, 0), EXIT),
	NPROG("wide-sel-cond-ld64", 8,
	      LD(LD_64, 0, 0, 0), LD(LD_I32, 1, 1, 0), MOVI(2, 7), SEL(3, 0, 1, 2),
	      ST(ST_64, 3, 0), EXIT),
	NPROG("wide-shr-s-u32", 8,
	      LD(LD_U32, 0, 1, 0), LD(LD_I16, 1, 0, 0), OP(SHR_S, 2, 0, 1), UN(SEXT32, 2, 2),
	      ST(ST_64, 2, 0), EXIT),
	NPROG("wide-shr-u", 8,
	      LD(LD_I32, 0, 1, 0), LD(LD_I16, 1, 0, 0), OP(SHR_U, 2, 0, 1), ST(ST_64, 2, 0), EXIT),
	NPROG("wide-div", 8,
	      LD(LD_I16, 0, 0, 0), LD(LD_I32, 1, 1, 0), OP(DIV_S, 2, 1, 0), OP(MOD_U, 3, 1, 0),
	      OP(ADD, 2, 2, 3), UN(SEXT32, 2, 2), ST(ST_64, 2, 0), EXIT),
	/* wide (div.u) with the SEXTs narrow_plan marks as identities */
	NPROG("wide-sext-skips", 8,
	      LD(LD_I16, 0, 0, 0), LD(LD_I32, 1, 1, 0), OP(DIV_U, 2, 1, 0), UN(SEXT16, 0, 0),
	      OP(ADD, 3, 2, 0), ST(ST_32, 3, 4), UN(SEXT8, 3, 3), ST(ST_8, 3, 0), EXIT),
	/* narrow: cadc's int16 saturating add (4 registers: the longest rows) */
	NPROG("narrow-sat-add-i16", 2,
	      MOVI(0, -32768), MOVI(1, 32767), LD(LD_I16, 2, 0, 0), LD(LD_I16, 3, 1, 0),
	      OP(ADD, 2, 2, 3), OP(LT_S, 3, 1, 2), SEL(1, 3, 1, 2), OP(LT_S, 2, 1, 0),
	      SEL(0, 2, 0, 1), ST(ST_16, 0, 0), EXIT),
	/* narrow: nine distinct constants (one more than get rows of their
	 * own) and a repeated one, read by ops and by a store */
	NPROG("narrow-many-consts", 16,
	      LD(LD_I32, 0, 0, 0), MOVI(1, 1), MOVI(2, -2), MOVI(3, 3), MOVI(4, 0x7fff),
	      MOVI(5, 5), MOVI(6, 6), MOVI(7, -7), MOVI(8, 8), MOVI(9, 0x1234), MOVI(10, 3),
	      OP(ADD, 11, 0, 1), OP(MUL, 11, 11, 2), OP(SUB, 11, 11, 3), OP(XOR, 11, 11, 4),
	      ST(ST_32, 11, 0), OP(ADD, 12, 5, 6), OP(MUL, 12, 12, 7), OP(SUB, 12, 12, 8),
	      OP(ADD, 12, 12, 10), ST(ST_32, 12, 4), ST(ST_16, 9, 8), EXIT),
	/* narrow: all 16 registers (the shortest rows) */
	NPROG("narrow-16-regs", 8,
	      LD(LD_I8, 0, 0, 0), LD(LD_U8, 1, 1, 1), LD(LD_I16, 2, 0, 2), LD(LD_U16, 3, 1, 4),
	      OP(ADD, 4, 0, 1), OP(SUB, 5, 2, 3), OP(MUL, 6, 0, 3), OP(XOR, 7, 1, 2),
	      OP(LT_S, 8, 4, 5), OP(AND, 9, 6, 7), UN(NEG, 10, 4), OP(OR, 11, 5, 9),
	      SEL(12, 8, 10, 11), OP(ADD, 13, 12, 6), UN(NOT, 14, 13), OP(SUB, 15, 14, 7),
	      UN(SEXT32, 15, 15), ST(ST_64, 15, 0), EXIT),
	/* dot2: cadc's complex multiply; the first store overwrites a field
	 * the second product still reads */
	FPROG("dot2-complex-mul", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FMUL, 2, 0, 1), LD(LD_64, 3, 0, 8),
	      LD(LD_64, 4, 1, 8), OP(FMUL, 5, 3, 4), OP(FSUB, 2, 2, 5), ST(ST_64, 2, 0),
	      OP(FMUL, 0, 0, 4), OP(FMUL, 1, 3, 1), OP(FADD, 0, 0, 1), ST(ST_64, 0, 8), EXIT),
	/* pairs of stored products (run_pair): the complex product with its
	 * imaginary part first; its sum's products in the other order (not
	 * the complex loop's); a field the pair overwrites read after it (the
	 * two run apart); 24-byte elements */
	FPROG("pair-im-first", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), LD(LD_64, 3, 0, 8), LD(LD_64, 4, 1, 8),
	      OP(FMUL, 5, 0, 4), OP(FMUL, 6, 3, 1), OP(FADD, 7, 5, 6), ST(ST_64, 7, 8),
	      OP(FMUL, 8, 0, 1), OP(FMUL, 9, 3, 4), OP(FSUB, 10, 8, 9), ST(ST_64, 10, 0), EXIT),
	FPROG("pair-other-order", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FMUL, 2, 0, 1), LD(LD_64, 3, 0, 8),
	      LD(LD_64, 4, 1, 8), OP(FMUL, 5, 3, 4), OP(FSUB, 2, 2, 5), ST(ST_64, 2, 0),
	      OP(FMUL, 0, 0, 4), OP(FMUL, 1, 3, 1), OP(FADD, 0, 1, 0), ST(ST_64, 0, 8), EXIT),
	FPROG("pair-not-complex", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FMUL, 2, 0, 1), LD(LD_64, 3, 0, 8),
	      LD(LD_64, 4, 1, 8), OP(FMUL, 5, 3, 4), OP(FSUB, 2, 2, 5), ST(ST_64, 2, 0),
	      OP(FMUL, 6, 0, 4), OP(FMUL, 7, 3, 0), OP(FADD, 6, 6, 7), ST(ST_64, 6, 8), EXIT),
	FPROG("pair-field-kept", 24,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FMUL, 2, 0, 1), LD(LD_64, 3, 0, 8),
	      LD(LD_64, 4, 1, 8), OP(FMUL, 5, 3, 4), OP(FSUB, 2, 2, 5), ST(ST_64, 2, 0),
	      OP(FMUL, 6, 0, 4), OP(FMUL, 7, 3, 1), OP(FADD, 6, 6, 7), ST(ST_64, 6, 8),
	      ST(ST_64, 1, 16), EXIT),
	/* dot2: products of computed values (own lanes), the sum kept in a
	 * register that is read again, the products' operands read after */
	FPROG("dot2-own-lanes", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), LD(LD_64, 2, 0, 8), LD(LD_64, 3, 1, 8),
	      OP(FADD, 4, 0, 1), OP(FSUB, 5, 2, 3), OP(FMUL, 6, 4, 5), OP(FMUL, 7, 5, 5),
	      OP(FSUB, 8, 7, 6), OP(FADD, 9, 8, 4), ST(ST_64, 9, 0), OP(FMUL, 10, 8, 5),
	      ST(ST_64, 10, 8), EXIT),
	/* not fused: a product read twice; an operand written in between; a
	 * store in between that overwrites an operand's field */
	FPROG("dot2-product-reread", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FMUL, 2, 0, 1), OP(FMUL, 3, 1, 1),
	      OP(FADD, 4, 2, 3), ST(ST_64, 4, 0), ST(ST_64, 2, 8), EXIT),
	FPROG("dot2-operand-written", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FMUL, 2, 0, 1), LD(LD_64, 0, 1, 8),
	      OP(FMUL, 3, 0, 1), OP(FSUB, 4, 3, 2), ST(ST_64, 4, 8), EXIT),
	FPROG("dot2-store-between", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), LD(LD_64, 5, 0, 8), OP(FMUL, 2, 0, 1),
	      ST(ST_64, 5, 0), OP(FMUL, 3, 5, 1), OP(FADD, 4, 2, 3), ST(ST_64, 4, 8), EXIT),
	/* liveness through a jump: the sum stored at inout+0 is stored again
	 * on the path that jumps over the MOVI overwriting it, so it must
	 * stay in its register (not only go straight into inout) */
	FPROG("live-jump-target", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FADD, 2, 0, 1), ST(ST_64, 2, 0),
	      OP(FLT, 3, 0, 1), I(CAD_VM_JNZ, 0, 3, 0, 1), MOVI(2, 7), ST(ST_64, 2, 8), EXIT),
	/* not fused: code with jumps; here one skips a product that its
	 * reader would otherwise compute (blocks of one element go one way) */
	FPROG("dot2-jump", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FSUB, 2, 0, 1), OP(FLT, 6, 0, 1),
	      I(CAD_VM_JZ, 0, 6, 0, 1), OP(FMUL, 2, 0, 1), OP(FMUL, 3, 1, 1),
	      OP(FADD, 4, 2, 3), ST(ST_64, 4, 0), EXIT),
	/* spill, narrow: slots of narrow values (one W_LOW), the same slot
	 * written twice, s63 (the shortest slot rows), a FILL that stores the
	 * whole element at once */
	NPROG("spill-narrow", 4,
	      LD(LD_I32, 0, 0, 0), LD(LD_I32, 1, 1, 0), SPILL(63, 0), OP(MUL, 0, 0, 1),
	      SPILL(1, 0), MOVI(0, 3), OP(ADD, 1, 1, 0), FILL(2, 1), OP(XOR, 1, 1, 2),
	      FILL(3, 63), OP(ADD, 1, 1, 3), SPILL(1, 1), FILL(0, 63), OP(SUB, 0, 0, 1),
	      SPILL(0, 0), FILL(4, 0), ST(ST_32, 4, 0), EXIT),
	NPROG("spill-narrow-fields", 16,
	      LD(LD_I16, 0, 0, 0), LD(LD_I32, 1, 1, 4), SPILL(5, 0), SPILL(6, 1),
	      OP(LT_S, 2, 0, 1), SEL(0, 2, 0, 1), FILL(3, 5), FILL(4, 6), OP(SUB, 3, 3, 4),
	      UN(SEXT32, 3, 3), ST(ST_64, 3, 0), ST(ST_32, 0, 8), FILL(1, 6), ST(ST_16, 1, 12),
	      EXIT),
	/* spill, wide: from views (the field under one then overwritten), a
	 * FILL stored at once and one kept, a slot rewritten */
	NPROG("spill-wide-views", 16,
	      LD(LD_64, 0, 1, 0), SPILL(7, 0), LD(LD_64, 1, 0, 8), ST(ST_64, 1, 0),
	      FILL(2, 7), ST(ST_64, 2, 8), LD(LD_64, 3, 1, 0), SPILL(7, 3), FILL(4, 7),
	      OP(ADD, 5, 4, 2), ST(ST_64, 5, 0), EXIT),
	NPROG("spill-wide-in-place", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 8), SPILL(0, 0), SPILL(1, 1), MOVI(0, 9),
	      ST(ST_64, 0, 0), ST(ST_64, 0, 8), FILL(2, 1), FILL(3, 0), OP(SUB, 4, 2, 3),
	      ST(ST_64, 4, 0), FILL(5, 0), ST(ST_64, 5, 8), EXIT),
	/* spill, jumps: slots written on both paths of a divergent jump (lane
	 * by lane from there), one written before it and read after */
	NPROG("spill-jumps", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), SPILL(60, 1), OP(LT_U, 2, 0, 1),
	      I(CAD_VM_JZ, 0, 2, 0, 2), SPILL(3, 0), I(CAD_VM_JA, 0, 0, 0, 1), SPILL(3, 1),
	      MOVI(1, 0), FILL(4, 3), ST(ST_64, 4, 0), FILL(5, 60), OP(XOR, 5, 5, 4),
	      ST(ST_64, 5, 8), EXIT),
	/* spill, products: a SPILL reads a product (not deferred), a FILL
	 * gives a product's operand, a FILL overwrites the operand of a
	 * pending product (not deferred either) */
	FPROG("spill-dot2", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FMUL, 2, 0, 1), SPILL(2, 2),
	      LD(LD_64, 3, 0, 8), OP(FMUL, 4, 3, 1), OP(FADD, 5, 2, 4), ST(ST_64, 5, 0),
	      FILL(6, 2), OP(FMUL, 7, 6, 0), OP(FMUL, 8, 1, 3), OP(FSUB, 9, 7, 8),
	      ST(ST_64, 9, 8), EXIT),
	FPROG("spill-dot2-operand-filled", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 8), SPILL(9, 1), LD(LD_64, 1, 1, 0),
	      OP(FMUL, 2, 0, 1), FILL(0, 9), OP(FMUL, 3, 0, 1), OP(FADD, 4, 2, 3),
	      ST(ST_64, 4, 8), EXIT),
	/* nan: every binary float op of two loaded fields (views) stored at
	 * once, and of copies in their own lanes kept in registers */
	FPROG("nan-views", 64,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), OP(FADD, 2, 0, 1), ST(ST_64, 2, 16),
	      OP(FMUL, 3, 1, 0), ST(ST_64, 3, 24), OP(FSUB, 4, 0, 1), ST(ST_64, 4, 32),
	      OP(FDIV, 5, 1, 0), ST(ST_64, 5, 40), OP(FMIN, 6, 0, 1), ST(ST_64, 6, 48),
	      OP(FMAX, 7, 1, 0), ST(ST_64, 7, 56), LD(LD_U32, 8, 0, 8), LD(LD_U32, 9, 1, 8),
	      OP(SADD, 10, 8, 9), OP(SMUL, 11, 9, 8), OP(SMIN, 12, 8, 9), OP(SMAX, 13, 9, 8),
	      ST(ST_32, 10, 0), ST(ST_32, 11, 4), ST(ST_32, 12, 8), ST(ST_32, 13, 12), EXIT),
	FPROG("nan-own-lanes", 48,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), UN(MOV, 2, 0), UN(MOV, 3, 1),
	      OP(FADD, 4, 2, 3), OP(FMUL, 5, 3, 2), OP(FSUB, 6, 2, 3), OP(FMIN, 7, 3, 2),
	      OP(FMAX, 8, 2, 3), UN(FSQRT, 9, 2), UN(CVT_F32_F64, 10, 3), UN(CVT_F64_F32, 11, 2),
	      ST(ST_64, 4, 0), ST(ST_64, 5, 8), ST(ST_64, 6, 16), ST(ST_64, 7, 24),
	      OP(FADD, 7, 8, 9), ST(ST_64, 7, 32), UN(SSQRT, 12, 2), OP(SSUB, 12, 12, 10),
	      ST(ST_32, 12, 40), ST(ST_32, 11, 44), EXIT),
	/* nan: lane by lane, after a divergent jump (fp_edges has zeros) */
	FPROG("nan-lanes", 48,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), LD(LD_64, 2, 0, 8),
	      I(CAD_VM_JNZ, 0, 2, 0, 0), OP(FADD, 3, 0, 1), OP(FMUL, 4, 1, 0), OP(FMIN, 5, 0, 1),
	      OP(FMAX, 6, 1, 0), OP(SADD, 7, 1, 0), OP(SMUL, 8, 0, 1), ST(ST_64, 3, 0),
	      ST(ST_64, 4, 8), ST(ST_64, 5, 16), ST(ST_64, 6, 24), ST(ST_64, 7, 32),
	      ST(ST_64, 8, 40), EXIT),
	/* nan: (a * b) +- (c * d) as one loop, the products of NaN pairs */
	FPROG("nan-dot2", 32,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), LD(LD_64, 2, 0, 8), LD(LD_64, 3, 1, 8),
	      OP(FMUL, 4, 0, 1), OP(FMUL, 5, 3, 2), OP(FADD, 6, 4, 5), ST(ST_64, 6, 16),
	      OP(FMUL, 4, 1, 0), OP(FMUL, 5, 2, 3), OP(FSUB, 6, 5, 4), ST(ST_64, 6, 24), EXIT),
	/* mac: x +- (a * b) and (a * b) +- x as one loop, of views and of
	 * own lanes, stored at once or kept */
	FPROG("mac-views", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), LD(LD_64, 2, 0, 8), OP(FMUL, 3, 1, 2),
	      OP(FADD, 4, 0, 3), OP(FMUL, 5, 2, 0), OP(FSUB, 6, 5, 1), ST(ST_64, 6, 8),
	      ST(ST_64, 4, 0), EXIT),
	FPROG("mac-own-lanes", 24,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), UN(MOV, 2, 0), UN(MOV, 3, 1),
	      OP(FMUL, 4, 2, 3), OP(FSUB, 5, 3, 4), OP(FMUL, 6, 5, 2), OP(FADD, 7, 6, 3),
	      ST(ST_64, 7, 0), ST(ST_64, 5, 8), ST(ST_64, 4, 16), EXIT),
	/* mac, in place: the result overwrites the register operand, the
	 * product's register, a product operand (checked first, then plain) */
	FPROG("mac-in-place", 24,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), UN(MOV, 2, 0), UN(MOV, 3, 1),
	      OP(FMUL, 4, 0, 1), OP(FADD, 2, 2, 4), ST(ST_64, 2, 0), OP(FMUL, 5, 3, 0),
	      OP(FSUB, 5, 1, 5), ST(ST_64, 5, 8), OP(FMUL, 6, 3, 2), OP(FSUB, 3, 6, 3),
	      ST(ST_64, 3, 16), EXIT),
	/* mac: a chain over 128-byte elements (loads copied to lanes), the
	 * last sum stored at once with the element's stride */
	FPROG("mac-chain-128", 128,
	      MOVI(0, 0), LD(LD_64, 1, 0, 0), LD(LD_64, 2, 1, 0), OP(FMUL, 3, 1, 2),
	      OP(FADD, 4, 0, 3), LD(LD_64, 1, 0, 8), LD(LD_64, 2, 1, 32), OP(FMUL, 3, 1, 2),
	      OP(FADD, 5, 4, 3), LD(LD_64, 1, 0, 16), LD(LD_64, 2, 1, 64), OP(FMUL, 3, 1, 2),
	      OP(FADD, 4, 5, 3), LD(LD_64, 1, 0, 24), LD(LD_64, 2, 1, 96), OP(FMUL, 3, 1, 2),
	      OP(FADD, 5, 4, 3), ST(ST_64, 5, 120), LD(LD_64, 6, 1, 8), OP(FMUL, 7, 6, 6),
	      OP(FSUB, 6, 6, 7), ST(ST_64, 6, 8), EXIT),
	/* in place: a binary float op over its first operand (operands
	 * checked first), in 64-bit lanes and in floats */
	FPROG("nan-in-place", 16,
	      LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), UN(MOV, 2, 0), OP(FADD, 2, 2, 1),
	      OP(FDIV, 2, 2, 0), ST(ST_64, 2, 0), LD(LD_U32, 3, 0, 8), LD(LD_U32, 4, 1, 8),
	      OP(SMUL, 3, 3, 4), OP(SSUB, 3, 3, 4), ST(ST_32, 3, 8), EXIT),
};
#define N_NPROGS CAD_ARRAY_SIZE(narrow_progs)

static int run_narrow_named(struct cad_tctx *t, unsigned int i)
{
	const struct narrow_prog *p = &narrow_progs[i];

	return run_narrow_prog(t, p->name, p->code, p->n_code, p->n_consts ? p->consts : NULL,
			       p->n_consts, p->elem_size, p->fp);
}

/*
 * fuse-*: the passes vm.c fuses, in every shape, against ref_vm_elem:
 *   fuse-ldop-<ld>   ld.K r0,[in]; ld.K r1,[inout]; OP r2 (r0, r1 in both
 *                    orders) for the six ring ops, with the store of the
 *                    whole element after it or a value between them;
 *   fuse-minmax-<cmp>  cmp t,a,b; sel d,t,a,b and sel d,t,b,a (a min or a
 *                    max) for every compare, on fields of 16-byte
 *                    elements (views with their stride, 64-bit lanes), of
 *                    8-byte ones and, for the integer compares, on
 *                    narrow values, stored or kept in a register.
 */
static const __u8 fuse_loads[] = {
	CAD_VM_LD_I8, CAD_VM_LD_U8, CAD_VM_LD_I16, CAD_VM_LD_U16, CAD_VM_LD_I32, CAD_VM_LD_U32,
};
#define N_FLD CAD_ARRAY_SIZE(fuse_loads)
static const __u8 fuse_ring_ops[] = {
	CAD_VM_ADD, CAD_VM_SUB, CAD_VM_MUL, CAD_VM_AND, CAD_VM_OR, CAD_VM_XOR,
};
static const __u8 fuse_cmps[] = {
	CAD_VM_EQ, CAD_VM_NE, CAD_VM_LT_S, CAD_VM_LE_S, CAD_VM_LT_U, CAD_VM_LE_U,
	CAD_VM_FEQ, CAD_VM_FNE, CAD_VM_FLT, CAD_VM_FLE,
	CAD_VM_SEQ, CAD_VM_SNE, CAD_VM_SLT, CAD_VM_SLE,
};
#define N_FCMP CAD_ARRAY_SIZE(fuse_cmps)

static int run_fuse_ldop(struct cad_tctx *t, unsigned int ld)
{
	const __u32 w = cad_vm_opcode_width(ld);
	const __u8 st = w == 1 ? CAD_VM_ST_8 : w == 2 ? CAD_VM_ST_16 : CAD_VM_ST_32;
	unsigned int k, order, between;

	for (k = 0; k < CAD_ARRAY_SIZE(fuse_ring_ops); k++)
		for (order = 0; order < 2; order++)
			for (between = 0; between < 2; between++) {
				struct cad_vm_insn c[8];
				__u32 n = 0;

				c[n++] = (struct cad_vm_insn)I(ld, 0, 0, 0, 0);
				c[n++] = (struct cad_vm_insn)I(ld, 1, 1, 0, 0);
				c[n++] = (struct cad_vm_insn)I(fuse_ring_ops[k], order ? 1 : 2,
							       order ? 1 : 0, order ? 0 : 1, 0);
				if (between)  /* the store no longer follows the op */
					c[n++] = (struct cad_vm_insn)MOVI(3, 5);
				c[n++] = (struct cad_vm_insn)I(st, 0, order ? 1 : 2, 0, 0);
				c[n++] = (struct cad_vm_insn)EXIT;
				if (run_narrow_prog(t, cad_vm_opcode_name(fuse_ring_ops[k]), c, n,
						    NULL, 0, w, false))
					return -1;
			}
	return 0;
}

static int run_fuse_minmax(struct cad_tctx *t, unsigned int cmp)
{
	const bool fp = cmp >= CAD_VM_FEQ;
	unsigned int shape;

	for (shape = 0; shape < 2; shape++) {
		const __u8 x = shape ? 1 : 0, y = shape ? 0 : 1;
		/* fields of 16-byte elements, the result into the field that
		 * one operand is a view of, then kept and stored again */
		const struct cad_vm_insn wide16[] = {
			LD(LD_64, 0, 0, 8), LD(LD_64, 1, 1, 0), I(cmp, 2, 0, 1, 0), SEL(3, 2, x, y),
			ST(ST_64, 3, 0), I(cmp, 4, 1, 0, 0), SEL(5, 4, y, x), ST(ST_64, 5, 8),
			ST(ST_64, 3, 8), EXIT,
		};
		/* whole 8-byte elements, the result stored at once */
		const struct cad_vm_insn wide8[] = {
			LD(LD_64, 0, 0, 0), LD(LD_64, 1, 1, 0), I(cmp, 2, 0, 1, 0), SEL(3, 2, x, y),
			ST(ST_64, 3, 0), EXIT,
		};
		/* narrow values: 16-bit elements stored at once, then a
		 * constant operand whose register is overwritten */
		const struct cad_vm_insn narrow2[] = {
			LD(LD_I16, 0, 0, 0), LD(LD_I16, 1, 1, 0), I(cmp, 2, 0, 1, 0),
			SEL(3, 2, x, y), ST(ST_16, 3, 0), EXIT,
		};
		const struct cad_vm_insn narrowk[] = {
			MOVI(0, -77), LD(LD_I32, 1, 1, 0), I(cmp, 2, shape ? 1 : 0, shape ? 0 : 1, 0),
			SEL(0, 2, 0, 1), OP(ADD, 3, 0, 1), UN(SEXT32, 3, 3), ST(ST_64, 3, 0),
			MOVI(0, 1000), I(cmp, 2, 1, 0, 0), SEL(1, 2, 1, 0), ST(ST_32, 1, 8), EXIT,
		};
		const char *name = cad_vm_opcode_name(cmp);

		if (run_narrow_prog(t, name, wide16, CAD_ARRAY_SIZE(wide16), NULL, 0, 16, fp) ||
		    run_narrow_prog(t, name, wide8, CAD_ARRAY_SIZE(wide8), NULL, 0, 8, fp))
			return -1;
		if (!fp && (run_narrow_prog(t, name, narrow2, CAD_ARRAY_SIZE(narrow2), NULL, 0, 2,
					    false) ||
			    run_narrow_prog(t, name, narrowk, CAD_ARRAY_SIZE(narrowk), NULL, 0, 16,
					    false)))
			return -1;
	}
	return 0;
}

#define N_FUSE (N_FLD + N_FCMP)

static void fuse_name(unsigned int i, char *buf, size_t size)
{
	if (i < N_FLD)
		cad_snprintf(buf, size, "fuse-ldop-%s", cad_vm_opcode_name(fuse_loads[i]));
	else
		cad_snprintf(buf, size, "fuse-minmax-%s", cad_vm_opcode_name(fuse_cmps[i - N_FLD]));
}

static int fuse_run(unsigned int i, struct cad_tctx *t)
{
	if (i < N_FLD)
		return run_fuse_ldop(t, fuse_loads[i]);
	return run_fuse_minmax(t, fuse_cmps[i - N_FLD]);
}

#define N_NARROW (N_NOPS + N_NLD + N_NST + N_NPROGS + N_FUSE)

static void narrow_name(unsigned int i, char *buf, size_t size)
{
	const char *op;

	if (i < N_NOPS)
		op = cad_vm_opcode_name(narrow_ops[i]);
	else if ((i -= N_NOPS) < N_NLD)
		op = cad_vm_opcode_name(narrow_loads[i]);
	else if ((i -= N_NLD) < N_NST)
		op = cad_vm_opcode_name(narrow_stores[i]);
	else if ((i -= N_NST) < N_NPROGS) {
		cad_snprintf(buf, size, "%s", narrow_progs[i].name);
		return;
	} else {
		fuse_name(i - N_NPROGS, buf, size);
		return;
	}
	cad_snprintf(buf, size, "narrow-%s", op);
}

static int narrow_run(unsigned int i, struct cad_tctx *t)
{
	if (i < N_NOPS)
		return run_narrow_op(t, narrow_ops[i]);
	if ((i -= N_NOPS) < N_NLD)
		return run_narrow_load(t, narrow_loads[i]);
	if ((i -= N_NLD) < N_NST)
		return run_narrow_store(t, narrow_stores[i]);
	if ((i -= N_NST) < N_NPROGS)
		return run_narrow_named(t, i);
	return fuse_run(i - N_NPROGS, t);
}

static unsigned int vmcount(void)
{
	return N_UNBIN + N_LOAD + N_STORE + N_PROGS + 1 + N_NARROW;
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
	} else if ((i -= N_PROGS) == 0) {
		cad_snprintf(buf, size, "uniform-branches");
		return;
	} else {
		narrow_name(i - 1, buf, size);
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
	if ((i -= N_PROGS) == 0)
		return run_uniform(t);
	return narrow_run(i - 1, t);
}

const struct cad_tsuite cad_suite_vm = { "vm", vmcount, vmname, vmrun };
