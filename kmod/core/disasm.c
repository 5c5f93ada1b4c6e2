// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * disasm.c - text form of a verified program, written through a callback.
 *
 *   ; cad v1 "bcast_chain" bcast, rank 1 of 4: 2 buffers, 3 nodes, 2 edges, 0 ops
 *   buffer b1 recv rw 1024 "recvbuf"
 *   node 0 recv b1[0:512] <- rank 0 tag 7 receiver-reads -> 1   ; bcast.cad:12:5
 *   op 0 "cmul" elem 16 noncommutative   ; cmul.c:3:1
 *     0: ld.64 r0, in+0
 */
#include "cad_core.h"

struct dout {
	cad_emit_fn emit;
	void *ctx;
	char buf[512];
};

static void dprint(struct dout *d, const char *fmt, ...) CAD_PRINTF(2, 3);
static void dprint(struct dout *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = cad_vsnprintf(d->buf, sizeof(d->buf), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(d->buf))
		n = sizeof(d->buf) - 1;
	d->emit(d->ctx, d->buf, (__u32)n);
}

static int location(const struct cad_prog *p, __u32 line, char *buf, size_t size)
{
	const struct cad_line *l;

	if (line == CAD_NO_LINE)
		return cad_snprintf(buf, size, "%s", "");
	l = &p->lines[line];
	return cad_snprintf(buf, size, "   ; %s:%u:%u", cad_prog_string(p, l->file), l->line, l->col);
}

/* A node without its location. */
static int node_body(const struct cad_prog *p, __u32 index, char *buf, size_t size)
{
	const struct cad_node *n = &p->nodes[index];
	const char *dir = n->flags & CAD_XFER_RECEIVER_READS ? " receiver-reads"
			: n->flags & CAD_XFER_SENDER_WRITES ? " sender-writes" : "";
	const unsigned long long doff = n->dst_off, soff = n->src_off, len = n->len;

	switch (n->kind) {
	case CAD_NODE_SEND:
		return cad_snprintf(buf, size, "node %u send b%u[%llu:%llu] -> rank %u tag %u%s",
				    index, n->src_buf, soff, soff + len, n->peer, n->tag, dir);
	case CAD_NODE_RECV:
		return cad_snprintf(buf, size, "node %u recv b%u[%llu:%llu] <- rank %u tag %u%s",
				    index, n->dst_buf, doff, doff + len, n->peer, n->tag, dir);
	case CAD_NODE_COPY:
		return cad_snprintf(buf, size, "node %u copy b%u[%llu:%llu] <- b%u[%llu:%llu]",
				    index, n->dst_buf, doff, doff + len, n->src_buf, soff, soff + len);
	case CAD_NODE_REDUCE:
		return cad_snprintf(buf, size, "node %u reduce %s.%s b%u[%llu:%llu] <- b%u[%llu:%llu]",
				    index, cad_op_name(n->op),
				    n->op == CAD_OP_USER ? cad_prog_string(p, p->ops[n->user_op].name)
							 : cad_dtype_name(n->dtype),
				    n->dst_buf, doff, doff + len, n->src_buf, soff, soff + len);
	default:
		return cad_snprintf(buf, size, "node %u nop", index);
	}
}

int cad_disasm_node(const struct cad_prog *p, __u32 index, char *buf, size_t size)
{
	int len = node_body(p, index, buf, size);
	__u32 used = (size_t)len < size ? (__u32)len : (size ? (__u32)size - 1 : 0);

	return len + location(p, p->nodes[index].line, buf + used, size - used);
}

static void disasm_insn(struct dout *d, const struct cad_user_op *op, __u32 pc,
			const struct cad_vm_insn *in, const __u64 *consts)
{
	const char *name = cad_vm_opcode_name(in->code);

	switch (cad_vm_opcode_format(in->code)) {
	case CAD_VMF_EXIT:
		dprint(d, "  %4u: %s\n", pc, name);
		break;
	case CAD_VMF_JA:
		dprint(d, "  %4u: %s +%d   ; -> %u\n", pc, name, in->imm, pc + 1 + in->imm);
		break;
	case CAD_VMF_JCOND:
		dprint(d, "  %4u: %s r%u, +%d   ; -> %u\n", pc, name, in->a, in->imm,
		       pc + 1 + in->imm);
		break;
	case CAD_VMF_LD:
		dprint(d, "  %4u: %s r%u, %s+%d\n", pc, name, in->dst, in->a ? "inout" : "in",
		       in->imm);
		break;
	case CAD_VMF_ST:
		dprint(d, "  %4u: %s inout+%d, r%u\n", pc, name, in->imm, in->a);
		break;
	case CAD_VMF_MOVI:
		dprint(d, "  %4u: %s r%u, %d\n", pc, name, in->dst, in->imm);
		break;
	case CAD_VMF_LDK:
		dprint(d, "  %4u: %s r%u, k%d   ; 0x%llx\n", pc, name, in->dst, in->imm,
		       (unsigned long long)consts[op->const_first + in->imm]);
		break;
	case CAD_VMF_UN:
		dprint(d, "  %4u: %s r%u, r%u\n", pc, name, in->dst, in->a);
		break;
	case CAD_VMF_BIN:
	case CAD_VMF_CMP:
		dprint(d, "  %4u: %s r%u, r%u, r%u\n", pc, name, in->dst, in->a, in->b);
		break;
	case CAD_VMF_SEL:
		dprint(d, "  %4u: %s r%u, r%u ? r%u : r%d\n", pc, name, in->dst, in->a, in->b,
		       in->imm);
		break;
	case CAD_VMF_SPILL:
		dprint(d, "  %4u: %s s%d, r%u\n", pc, name, in->imm, in->a);
		break;
	case CAD_VMF_FILL:
		dprint(d, "  %4u: %s r%u, s%d\n", pc, name, in->dst, in->imm);
		break;
	default:
		dprint(d, "  %4u: ? 0x%02x\n", pc, in->code);
		break;
	}
}

void cad_disasm(const struct cad_prog *p, cad_emit_fn emit, void *ctx)
{
	const struct cad_prog_header *h = p->hdr;
	struct dout d = { .emit = emit, .ctx = ctx };
	char line[sizeof(d.buf)];
	__u32 i, e;

	dprint(&d, "; cad v%u \"%s\" %s, rank %u of %u: %u buffers, %u nodes, %u edges, %u ops\n",
	       h->version, cad_prog_string(p, h->name), cad_collective_name(h->collective),
	       h->rank, h->nranks, p->n_buffers, p->n_nodes, p->n_edges, p->n_ops);
	for (i = 0; i < p->n_buffers; i++) {
		const struct cad_buffer *b = &p->buffers[i];

		dprint(&d, "buffer b%u %s %s%s %llu \"%s\"\n", i, cad_buffer_kind_name(b->kind),
		       b->access & CAD_ACC_READ ? "r" : "-", b->access & CAD_ACC_WRITE ? "w" : "-",
		       (unsigned long long)b->size, cad_prog_string(p, b->name));
	}
	for (i = 0; i < p->n_nodes; i++) {
		const struct cad_node *n = &p->nodes[i];
		char where[160];

		node_body(p, i, line, sizeof(line));
		location(p, n->line, where, sizeof(where));
		dprint(&d, "%s", line);
		for (e = 0; e < n->edge_count; e++)
			dprint(&d, "%s%u", e ? ", " : " -> ", p->edges[n->edge_first + e].to);
		dprint(&d, "%s\n", where);
	}
	for (i = 0; i < p->n_ops; i++) {
		const struct cad_user_op *op = &p->ops[i];
		char where[160];
		__u32 pc;

		location(p, op->line, where, sizeof(where));
		dprint(&d, "op %u \"%s\" elem %u %s%s\n", i, cad_prog_string(p, op->name),
		       op->elem_size, op->flags & CAD_UOP_COMMUTATIVE ? "commutative" : "noncommutative",
		       where);
		for (pc = 0; pc < op->code_count; pc++)
			disasm_insn(&d, op, pc, &p->code[op->code_first + pc], p->consts);
	}
}
