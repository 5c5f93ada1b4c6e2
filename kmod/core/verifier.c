// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * verifier.c - the program verifier, the only gate.
 *
 * Invariant: cad_verify() fills a struct cad_prog only for an image in
 * which every section lies inside the image, every string and line index
 * resolves, every node's accesses lie inside buffers that allow them,
 * every edge points forward to an existing node, every op/datatype pair is
 * valid and every user op's code passes cad_vm_verify_op.  The executor,
 * the reductions, the VM and the disassembler rely on exactly this.
 *
 * Checks run in an order that lets messages use what is already verified:
 * header, sections, strings, lines, buffers, ops, nodes.  The first
 * failure stops verification, with one line in the log.
 */
#include "verify_priv.h"

const struct cad_limits cad_default_limits = {
	.max_image_size  = 256u << 20,
	.max_nodes       = 1u << 21,
	.max_edges       = 1u << 23,
	.max_buffers     = 1024,
	.max_ops         = 64,
	.max_code        = 1u << 16,
	.max_op_code     = 4096,
	.max_consts      = 1u << 14,
	.max_lines       = 1u << 21,
	.max_strings     = 1u << 24,
	.max_buffer_size = 1ull << 40,
	.max_scratch     = 1ull << 32,
};

static void log_location(struct vctx *v, __u32 line)
{
	const struct cad_prog *p = v->p;
	const struct cad_line *l;

	if (line == CAD_NO_LINE || line >= p->n_lines)
		return;
	l = &p->lines[line];
	cad_logf(v->log, " (%s:%u:%u)", cad_prog_string(p, l->file), l->line, l->col);
}

int cad_vreject(struct vctx *v, int err, const char *fmt, ...)
{
	struct cad_log *log = v->log;
	va_list ap;

	switch (v->at) {
	case AT_HEADER:
		cad_logf(log, "header");
		break;
	case AT_SECTION:
		cad_logf(log, "section %s", cad_section_name(v->idx));
		break;
	case AT_STRINGS:
		cad_logf(log, "section strings");
		break;
	case AT_LINE:
		cad_logf(log, "line %u", v->idx);
		break;
	case AT_BUFFER:
		cad_logf(log, "buffer %u", v->idx);
		break;
	case AT_OP:
		cad_logf(log, "op %u '%s'", v->idx,
			 cad_prog_string(v->p, v->p->ops[v->idx].name));
		log_location(v, v->line);
		if (v->insn != ~0u)
			cad_logf(log, " insn %u", v->insn);
		break;
	case AT_NODE:
		cad_logf(log, "node %u", v->idx);
		log_location(v, v->line);
		break;
	}
	cad_logf(log, ": ");
	va_start(ap, fmt);
	cad_vlogf(log, fmt, ap);
	va_end(ap);
	cad_logf(log, "\n");
	return err;
}

const char *cad_prog_string(const struct cad_prog *p, __u32 off)
{
	return off < p->n_strings ? p->strings + off : "";
}

/* ------------------------------------------------------------------ */

static int check_header(struct vctx *v, const struct cad_prog_header *h, __u32 size)
{
	const struct cad_limits *lim = v->lim;

	v->at = AT_HEADER;
	if (h->magic != CAD_MAGIC)
		return cad_vreject(v, -EINVAL, "bad magic 0x%08x (expected 0x%08x)",
				   h->magic, CAD_MAGIC);
	if (h->version != CAD_VERSION)
		return cad_vreject(v, -EINVAL, "unsupported version %u (this core reads %u)",
				   h->version, CAD_VERSION);
	if (h->header_size != sizeof(*h))
		return cad_vreject(v, -EINVAL, "header_size %u, expected %u",
				   h->header_size, (unsigned int)sizeof(*h));
	if (h->total_size != size)
		return cad_vreject(v, -EINVAL,
				   "total_size %u but the image has %u bytes (truncated or padded)",
				   h->total_size, size);
	if (size > lim->max_image_size)
		return cad_vreject(v, -E2BIG, "image of %u bytes exceeds the limit of %u",
				   size, lim->max_image_size);
	if (h->flags)
		return cad_vreject(v, -EINVAL, "unknown flags 0x%x", h->flags);
	if (h->nranks == 0)
		return cad_vreject(v, -EINVAL, "nranks is 0");
	if (h->rank >= h->nranks)
		return cad_vreject(v, -EINVAL, "rank %u is not below nranks %u",
				   h->rank, h->nranks);
	if (h->collective >= CAD_COLL_COUNT)
		return cad_vreject(v, -EINVAL, "unknown collective %u", h->collective);
	return 0;
}

static int check_sections(struct vctx *v, const __u8 *img, __u32 size)
{
	static const __u32 entsize[CAD_SEC_COUNT] = {
		[CAD_SEC_BUFFERS] = sizeof(struct cad_buffer),
		[CAD_SEC_NODES]   = sizeof(struct cad_node),
		[CAD_SEC_EDGES]   = sizeof(struct cad_edge),
		[CAD_SEC_OPS]     = sizeof(struct cad_user_op),
		[CAD_SEC_CODE]    = sizeof(struct cad_vm_insn),
		[CAD_SEC_CONSTS]  = sizeof(__u64),
		[CAD_SEC_LINES]   = sizeof(struct cad_line),
		[CAD_SEC_STRINGS] = 1,
	};
	const struct cad_limits *lim = v->lim;
	const __u32 limit[CAD_SEC_COUNT] = {
		[CAD_SEC_BUFFERS] = lim->max_buffers,
		[CAD_SEC_NODES]   = lim->max_nodes,
		[CAD_SEC_EDGES]   = lim->max_edges,
		[CAD_SEC_OPS]     = lim->max_ops,
		[CAD_SEC_CODE]    = lim->max_code,
		[CAD_SEC_CONSTS]  = lim->max_consts,
		[CAD_SEC_LINES]   = lim->max_lines,
		[CAD_SEC_STRINGS] = lim->max_strings,
	};
	const struct cad_prog_header *h = (const void *)img;
	struct cad_prog *p = v->p;
	const void *base[CAD_SEC_COUNT];
	unsigned int s, t;

	v->at = AT_SECTION;
	for (s = 0; s < CAD_SEC_COUNT; s++) {
		const struct cad_section *sec = &h->sec[s];
		__u64 end = (__u64)sec->off + (__u64)sec->count * sec->entsize;

		v->idx = s;
		if (sec->reserved)
			return cad_vreject(v, -EINVAL, "reserved field is not 0");
		if (sec->entsize != entsize[s])
			return cad_vreject(v, -EINVAL, "entry size %u, expected %u",
					   sec->entsize, entsize[s]);
		if (sec->count > limit[s])
			return cad_vreject(v, -E2BIG, "%u entries exceed the limit of %u",
					   sec->count, limit[s]);
		if (sec->count == 0) {
			if (sec->off)
				return cad_vreject(v, -EINVAL, "empty, but has offset %u", sec->off);
			base[s] = NULL;
			continue;
		}
		if (sec->off & 7)
			return cad_vreject(v, -EINVAL, "offset %u is not 8-byte aligned", sec->off);
		if (sec->off < sizeof(*h))
			return cad_vreject(v, -EINVAL, "offset %u overlaps the %u-byte header",
					   sec->off, (unsigned int)sizeof(*h));
		if (end > size)
			return cad_vreject(v, -EINVAL,
					   "truncated: needs bytes %u..%llu of a %u-byte image",
					   sec->off, (unsigned long long)end, size);
		for (t = 0; t < s; t++) {
			const struct cad_section *o = &h->sec[t];

			if (o->count && sec->off < (__u64)o->off + (__u64)o->count * o->entsize &&
			    o->off < end)
				return cad_vreject(v, -EINVAL, "overlaps section %s",
						   cad_section_name(t));
		}
		base[s] = img + sec->off;
	}

	p->hdr = h;
	p->buffers = base[CAD_SEC_BUFFERS];  p->n_buffers = h->sec[CAD_SEC_BUFFERS].count;
	p->nodes   = base[CAD_SEC_NODES];    p->n_nodes   = h->sec[CAD_SEC_NODES].count;
	p->edges   = base[CAD_SEC_EDGES];    p->n_edges   = h->sec[CAD_SEC_EDGES].count;
	p->ops     = base[CAD_SEC_OPS];      p->n_ops     = h->sec[CAD_SEC_OPS].count;
	p->code    = base[CAD_SEC_CODE];     p->n_code    = h->sec[CAD_SEC_CODE].count;
	p->consts  = base[CAD_SEC_CONSTS];   p->n_consts  = h->sec[CAD_SEC_CONSTS].count;
	p->lines   = base[CAD_SEC_LINES];    p->n_lines   = h->sec[CAD_SEC_LINES].count;
	p->strings = base[CAD_SEC_STRINGS];  p->n_strings = h->sec[CAD_SEC_STRINGS].count;
	return 0;
}

__u32 cad_utf8_length(const __u8 *s, __u32 i, __u32 n)
{
	const __u8 c = s[i];
	__u8 lo = 0x80, hi = 0xbf;
	__u32 len, k;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* No overlong forms, no surrogates, nothing above U+10FFFF. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n - i < len || s[i + 1] < lo || s[i + 1] > hi)
		return 0;
	for (k = 2; k < len; k++)
		if (s[i + k] < 0x80 || s[i + k] > 0xbf)
			return 0;
	return len;
}

static int check_strings_and_lines(struct vctx *v)
{
	const struct cad_prog *p = v->p;
	__u32 i;

	v->at = AT_STRINGS;
	if (p->n_strings) {
		if (p->strings[0] != '\0')
			return cad_vreject(v, -EINVAL, "must start with the empty string (a NUL byte)");
		if (p->strings[p->n_strings - 1] != '\0')
			return cad_vreject(v, -EINVAL, "does not end with a NUL byte");
		for (i = 0; i < p->n_strings;) {
			const __u8 c = (__u8)p->strings[i];
			const __u32 len = cad_utf8_length((const __u8 *)p->strings, i, p->n_strings);

			if (c && (c < 0x20 || c == 0x7f))
				return cad_vreject(v, -EINVAL, "control character 0x%02x at offset %u",
						   c, i);
			if (!len)
				return cad_vreject(v, -EINVAL, "invalid UTF-8 at offset %u", i);
			i += len;
		}
	}
	v->at = AT_HEADER;
	if (!cad_str_ok(p, p->hdr->name))
		return cad_vreject(v, -EINVAL, "name offset %u is outside the %u-byte string table",
				   p->hdr->name, p->n_strings);

	v->at = AT_LINE;
	for (i = 0; i < p->n_lines; i++) {
		const struct cad_line *l = &p->lines[i];

		v->idx = i;
		if (!cad_str_ok(p, l->file))
			return cad_vreject(v, -EINVAL,
					   "file offset %u is outside the %u-byte string table",
					   l->file, p->n_strings);
		if (l->reserved)
			return cad_vreject(v, -EINVAL, "reserved field is not 0");
	}
	return 0;
}

static int check_buffers(struct vctx *v)
{
	struct cad_prog *p = v->p;
	__u64 scratch = 0;
	__u32 i;

	v->at = AT_BUFFER;
	for (i = 0; i < p->n_buffers; i++) {
		const struct cad_buffer *b = &p->buffers[i];

		v->idx = i;
		if (b->kind >= CAD_BUF_KIND_COUNT)
			return cad_vreject(v, -EINVAL, "unknown kind %u", b->kind);
		if (b->access & ~(CAD_ACC_READ | CAD_ACC_WRITE))
			return cad_vreject(v, -EINVAL, "unknown access bits 0x%x",
					   b->access & ~(CAD_ACC_READ | CAD_ACC_WRITE));
		if (!b->access)
			return cad_vreject(v, -EINVAL, "no access rights");
		if (b->kind == CAD_BUF_SEND && (b->access & CAD_ACC_WRITE))
			return cad_vreject(v, -EINVAL, "a send buffer cannot be writable");
		if (!cad_str_ok(p, b->name))
			return cad_vreject(v, -EINVAL,
					   "name offset %u is outside the %u-byte string table",
					   b->name, p->n_strings);
		if (b->reserved)
			return cad_vreject(v, -EINVAL, "reserved field is not 0");
		if (b->size > v->lim->max_buffer_size)
			return cad_vreject(v, -E2BIG, "%llu bytes exceed the limit of %llu",
					   (unsigned long long)b->size,
					   (unsigned long long)v->lim->max_buffer_size);
		if (b->kind == CAD_BUF_SCRATCH) {
			scratch += b->size;  /* each size <= 2^40: no overflow */
			if (scratch > v->lim->max_scratch)
				return cad_vreject(v, -E2BIG,
						   "scratch buffers total %llu bytes, over the limit of %llu",
						   (unsigned long long)scratch,
						   (unsigned long long)v->lim->max_scratch);
		}
	}
	p->scratch_bytes = scratch;
	return 0;
}

static int check_ops(struct vctx *v)
{
	const struct cad_prog *p = v->p;
	__u32 i;
	int err;

	v->at = AT_OP;
	v->insn = ~0u;
	for (i = 0; i < p->n_ops; i++) {
		const struct cad_user_op *op = &p->ops[i];

		v->idx = i;
		v->line = CAD_NO_LINE;
		if (!cad_str_ok(p, op->name))
			return cad_vreject(v, -EINVAL,
					   "name offset %u is outside the %u-byte string table",
					   op->name, p->n_strings);
		if (op->line != CAD_NO_LINE && op->line >= p->n_lines)
			return cad_vreject(v, -EINVAL, "line index %u is outside the line table (%u entries)",
					   op->line, p->n_lines);
		v->line = op->line;
		if (op->flags & ~CAD_UOP_COMMUTATIVE)
			return cad_vreject(v, -EINVAL, "unknown flags 0x%x",
					   op->flags & ~CAD_UOP_COMMUTATIVE);
		if (op->elem_size == 0 || op->elem_size > CAD_VM_MAX_ELEM)
			return cad_vreject(v, -EINVAL, "element size %u is outside 1..%u",
					   op->elem_size, CAD_VM_MAX_ELEM);
		if (op->code_count == 0)
			return cad_vreject(v, -EINVAL, "has no code");
		if (op->code_count > v->lim->max_op_code || op->code_count > CAD_VM_MAX_INSNS)
			return cad_vreject(v, -E2BIG, "%u instructions exceed the limit of %u",
					   op->code_count,
					   v->lim->max_op_code < CAD_VM_MAX_INSNS ? v->lim->max_op_code
										  : CAD_VM_MAX_INSNS);
		if ((__u64)op->code_first + op->code_count > p->n_code)
			return cad_vreject(v, -EINVAL,
					   "code [%u, +%u) is outside the code section (%u instructions)",
					   op->code_first, op->code_count, p->n_code);
		if ((__u64)op->const_first + op->const_count > p->n_consts)
			return cad_vreject(v, -EINVAL,
					   "constants [%u, +%u) are outside the consts section (%u entries)",
					   op->const_first, op->const_count, p->n_consts);
		err = cad_vm_verify_op(v, op);
		if (err)
			return err;
		v->insn = ~0u;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Nodes                                                               */

#define NEED_READ  CAD_ACC_READ
#define NEED_WRITE CAD_ACC_WRITE

static int check_range(struct vctx *v, const char *role, __u32 buf, __u64 off,
		       __u64 len, __u32 need)
{
	const struct cad_prog *p = v->p;
	const struct cad_buffer *b;

	if (buf >= p->n_buffers)
		return cad_vreject(v, -EINVAL, "%s buffer %u does not exist (%u buffers)",
				   role, buf, p->n_buffers);
	b = &p->buffers[buf];
	if (off + len < off)
		return cad_vreject(v, -EINVAL, "%s offset %llu + length %llu overflows",
				   role, (unsigned long long)off, (unsigned long long)len);
	if (off + len > b->size)
		return cad_vreject(v, -EINVAL,
				   "%s range [%llu, %llu) is outside buffer %u '%s' of %llu bytes",
				   role, (unsigned long long)off, (unsigned long long)(off + len),
				   buf, cad_prog_string(p, b->name), (unsigned long long)b->size);
	if ((need & NEED_READ) && !(b->access & CAD_ACC_READ))
		return cad_vreject(v, -EINVAL, "%s buffer %u '%s' is not readable",
				   role, buf, cad_prog_string(p, b->name));
	if ((need & NEED_WRITE) && !(b->access & CAD_ACC_WRITE))
		return cad_vreject(v, -EINVAL, "%s buffer %u '%s' is read-only",
				   role, buf, cad_prog_string(p, b->name));
	return 0;
}

/* Fields a node kind does not use must be 0.  One bit per field. */
enum {
	F_DTYPE = 1 << 0, F_OP = 1 << 1, F_FLAGS = 1 << 2, F_PEER = 1 << 3,
	F_TAG = 1 << 4, F_USER_OP = 1 << 5, F_DST_BUF = 1 << 6, F_SRC_BUF = 1 << 7,
	F_DST_OFF = 1 << 8, F_SRC_OFF = 1 << 9, F_LEN = 1 << 10,
};

static const __u16 unused_fields[CAD_NODE_KIND_COUNT] = {
	[CAD_NODE_NOP]    = 0x7ff,
	[CAD_NODE_SEND]   = F_DTYPE | F_OP | F_USER_OP | F_DST_BUF | F_DST_OFF,
	[CAD_NODE_RECV]   = F_DTYPE | F_OP | F_USER_OP | F_SRC_BUF | F_SRC_OFF,
	[CAD_NODE_COPY]   = F_DTYPE | F_OP | F_FLAGS | F_PEER | F_TAG | F_USER_OP,
	[CAD_NODE_REDUCE] = F_FLAGS | F_PEER | F_TAG,
};

static int check_unused(struct vctx *v, const struct cad_node *n)
{
	static const char *const names[] = {
		"dtype", "op", "flags", "peer", "tag", "user_op",
		"dst_buf", "src_buf", "dst_off", "src_off", "len",
	};
	const __u64 val[] = {
		n->dtype, n->op, n->flags, n->peer, n->tag, n->user_op,
		n->dst_buf, n->src_buf, n->dst_off, n->src_off, n->len,
	};
	__u16 mask = unused_fields[n->kind];
	unsigned int f;

	for (f = 0; f < CAD_ARRAY_SIZE(names); f++)
		if ((mask & (1u << f)) && val[f])
			return cad_vreject(v, -EINVAL, "field %s must be 0 in a %s node (is %llu)",
					   names[f], cad_node_kind_name(n->kind),
					   (unsigned long long)val[f]);
	return 0;
}

static bool ranges_overlap(__u64 a, __u64 b, __u64 len)
{
	return len && a < b + len && b < a + len;
}

static int check_transfer(struct vctx *v, const struct cad_node *n)
{
	const struct cad_prog_header *h = v->p->hdr;
	const __u32 dir = CAD_XFER_RECEIVER_READS | CAD_XFER_SENDER_WRITES;

	if (n->peer >= h->nranks)
		return cad_vreject(v, -EINVAL, "peer %u is not below nranks %u", n->peer, h->nranks);
	if (n->peer == h->rank)
		return cad_vreject(v, -EINVAL, "%s to its own rank %u: use a copy node",
				   cad_node_kind_name(n->kind), n->peer);
	if (n->flags & ~dir)
		return cad_vreject(v, -EINVAL, "unknown transfer flags 0x%x", n->flags & ~dir);
	if ((n->flags & dir) == dir)
		return cad_vreject(v, -EINVAL,
				   "both receiver-reads and sender-writes: at most one direction");
	if (n->kind == CAD_NODE_SEND)
		return check_range(v, "source", n->src_buf, n->src_off, n->len, NEED_READ);
	return check_range(v, "destination", n->dst_buf, n->dst_off, n->len, NEED_WRITE);
}

static int check_reduce(struct vctx *v, const struct cad_node *n)
{
	const struct cad_prog *p = v->p;
	__u32 esize;
	int err;

	if (n->op == CAD_OP_NONE || n->op >= CAD_OP_COUNT)
		return cad_vreject(v, -EINVAL, "unknown reduction op %u", n->op);
	if (n->op == CAD_OP_USER) {
		if (n->user_op >= p->n_ops)
			return cad_vreject(v, -EINVAL, "user op %u does not exist (%u ops)",
					   n->user_op, p->n_ops);
		if (n->dtype != CAD_DT_USER)
			return cad_vreject(v, -EINVAL, "a user op takes datatype user, not %s",
					   cad_dtype_name(n->dtype));
		esize = p->ops[n->user_op].elem_size;
	} else {
		if (n->user_op)
			return cad_vreject(v, -EINVAL, "field user_op must be 0 for built-in op %s",
					   cad_op_name(n->op));
		if (n->dtype >= CAD_DT_COUNT)
			return cad_vreject(v, -EINVAL, "unknown datatype %u", n->dtype);
		if (!cad_reduce_supported(n->op, n->dtype))
			return cad_vreject(v, -EINVAL, "op %s does not apply to datatype %s",
					   cad_op_name(n->op), cad_dtype_name(n->dtype));
		esize = cad_dtype_size(n->dtype);
	}
	if (n->len % esize)
		return cad_vreject(v, -EINVAL, "length %llu is not a multiple of the %u-byte element",
				   (unsigned long long)n->len, esize);
	err = check_range(v, "source", n->src_buf, n->src_off, n->len, NEED_READ);
	if (!err)
		err = check_range(v, "destination", n->dst_buf, n->dst_off, n->len,
				  NEED_READ | NEED_WRITE);
	if (err)
		return err;
	if (n->src_buf == n->dst_buf && n->src_off != n->dst_off &&
	    ranges_overlap(n->src_off, n->dst_off, n->len))
		return cad_vreject(v, -EINVAL, "source and destination partially overlap in buffer %u",
				   n->src_buf);
	return 0;
}

static int check_copy(struct vctx *v, const struct cad_node *n)
{
	int err = check_range(v, "source", n->src_buf, n->src_off, n->len, NEED_READ);

	if (!err)
		err = check_range(v, "destination", n->dst_buf, n->dst_off, n->len, NEED_WRITE);
	if (err)
		return err;
	if (n->src_buf == n->dst_buf && ranges_overlap(n->src_off, n->dst_off, n->len))
		return cad_vreject(v, -EINVAL, "source and destination overlap in buffer %u",
				   n->src_buf);
	return 0;
}

static int check_edges(struct vctx *v, const struct cad_node *n, __u32 i, __u32 expect_first)
{
	const struct cad_prog *p = v->p;
	__u32 e, prev = i;

	if (n->edge_first != expect_first)
		return cad_vreject(v, -EINVAL,
				   "edge_first %u, expected %u (successor lists are stored node after node)",
				   n->edge_first, expect_first);
	if ((__u64)n->edge_first + n->edge_count > p->n_edges)
		return cad_vreject(v, -EINVAL, "successors [%u, +%u) run past the %u edges",
				   n->edge_first, n->edge_count, p->n_edges);
	for (e = n->edge_first; e < n->edge_first + n->edge_count; e++) {
		__u32 to = p->edges[e].to;

		if (to >= p->n_nodes)
			return cad_vreject(v, -EINVAL, "edge to node %u dangles: the program has %u nodes",
					   to, p->n_nodes);
		if (to <= i)
			return cad_vreject(v, -EINVAL,
					   "edge to node %u is not forward (a back-edge or self-loop)", to);
		if (to <= prev)
			return cad_vreject(v, -EINVAL,
					   "successors not strictly increasing: node %u after node %u (duplicate edge?)",
					   to, prev);
		prev = to;
	}
	return 0;
}

static int check_nodes(struct vctx *v)
{
	const struct cad_prog *p = v->p;
	__u32 i, edges = 0;
	int err;

	v->at = AT_NODE;
	for (i = 0; i < p->n_nodes; i++) {
		const struct cad_node *n = &p->nodes[i];

		v->idx = i;
		v->line = CAD_NO_LINE;
		if (n->line != CAD_NO_LINE && n->line >= p->n_lines)
			return cad_vreject(v, -EINVAL, "line index %u is outside the line table (%u entries)",
					   n->line, p->n_lines);
		v->line = n->line;
		if (n->kind >= CAD_NODE_KIND_COUNT)
			return cad_vreject(v, -EINVAL, "unknown node kind %u", n->kind);
		if (n->reserved)
			return cad_vreject(v, -EINVAL, "reserved field is not 0");
		err = check_edges(v, n, i, edges);
		if (err)
			return err;
		edges += n->edge_count;
		err = check_unused(v, n);
		if (err)
			return err;
		switch (n->kind) {
		case CAD_NODE_SEND:
		case CAD_NODE_RECV:
			err = check_transfer(v, n);
			break;
		case CAD_NODE_COPY:
			err = check_copy(v, n);
			break;
		case CAD_NODE_REDUCE:
			err = check_reduce(v, n);
			break;
		default:
			break;
		}
		if (err)
			return err;
	}
	if (edges != p->n_edges) {
		v->at = AT_SECTION;
		v->idx = CAD_SEC_EDGES;
		return cad_vreject(v, -EINVAL, "%u edges, but the nodes' successor lists use %u",
				   p->n_edges, edges);
	}
	return 0;
}

int cad_verify(const void *image, __u32 size, const struct cad_limits *limits,
	       struct cad_prog *prog, struct cad_log *log)
{
	struct cad_prog p;
	struct vctx v = {
		.lim = limits ? limits : &cad_default_limits,
		.p = &p,
		.log = log,
		.at = AT_HEADER,
		.insn = ~0u,
		.line = CAD_NO_LINE,
	};
	int err;

	cad_memset(&p, 0, sizeof(p));
	if (!image || ((cad_uptr)image & 7))
		return cad_vreject(&v, -EINVAL, "image is not 8-byte aligned");
	if (size < sizeof(struct cad_prog_header))
		return cad_vreject(&v, -EINVAL, "truncated: %u bytes, the header alone is %u",
				   size, (unsigned int)sizeof(struct cad_prog_header));
	err = check_header(&v, image, size);
	if (!err)
		err = check_sections(&v, image, size);
	if (!err)
		err = check_strings_and_lines(&v);
	if (!err)
		err = check_buffers(&v);
	if (!err)
		err = check_ops(&v);
	if (!err)
		err = check_nodes(&v);
	if (err)
		return err;
	*prog = p;
	return 0;
}
