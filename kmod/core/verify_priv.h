/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* verify_priv.h - state shared by verifier.c and vm_verify.c. */
#ifndef CAD_VERIFY_PRIV_H
#define CAD_VERIFY_PRIV_H

#include "cad_core.h"

/* What the verifier is looking at, for the message prefix. */
enum vwhere {
	AT_HEADER,
	AT_SECTION,
	AT_STRINGS,
	AT_LINE,
	AT_BUFFER,
	AT_OP,
	AT_NODE,
};

struct vctx {
	const struct cad_limits *lim;
	struct cad_prog *p;
	struct cad_log *log;
	enum vwhere at;
	__u32 idx;        /* section, line, buffer, op or node index */
	__u32 insn;       /* AT_OP: instruction index, or ~0u */
	__u32 line;       /* line index to print, or CAD_NO_LINE */
};

/* Log "<where>: <message>\n" and return err. */
int cad_vreject(struct vctx *v, int err, const char *fmt, ...) CAD_PRINTF(3, 4);

/* Whether off names a string in the verified string table. */
static inline bool cad_str_ok(const struct cad_prog *p, __u32 off)
{
	return off == 0 || off < p->n_strings;
}

/* Verify one user op's code (its ranges already checked). */
int cad_vm_verify_op(struct vctx *v, const struct cad_user_op *op);

#endif /* CAD_VERIFY_PRIV_H */
