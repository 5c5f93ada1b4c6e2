/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* reduce_priv.h - what reduce.c (compiled with floating point) exports as
 * data to the rest of the core. */
#ifndef CAD_REDUCE_PRIV_H
#define CAD_REDUCE_PRIV_H

#include "cad_core.h"

typedef void (*cad_reduce_fn)(void *inout, const void *in, __u64 count);

/* The built-in kernels: NULL where MPI does not define op on the type.
 * The single source of truth for cad_reduce_supported(). */
extern const cad_reduce_fn cad_reduce_table[CAD_OP_COUNT][CAD_DT_COUNT];

#endif /* CAD_REDUCE_PRIV_H */
