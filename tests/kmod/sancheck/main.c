// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cad_sancheck.ko - makes the one bug its parameter names when loaded,
 * then refuses to load (-EAGAIN), so that it can be loaded again:
 *   bug=oob        a write one past a 32-byte kmalloc object (KASAN)
 *   bug=uaf        a read of a freed kmalloc object (KASAN)
 *   bug=sleep      a GFP_KERNEL allocation with a spinlock held (DEBUG_ATOMIC_SLEEP)
 *   bug=lockorder  two mutexes taken in both orders (lockdep)
 *   bug=none       nothing: the kernel log must stay clean
 * For the sanitised test kernel only (tests/kmod/test_sanitised.py): each
 * bug is made once, without harm to the rest of the boot.
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

static char *bug = "none";
module_param(bug, charp, 0444);
MODULE_PARM_DESC(bug, "oob, uaf, sleep, lockorder or none");

static DEFINE_SPINLOCK(sc_lock);
static DEFINE_MUTEX(sc_a);
static DEFINE_MUTEX(sc_b);

/* Hidden from the compiler, so that it neither warns nor folds the access. */
static volatile size_t sc_index = 32;

static int sc_oob(void)
{
	char *p = kmalloc(32, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	p[sc_index] = 1;
	kfree(p);
	return 0;
}

static int sc_uaf(void)
{
	char *p = kmalloc(32, GFP_KERNEL);
	char c;

	if (!p)
		return -ENOMEM;
	kfree(p);
	c = READ_ONCE(p[sc_index - 32]);
	pr_info("cad_sancheck: read %d after free\n", c);
	return 0;
}

static void sc_sleep(void)
{
	void *p;

	spin_lock(&sc_lock);
	p = kmalloc(64, GFP_KERNEL);
	spin_unlock(&sc_lock);
	kfree(p);
}

static void sc_lockorder(void)
{
	mutex_lock(&sc_a);
	mutex_lock(&sc_b);
	mutex_unlock(&sc_b);
	mutex_unlock(&sc_a);
	mutex_lock(&sc_b);
	mutex_lock(&sc_a);
	mutex_unlock(&sc_a);
	mutex_unlock(&sc_b);
}

static int __init cad_sancheck_init(void)
{
	int err = 0;

	pr_info("cad_sancheck: bug=%s\n", bug);
	if (!strcmp(bug, "oob"))
		err = sc_oob();
	else if (!strcmp(bug, "uaf"))
		err = sc_uaf();
	else if (!strcmp(bug, "sleep"))
		sc_sleep();
	else if (!strcmp(bug, "lockorder"))
		sc_lockorder();
	else if (strcmp(bug, "none"))
		return -EINVAL;
	pr_info("cad_sancheck: done\n");
	return err ? err : -EAGAIN;
}

module_init(cad_sancheck_init);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("Deliberate bugs for the sanitised test kernel's checks");
