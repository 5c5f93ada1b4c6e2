/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * selftest.h - test suites written in C so that the very same cases run
 * under GoogleTest (tests/core, one _test.cpp per suite) and inside the kernel
 * (tests/kmod/coretest).  A suite is a list of numbered cases; a case
 * returns 0 or fails with a message.  Cases take all large memory from the
 * context (kernel stacks are 16 KiB) and use floating point only in the
 * *_fpu.c files, between cad_fpu_begin() and cad_fpu_end().
 */
#ifndef CAD_SELFTEST_H
#define CAD_SELFTEST_H

#include "../../kmod/core/cad_core.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cad_tctx {
	char msg[512];        /* why the case failed */
	__u8 *work;           /* 8-byte aligned memory for the case */
	__u64 work_size;
	__u64 work_used;
	void *vm_scratch;     /* CAD_VM_SCRATCH_SIZE bytes */
};

struct cad_tsuite {
	const char *name;
	unsigned int (*count)(void);
	/* A name made of [a-z0-9_-]. */
	void (*case_name)(unsigned int i, char *buf, size_t size);
	int (*run)(unsigned int i, struct cad_tctx *t);
};

extern const struct cad_tsuite cad_suite_verifier;
extern const struct cad_tsuite cad_suite_reduce;
extern const struct cad_tsuite cad_suite_vm;
extern const struct cad_tsuite cad_suite_exec;

/* All suites, NULL-terminated. */
extern const struct cad_tsuite *const cad_suites[];

/* Memory each case may take from work (callers provide at least this). */
#define CAD_TWORK_SIZE (8u << 20)

/* Run case i of s with t->work reset; 0 or -1 with t->msg set. */
int cad_trun(const struct cad_tsuite *s, unsigned int i, struct cad_tctx *t);

int cad_tfail(struct cad_tctx *t, const char *file, int line, const char *fmt, ...)
	CAD_PRINTF(4, 5);

#define T_FAIL(t, ...) cad_tfail((t), __FILE__, __LINE__, __VA_ARGS__)
#define T_CHECK(t, cond, ...) do { if (!(cond)) return T_FAIL((t), __VA_ARGS__); } while (0)

/* Zeroed, 8-byte aligned memory from t->work, or NULL. */
void *cad_talloc(struct cad_tctx *t, __u64 size);

/* Serialise desc into t->work and verify it.  0 on success with *prog
 * set; otherwise the verifier's result with its log in t->msg. */
int cad_tbuild(struct cad_tctx *t, const struct cad_image_desc *desc, struct cad_prog *prog);

bool cad_tcontains(const char *haystack, const char *needle);
int cad_tmemcmp(const void *a, const void *b, __u64 n);

/* Deterministic pseudo-random numbers (xorshift64*). */
static inline __u64 cad_trand(__u64 *state)
{
	__u64 x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

#ifdef __cplusplus
}
#endif

#endif /* CAD_SELFTEST_H */
