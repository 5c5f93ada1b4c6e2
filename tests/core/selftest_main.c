// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cad_selftest - the C suites in user space, printing the same lines as
 * the kernel test module (CADTEST PASS|FAIL suite/case, CADTEST SUMMARY),
 * so that tests/kmod compares the two runs case by case.
 */
#include <stdio.h>
#include <stdlib.h>

#include "selftest.h"

int main(void)
{
	struct cad_tctx t = { .work_size = CAD_TWORK_SIZE };
	unsigned int passed = 0, failed = 0, i;
	const struct cad_tsuite *const *s;
	char name[96];

	t.work = aligned_alloc(64, CAD_TWORK_SIZE);
	t.vm_scratch = aligned_alloc(64, CAD_VM_SCRATCH_SIZE);
	if (!t.work || !t.vm_scratch)
		return 2;
	for (s = cad_suites; *s; s++) {
		for (i = 0; i < (*s)->count(); i++) {
			(*s)->case_name(i, name, sizeof(name));
			if (cad_trun(*s, i, &t)) {
				printf("CADTEST FAIL %s/%s: %s\n", (*s)->name, name, t.msg);
				failed++;
			} else {
				printf("CADTEST PASS %s/%s\n", (*s)->name, name);
				passed++;
			}
		}
	}
	printf("CADTEST SUMMARY passed=%u failed=%u\n", passed, failed);
	free(t.work);
	free(t.vm_scratch);
	return failed ? 1 : 0;
}
