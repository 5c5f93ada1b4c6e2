// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_verifier.c - libFuzzer target for the program verifier.
 *
 * Any bytes: the verifier either accepts (then the program must
 * disassemble and execute to the end under ASan/UBSan, see exercise.h) or
 * rejects with -EINVAL/-E2BIG and exactly one message line.  Anything
 * else aborts.  `make test` runs it for 60 s from the seeds that
 * cad_fuzz_seeds writes (the verifier table's programs); run it longer by
 * hand with `make fuzz FUZZ_SECONDS=3600`.  A crash it finds becomes an
 * entry of tests/core/verifier_cases.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t *img;
	char msg[512], why[256];
	struct cad_log log;
	struct cad_prog prog;
	int rc;

	if (size > cad_exercise_limits.max_image_size)
		return 0;
	img = malloc(size + 8);  /* 8-byte aligned, as the verifier requires */
	memcpy(img, data, size);
	cad_log_init(&log, msg, sizeof(msg));
	rc = cad_verify(img, (__u32)size, &cad_exercise_limits, &prog, &log);
	if (rc == 0) {
		if (log.len) {
			fprintf(stderr, "accepted with a message: %s\n", msg);
			abort();
		}
		if (cad_exercise(&prog, why, sizeof(why))) {
			fprintf(stderr, "accepted program misbehaved: %s\n", why);
			abort();
		}
	} else {
		if (rc != -EINVAL && rc != -E2BIG) {
			fprintf(stderr, "unexpected result %d: %s\n", rc, msg);
			abort();
		}
		if (log.len == 0 || msg[log.len - 1] != '\n' || strchr(msg, '\n') != msg + log.len - 1) {
			fprintf(stderr, "rejection is not one line: \"%s\"\n", msg);
			abort();
		}
	}
	free(img);
	return 0;
}
