/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* verifier_cases.h - one entry of the verifier's table. */
#ifndef CAD_VERIFIER_CASES_H
#define CAD_VERIFIER_CASES_H

#include "selftest.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cad_vcase {
	const char *name;
	struct cad_image_desc desc;               /* serialised by cad_image_write */
	void (*limits)(struct cad_limits *l);     /* tighten the default limits */
	void (*mutate)(__u8 *img, __u32 *size);   /* corrupt the image or its size */
	__u32 poke_sec;     /* poke base: 0 the image, s + 1 section s */
	__u32 poke_off;     /* byte offset from that base */
	__u8 poke_size;     /* 0 (no poke), 1, 2, 4 or 8 bytes */
	__u64 poke_val;
	__u8 misalign;      /* verify from an address 4 bytes off alignment */
	int result;         /* 0 accepted, or the negative errno */
	const char *errstr; /* a fragment of the rejection message */
};

extern const struct cad_vcase cad_vcases[];
extern const unsigned int cad_vcases_count;

int cad_vcase_run(const struct cad_vcase *c, struct cad_tctx *t);

#ifdef __cplusplus
}
#endif

#endif /* CAD_VERIFIER_CASES_H */
