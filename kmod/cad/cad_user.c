// SPDX-License-Identifier: GPL-2.0
/*
 * cad_user.c - what each user holds of the module's kernel memory:
 * programs loaded, bytes of their images, scratch and tables, groups made.
 *
 * Users are found by uid (the opener's real uid, the one its pins are
 * charged to) in a hash table; an entry lives while a file the user
 * opened or a group it made does.  The counters are raised with a
 * compare-exchange against the limits (module parameters, read at each
 * charge), so two loads at once cannot both pass a limit that has room
 * for one; everything charged is given back where it is freed.
 */
#include <linux/hashtable.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/user_namespace.h>

#include "cad_priv.h"

#define CAD_USER_HASH_BITS 6

static DEFINE_HASHTABLE(cad_users, CAD_USER_HASH_BITS);
static DEFINE_SPINLOCK(cad_users_lock);

atomic64_t cad_programs = ATOMIC64_INIT(0);
atomic64_t cad_kmem_bytes = ATOMIC64_INIT(0);
atomic64_t cad_groups_now = ATOMIC64_INIT(0);

struct cad_user *cad_user_get(kuid_t uid)
{
	struct cad_user *u, *fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);

	spin_lock(&cad_users_lock);
	hash_for_each_possible(cad_users, u, hnode, __kuid_val(uid))
		if (uid_eq(u->uid, uid)) {
			refcount_inc(&u->refs);
			spin_unlock(&cad_users_lock);
			kfree(fresh);
			return u;
		}
	if (fresh) {
		fresh->uid = uid;
		refcount_set(&fresh->refs, 1);
		hash_add(cad_users, &fresh->hnode, __kuid_val(uid));
	}
	spin_unlock(&cad_users_lock);
	return fresh;
}

void cad_user_put(struct cad_user *u)
{
	if (!u || !refcount_dec_and_lock(&u->refs, &cad_users_lock))
		return;
	hash_del(&u->hnode);
	spin_unlock(&cad_users_lock);
	WARN_ON_ONCE(atomic_read(&u->programs) || atomic64_read(&u->kmem) ||
		     atomic_read(&u->groups));
	kfree(u);
}

/* Raises *v by 1 unless it would pass max. */
static bool count_up(atomic_t *v, unsigned int max)
{
	int cur = atomic_read(v);

	do {
		if (cur < 0 || (unsigned int)cur >= max)
			return false;
	} while (!atomic_try_cmpxchg(v, &cur, cur + 1));
	return true;
}

/* Into the kernel's log (ratelimited), for the administrator: which
 * limit refused what, and how to raise it.
 */
static void refuse(const char *what, unsigned long long want, unsigned long long limit,
		   const char *param)
{
	pr_warn_ratelimited("cad: %s[%d] uid %u: %s: the user would have %llu, over the limit of %llu (%s, a parameter of cad.ko: raise it with echo N > /sys/module/cad/parameters/%s)\n",
			    current->comm, task_pid_nr(current),
			    from_kuid_munged(current_user_ns(), current_uid()),
			    what, want, limit, param, param);
}

int cad_user_add_program(struct cad_user *u, struct cad_log *log)
{
	const unsigned int max = READ_ONCE(cad_max_user_programs);

	if (!count_up(&u->programs, max)) {
		cad_logf(log,
			 "load: the user has %u programs loaded, the limit per user (max_user_programs, a parameter of cad.ko)",
			 max);
		refuse("cannot load another program", (u64)atomic_read(&u->programs) + 1, max,
		       "max_user_programs");
		return -EMFILE;
	}
	atomic64_inc(&cad_programs);
	return 0;
}

void cad_user_sub_program(struct cad_user *u)
{
	atomic_dec(&u->programs);
	atomic64_dec(&cad_programs);
}

int cad_user_charge(struct cad_user *u, u64 bytes, u64 *charged, struct cad_log *log)
{
	const u64 max = (u64)READ_ONCE(cad_max_user_kmem_mb) << 20;
	s64 cur = atomic64_read(&u->kmem);

	do {
		if (bytes > max || cur < 0 || (u64)cur > max - bytes) {
			cad_logf(log,
				 "load: %llu more bytes of kernel memory (image, scratch, tables) exceed the %llu MiB limit per user (max_user_kmem_mb, a parameter of cad.ko)",
				 bytes, max >> 20);
			refuse("cannot allocate more kernel memory for programs (bytes)",
			       (u64)cur + bytes, max, "max_user_kmem_mb");
			return -ENOMEM;
		}
	} while (!atomic64_try_cmpxchg(&u->kmem, &cur, cur + (s64)bytes));
	atomic64_add(bytes, &cad_kmem_bytes);
	*charged += bytes;
	return 0;
}

void cad_user_uncharge(struct cad_user *u, u64 bytes)
{
	atomic64_sub(bytes, &u->kmem);
	atomic64_sub(bytes, &cad_kmem_bytes);
}

int cad_user_add_group(struct cad_user *u)
{
	const unsigned int max = READ_ONCE(cad_max_user_groups);

	if (!count_up(&u->groups, max)) {
		refuse("cannot make another group", (u64)atomic_read(&u->groups) + 1, max,
		       "max_user_groups");
		return -ENOSPC;
	}
	atomic64_inc(&cad_groups_now);
	return 0;
}

void cad_user_sub_group(struct cad_user *u)
{
	atomic_dec(&u->groups);
	atomic64_dec(&cad_groups_now);
}

/* The users parameter: "uid programs kmem_bytes groups", a line a user
 * with an open file or a group, as many as a page holds.
 */
int cad_users_show(char *buf, const struct kernel_param *kp)
{
	struct cad_user *u;
	int len = 0, bkt;

	spin_lock(&cad_users_lock);
	hash_for_each(cad_users, bkt, u, hnode) {
		if (len >= PAGE_SIZE - 64)
			break;
		len += scnprintf(buf + len, PAGE_SIZE - len, "%u %d %lld %d\n",
				 from_kuid_munged(&init_user_ns, u->uid), atomic_read(&u->programs),
				 (long long)atomic64_read(&u->kmem), atomic_read(&u->groups));
	}
	spin_unlock(&cad_users_lock);
	return len;
}
