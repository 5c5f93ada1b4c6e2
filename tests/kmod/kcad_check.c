/* kcad_check - cad.ko through its raw ABI (kmod/uapi/cad.h), inside the VM.
 * Statically linked with the user-space core, which writes the programs.
 *
 *   kcad_check reject          the table of bad programs and bad ioctls
 *   kcad_check pipeline P N S  a chain broadcast of N bytes in S segments
 *                              over P processes; ranks 1.. start first and
 *                              then only read their status page (no system
 *                              call): the data must arrive while they spin
 *   kcad_check kill P N S      the same pipeline; rank 1 never starts and
 *                              is killed once the others are in flight:
 *                              each must end with -EPIPE within 1 s
 *   kcad_check exit P N S K    K times: the same pipeline, and every rank
 *                              killed at once as soon as all have started
 *                              (copies queued or in flight): the P
 *                              releases of one group race each other
 *   kcad_check cancel          a rank cancels; its peer ends -ECANCELED,
 *                              also when it starts afterwards; and when
 *                              it starts TOMBS collectives afterwards that
 *                              the other started and cancelled before
 *                              (more than a ring of 64 once kept): each
 *                              ends -ECANCELED at once, and their
 *                              tombstones go once it has seen them; and
 *                              a tombstone goes once a rank that had not
 *                              seen it has started a later collective
 *   kcad_check cycles K        2 ranks, K x (load+start, wait through
 *                              read() or poll(), free)
 *   kcad_check inflight cancel|free N
 *                              2 ranks, one N-byte transfer; the sender
 *                              starts and sleeps in read(), the receiver
 *                              starts and 10 ms later cancels (or frees):
 *                              with defer=1 the sender copies in read()
 *                              while that happens.  Once told it ended (or once
 *                              free returns), the receiver's buffer must
 *                              not change any more
 *   kcad_check pins            where buffers may be pinned (not for writing
 *                              in a shared file mapping; yes in shared
 *                              memory) and the pinned-memory limit, which
 *                              is per user: a second process of the same
 *                              user meets the first one's pins
 *   kcad_check reserved        the table of reserved and unused fields:
 *                              one row per field of the program image and
 *                              of the ioctls' structs, each refused with
 *                              -EINVAL (-E2BIG for bytes past a struct)
 *                              and nothing done
 *   kcad_check memlock         pins are charged to RLIMIT_MEMLOCK: at 64 KiB a
 *                              process of uid 1000 cannot load a program
 *                              that pins more (-ENOMEM, the limit named),
 *                              runs one that fits 100 times with refused
 *                              loads between (nothing leaks), and nothing
 *                              stays pinned once it exits; root
 *                              (CAP_IPC_LOCK) is exempt
 *   kcad_check bounce          CAD_LOAD_BOUNCE at RLIMIT_MEMLOCK 64 KiB, uid 1000:
 *                              two ranks whose buffers (send only, in
 *                              place, receive only; 8 bytes to 1 MiB, not
 *                              page aligned) go through kernel memory run
 *                              a collective twice, right (without the flag
 *                              the load is refused); a run ended inside
 *                              its START shows as ended only at the
 *                              owner's TEST, its data then in place; a
 *                              buffer unmapped before START or before the
 *                              copy out fails it with -EFAULT;
 *                              max_user_kmem_mb refuses;
 *                              nothing is left at exit
 *   kcad_check stall           rank 0's buffer is remapped onto a FUSE file
 *                              whose reads are never answered, so its START
 *                              stalls looking the pages up: rank 1's load
 *                              and start return at once and it dies at once
 *                              when killed; rank 0 ends once the server goes
 *   kcad_check owner           a child that inherited the file cannot start,
 *                              cancel or free its parent's program (-EPERM),
 *                              may test it; the parent still owns it
 *   kcad_check access          a group made by uid 1000 admits uid 1000 with
 *                              gid 1000, not uid 1001, nor uid 1000 with
 *                              gid 1001 or in a user namespace of its own
 *                              (-EPERM)
 *   kcad_check wide N read|spin|bystander
 *                              2 ranks, one transfer of N bytes, more than
 *                              a pass may copy: the pass cuts it (the
 *                              module's cut counter grows) and the rest
 *                              goes on in the receiver, asleep in read()
 *                              or spinning on its status page (then in
 *                              the module's work item); every byte
 *                              arrives.  bystander: the receiver spins and
 *                              a third member of the group, asleep in
 *                              read() (with defer=1 the one woken to
 *                              copy), is killed in the middle
 *   kcad_check busy read|pause a program that would copy for minutes (1024
 *                              COPY nodes of 16 MiB): its START returns
 *                              after a pass; meanwhile another group joins
 *                              at once, a second member of the busy group
 *                              within a few passes, and the busy process,
 *                              asleep in read() (doing passes) or in
 *                              pause() (a work item of the module does),
 *                              dies within a pass of SIGKILL
 *   kcad_check fuzz SECONDS SEED [OPERATOR-IMAGE | NAME.RANK.cadbc ...]
 *                              rounds of 4 ranks running a schedule of
 *                              checked collectives between random
 *                              ioctls, images, buffers, forks and kills,
 *                              and one-rank programs with user-defined
 *                              operators, intact or with random bytes
 *                              changed; the schedule runs cadc-compiled
 *                              algorithms too (the .cadbc files), checked
 *                              against the loopback engine (see do_fuzz)
 *
 * Prints "KCAD PASS <case>" or "KCAD FAIL <case>: why" per case and
 * "KCAD SUMMARY passed=N failed=M"; exits 1 if anything failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/fuse.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../kmod/core/cad_core.h"
#include "../core/loopback.h"

static int g_pass, g_fail;

#define CHECK(name, cond, ...)                                                 \
	do {                                                                   \
		if (cond) {                                                    \
			printf("KCAD PASS %s\n", name);                        \
			g_pass++;                                              \
		} else {                                                       \
			printf("KCAD FAIL %s: ", name);                        \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			g_fail++;                                              \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* How many times slower the kernel under test is than Debian's:
 * CAD_TEST_TIMEOUT_FACTOR, which tests/kmod/vm.py sets in the VM under
 * the sanitised kernel (KASAN, lockdep).  Every time limit of a check is
 * multiplied by it (limit()); the work done never is. */
static double g_slow = 1.0;

static double limit(double secs)
{
	return secs * g_slow;
}

/* ------------------------------------------------------------------ */
/* Programs                                                            */

#define MAXN 1024

struct builder {
	struct cad_buffer bufs[8];
	uint32_t nb;
	struct cad_node nodes[MAXN];
	uint32_t nn;
	uint32_t succ[MAXN][2];
	uint32_t nsucc[MAXN];
	uint32_t rank, nranks;
};

static const char strings[] = "\0send\0recv\0tmp";
enum { S_SEND = 1, S_RECV = 6, S_TMP = 11 };

static void b_init(struct builder *b, uint32_t rank, uint32_t nranks)
{
	memset(b, 0, sizeof(*b));
	b->rank = rank;
	b->nranks = nranks;
}

static uint32_t b_buf(struct builder *b, uint32_t kind, uint32_t access, uint64_t size)
{
	const uint32_t name = kind == CAD_BUF_SEND ? S_SEND : kind == CAD_BUF_RECV ? S_RECV : S_TMP;

	b->bufs[b->nb] = (struct cad_buffer){ .kind = kind, .access = access, .size = size, .name = name };
	return b->nb++;
}

static uint32_t b_node(struct builder *b, struct cad_node n)
{
	n.line = CAD_NO_LINE;
	b->nodes[b->nn] = n;
	return b->nn++;
}

static void b_edge(struct builder *b, uint32_t from, uint32_t to)
{
	b->succ[from][b->nsucc[from]++] = to;
}

/* d written as an image (malloc'd, 8-byte aligned), its size in *size;
 * exits if it cannot be. */
static void *write_image(const struct cad_image_desc *d, uint32_t *size)
{
	const uint64_t sz = cad_image_size(d);
	void *img = aligned_alloc(8, (sz + 7) & ~7ull);

	if (!img || cad_image_write(d, img, sz)) {
		fprintf(stderr, "kcad_check: cannot write an image\n");
		exit(2);
	}
	*size = (uint32_t)sz;
	return img;
}

/* The image (malloc'd, 8-byte aligned) and its size. */
static void *b_image(struct builder *b, uint32_t *size)
{
	static struct cad_edge edges[2 * MAXN];
	struct cad_image_desc d = { 0 };
	uint32_t ne = 0;

	for (uint32_t i = 0; i < b->nn; i++) {
		b->nodes[i].edge_first = ne;
		b->nodes[i].edge_count = b->nsucc[i];
		for (uint32_t k = 0; k < b->nsucc[i]; k++)
			edges[ne++].to = b->succ[i][k];
	}
	d.rank = b->rank;
	d.nranks = b->nranks;
	d.buffers = b->bufs;
	d.n_buffers = b->nb;
	d.nodes = b->nodes;
	d.n_nodes = b->nn;
	d.edges = edges;
	d.n_edges = ne;
	d.strings = strings;
	d.n_strings = sizeof(strings);
	return write_image(&d, size);
}

/* A chain broadcast: rank 0 sends S segments to 1, rank r forwards each to
 * r + 1 as it arrives.  Buffer 0 is the data. */
static void *chain_bcast(uint32_t rank, uint32_t P, uint64_t n, uint32_t S, uint32_t *size)
{
	struct builder *b = malloc(sizeof(*b));
	const uint64_t seg = (n + S - 1) / S;
	void *img;

	b_init(b, rank, P);
	if (rank == 0)
		b_buf(b, CAD_BUF_SEND, CAD_ACC_READ, n);
	else
		b_buf(b, CAD_BUF_RECV, CAD_ACC_READ | CAD_ACC_WRITE, n);
	for (uint32_t k = 0; k < S; k++) {
		const uint64_t off = k * seg, len = off + seg > n ? n - off : seg;
		uint32_t recv = ~0u;

		if (rank > 0)
			recv = b_node(b, (struct cad_node){ .kind = CAD_NODE_RECV, .peer = rank - 1, .dst_buf = 0,
							    .dst_off = off, .len = len });
		if (rank + 1 < P) {
			uint32_t send = b_node(b, (struct cad_node){ .kind = CAD_NODE_SEND, .peer = rank + 1,
								     .src_buf = 0, .src_off = off, .len = len });
			if (recv != ~0u)
				b_edge(b, recv, send);
		}
	}
	img = b_image(b, size);
	free(b);
	return img;
}

/* Two ranks swap 8 bytes: buffer 0 (send) -> peer's buffer 1 (recv). */
static void *exchange(uint32_t rank, uint32_t *size)
{
	struct builder b;

	b_init(&b, rank, 2);
	b_buf(&b, CAD_BUF_SEND, CAD_ACC_READ, 8);
	b_buf(&b, CAD_BUF_RECV, CAD_ACC_WRITE, 8);
	b_node(&b, (struct cad_node){ .kind = CAD_NODE_SEND, .peer = 1 - rank, .src_buf = 0, .len = 8 });
	b_node(&b, (struct cad_node){ .kind = CAD_NODE_RECV, .peer = 1 - rank, .dst_buf = 1, .len = 8 });
	return b_image(&b, size);
}

/* One rank: buffer 1 += buffer 0 as f64 (a REDUCE), through a scratch copy. */
static void *reduce_one(uint32_t *size, uint64_t bytes)
{
	struct builder b;
	uint32_t c, r;

	b_init(&b, 0, 1);
	b_buf(&b, CAD_BUF_SEND, CAD_ACC_READ, bytes);
	b_buf(&b, CAD_BUF_RECV, CAD_ACC_READ | CAD_ACC_WRITE, bytes);
	b_buf(&b, CAD_BUF_SCRATCH, CAD_ACC_READ | CAD_ACC_WRITE, bytes);
	c = b_node(&b, (struct cad_node){ .kind = CAD_NODE_COPY, .src_buf = 0, .dst_buf = 2, .len = bytes });
	r = b_node(&b, (struct cad_node){ .kind = CAD_NODE_REDUCE, .dtype = CAD_DT_DOUBLE, .op = CAD_OP_SUM,
					   .src_buf = 2, .dst_buf = 1, .len = bytes });
	b_edge(&b, c, r);
	return b_image(&b, size);
}

/* One rank of nranks: n COPY nodes of seg bytes between two scratch
 * buffers, back and forth, each after the one before. */
static void *long_copies(uint32_t nranks, uint64_t seg, uint32_t n, uint32_t *size)
{
	struct builder *b = malloc(sizeof(*b));
	void *img;

	b_init(b, 0, nranks);
	b_buf(b, CAD_BUF_SCRATCH, CAD_ACC_READ | CAD_ACC_WRITE, seg);
	b_buf(b, CAD_BUF_SCRATCH, CAD_ACC_READ | CAD_ACC_WRITE, seg);
	for (uint32_t i = 0; i < n && i < MAXN; i++) {
		b_node(b, (struct cad_node){ .kind = CAD_NODE_COPY, .src_buf = i % 2, .dst_buf = 1 - i % 2, .len = seg });
		if (i)
			b_edge(b, i - 1, i);
	}
	img = b_image(b, size);
	free(b);
	return img;
}

/* ------------------------------------------------------------------ */
/* The device                                                          */

struct dev {
	int fd;
	const volatile struct cad_status *st;
};

static int dev_open(struct dev *d, uint64_t key, uint32_t rank, uint32_t nranks)
{
	struct cad_ioc_join j = { .size = sizeof(j), .rank = rank, .nranks = nranks, .key = key };

	d->fd = open("/dev/cad", O_RDWR | O_CLOEXEC);
	if (d->fd < 0)
		return -errno;
	if (ioctl(d->fd, CAD_IOC_JOIN, &j))
		return -errno;
	d->st = mmap(NULL, CAD_STATUS_SIZE, PROT_READ, MAP_SHARED, d->fd, 0);
	if (d->st == MAP_FAILED)
		return -errno;
	return 0;
}

struct load_res {
	int err;
	uint32_t handle;
	char log[512];
};

static struct load_res load(int fd, const void *img, uint32_t size, const uint64_t *addrs, uint32_t nbufs,
			    uint64_t ctx, uint32_t flags, uint64_t seq)
{
	struct load_res r = { 0 };
	struct cad_ioc_load l = { .size = sizeof(l), .prog_size = size, .prog = (uintptr_t)img,
				  .buf_addrs = (uintptr_t)addrs, .nbufs = nbufs, .log_size = sizeof(r.log),
				  .log_buf = (uintptr_t)r.log, .ctx = ctx, .flags = flags, .seq = seq };

	r.err = ioctl(fd, CAD_IOC_LOAD, &l) ? -errno : 0;
	r.handle = l.handle;
	return r;
}

static int handle_op(int fd, unsigned long cmd, uint32_t h, int *result)
{
	struct cad_ioc_handle a = { .size = sizeof(a), .handle = h };
	int rc = ioctl(fd, cmd, &a) ? -errno : 0;

	if (result)
		*result = a.result;
	return rc;
}

static int start(int fd, uint32_t h, uint64_t seq)
{
	struct cad_ioc_start s = { .size = sizeof(s), .handle = h, .seq = seq };

	return ioctl(fd, CAD_IOC_START, &s) ? -errno : 0;
}

/* Waits for handle h's run number gen: spin on the page, then sleep in
 * read() or poll(). */
static int wait_run(struct dev *d, uint32_t h, uint32_t gen, int use_poll)
{
	for (;;) {
		int32_t res = d->st[h].result;

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (res != -EINPROGRESS && d->st[h].gen == gen)
			return res;
		if (use_poll) {
			struct pollfd p = { .fd = d->fd, .events = POLLIN };
			uint64_t n;

			if (poll(&p, 1, 5000) == 1)
				(void)!read(d->fd, &n, sizeof(n));
		} else {
			uint64_t n;

			(void)!read(d->fd, &n, sizeof(n));
		}
	}
}

static uint64_t job_key(void)
{
	return ((uint64_t)getpid() << 20) ^ (uint64_t)(now() * 1e6);
}

/* ------------------------------------------------------------------ */
/* reject                                                              */

static void set_param(const char *name, const char *value)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/cad/parameters/%s", name);
	f = fopen(path, "w");
	if (f) {
		fputs(value, f);
		fclose(f);
	}
}

/* A parameter's value (0 if unreadable). */
static unsigned long get_param(const char *name)
{
	char path[128];
	unsigned long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/cad/parameters/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void restore_param(const char *name, unsigned long v)
{
	char text[32];

	snprintf(text, sizeof(text), "%lu", v);
	set_param(name, text);
}

#define EXPECT_LOAD(name, res, want_err, want_log)                                         \
	CHECK(name, (res).err == (want_err) && strstr((res).log, (want_log)),                \
	      "got %d (%s) with log \"%s\", want %d and \"%s\"", (res).err, strerror(-(res).err), \
	      (res).log, (want_err), (want_log))

static int do_reject(void)
{
	const uint64_t key = job_key();
	struct dev d, d2;
	uint32_t size, size2, size_r;
	void *img = exchange(0, &size), *img1 = exchange(1, &size2);
	void *red = reduce_one(&size_r, 64);
	static double data[64], out[64];
	uint64_t a[3];
	struct load_res r;
	int fd, err, res;

	/* ioctls on a fresh file */
	fd = open("/dev/cad", O_RDWR);
	{
		struct cad_ioc_version v = { .size = 4 };

		err = ioctl(fd, CAD_IOC_VERSION, &v) ? errno : 0;
		CHECK("version-short-size", err == EINVAL, "got %d", err);
	}
	{
		struct { struct cad_ioc_version v; uint64_t extra; } big = { .v.size = sizeof(big), .extra = 1 };

		err = ioctl(fd, CAD_IOC_VERSION, &big) ? errno : 0;
		CHECK("version-unknown-nonzero-tail", err == E2BIG, "got %d", err);
		big.extra = 0;
		err = ioctl(fd, CAD_IOC_VERSION, &big) ? errno : 0;
		CHECK("version-longer-zero-tail", err == 0 && big.v.version == CAD_VERSION &&
		      big.v.status_size == CAD_STATUS_SIZE, "got %d version %u", err, big.v.version);
	}
	err = ioctl(fd, _IOWR(CAD_IOC_MAGIC, 0x4f, struct cad_ioc_handle), &(struct cad_ioc_handle){ .size = 8 }) ? errno : 0;
	CHECK("unknown-ioctl", err == ENOTTY, "got %d", err);
	err = ioctl(fd, CAD_IOC_VERSION, (void *)16) ? errno : 0;
	CHECK("bad-user-pointer", err == EFAULT, "got %d", err);
	r = load(fd, img, size, a, 2, 1, 0, 0);
	EXPECT_LOAD("load-before-join", r, -ENOTCONN, "join a group first");
	{
		/* The first version's LOAD ended at seq (fp came later): its
		 * size passes the size check (and meets the missing join), one
		 * field less does not. */
		struct cad_ioc_load l = { .size = offsetof(struct cad_ioc_load, fp), .prog_size = size,
					  .prog = (uintptr_t)img, .buf_addrs = (uintptr_t)a, .nbufs = 2 };

		err = ioctl(fd, CAD_IOC_LOAD, &l) ? errno : 0;
		CHECK("load-first-version-size", err == ENOTCONN, "got %d", err);
		l.size = offsetof(struct cad_ioc_load, seq);
		err = ioctl(fd, CAD_IOC_LOAD, &l) ? errno : 0;
		CHECK("load-short-size", err == EINVAL, "got %d", err);
	}
	{
		struct cad_ioc_join j = { .size = sizeof(j), .rank = 2, .nranks = 2, .key = key };

		err = ioctl(fd, CAD_IOC_JOIN, &j) ? errno : 0;
		CHECK("join-rank-out-of-range", err == EINVAL, "got %d", err);
		j.rank = 0, j.nranks = 0;
		err = ioctl(fd, CAD_IOC_JOIN, &j) ? errno : 0;
		CHECK("join-zero-ranks", err == EINVAL, "got %d", err);
		j.nranks = 2, j.flags = 1;
		err = ioctl(fd, CAD_IOC_JOIN, &j) ? errno : 0;
		CHECK("join-unknown-flags", err == EINVAL, "got %d", err);
	}
	close(fd);

	err = dev_open(&d, key, 0, 2);
	CHECK("join", err == 0, "got %d", err);
	{
		struct cad_ioc_join j = { .size = sizeof(j), .rank = 1, .nranks = 2, .key = key };

		err = ioctl(d.fd, CAD_IOC_JOIN, &j) ? errno : 0;
		CHECK("join-twice", err == EALREADY, "got %d", err);
		fd = open("/dev/cad", O_RDWR);
		j.rank = 0;
		err = ioctl(fd, CAD_IOC_JOIN, &j) ? errno : 0;
		CHECK("join-rank-taken", err == EBUSY, "got %d", err);
		j.rank = 1, j.nranks = 3;
		err = ioctl(fd, CAD_IOC_JOIN, &j) ? errno : 0;
		CHECK("join-other-size", err == EINVAL, "got %d", err);
		close(fd);
	}
	/* a foreign user may not join the group */
	{
		pid_t pid = fork();

		if (pid == 0) {
			struct cad_ioc_join j = { .size = sizeof(j), .rank = 1, .nranks = 2, .key = key };

			if (setgid(1000) || setuid(1000))
				_exit(3);
			fd = open("/dev/cad", O_RDWR);
			if (fd < 0)
				_exit(4);
			_exit(ioctl(fd, CAD_IOC_JOIN, &j) && errno == EPERM ? 0 : 1);
		}
		waitpid(pid, &res, 0);
		CHECK("join-foreign-user", WIFEXITED(res) && WEXITSTATUS(res) == 0, "child status 0x%x", res);
	}

	/* mmap of the status page: read only, one page */
	{
		void *p = mmap(NULL, CAD_STATUS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, d.fd, 0);

		CHECK("mmap-writable", p == MAP_FAILED && errno == EPERM, "got %p errno %d", p, errno);
		p = mmap(NULL, 2 * CAD_STATUS_SIZE, PROT_READ, MAP_SHARED, d.fd, 0);
		CHECK("mmap-two-pages", p == MAP_FAILED && errno == EINVAL, "got %p errno %d", p, errno);
		p = mmap(NULL, CAD_STATUS_SIZE, PROT_READ, MAP_SHARED, d.fd, CAD_STATUS_SIZE);
		CHECK("mmap-offset", p == MAP_FAILED && errno == EINVAL, "got %p errno %d", p, errno);
		p = (void *)d.st;
		CHECK("mprotect-write", mprotect(p, CAD_STATUS_SIZE, PROT_READ | PROT_WRITE) != 0 && errno == EACCES,
		      "errno %d", errno);
	}

	/* programs */
	a[0] = (uintptr_t)&data[0];
	a[1] = (uintptr_t)&out[0];
	{
		uint8_t *bad = malloc(size);

		memcpy(bad, img, size);
		bad[0] ^= 0xff;
		r = load(d.fd, bad, size, a, 2, 1, 0, 0);
		EXPECT_LOAD("bad-magic", r, -EINVAL, "magic");
		memcpy(bad, img, size);
		((struct cad_prog_header *)bad)->sec[CAD_SEC_NODES].count = 1000;
		r = load(d.fd, bad, size, a, 2, 1, 0, 0);
		EXPECT_LOAD("nodes-past-the-end", r, -EINVAL, "nodes");
		memcpy(bad, img, size);
		free(bad);
	}
	r = load(d.fd, img, 16, a, 2, 1, 0, 0);
	EXPECT_LOAD("image-shorter-than-header", r, -EINVAL, "less than a program header");
	r = load(d.fd, img, 0x7fffffff, a, 2, 1, 0, 0);
	EXPECT_LOAD("image-over-limit", r, -E2BIG, "max_image_kb");
	r = load(d.fd, (void *)16, size, a, 2, 1, 0, 0);
	EXPECT_LOAD("image-unreadable", r, -EFAULT, "not readable");
	r = load(d.fd, img, size, a, 1, 1, 0, 0);
	EXPECT_LOAD("buffer-count", r, -EINVAL, "1 buffer addresses for a program of 2 buffers");
	r = load(d.fd, img1, size2, a, 2, 1, 0, 0);
	EXPECT_LOAD("other-ranks-program", r, -EINVAL, "not this process's 0");
	{
		uint64_t bad[2] = { 0x1000, a[1] };

		r = load(d.fd, img, size, bad, 2, 1, 0, 0);
		EXPECT_LOAD("address-not-mapped", r, -EFAULT, "is not mapped readable");
		bad[0] = 0xffff888000000000ull;
		r = load(d.fd, img, size, bad, 2, 1, 0, 0);
		EXPECT_LOAD("kernel-address", r, -EFAULT, "not a user address range");
		bad[0] = a[0], bad[1] = 0;
		r = load(d.fd, img, size, bad, 2, 1, 0, 0);
		EXPECT_LOAD("null-address", r, -EFAULT, "no address");
		bad[1] = a[0] + 4;
		r = load(d.fd, img, size, bad, 2, 1, 0, 0);
		EXPECT_LOAD("overlapping-buffers", r, -EINVAL, "overlap");
	}
	{
		void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t bad[2] = { a[0], (uintptr_t)ro };

		r = load(d.fd, img, size, bad, 2, 1, 0, 0);
		EXPECT_LOAD("receive-into-read-only-memory", r, -EFAULT, "not mapped writable");
		bad[0] = (uintptr_t)ro, bad[1] = a[1];
		r = load(d.fd, img, size, bad, 2, 1, 0, 0);
		CHECK("send-from-read-only-memory", r.err == 0, "got %d: %s", r.err, r.log);
		if (!r.err)
			handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
		munmap(ro, 4096);
	}
	{
		uint32_t ranks[2] = { 0, 0 };
		struct cad_ioc_load l = { .size = sizeof(l), .prog_size = size, .prog = (uintptr_t)img,
					  .buf_addrs = (uintptr_t)a, .nbufs = 2, .ranks = (uintptr_t)ranks, .ctx = 1 };
		char log[256] = "";

		l.log_size = sizeof(log), l.log_buf = (uintptr_t)log;
		err = ioctl(d.fd, CAD_IOC_LOAD, &l) ? errno : 0;
		CHECK("rank-map-duplicate", err == EINVAL && strstr(log, "both group rank 0"), "got %d: %s", err, log);
		ranks[1] = 7;
		err = ioctl(d.fd, CAD_IOC_LOAD, &l) ? errno : 0;
		CHECK("rank-map-out-of-range", err == EINVAL && strstr(log, "group rank 7 of 2"), "got %d: %s", err, log);
	}
	/* a node that reaches past its buffer, or a buffer that is not there */
	{
		struct builder b;
		void *p;
		uint32_t s;

		b_init(&b, 0, 2);
		b_buf(&b, CAD_BUF_SEND, CAD_ACC_READ, 8);
		b_buf(&b, CAD_BUF_RECV, CAD_ACC_WRITE, 8);
		b_node(&b, (struct cad_node){ .kind = CAD_NODE_SEND, .peer = 1, .src_buf = 0, .src_off = 4, .len = 8 });
		p = b_image(&b, &s);
		r = load(d.fd, p, s, a, 2, 1, 0, 0);
		EXPECT_LOAD("node-past-its-buffer", r, -EINVAL, "node 0");
		free(p);
		b.nodes[0].src_off = 0;
		b.nodes[0].src_buf = 5;
		p = b_image(&b, &s);
		r = load(d.fd, p, s, a, 2, 1, 0, 0);
		EXPECT_LOAD("node-on-unregistered-buffer", r, -EINVAL, "node 0");
		free(p);
		b.nodes[0].src_buf = 1;  /* the receive buffer: not readable */
		p = b_image(&b, &s);
		r = load(d.fd, p, s, a, 2, 1, 0, 0);
		EXPECT_LOAD("send-from-write-only-buffer", r, -EINVAL, "node 0");
		free(p);
	}

	/* handles */
	r = load(d.fd, img, size, a, 2, 1, 0, 0);
	CHECK("load", r.err == 0 && r.handle == 0, "got %d handle %u: %s", r.err, r.handle, r.log);
	err = handle_op(d.fd, CAD_IOC_TEST, r.handle, &res);
	CHECK("test-never-started", err == -EINVAL, "got %d", err);
	err = start(d.fd, 77, 0);
	CHECK("start-bad-handle", err == -EBADF, "got %d", err);
	err = start(d.fd, r.handle, 5);
	CHECK("start", err == 0 && d.st[r.handle].result == -EINPROGRESS && d.st[r.handle].gen == 1,
	      "got %d, status %d gen %u", err, d.st[r.handle].result, d.st[r.handle].gen);
	err = start(d.fd, r.handle, 6);
	CHECK("start-while-running", err == -EBUSY, "got %d", err);
	err = handle_op(d.fd, CAD_IOC_TEST, r.handle, &res);
	CHECK("test-running", err == 0 && res == -EINPROGRESS, "got %d result %d", err, res);
	err = handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
	CHECK("free-running", err == 0, "got %d", err);
	err = handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
	CHECK("free-twice", err == -EBADF, "got %d", err);

	close(d.fd);

	/* a group of one for the one-rank programs */
	err = dev_open(&d2, key + 1, 0, 1);
	{
		static double al[16] __attribute__((aligned(16))), o2[16] __attribute__((aligned(16)));
		uint64_t b3[3] = { (uintptr_t)&al[0], (uintptr_t)&o2[0] + 4, 0 };
		uint32_t h;

		for (int i = 0; i < 8; i++)
			al[i] = i, o2[i] = 100;
		r = load(d2.fd, red, size_r, b3, 3, 1, 0, 0);
		EXPECT_LOAD("unaligned-reduce-buffer", r, -EINVAL, "not aligned to the 8 bytes");
		b3[1] = (uintptr_t)&o2[0];
		b3[2] = (uintptr_t)&al[8];
		r = load(d2.fd, red, size_r, b3, 3, 1, 0, 0);
		EXPECT_LOAD("scratch-with-address", r, -EINVAL, "scratch buffer has no address");
		b3[2] = 0;
		r = load(d2.fd, red, size_r, b3, 3, 1, CAD_LOAD_START, 1);
		h = r.handle;
		res = r.err ? r.err : wait_run(&d2, h, 1, 0);
		CHECK("copy-and-reduce-in-the-kernel", res == 0 && o2[0] == 100 && o2[7] == 107,
		      "got %d: %s; o2[7] = %g", res, r.log, o2[7]);
		/* persistent: started again, the buffer's new contents are used */
		for (int i = 0; i < 8; i++)
			al[i] = 1000;
		res = start(d2.fd, h, 2);
		res = res ? res : wait_run(&d2, h, 2, 1);
		CHECK("persistent-restart-sees-new-data", res == 0 && o2[7] == 1107, "got %d, o2[7] = %g", res, o2[7]);
		handle_op(d2.fd, CAD_IOC_FREE, h, NULL);

		/* a buffer unmapped and mapped again: the program is stale */
		{
			double *src = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			double *dst = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			uint64_t bb[3] = { (uintptr_t)src, (uintptr_t)dst, 0 };

			src[0] = 2, dst[0] = 3;
			r = load(d2.fd, red, size_r, bb, 3, 1, CAD_LOAD_START, 1);
			res = r.err ? r.err : wait_run(&d2, r.handle, 1, 0);
			munmap(dst, 4096);
			dst = mmap(dst, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			err = start(d2.fd, r.handle, 2);
			CHECK("remapped-buffer-is-stale", res == 0 && err == -ESTALE && dst[0] == 0,
			      "first run %d, restart %d, dst[0] = %g", res, err, dst[0]);
			handle_op(d2.fd, CAD_IOC_FREE, r.handle, NULL);
			munmap(src, 4096);
			munmap(dst, 4096);
		}

		/* limits: programs per file, pinned memory per process */
		set_param("max_programs", "3");
		for (int i = 0; i < 3; i++) {
			r = load(d2.fd, red, size_r, b3, 3, 1, 0, 0);
			if (r.err)
				break;
		}
		r = load(d2.fd, red, size_r, b3, 3, 1, 0, 0);
		EXPECT_LOAD("too-many-programs", r, -EMFILE, "max_programs");
		for (uint32_t i = 0; i < 3; i++)
			handle_op(d2.fd, CAD_IOC_FREE, i, NULL);
		set_param("max_programs", "512");
		const unsigned long pinned_mb = get_param("max_pinned_mb");
		set_param("max_pinned_mb", "1");
		{
			const uint64_t big = 2u << 20;
			double *src = aligned_alloc(4096, big), *dst = aligned_alloc(4096, big);
			uint64_t bb[3] = { (uintptr_t)src, (uintptr_t)dst, 0 };
			void *p = reduce_one(&size_r, big);

			memset(src, 0, big);
			memset(dst, 0, big);
			r = load(d2.fd, p, size_r, bb, 3, 1, 0, 0);
			EXPECT_LOAD("pinned-memory-limit", r, -ENOMEM, "max_pinned_mb");
			restore_param("max_pinned_mb", pinned_mb);
			/* two slices of a COPY and of a REDUCE (a pass does a
			 * local node 1 MiB at a time): every element right */
			for (uint64_t i = 0; i < big / sizeof(double); i++)
				src[i] = (double)i, dst[i] = 1;
			r = load(d2.fd, p, size_r, bb, 3, 1, CAD_LOAD_START, 1);
			res = r.err ? r.err : wait_run(&d2, r.handle, 1, 0);
			uint64_t wrong = 0;
			for (uint64_t i = 0; i < big / sizeof(double); i++)
				wrong += dst[i] != (double)i + 1;
			CHECK("two-mib-reduce", res == 0 && !wrong, "got %d: %s; %llu elements wrong", res, r.log,
			      (unsigned long long)wrong);
			/* the same program's 2 MiB of scratch, over 1 MiB */
			set_param("max_scratch_mb", "1");
			r = load(d2.fd, p, size_r, bb, 3, 1, 0, 0);
			EXPECT_LOAD("scratch-limit", r, -E2BIG, "scratch buffers total 2097152 bytes");
			set_param("max_scratch_mb", "1024");
			free(p);
			free(src);
			free(dst);
		}
		{
			/* 2 GiB of scratch (and of each buffer): refused by the
			 * verifier, before anything is pinned or allocated */
			void *p = reduce_one(&size_r, 1ull << 31);

			r = load(d2.fd, p, size_r, b3, 3, 1, 0, 0);
			EXPECT_LOAD("scratch-2gib", r, -E2BIG, "over the limit of 1073741824");
			free(p);
		}
	}
	close(d2.fd);
	free(img);
	free(img1);
	free(red);
	return 0;
}

/* ------------------------------------------------------------------ */
/* reserved: every reserved or unused field, one row each              */

/* One rank: buffer 1 = op(buffer 1, buffer 0) with a user-defined op of
 * 8-byte elements (inout = in), a source line and an op: an image with
 * every section that has a reserved field. */
static void *reserved_image(uint32_t *size)
{
	static const char str[] = "\0send\0recv\0f.c\0copy";
	static const struct cad_buffer bufs[2] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = 64, .name = 1 },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = 64, .name = 6 },
	};
	static const struct cad_node nodes[1] = {
		{ .kind = CAD_NODE_REDUCE, .dtype = CAD_DT_USER, .op = CAD_OP_USER, .src_buf = 0, .dst_buf = 1,
		  .len = 64, .line = 0 },
	};
	static const struct cad_line lines[1] = { { .file = 11, .line = 1, .col = 1 } };
	static const struct cad_vm_insn code[3] = {
		{ .code = CAD_VM_LD_64, .dst = 0, .a = 0, .imm = 0 },
		{ .code = CAD_VM_ST_64, .a = 0, .imm = 0 },
		{ .code = CAD_VM_EXIT },
	};
	static const struct cad_user_op ops[1] = {
		{ .name = 15, .elem_size = 8, .code_first = 0, .code_count = 3, .flags = CAD_UOP_COMMUTATIVE,
		  .line = 0 },
	};
	struct cad_image_desc d = { .rank = 0, .nranks = 1, .buffers = bufs, .n_buffers = 2, .nodes = nodes,
				    .n_nodes = 1, .ops = ops, .n_ops = 1, .code = code, .n_code = 3, .lines = lines,
				    .n_lines = 1, .strings = str, .n_strings = sizeof(str) };

	return write_image(&d, size);
}

/* The address of entry i of section sec of img. */
static void *reserved_entry(void *img, unsigned int sec, uint32_t i)
{
	const struct cad_prog_header *h = img;

	return (char *)img + h->sec[sec].off + (size_t)i * h->sec[sec].entsize;
}

/* An ioctl's struct followed by 8 more bytes (the size protocol's tail). */
struct tailed {
	union {
		uint32_t size;
		struct cad_ioc_version v;
		struct cad_ioc_join j;
		struct cad_ioc_load l;
		struct cad_ioc_start s;
		struct cad_ioc_handle h;
	} u;
	uint64_t tail[2];
};

static int do_reserved(void)
{
	const uint64_t key = job_key();
	static uint64_t in[8] __attribute__((aligned(64))), out[8] __attribute__((aligned(64)));
	uint64_t addrs[2] = { (uintptr_t)in, (uintptr_t)out };
	uint32_t size, h;
	void *good = reserved_image(&size);
	void *img = malloc(size);
	struct load_res r;
	struct dev d;
	int err, res;

	err = dev_open(&d, key, 0, 1);
	CHECK("reserved-join", err == 0, "got %d", err);
	for (int i = 0; i < 8; i++)
		in[i] = 40 + i, out[i] = 0;
	r = load(d.fd, good, size, addrs, 2, 1, CAD_LOAD_START, 1);
	res = r.err ? r.err : wait_run(&d, r.handle, 1, 0);
	CHECK("reserved-baseline-image-runs", res == 0 && out[7] == 47, "got %d (%s), out[7] = %llu", res, r.log,
	      (unsigned long long)out[7]);
	h = r.handle;

	/* The program image: each field set in a copy of the good image. */
	{
		/* A field: at off in entry 0 of section sec (-1: the header),
		 * width bytes, set to value. */
		struct row {
			const char *name;
			int sec;
			uint32_t entry;
			size_t off, width;
			uint32_t value;
			const char *log;
		};
#define ROW(n, sec, entry, type, field, value, log) \
	{ n, sec, entry, offsetof(type, field), sizeof(((type *)0)->field), value, log }
		const struct row rows[] = {
			ROW("image-header.flags", -1, 0, struct cad_prog_header, flags, 1, "unknown flags"),
			ROW("image-section.reserved", -1, 0, struct cad_prog_header, sec[CAD_SEC_NODES].reserved, 1,
			    "reserved field is not 0"),
			ROW("image-buffer.reserved", CAD_SEC_BUFFERS, 1, struct cad_buffer, reserved, 1,
			    "reserved field is not 0"),
			ROW("image-node.reserved", CAD_SEC_NODES, 0, struct cad_node, reserved, 1, "reserved field is not 0"),
			ROW("image-node.flags-unused", CAD_SEC_NODES, 0, struct cad_node, flags, 1, "node 0"),
			ROW("image-node.peer-unused", CAD_SEC_NODES, 0, struct cad_node, peer, 1, "node 0"),
			ROW("image-line.reserved", CAD_SEC_LINES, 0, struct cad_line, reserved, 1, "reserved field is not 0"),
			ROW("image-user_op.flags", CAD_SEC_OPS, 0, struct cad_user_op, flags, 3, "flags"),
			ROW("image-vm_insn.b-unused", CAD_SEC_CODE, 1, struct cad_vm_insn, b, 1, "unused field b is not 0"),
			ROW("image-vm_insn.imm-unused", CAD_SEC_CODE, 2, struct cad_vm_insn, imm, 1,
			    "unused field imm is not 0"),
		};
#undef ROW
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			char name[80];

			unsigned char *at;

			memcpy(img, good, size);
			at = (rows[i].sec < 0 ? (unsigned char *)img
					      : (unsigned char *)reserved_entry(img, rows[i].sec, rows[i].entry)) +
			     rows[i].off;
			if (rows[i].width == 1)
				*at = (uint8_t)rows[i].value;
			else if (rows[i].width == 2)
				*(uint16_t *)at = (uint16_t)rows[i].value;
			else
				*(uint32_t *)at = rows[i].value;
			snprintf(name, sizeof(name), "reserved-%s", rows[i].name);
			r = load(d.fd, img, size, addrs, 2, 1, 0, 0);
			EXPECT_LOAD(name, r, -EINVAL, rows[i].log);
			if (!r.err)
				handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
		}
	}

	/* The ioctls' own fields: flags and reserved, -EINVAL, and nothing
	 * done (the handle is still there after a refused FREE). */
	{
		static const struct { const char *name; unsigned long cmd; } hrows[] = {
			{ "reserved-ioc_handle.reserved-test", CAD_IOC_TEST },
			{ "reserved-ioc_handle.reserved-cancel", CAD_IOC_CANCEL },
			{ "reserved-ioc_handle.reserved-free", CAD_IOC_FREE },
		};
		for (size_t i = 0; i < sizeof(hrows) / sizeof(hrows[0]); i++) {
			struct cad_ioc_handle a = { .size = sizeof(a), .handle = h, .reserved = 1 };

			err = ioctl(d.fd, hrows[i].cmd, &a) ? errno : 0;
			CHECK(hrows[i].name, err == EINVAL, "got %d", err);
		}
		err = handle_op(d.fd, CAD_IOC_TEST, h, &res);
		CHECK("reserved-refused-free-kept-the-handle", err == 0 && res == 0, "got %d result %d", err, res);
	}
	{
		struct cad_ioc_join j = { .size = sizeof(j), .rank = 0, .nranks = 1, .flags = 1, .key = key + 1 };
		int fd = open("/dev/cad", O_RDWR);

		err = ioctl(fd, CAD_IOC_JOIN, &j) ? errno : 0;
		CHECK("reserved-ioc_join.flags", err == EINVAL, "got %d", err);
		close(fd);
	}
	{
		/* (CAD_LOAD_BOUNCED is out only) */
		static const uint32_t bad[] = { CAD_LOAD_BOUNCED, 0x8, 0x80000000u };
		struct cad_ioc_load l = { .handle = ~0u };

		err = EINVAL;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) && err == EINVAL && l.handle == ~0u; i++) {
			l = (struct cad_ioc_load){ .size = sizeof(l), .prog_size = size, .prog = (uintptr_t)good,
						   .buf_addrs = (uintptr_t)addrs, .nbufs = 2,
						   .flags = CAD_LOAD_BOUNCE | bad[i] };
			err = ioctl(d.fd, CAD_IOC_LOAD, &l) ? errno : 0;
		}
		CHECK("reserved-ioc_load.flags", err == EINVAL && l.handle == ~0u, "got %d handle %u", err, l.handle);
	}
	/* Bytes past the struct the module knows: -E2BIG for every ioctl. */
	{
		static const struct { const char *name; unsigned long cmd; uint32_t known; } trows[] = {
			{ "reserved-tail-version", CAD_IOC_VERSION, sizeof(struct cad_ioc_version) },
			{ "reserved-tail-join", CAD_IOC_JOIN, sizeof(struct cad_ioc_join) },
			{ "reserved-tail-load", CAD_IOC_LOAD, sizeof(struct cad_ioc_load) },
			{ "reserved-tail-start", CAD_IOC_START, sizeof(struct cad_ioc_start) },
			{ "reserved-tail-test", CAD_IOC_TEST, sizeof(struct cad_ioc_handle) },
			{ "reserved-tail-cancel", CAD_IOC_CANCEL, sizeof(struct cad_ioc_handle) },
			{ "reserved-tail-free", CAD_IOC_FREE, sizeof(struct cad_ioc_handle) },
		};
		for (size_t i = 0; i < sizeof(trows) / sizeof(trows[0]); i++) {
			struct tailed t;

			memset(&t, 0, sizeof(t));
			t.u.size = trows[i].known + 8;
			((unsigned char *)&t)[trows[i].known + 3] = 1;
			if (trows[i].cmd == CAD_IOC_TEST || trows[i].cmd == CAD_IOC_CANCEL || trows[i].cmd == CAD_IOC_FREE)
				t.u.h.handle = h;
			err = ioctl(d.fd, trows[i].cmd, &t) ? errno : 0;
			CHECK(trows[i].name, err == E2BIG, "got %d", err);
		}
		err = handle_op(d.fd, CAD_IOC_TEST, h, &res);
		CHECK("reserved-refused-tail-kept-the-handle", err == 0 && res == 0, "got %d result %d", err, res);
	}
	handle_op(d.fd, CAD_IOC_FREE, h, NULL);
	close(d.fd);
	free(img);
	free(good);
	return 0;
}

/* ------------------------------------------------------------------ */
/* memlock: pins charged to RLIMIT_MEMLOCK                             */

/* A load of reduce_one(bytes) with page-aligned buffers in d; freed
 * again; 0 or -errno (the log in log). */
static int memlock_load(struct dev *d, uint64_t bytes, int run, char *log, size_t logsize)
{
	uint32_t size;
	void *img = reduce_one(&size, bytes);
	double *src = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double *dst = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a[3] = { (uintptr_t)src, (uintptr_t)dst, 0 };
	struct load_res r;
	int res;

	for (uint64_t i = 0; i < bytes / sizeof(double); i++)
		src[i] = (double)i, dst[i] = 1;
	r = load(d->fd, img, size, a, 3, 1, run ? CAD_LOAD_START : 0, 1);
	res = r.err;
	if (!res && run) {
		res = wait_run(d, r.handle, 1, 0);
		if (!res && dst[bytes / sizeof(double) - 1] != (double)(bytes / sizeof(double) - 1) + 1)
			res = -EIO;
	}
	if (r.handle != ~0u)
		handle_op(d->fd, CAD_IOC_FREE, r.handle, NULL);
	snprintf(log, logsize, "%s", r.log);
	munmap(src, bytes);
	munmap(dst, bytes);
	free(img);
	return res;
}

/* Child: RLIMIT_MEMLOCK 64 KiB, then uid 1000 (no CAP_IPC_LOCK); exit 0 if
 * the module refuses a program needing more (its first buffer pinned,
 * its second over the limit), with the limit named, and then runs one
 * that fits many times, a refused one between each (every refusal gives
 * back what it had pinned; every free too). */
static int memlock_child(uint64_t key, int drop)
{
	const struct rlimit lim = { 64 << 10, 64 << 10 };
	char log[512];
	struct dev d;
	int err;

	if (setrlimit(RLIMIT_MEMLOCK, &lim))
		return 3;
	if (drop && (setgid(1000) || setuid(1000)))
		return 4;
	if (dev_open(&d, key, 0, 1))
		return 5;
	err = memlock_load(&d, 64 << 10, 0, log, sizeof(log));
	if (drop && (err != -ENOMEM || !strstr(log, "RLIMIT_MEMLOCK") || !strstr(log, "ulimit -l"))) {
		printf("KCAD memlock: a 64 KiB program: %d (%s)\n", err, log);
		return 6;
	}
	if (!drop && err) {
		printf("KCAD memlock: with CAP_IPC_LOCK, a 64 KiB program: %d (%s)\n", err, log);
		return 7;
	}
	for (int i = 0; drop && i < 100; i++) {
		err = memlock_load(&d, 4096, 1, log, sizeof(log));
		if (err) {
			printf("KCAD memlock: run %d of a program within the limit: %d (%s)\n", i, err, log);
			return 8;
		}
		err = memlock_load(&d, 48 << 10, 0, log, sizeof(log));
		if (err != -ENOMEM) {
			printf("KCAD memlock: load %d of a program over the limit: %d (%s)\n", i, err, log);
			return 9;
		}
	}
	close(d.fd);
	return 0;
}

static int do_memlock(void)
{
	const uint64_t key = job_key();
	int st;
	pid_t pid;

	pid = fork();
	if (pid == 0)
		_exit(memlock_child(key, 1));
	waitpid(pid, &st, 0);
	CHECK("memlock-refused-and-given-back", WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	CHECK("memlock-nothing-pinned-after-exit", get_param("pinned_pages") == 0, "%lu pages pinned",
	      get_param("pinned_pages"));
	pid = fork();
	if (pid == 0)
		_exit(memlock_child(key + 1, 0));
	waitpid(pid, &st, 0);
	CHECK("memlock-cap-ipc-lock-exempt", WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	CHECK("memlock-nothing-pinned-at-the-end", get_param("pinned_pages") == 0, "%lu pages pinned",
	      get_param("pinned_pages"));
	return 0;
}

/* ------------------------------------------------------------------ */
/* bounce: buffers RLIMIT_MEMLOCK does not let the module pin, copied   */
/* through kernel memory (CAD_LOAD_BOUNCE)                              */

/* Two ranks, n bytes (a multiple of 8): buffer 0 (send only) goes to the
 * peer's buffer 2 (receive only); buffer 1 (in place) is summed as f64
 * with the peer's buffer 1, through scratch buffer 3. */
static void *bounce_prog(uint32_t rank, uint64_t n, uint32_t *size)
{
	struct builder b;
	uint32_t s1, r1, red;

	b_init(&b, rank, 2);
	b_buf(&b, CAD_BUF_SEND, CAD_ACC_READ, n);
	b_buf(&b, CAD_BUF_RECV, CAD_ACC_READ | CAD_ACC_WRITE, n);
	b_buf(&b, CAD_BUF_RECV, CAD_ACC_WRITE, n);
	b_buf(&b, CAD_BUF_SCRATCH, CAD_ACC_READ | CAD_ACC_WRITE, n);
	b_node(&b, (struct cad_node){ .kind = CAD_NODE_SEND, .peer = 1 - rank, .src_buf = 0, .len = n });
	b_node(&b, (struct cad_node){ .kind = CAD_NODE_RECV, .peer = 1 - rank, .dst_buf = 2, .len = n });
	s1 = b_node(&b, (struct cad_node){ .kind = CAD_NODE_SEND, .peer = 1 - rank, .tag = 1, .src_buf = 1, .len = n });
	r1 = b_node(&b, (struct cad_node){ .kind = CAD_NODE_RECV, .peer = 1 - rank, .tag = 1, .dst_buf = 3, .len = n });
	red = b_node(&b, (struct cad_node){ .kind = CAD_NODE_REDUCE, .dtype = CAD_DT_DOUBLE, .op = CAD_OP_SUM,
					     .src_buf = 3, .dst_buf = 1, .len = n });
	b_edge(&b, s1, red);
	b_edge(&b, r1, red);
	return b_image(&b, size);
}

static double bounce_val(uint32_t rank, uint32_t run, uint32_t buf, uint64_t i)
{
	return (double)(rank * 1000003u + run * 7919u + buf * 104729u) + (double)i;
}

/* Buffer k of rank at bases[k] + 8 (not page aligned), n bytes; filled
 * for run; the receive-only buffer with a canary. */
static void bounce_fill(double *bufs[3], uint32_t rank, uint32_t run, uint64_t n)
{
	for (uint64_t i = 0; i < n / 8; i++) {
		bufs[0][i] = bounce_val(rank, run, 0, i);
		bufs[1][i] = bounce_val(rank, run, 1, i);
		bufs[2][i] = -1;
	}
}

/* Whether run's results are in place: 0, or the index + 1 of a wrong one. */
static uint64_t bounce_wrong(double *bufs[3], uint32_t rank, uint32_t run, uint64_t n)
{
	for (uint64_t i = 0; i < n / 8; i++) {
		if (bufs[0][i] != bounce_val(rank, run, 0, i) || bufs[2][i] != bounce_val(1 - rank, run, 0, i) ||
		    bufs[1][i] != bounce_val(rank, run, 1, i) + bounce_val(1 - rank, run, 1, i))
			return i + 1;
	}
	return 0;
}

/* TEST until the run ended (the owner's TEST copies out): its result,
 * and the status page must then say so too. */
static int bounce_test(struct dev *d, uint32_t h, uint32_t gen)
{
	for (int i = 0; i < 200000; i++) {
		int res = 0, err = handle_op(d->fd, CAD_IOC_TEST, h, &res);

		if (err)
			return err;
		if (res != -EINPROGRESS)
			return d->st[h].gen == gen && d->st[h].result == res ? res : -EIO;
		usleep(50);
	}
	return -ETIMEDOUT;
}

/* One rank of the two: RLIMIT_MEMLOCK 64 KiB, uid 1000; each size loaded
 * without CAD_LOAD_BOUNCE (refused when over the limit), then with it,
 * run twice (waited for through read(), then TEST), the results checked.
 * Exit 0, or the step that failed. */
static int bounce_rank(uint64_t key, uint32_t rank)
{
	static const uint64_t sizes[] = { 8, 24 * 1024 + 8, 100 * 1024 + 16, (1 << 20) + 4096 + 24 };
	const struct rlimit lim = { 64 << 10, 64 << 10 };
	struct dev d;

	if (setrlimit(RLIMIT_MEMLOCK, &lim) || setgid(1000) || setuid(1000))
		return 3;
	if (dev_open(&d, key, rank, 2))
		return 4;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		const uint64_t n = sizes[k];
		uint64_t a[4] = { 0 };
		double *bufs[3];
		char *maps[3];
		uint32_t size;
		void *img = bounce_prog(rank, n, &size);
		struct load_res r;
		struct cad_ioc_load l;
		int err;

		for (int j = 0; j < 3; j++) {
			maps[j] = mmap(NULL, n + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			bufs[j] = (double *)(maps[j] + 8);
			a[j] = (uintptr_t)bufs[j];
		}
		if (n > (64 << 10)) {
			r = load(d.fd, img, size, a, 4, 1, 0, 0);
			if (r.err != -ENOMEM || !strstr(r.log, "RLIMIT_MEMLOCK")) {
				printf("KCAD bounce: rank %u, %llu bytes without the flag: %d (%s)\n", rank,
				       (unsigned long long)n, r.err, r.log);
				return 5;
			}
		}
		bounce_fill(bufs, rank, 1, n);
		r = (struct load_res){ 0 };
		l = (struct cad_ioc_load){ .size = sizeof(l), .prog_size = size, .prog = (uintptr_t)img,
					   .buf_addrs = (uintptr_t)a, .nbufs = 4, .log_size = sizeof(r.log),
					   .log_buf = (uintptr_t)r.log, .ctx = 1 + k, .seq = 1,
					   .flags = CAD_LOAD_START | CAD_LOAD_BOUNCE };
		r.err = ioctl(d.fd, CAD_IOC_LOAD, &l) ? -errno : 0;
		if (r.err || (n > (64 << 10) && (!(l.flags & CAD_LOAD_BOUNCED) ||
						  !strstr(r.log, "copying through kernel memory")))) {
			printf("KCAD bounce: rank %u, %llu bytes: %d flags 0x%x (%s)\n", rank, (unsigned long long)n,
			       r.err, l.flags, r.log);
			return 6;
		}
		if (l.flags & CAD_LOAD_BOUNCED)
			printf("KCAD bounce: rank %u, %llu bytes: %s\n", rank, (unsigned long long)n, r.log);
		err = wait_run(&d, l.handle, 1, 0);
		if (err || bounce_wrong(bufs, rank, 1, n)) {
			printf("KCAD bounce: rank %u, %llu bytes, run 1: %d, wrong at %llu\n", rank,
			       (unsigned long long)n, err, (unsigned long long)bounce_wrong(bufs, rank, 1, n));
			return 7;
		}
		bounce_fill(bufs, rank, 2, n);
		err = start(d.fd, l.handle, 2);
		if (!err)
			err = bounce_test(&d, l.handle, 2);
		if (err || bounce_wrong(bufs, rank, 2, n)) {
			printf("KCAD bounce: rank %u, %llu bytes, run 2: %d, wrong at %llu\n", rank,
			       (unsigned long long)n, err, (unsigned long long)bounce_wrong(bufs, rank, 2, n));
			return 8;
		}
		handle_op(d.fd, CAD_IOC_FREE, l.handle, NULL);
		for (int j = 0; j < 3; j++)
			munmap(maps[j], n + 4096);
		free(img);
	}
	close(d.fd);
	return 0;
}

/* One rank alone, 256 KiB, RLIMIT_MEMLOCK 64 KiB, uid 1000: a buffer
 * unmapped after LOAD fails START with -EFAULT; a run that ended inside
 * its START shows as ended, its data in place, only after the owner's
 * TEST (the status page says so only then); unmapped after the run
 * ended and before its copy out, the run ends with -EFAULT; freed
 * before its copy out, nothing stays; over max_user_kmem_mb (1 MiB, set
 * by the parent) a 2 MiB bounce buffer is refused. */
static int bounce_alone(uint64_t key)
{
	const struct rlimit lim = { 64 << 10, 64 << 10 };
	const uint64_t n = 256 << 10;
	uint32_t size;
	void *img = reduce_one(&size, n);
	char *src, *dst;
	uint64_t a[3];
	struct load_res r;
	struct dev d;
	int err;

	if (setrlimit(RLIMIT_MEMLOCK, &lim) || setgid(1000) || setuid(1000))
		return 3;
	if (dev_open(&d, key, 0, 1))
		return 4;
	src = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a[0] = (uintptr_t)src, a[1] = (uintptr_t)dst, a[2] = 0;
	r = load(d.fd, img, size, a, 3, 1, CAD_LOAD_BOUNCE, 1);
	munmap(src, n);
	err = r.err ? r.err : start(d.fd, r.handle, 1);
	if (err != -EFAULT) {
		printf("KCAD bounce: START after munmap: %d (%s)\n", err, r.log);
		return 5;
	}
	src = mmap(src, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	for (uint64_t i = 0; i < n / 8; i++)
		((double *)src)[i] = (double)i, ((double *)dst)[i] = 1;
	/* One rank: it ends inside START, but shows as ended (and its data
	 * arrive) only at the owner's TEST: not before.
	 */
	err = start(d.fd, r.handle, 2);
	if (err || d.st[r.handle].result != -EINPROGRESS || ((double *)dst)[n / 8 - 1] != 1) {
		printf("KCAD bounce: ended before the copy out: %d, status %d, %g\n", err, d.st[r.handle].result,
		       ((double *)dst)[n / 8 - 1]);
		return 9;
	}
	err = bounce_test(&d, r.handle, 1);
	if (err || ((double *)dst)[n / 8 - 1] != (double)(n / 8 - 1) + 1) {
		printf("KCAD bounce: after TEST: %d, %g\n", err, ((double *)dst)[n / 8 - 1]);
		return 10;
	}
	err = start(d.fd, r.handle, 3);
	munmap(dst, n);
	if (!err)
		err = wait_run(&d, r.handle, 2, 1);
	if (err != -EFAULT) {
		printf("KCAD bounce: copy out after munmap: %d\n", err);
		return 6;
	}
	dst = mmap(dst, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	err = start(d.fd, r.handle, 4);
	if (!err)
		err = handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);  /* before its copy out */
	if (err) {
		printf("KCAD bounce: free before the copy out: %d\n", err);
		return 7;
	}
	free(img);
	img = reduce_one(&size, 2 << 20);
	munmap(src, n);
	munmap(dst, n);
	src = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a[0] = (uintptr_t)src, a[1] = (uintptr_t)dst;
	r = load(d.fd, img, size, a, 3, 1, CAD_LOAD_BOUNCE, 1);
	if (r.err != -ENOMEM || !strstr(r.log, "max_user_kmem_mb")) {
		printf("KCAD bounce: 2 MiB over max_user_kmem_mb: %d (%s)\n", r.err, r.log);
		return 8;
	}
	close(d.fd);
	return 0;
}

static int do_bounce(void)
{
	const uint64_t key = job_key();
	const unsigned long bounced = get_param("bounced"), kmem_mb = get_param("max_user_kmem_mb");
	pid_t pid[2];
	int st[2];

	for (uint32_t rank = 0; rank < 2; rank++) {
		pid[rank] = fork();
		if (pid[rank] == 0)
			_exit(bounce_rank(key, rank));
	}
	for (int i = 0; i < 2; i++)
		waitpid(pid[i], &st[i], 0);
	CHECK("bounce-collective-right", WIFEXITED(st[0]) && !WEXITSTATUS(st[0]) && WIFEXITED(st[1]) &&
	      !WEXITSTATUS(st[1]), "ranks' status 0x%x 0x%x", st[0], st[1]);
	CHECK("bounce-counted", get_param("bounced") > bounced, "bounced %lu, %lu before", get_param("bounced"),
	      bounced);
	set_param("max_user_kmem_mb", "1");
	pid[0] = fork();
	if (pid[0] == 0)
		_exit(bounce_alone(key + 1));
	waitpid(pid[0], &st[0], 0);
	restore_param("max_user_kmem_mb", kmem_mb);
	CHECK("bounce-faults-and-kmem", WIFEXITED(st[0]) && !WEXITSTATUS(st[0]), "status 0x%x", st[0]);
	CHECK("bounce-nothing-left", !get_param("bounce_pages") && !get_param("pinned_pages") &&
	      !get_param("kmem_bytes") && !get_param("programs"), "bounce_pages %lu pinned_pages %lu kmem_bytes %lu "
	      "programs %lu", get_param("bounce_pages"), get_param("pinned_pages"), get_param("kmem_bytes"),
	      get_param("programs"));
	return 0;
}

/* ------------------------------------------------------------------ */
/* stall: a member whose pages fault into a FUSE server that never      */
/* answers holds up no other member                                      */

/* A FUSE file system of one file, /f, whose reads are never answered
 * (the server: every other request it answers, or ENOSYS). */
static void stall_server(int fd)
{
	static unsigned char buf[1 << 20];

	for (;;) {
		const ssize_t n = read(fd, buf, sizeof(buf));
		const struct fuse_in_header *in = (const void *)buf;
		struct {
			struct fuse_out_header h;
			union {
				struct fuse_init_out init;
				struct fuse_entry_out entry;
				struct fuse_attr_out attr;
				struct fuse_open_out open;
			} u;
		} out;
		struct fuse_attr *a = NULL;
		size_t len = sizeof(out.h);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(*in))
			_exit(0);  /* unmounted, or aborted */
		memset(&out, 0, sizeof(out));
		out.h.unique = in->unique;
		switch (in->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *ii = (const void *)(in + 1);

			out.u.init.major = FUSE_KERNEL_VERSION;
			out.u.init.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
			out.u.init.max_readahead = ii->max_readahead;
			out.u.init.max_write = 4096;
			len += sizeof(out.u.init);
			break;
		}
		case FUSE_LOOKUP:
			if (in->nodeid != FUSE_ROOT_ID || strcmp((const char *)(in + 1), "f")) {
				out.h.error = -ENOENT;
				break;
			}
			out.u.entry.nodeid = 2;
			out.u.entry.generation = 1;
			out.u.entry.entry_valid = out.u.entry.attr_valid = 3600;
			a = &out.u.entry.attr;
			len += sizeof(out.u.entry);
			break;
		case FUSE_GETATTR:
			out.u.attr.attr_valid = 3600;
			a = &out.u.attr.attr;
			len += sizeof(out.u.attr);
			break;
		case FUSE_OPEN:
		case FUSE_OPENDIR:
			out.u.open.fh = 1;
			len += sizeof(out.u.open);
			break;
		case FUSE_READ:
			continue;  /* never answered */
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
		case FUSE_DESTROY:
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			continue;  /* no answer */
		default:
			out.h.error = -ENOSYS;
			break;
		}
		if (a) {
			const int root = in->opcode == FUSE_GETATTR && in->nodeid == FUSE_ROOT_ID;

			a->ino = root ? FUSE_ROOT_ID : 2;
			a->mode = root ? S_IFDIR | 0755 : S_IFREG | 0444;
			a->nlink = root ? 2 : 1;
			a->size = root ? 0 : 65536;
			a->blocks = a->size / 512;
			a->blksize = 4096;
		}
		out.h.len = (uint32_t)len;
		if (write(fd, &out, len) < 0 && errno != ENOENT)
			_exit(0);
	}
}

/* Waits up to secs for pid to end; its status, or -1 if it did not. */
static int wait_pid_for(pid_t pid, double secs)
{
	const double until = now() + limit(secs);
	int st;

	do {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(10000);
	} while (now() < until);
	return -1;
}

/* Waits up to secs for a byte on fd: 1 if one came. */
static int wait_byte(int fd, double secs)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	return poll(&p, 1, (int)(limit(secs) * 1000)) == 1 && read(fd, &c, 1) == 1;
}

static int do_stall(void)
{
	const uint64_t key = job_key();
	char opts[128];
	int fuse, a_pipe[2], b_pipe[2], st;
	pid_t server, a, b;

	mkdir("/tmp/stallfs", 0755);
	fuse = open("/dev/fuse", O_RDWR);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse);
	if (fuse < 0 || mount("stallfs", "/tmp/stallfs", "fuse", MS_NOSUID | MS_NODEV, opts)) {
		CHECK("stall-fuse-mount", 0, "/dev/fuse %d, mount: %s (insmod fuse.ko first)", fuse, strerror(errno));
		return 0;
	}
	server = fork();
	if (server == 0)
		stall_server(fuse);
	close(fuse);  /* the server's is the last: when it dies, the connection is aborted */
	if (pipe(a_pipe) || pipe(b_pipe))
		return 1;

	/* Rank 0: its send buffer, read only, is pinned; then the FUSE file
	 * is mapped at its address, so its START looks the pages up again,
	 * which faults into the server: a read never answered. */
	a = fork();
	if (a == 0) {
		struct dev d;
		uint32_t size;
		void *img = exchange(0, &size);
		static uint64_t rbuf;
		void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t addrs[2] = { (uintptr_t)p, (uintptr_t)&rbuf };
		struct load_res r;
		int f;

		if (dev_open(&d, key, 0, 2))
			_exit(11);
		r = load(d.fd, img, size, addrs, 2, 1, 0, 0);
		if (r.err) {
			printf("KCAD stall: rank 0 load: %d %s\n", r.err, r.log);
			_exit(12);
		}
		f = open("/tmp/stallfs/f", O_RDONLY);
		if (f < 0 || mmap(p, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, f, 0) != p) {
			printf("KCAD stall: rank 0: the FUSE file: %s\n", strerror(errno));
			_exit(13);
		}
		(void)!write(a_pipe[1], "s", 1);
		printf("KCAD stall: rank 0 start: %d\n", start(d.fd, r.handle, 1));
		_exit(14);
	}
	CHECK("stall-rank-0-starts", wait_byte(a_pipe[0], 10), "rank 0 did not get to its start");
	usleep(300000);  /* rank 0 is in its fault now */

	/* Rank 1 loads and starts (the group's lock), and is killed. */
	b = fork();
	if (b == 0) {
		struct dev d;
		uint32_t size;
		void *img = exchange(1, &size);
		static uint64_t s = 7, rbuf;
		uint64_t addrs[2] = { (uintptr_t)&s, (uintptr_t)&rbuf };
		struct load_res r;

		if (dev_open(&d, key, 1, 2))
			_exit(21);
		r = load(d.fd, img, size, addrs, 2, 1, CAD_LOAD_START, 1);
		(void)!write(b_pipe[1], r.err ? "e" : "b", 1);
		for (;;)
			pause();
	}
	CHECK("stall-peer-not-held-up", wait_byte(b_pipe[0], 3), "rank 1's load and start did not return in 3 s");
	kill(b, SIGKILL);
	st = wait_pid_for(b, 3);
	CHECK("stall-peer-killable", st != -1 && WIFSIGNALED(st), "rank 1 did not end within 3 s of SIGKILL");

	/* The stalled member ends once the server goes (the connection is
	 * aborted, its read fails). */
	kill(a, SIGKILL);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	st = wait_pid_for(a, 10);
	CHECK("stall-stalled-member-ends-with-the-server", st != -1, "rank 0 did not end");
	if (b > 0 && st == -1)
		waitpid(b, NULL, 0);
	umount2("/tmp/stallfs", MNT_DETACH);
	CHECK("stall-nothing-pinned", get_param("pinned_pages") == 0, "%lu pages pinned", get_param("pinned_pages"));
	return 0;
}

/* ------------------------------------------------------------------ */
/* owner: START, CANCEL and FREE only from the loading process         */

static int do_owner(void)
{
	const uint64_t key = job_key();
	static double al[8] __attribute__((aligned(64))), o2[8] __attribute__((aligned(64)));
	uint64_t a[3] = { (uintptr_t)al, (uintptr_t)o2, 0 };
	uint32_t size;
	void *img = reduce_one(&size, 64);
	struct load_res r;
	struct dev d;
	int err, res, st;
	pid_t pid;

	err = dev_open(&d, key, 0, 1);
	CHECK("owner-join", err == 0, "got %d", err);
	r = load(d.fd, img, size, a, 3, 1, CAD_LOAD_START, 1);
	res = r.err ? r.err : wait_run(&d, r.handle, 1, 0);
	CHECK("owner-load-and-run", res == 0, "got %d: %s", res, r.log);
	pid = fork();
	if (pid == 0) {
		/* The child shares the file: each of these is refused, TEST
		 * answers, and a LOAD is refused as before. */
		int e1 = start(d.fd, r.handle, 2), e2 = handle_op(d.fd, CAD_IOC_CANCEL, r.handle, NULL);
		int e3 = handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL), e4 = handle_op(d.fd, CAD_IOC_TEST, r.handle, &res);
		struct load_res l = load(d.fd, img, size, a, 3, 1, 0, 0);

		printf("KCAD owner: child: start %d cancel %d free %d test %d (%d) load %d\n", e1, e2, e3, e4, res, l.err);
		_exit(e1 == -EPERM && e2 == -EPERM && e3 == -EPERM && e4 == 0 && res == 0 && l.err == -EINVAL ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	CHECK("owner-child-cannot-start-cancel-free", WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	for (int i = 0; i < 8; i++)
		al[i] = 1;
	err = start(d.fd, r.handle, 2);
	res = err ? err : wait_run(&d, r.handle, 2, 0);
	CHECK("owner-parent-still-owns-it", res == 0 && d.st[r.handle].gen == 2, "got %d gen %u", res,
	      d.st[r.handle].gen);
	err = handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
	CHECK("owner-parent-frees-it", err == 0, "got %d", err);
	close(d.fd);
	free(img);
	return 0;
}

/* ------------------------------------------------------------------ */
/* access: who may join a group                                        */

/* In a child: take uid and gid (no supplementary groups), perhaps a user
 * namespace of its own, and try to join rank 1 of key's group of 2: the
 * errno (0 if it joined), 100 + errno if a step before failed. */
static int access_try(uint64_t key, uid_t uid, gid_t gid, int newns)
{
	struct cad_ioc_join j = { .size = sizeof(j), .rank = 1, .nranks = 2, .key = key };
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
			_exit(100 + errno);
		if (newns && unshare(CLONE_NEWUSER))
			_exit(100 + errno);
		fd = open("/dev/cad", O_RDWR);
		if (fd < 0)
			_exit(100 + errno);
		_exit(ioctl(fd, CAD_IOC_JOIN, &j) ? errno : 0);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static int do_access(void)
{
	const uint64_t key = job_key();
	int ready[2], done[2], err;
	pid_t creator;
	char c;

	if (pipe(ready) || pipe(done))
		return 1;
	creator = fork();
	if (creator == 0) {
		struct cad_ioc_join j = { .size = sizeof(j), .rank = 0, .nranks = 2, .key = key };
		int fd;

		if (setgroups(0, NULL) || setgid(1000) || setuid(1000))
			_exit(3);
		fd = open("/dev/cad", O_RDWR);
		if (fd < 0 || ioctl(fd, CAD_IOC_JOIN, &j))
			_exit(4);
		(void)!write(ready[1], "r", 1);
		(void)!read(done[0], &c, 1);
		_exit(0);
	}
	CHECK("access-creator-uid-1000-joins", read(ready[0], &c, 1) == 1, "the creator did not join");
	err = access_try(key, 1001, 1001, 0);
	CHECK("access-other-uid", err == EPERM, "uid 1001: %d", err);
	err = access_try(key, 1000, 1001, 0);
	CHECK("access-same-uid-other-gid", err == EPERM, "uid 1000 gid 1001: %d", err);
	err = access_try(key, 1000, 1000, 1);
	CHECK("access-other-user-namespace", err == EPERM, "uid 1000 in a user namespace of its own: %d", err);
	err = access_try(key, 1000, 1000, 0);
	CHECK("access-same-credentials", err == 0, "uid 1000 gid 1000: %d", err);
	(void)!write(done[1], "d", 1);
	waitpid(creator, NULL, 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Multi-process cases                                                 */

static unsigned char pattern(uint64_t i)
{
	return (unsigned char)(i * 131 + 7);
}

/* Rank r of the chain: loads and starts (unless it is the one that never
 * starts), then spins on its status page only (mode 0: pipeline, 1: kill,
 * 2: exit).  Reports through the exit
 * status: 0 ok; 10 + k: failed check k. */
static int chain_rank(uint64_t key, uint32_t rank, uint32_t P, uint64_t n, uint32_t S, int mode, int pfd)
{
	struct dev d;
	uint32_t size;
	void *img = chain_bcast(rank, P, n, S, &size);
	unsigned char *buf = aligned_alloc(4096, n ? (n + 4095) & ~4095ull : 4096);
	uint64_t addr = (uintptr_t)buf;
	struct load_res r;
	int err;
	double t0;

	for (uint64_t i = 0; i < n; i++)
		buf[i] = rank == 0 ? pattern(i) : 0;
	err = dev_open(&d, key, rank, P);
	if (err)
		return 11;
	if (mode == 1 && rank == 1) {  /* kill: joined, never starts */
		(void)!write(pfd, "j", 1);
		pause();
		return 0;
	}
	r = load(d.fd, img, size, &addr, 1, 1, 0, 0);
	if (r.err) {
		fprintf(stderr, "rank %u: load: %d %s\n", rank, r.err, r.log);
		return 12;
	}
	/* Rank 0 starts last, once the others are posted. */
	if (rank == 0)
		usleep(200000);
	err = start(d.fd, r.handle, 1);
	if (err)
		return 13;
	(void)!write(pfd, "s", 1);
	t0 = now();
	if (mode == 2) {  /* exit: spin on the page until killed */
		while (d.st[r.handle].result == -EINPROGRESS && now() - t0 < limit(30))
			;
		pause();
		return 0;
	}
	if (mode == 0) {
		/* No system call from here: the peers' calls move our data. */
		while (d.st[r.handle].result == -EINPROGRESS)
			if (now() - t0 > limit(30))
				return 14;
		if (d.st[r.handle].result != 0)
			return 15;
		for (uint64_t i = 0; i < n; i++)
			if (buf[i] != pattern(i)) {
				fprintf(stderr, "rank %u: byte %llu is %u, want %u\n", rank, (unsigned long long)i,
					buf[i], pattern(i));
				return 16;
			}
		return 0;
	}
	/* kill: wait for the error, then say when it came */
	err = wait_run(&d, r.handle, 1, 1);
	printf("KCAD rank %u ended with %d at %.6f\n", rank, err, now());
	fflush(stdout);
	return err == -EPIPE ? 0 : 17;
}

static int do_chain(const char *name, uint32_t P, uint64_t n, uint32_t S, int mode)
{
	const uint64_t key = job_key();
	pid_t pids[64];
	int pfd[2], bad = 0;
	double killed = 0;

	if (P < 2 || P > 64 || pipe(pfd))
		return 2;
	for (uint32_t r = 0; r < P; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			close(pfd[0]);
			_exit(chain_rank(key, r, P, n, S, mode, pfd[1]));
		}
	}
	close(pfd[1]);
	if (mode == 2) {
		/* Every rank started: kill them all at once, copies queued or
		 * running, so that their files are released side by side. */
		char c;
		uint32_t got = 0;

		while (got < P && read(pfd[0], &c, 1) == 1)
			got++;
		for (uint32_t r = 0; r < P; r++)
			kill(pids[r], SIGKILL);
	}
	if (mode == 1) {
		/* Everyone but rank 1 started (rank 0 after its delay), and
		 * rank 1 joined: the pipeline is stuck before it.  Kill it. */
		char c;
		uint32_t got = 0;

		while (got < P && read(pfd[0], &c, 1) == 1)
			got++;
		usleep(100000);
		killed = now();
		printf("KCAD killing rank 1 at %.6f\n", killed);
		fflush(stdout);
		kill(pids[1], SIGKILL);
	}
	for (uint32_t r = 0; r < P; r++) {
		int st;

		waitpid(pids[r], &st, 0);
		if ((mode == 1 && r == 1) || (mode == 2 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
			continue;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("KCAD rank %u: status 0x%x\n", r, st);
			bad++;
		}
	}
	close(pfd[0]);
	if (mode == 1)
		CHECK(name, !bad && now() - killed < limit(1.0), "%d ranks failed; the last ended %.3f s after the kill", bad,
		      now() - killed);
	else
		CHECK(name, !bad, "%d ranks failed", bad);
	return 0;
}

#define TOMBS 1000  /* (the module keeps up to 1024 a group) */

/* wait_run through poll() and read(), for secs at most: -ETIMEDOUT if
 * the run is still on then. */
static int wait_for(struct dev *d, uint32_t h, uint32_t gen, double secs)
{
	const double t0 = now();

	for (;;) {
		const int32_t res = d->st[h].result;
		struct pollfd p = { .fd = d->fd, .events = POLLIN };
		uint64_t n;

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (res != -EINPROGRESS && d->st[h].gen == gen)
			return res;
		if (now() - t0 > limit(secs))
			return -ETIMEDOUT;
		if (poll(&p, 1, 20) == 1)
			(void)!read(d->fd, &n, sizeof(n));
	}
}

/* A start of a collective a peer cancelled ends at once (-ETIMEDOUT after
 * 5 s: it waits for that peer). */
static int wait_cancelled(struct dev *d, uint32_t h, uint32_t gen, uint64_t seq)
{
	const int res = wait_for(d, h, gen, 5.0);

	if (res == -ETIMEDOUT)
		printf("KCAD collective %llu waits for a peer that cancelled it\n", (unsigned long long)seq);
	return res;
}

/* TOMBS collectives seq 100.. started and cancelled by one rank, started
 * later by the other: each must end -ECANCELED at once. */
static int late_starts(struct dev *d, uint32_t h, uint32_t gen0)
{
	for (uint32_t i = 0; i < TOMBS; i++) {
		int res = start(d->fd, h, 100 + i);

		if (!res)
			res = wait_cancelled(d, h, gen0 + 1 + i, 100 + i);
		if (res != -ECANCELED)
			return res ? res : -EINVAL;
	}
	return 0;
}

/* Three ranks: 0 and 1 exchange 8 bytes, and so do 1 and 2 (rank 1
 * receives both into a 16-byte buffer). */
static void *chain3(uint32_t rank, uint32_t *size)
{
	struct builder b;

	b_init(&b, rank, 3);
	b_buf(&b, CAD_BUF_SEND, CAD_ACC_READ, 8);
	b_buf(&b, CAD_BUF_RECV, CAD_ACC_WRITE, 16);
	for (uint32_t peer = 0; peer < 3; peer++) {
		if (peer == rank || (rank != 1 && peer != 1))
			continue;
		b_node(&b, (struct cad_node){ .kind = CAD_NODE_SEND, .peer = peer, .src_buf = 0, .len = 8 });
		b_node(&b, (struct cad_node){ .kind = CAD_NODE_RECV, .peer = peer, .dst_buf = 1,
					      .dst_off = peer == 2 ? 8 : 0, .len = 8 });
	}
	return b_image(&b, size);
}

/* A rank that finished its part of a collective and went on to later
 * ones of the communicator before a peer cancelled that collective has
 * passed it: the tombstone must not wait for it.  Rank 1 starts
 * collectives 1..times (a handle each); rank 0 ends them with rank 1 one
 * after the other with one handle (cadrt restarts one handle per
 * instance for every call) and starts it again as collective times + 1;
 * rank 1 (whose runs still wait for rank 2) cancels 1; rank 2 starts 1
 * and ends -ECANCELED, and then nobody is left to see the tombstone,
 * which goes.  With skip, rank 0 starts nothing before the cancel and
 * then collective 2 (skipping 1: it never starts it).  The tombstone
 * must go in each case, not stay until rank 0 leaves the group. */
static void cancel_passed(const char *name, uint32_t times, int skip)
{
	const uint64_t key = job_key() + 1 + times + 8 * skip;
	int go[3][2], done[2];
	pid_t pid[3] = { 0 };
	char c, what[64];

	if (pipe(go[1]) || pipe(go[2]) || pipe(done)) {
		CHECK(name, 0, "pipe: %s", strerror(errno));
		return;
	}
	for (uint32_t rank = 1; rank < 3; rank++) {
		pid[rank] = fork();
		if (pid[rank] == 0) {
			struct dev d;
			uint32_t size;
			void *img = chain3(rank, &size);
			static uint64_t s = 7, rbuf[4][2];
			const uint32_t n = rank == 1 ? times : 1;
			struct load_res r[4];
			int res;

			if (dev_open(&d, key, rank, 3))
				_exit(11);
			for (uint32_t i = 0; i < n; i++) {
				uint64_t a[2] = { (uintptr_t)&s, (uintptr_t)rbuf[i] };

				r[i] = load(d.fd, img, size, a, 2, 1, 0, 0);
				if (r[i].err)
					_exit(12);
			}
			if (write(done[1], "l", 1) != 1 || read(go[rank][0], &c, 1) != 1)
				_exit(12);
			for (uint32_t i = 0; i < n; i++)
				if (start(d.fd, r[i].handle, 1 + i))
					_exit(13);
			if (rank == 1) {  /* started; cancels 1 when told */
				if (write(done[1], "s", 1) != 1 || read(go[rank][0], &c, 1) != 1 ||
				    handle_op(d.fd, CAD_IOC_CANCEL, r[0].handle, NULL))
					_exit(14);
				res = wait_run(&d, r[0].handle, 1, 1);
			} else {
				res = wait_cancelled(&d, r[0].handle, 1, 1);
			}
			(void)!write(done[1], res == -ECANCELED ? "c" : "x", 1);
			(void)!read(go[rank][0], &c, 1);  /* stay in the group until told */
			_exit(0);
		}
	}
	{
		struct dev d;
		uint32_t size, gen = 0;
		void *img = chain3(0, &size);
		static uint64_t s = 5, rbuf[2];
		uint64_t a[2] = { (uintptr_t)&s, (uintptr_t)rbuf };
		struct load_res r = { .err = -1 };
		char c1 = 0, c2 = 0;
		int first = -1, st;
		long objects = 0;

		if (dev_open(&d, key, 0, 3) == 0 && read(done[0], &c, 1) == 1 && read(done[0], &c, 1) == 1)
			r = load(d.fd, img, size, a, 2, 1, 0, 0);
		if (!r.err && write(go[1][1], "g", 1) == 1 && read(done[0], &c, 1) == 1) {
			first = 0;
			for (uint32_t i = 1; !skip && i <= times && !first; i++)
				first = start(d.fd, r.handle, i) ? -1 : wait_run(&d, r.handle, ++gen, 1);
			if (!first && (skip || !start(d.fd, r.handle, times + 1))) {
				gen += !skip;
				usleep(100000);  /* what ended before settles */
				objects = (long)get_param("live_objects");
				if (write(go[1][1], "c", 1) == 1 && read(done[0], &c1, 1) == 1 &&
				    (!skip || (!start(d.fd, r.handle, 2) && ++gen)) &&
				    write(go[2][1], "g", 1) == 1 && read(done[0], &c2, 1) == 1)
					objects -= (long)get_param("live_objects");
				(void)handle_op(d.fd, CAD_IOC_CANCEL, r.handle, NULL);
				(void)wait_run(&d, r.handle, gen, 1);
			}
		}
		(void)!write(go[1][1], "x", 1);
		(void)!write(go[2][1], "x", 1);
		CHECK(name, first == 0 && c1 == 'c' && c2 == 'c',
		      "collectives 1..%u on rank 0: %d; rank 1 cancelled: %c, rank 2's late start: %c", skip ? 0 : times,
		      first, c1 ? c1 : '-', c2 ? c2 : '-');
		/* (other groups may go meanwhile: at most as many) */
		snprintf(what, sizeof(what), "%s-tombstone-goes", name);
		CHECK(what, objects >= 0, "%ld objects more after the late start (the tombstone stayed)", -objects);
		for (uint32_t rank = 1; rank < 3; rank++) {
			waitpid(pid[rank], &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				snprintf(what, sizeof(what), "%s-ranks", name);
				CHECK(what, 0, "rank %u status 0x%x", rank, st);
			}
		}
		close(d.fd);
	}
	for (int i = 1; i < 3; i++)
		close(go[i][0]), close(go[i][1]);
	close(done[0]);
	close(done[1]);
}

static int do_cancel(void)
{
	const uint64_t key = job_key();
	int pfd[2], back[2], st;
	pid_t pid;

	if (pipe(pfd) || pipe(back))
		return 2;
	pid = fork();
	if (pid == 0) {  /* rank 1: starts, cancels, sees -ECANCELED */
		struct dev d;
		uint32_t size;
		void *img = exchange(1, &size);
		static uint64_t s = 1, rbuf;
		uint64_t a[2] = { (uintptr_t)&s, (uintptr_t)&rbuf };
		struct load_res r;
		int res;
		char c;

		if (dev_open(&d, key, 1, 2))
			_exit(11);
		r = load(d.fd, img, size, a, 2, 1, CAD_LOAD_START, 9);
		if (r.err)
			_exit(12);
		if (handle_op(d.fd, CAD_IOC_CANCEL, r.handle, NULL))
			_exit(13);
		res = wait_run(&d, r.handle, 1, 0);
		for (uint32_t i = 0; i < TOMBS && res == -ECANCELED; i++) {
			if (start(d.fd, r.handle, 100 + i) || handle_op(d.fd, CAD_IOC_CANCEL, r.handle, NULL))
				_exit(15);
			res = wait_run(&d, r.handle, 2 + i, 0);
		}
		(void)!write(pfd[1], "c", 1);
		/* stay in the group while rank 0 starts them */
		(void)!read(back[0], &c, 1);
		_exit(res == -ECANCELED ? 0 : 14);
	}
	{
		struct dev d;
		uint32_t size;
		void *img = exchange(0, &size);
		static uint64_t s = 2, rbuf;
		uint64_t a[2] = { (uintptr_t)&s, (uintptr_t)&rbuf };
		struct load_res r = { .err = -1 };
		char c;
		int res = -1, late = -1;
		long objects = 0;

		if (dev_open(&d, key, 0, 2) == 0 && read(pfd[0], &c, 1) == 1) {
			r = load(d.fd, img, size, a, 2, 1, CAD_LOAD_START, 9);
			res = r.err ? r.err : wait_cancelled(&d, r.handle, 1, 9);
		}
		if (!r.err && res == -ECANCELED) {
			objects = (long)get_param("live_objects");
			late = late_starts(&d, r.handle, 1);
			objects -= (long)get_param("live_objects");
		}
		(void)!write(back[1], "x", 1);
		waitpid(pid, &st, 0);
		CHECK("cancel", WIFEXITED(st) && WEXITSTATUS(st) == 0 && res == -ECANCELED,
		      "rank 1 status 0x%x, rank 0 got %d", st, res);
		CHECK("cancel-late-starts-end-at-once", late == 0, "the late starts: %d", late);
		/* (other groups may come and go meanwhile: at least) */
		CHECK("cancel-tombstones-go-once-seen", objects >= TOMBS, "%ld objects fewer after the late starts",
		      objects);
		close(d.fd);
	}
	cancel_passed("cancel-restarted", 1, 0);
	cancel_passed("cancel-passed", 3, 0);
	cancel_passed("cancel-skipped", 1, 1);
	return 0;
}

static int cycles_rank(uint64_t key, uint32_t rank, long k)
{
	struct dev d;
	uint32_t size;
	void *img = exchange(rank, &size);
	static uint64_t s, rbuf;
	uint64_t a[2] = { (uintptr_t)&s, (uintptr_t)&rbuf };

	if (dev_open(&d, key, rank, 2))
		return 11;
	for (long i = 0; i < k; i++) {
		struct load_res r;
		int res;

		s = (uint64_t)i * 2 + rank;
		r = load(d.fd, img, size, a, 2, 1, CAD_LOAD_START, (uint64_t)i);
		if (r.err) {
			fprintf(stderr, "rank %u: load %ld: %d %s\n", rank, i, r.err, r.log);
			return 12;
		}
		res = wait_run(&d, r.handle, 1, i & 1);
		if (res || rbuf != (uint64_t)i * 2 + (1 - rank)) {
			fprintf(stderr, "rank %u: cycle %ld: %d, got %llu\n", rank, i, res, (unsigned long long)rbuf);
			return 13;
		}
		if (handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL))
			return 14;
	}
	return 0;
}

static int do_cycles(long k)
{
	const uint64_t key = job_key();
	pid_t pid = fork();
	int st0, st1;
	double t0 = now();

	if (pid == 0)
		_exit(cycles_rank(key, 1, k));
	st0 = cycles_rank(key, 0, k);
	waitpid(pid, &st1, 0);
	CHECK("cycles", st0 == 0 && WIFEXITED(st1) && WEXITSTATUS(st1) == 0, "rank 0: %d, rank 1: status 0x%x",
	      st0, st1);
	printf("KCAD %ld cycles in %.2f s\n", k, now() - t0);
	return 0;
}

/* A fingerprint of the buffer quick enough to take at once: one byte of
 * each of 4096 places spread over it, the last byte included. */
static uint64_t sample(const unsigned char *p, uint64_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (uint64_t i = 1; i <= 4096; i++)
		h = (h ^ p[n * i / 4096 - 1]) * 1099511628211ull;
	return h;
}

/* The receiver ends a transfer the module may be copying: after it is
 * told the run ended (cancel) or after free returns, nothing may write its
 * buffer any more -- the module must not report an end, nor unpin, while
 * a copy into the pages is in flight. */
static int do_inflight(int use_free, uint64_t n)
{
	const uint64_t key = job_key();
	int to0[2], to1[2], st;
	pid_t pid;

	if (pipe(to0) || pipe(to1))
		return 2;
	pid = fork();
	if (pid == 0) {  /* rank 0, the sender: starts first, waits in read() */
		struct dev d;
		uint32_t size;
		void *img = chain_bcast(0, 2, n, 1, &size);
		unsigned char *buf = aligned_alloc(4096, n);
		uint64_t addr = (uintptr_t)buf;
		struct load_res r;
		char c;
		int res;

		for (uint64_t i = 0; i < n; i++)
			buf[i] = pattern(i);
		if (dev_open(&d, key, 0, 2))
			_exit(11);
		r = load(d.fd, img, size, &addr, 1, 1, 0, 0);
		if (r.err || read(to0[0], &c, 1) != 1)
			_exit(12);
		if (start(d.fd, r.handle, 1))
			_exit(13);
		(void)!write(to1[1], "s", 1);
		res = wait_run(&d, r.handle, 1, 0);
		_exit(res == 0 || res == -ECANCELED ? 0 : 14);
	}
	{
		struct dev d;
		uint32_t size;
		void *img = chain_bcast(1, 2, n, 1, &size);
		unsigned char *buf = aligned_alloc(4096, n);
		uint64_t addr = (uintptr_t)buf, before, after;
		struct load_res r;
		char c;
		int res = 0, err;
		double t0, t1;

		memset(buf, 0, n);
		if (dev_open(&d, key, 1, 2))
			return 2;
		r = load(d.fd, img, size, &addr, 1, 1, 0, 0);
		(void)!write(to0[1], "s", 1);
		err = r.err ? r.err : read(to1[0], &c, 1) != 1 ? -EIO : 0;
		usleep(100000);  /* rank 0 is asleep in read() by now */
		t0 = now();
		if (!err)
			err = start(d.fd, r.handle, 1);
		usleep(10000);  /* with defer=1, rank 0 has woken and copies */
		if (!err && use_free) {
			err = handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
		} else if (!err) {
			err = handle_op(d.fd, CAD_IOC_CANCEL, r.handle, NULL);
			res = err ? err : wait_run(&d, r.handle, 1, 0);
		}
		t1 = now();
		before = sample(buf, n);
		usleep(300000);
		after = sample(buf, n);
		waitpid(pid, &st, 0);
		printf("KCAD inflight-%s: %s after %.3f s, %s\n", use_free ? "free" : "cancel",
		       use_free ? "freed" : res == 0 ? "completed" : "cancelled", t1 - t0,
		       buf[n - 1] == pattern(n - 1) ? "data copied" : buf[0] ? "data partly copied" : "nothing copied");
		CHECK(use_free ? "inflight-free" : "inflight-cancel",
		      !err && (res == 0 || res == -ECANCELED) && before == after && WIFEXITED(st) &&
			      WEXITSTATUS(st) == 0,
		      "err %d, result %d, buffer %s after the end, rank 0 status 0x%x", err, res,
		      before == after ? "unchanged" : "CHANGED", st);
		close(d.fd);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* pins                                                                */

static int do_pins(void)
{
	const uint64_t key = job_key();
	static char send[4096] __attribute__((aligned(4096))), recv[4096] __attribute__((aligned(4096)));
	struct dev d;
	uint32_t size, size_r;
	void *img = exchange(0, &size);
	struct load_res r;
	int err, fd, mfd, res;
	char *fm, *mm;

	err = dev_open(&d, key, 0, 2);
	CHECK("pins-join", err == 0, "got %d", err);
	if (err)
		return 0;
	/* ramfs: a file system that is not shared memory */
	mkdir("/rf", 0700);
	err = mount("none", "/rf", "ramfs", 0, NULL) ? -errno : 0;
	fd = open("/rf/buffer", O_RDWR | O_CREAT, 0600);
	fm = fd >= 0 && ftruncate(fd, 8192) == 0 ? mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
						 : MAP_FAILED;
	CHECK("pins-ramfs-file", err == 0 && fm != MAP_FAILED, "mount %d, mmap %s", err, strerror(errno));
	if (fm != MAP_FAILED) {
		uint64_t a[2] = { (uintptr_t)send, (uintptr_t)fm };

		r = load(d.fd, img, size, a, 2, 1, 0, 0);
		EXPECT_LOAD("writable-buffer-in-a-shared-file-mapping", r, -EINVAL,
			    "in a shared file mapping, which cannot be pinned for writing");
		a[0] = (uintptr_t)fm, a[1] = (uintptr_t)recv;
		r = load(d.fd, img, size, a, 2, 1, 0, 0);
		CHECK("read-only-buffer-in-a-shared-file-mapping", r.err == 0, "got %d: %s", r.err, r.log);
		if (!r.err)
			handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
		munmap(fm, 8192);
	}
	if (fd >= 0)
		close(fd);
	mfd = memfd_create("kcad", 0);
	mm = mfd >= 0 && ftruncate(mfd, 8192) == 0 ? mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)
						   : MAP_FAILED;
	if (mm != MAP_FAILED) {
		uint64_t a[2] = { (uintptr_t)send, (uintptr_t)mm };

		r = load(d.fd, img, size, a, 2, 1, 0, 0);
		CHECK("writable-buffer-in-shared-memory", r.err == 0, "got %d: %s", r.err, r.log);
		if (!r.err)
			handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
		munmap(mm, 8192);
	} else {
		CHECK("writable-buffer-in-shared-memory", 0, "memfd: %s", strerror(errno));
	}
	if (mfd >= 0)
		close(mfd);

	/* 1 MiB per user: 768 KiB pinned here, 768 KiB more by another
	 * process of the same user is over it */
	const unsigned long pinned_mb = get_param("max_pinned_mb");
	CHECK("pinned-limit-default", pinned_mb >= 1024, "max_pinned_mb is %lu", pinned_mb);
	set_param("max_pinned_mb", "1");
	{
		const uint64_t n = 384u << 10;
		double *src = aligned_alloc(4096, n), *dst = aligned_alloc(4096, n);
		uint64_t bb[3] = { (uintptr_t)src, (uintptr_t)dst, 0 };
		void *p = reduce_one(&size_r, n);
		pid_t pid;

		memset(src, 0, n);
		memset(dst, 0, n);
		r = load(d.fd, p, size_r, bb, 3, 1, 0, 0);
		CHECK("pins-within-the-limit", r.err == 0, "got %d: %s", r.err, r.log);
		pid = fork();
		if (pid == 0) {
			struct dev d2;
			struct load_res r2;

			if (dev_open(&d2, key ^ 0x77, 0, 1))
				_exit(3);
			r2 = load(d2.fd, p, size_r, bb, 3, 1, 0, 0);
			if (r2.err != -ENOMEM || !strstr(r2.log, "per user (max_pinned_mb)")) {
				printf("child: got %d: %s\n", r2.err, r2.log);
				_exit(1);
			}
			_exit(0);
		}
		waitpid(pid, &res, 0);
		CHECK("pinned-limit-is-per-user", WIFEXITED(res) && WEXITSTATUS(res) == 0, "child status 0x%x", res);
		if (!r.err)
			handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
		free(p);
		free(src);
		free(dst);
	}
	restore_param("max_pinned_mb", pinned_mb);
	close(d.fd);
	free(img);
	return 0;
}

/* ------------------------------------------------------------------ */
/* busy                                                                */

static int do_busy(int in_read)
{
	const uint64_t key = job_key(), key2 = key ^ 0x5555;
	const char *how = in_read ? "read" : "pause";
	char name[64];
	int pfd[2], st;
	double t_start = -1, t0, t;
	pid_t a, c;
	struct dev d2;
	int err;

	if (pipe(pfd))
		return 1;
	a = fork();
	if (a == 0) {
		struct dev d;
		uint32_t size;
		void *img = long_copies(2, 16u << 20, 1024, &size);
		uint64_t addrs[2] = { 0, 0 };
		struct load_res r;

		if (dev_open(&d, key, 0, 2))
			_exit(2);
		r = load(d.fd, img, size, addrs, 2, 1, 0, 0);
		if (r.err) {
			printf("busy: load: %d: %s\n", r.err, r.log);
			_exit(3);
		}
		t = 0;
		if (write(pfd[1], &t, sizeof(t)) != sizeof(t))  /* starting now */
			_exit(4);
		t0 = now();
		err = start(d.fd, r.handle, 1);
		t = err ? -1 : now() - t0;
		if (write(pfd[1], &t, sizeof(t)) != sizeof(t))
			_exit(4);
		for (;;) {
			uint64_t n;

			if (in_read)
				(void)!read(d.fd, &n, sizeof(n));
			else
				pause();
		}
	}
	close(pfd[1]);
	if (read(pfd[0], &t_start, sizeof(t_start)) != sizeof(t_start))
		t_start = -2;
	/* the program runs from here for seconds, in START or after it
	 * (never holding the group's lock for all of it) */
	usleep(200000);
	/* a second member of the busy group, in another process: it waits
	 * for the group's lock, a pass at most */
	c = fork();
	if (c == 0) {
		struct dev d;

		t0 = now();
		err = dev_open(&d, key, 1, 2);
		t = now() - t0;
		if (err || t > limit(5.0)) {
			printf("busy: join of the busy group: %d after %.2f s\n", err, t);
			_exit(1);
		}
		t0 = now();
		close(d.fd);
		t = now() - t0;
		if (t > limit(5.0)) {
			printf("busy: leaving the busy group took %.2f s\n", t);
			_exit(1);
		}
		_exit(0);
	}
	usleep(100000);
	/* another group meanwhile: it waits for nothing of that one */
	t0 = now();
	err = dev_open(&d2, key2, 0, 1);
	t = now() - t0;
	snprintf(name, sizeof(name), "busy-%s-other-group-joins-at-once", how);
	CHECK(name, err == 0 && t < limit(1.0), "join %d after %.2f s", err, t);
	if (!err)
		close(d2.fd);
	waitpid(c, &st, 0);
	snprintf(name, sizeof(name), "busy-%s-group-joins-and-leaves-within-passes", how);
	CHECK(name, WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	if (read(pfd[0], &t_start, sizeof(t_start)) != sizeof(t_start))
		t_start = -2;
	close(pfd[0]);
	snprintf(name, sizeof(name), "busy-%s-start-returns-after-a-pass", how);
	CHECK(name, t_start >= 0 && t_start < limit(2.0), "START took %.2f s", t_start);
	t0 = now();
	kill(a, SIGKILL);
	waitpid(a, &st, 0);
	t = now() - t0;
	printf("busy %s: START %.2f s (a pass), killed in %.2f s\n", how, t_start, t);
	snprintf(name, sizeof(name), "busy-%s-process-killed-within-a-pass", how);
	CHECK(name, WIFSIGNALED(st) && t < limit(5.0), "status 0x%x after %.2f s", st, t);
	return 0;
}

/* One transfer of n bytes (more than a pass's budget of 64 MiB) from
 * rank 0 to rank 1; rank 1 starts first and waits in read() or spins on
 * its status page (no system call).  With a bystander, a third member of
 * the group asleep in read() (with defer=1 the one woken to copy, as
 * rank 1 spins) is killed 10 ms after rank 0 starts: its pass stops and
 * the rest goes on elsewhere. */
enum { WIDE_READ, WIDE_SPIN, WIDE_BYSTANDER };

static int do_wide(uint64_t n, int mode)
{
	const uint64_t key = job_key();
	const unsigned long cut0 = get_param("cut");
	const char *how = mode == WIDE_READ ? "read" : mode == WIDE_SPIN ? "spin" : "bystander";
	const uint32_t nranks = mode == WIDE_BYSTANDER ? 3 : 2;
	int go[2], st, st2 = 0;
	char name[64];
	pid_t pid, by = -1;

	if (pipe(go))
		return 2;
	if (mode == WIDE_BYSTANDER) {
		by = fork();
		if (by == 0) {
			struct dev d;
			uint64_t k;

			if (dev_open(&d, key, 2, 3))
				_exit(11);
			for (;;)
				(void)!read(d.fd, &k, sizeof(k));
		}
	}
	pid = fork();
	if (pid == 0) {  /* rank 0, the sender: starts second */
		struct dev d;
		uint32_t size;
		void *img = chain_bcast(0, 2, n, 1, &size);
		uint64_t *buf = aligned_alloc(4096, n);
		uint64_t addr = (uintptr_t)buf;
		struct load_res r;
		char c;

		for (uint64_t i = 0; i < n / 8; i++)
			buf[i] = i * 0x9E3779B97F4A7C15ull + 1;
		if (dev_open(&d, key, 0, nranks))
			_exit(11);
		r = load(d.fd, img, size, &addr, 1, 1, 0, 0);
		if (r.err || read(go[0], &c, 1) != 1)
			_exit(12);
		if (start(d.fd, r.handle, 1))
			_exit(13);
		_exit(wait_run(&d, r.handle, 1, 0) ? 14 : 0);
	}
	{
		struct dev d;
		uint32_t size;
		void *img = chain_bcast(1, 2, n, 1, &size);
		uint64_t *buf = aligned_alloc(4096, n);
		uint64_t addr = (uintptr_t)buf, bad = 0;
		struct load_res r;
		int res = -1;

		memset(buf, 0, n);
		if (dev_open(&d, key, 1, nranks))
			return 2;
		r = load(d.fd, img, size, &addr, 1, 1, 0, 0);
		if (mode == WIDE_BYSTANDER)
			usleep(100000);  /* the bystander is asleep in read() */
		if (!r.err && start(d.fd, r.handle, 1) == 0) {
			(void)!write(go[1], "s", 1);
			if (mode == WIDE_BYSTANDER) {
				uint64_t mib = 0;

				usleep(10000);
				kill(by, SIGKILL);
				for (uint64_t i = 0; i < n / 8; i += (1u << 20) / 8)
					mib += buf[i] == i * 0x9E3779B97F4A7C15ull + 1;
				printf("KCAD wide-bystander: %llu of %llu MiB there at the kill\n",
				       (unsigned long long)mib, (unsigned long long)(n >> 20));
			}
			if (mode == WIDE_READ) {
				res = wait_run(&d, r.handle, 1, 0);
			} else {
				for (;;) {
					res = d.st[r.handle].result;
					__atomic_thread_fence(__ATOMIC_ACQUIRE);
					if (res != -EINPROGRESS && d.st[r.handle].gen == 1)
						break;
				}
			}
		}
		for (uint64_t i = 0; i < n / 8; i++)
			bad += buf[i] != i * 0x9E3779B97F4A7C15ull + 1;
		waitpid(pid, &st, 0);
		if (by > 0) {
			kill(by, SIGKILL);
			waitpid(by, &st2, 0);
		}
		printf("KCAD wide-%s: %llu passes cut it\n", how, (unsigned long long)(get_param("cut") - cut0));
		snprintf(name, sizeof(name), "wide-%s", how);
		CHECK(name, res == 0 && !bad && WIFEXITED(st) && WEXITSTATUS(st) == 0 && !(by > 0 && WIFEXITED(st2)),
		      "result %d, %llu words wrong, rank 0 status 0x%x, bystander 0x%x", res, (unsigned long long)bad,
		      st, st2);
		snprintf(name, sizeof(name), "wide-%s-cut-by-passes", how);
		CHECK(name, get_param("cut") > cut0, "the cut counter stayed at %lu", cut0);
		close(d.fd);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* fuzz: random ioctls, images and buffers from several processes      */
/*
 * kcad_check fuzz SECONDS SEED: rounds of a few seconds; each round forks
 * FZ_N ranks that join a fresh group and, until the round ends or a rank
 * is killed, run collectives of a schedule they all derive from (SEED,
 * round, k) -- a ring exchange, a chain broadcast, a sum of doubles at
 * rank 0, an algorithm of the standard library compiled by cadc (below)
 * -- whose data are checked when they end with 0, and between them
 * random operations: ioctls with random numbers, sizes and pointers,
 * mutated program images with random buffer addresses, starts, tests,
 * cancels and frees of random handles, mmap of the status page with
 * random arguments, reads interrupted by a timer, buffers unmapped or
 * protected under a running collective, a forked child that uses the
 * parent's file, second files joining with random keys and ranks.  The
 * parent kills a random rank in some rounds, and every rank at the end
 * of each: each must be gone within 10 s.  A rank also leaves its group
 * now and then; once a rank has seen a peer gone (-EPIPE), it goes on
 * for FZ_BROKEN seconds more (what is left of the group: the runs among
 * the others, the failures) and ends, so that the next round starts with
 * a whole group instead of the rest of the round failing.
 *
 * What it checks itself: data of every collective that ended with 0,
 * that a cancel ends a run within 3 s, that every rank dies, and that
 * enough collectives completed for the rest to mean something.  The
 * harness then checks the kernel log (no WARNING, BUG, Oops), that the
 * module's pinned pages and live objects fall back to 0, and that it
 * unloads. */

#define FZ_N 4
#define FZ_BROKEN 0.5
#define FZ_CTX 1
#define FZ_MAXB 8  /* buffers of a program the fuzzer maps */

struct fz_shared {
	long ops, loads, junk_loads_ok, coop, verified, coop_err, timeouts, forks, killed, op_runs, alg_verified,
		restarts;
	int bad;
	char why[256];
};

static struct fz_shared *g_fz;
static uint64_t g_rng;

static uint64_t fz_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd(void)
{
	g_rng = fz_mix(g_rng);
	return g_rng;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void fz_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fz_bad(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&g_fz->bad, 1, __ATOMIC_RELAXED) == 0) {
		va_start(ap, fmt);
		vsnprintf(g_fz->why, sizeof(g_fz->why), fmt, ap);
		va_end(ap);
	}
}

/*
 * Algorithms of the standard library, compiled by cadc for 2 to 4 ranks
 * (the .cadbc arguments, NAME.RANK.cadbc, one instance a directory): the
 * schedule runs them too, each program rank on a group rank of a random
 * permutation, with every buffer filled, and when one ends with 0 its
 * buffers must hold what the loopback engine (tests/core/loopback.c, the
 * core's executor with every rank in one process) computes from the same
 * inputs -- matching, pinning, single copies, deferral, cuts and the
 * kernel's reductions against a reference that has none of them.
 */
#define FZ_MAX_ALGS 48

struct fz_alg {
	char name[128];       /* the path without .RANK.cadbc */
	uint32_t nranks;
	void *img[FZ_N];
	uint32_t size[FZ_N];
	struct cad_prog prog[FZ_N];
	uint32_t fill;        /* CAD_DT_FLOAT or CAD_DT_DOUBLE: small integers of it (sums exact
			       * in any order, products of up to 4 exact, no NaN); else random bytes */
};

static struct fz_alg g_alg[FZ_MAX_ALGS];
static uint32_t g_nalgs;

/* Collective k of a round: its kind, length and segments, the same on
 * every rank. */
struct fz_coll {
	uint32_t kind;  /* 0 ring exchange, 1 chain broadcast, 2 sum at rank 0, 3 an algorithm */
	uint64_t len;   /* bytes per rank (a multiple of 8 for the sum) */
	uint32_t segs;
	uint8_t hint;   /* CAD_XFER_* on every SEND and RECV */
	uint32_t alg;   /* kind 3: g_alg[alg], program rank i on group rank perm[i] */
	uint32_t perm[FZ_N];
};

static struct fz_coll fz_coll(uint64_t seed, uint64_t k)
{
	static const uint64_t lens[] = { 0, 8, 1000, 4104, 65536, 300000, (1 << 20) + 24, 3 << 20 };
	const uint64_t h = fz_mix(seed ^ fz_mix(k));
	struct fz_coll c = { .kind = (uint32_t)(h % (g_nalgs ? 4 : 3)), .len = lens[(h >> 8) % 8],
			     .segs = 1 + (uint32_t)((h >> 16) % 8), .hint = (uint8_t)((h >> 24) % 3) };

	if (c.kind == 2)
		c.len &= ~7ull;
	if (c.kind == 3) {
		/* Three in four of them one of the round's three (instance,
		 * permutation) pairs, which the ranks keep loaded and restart
		 * (rounds can be short: see FZ_BROKEN). */
		uint64_t x = (h >> 30) % 4 ? fz_mix(seed + 1 + (h >> 32) % 3) : h >> 32;

		c.alg = (uint32_t)(x % g_nalgs);
		x /= g_nalgs;
		for (uint32_t i = 0; i < FZ_N; i++)
			c.perm[i] = i;
		for (uint32_t i = FZ_N - 1; i > 0; i--) {  /* Fisher-Yates */
			const uint32_t j = (uint32_t)(x % (i + 1)), t = c.perm[i];

			x /= i + 1;
			c.perm[i] = c.perm[j];
			c.perm[j] = t;
		}
	}
	return c;
}

/* The program rank of group rank rank in c (kind 3), or -1. */
static int fz_prog_rank(struct fz_coll c, uint32_t rank)
{
	for (uint32_t i = 0; i < g_alg[c.alg].nranks; i++)
		if (c.perm[i] == rank)
			return (int)i;
	return -1;
}

/* The program rank whose image rank loads in c (kind 3): its own, or 0
 * outside the instance (random loads only). */
static uint32_t fz_img_rank(struct fz_coll c, uint32_t rank)
{
	const int p = fz_prog_rank(c, rank);

	return p < 0 ? 0 : (uint32_t)p;
}

static int fz_scratch(struct fz_coll c, uint32_t rank, uint32_t j)
{
	if (c.kind == 3) {
		const struct cad_prog *prog = &g_alg[c.alg].prog[fz_img_rank(c, rank)];

		return j < prog->n_buffers && prog->buffers[j].kind == CAD_BUF_SCRATCH;
	}
	return c.kind == 2 && rank == 0 && j == 2;
}

/* Rank's program of c: its buffers (sizes[], scratch last) and image.
 * (Kind 3 on a rank outside the instance: program rank 0's image.) */
static void *fz_image(struct fz_coll c, uint32_t rank, uint32_t *size, uint32_t *nbufs, uint64_t sizes[FZ_MAXB])
{
	struct builder *b;
	void *img;

	if (c.kind == 3) {
		const uint32_t p = fz_img_rank(c, rank);
		const struct fz_alg *a = &g_alg[c.alg];

		*size = a->size[p];
		*nbufs = a->prog[p].n_buffers;
		for (uint32_t j = 0; j < *nbufs; j++)
			sizes[j] = a->prog[p].buffers[j].size;
		img = malloc(*size);
		memcpy(img, a->img[p], *size);
		return img;
	}
	b = malloc(sizeof(*b));
	b_init(b, rank, FZ_N);
	if (c.kind == 0) {
		b_buf(b, CAD_BUF_SEND, CAD_ACC_READ, c.len);
		b_buf(b, CAD_BUF_RECV, CAD_ACC_WRITE, c.len);
		b_node(b, (struct cad_node){ .kind = CAD_NODE_SEND, .flags = c.hint, .peer = (rank + 1) % FZ_N,
					     .src_buf = 0, .len = c.len });
		b_node(b, (struct cad_node){ .kind = CAD_NODE_RECV, .flags = c.hint, .peer = (rank + FZ_N - 1) % FZ_N,
					     .dst_buf = 1, .len = c.len });
	} else if (c.kind == 1) {
		const uint64_t seg = (c.len + c.segs - 1) / c.segs;

		if (rank == 0)
			b_buf(b, CAD_BUF_SEND, CAD_ACC_READ, c.len);
		else
			b_buf(b, CAD_BUF_RECV, CAD_ACC_READ | CAD_ACC_WRITE, c.len);
		for (uint64_t off = 0; off < c.len || (off == 0 && c.len == 0); off += seg ? seg : 1) {
			const uint64_t len = off + seg > c.len ? c.len - off : seg;
			uint32_t recv = ~0u;

			if (rank > 0)
				recv = b_node(b, (struct cad_node){ .kind = CAD_NODE_RECV, .flags = c.hint, .peer = rank - 1,
								    .dst_buf = 0, .dst_off = off, .len = len });
			if (rank + 1 < FZ_N) {
				const uint32_t send = b_node(b, (struct cad_node){ .kind = CAD_NODE_SEND, .flags = c.hint,
										   .peer = rank + 1, .src_buf = 0,
										   .src_off = off, .len = len });
				if (recv != ~0u)
					b_edge(b, recv, send);
			}
			if (!seg)
				break;
		}
	} else if (rank == 0) {
		uint32_t prev;

		b_buf(b, CAD_BUF_SEND, CAD_ACC_READ, c.len);
		b_buf(b, CAD_BUF_RECV, CAD_ACC_READ | CAD_ACC_WRITE, c.len);
		b_buf(b, CAD_BUF_SCRATCH, CAD_ACC_READ | CAD_ACC_WRITE, c.len * (FZ_N - 1));
		prev = b_node(b, (struct cad_node){ .kind = CAD_NODE_COPY, .src_buf = 0, .dst_buf = 1, .len = c.len });
		for (uint32_t i = 1; i < FZ_N; i++) {
			const uint32_t recv = b_node(b, (struct cad_node){ .kind = CAD_NODE_RECV, .flags = c.hint, .peer = i,
									   .dst_buf = 2, .dst_off = (i - 1) * c.len,
									   .len = c.len });
			const uint32_t red = b_node(b, (struct cad_node){ .kind = CAD_NODE_REDUCE, .dtype = CAD_DT_DOUBLE,
									  .op = CAD_OP_SUM, .src_buf = 2,
									  .src_off = (i - 1) * c.len, .dst_buf = 1,
									  .len = c.len });
			b_edge(b, prev, red);
			b_edge(b, recv, red);
			prev = red;
		}
	} else {
		b_buf(b, CAD_BUF_SEND, CAD_ACC_READ, c.len);
		b_node(b, (struct cad_node){ .kind = CAD_NODE_SEND, .flags = c.hint, .peer = 0, .src_buf = 0, .len = c.len });
	}
	*nbufs = b->nb;
	for (uint32_t i = 0; i < b->nb; i++)
		sizes[i] = b->bufs[i].size;
	img = b_image(b, size);
	free(b);
	return img;
}

/* Word i of rank's data in collective k; the sum's doubles are small
 * integers, exact in any order. */
static uint64_t fz_word(uint64_t k, uint32_t rank, uint64_t i)
{
	return (k << 40) ^ ((uint64_t)rank << 32) ^ (i * 0x9e3779b1u);
}

static double fz_val(uint64_t k, uint32_t rank, uint64_t i)
{
	return (double)((k * 7 + rank * 131 + i) % 1021);
}

static void fz_fill(struct fz_coll c, uint64_t k, uint32_t rank, unsigned char *p)
{
	for (uint64_t i = 0; i + 8 <= c.len; i += 8) {
		if (c.kind == 2) {
			const double v = fz_val(k, rank, i / 8);

			memcpy(p + i, &v, 8);
		} else {
			const uint64_t w = fz_word(k, rank, i / 8);

			memcpy(p + i, &w, 8);
		}
	}
	for (uint64_t i = c.len & ~7ull; i < c.len; i++)
		p[i] = (unsigned char)(k + rank + i);
}

/* Whether what rank received (or reduced) in collective k is right. */
static int fz_check(struct fz_coll c, uint64_t k, uint32_t rank, const unsigned char *p, uint64_t *at)
{
	const uint32_t from = c.kind == 0 ? (rank + FZ_N - 1) % FZ_N : 0;
	unsigned char *want = malloc(c.len ? c.len : 1);
	int ok = 1;

	if (c.kind == 2) {
		for (uint64_t i = 0; i < c.len / 8; i++) {
			double v = 0;

			for (uint32_t r = 0; r < FZ_N; r++)
				v += fz_val(k, r, i);
			memcpy(want + i * 8, &v, 8);
		}
	} else {
		fz_fill(c, k, from, want);
	}
	for (uint64_t i = 0; i < c.len && ok; i++)
		if (p[i] != want[i])
			ok = 0, *at = i;
	free(want);
	return ok;
}

/* Buffer j of program rank p of algorithm collective k, before it runs. */
static void fz_alg_fill(const struct fz_alg *a, uint64_t k, uint32_t p, uint32_t j, unsigned char *b, uint64_t len)
{
	uint64_t i = 0;

	if (a->fill == CAD_DT_DOUBLE)
		for (; i + 8 <= len; i += 8) {
			const double v = fz_val(k, p * 8 + j, i / 8);

			memcpy(b + i, &v, 8);
		}
	else if (a->fill == CAD_DT_FLOAT)
		for (; i + 4 <= len; i += 4) {
			const float v = (float)fz_val(k, p * 8 + j, i / 4);

			memcpy(b + i, &v, 4);
		}
	else
		for (; i + 8 <= len; i += 8) {
			const uint64_t w = fz_mix(fz_word(k, p * 8 + j, i / 8));

			memcpy(b + i, &w, 8);
		}
	for (; i < len; i++)
		b[i] = (unsigned char)(k * 3 + p * 5 + j + i);
}

/* Whether program rank p's buffers after algorithm collective k (the
 * kernel's, mine[]) are the loopback engine's from the same inputs: 1, or
 * 0 with the first wrong byte in *which, *at; -1 if the reference could
 * not be computed (said with fz_bad). */
static int fz_alg_check(struct fz_coll c, uint64_t k, uint32_t p, const uint64_t mine[FZ_MAXB], uint32_t *which,
			uint64_t *at)
{
	const struct fz_alg *a = &g_alg[c.alg];
	struct cad_lb_rank lb[FZ_N];
	void *bufs[FZ_N][FZ_MAXB];
	void *mem, *vm = aligned_alloc(64, CAD_VM_SCRATCH_SIZE);
	char why[512];
	int ok = 1, err;

	memset(lb, 0, sizeof(lb));
	memset(bufs, 0, sizeof(bufs));
	for (uint32_t r = 0; r < a->nranks; r++) {
		lb[r].prog = a->prog[r];
		lb[r].bufs = bufs[r];
		for (uint32_t j = 0; j < a->prog[r].n_buffers; j++) {
			const uint64_t len = a->prog[r].buffers[j].size;

			bufs[r][j] = calloc(1, len ? len : 1);  /* scratch: zeroed, as the module's */
			if (a->prog[r].buffers[j].kind != CAD_BUF_SCRATCH)
				fz_alg_fill(a, k, r, j, bufs[r][j], len);
		}
	}
	mem = malloc(cad_lb_mem_size(lb, a->nranks) + 8);
	err = cad_lb_run(lb, a->nranks, mem, vm, why, sizeof(why));
	if (err) {
		fz_bad("%s: the loopback engine failed (%d): %s", a->name, err, why);
		ok = -1;
	}
	for (uint32_t j = 0; ok == 1 && j < a->prog[p].n_buffers; j++) {
		const unsigned char *want = bufs[p][j], *got = (const unsigned char *)(uintptr_t)mine[j];

		if (a->prog[p].buffers[j].kind == CAD_BUF_SCRATCH)
			continue;
		for (uint64_t i = 0; i < a->prog[p].buffers[j].size; i++)
			if (got[i] != want[i]) {
				*which = j;
				*at = i;
				ok = 0;
				break;
			}
	}
	for (uint32_t r = 0; r < a->nranks; r++)
		for (uint32_t j = 0; j < FZ_MAXB; j++)
			free(bufs[r][j]);
	free(mem);
	free(vm);
	return ok;
}

/* The whole of a file (not empty), malloc'ed, its size in *size; NULL
 * with why on stderr. */
static void *fz_read_file(const char *path, uint32_t *size)
{
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	long n = 0;

	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		fclose(f);
		*size = (uint32_t)n;
		return buf;
	}
	fprintf(stderr, "kcad_check: cannot read %s\n", path);
	free(buf);
	if (f)
		fclose(f);
	return NULL;
}

/* Reads the .cadbc files of algorithm instances into g_alg; 0, or -1
 * with why on stderr. */
static int fz_load_alg(const char *path)
{
	const char *dot = strrchr(path, '.'), *rdot = dot;
	struct fz_alg *a = NULL;
	struct cad_prog prog;
	char log_buf[256], name[128];
	struct cad_log log;
	uint32_t n;
	void *img;

	while (rdot > path && rdot[-1] != '.')
		rdot--;
	if (!dot || rdot <= path + 1 || (size_t)(rdot - 1 - path) >= sizeof(name)) {
		fprintf(stderr, "kcad_check: %s is not NAME.RANK.cadbc\n", path);
		return -1;
	}
	img = fz_read_file(path, &n);
	if (!img)
		return -1;
	snprintf(name, sizeof(name), "%.*s", (int)(rdot - 1 - path), path);
	cad_log_init(&log, log_buf, sizeof(log_buf));
	if (cad_verify(img, n, NULL, &prog, &log)) {
		fprintf(stderr, "kcad_check: %s does not verify: %s\n", path, log_buf);
		free(img);
		return -1;
	}
	for (uint32_t i = 0; i < g_nalgs && !a; i++)
		if (!strcmp(g_alg[i].name, name))
			a = &g_alg[i];
	if (!a && g_nalgs < FZ_MAX_ALGS) {
		a = &g_alg[g_nalgs++];
		snprintf(a->name, sizeof(a->name), "%s", name);
		a->nranks = prog.hdr->nranks;
	}
	if (!a || prog.hdr->nranks != a->nranks || a->nranks > FZ_N || a->img[prog.hdr->rank] ||
	    prog.n_buffers > FZ_MAXB) {
		fprintf(stderr, "kcad_check: %s: more than %d instances, more than %d ranks or %d buffers, "
				"or a rank twice\n", path, FZ_MAX_ALGS, FZ_N, FZ_MAXB);
		free(img);
		return -1;
	}
	a->img[prog.hdr->rank] = img;
	a->size[prog.hdr->rank] = n;
	a->prog[prog.hdr->rank] = prog;
	for (uint32_t i = 0; i < prog.n_nodes; i++) {
		const struct cad_node *nd = &prog.nodes[i];

		if (nd->kind != CAD_NODE_REDUCE)
			continue;
		if (nd->dtype == CAD_DT_DOUBLE || nd->dtype == CAD_DT_FLOAT)
			a->fill = nd->dtype;
		/* A user-defined operator on elements of 8-byte words (dsum,
		 * complex_mul, vec3_sum, maxloc's value, affine's integers):
		 * doubles, so a floating one sees finite values.  (No
		 * operator of the library works on floats.) */
		else if (nd->op == CAD_OP_USER && !(prog.ops[nd->user_op].elem_size % 8))
			a->fill = CAD_DT_DOUBLE;
	}
	return 0;
}

static void fz_tick(int sig)
{
	(void)sig;
}

/* A mapping of len bytes (+ a random misalignment in 8s), anonymous
 * private or shared, maybe asking for transparent huge pages; what to
 * munmap goes to *base, *maplen. */
static unsigned char *fz_map(uint64_t len, void **base, size_t *maplen)
{
	const uint64_t skew = below(4) ? 0 : 8 * below(64);
	unsigned char *p;

	*maplen = (size_t)((len + skew + 4095) & ~4095ull);
	if (!*maplen)
		*maplen = 4096;
	p = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | (below(3) ? MAP_PRIVATE : MAP_SHARED), -1, 0);
	if (p == MAP_FAILED) {
		*base = NULL;
		return NULL;
	}
	if (!below(4))
		(void)madvise(p, *maplen, MADV_HUGEPAGE);  /* huge pages where 2 MiB fit */
	*base = p;
	return p + skew;
}

/* Maps every buffer of rank's program of c but the module's scratch:
 * addrs[] for the load, what to unmap in base[], maplen[]; -1 if a
 * mapping failed. */
static int fz_map_bufs(struct fz_coll c, uint32_t rank, uint32_t nbufs, const uint64_t sizes[FZ_MAXB], uint64_t addrs[FZ_MAXB],
		       void *base[FZ_MAXB], size_t maplen[FZ_MAXB])
{
	for (uint32_t j = 0; j < nbufs && j < FZ_MAXB; j++) {
		if (fz_scratch(c, rank, j))
			continue;  /* the module's */
		addrs[j] = (uintptr_t)fz_map(sizes[j], &base[j], &maplen[j]);
		if (!addrs[j])
			return -1;
	}
	return 0;
}

static void fz_unmap(void *base[FZ_MAXB], const size_t maplen[FZ_MAXB])
{
	for (uint32_t j = 0; j < FZ_MAXB; j++)
		if (base[j])
			munmap(base[j], maplen[j]);
}

/* A pointer for a random argument: valid memory of n bytes, NULL, an odd
 * or unmapped address, a kernel one. */
static uint64_t fz_ptr(void *valid)
{
	switch (below(8)) {
	case 0: return 0;
	case 1: return 1 + below(4095);
	case 2: return 0xffff888000000000ull + 4096 * below(1024);
	case 3: return 0x7ffffffff000ull - 8 * below(4);
	case 4: return rnd();
	default: return (uintptr_t)valid;
	}
}

#define FZ_HANDLES 4

/* One-rank programs that reduce buffer 0 into buffer 1 with a user-defined
 * operator (op_tool image, at most FZ_OP_BYTES a buffer), loaded as they
 * are or with random bytes changed: the kernel's VM runs whatever bytecode
 * its verifier accepts. */
#define FZ_MAX_OPS 16
#define FZ_OP_BYTES (256 * 1024)
static void *g_op_img[FZ_MAX_OPS];
static uint32_t g_op_size[FZ_MAX_OPS], g_nops;

/* An algorithm's program loaded and kept, its buffers mapped, for later
 * collectives of the same instance: restarted, as cadrt starts its
 * instances' handles (its buffers refilled first).  After MADV_DONTNEED
 * under a run the restart must see whether the pages are still the ones
 * pinned: in a shared mapping they are, in a private one they are not
 * (-ESTALE, and the program is loaded again). */
#define FZ_KEPT 4

struct fz_kept {
	int used;
	uint32_t alg, perm[FZ_N], h;
	uint32_t gen;  /* of its last start (the status page's) */
	uint64_t addrs[FZ_MAXB];
	void *base[FZ_MAXB];
	size_t maplen[FZ_MAXB];
};

struct fz_rank {
	struct dev d;
	uint64_t key;
	uint32_t rank;
	uint32_t coop_h;                /* the schedule's running handle, or ~0 */
	uint32_t handles[FZ_HANDLES];
	uint32_t nh;
	double broken;                  /* when it first saw a peer gone, or 0 */
	struct fz_kept kept[FZ_KEPT];
	unsigned char junk[8192];
};

static struct fz_kept *fz_find_kept(struct fz_rank *z, struct fz_coll c)
{
	for (int i = 0; i < FZ_KEPT; i++)
		if (z->kept[i].used && z->kept[i].alg == c.alg && !memcmp(z->kept[i].perm, c.perm, sizeof(c.perm)))
			return &z->kept[i];
	return NULL;
}

static void fz_drop_kept(struct fz_rank *z, struct fz_kept *e)
{
	(void)handle_op(z->d.fd, CAD_IOC_FREE, e->h, NULL);
	fz_unmap(e->base, e->maplen);
	memset(e, 0, sizeof(*e));
}

static int fz_is_kept(const struct fz_rank *z, uint32_t h)
{
	for (int i = 0; i < FZ_KEPT; i++)
		if (z->kept[i].used && z->kept[i].h == h)
			return 1;
	return 0;
}

static void fz_keep(struct fz_rank *z, uint32_t h)
{
	if (z->nh < FZ_HANDLES) {
		z->handles[z->nh++] = h;
		return;
	}
	(void)handle_op(z->d.fd, CAD_IOC_FREE, h, NULL);
}

/* A handle to start, test, cancel or free: one of the random loads', or
 * any number -- never the schedule's collective's or a kept one, whose
 * ends are checked (freed under it, its handle could come back with
 * another run's end). */
static uint32_t fz_handle(struct fz_rank *z)
{
	uint32_t h = (uint32_t)(below(3) ? below(CAD_MAX_PROGRAMS + 4) : rnd());

	if (z->nh && below(4))
		h = z->handles[below(z->nh)];
	while (h == z->coop_h || fz_is_kept(z, h))
		h++;
	return h;
}

/* One random operation. */
static void fz_junk(struct fz_rank *z, uint64_t seed, uint64_t k)
{
	const int fd = z->d.fd;

	for (size_t i = 0; i < sizeof(z->junk); i += 8) {
		const uint64_t w = rnd();

		memcpy(z->junk + i, &w, 8);
	}
	__atomic_fetch_add(&g_fz->ops, 1, __ATOMIC_RELAXED);
	switch (below(13)) {
	case 0: {  /* VERSION, any size: a known size must succeed */
		struct { struct cad_ioc_version v; unsigned char tail[32]; } a;
		const uint32_t size = below(2) ? sizeof(a.v) : (uint32_t)below(sizeof(a));

		memset(&a, 0, sizeof(a));
		a.v.size = size;
		if (ioctl(fd, CAD_IOC_VERSION, &a) && size == sizeof(a.v))
			fz_bad("rank %u: VERSION of its own size failed: %s", z->rank, strerror(errno));
		break;
	}
	case 1: {  /* any command of ours, any size and pointer */
		const unsigned long cmd = _IOC(below(4), CAD_IOC_MAGIC, 0x3e + below(20), below(160));
		uint32_t size = (uint32_t)below(160);

		memcpy(z->junk, &size, 4);
		(void)!ioctl(fd, below(8) ? cmd : (unsigned long)rnd(), (void *)(uintptr_t)fz_ptr(z->junk));
		break;
	}
	case 2:
	case 3: {  /* a mutated image, random addresses and fields */
		struct fz_coll c = fz_coll(seed, k + below(3));
		uint64_t sizes[FZ_MAXB], addrs[FZ_MAXB];
		uint32_t size, nbufs, ranks[FZ_N + 1];
		unsigned char *img = fz_image(c, z->rank, &size, &nbufs, sizes);
		void *base[FZ_MAXB] = { 0 };
		size_t maplen[FZ_MAXB] = { 0 };
		char log[256];
		struct cad_ioc_load l = { .size = sizeof(l) };
		const uint32_t flips = below(3) ? 1 + (uint32_t)below(8) : 0;

		for (uint32_t i = 0; i < flips && size; i++) {
			const uint32_t at = (uint32_t)below(size);

			if (below(2))
				img[at] ^= (unsigned char)(1u << below(8));
			else
				img[at] = (unsigned char)rnd();
		}
		if (!below(8))
			size = (uint32_t)below(size + 64);
		for (uint32_t i = 0; i < FZ_MAXB; i++) {
			addrs[i] = 0;
			if (i < nbufs && i < FZ_MAXB && sizes[i] && below(4) != 0) {
				unsigned char *p = fz_map(sizes[i] + (below(4) ? 0 : 4096), &base[i], &maplen[i]);

				addrs[i] = p ? (uintptr_t)p : 0;
			}
			if (!below(6))
				addrs[i] = fz_ptr(z->junk);
		}
		for (uint32_t i = 0; i <= FZ_N; i++)
			ranks[i] = below(4) ? i : (uint32_t)below(5);
		l.prog_size = size;
		l.prog = below(16) ? (uintptr_t)img : fz_ptr(img);
		l.buf_addrs = below(16) ? (uintptr_t)addrs : fz_ptr(addrs);
		l.nbufs = below(4) ? nbufs : (uint32_t)below(9);
		l.log_size = below(4) ? sizeof(log) : (uint32_t)below(1024);
		l.log_buf = below(8) ? (uintptr_t)log : fz_ptr(log);
		l.ranks = below(3) ? 0 : below(4) ? (uintptr_t)ranks : fz_ptr(ranks);
		l.ctx = FZ_CTX + 1 + below(3);  /* never the schedule's: its data are checked */
		l.flags = below(4) ? 0 : below(3) ? CAD_LOAD_START : (uint32_t)rnd();
		l.seq = k + below(4);
		l.fp = below(2) ? 0 : below(4);
		if (!below(16))
			l.size = (uint32_t)below(sizeof(l) + 16);
		if (ioctl(fd, CAD_IOC_LOAD, &l) == 0) {
			__atomic_fetch_add(&g_fz->junk_loads_ok, 1, __ATOMIC_RELAXED);
			fz_keep(z, l.handle);
		}
		/* Buffers of a loaded program go from under it: its pages stay
		 * pinned until it is freed, and its next start is -ESTALE. */
		fz_unmap(base, maplen);
		free(img);
		break;
	}
	case 4: {  /* START, TEST, CANCEL, FREE of a random handle */
		const uint32_t h = fz_handle(z);
		const unsigned long cmds[] = { CAD_IOC_TEST, CAD_IOC_CANCEL, CAD_IOC_FREE };

		if (below(3) == 0)
			(void)start(fd, h, k + below(8));
		else
			(void)handle_op(fd, cmds[below(3)], h, NULL);
		break;
	}
	case 5: {  /* mmap of the file, random arguments */
		const size_t len = below(2) ? CAD_STATUS_SIZE : (size_t)below(3 * 4096);
		const int prot = below(3) ? PROT_READ : (int)below(8);
		const off_t off = below(3) ? 0 : (off_t)(4096 * below(4));
		void *p = mmap(NULL, len, prot, below(4) ? MAP_SHARED : MAP_PRIVATE, fd, off);

		if (p != MAP_FAILED) {
			if (prot & PROT_READ)
				(void)*(volatile const char *)p;
			munmap(p, len);
		}
		break;
	}
	case 6: {  /* read (interrupted by the timer if it blocks) and poll */
		uint64_t buf[2];
		struct pollfd p = { .fd = fd, .events = POLLIN };
		const int fl = fcntl(fd, F_GETFL);

		if (below(2))
			(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		(void)poll(&p, 1, (int)below(3));
		(void)!read(fd, below(8) ? (void *)buf : (void *)(uintptr_t)fz_ptr(buf), (size_t)below(17));
		(void)fcntl(fd, F_SETFL, fl);
		break;
	}
	case 7: {  /* a child uses the parent's file, then exits or is killed */
		const pid_t pid = fork();

		if (pid == 0) {
			g_rng ^= (uint64_t)getpid() << 20;
			for (int i = 0, n = 1 + (int)below(3); i < n; i++) {
				const uint32_t h = fz_handle(z);

				switch (below(4)) {
				case 0: (void)start(fd, h, k + below(4)); break;
				case 1: (void)handle_op(fd, CAD_IOC_FREE, h, NULL); break;
				case 2: (void)handle_op(fd, CAD_IOC_CANCEL, h, NULL); break;
				default: {
					struct fz_coll c = fz_coll(seed, k + 1);
					uint64_t sizes[FZ_MAXB], addrs[FZ_MAXB] = { 0 };
					uint32_t size, nbufs;
					void *img = fz_image(c, z->rank, &size, &nbufs, sizes);
					void *base[FZ_MAXB];
					size_t maplen[FZ_MAXB];

					(void)fz_map_bufs(c, z->rank, nbufs, sizes, addrs, base, maplen);
					(void)load(fd, img, size, addrs, nbufs, FZ_CTX + 1, 0, 0);
				}
				}
			}
			_exit(0);
		}
		if (pid > 0) {
			__atomic_fetch_add(&g_fz->forks, 1, __ATOMIC_RELAXED);
			if (below(2))
				kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		break;
	}
	case 9:
	case 10:
		if (g_nops) {  /* a user-defined operator, maybe with random bytes changed */
			const uint32_t i = (uint32_t)below(g_nops), size = g_op_size[i];
			unsigned char *img = malloc(size);
			const int intact = below(3) == 0;
			void *base[2];
			size_t maplen[2];
			uint64_t addrs[2];
			uint32_t ranks[1] = { z->rank };
			struct cad_ioc_load l = { .size = sizeof(l), .prog_size = size, .prog = (uintptr_t)img,
						  .buf_addrs = (uintptr_t)addrs, .nbufs = 2, .ranks = (uintptr_t)ranks,
						  .ctx = FZ_CTX + 1 + below(3), .flags = CAD_LOAD_START, .seq = rnd() };

			memcpy(img, g_op_img[i], size);
			for (uint32_t n = intact ? 0 : 1 + (uint32_t)below(4); n; n--)
				img[below(size)] ^= (unsigned char)(1u << below(8));
			for (int b = 0; b < 2; b++) {  /* page-aligned: any element's alignment */
				unsigned char *p = base[b] = mmap(NULL, maplen[b] = FZ_OP_BYTES, PROT_READ | PROT_WRITE,
								  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				if (p == MAP_FAILED)
					p = base[b] = NULL;
				addrs[b] = (uintptr_t)p;
				for (size_t j = 0; p && j < FZ_OP_BYTES; j += 8) {
					const uint64_t w = below(4) ? rnd() >> below(64) : rnd();

					memcpy(p + j, &w, 8);
				}
			}
			int loaded;

			/* (SIGALRM, without SA_RESTART, may interrupt the load of
			 * the process's first buffers: cad.ko registers its memory
			 * notifier then, which gives up for any pending signal.) */
			while ((loaded = ioctl(fd, CAD_IOC_LOAD, &l)) != 0 && errno == EINTR)
				;
			if (loaded == 0) {
				const int res = wait_for(&z->d, l.handle, 1, 3.0);

				if (res == -ETIMEDOUT)
					(void)handle_op(fd, CAD_IOC_CANCEL, l.handle, NULL);
				if (intact && res)
					fz_bad("rank %u: operator image %u ended with %d", z->rank, i, res);
				__atomic_fetch_add(&g_fz->op_runs, 1, __ATOMIC_RELAXED);
				(void)wait_for(&z->d, l.handle, 1, 3.0);
				(void)handle_op(fd, CAD_IOC_FREE, l.handle, NULL);
			} else if (intact) {
				fz_bad("rank %u: operator image %u refused: %s", z->rank, i, strerror(errno));
			}
			for (int b = 0; b < 2; b++)
				if (base[b])
					munmap(base[b], maplen[b]);
			free(img);
		}
		break;
	case 8: {  /* a second file joins: random key, rank, size */
		const int fd2 = open("/dev/cad", O_RDWR | O_CLOEXEC);
		struct cad_ioc_join j = { .size = sizeof(j), .rank = (uint32_t)below(FZ_N + 2),
					  .nranks = below(4) ? FZ_N : (uint32_t)rnd(), .key = rnd() };

		if (fd2 < 0)
			break;
		if (below(2))
			j.key = below(2) ? z->key : (uint64_t)below(2);
		if (!below(8))
			j.flags = (uint32_t)rnd();
		(void)!ioctl(fd2, CAD_IOC_JOIN, &j);
		(void)!ioctl(fd2, CAD_IOC_JOIN, &j);  /* twice */
		close(fd2);
		break;
	}
	default:  /* a valid load of the next collective, left or started early */
	{
		struct fz_coll c = fz_coll(seed, k + 1);
		uint64_t sizes[FZ_MAXB], addrs[FZ_MAXB] = { 0 };
		uint32_t size, nbufs;
		void *img = fz_image(c, z->rank, &size, &nbufs, sizes);
		void *base[FZ_MAXB] = { 0 };
		size_t maplen[FZ_MAXB] = { 0 };
		struct load_res r;

		if (!fz_map_bufs(c, z->rank, nbufs, sizes, addrs, base, maplen)) {
			r = load(fd, img, size, addrs, nbufs, FZ_CTX + 1, below(2) ? CAD_LOAD_START : 0, k);
			if (!r.err)
				fz_keep(z, r.handle);
		}
		free(img);
		fz_unmap(base, maplen);
		break;
	}
	}
}

/* Fills the buffers of rank's program of c for collective k (its
 * addresses addrs[]); *out: the one a run may lose or have dropped (kinds
 * 0-2: the result), *spoil its index. */
static void fz_fill_bufs(struct fz_coll c, uint64_t k, uint32_t rank, int p, uint32_t nbufs, const uint64_t sizes[],
			 const uint64_t addrs[], unsigned char **out, uint32_t *spoil)
{
	unsigned char *send = (unsigned char *)(uintptr_t)addrs[0];

	*spoil = nbufs > 1 ? 1 : 0;
	*out = c.kind == 1 ? send : nbufs > 1 ? (unsigned char *)(uintptr_t)addrs[1] : NULL;
	if (c.kind == 3) {
		*out = NULL;
		for (uint32_t j = 0; j < nbufs; j++)
			if (addrs[j]) {
				fz_alg_fill(&g_alg[c.alg], k, (uint32_t)p, j, (unsigned char *)(uintptr_t)addrs[j], sizes[j]);
				if (!*out || !below(2))
					*out = (unsigned char *)(uintptr_t)addrs[j], *spoil = j;
			}
	} else if (c.kind != 1 || rank == 0) {
		fz_fill(c, k, rank, send);
	}
}

/* Collective k of the schedule on this rank. */
static void fz_collective(struct fz_rank *z, uint64_t seed, uint64_t k)
{
	const struct fz_coll c = fz_coll(seed, k);
	uint64_t sizes[FZ_MAXB], at = 0;
	uint32_t size, nbufs, h, spoil = 0, which = 0, gen = 1;
	void *img = fz_image(c, z->rank, &size, &nbufs, sizes);
	const int p = c.kind == 3 ? fz_prog_rank(c, z->rank) : (int)z->rank;
	/* kind 3: maybe restarted (e: kept, its buffers), maybe kept after */
	struct fz_kept *e = p >= 0 && c.kind == 3 && below(8) ? fz_find_kept(z, c) : NULL, fresh = { 0 };
	unsigned char *out = NULL;
	struct load_res r = { 0 };
	int res = 0, spoiled = 0;

	if (p < 0)
		goto out;  /* not in this algorithm's ranks: it runs without this one */
	if (e) {  /* -ESTALE if a buffer's mapping went, -EPIPE if a peer did, ...: then loaded afresh */
		fz_fill_bufs(c, k, z->rank, p, nbufs, sizes, e->addrs, &out, &spoil);
		r.handle = e->h;
		r.err = start(z->d.fd, e->h, k);
		if (r.err) {
			fz_drop_kept(z, e), e = NULL;
		} else {
			gen = ++e->gen;
			__atomic_fetch_add(&g_fz->restarts, 1, __ATOMIC_RELAXED);
		}
	}
	if (!e) {
		e = &fresh;
		if (fz_map_bufs(c, z->rank, nbufs, sizes, e->addrs, e->base, e->maplen))
			goto out;
		fz_fill_bufs(c, k, z->rank, p, nbufs, sizes, e->addrs, &out, &spoil);
		__atomic_fetch_add(&g_fz->loads, 1, __ATOMIC_RELAXED);
		if (c.kind == 3) {  /* the group ranks of its program ranks, its fingerprint */
			struct cad_ioc_load l = { .size = sizeof(l), .prog_size = size, .prog = (uintptr_t)img,
						  .buf_addrs = (uintptr_t)e->addrs, .nbufs = nbufs,
						  .log_size = sizeof(r.log), .log_buf = (uintptr_t)r.log,
						  .ranks = (uintptr_t)c.perm, .ctx = FZ_CTX, .flags = CAD_LOAD_START,
						  .seq = k, .fp = 1 + c.alg };

			r.err = ioctl(z->d.fd, CAD_IOC_LOAD, &l) ? -errno : 0;
			r.handle = l.handle;
			if (r.err == -EINVAL || r.err == -E2BIG)  /* (not a limit, a peer gone, ...) */
				fz_bad("rank %u: %s, program rank %d, refused: %s", z->rank, g_alg[c.alg].name, p,
				       r.log);
		} else if (below(2)) {
			r = load(z->d.fd, img, size, e->addrs, nbufs, FZ_CTX, CAD_LOAD_START, k);
		} else {
			r = load(z->d.fd, img, size, e->addrs, nbufs, FZ_CTX, 0, 0);
			if (!r.err && start(z->d.fd, r.handle, k))
				r.err = -1;
		}
		if (r.err)
			goto out;
	}
	h = r.handle;
	z->coop_h = h;
	__atomic_fetch_add(&g_fz->coop, 1, __ATOMIC_RELAXED);
	for (int i = 0, n = (int)below(3); i < n; i++)
		fz_junk(z, seed, k);
	if (!below(24) && out) {  /* the result buffer (kind 3: any) goes or changes under the run */
		spoiled = below(2) ? 1 : 2;
		if (spoiled == 1)
			munmap(e->base[spoil], e->maplen[spoil]), e->base[spoil] = NULL;
		else
			madvise(e->base[spoil], e->maplen[spoil], MADV_DONTNEED);
	}
	res = wait_for(&z->d, h, gen, 3.0);
	if (res == -ETIMEDOUT) {
		__atomic_fetch_add(&g_fz->timeouts, 1, __ATOMIC_RELAXED);
		(void)handle_op(z->d.fd, CAD_IOC_CANCEL, h, NULL);
		res = wait_for(&z->d, h, gen, 3.0);
		if (res == -ETIMEDOUT)
			fz_bad("rank %u: collective %llu still runs 3 s after its cancel", z->rank, (unsigned long long)k);
	}
	if (res == -EPIPE && !z->broken)
		z->broken = now();
	if (res == 0 && !spoiled && c.kind == 3) {
		const int ok = fz_alg_check(c, k, (uint32_t)p, e->addrs, &which, &at);

		if (ok == 1)
			__atomic_fetch_add(&g_fz->alg_verified, 1, __ATOMIC_RELAXED);
		else if (!ok)
			fz_bad("rank %u: collective %llu (%s, program rank %d%s) ended 0 with byte %llu of buffer %u "
			       "not the loopback engine's", z->rank, (unsigned long long)k, g_alg[c.alg].name, p,
			       e == &fresh ? "" : ", restarted", (unsigned long long)at, which);
	} else if (res == 0 && !spoiled && (c.kind != 2 || z->rank == 0) && (c.kind != 1 || z->rank > 0)) {
		if (fz_check(c, k, z->rank, out, &at))
			__atomic_fetch_add(&g_fz->verified, 1, __ATOMIC_RELAXED);
		else
			fz_bad("rank %u: collective %llu (kind %u, %llu bytes, %u segments, hint %u) ended 0 with byte %llu wrong",
			       z->rank, (unsigned long long)k, c.kind, (unsigned long long)c.len, c.segs, c.hint,
			       (unsigned long long)at);
	} else if (res) {
		__atomic_fetch_add(&g_fz->coop_err, 1, __ATOMIC_RELAXED);
	}
	z->coop_h = ~0u;
	if (c.kind == 3 && spoiled != 1 && below(8)) {  /* kept for a later collective of this instance */
		if (e == &fresh) {
			for (int i = 0; i < FZ_KEPT && e == &fresh; i++)
				if (!z->kept[i].used)
					e = &z->kept[i];
			if (e == &fresh)
				fz_drop_kept(z, e = &z->kept[below(FZ_KEPT)]);
			*e = fresh;
			e->used = 1;
			e->alg = c.alg;
			memcpy(e->perm, c.perm, sizeof(c.perm));
			e->h = h;
			e->gen = 1;
		}
		free(img);
		return;
	}
	(void)handle_op(z->d.fd, CAD_IOC_FREE, h, NULL);
out:
	if (r.err == -EPIPE && !z->broken)
		z->broken = now();
	if (e) {
		fz_unmap(e->base, e->maplen);
		memset(e, 0, sizeof(*e));
	}
	free(img);
}

static void fz_rank_main(uint64_t key, uint32_t rank, uint64_t seed, double until)
{
	static struct fz_rank z;
	struct sigaction sa = { .sa_handler = fz_tick };  /* no SA_RESTART */
	const struct itimerval it = { .it_interval = { 0, 20000 }, .it_value = { 0, 20000 } };

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	g_rng = fz_mix(seed ^ (rank + 1) * 0x632be59bd9b4e019ull);
	z.rank = rank;
	z.key = key;
	z.coop_h = ~0u;
	if (dev_open(&z.d, key, rank, FZ_N))
		_exit(3);
	for (uint64_t k = 1; now() < until && !(z.broken && now() > z.broken + FZ_BROKEN); k++) {
		fz_collective(&z, seed, k);
		for (int i = 0, n = (int)below(4); i < n; i++)
			fz_junk(&z, seed, k);
		if (!below(1000)) {  /* leave the group: the others see -EPIPE */
			close(z.d.fd);
			_exit(0);
		}
	}
	_exit(0);
}

/* The least a fuzz run does (the bars of test_kcad.py's
 * test_the_fuzzer_ran_collectives; operator programs only if it has
 * images, the standard library's algorithms only if it has those). */
static int fz_enough(int rounds)
{
	return rounds >= 2 && g_fz->ops >= 1000 && g_fz->verified >= 50 && (!g_nops || g_fz->op_runs >= 20) &&
	       (!g_nalgs || (g_fz->alg_verified >= 20 && g_fz->restarts >= 20));
}

static int do_fuzz(double secs, uint64_t seed, int nimg, char **imgs)
{
	const double end = now() + secs;
	int rounds = 0, stuck = 0;

	g_fz = mmap(NULL, sizeof(*g_fz), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_fz == MAP_FAILED)
		return 2;
	memset(g_fz, 0, sizeof(*g_fz));
	g_rng = fz_mix(seed);
	for (int i = 0; i < nimg; i++) {
		const size_t len = strlen(imgs[i]);

		if (len > 6 && !strcmp(imgs[i] + len - 6, ".cadbc")) {
			if (fz_load_alg(imgs[i]))
				return 2;
		} else if (g_nops < FZ_MAX_OPS) {
			g_op_img[g_nops] = fz_read_file(imgs[i], &g_op_size[g_nops]);
			if (!g_op_img[g_nops++])
				return 2;
		}
	}
	for (uint32_t a = 0; a < g_nalgs; a++)
		for (uint32_t r = 0; r < g_alg[a].nranks; r++)
			if (!g_alg[a].img[r]) {
				fprintf(stderr, "kcad_check: %s: no program of rank %u\n", g_alg[a].name, r);
				return 2;
			}
	/* Rounds go on past SECS (up to three times it) until the fuzzer has
	 * done at least what test_kcad.py asks of a run: a machine that runs
	 * slowly (a busy one, beside another VM) then takes longer instead of
	 * failing the suite. */
	while ((now() < end || (!fz_enough(rounds) && now() < end + 2 * secs)) && !stuck) {
		const double until = now() + 2.0 + (double)below(5);
		const uint64_t key = job_key() ^ fz_mix(seed + (uint64_t)rounds), rs = rnd();
		pid_t pid[FZ_N];

		for (uint32_t r = 0; r < FZ_N; r++) {
			pid[r] = fork();
			if (pid[r] == 0)
				fz_rank_main(key, r, rs, until);
		}
		/* a rank killed mid-round (unless the round ended before) */
		double kill_at = below(3) == 0 ? now() + (double)below((uint64_t)(1000 * (until - now())) + 1) / 1000 : 0;
		const uint32_t victim = (uint32_t)below(FZ_N);

		while (now() < until + 4.0) {
			int alive = 0;

			for (uint32_t r = 0; r < FZ_N; r++)
				if (pid[r] > 0 && waitpid(pid[r], NULL, WNOHANG) != 0)
					pid[r] = 0;  /* ended (reaped) */
				else
					alive += pid[r] > 0;
			if (!alive)
				break;
			if (kill_at && now() >= kill_at && pid[victim] > 0) {
				kill(pid[victim], SIGKILL);
				g_fz->killed++;
				kill_at = 0;
			}
			usleep(20000);
		}
		for (uint32_t r = 0; r < FZ_N; r++)
			if (pid[r] > 0)
				kill(pid[r], SIGKILL);
		for (uint32_t r = 0; r < FZ_N; r++) {
			const double t0 = now();

			while (pid[r] > 0 && waitpid(pid[r], NULL, WNOHANG) == 0) {
				if (now() - t0 > limit(10.0)) {
					printf("KCAD rank %u of round %d is still there %.0f s after SIGKILL\n", r, rounds,
					       limit(10.0));
					stuck = 1;
					break;
				}
				usleep(10000);
			}
		}
		rounds++;
	}
	printf("KCAD fuzz: seed %llu, %d rounds, %ld operations, %ld collectives started (%ld loads), "
	       "%ld verified, %ld ended with an error, %ld cancelled after 3 s; %ld images of random "
	       "changes loaded; %ld forks; %ld ranks killed; %ld operator programs run (%u images); "
	       "%ld algorithm runs as the loopback engine's (%u instances, %ld restarts)\n",
	       (unsigned long long)seed, rounds, g_fz->ops, g_fz->coop, g_fz->loads, g_fz->verified, g_fz->coop_err,
	       g_fz->timeouts, g_fz->junk_loads_ok, g_fz->forks, g_fz->killed, g_fz->op_runs, g_nops,
	       g_fz->alg_verified, g_nalgs, g_fz->restarts);
	CHECK("fuzz-data-right", !g_fz->bad, "%d problems, the first: %s", g_fz->bad, g_fz->why);
	CHECK("fuzz-ranks-die", !stuck, "a rank did not die");
	/* 5 verified a round; a kernel g_slow times slower does that much less
	 * in a round, which lasts as long */
	CHECK("fuzz-collectives-ran", g_fz->verified >= (long)(20 * rounds / 4 / g_slow) && g_fz->ops >= 100,
	      "only %ld collectives verified and %ld operations in %d rounds", g_fz->verified, g_fz->ops, rounds);
	return 0;
}

/* ------------------------------------------------------------------ */
/* userlimits: kernel memory, programs and groups per user              */

/* The users parameter's line for uid ("uid programs kmem groups"), or
 * an empty string; 1 if there is one. */
static int user_line(unsigned int uid, char *line, size_t size)
{
	FILE *f = fopen("/sys/module/cad/parameters/users", "r");
	char buf[256];
	int found = 0;

	line[0] = 0;
	while (f && fgets(buf, sizeof(buf), f))
		if (strtoul(buf, NULL, 10) == uid && !found) {
			snprintf(line, size, "%s", buf);
			line[strcspn(line, "\n")] = 0;
			found = 1;
		}
	if (f)
		fclose(f);
	return found;
}

/* Loads copies of img (scratch buffers only) into d until a load fails:
 * how many were loaded; the failure in *last. */
static int load_until_refused(struct dev *d, const void *img, uint32_t size, int most, struct load_res *last)
{
	const uint64_t a[2] = { 0, 0 };
	int n = 0;

	for (; n < most; n++) {
		*last = load(d->fd, img, size, a, 2, 1, 0, 1);
		if (last->err)
			break;
	}
	return n;
}

/* Child: uid, group key; loads until refused, reports the count and the
 * error through out (as "N ERR LOG"), then waits for a byte on in. */
static int userlimits_child(unsigned int uid, uint64_t key, int most, int in, int out)
{
	uint32_t size;
	void *img = long_copies(1, 4096, 1, &size);
	struct load_res last = { 0 };
	char msg[600];
	struct dev d;
	int n, len;

	if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
		return 3;
	if (dev_open(&d, key, 0, 1))
		return 4;
	n = load_until_refused(&d, img, size, most, &last);
	len = snprintf(msg, sizeof(msg), "%d %d %s", n, last.err, last.log);
	if (write(out, msg, (size_t)len + 1) != len + 1)
		return 5;
	if (read(in, msg, 1) != 1)
		return 6;
	return 0;
}

struct holder {
	pid_t pid;
	int to, from;
};

static struct holder userlimits_spawn(unsigned int uid, uint64_t key, int most, int *n, int *err, char *log,
				      size_t logsize)
{
	int down[2], up[2];
	struct holder h = { 0 };
	char msg[600] = { 0 };

	if (pipe(down) || pipe(up))
		exit(2);
	h.pid = fork();
	if (h.pid == 0) {
		close(down[1]);
		close(up[0]);
		_exit(userlimits_child(uid, key, most, down[0], up[1]));
	}
	close(down[0]);
	close(up[1]);
	h.to = down[1];
	h.from = up[0];
	*n = -1;
	*err = 0;
	if (read(h.from, msg, sizeof(msg) - 1) > 0) {
		char *p = msg;

		*n = (int)strtol(p, &p, 10);
		*err = (int)strtol(p, &p, 10);
		snprintf(log, logsize, "%s", *p ? p + 1 : p);
	}
	return h;
}

static int userlimits_release(struct holder h)
{
	int st = 0;

	(void)!write(h.to, "x", 1);
	close(h.to);
	close(h.from);
	waitpid(h.pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int do_userlimits(void)
{
	const uint64_t key = job_key();
	const unsigned long programs0 = get_param("max_user_programs"), kmem0 = get_param("max_user_kmem_mb"),
			    groups0 = get_param("max_user_groups");
	char log[512], line[256];
	struct holder a, b;
	int n, err, st;

	/* Uid 1000 loads until refused at 8 programs (over two files: the
	 * limit is the user's, not a file's), and holds them. */
	set_param("max_user_programs", "8");
	CHECK("userlimits-param-set", get_param("max_user_programs") == 8, "max_user_programs is %lu",
	      get_param("max_user_programs"));
	a = userlimits_spawn(1000, key, 100, &n, &err, log, sizeof(log));
	CHECK("userlimits-programs-refused-at-the-limit", n == 8 && err == -EMFILE && strstr(log, "max_user_programs"),
	      "loaded %d, then %d (%s)", n, err, log);
	CHECK("userlimits-counted-for-the-user", user_line(1000, line, sizeof(line)) && !strncmp(line, "1000 8 ", 7) &&
	      get_param("programs") == 8 && get_param("kmem_bytes") > 8 * 8192,
	      "users: \"%s\", programs %lu, kmem_bytes %lu", line, get_param("programs"), get_param("kmem_bytes"));
	/* Uid 1001 is not held back by uid 1000's programs. */
	b = userlimits_spawn(1001, key + 1, 8, &n, &err, log, sizeof(log));
	CHECK("userlimits-another-uid-unaffected", n == 8 && err == 0 && user_line(1001, line, sizeof(line)) &&
	      !strncmp(line, "1001 8 ", 7), "uid 1001 loaded %d (%d, %s); users: \"%s\"", n, err, log, line);
	st = userlimits_release(b);
	CHECK("userlimits-second-child", st == 0, "status %d", st);
	st = userlimits_release(a);
	CHECK("userlimits-first-child", st == 0, "status %d", st);
	CHECK("userlimits-all-given-back", get_param("programs") == 0 && get_param("kmem_bytes") == 0 &&
	      get_param("groups") == 0 && !user_line(1000, line, sizeof(line)) && !user_line(1001, line, sizeof(line)),
	      "programs %lu, kmem_bytes %lu, groups %lu, users: \"%s\"", get_param("programs"), get_param("kmem_bytes"),
	      get_param("groups"), line);
	restore_param("max_user_programs", programs0);

	/* Kernel memory: 2 MiB of scratch over a limit of 1 MiB. */
	set_param("max_user_kmem_mb", "1");
	{
		uint32_t size;
		void *img = long_copies(1, 1 << 20, 1, &size);
		const uint64_t addrs[2] = { 0, 0 };
		struct dev d;
		struct load_res r = { .err = -1 };
		pid_t pid;

		pid = fork();
		if (pid == 0) {
			if (setgroups(0, NULL) || setgid(1000) || setuid(1000) || dev_open(&d, key + 2, 0, 1))
				_exit(3);
			r = load(d.fd, img, size, addrs, 2, 1, 0, 1);
			printf("KCAD userlimits: 2 MiB of scratch under max_user_kmem_mb=1: %d (%s)\n", r.err, r.log);
			_exit(r.err == -ENOMEM && strstr(r.log, "max_user_kmem_mb") ? 0 : 4);
		}
		waitpid(pid, &st, 0);
		CHECK("userlimits-kmem-refused", WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
		free(img);
	}
	restore_param("max_user_kmem_mb", kmem0);

	/* Groups: a third group of uid 1000 over max_user_groups=2. */
	set_param("max_user_groups", "2");
	{
		struct dev d[3];
		pid_t pid = fork();

		if (pid == 0) {
			int e[3];

			if (setgroups(0, NULL) || setgid(1000) || setuid(1000))
				_exit(3);
			for (int i = 0; i < 3; i++)
				e[i] = dev_open(&d[i], key + 10 + i, 0, 1);
			printf("KCAD userlimits: three groups under max_user_groups=2: %d %d %d\n", e[0], e[1], e[2]);
			_exit(!e[0] && !e[1] && e[2] == -ENOSPC ? 0 : 4);
		}
		waitpid(pid, &st, 0);
		CHECK("userlimits-groups-refused", WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
	}
	restore_param("max_user_groups", groups0);
	CHECK("userlimits-zero-at-the-end", get_param("programs") == 0 && get_param("kmem_bytes") == 0 &&
	      get_param("groups") == 0 && get_param("live_objects") == 0 && get_param("pinned_pages") == 0,
	      "programs %lu, kmem_bytes %lu, groups %lu, live_objects %lu", get_param("programs"),
	      get_param("kmem_bytes"), get_param("groups"), get_param("live_objects"));
	return 0;
}

/* ------------------------------------------------------------------ */
/* vmbudget: a user-defined reduction longer than a pass                 */

/* One rank: buffer 1 += buffer 0 (64-bit integers) by an operator of
 * CAD_VM_MAX_INSNS instructions (the sum, then XORs that cancel). */
static void *long_op_image(uint64_t bytes, uint32_t *size)
{
	static const char str[] = "\0send\0recv\0long";
	static struct cad_vm_insn code[CAD_VM_MAX_INSNS];
	const struct cad_buffer bufs[2] = {
		{ .kind = CAD_BUF_SEND, .access = CAD_ACC_READ, .size = bytes, .name = 1 },
		{ .kind = CAD_BUF_RECV, .access = CAD_ACC_READ | CAD_ACC_WRITE, .size = bytes, .name = 6 },
	};
	const struct cad_node nodes[1] = {
		{ .kind = CAD_NODE_REDUCE, .dtype = CAD_DT_USER, .op = CAD_OP_USER, .src_buf = 0, .dst_buf = 1,
		  .len = bytes, .line = CAD_NO_LINE },
	};
	const struct cad_user_op ops[1] = {
		{ .name = 11, .elem_size = 8, .code_first = 0, .code_count = CAD_VM_MAX_INSNS,
		  .flags = CAD_UOP_COMMUTATIVE, .line = CAD_NO_LINE },
	};
	struct cad_image_desc d = { .rank = 0, .nranks = 1, .buffers = bufs, .n_buffers = 2, .nodes = nodes,
				    .n_nodes = 1, .ops = ops, .n_ops = 1, .code = code, .n_code = CAD_VM_MAX_INSNS,
				    .strings = str, .n_strings = sizeof(str) };
	uint32_t pc = 0;

	code[pc++] = (struct cad_vm_insn){ .code = CAD_VM_LD_64, .dst = 0, .a = 0 };
	code[pc++] = (struct cad_vm_insn){ .code = CAD_VM_LD_64, .dst = 1, .a = 1 };
	code[pc++] = (struct cad_vm_insn){ .code = CAD_VM_ADD, .dst = 0, .a = 0, .b = 1 };
	code[pc++] = (struct cad_vm_insn){ .code = CAD_VM_MOVI, .dst = 2, .imm = 0x5a5a };
	while (pc < CAD_VM_MAX_INSNS - 2)
		code[pc++] = (struct cad_vm_insn){ .code = CAD_VM_XOR, .dst = 0, .a = 0, .b = 2 };
	code[pc++] = (struct cad_vm_insn){ .code = CAD_VM_ST_64, .a = 0 };
	code[pc++] = (struct cad_vm_insn){ .code = CAD_VM_EXIT };
	return write_image(&d, size);
}

/* bytes reduced by a CAD_VM_MAX_INSNS-instruction operator: the result
 * right, and it took the passes the module's bound makes (BUDGET_VM_INSNS
 * element-instructions a pass: the cuts counted in vm_cut); the time of
 * a pass printed. */
static int do_vmbudget(uint64_t bytes, unsigned long budget)
{
	const uint64_t n = bytes / 8, work = n * CAD_VM_MAX_INSNS;
	const unsigned long want = (unsigned long)((work + budget - 1) / budget) - 1;
	uint32_t size;
	void *img = long_op_image(bytes, &size);
	int64_t *src = aligned_alloc(4096, bytes), *dst = aligned_alloc(4096, bytes);
	const uint64_t a[2] = { (uintptr_t)src, (uintptr_t)dst };
	unsigned long cut0, cuts;
	struct load_res r;
	struct dev d;
	uint64_t bad = 0;
	double t0, t;
	int res;

	for (uint64_t i = 0; i < n; i++)
		src[i] = (int64_t)i * 3, dst[i] = 7;
	if (dev_open(&d, job_key(), 0, 1)) {
		CHECK("vmbudget-open", 0, "%s", strerror(errno));
		return 0;
	}
	r = load(d.fd, img, size, a, 2, 1, 0, 1);
	CHECK("vmbudget-loaded", !r.err, "%d (%s)", r.err, r.log);
	if (r.err)
		return 0;
	cut0 = get_param("vm_cut");
	t0 = now();
	res = start(d.fd, r.handle, 1);
	if (!res)
		res = wait_run(&d, r.handle, 1, 0);
	t = now() - t0;
	cuts = get_param("vm_cut") - cut0;
	for (uint64_t i = 0; i < n; i++)
		bad += dst[i] != (int64_t)i * 3 + 7;
	printf("KCAD vmbudget: %llu elements x %u instructions in %lu passes (%lu cut), %.3f s: %.1f ms a pass\n",
	       (unsigned long long)n, CAD_VM_MAX_INSNS, cuts + 1, cuts, t, t * 1e3 / (double)(cuts + 1));
	CHECK("vmbudget-result-right", !res && !bad, "result %d, %llu elements wrong", res, (unsigned long long)bad);
	CHECK("vmbudget-passes", cuts == want, "%lu passes cut inside the reduction, want %lu", cuts, want);
	handle_op(d.fd, CAD_IOC_FREE, r.handle, NULL);
	close(d.fd);
	free(img);
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	const char *slow = getenv("CAD_TEST_TIMEOUT_FACTOR");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (slow && atof(slow) > 1.0)
		g_slow = atof(slow);
	if (!strcmp(what, "reject"))
		do_reject();
	else if (!strcmp(what, "pipeline") && argc == 5)
		do_chain("pipeline", atoi(argv[2]), strtoull(argv[3], NULL, 0), atoi(argv[4]), 0);
	else if (!strcmp(what, "kill") && argc == 5)
		do_chain("kill", atoi(argv[2]), strtoull(argv[3], NULL, 0), atoi(argv[4]), 1);
	else if (!strcmp(what, "exit") && argc == 6)
		for (long k = atol(argv[5]), i = 0; i < k; i++)
			do_chain("exit", atoi(argv[2]), strtoull(argv[3], NULL, 0), atoi(argv[4]), 2);
	else if (!strcmp(what, "cancel"))
		do_cancel();
	else if (!strcmp(what, "wide") && argc == 4 && !strcmp(argv[3], "read"))
		do_wide(strtoull(argv[2], NULL, 0), WIDE_READ);
	else if (!strcmp(what, "wide") && argc == 4 && !strcmp(argv[3], "spin"))
		do_wide(strtoull(argv[2], NULL, 0), WIDE_SPIN);
	else if (!strcmp(what, "wide") && argc == 4 && !strcmp(argv[3], "bystander"))
		do_wide(strtoull(argv[2], NULL, 0), WIDE_BYSTANDER);
	else if (!strcmp(what, "cycles") && argc == 3)
		do_cycles(atol(argv[2]));
	else if (!strcmp(what, "inflight") && argc == 4 && (!strcmp(argv[2], "cancel") || !strcmp(argv[2], "free")))
		do_inflight(!strcmp(argv[2], "free"), strtoull(argv[3], NULL, 0));
	else if (!strcmp(what, "pins"))
		do_pins();
	else if (!strcmp(what, "reserved"))
		do_reserved();
	else if (!strcmp(what, "memlock"))
		do_memlock();
	else if (!strcmp(what, "bounce"))
		do_bounce();
	else if (!strcmp(what, "owner"))
		do_owner();
	else if (!strcmp(what, "stall"))
		do_stall();
	else if (!strcmp(what, "access"))
		do_access();
	else if (!strcmp(what, "userlimits"))
		do_userlimits();
	else if (!strcmp(what, "vmbudget") && argc == 4)
		do_vmbudget(strtoull(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
	else if (!strcmp(what, "fuzz") && argc >= 4) {
		if (do_fuzz(atof(argv[2]), strtoull(argv[3], NULL, 0), argc - 4, argv + 4))
			return 2;
	}
	else if (!strcmp(what, "busy") && argc == 3 && (!strcmp(argv[2], "read") || !strcmp(argv[2], "pause")))
		do_busy(!strcmp(argv[2], "read"));
	else {
		fprintf(stderr, "usage: kcad_check reject | pipeline P N S | kill P N S | exit P N S K | cancel | cycles K | "
				"inflight cancel|free N | wide N read|spin|bystander | pins | reserved | memlock | bounce | stall | owner | access | userlimits | vmbudget BYTES INSNS-A-PASS | busy read|pause | "
				"fuzz SECONDS SEED [OPERATOR-IMAGE | NAME.RANK.cadbc ...]\n");
		return 2;
	}
	printf("KCAD SUMMARY passed=%d failed=%d\n", g_pass, g_fail);
	return g_fail ? 1 : 0;
}
