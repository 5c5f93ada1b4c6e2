// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm.c - the reduction VM interpreter for user-defined operators.
 *
 * It runs verified code only (cad_vm_verify_op is the gate): an unknown
 * opcode here is a bug.  Compiled with floating point enabled: in the
 * kernel, call only between cad_fpu_begin() and cad_fpu_end().
 *
 * Elements are processed in blocks of CAD_VM_LANES: each instruction runs
 * over the whole block before the next one, so one dispatch serves many
 * elements and the per-instruction loops vectorise.  Registers and spill
 * slots are lane arrays in the caller's scratch (no large stack frame,
 * kernel-safe).  A conditional jump that goes the same way for every lane
 * of the block stays in block mode; a divergent one finishes the block
 * lane by lane from that jump.  Both modes expand the same per-opcode
 * semantics (vm_sem.h).  Integer code whose values fit 32 bits runs on
 * 32-bit lanes in longer blocks (narrow mode, vm_narrow.c); in 64-bit
 * lanes, a * b +- c * d runs as one loop (dot2_plan).  The plans are made
 * once per call, from the code (vm_plan.c); vm_priv.h has what the files
 * share.
 *
 * The lane loops are marked CAD_IVDEP: register lanes are separate arrays,
 * a view starts at its block's first element with the lanes' stride, the
 * verifier rejects partially overlapping source and destination ranges,
 * and the buffers bound to a program must not overlap (the kernel module
 * and cadrt refuse overlapping buffers).  So any two arrays of a loop are
 * the same or disjoint.
 */
#include "vm_sem.h"

/* One lane, from pc to EXIT. */
static void run_lane(const struct vm_env *e, __u32 pc, __u32 l)
{
	__u8 *io = e->io + (__u64)l * e->esz;
	const __u8 *ip = e->ip + (__u64)l * e->esz;
	__u64 (*R)[LANES] = e->R;

#define L_EXIT(name, w)   return
#define L_JA(name, w)     pc += in->imm
#define L_JCOND(name, w)  if ((R[in->a][l] == 0) == (CAD_VM_##name == CAD_VM_JZ)) \
				  pc += in->imm
#define L_LD(name, w)     R[in->dst][l] = LOAD_##name((in->a ? io : ip) + in->imm)
#define L_ST(name, w)     STORE_##name(io + in->imm, R[in->a][l])
#define L_MOVI(name, w)   R[in->dst][l] = (__u64)(__s64)in->imm
#define L_LDK(name, w)    R[in->dst][l] = e->consts[in->imm]
#define L_UN(name, w)     R[in->dst][l] = SEM_##name(R[in->a][l], 0)
#define L_BIN(name, w)    R[in->dst][l] = SEM_##name(R[in->a][l], R[in->b][l])
#define L_CMP(name, w)    L_BIN(name, w)
#define L_SEL(name, w)    R[in->dst][l] = R[in->a][l] ? R[in->b][l] : R[in->imm][l]
#define L_SPILL(name, w)  e->S[in->imm][l] = R[in->a][l]
#define L_FILL(name, w)   R[in->dst][l] = e->S[in->imm][l]
	for (;; pc++) {
		const struct cad_vm_insn *in = &e->code[pc];

		switch (in->code) {
#define L_CASE(name, value, fmt, width, str) \
		case CAD_VM_##name: L_##fmt(name, width); break;
		CAD_VM_OPCODES(L_CASE)
#undef L_CASE
		default:
			return;  /* unreachable for verified code */
		}
	}
}

/* Register r read through a view: lane l of it. */
#define AT(P, s, l) (*(const u64_u *)((P) + (__u64)(l) * (s)))

/* The register state of a block in 64-bit lanes: where each register is
 * read (its own lanes, stride 8, or a view of element memory, stride esz,
 * at byte off of the element) and which registers are views. */
struct regs {
	const __u8 *p[CAD_VM_NREGS];
	__u32 s[CAD_VM_NREGS];
	__s32 off[CAD_VM_NREGS];
	__u32 io_views, in_views;
};

/* Register r is read from its own lanes again: it stops being a view. */
static inline void own_lanes(__u64 (*R)[LANES], struct regs *g, __u32 r)
{
	g->p[r] = (const __u8 *)R[r];
	g->s[r] = 8;
	g->io_views &= ~(1u << r);
	g->in_views &= ~(1u << r);
}

/* Copy the views in mask into their registers' own lanes. */
static void materialise(__u64 (*R)[LANES], struct regs *g, __u32 *views, __u32 mask, __u32 n)
{
	__u32 r, l;

	if (!(*views & mask))
		return;
	for (r = 0; r < CAD_VM_NREGS; r++) {
		const __u8 *p = g->p[r];
		const __u32 s = g->s[r];

		if (!(*views & mask & (1u << r)))
			continue;
		if (s == 16)
			for (l = 0; l < n; l++)
				R[r][l] = AT(p, 16, l);
		else
			for (l = 0; l < n; l++)
				R[r][l] = AT(p, s, l);
		g->p[r] = (const __u8 *)R[r];
		g->s[r] = 8;
		*views &= ~(1u << r);
	}
}

/* The views among `views` that bytes [off, off + w) of the element overlap. */
static __u32 overlapping(const struct regs *g, __u32 views, __s32 off, __u32 w)
{
	__u32 r, m = 0;

	for (r = 0; views >> r; r++)
		if ((views & (1u << r)) && g->off[r] < off + (__s32)w && off < g->off[r] + 8)
			m |= 1u << r;
	return m;
}

/*
 * a op b over n doubles at stride 8 into d (which may be a or b), as C
 * writes it, two at a time in SSE2 registers: bit 63 of the result set if
 * one is a NaN.  gcc vectorises the scalar form with a NaN check of four
 * integer operations a pair; a compare-unordered is one, and it is only
 * written so, as vector code.  A NaN is all the check needs to find: an
 * infinity's sum, difference, product or quotient is exact as C writes it.
 */
typedef double v2f64 __attribute__((vector_size(16)));
typedef __s64 v2s64 __attribute__((vector_size(16)));
typedef double v2f64_u __attribute__((vector_size(16), aligned(1), may_alias));

static __always_inline v2f64 farith_v2(unsigned int code, v2f64 a, v2f64 b)
{
	return code == CAD_VM_FADD ? a + b : code == CAD_VM_FSUB ? a - b
		: code == CAD_VM_FMUL ? a * b : a / b;
}

static __always_inline __u64 farith_f64(unsigned int code, __u8 *d, const __u8 *a,
					const __u8 *b, __u32 n)
{
	const v2f64_u *va = (const v2f64_u *)a, *vb = (const v2f64_u *)b;
	v2f64_u *vd = (v2f64_u *)d;
	const __u64 pairs = n / 2, l = 2 * pairs;
	v2s64 nan = { 0, 0 };
	__u64 i;

	for (i = 0; i < pairs; i++) {
		const v2f64 r = farith_v2(code, va[i], vb[i]);

		nan |= (v2s64)(r != r);
		vd[i] = r;
	}
	if (l < n) {
		const v2f64 x = { f64(*(const u64_u *)(a + 8 * l)), 0 };
		const v2f64 y = { f64(*(const u64_u *)(b + 8 * l)), 1 };
		const v2f64 r = farith_v2(code, x, y);

		nan |= (v2s64)(r != r);
		*(f64_u *)(d + 8 * l) = r[0];
	}
	return (__u64)(nan[0] | nan[1]);
}

/* Bit 63 set: the double v is a NaN or an infinity (its exponent is all
 * ones); 64-bit integer arithmetic only, which vectorises with SSE2. */
#define NAN_BITS(v) ((((v) & INF64) ^ INF64) - 1)
#define NAN_BITS32(v) ((((v) & INF32) ^ INF32) - 1)  /* a float's, in __u64 */
#define PLAIN_MUL(x, y) ((x) * (y))
#define PLAIN_ADD(x, y) ((x) + (y))
#define PLAIN_SUB(x, y) ((x) - (y))
#define PAIR_CHUNK 16

/*
 * Both results of PAIR_CHUNK elements go to t1, t2 first, computed as C
 * writes them; if one is a NaN (or an infinity), the chunk again with
 * SSE's NaN of two (fmul_d, fadd_d: only a NaN operand makes a NaN that
 * the operands' order changes).  Its operands are all still there: the
 * stores of the chunk come after.  So NaN-free data pays a check, not a
 * blend per operation.
 */
#define PAIR_AT(k, st) f64(AT(P[k], st, l))
#define PAIR_LANES(mul, add, sub, st0, st1, st2, st3, st4, st5, st6, st7)  \
	CAD_IVDEP for (l = c0; l < c0 + cn; l++) {                         \
		const double x0 = mul(PAIR_AT(0, st0), PAIR_AT(1, st1));   \
		const double x1 = mul(PAIR_AT(2, st2), PAIR_AT(3, st3));   \
		const double y0 = mul(PAIR_AT(4, st4), PAIR_AT(5, st5));   \
		const double y1 = mul(PAIR_AT(6, st6), PAIR_AT(7, st7));   \
		const __u64 r1 = bits64(sub1 ? sub(x0, x1) : add(x0, x1)); \
		const __u64 r2 = bits64(sub2 ? sub(y0, y1) : add(y0, y1)); \
                                                                           \
		t1[l - c0] = r1;                                           \
		t2[l - c0] = r2;                                           \
		nan |= NAN_BITS(r1) | NAN_BITS(r2);                        \
	}
#define PAIR_LOOP(st0, st1, st2, st3, st4, st5, st6, st7, sd)              \
	for (c0 = 0; c0 < n; c0 += cn) {                                   \
		__u64 t1[PAIR_CHUNK], t2[PAIR_CHUNK], nan = 0;             \
                                                                           \
		cn = n - c0 < PAIR_CHUNK ? n - c0 : PAIR_CHUNK;            \
		PAIR_LANES(PLAIN_MUL, PLAIN_ADD, PLAIN_SUB, st0, st1, st2, st3, st4, st5, st6, \
			   st7)                                            \
		if (nan >> 63)                                             \
			PAIR_LANES(fmul_d, fadd_d, fsub_d, st0, st1, st2, st3, st4, st5, st6, \
				   st7)                                    \
		CAD_IVDEP for (l = c0; l < c0 + cn; l++) {                 \
			*(u64_u *)(D1 + (__u64)l * (sd)) = t1[l - c0];     \
			*(u64_u *)(D2 + (__u64)l * (sd)) = t2[l - c0];     \
		}                                                          \
	}
/* The complex product of run_pair over chunk c0 .. c0 + cn, x * y on
 * { re, im } pairs (X, Y) into t, as gcc runs both fields at once. */
#define CMUL_LANES(mul, add, sub)                                          \
		CAD_IVDEP for (l = c0; l < c0 + cn; l++) {                 \
			const __u64 o = (__u64)l * 16;                     \
			const double xr = f64(*(const u64_u *)(X + o));    \
			const double xi = f64(*(const u64_u *)(X + o + 8)); \
			const double yr = f64(*(const u64_u *)(Y + o));    \
			const double yi = f64(*(const u64_u *)(Y + o + 8)); \
			const __u64 re = bits64(sub(mul(xr, yr), mul(xi, yi))); \
			const __u64 im = bits64(add(mul(xr, yi), mul(xi, yr))); \
                                                                           \
			t[l - c0][0] = re;                                 \
			t[l - c0][1] = im;                                 \
			nan |= NAN_BITS(re) | NAN_BITS(im);                \
		}

/*
 * The NF_PAIR at q1 and its second at q2 as one loop over n elements, if
 * no view of the two fields they store is read after them (the values
 * before the stores would then have to be kept).  Returns the pc of the
 * second store, where the block goes on; 0: not run, run them apart.
 */
static __u32 run_pair(const struct vm_env *e, struct regs *g, __u32 q1, __u32 n)
{
	const __u32 q2 = pair_second(e->flags, q1), esz = e->esz;
	const struct cad_vm_insn *c = e->code, *s1 = &c[q1 + 1], *s2 = &c[q2 + 1];
	const struct cad_vm_insn *m[4] = {
		&c[e->prod[q1][0]], &c[e->prod[q1][1]], &c[e->prod[q2][0]], &c[e->prod[q2][1]],
	};
	const __u8 *P[8];
	__u32 S[8], views = g->io_views, k, l, c0, cn;
	__u8 *const D1 = e->io + s1->imm, *const D2 = e->io + s2->imm;
	const bool sub1 = c[q1].code == CAD_VM_FSUB, sub2 = c[q2].code == CAD_VM_FSUB;

	if (e->ip == e->io)
		views |= g->in_views;
	views = overlapping(g, views, s1->imm, 8) | overlapping(g, views, s2->imm, 8);
	if (views & e->after[q2 + 1])
		return 0;
	for (k = 0; k < 4; k++) {
		P[2 * k] = g->p[m[k]->a];
		S[2 * k] = g->s[m[k]->a];
		P[2 * k + 1] = g->p[m[k]->b];
		S[2 * k + 1] = g->s[m[k]->b];
	}
	for (k = 0; k < 8 && S[k] == esz; k++)
		;
	if (k == 8 && esz == 16 && sub1 && !sub2 && D2 == D1 + 8 &&
	    P[2] == P[0] + 8 && P[3] == P[1] + 8 && P[4] == P[0] && P[5] == P[3] &&
	    P[6] == P[2] && P[7] == P[1]) {
		/* the complex product, x * y on { re, im } pairs, operands in
		 * this order: written so that gcc runs both fields at once */
		const __u8 *const X = P[0], *const Y = P[1];

		for (c0 = 0; c0 < n; c0 += cn) {
			__u64 t[PAIR_CHUNK][2], nan = 0;

			cn = n - c0 < PAIR_CHUNK ? n - c0 : PAIR_CHUNK;
			CMUL_LANES(PLAIN_MUL, PLAIN_ADD, PLAIN_SUB)
			if (nan >> 63)
				CMUL_LANES(fmul_d, fadd_d, fsub_d)
			cad_memcpy(D1 + (__u64)c0 * 16, t, (size_t)cn * 16);
		}
#undef CMUL_LANES
	} else if (k == 8 && esz == 16) {
		PAIR_LOOP(16, 16, 16, 16, 16, 16, 16, 16, 16)
	} else {
		PAIR_LOOP(S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7], esz)
	}
#undef PAIR_LOOP
#undef PAIR_LANES
#undef PAIR_AT
	/* as before_store would: the views of the stored fields are dead */
	g->io_views &= ~views;
	g->in_views &= ~views;
	own_lanes(e->R, g, c[q1].dst);
	own_lanes(e->R, g, c[q2].dst);
	return q2 + 1;
}

/*
 * The block forms of the instructions, one function each.  Each runs the
 * instruction at pc over n elements and returns the pc the block goes on
 * from (that of the last instruction it ran: a store it fused, a jump's
 * target less one), or B_DONE when the block is finished.
 *
 * One function per instruction, never inlined: the loops of all of them
 * in one function made gcc's and clang's optimisers take minutes on this
 * file (passes quadratic in a function's blocks), and a call per
 * instruction per block of LANES elements costs nothing measurable.
 */
#define B_DONE ((__u32)-1)

/* Strided element access; a separate loop when elements are exactly w
 * bytes, so that the compiler sees a constant stride and vectorises. */
#define B_LOOP(w, body) do {                                               \
		if (esz == (w)) { CAD_IVDEP for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * (w); body; } } \
		else { for (l = 0; l < n; l++) { const __u64 s_ = (__u64)l * esz; body; } } \
	} while (0)
/* A loop over operands read with strides sa, sb, sc and a destination
 * written with stride sd: all 8 (own lanes) is the common, vectorised
 * case; then any strides. */
#define B_K(a, b, d, body)                                                 \
		CAD_IVDEP for (l = 0; l < n; l++) {                        \
			const __u64 ka_ = (a), kb_ = (b), kc_ = sc_, kd_ = (d); \
			(void)ka_; (void)kb_; (void)kc_; (void)kd_;       \
			body;                                              \
		}
#define B_OPLOOP(body) do {                                                \
		if ((sa_ | sb_ | sc_ | sd_) == 8) {                        \
			CAD_IVDEP for (l = 0; l < n; l++) {                \
				const __u64 ka_ = 8, kb_ = 8, kc_ = 8, kd_ = 8; \
				(void)ka_; (void)kb_; (void)kc_; (void)kd_; \
				body;                                      \
			}                                                  \
		} else if (esz == 16 && sc_ == 8 && (sa_ | sb_ | sd_) <= 24) { \
			switch ((sa_ >> 4) | (sb_ >> 4) << 1 | (sd_ >> 4) << 2) { \
			case 0: B_K(8, 8, 8, body) break;                  \
			case 1: B_K(16, 8, 8, body) break;                 \
			case 2: B_K(8, 16, 8, body) break;                 \
			case 3: B_K(16, 16, 8, body) break;                \
			case 4: B_K(8, 8, 16, body) break;                 \
			case 5: B_K(16, 8, 16, body) break;                \
			case 6: B_K(8, 16, 16, body) break;                \
			default: B_K(16, 16, 16, body) break;              \
			}                                                  \
		} else {                                                   \
			B_K(sa_, sb_, sd_, body)                           \
		}                                                          \
	} while (0)
#define OPA(l) AT(A, ka_, l)
#define OPB(l) AT(B, kb_, l)
#define OPC(l) AT(C, kc_, l)
#define OUT(l) (*(u64_u *)(D + (__u64)(l) * kd_))
/* The destination's own lanes; it stops being a view. */
#define B_DEST() own_lanes(R, g, in->dst)
/* D and its stride: the destination's own lanes, or, when the next
 * instruction stores this result as an 8-byte field of inout and nothing
 * reads it after, inout itself (and the store is skipped). */
#define B_DEST_FUSED() do {                                                \
		D = (__u8 *)R[in->dst];                                    \
		sd_ = 8;                                                   \
		if (in[1].code == CAD_VM_ST_64 && in[1].a == in->dst &&    \
		    !(e->after[pc + 1] & (1u << in->dst))) {               \
			before_store(pc + 1, in[1].imm, 8);                \
			D = e->io + in[1].imm;                             \
			sd_ = esz;                                         \
			pc++;                                              \
		}                                                          \
		B_DEST();                                                  \
	} while (0)
/* Before a store of w bytes at off at pc: the views it overwrites that
 * are still read afterwards are copied, the others dropped. */
#define before_store(pc_, off_, w_) do {                                   \
		const __u32 live_ = e->after[pc_];                         \
		__u32 hit_ = overlapping(g, g->io_views, (off_), (w_));    \
		materialise(R, g, &g->io_views, hit_ & live_, n);          \
		g->io_views &= ~hit_;                                      \
		if (e->ip == e->io) {                                      \
			hit_ = overlapping(g, g->in_views, (off_), (w_));  \
			materialise(R, g, &g->in_views, hit_ & live_, n);  \
			g->in_views &= ~hit_;                              \
		}                                                          \
	} while (0)
#define B_VARS  const __u8 *A, *B, *C; __u8 *D; __u32 sa_, sb_, sc_, sd_
#define B_EXIT(name, w)   return B_DONE
#define B_JA(name, w)     pc += in->imm
#define B_JCOND(name, w)  do {                                             \
		const __u8 *A = g->p[in->a];                               \
		const __u32 sa = g->s[in->a];                              \
		for (nz = 0, l = 0; l < n; l++)                            \
			nz += AT(A, sa, l) != 0;                           \
		if (nz != 0 && nz != n) {                                  \
			materialise(R, g, &g->io_views, ~0u, n);           \
			materialise(R, g, &g->in_views, ~0u, n);           \
			for (l = 0; l < n; l++)                            \
				run_lane(e, pc, l);                        \
			return B_DONE;                                     \
		}                                                          \
		if ((nz == 0) == (CAD_VM_##name == CAD_VM_JZ))             \
			pc += in->imm;                                     \
	} while (0)
#define B_LD(name, w)     do {                                             \
		const __u8 *p_ = (in->a ? e->io : e->ip) + in->imm;        \
		B_DEST();                                                  \
		if ((w) == 8 && esz <= 16) {                               \
			g->p[in->dst] = p_;                                \
			g->s[in->dst] = esz;                               \
			g->off[in->dst] = in->imm;                         \
			if (in->a)                                         \
				g->io_views |= 1u << in->dst;              \
			else                                               \
				g->in_views |= 1u << in->dst;              \
		} else {                                                   \
			__u64 *D_ = R[in->dst];                            \
			B_LOOP(w, D_[l] = LOAD_##name(p_ + s_));           \
		}                                                          \
	} while (0)
#define B_ST(name, w)     do {                                             \
		__u8 *p_ = e->io + in->imm;                                \
		const __u8 *A;                                             \
		__u32 sa;                                                  \
		/* the value stored must not be a view of what it overwrites */ \
		materialise(R, g, &g->io_views,                            \
			    overlapping(g, 1u << in->a, in->imm, w), n);   \
		if (e->ip == e->io)                                        \
			materialise(R, g, &g->in_views,                    \
				    overlapping(g, 1u << in->a, in->imm, w), n); \
		before_store(pc, in->imm, w);                              \
		A = g->p[in->a];                                           \
		sa = g->s[in->a];                                          \
		if (sa == 8)                                               \
			B_LOOP(w, STORE_##name(p_ + s_, AT(A, 8, l)));     \
		else                                                       \
			B_LOOP(w, STORE_##name(p_ + s_, AT(A, sa, l)));    \
	} while (0)
#define B_MOVI(name, w)   do {                                             \
		const __u64 v_ = (__u64)(__s64)in->imm;                    \
		__u64 *D_ = R[in->dst];                                    \
		B_DEST();                                                  \
		for (l = 0; l < n; l++)                                    \
			D_[l] = v_;                                        \
	} while (0)
#define B_LDK(name, w)    do {                                             \
		const __u64 v_ = e->consts[in->imm];                       \
		__u64 *D_ = R[in->dst];                                    \
		B_DEST();                                                  \
		for (l = 0; l < n; l++)                                    \
			D_[l] = v_;                                        \
	} while (0)
#define B_UN(name, w)     do {                                             \
		B_VARS;                                                    \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = C = A; sb_ = sc_ = sa_;                                \
		(void)B; (void)C;                                          \
		B_DEST_FUSED();                                            \
		B_OPLOOP(OUT(l) = SEM_##name(OPA(l), 0));                  \
	} while (0)
#define B_BIN(name, w)    do {                                             \
		if ((CAD_VM_##name == CAD_VM_FADD || CAD_VM_##name == CAD_VM_FSUB) && \
		    (e->flags[pc] & NF_DOT2)) {                            \
			const __u32 q_ = e->flags[pc] & NF_PAIR ? run_pair(e, g, pc, n) : 0; \
			if (q_) {                                          \
				pc = q_;                                   \
				break;                                     \
			}                                                  \
			B_DOT2(name);                                      \
			break;                                             \
		}                                                          \
		if ((CAD_VM_##name == CAD_VM_FADD || CAD_VM_##name == CAD_VM_FSUB) && \
		    (e->flags[pc] & NF_MAC)) {                             \
			B_MAC(name);                                       \
			break;                                             \
		}                                                          \
		B_VARS;                                                    \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = g->p[in->b]; sb_ = g->s[in->b];                        \
		C = A; sc_ = sa_;                                          \
		(void)C;                                                   \
		if (FARITH(CAD_VM_##name)) {                               \
			__u64 nan_ = 0;                                    \
                                                                           \
			B_DEST_FUSED();                                    \
			if (D == A) {  /* in place: operands checked first */ \
				B_OPLOOP(nan_ |= B_NAN_BITS(name, OPA(l)) | \
					 B_NAN_BITS(name, OPB(l)));        \
				if (nan_ >> 63)                            \
					B_OPLOOP(OUT(l) = SEM_##name(OPA(l), OPB(l))); \
				else                                       \
					B_OPLOOP(OUT(l) = B_PLAIN(name, OPA(l), OPB(l))); \
				break;                                     \
			}                                                  \
			if (CAD_VM_##name <= CAD_VM_FDIV && (sa_ | sb_ | sd_) == 8) \
				nan_ = farith_f64(CAD_VM_##name, D, A, B, n); \
			else                                               \
				B_OPLOOP(const __u64 r_ = B_PLAIN(name, OPA(l), OPB(l)); \
					 nan_ |= B_NAN_BITS(name, r_); OUT(l) = r_); \
			if (nan_ >> 63)                                    \
				B_OPLOOP(OUT(l) = B_FIRST_NAN(name, OPA(l), OUT(l))); \
			break;                                             \
		}                                                          \
		B_DEST_FUSED();                                            \
		B_OPLOOP(OUT(l) = SEM_##name(OPA(l), OPB(l)));             \
	} while (0)
/* B_DOT2's sum or difference, plain (only FADD and FSUB get there) */
#define PLAIN_DOT2(name, a, b) \
	(CAD_VM_##name == CAD_VM_FSUB ? PLAIN_FSUB(a, b) : PLAIN_FADD(a, b))
/*
 * The float arithmetic runs as C writes it, and then, if a result is a
 * NaN (or an infinity), again over the lanes whose first operand is a
 * NaN, whose result is that NaN quieted (SSE's NaN of two): NaN-free data
 * pays a check, not a blend per operation.  A result that overwrites its
 * first operand checks the operands first instead, and runs exactly
 * (SEM_) over the block if one is a NaN or an infinity.
 */
#define FARITH(c) (((c) >= CAD_VM_FADD && (c) <= CAD_VM_FDIV) ||           \
		   ((c) >= CAD_VM_SADD && (c) <= CAD_VM_SDIV))
#define B_PLAIN(name, a, b)                                                \
	(CAD_VM_##name == CAD_VM_FADD ? PLAIN_FADD(a, b)                   \
	 : CAD_VM_##name == CAD_VM_FSUB ? PLAIN_FSUB(a, b)                 \
	 : CAD_VM_##name == CAD_VM_FMUL ? PLAIN_FMUL(a, b)                 \
	 : CAD_VM_##name == CAD_VM_FDIV ? bits64(f64(a) / f64(b))          \
	 : CAD_VM_##name == CAD_VM_SADD ? bits32(f32(a) + f32(b))          \
	 : CAD_VM_##name == CAD_VM_SSUB ? bits32(f32(a) - f32(b))          \
	 : CAD_VM_##name == CAD_VM_SMUL ? bits32(f32(a) * f32(b))          \
	 : bits32(f32(a) / f32(b)))
#define B_NAN_BITS(name, r) \
	(CAD_VM_##name >= CAD_VM_SADD ? NAN_BITS32(r) : NAN_BITS(r))
#define B_FIRST_NAN(name, a, r)                                            \
	(CAD_VM_##name >= CAD_VM_SADD                                      \
	 ? (((__u32)(a) & 0x7fffffffu) > INF32 ? (__u64)((__u32)(a) | QNAN32) : (r)) \
	 : (((a) & ~SIGN64) > INF64 ? (a) | QNAN64 : (r)))
#define PLAIN_FADD(a, b) bits64(f64(a) + f64(b))
#define PLAIN_FSUB(a, b) bits64(f64(a) - f64(b))
#define PLAIN_FMUL(a, b) bits64(f64(a) * f64(b))
/* (a * b) op (c * d) of the two skipped FMULs prod names (dot2_plan).
 * Their operands are read as they are now: nothing wrote them since. */
#define B_DOT2(name)      do {                                             \
		const struct cad_vm_insn *m0_ = &e->code[e->prod[pc][0]];  \
		const struct cad_vm_insn *m1_ = &e->code[e->prod[pc][1]];  \
		const __u8 *P0 = g->p[m0_->a], *P1 = g->p[m0_->b];         \
		const __u8 *P2 = g->p[m1_->a], *P3 = g->p[m1_->b];         \
		const __u32 s0_ = g->s[m0_->a], s1_ = g->s[m0_->b];        \
		const __u32 s2_ = g->s[m1_->a], s3_ = g->s[m1_->b];        \
		__u8 *D;                                                   \
		__u32 sd_;                                                 \
		B_DEST_FUSED();                                            \
		B_FUSED_RUN(B_DOT2_LOOP, name, s0_, s1_, s2_, s3_);        \
	} while (0)
/*
 * A fused loop of operands P0..P3 (strides k0..k3) into D, run by LOOP
 * (name, plain, k0, k1, k2, k3, kd).  When the result overwrites none of
 * the operands, it runs plain first and then, if a result is a NaN (or an
 * infinity), again with SSE's NaNs.  When it overwrites one, the operands
 * are checked first instead: with no NaN among them (nor an infinity),
 * the plain result is exact.  All strides 8 is the vectorised loop.
 */
#define B_FUSED_RUN(LOOP, name, k0, k1, k2, k3) do {                       \
		const bool apart_ = D != P0 && D != P1 && D != P2 && D != P3; \
		bool exact_ = false;                                       \
		__u64 nan_ = 0;                                            \
		if (!apart_) {                                             \
			CAD_IVDEP for (l = 0; l < n; l++)                  \
				nan_ |= NAN_BITS(AT(P0, k0, l)) | NAN_BITS(AT(P1, k1, l)) | \
					NAN_BITS(AT(P2, k2, l)) | NAN_BITS(AT(P3, k3, l)); \
			exact_ = nan_ >> 63;                               \
		}                                                          \
		if (!exact_ && ((k0) | (k1) | (k2) | (k3) | sd_) == 8)     \
			LOOP(name, 1, 8, 8, 8, 8, 8)                       \
		else if (!exact_)                                          \
			LOOP(name, 1, k0, k1, k2, k3, sd_)                 \
		if (exact_ || (apart_ && (nan_ >> 63)))                    \
			LOOP(name, 0, k0, k1, k2, k3, sd_)                 \
	} while (0)
#define B_DOT2_LOOP(name, plain, k0, k1, k2, k3, kd)                       \
		CAD_IVDEP for (l = 0; l < n; l++) {                        \
			const __u64 a_ = AT(P0, k0, l), b_ = AT(P1, k1, l); \
			const __u64 c_ = AT(P2, k2, l), d_ = AT(P3, k3, l); \
			const __u64 x_ = (plain) ? PLAIN_FMUL(a_, b_) : SEM_FMUL(a_, b_); \
			const __u64 y_ = (plain) ? PLAIN_FMUL(c_, d_) : SEM_FMUL(c_, d_); \
			const __u64 r_ = (plain) ? PLAIN_DOT2(name, x_, y_) : SEM_##name(x_, y_); \
                                                                           \
			*(u64_u *)(D + (__u64)l * (kd)) = r_;              \
			if (plain)                                         \
				nan_ |= NAN_BITS(r_);                      \
		}
/* x op (c * d), or (c * d) op x when the product is the first operand
 * (pf), of the skipped FMUL prod names (dot2_plan), as B_DOT2 does. */
#define B_MAC(name)       do {                                             \
		const bool pf_ = e->prod[pc][0] != NO_PC;                  \
		const struct cad_vm_insn *m_ = &e->code[e->prod[pc][pf_ ? 0 : 1]]; \
		const __u32 rx_ = pf_ ? in->b : in->a;                     \
		const __u8 *P0 = g->p[rx_], *P2 = g->p[m_->a], *P3 = g->p[m_->b]; \
		const __u8 *const P1 = P0;                                 \
		const __u32 s0_ = g->s[rx_], s2_ = g->s[m_->a], s3_ = g->s[m_->b]; \
		__u8 *D;                                                   \
		__u32 sd_;                                                 \
		B_DEST_FUSED();                                            \
		if (pf_)                                                   \
			B_FUSED_RUN(B_MAC_LOOP_PF, name, s0_, s0_, s2_, s3_); \
		else                                                       \
			B_FUSED_RUN(B_MAC_LOOP_XF, name, s0_, s0_, s2_, s3_); \
	} while (0)
/* B_MAC's loops in B_FUSED_RUN's form (P1 is P0): product first, or x */
#define B_MAC_LOOP_PF(name, plain, k0, k1, k2, k3, kd) B_MAC_LOOP(name, plain, 1, k0, k2, k3, kd)
#define B_MAC_LOOP_XF(name, plain, k0, k1, k2, k3, kd) B_MAC_LOOP(name, plain, 0, k0, k2, k3, kd)
#define B_MAC_LOOP(name, plain, pf, k0, k2, k3, kd)                        \
		CAD_IVDEP for (l = 0; l < n; l++) {                        \
			const __u64 x_ = AT(P0, k0, l);                    \
			const __u64 c_ = AT(P2, k2, l), d_ = AT(P3, k3, l); \
			const __u64 y_ = (plain) ? PLAIN_FMUL(c_, d_) : SEM_FMUL(c_, d_); \
			const __u64 r_ = (plain) ? ((pf) ? PLAIN_DOT2(name, y_, x_) \
							 : PLAIN_DOT2(name, x_, y_)) \
					: ((pf) ? SEM_##name(y_, x_) : SEM_##name(x_, y_)); \
                                                                           \
			*(u64_u *)(D + (__u64)l * (kd)) = r_;              \
			if (plain)                                         \
				nan_ |= NAN_BITS(r_);                      \
		}
/* a op b ? x : y where x and y are a and b: a blend for the integer
 * compares, else a select of the bits.  (The f64 compares do not come
 * here: see B_FPICK.) */
#define B_PICK(name, a, b, x, y)                                           \
	(INT_CMP(CAD_VM_##name) ? BLEND64(SEM_##name(a, b), x, y)          \
	 : SEM_##name(a, b) ? (x) : (y))
/* The same for an f64 compare, over doubles loaded and stored as doubles:
 * only then is it gcc's maxpd or minpd (a < b ? b : a is exactly maxpd's
 * b > a ? b : a, NaNs and signed zeros included).  Loaded as integers and
 * selected as doubles, gcc folds the select back to one of integers, a
 * compare and three logical operations, at about half the speed. */
#define FAT(P, s, l) (*(const f64_u *)((P) + (__u64)(l) * (s)))
#define FOUT(l) (*(f64_u *)(D + (__u64)(l) * kd_))
#define B_FPICK(name, swap)                                                \
	B_OPLOOP(const double a_ = FAT(A, ka_, l); const double b_ = FAT(B, kb_, l); \
		 FOUT(l) = SEM_##name(bits64(a_), bits64(b_)) ? ((swap) ? b_ : a_) \
							     : ((swap) ? a_ : b_))
/* A compare whose result only the next SEL reads (as its condition) runs
 * with it as one loop, t = a op b; d = t ? x : y, which vectorises as a
 * compare and a blend.  The compare's register is then dead and never
 * written.  A, B: the compare's operands; C, X: the SEL's. */
#define B_CMP(name, w)    do {                                             \
		B_VARS;                                                    \
		const struct cad_vm_insn *sel_ = &in[1];                   \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = g->p[in->b]; sb_ = g->s[in->b];                        \
		const unsigned int mm_ = sel_->b == in->a && (__u32)sel_->imm == in->b ? 1 \
				       : sel_->b == in->b && (__u32)sel_->imm == in->a ? 2 : 0; \
		if (sel_->code == CAD_VM_SEL && sel_->a == in->dst &&      \
		    sel_->b != in->dst && (__u32)sel_->imm != in->dst &&   \
		    (mm_ || (g->s[sel_->b] == 8 && g->s[sel_->imm] == 8)) && \
		    !(e->after[pc + 1] & (1u << in->dst))) {              \
			const u64_u *X = (const u64_u *)g->p[sel_->b];     \
			const u64_u *Y = (const u64_u *)g->p[sel_->imm];   \
			B_DEST();                                          \
			pc++;                                              \
			in = sel_;                                         \
			C = A; sc_ = 8;                                    \
			(void)C;                                           \
			B_DEST_FUSED();                                    \
			if (F64_CMP(CAD_VM_##name) && mm_ == 1)            \
				B_FPICK(name, 0);                          \
			else if (F64_CMP(CAD_VM_##name) && mm_ == 2)       \
				B_FPICK(name, 1);                          \
			else if (mm_ == 1)  /* a op b ? a : b */           \
				B_OPLOOP(const __u64 a_ = OPA(l); const __u64 b_ = OPB(l); \
					 OUT(l) = B_PICK(name, a_, b_, a_, b_)); \
			else if (mm_ == 2)  /* a op b ? b : a */           \
				B_OPLOOP(const __u64 a_ = OPA(l); const __u64 b_ = OPB(l); \
					 OUT(l) = B_PICK(name, a_, b_, b_, a_)); \
			else                                               \
				B_OPLOOP(const __u64 x_ = X[l]; const __u64 y_ = Y[l]; \
					 OUT(l) = INT_CMP(CAD_VM_##name)   \
					 ? BLEND64(SEM_##name(OPA(l), OPB(l)), x_, y_) \
					 : SEM_##name(OPA(l), OPB(l)) ? x_ : y_); \
		} else {                                                   \
			C = A; sc_ = sa_;                                  \
			(void)C;                                           \
			B_DEST_FUSED();                                    \
			B_OPLOOP(OUT(l) = SEM_##name(OPA(l), OPB(l)));     \
		}                                                          \
	} while (0)
#define B_SEL(name, w)    do {                                             \
		B_VARS;                                                    \
		C = g->p[in->a]; sc_ = g->s[in->a];                        \
		A = g->p[in->b]; sa_ = g->s[in->b];                        \
		B = g->p[(__u32)in->imm]; sb_ = g->s[(__u32)in->imm];      \
		B_DEST_FUSED();                                            \
		B_OPLOOP(const __u64 a_ = OPA(l); const __u64 b_ = OPB(l); \
			 OUT(l) = BLEND64(NZ64(OPC(l)), a_, b_));          \
	} while (0)
/* A slot is lanes of its own, never a view: a SPILL copies the value as
 * it is now (also from a view, before the memory under it changes), a
 * FILL copies the lanes back, or stores them at once as B_DEST_FUSED
 * does. */
#define B_SPILL(name, w)  do {                                             \
		B_VARS;                                                    \
		A = g->p[in->a]; sa_ = g->s[in->a];                        \
		B = C = A; sb_ = sc_ = sa_;                                \
		(void)B; (void)C;                                          \
		D = (__u8 *)e->S[in->imm];                                 \
		sd_ = 8;                                                   \
		B_OPLOOP(OUT(l) = OPA(l));                                 \
	} while (0)
#define B_FILL(name, w)   do {                                             \
		B_VARS;                                                    \
		A = B = C = (const __u8 *)e->S[in->imm];                   \
		sa_ = sb_ = sc_ = 8;                                       \
		(void)B; (void)C;                                          \
		B_DEST_FUSED();                                            \
		B_OPLOOP(OUT(l) = OPA(l));                                 \
	} while (0)
#define B_FN(name, value, fmt, width, str)                                 \
static __attribute__((__noinline__)) __u32 b_##name(const struct vm_env *e, struct regs *g, \
						    __u32 pc, __u32 n)     \
{                                                                          \
	__u64 (*const R)[LANES] = e->R;                                    \
	const __u32 esz = e->esz;                                          \
	const struct cad_vm_insn *in = &e->code[pc];                       \
	__u32 l = 0, nz = 0;                                               \
                                                                           \
	(void)R; (void)esz; (void)in; (void)l; (void)nz;                   \
	B_##fmt(name, width);                                              \
	return pc;                                                         \
}
CAD_VM_OPCODES(B_FN)
#undef B_FN

/*
 * n (1..LANES) elements from pc 0 to EXIT.
 *
 * Registers are read through g: normally their own lanes in R, but a load
 * of an 8-byte field of an element of at most 16 bytes copies nothing and
 * makes the register a view of the element memory, with the elements'
 * stride.  (Larger elements are copied into lanes: every instruction that
 * reads the field then runs vectorised, instead of striding over memory
 * that a block of them no longer keeps in the L1 cache.)  Results are written to the
 * register's own lanes, or, when the next instruction only stores them as
 * an 8-byte field, straight into inout.  A view is materialised before
 * the memory under it may change: before a store into the bytes it
 * covers (of inout, and of in when the node reduces a range into itself)
 * and before the switch to lane-by-lane execution, which reads R only.
 */
static void run_block(const struct vm_env *e, __u32 n)
{
	struct regs g;
	__u32 pc, r;

	for (r = 0; r < CAD_VM_NREGS; r++) {
		g.p[r] = (const __u8 *)e->R[r];
		g.s[r] = 8;
		g.off[r] = 0;
	}
	g.io_views = g.in_views = 0;
	for (pc = 0;; pc++) {
		if (e->flags[pc] & NF_SKIP)
			continue;
		switch (e->code[pc].code) {
#define B_CASE(name, value, fmt, width, str) \
		case CAD_VM_##name: pc = b_##name(e, &g, pc, n); break;
		CAD_VM_OPCODES(B_CASE)
#undef B_CASE
		default:
			return;  /* unreachable for verified code */
		}
		if (pc == B_DONE)
			return;
	}
}

void cad_vm_run_fpu(const struct cad_prog *prog, const struct cad_user_op *op,
		    void *inout, const void *in, __u64 count, void *scratch)
{
	struct vm_scratch *w = scratch;
	struct vm_env e = {
		.code = prog->code + op->code_first,
		/* no constants section: NULL, never NULL + 0 */
		.consts = op->const_count ? prog->consts + op->const_first : NULL,
		.esz = op->elem_size,
		.io = inout,
		.ip = in,
		.R = w->R,
		.S = w->S,
		.after = w->after,
		.prod = (const __u16 (*)[2])w->prod,
		.flags = w->flags,
	};
	__u32 nregs = 0, nslots = 0;
	bool narrow;

	cad_vm_reads_after(e.code, op->code_count, w->after);
	narrow = cad_vm_narrow_plan(e.code, op->code_count, e.consts, w->after, w->flags, &nregs,
				    &nslots);
	if (narrow) {
		__u8 (*rmap)[4] = (__u8 (*)[4])w->prod;
		__u32 kval[NARROW_KROWS], nk, k, l;

		nk = cad_vm_consts_plan(e.code, op->code_count, e.consts, nregs, w->flags, rmap, kval);
		e.nl = cad_vm_narrow_lanes(nregs + nk);
		if (nslots && e.nl > (__u32)(sizeof(w->S) / 4) / nslots)
			e.nl = ((__u32)(sizeof(w->S) / 4) / nslots) & ~15u;
		e.rmap = (const __u8 (*)[4])rmap;
		for (k = 0; k < nk; k++) {
			__u32 *row = (__u32 *)e.R + (__u64)(nregs + k) * e.nl;

			for (l = 0; l < e.nl && l < count; l++)
				row[l] = kval[k];
		}
		cad_vm_ldop_plan(e.code, op->code_count, e.esz, w->after, w->flags);
	} else {
		cad_vm_dot2_plan(e.code, op->code_count, w->after, w->flags, w->prod);
		cad_vm_pair_plan(e.code, op->code_count, w->after, w->flags);
		if (count)
			cad_vm_hoist_consts(&e, op->code_count, w->flags,
					    count < LANES ? (__u32)count : LANES);
	}
	while (count) {
		const __u32 max = narrow ? e.nl : LANES;
		const __u32 n = count < max ? (__u32)count : max;

		if (narrow)
			cad_vm_run_block32(&e, n);
		else
			run_block(&e, n);
		e.io += (__u64)n * e.esz;
		e.ip += (__u64)n * e.esz;
		count -= n;
	}
}
