/* rt_reinit - cadrt initialised more than once in a process:
 *
 *   cadrun -n P rt_reinit ENGINE ROUNDS
 *
 * First an init that fails after the job's segment is joined
 * (CADRT_ENGINE=none-such: the engine is chosen last), which must leave
 * nothing behind; then ROUNDS times: init with ENGINE, an allreduce and a
 * broadcast of 100 000 bytes checked, finalize.  Prints "rt_reinit: ok"
 * at rank 0; exits 1 on the first failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cadrt/cadrt.h"

static char g_buf[100000];

int main(int argc, char **argv)
{
	int rank = 0, size = 1, err;

	if (argc != 3) {
		fprintf(stderr, "usage: cadrun -n P rt_reinit ENGINE ROUNDS\n");
		return 2;
	}
	setenv("CADRT_ENGINE", "none-such", 1);
	err = cadrt_init();
	if (!err || !strstr(cadrt_error_message(), "none-such")) {
		fprintf(stderr, "rt_reinit: the bad engine gave %d: %s\n", err, cadrt_error_message());
		return 1;
	}
	setenv("CADRT_ENGINE", argv[1], 1);
	for (int round = 0; round < atoi(argv[2]); round++) {
		int one = 1, sum = 0;
		cadrt_request r;

		if ((err = cadrt_init())) {
			fprintf(stderr, "rt_reinit: round %d: cadrt_init: %s\n", round, cadrt_error_message());
			return 1;
		}
		cadrt_comm_rank(cadrt_comm_world(), &rank);
		cadrt_comm_size(cadrt_comm_world(), &size);
		for (size_t i = 0; i < sizeof g_buf; i++)
			g_buf[i] = rank == round % size ? (char)(i * 7 + round) : 0;
		if (cadrt_iallreduce(&one, &sum, 1, CADRT_INT32, CADRT_SUM, cadrt_comm_world(), &r) ||
		    cadrt_wait(&r) || sum != size ||
		    cadrt_ibcast(g_buf, sizeof g_buf, CADRT_BYTE, round % size, cadrt_comm_world(), &r) ||
		    cadrt_wait(&r)) {
			fprintf(stderr, "rt_reinit: rank %d, round %d: sum %d: %s\n", rank, round, sum,
				cadrt_error_message());
			return 1;
		}
		for (size_t i = 0; i < sizeof g_buf; i++)
			if (g_buf[i] != (char)(i * 7 + round)) {
				fprintf(stderr, "rt_reinit: rank %d, round %d: byte %zu is wrong\n", rank, round, i);
				return 1;
			}
		if ((err = cadrt_finalize())) {
			fprintf(stderr, "rt_reinit: round %d: cadrt_finalize: %s\n", round, cadrt_error_message());
			return 1;
		}
	}
	if (rank == 0)
		printf("rt_reinit: ok\n");
	return 0;
}
