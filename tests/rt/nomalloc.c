/* libcad_nomalloc.so - traps the allocator inside signal handlers.
 *
 *   LD_PRELOAD=build/lib/libcad_nomalloc.so PROGRAM ARGS...
 *
 * Every handler a program installs with sigaction() runs inside a wrapper
 * that marks the thread as "in a handler"; malloc, calloc, realloc, free
 * and the aligned allocators called while the mark is set print what was
 * called and a backtrace, and abort.  None of them is async-signal-safe:
 * a handler that interrupted malloc and calls it again can deadlock or
 * corrupt the heap.  The signal engine progresses in its handler, so
 * test_runtime.py runs it under this library.
 *
 * At exit a process whose handlers ran prints
 *   cad_nomalloc: pid P: N signal handler runs, none allocated
 * so that a test can see that handlers did run.
 *
 * CAD_NOMALLOC_SELFTEST=1: the library installs a handler of its own that
 * calls malloc and raises its signal, to show that the trap works (the
 * process must abort).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void __libc_free(void *p);

/* Initial-exec: the first access from a thread must not allocate. */
static __thread int in_handler __attribute__((tls_model("initial-exec")));

/* The program's handlers, by signal. */
static void *handlers[_NSIG];
static int siginfo[_NSIG];
static atomic_ulong runs;

static void say(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(2, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void trap(const char *what)
{
	if (!in_handler)
		return;
	in_handler = 0; /* what follows may not come back here */
	say("cad_nomalloc: ");
	say(what);
	say(" called in a signal handler\n");
	void *frames[48];
	int n = backtrace(frames, 48);
	backtrace_symbols_fd(frames, n, 2);
	abort();
}

void *malloc(size_t size)
{
	trap("malloc");
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	trap("calloc");
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	trap("realloc");
	return __libc_realloc(p, size);
}

void free(void *p)
{
	if (p)
		trap("free");
	__libc_free(p);
}

void *memalign(size_t align, size_t size)
{
	trap("memalign");
	return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	trap("aligned_alloc");
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	trap("posix_memalign");
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = __libc_memalign(align, size);
	if (!p && size)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t size)
{
	trap("valloc");
	return __libc_valloc(size);
}

void *pvalloc(size_t size)
{
	trap("pvalloc");
	return __libc_pvalloc(size);
}

static void wrapper(int sig, siginfo_t *info, void *uc)
{
	const int outer = in_handler;
	in_handler = 1;
	atomic_fetch_add_explicit(&runs, 1, memory_order_relaxed);
	void *h = handlers[sig];
	if (siginfo[sig])
		((void (*)(int, siginfo_t *, void *))h)(sig, info, uc);
	else
		((void (*)(int))h)(sig);
	in_handler = outer;
}

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	static sigaction_fn real;
	if (!real)
		real = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	if (sig <= 0 || sig >= _NSIG)
		return real(sig, act, old);
	void *prev = handlers[sig];
	const int prev_info = siginfo[sig];
	struct sigaction mine;
	const struct sigaction *use = act;
	if (act) {
		const int info = (act->sa_flags & SA_SIGINFO) != 0;
		void *h = info ? (void *)act->sa_sigaction : (void *)act->sa_handler;
		if (h != (void *)SIG_DFL && h != (void *)SIG_IGN) {
			handlers[sig] = h;
			siginfo[sig] = info;
			mine = *act;
			mine.sa_flags |= SA_SIGINFO;
			mine.sa_sigaction = wrapper;
			use = &mine;
		}
	}
	const int rc = real(sig, use, old);
	if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == wrapper) {
		if (prev_info) {
			old->sa_sigaction = (void (*)(int, siginfo_t *, void *))prev;
		} else {
			old->sa_flags &= ~SA_SIGINFO;
			old->sa_handler = (void (*)(int))prev;
		}
	}
	return rc;
}

static void allocating_handler(int sig)
{
	(void)sig;
	void *volatile p = malloc(16); /* volatile: not optimised away */
	free(p);
}

__attribute__((constructor)) static void start(void)
{
	void *frame;
	backtrace(&frame, 1); /* loads libgcc_s now, not in a handler */
	const char *self = getenv("CAD_NOMALLOC_SELFTEST");
	if (self && *self == '1') {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = allocating_handler;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
		raise(SIGUSR1);
		say("cad_nomalloc: the self-test's handler allocated and nothing trapped it\n");
	}
}

__attribute__((destructor)) static void stop(void)
{
	const unsigned long n = atomic_load(&runs);
	if (!n)
		return;
	char line[128];
	snprintf(line, sizeof line, "cad_nomalloc: pid %d: %lu signal handler runs, none allocated\n", (int)getpid(), n);
	say(line);
}
