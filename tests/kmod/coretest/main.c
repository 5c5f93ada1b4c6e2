// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cad_coretest.ko - the core's test suites, inside the kernel: the same
 * verifier table, reductions, VM and executor cases that GoogleTest runs
 * in user space, against the same core sources built by Kbuild.  Results
 * go to the kernel log, one line per case:
 *   CADTEST PASS verifier/back-edge
 *   CADTEST FAIL vm/op-fadd: vm_cases.c:160: ...
 *   CADTEST SUMMARY passed=379 failed=0
 * tests/kmod/test_coretest.py boots a VM, loads this module and reads them.
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "../../core/selftest.h"

static int __init cad_coretest_init(void)
{
	unsigned int passed = 0, failed = 0, i;
	const struct cad_tsuite *const *s;
	struct cad_tctx *t;
	char name[96];

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->work = vmalloc(CAD_TWORK_SIZE);
	t->work_size = CAD_TWORK_SIZE;
	t->vm_scratch = kvmalloc(CAD_VM_SCRATCH_SIZE, GFP_KERNEL);  /* 188 KiB */
	if (!t->work || !t->vm_scratch) {
		vfree(t->work);
		kvfree(t->vm_scratch);
		kfree(t);
		return -ENOMEM;
	}
	for (s = cad_suites; *s; s++) {
		for (i = 0; i < (*s)->count(); i++) {
			(*s)->case_name(i, name, sizeof(name));
			if (cad_trun(*s, i, t)) {
				pr_err("CADTEST FAIL %s/%s: %s\n", (*s)->name, name, t->msg);
				failed++;
			} else {
				pr_info("CADTEST PASS %s/%s\n", (*s)->name, name);
				passed++;
			}
			cond_resched();
		}
	}
	pr_info("CADTEST SUMMARY passed=%u failed=%u\n", passed, failed);
	vfree(t->work);
	kvfree(t->vm_scratch);
	kfree(t);
	return 0;
}

static void __exit cad_coretest_exit(void)
{
}

module_init(cad_coretest_init);
module_exit(cad_coretest_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("CAD core test suites, run in the kernel");
