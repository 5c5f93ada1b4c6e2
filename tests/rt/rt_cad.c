/* rt_cad - the hand-built CAD path under cadrun, in the KACC paper's
 * shape: a pipelined chain broadcast built node by node (rank r receives
 * segment k from r-1 and forwards it to r+1), issued, checked, refilled
 * and issued again; then a reduction built by hand (every rank adds its
 * vector into rank 0's), and the errors a builder user meets: a cycle, a
 * program the verifier rejects (a write into a read-only buffer; an access
 * past the end of a buffer), overlapping buffers, an unknown node.
 *
 *   cadrun -n P rt_cad [--bytes N] [--segment S]
 *
 * Prints "rt_cad: ok (N checks)" at rank 0; exit 0 if all passed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cadrt/cadrt.h"

static int g_rank, g_size, g_failures, g_checks;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		g_checks++;                                                    \
		if (!(cond)) {                                                 \
			fprintf(stderr, "rt_cad: rank %d: ", g_rank);          \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, " (%s)\n", cadrt_error_message());     \
			g_failures++;                                          \
		}                                                              \
	} while (0)

static unsigned char pattern(size_t i, int round)
{
	return (unsigned char)((i * 131u + (size_t)round * 17u + 7u) & 0xff);
}

/* The chain broadcast from rank 0 in segments, built by hand. */
static void chain_bcast(cadrt_comm world, size_t bytes, size_t seg)
{
	unsigned char *buf = malloc(bytes ? bytes : 1);
	cadrt_cad cad;
	int b;
	CHECK(cadrt_cad_new(world, &cad) == 0, "cadrt_cad_new");
	CHECK(cadrt_cad_buffer(cad, buf, bytes, 1, &b) == 0, "cadrt_cad_buffer");
	for (size_t off = 0, k = 0; off < bytes; off += seg, k++) {
		const size_t len = bytes - off < seg ? bytes - off : seg;
		int recv = -1, send = -1;
		if (g_rank > 0)
			CHECK(cadrt_cad_recv(cad, b, off, len, g_rank - 1, (unsigned)k, &recv) == 0, "recv");
		if (g_rank + 1 < g_size) {
			CHECK(cadrt_cad_send(cad, b, off, len, g_rank + 1, (unsigned)k, &send) == 0, "send");
			if (recv >= 0)
				CHECK(cadrt_cad_connect(cad, recv, send) == 0, "connect");
		}
	}
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < bytes; i++)
			buf[i] = g_rank == 0 ? pattern(i, round) : 0xee;
		cadrt_request req;
		CHECK(cadrt_cad_issue(cad, &req) == 0, "cadrt_cad_issue (round %d)", round);
		int done = 0;
		while (!done)
			if (cadrt_cad_query(&req, &done)) {
				CHECK(0, "cadrt_cad_query");
				break;
			}
		size_t bad = bytes;
		for (size_t i = 0; i < bytes && bad == bytes; i++)
			if (buf[i] != pattern(i, round))
				bad = i;
		CHECK(bad == bytes, "chain bcast of %zu bytes in %zu-byte segments, round %d: byte %zu wrong",
		      bytes, seg, round, bad);
	}
	cadrt_cad_free(&cad);
	CHECK(cad == NULL, "cadrt_cad_free clears the handle");
	free(buf);
}

/* Every rank sends its vector to rank 0, which adds them up in rank order. */
static void hand_reduce(cadrt_comm world)
{
	enum { N = 1000 };
	int64_t mine[N], acc[N], tmp[N];
	for (int i = 0; i < N; i++)
		mine[i] = (int64_t)g_rank * 1000 + i;
	cadrt_cad cad;
	int in, out, scratch, node, prev = -1;
	cadrt_cad_new(world, &cad);
	CHECK(cadrt_cad_buffer(cad, mine, sizeof mine, 0, &in) == 0, "buffer");
	CHECK(cadrt_cad_buffer(cad, acc, sizeof acc, 1, &out) == 0, "buffer");
	CHECK(cadrt_cad_buffer(cad, tmp, sizeof tmp, 1, &scratch) == 0, "buffer");
	if (g_rank == 0) {
		CHECK(cadrt_cad_copy(cad, out, 0, in, 0, sizeof mine, &prev) == 0, "copy");
		for (int q = 1; q < g_size; q++) {
			int recv, red;
			CHECK(cadrt_cad_recv(cad, scratch, 0, sizeof tmp, q, 5, &recv) == 0, "recv");
			CHECK(cadrt_cad_reduce(cad, out, 0, scratch, 0, N, CADRT_INT64, CADRT_SUM, &red) == 0,
			      "reduce");
			CHECK(cadrt_cad_connect(cad, recv, red) == 0, "connect");
			CHECK(cadrt_cad_connect(cad, prev, red) == 0, "connect");
			if (q > 1)
				CHECK(cadrt_cad_connect(cad, prev, recv) == 0, "connect");
			prev = red;
		}
	} else {
		CHECK(cadrt_cad_send(cad, in, 0, sizeof mine, 0, 5, &node) == 0, "send");
	}
	cadrt_request req;
	CHECK(cadrt_cad_issue(cad, &req) == 0, "issue the reduction");
	CHECK(cadrt_wait(&req) == 0, "wait for the reduction");
	if (g_rank == 0) {
		int bad = -1;
		for (int i = 0; i < N && bad < 0; i++) {
			int64_t want = 0;
			for (int q = 0; q < g_size; q++)
				want += (int64_t)q * 1000 + i;
			if (acc[i] != want)
				bad = i;
		}
		CHECK(bad < 0, "hand-built reduction: element %d wrong", bad);
	}
	cadrt_cad_free(&cad);
}

/* Errors a builder meets, all local (no rank issues anything). */
static void bad_cads(cadrt_comm world)
{
	unsigned char a[64], c[64];
	const char *msg;
	cadrt_cad cad;
	cadrt_request req;
	int ba, bc, n0, n1;

	/* A cycle. */
	cadrt_cad_new(world, &cad);
	cadrt_cad_buffer(cad, a, sizeof a, 1, &ba);
	cadrt_cad_buffer(cad, c, sizeof c, 1, &bc);
	cadrt_cad_copy(cad, ba, 0, bc, 0, 8, &n0);
	cadrt_cad_copy(cad, bc, 8, ba, 8, 8, &n1);
	cadrt_cad_connect(cad, n0, n1);
	cadrt_cad_connect(cad, n1, n0);
	CHECK(cadrt_cad_issue(cad, &req) == -EINVAL && req == NULL, "a cycle must be refused");
	msg = cadrt_error_message();
	CHECK(strstr(msg, "cycle") != NULL, "the cycle's message: %s", msg);
	cadrt_cad_free(&cad);

	/* A write into a read-only buffer: the verifier says so. */
	cadrt_cad_new(world, &cad);
	cadrt_cad_buffer(cad, a, sizeof a, 0, &ba);
	cadrt_cad_buffer(cad, c, sizeof c, 1, &bc);
	cadrt_cad_copy(cad, ba, 0, bc, 0, 8, &n0);
	CHECK(cadrt_cad_issue(cad, &req) == -EINVAL, "a write to a read-only buffer must be refused");
	msg = cadrt_error_message();
	CHECK(strstr(msg, "verifier") && strstr(msg, "node 0"), "the verifier's message: %s", msg);
	cadrt_cad_free(&cad);

	/* An access past the end of its buffer. */
	cadrt_cad_new(world, &cad);
	cadrt_cad_buffer(cad, a, sizeof a, 1, &ba);
	cadrt_cad_buffer(cad, c, sizeof c, 1, &bc);
	cadrt_cad_copy(cad, ba, 60, bc, 0, 8, &n0);
	CHECK(cadrt_cad_issue(cad, &req) == -EINVAL, "an access past the end must be refused");
	msg = cadrt_error_message();
	CHECK(strstr(msg, "verifier") != NULL, "the verifier's message: %s", msg);
	cadrt_cad_free(&cad);

	/* A peer outside the communicator. */
	cadrt_cad_new(world, &cad);
	cadrt_cad_buffer(cad, a, sizeof a, 1, &ba);
	cadrt_cad_send(cad, ba, 0, 8, g_size + 3, 1, &n0);
	CHECK(cadrt_cad_issue(cad, &req) == -EINVAL, "a peer outside the communicator must be refused");
	cadrt_cad_free(&cad);

	/* Overlapping buffers, an unknown node, a node following itself. */
	cadrt_cad_new(world, &cad);
	cadrt_cad_buffer(cad, a, 32, 1, &ba);
	cadrt_cad_buffer(cad, a + 16, 32, 1, &bc);
	cadrt_cad_copy(cad, ba, 0, bc, 0, 8, &n0);
	CHECK(cadrt_cad_issue(cad, &req) == -EINVAL, "overlapping buffers must be refused");
	CHECK(strstr(cadrt_error_message(), "overlap") != NULL, "overlap message");
	CHECK(cadrt_cad_connect(cad, n0, 99) == -EINVAL, "an unknown node must be refused");
	CHECK(cadrt_cad_connect(cad, n0, n0) == -EINVAL, "a node cannot follow itself");
	CHECK(cadrt_cad_reduce(cad, ba, 0, bc, 0, 1, (cadrt_datatype)99, CADRT_SUM, &n1) == -EINVAL,
	      "an unknown datatype must be refused");
	cadrt_cad_free(&cad);
	CHECK(cadrt_cad_new(NULL, &cad) == -EINVAL, "a NULL communicator must be refused");
}

int main(int argc, char **argv)
{
	size_t bytes = 100000, seg = 8192;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			bytes = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--segment") && i + 1 < argc)
			seg = strtoull(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: rt_cad [--bytes N] [--segment S]\n");
			return 2;
		}
	}
	if (!seg)
		seg = 1;
	if (cadrt_init()) {
		fprintf(stderr, "rt_cad: cadrt_init: %s\n", cadrt_error_message());
		return 1;
	}
	cadrt_comm world = cadrt_comm_world();
	cadrt_comm_rank(world, &g_rank);
	cadrt_comm_size(world, &g_size);

	bad_cads(world);
	chain_bcast(world, bytes, seg);
	chain_bcast(world, 5000, 100);  /* many small eager segments */
	chain_bcast(world, 0, 64);      /* an empty CAD on every rank */
	hand_reduce(world);

	if (cadrt_finalize())
		CHECK(0, "cadrt_finalize");
	if (g_rank == 0 && !g_failures)
		printf("rt_cad: ok (%d checks, engine %s)\n", g_checks, cadrt_engine());
	return g_failures ? 1 : 0;
}
