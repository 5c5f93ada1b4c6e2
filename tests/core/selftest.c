// SPDX-License-Identifier: GPL-2.0 OR MIT
/* selftest.c - the runner's helpers, shared by GoogleTest and the kernel. */
#include "selftest.h"

const struct cad_tsuite *const cad_suites[] = {
	&cad_suite_verifier,
	&cad_suite_reduce,
	&cad_suite_vm,
	&cad_suite_exec,
	NULL,
};

int cad_tfail(struct cad_tctx *t, const char *file, int line, const char *fmt, ...)
{
	const char *base = file;
	va_list ap;
	int n;

	for (; *file; file++)
		if (*file == '/')
			base = file + 1;
	n = cad_snprintf(t->msg, sizeof(t->msg), "%s:%d: ", base, line);
	if (n < (int)sizeof(t->msg)) {
		va_start(ap, fmt);
		cad_vsnprintf(t->msg + n, sizeof(t->msg) - n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

void *cad_talloc(struct cad_tctx *t, __u64 size)
{
	__u64 at = (t->work_used + 7) & ~7ull;
	void *p;

	if (at > t->work_size || size > t->work_size - at)
		return NULL;
	p = t->work + at;
	t->work_used = at + size;
	cad_memset(p, 0, (size_t)size);
	return p;
}

int cad_trun(const struct cad_tsuite *s, unsigned int i, struct cad_tctx *t)
{
	t->msg[0] = '\0';
	t->work_used = 0;
	return s->run(i, t);
}

int cad_tbuild(struct cad_tctx *t, const struct cad_image_desc *desc, struct cad_prog *prog)
{
	__u64 size = cad_image_size(desc);
	struct cad_log log;
	void *img;
	int err;

	if (!size)
		return T_FAIL(t, "image does not fit in 4 GiB");
	img = cad_talloc(t, size);
	if (!img)
		return T_FAIL(t, "image of %llu bytes does not fit the work area",
			      (unsigned long long)size);
	err = cad_image_write(desc, img, size);
	if (err)
		return T_FAIL(t, "cad_image_write: %d", err);
	cad_log_init(&log, t->msg, sizeof(t->msg));
	return cad_verify(img, (__u32)size, NULL, prog, &log);
}

bool cad_tcontains(const char *h, const char *n)
{
	size_t i;

	if (!*n)
		return true;
	for (; *h; h++) {
		for (i = 0; n[i] && h[i] == n[i]; i++)
			;
		if (!n[i])
			return true;
	}
	return false;
}

int cad_tmemcmp(const void *a, const void *b, __u64 n)
{
	const __u8 *x = a, *y = b;
	__u64 i;

	for (i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}
