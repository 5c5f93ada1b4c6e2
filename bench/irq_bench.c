/* irq_bench - what interrupting a computing process costs on this machine:
 * the price of every asynchronous progress engine, against the copies it
 * would make progress on.  Two processes on two CPUs (when there are two):
 * B computes; A
 *   - signals B's computing thread (tgkill, the signal engine's kick): the
 *     microseconds A spends in the call, and until B's handler runs;
 *   - wakes a thread of B's that sleeps on a futex while B computes on the
 *     same CPU (the thread engine's wake-up): until that thread runs.
 * And, in one process, the work lost per interrupt of a periodic timer
 * signal to itself (a local interrupt, no IPI), and memcpy of 64 KiB and
 * 1 MiB, the copies these costs are weighed against (cadrt's CADRT_KICK_MIN).
 *
 *   irq_bench [--json bench/results/interrupts.json]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bench_out.h"

struct shared {
	_Atomic int tid, helper_tid, stop, phase;
	_Atomic long got;
	_Atomic uint32_t bell;
	double t_handler, t_helper;
};
static struct shared *S;
#define ROUNDS 300

static double now_us(void)
{
	return bench_now() * 1e6;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
}

static void on_kick(int sig)
{
	(void)sig;
	S->t_handler = now_us();
	atomic_fetch_add(&S->got, 1);
}

static void *helper(void *arg)
{
	(void)arg;
	S->helper_tid = (int)syscall(SYS_gettid);
	while (!S->stop) {
		const uint32_t v = S->bell;

		syscall(SYS_futex, &S->bell, FUTEX_WAIT, v, NULL, NULL, 0);
		S->t_helper = now_us();
		atomic_fetch_add(&S->got, 1);
	}
	return NULL;
}

/* B: computes until told to stop, with a helper thread asleep on bell. */
static void computer(void)
{
	pthread_t h;
	volatile double x = 1;

	signal(SIGUSR1, on_kick);
	pthread_create(&h, NULL, helper, NULL);
	S->tid = (int)syscall(SYS_gettid);
	while (!S->stop)
		for (int i = 0; i < 100; i++)
			x = x * 1.0000001 + 1e-9;
	S->bell++;
	syscall(SYS_futex, &S->bell, FUTEX_WAKE, 1, NULL, NULL, 0);
	pthread_join(h, NULL);
	_exit(0);
}

static void spin_us(double us)
{
	for (const double end = now_us() + us; now_us() < end;)
		;
}

static timer_t g_timer;
static volatile long g_ticks;
static void on_tick(int sig)
{
	(void)sig;
	g_ticks++;
}

/* Iterations of a compute loop in us microseconds, with a timer signal
 * every period_ns (0: none). */
static double work(double us, long period_ns)
{
	volatile double x = 1;
	double it = 0;
	struct itimerspec on = { { 0, period_ns }, { 0, period_ns } }, off = { { 0, 0 }, { 0, 0 } };

	if (period_ns)
		timer_settime(g_timer, 0, &on, NULL);
	for (const double end = now_us() + us; now_us() < end; it++)
		for (int i = 0; i < 100; i++)
			x = x * 1.0000001 + 1e-9;
	timer_settime(g_timer, 0, &off, NULL);
	return it;
}

int main(int argc, char **argv)
{
	const char *json = bench_json_arg(argc, argv, "irq_bench");
	const int two = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	struct bench_fig *f_send = bench_add("signal a computing process: tgkill", "us", NULL, "\"of\": \"sender\"");
	struct bench_fig *f_sig = bench_add("signal a computing process: until its handler runs", "us", NULL,
					    "\"of\": \"receiver\"");
	struct bench_fig *f_wake = bench_add("wake a thread beside a computing one: until it runs", "us", NULL,
					     "\"of\": \"receiver\"");
	struct bench_fig *f_tick = bench_add("timer signal to itself: work lost per signal", "us", NULL, "\"of\": \"self\"");
	struct bench_fig *f_c64 = bench_add("memcpy 64KiB", "us", NULL, "\"bytes\": 65536");
	struct bench_fig *f_c1m = bench_add("memcpy 1MiB", "us", NULL, "\"bytes\": 1048576");
	struct bench_fig *f_r64 = bench_add("signal until handler / memcpy 64KiB", "x", NULL, "\"bytes\": 65536");
	struct bench_fig *f_r1m = bench_add("signal until handler / memcpy 1MiB", "x", NULL, "\"bytes\": 1048576");

	S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED)
		return 1;
	const pid_t b = fork();
	if (b == 0) {
		pin(two ? 1 : 0);
		computer();
	}
	pin(0);
	while (!S->tid || !S->helper_tid)
		;
	spin_us(10000);

	struct sigevent se = { 0 };
	se.sigev_notify = SIGEV_THREAD_ID;
	se.sigev_signo = SIGRTMIN + 5;
	se._sigev_un._tid = (int)syscall(SYS_gettid);
	signal(SIGRTMIN + 5, on_tick);
	timer_create(CLOCK_MONOTONIC, &se, &g_timer);
	char *src = aligned_alloc(4096, 1 << 20), *dst = aligned_alloc(4096, 1 << 20);
	memset(src, 1, 1 << 20);
	memset(dst, 0, 1 << 20);

	for (int rep = 0; rep < 7; rep++) {
		double send = 0, sig = 0, wake = 0;

		for (int i = 0; i < ROUNDS; i++) {
			long g = S->got;
			const double t0 = now_us();

			syscall(SYS_tgkill, b, S->tid, SIGUSR1);
			send += now_us() - t0;
			while (S->got == g)
				;
			sig += S->t_handler - t0;
			spin_us(20);
			g = S->got;
			const double t1 = now_us();
			S->bell++;
			syscall(SYS_futex, &S->bell, FUTEX_WAKE, 1, NULL, NULL, 0);
			while (S->got == g)
				;
			wake += S->t_helper - t1;
			spin_us(20);
		}
		bench_push(f_send, send / ROUNDS);
		bench_push(f_sig, sig / ROUNDS);
		bench_push(f_wake, wake / ROUNDS);

		const double base = work(50000, 0);
		g_ticks = 0;
		const double with = work(50000, 100000);
		bench_push(f_tick, g_ticks ? (1 - with / base) * 50000 / g_ticks : 0);

		double c64 = 0, c1m = 0;
		for (int i = 0; i < 100; i++) {
			double t = now_us();
			memcpy(dst, src, 65536);
			__asm__ volatile("" ::"r"(dst) : "memory");
			c64 += now_us() - t;
			t = now_us();
			memcpy(dst, src, 1 << 20);
			__asm__ volatile("" ::"r"(dst) : "memory");
			c1m += now_us() - t;
		}
		bench_push(f_c64, c64 / 100);
		bench_push(f_c1m, c1m / 100);
		bench_push(f_r64, (sig / ROUNDS) / (c64 / 100));
		bench_push(f_r1m, (sig / ROUNDS) / (c1m / 100));
	}
	S->stop = 1;
	waitpid(b, NULL, 0);
	bench_print("irq_bench: interrupting a computing process, against copies");
	if (json &&
	    bench_write_json(json, "interrupts", "none",
			     two ? "two processes pinned to CPUs 0 and 1, B computing: A signals B's thread (tgkill), "
				   "or wakes B's helper thread asleep on a futex on B's CPU; 300 rounds per "
				   "repetition, the mean; a periodic timer signal (every 100 us) to a computing "
				   "process, work lost per signal; memcpy of warm buffers, the mean of 100"
				 : "one CPU: both processes share it (the figures include a context switch)"))
		return 1;
	return 0;
}
