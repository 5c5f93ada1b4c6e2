// collectives.h - the one list of the collectives libcadmpi takes.
//
// Every entry point of a collective is generated from this table:
// cadmpi.cpp makes the C ones (MPI_Name, the non-blocking MPI_Iname and
// Open MPI's persistent MPIX_Name_init), fortran.cpp the Fortran ones
// (ompi_name_f, ompi_iname_f, ompix_name_init_f, and gfortran's
// mpi_name_, mpi_iname_, mpix_name_init_ as aliases of them).  To take
// another collective: a start_name() in cadmpi.cpp (the decision and the
// cadrt call, as for the others) and a row here.
//
// X(Name, name, C parameters, C arguments, Fortran parameters, Fortran
// arguments):
// - Name as in MPI_Name and MPIX_Name_init, name as in MPI_Iname,
//   start_name, cadrt_iname and cadrt_name_init;
// - the C parameters of the blocking form (the non-blocking one adds
//   MPI_Request *req, the persistent one MPI_Info info too), which name
//   the communicator comm; the C arguments pass them on to start_name()
//   and PMPI_Name;
// - the Fortran parameters of the blocking form (without ierr; the others
//   add request, and info before it), and the C arguments made of them.
#ifndef CADMPI_COLLECTIVES_H
#define CADMPI_COLLECTIVES_H

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_*_init (persistent collectives)
#endif

// A parenthesised list without its parentheses: CADMPI_LIST (a, b) is a, b.
#define CADMPI_LIST(...) __VA_ARGS__

#define CADMPI_COLLECTIVES(X)                                                                                      \
  X(Bcast, bcast, (void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm),                                \
    (buf, count, dt, root, comm), (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm),      \
    (f_buf(buf), *count, f_type(dt), *root, f_comm(comm)))                                                         \
  X(Reduce, reduce,                                                                                                \
    (const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm),                     \
    (s, rb, count, dt, op, root, comm),                                                                            \
    (void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm),              \
    (f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), *root, f_comm(comm)))                                      \
  X(Allreduce, allreduce, (const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),          \
    (s, rb, count, dt, op, comm), (void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm), \
    (f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm)))                                             \
  X(Reduce_scatter_block, reduce_scatter_block,                                                                    \
    (const void *s, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),                               \
    (s, rb, count, dt, op, comm), (void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm), \
    (f_buf(s), f_buf(r), *count, f_type(dt), f_op(op), f_comm(comm)))                                             \
  X(Gather, gather,                                                                                                \
    (const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm),          \
    (s, sc, st, rb, rc, rt, root, comm),                                                                           \
    (void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm),   \
    (f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm)))                                  \
  X(Scatter, scatter,                                                                                              \
    (const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm),          \
    (s, sc, st, rb, rc, rt, root, comm),                                                                           \
    (void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm),   \
    (f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), *root, f_comm(comm)))                                  \
  X(Allgather, allgather,                                                                                          \
    (const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm),                    \
    (s, sc, st, rb, rc, rt, comm),                                                                                 \
    (void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm),                   \
    (f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm)))                                         \
  X(Alltoall, alltoall,                                                                                            \
    (const void *s, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm),                    \
    (s, sc, st, rb, rc, rt, comm),                                                                                 \
    (void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm),                   \
    (f_buf(s), *sc, f_type(st), f_buf(r), *rc, f_type(rt), f_comm(comm)))                                         \
  X(Barrier, barrier, (MPI_Comm comm), (comm), (MPI_Fint *comm), (f_comm(comm)))

// Whether Open MPI's persistent collectives (MPIX_*_init, its pcollreq
// extension in mpi-ext.h) are there to be taken.
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define CADMPI_PERSISTENT 1
#else
#define CADMPI_PERSISTENT 0
#endif

#endif
