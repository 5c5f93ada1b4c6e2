/*
 * kop_run.c - a user-defined operator inside the kernel (tests/ops): loads a
 * one-rank program (op_tool image) into cad.ko with IN as buffer 0 and a
 * copy of INOUT as buffer 1, starts it, waits on the status page and
 * compares the result with EXPECTED (what gcc's native code computed on the
 * host), field by field: floating-point fields match when both are NaN.
 *
 *   kop_run IMAGE IN INOUT EXPECTED ELEM_SIZE FIELDS [MODE]
 *   FIELDS: "0:f64,8:i32" - offset:kind of every scalar field
 *   MODE: "exact" compares NaNs bit for bit too (payload and sign, for
 *   tests/ops/corpus); "inplace" gives INOUT as both buffers (in == inout:
 *   cad.ko refuses it today, "buffers 0 and 1 overlap"); "exact,inplace"
 *   both.
 *
 * Prints "kop_run: ok N elements" or the first difference; exit 0 / 1 / 2.
 * Linked statically for the qemu initramfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../kmod/uapi/cad.h"

static void *slurp(const char *path, size_t *n)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	void *p;

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		exit(2);
	}
	/* page aligned: REDUCE buffers must be aligned for their elements */
	p = aligned_alloc(4096, ((size_t)st.st_size + 4095) / 4096 * 4096 + 4096);
	if (!p || read(fd, p, (size_t)st.st_size) != st.st_size) {
		perror(path);
		exit(2);
	}
	close(fd);
	*n = (size_t)st.st_size;
	return p;
}

static int is_nan(const unsigned char *p, int f64)
{
	if (f64) {
		double d;
		memcpy(&d, p, 8);
		return d != d;
	}
	float f;
	memcpy(&f, p, 4);
	return f != f;
}

int main(int argc, char **argv)
{
	size_t n_img, n_in, n_io, n_exp;
	void *img, *in, *io, *exp;
	unsigned long esz;
	char log[512] = "";
	struct cad_ioc_join join = { .size = sizeof(join), .rank = 0, .nranks = 1, .key = 0x6b6f7072756eull };
	struct cad_ioc_load load = { .size = sizeof(load) };
	struct cad_ioc_handle h = { .size = sizeof(h) };
	volatile struct cad_status *st;
	__u64 addrs[2];
	size_t i, count;
	int fd, exact = 0, inplace = 0;

	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: kop_run IMAGE IN INOUT EXPECTED ELEM_SIZE FIELDS [MODE]\n");
		return 2;
	}
	if (argc == 8) {
		exact = strstr(argv[7], "exact") != NULL;
		inplace = strstr(argv[7], "inplace") != NULL;
	}
	img = slurp(argv[1], &n_img);
	in = slurp(argv[2], &n_in);
	io = slurp(argv[3], &n_io);
	exp = slurp(argv[4], &n_exp);
	esz = strtoul(argv[5], NULL, 10);
	if (!esz || n_in != n_io || n_io != n_exp || n_io % esz) {
		fprintf(stderr, "kop_run: sizes do not agree\n");
		return 2;
	}
	count = n_io / esz;
	fd = open("/dev/cad", O_RDWR);
	if (fd < 0 || ioctl(fd, CAD_IOC_JOIN, &join)) {
		perror("kop_run: /dev/cad");
		return 2;
	}
	st = mmap(NULL, CAD_STATUS_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (st == MAP_FAILED) {
		perror("kop_run: mmap");
		return 2;
	}
	addrs[0] = (uintptr_t)(inplace ? io : in);
	addrs[1] = (uintptr_t)io;
	load.prog_size = (__u32)n_img;
	load.prog = (uintptr_t)img;
	load.buf_addrs = (uintptr_t)addrs;
	load.nbufs = 2;
	load.log_size = sizeof(log);
	load.log_buf = (uintptr_t)log;
	load.ctx = 1;
	load.flags = CAD_LOAD_START;
	load.seq = 1;
	if (ioctl(fd, CAD_IOC_LOAD, &load)) {
		fprintf(stderr, "kop_run: LOAD failed: %s: %s\n", strerror(errno), log);
		return 2;
	}
	while (st[load.handle].result == -EINPROGRESS) {
		__u64 c;
		if (read(fd, &c, 8) < 0 && errno != EINTR) {
			perror("kop_run: read");
			return 2;
		}
	}
	if (st[load.handle].result) {
		fprintf(stderr, "kop_run: the program failed: %d\n", st[load.handle].result);
		return 2;
	}
	h.handle = load.handle;
	if (ioctl(fd, CAD_IOC_FREE, &h)) {
		perror("kop_run: FREE");
		return 2;
	}
	for (i = 0; i < count; i++) {
		const unsigned char *a = (unsigned char *)io + i * esz, *b = (unsigned char *)exp + i * esz;
		char *fields = strdup(argv[6]), *save = NULL, *tok;

		for (tok = strtok_r(fields, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			unsigned long off = strtoul(tok, NULL, 10);
			const char *kind = strchr(tok, ':') + 1;
			size_t w = !strcmp(kind, "f64") || !strcmp(kind, "i64") || !strcmp(kind, "u64") ? 8
				 : !strcmp(kind, "f32") || !strcmp(kind, "i32") || !strcmp(kind, "u32") ? 4
				 : !strcmp(kind, "i16") || !strcmp(kind, "u16") ? 2 : 1;
			int fp = kind[0] == 'f';

			if (fp && !exact && is_nan(a + off, w == 8) && is_nan(b + off, w == 8))
				continue;
			if (memcmp(a + off, b + off, w)) {
				fprintf(stderr, "kop_run: element %zu field at %lu (%s) differs from native: ",
					i, off, kind);
				for (size_t k = w; k-- > 0;)
					fprintf(stderr, "%02x", a[off + k]);
				fprintf(stderr, " vs ");
				for (size_t k = w; k-- > 0;)
					fprintf(stderr, "%02x", b[off + k]);
				fprintf(stderr, "\n");
				return 1;
			}
		}
		free(fields);
	}
	printf("kop_run: ok %zu elements\n", count);
	return 0;
}
