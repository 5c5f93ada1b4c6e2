/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * exercise.h - run everything the core offers on one verified program, in
 * user space: disassemble it, execute its DAG to the end with real buffers
 * (transfers complete as if their peer answered), perform its copies and
 * reductions.  The fuzzer and the verifier tests call it on every program
 * the verifier accepts: if the verifier let through anything the rest of
 * the core cannot handle, the sanitizers see it here.
 */
#ifndef CAD_EXERCISE_H
#define CAD_EXERCISE_H

#include "../../kmod/core/cad_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits small enough that exercising any accepted program is cheap. */
extern const struct cad_limits cad_exercise_limits;

/* 0, or -1 if the executor misbehaved (a bug, reported in why). */
int cad_exercise(const struct cad_prog *prog, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* CAD_EXERCISE_H */
