/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * cad_compat.h - the only place where the core differs between the Linux
 * kernel and user space.  The core is freestanding C11: it includes this
 * header and the ABI header, nothing else.
 *
 * It maps: fixed-width and boolean types, memcpy/memset, errno values
 * (Linux numbers in both worlds), a zeroing allocator used by the verifier
 * in process context only, and the FPU section around floating-point code.
 */
#ifndef CAD_COMPAT_H
#define CAD_COMPAT_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/stdarg.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <asm/fpu/api.h>

typedef uintptr_t cad_uptr;

/* What the verifier allocates for a program is the caller's: charged to
 * its memory cgroup. */
static inline void *cad_zalloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL_ACCOUNT);
}

static inline void cad_free(void *p)
{
	kvfree(p);
}

/* Floating point in the kernel only between these; they disable
 * preemption, so callers keep each section short (see cad_reduce). */
#define cad_fpu_begin() kernel_fpu_begin()
#define cad_fpu_end()   kernel_fpu_end()
/* Between two chunks of a long step (outside FPU sections). */
#define cad_yield()     cond_resched()

#define CAD_PRINTF(a, b) __printf(a, b)
#define CAD_HOT /* the module's own layout is the kernel's business */

#else /* user space, -ffreestanding */

#include <stddef.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <linux/types.h>

typedef uintptr_t cad_uptr;

/* The host C library provides these two; nothing else of it is used.
 * (C++ code that includes the core gets them from <stdlib.h>, whose
 * declarations differ in exception specification.) */
#ifdef __cplusplus
#include <stdlib.h>
#else
extern void *calloc(size_t nmemb, size_t size);
extern void free(void *ptr);
#endif

static inline void *cad_zalloc(size_t size)
{
	return calloc(1, size ? size : 1);
}

static inline void cad_free(void *p)
{
	free(p);
}

#define cad_fpu_begin() do { } while (0)
#define cad_fpu_end()   do { } while (0)
#define cad_yield()     do { } while (0)

#define CAD_PRINTF(a, b) __attribute__((format(printf, a, b)))
/* The executor's per-call functions, laid out with cadrt's small-message
 * path in .text.hot (cadrt/src/runtime.h, CADRT_HOT). */
#define CAD_HOT __attribute__((hot))

#ifndef EINVAL
#define EIO          5
#define E2BIG        7
#define EAGAIN       11
#define ENOMEM       12
#define EFAULT       14
#define EINVAL       22
#define ENOSPC       28
#define EPIPE        32
#define EDEADLK      35
#define EINPROGRESS  115
#define ECANCELED    125
#endif

#endif /* __KERNEL__ */

#define cad_memcpy(d, s, n) __builtin_memcpy((d), (s), (n))
#define cad_memset(d, c, n) __builtin_memset((d), (c), (n))

#define CAD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Unaligned, aliasing-safe views of element types: buffers are bound at
 * run time, so element accesses cannot assume natural alignment. */
#define CAD_UNALIGNED __attribute__((aligned(1), may_alias))

/* Before a loop whose arrays are each either the same or disjoint: no
 * dependence is carried from one iteration to another, so the compiler
 * may vectorise without runtime alias checks. */
#ifdef __clang__
#define CAD_IVDEP  /* only the fuzzer is built with clang: speed is moot */
#else
#define CAD_IVDEP _Pragma("GCC ivdep")
#endif

#endif /* CAD_COMPAT_H */
