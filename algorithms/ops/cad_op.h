/*
 * cad_op.h - how a user-defined reduction operator is written.
 *
 *   #include "cad_op.h"
 *
 *   struct cplx { double re, im; };
 *
 *   CAD_OP(commutative)
 *   void complex_mul(const struct cplx *in, struct cplx *inout)
 *   {
 *           double re = in->re * inout->re - in->im * inout->im;
 *           double im = in->re * inout->im + in->im * inout->re;
 *           inout->re = re;
 *           inout->im = im;
 *   }
 *
 * The function computes *inout = *in (op) *inout for one element, as
 * MPI_User_function does for each element of its vectors: `in` is the
 * contribution of the lower ranks.  CAD_OP(commutative) or
 * CAD_OP(noncommutative) says whether the order of the operands may be
 * swapped; the verifier and the selection rules take it at its word.  The
 * element type is a scalar or a struct of scalars (arrays and nested
 * structs of scalars included), at most 256 bytes.  `cadc op check FILE.c`
 * says what is allowed (docs/operators.md).
 *
 * The same file compiles as plain C with gcc or clang (the marker is then
 * only an attribute), which is how the tests compare the interpreted
 * operator with native code.
 */
#ifndef CAD_OP_H
#define CAD_OP_H

#include <stdint.h>

#ifdef __CAD_OPC__
#define CAD_OP(order) __attribute__((annotate("cad_op:" #order)))
#else
#define CAD_OP(order) __attribute__((unused))
#endif

#endif /* CAD_OP_H */
