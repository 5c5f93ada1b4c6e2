// fortran.cpp - libcadmpi's Fortran entry points.
//
// Open MPI's Fortran bindings call the C library through PMPI_, past an
// LD_PRELOAD of the MPI_ names: a program whose main is Fortran would
// never start libcadmpi, and its collectives would never reach cadrt.  So
// libcadmpi also defines the Fortran entry points of initialisation,
// finalisation, the collectives (blocking, non-blocking and persistent,
// with MPI_START and MPI_STARTALL; generated from the table in
// collectives.h) and the completion family (MPI_WAIT,
// MPI_TEST and their ALL/ANY/SOME forms, MPI_REQUEST_GET_STATUS,
// MPI_REQUEST_FREE), converts the handles and calls the C entry points
// (cadmpi.cpp, requests.cpp), which decide as for C whether cadrt or MPI
// runs a collective, and progress cadrt while they wait.
//
// Under which names: each is defined as Open MPI names its own
// implementation, ompi_X_f, which `use mpi_f08` calls (from
// libmpi_usempif08), and aliased to gfortran's name mpi_X_, which mpif.h
// and `use mpi` call.  Two quirks of Open MPI 4.1 follow: mpi_f08's
// MPI_TEST family (and MPI_REQUEST_GET_STATUS) calls pmpi_test_ and its
// siblings, which libcadmpi
// therefore takes too (they progress cadrt, then do exactly what Open
// MPI's do), and mpi_f08's PMPI_ collectives call the same ompi_X_f as its
// MPI_ ones, so from mpi_f08 both go through cadrt.  From mpif.h and `use
// mpi`, PMPI_ names stay Open MPI's.  Other compilers' name manglings
// (MPI_BCAST, mpi_bcast__) are not taken.

#include <mpi.h>

#include <vector>

#include "collectives.h"

extern "C" {
// Open MPI's Fortran sentinels (the addresses MPI_IN_PLACE, MPI_BOTTOM,
// MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE have in Fortran); weak:
// absent from another MPI.
extern char mpi_fortran_in_place_ __attribute__((weak));
extern char mpi_fortran_bottom_ __attribute__((weak));
extern char mpi_fortran_status_ignore_ __attribute__((weak));
extern char mpi_fortran_statuses_ignore_ __attribute__((weak));
}

namespace {

void *f_buf(void *p) {
  if (&mpi_fortran_in_place_ && p == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  if (&mpi_fortran_bottom_ && p == &mpi_fortran_bottom_) return MPI_BOTTOM;
  return p;
}

MPI_Comm f_comm(const MPI_Fint *c) { return PMPI_Comm_f2c(*c); }
MPI_Datatype f_type(const MPI_Fint *t) { return PMPI_Type_f2c(*t); }
MPI_Op f_op(const MPI_Fint *o) { return PMPI_Op_f2c(*o); }
#if CADMPI_PERSISTENT
MPI_Info f_info(const MPI_Fint *i) { return PMPI_Info_f2c(*i); }
#endif

// A non-blocking call's result in Fortran: the error code, and the
// request's Fortran handle when there is one.  (The request by address:
// read after the call that sets it, whatever order the arguments of
// f_started(MPI_Ibcast(..., &q), &q, ...) are evaluated in.)
void f_started(int rc, const MPI_Request *q, MPI_Fint *request, MPI_Fint *ierr) {
  *ierr = rc;
  if (rc == MPI_SUCCESS) *request = PMPI_Request_c2f(*q);
}

// A Fortran request handle MPI_Request_f2c finds nothing for (it returns
// no request, as MPI asks, rather than raise an error): MPI_ERR_REQUEST,
// raised on MPI_COMM_WORLD as Open MPI raises request errors.  (Open MPI's
// own MPI_WAIT and MPI_TEST would follow the null pointer; its array forms
// check each request themselves.)
bool bad_request(MPI_Request r, MPI_Fint *ierr) {
  if (r != nullptr) return false;
  *ierr = MPI_ERR_REQUEST;
  PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_REQUEST);
  return true;
}

// Fortran's LOGICAL .TRUE. under gfortran (Open MPI's, configured for it).
MPI_Fint f_logical(int flag) { return flag ? 1 : 0; }

// A Fortran status is MPI_STATUS_SIZE integers; an array of them is
// strided so.
constexpr size_t kStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);

bool status_ignored(const MPI_Fint *s) {
  return &mpi_fortran_status_ignore_ && s == (void *)&mpi_fortran_status_ignore_;
}
bool statuses_ignored(const MPI_Fint *s) {
  return &mpi_fortran_statuses_ignore_ && s == (void *)&mpi_fortran_statuses_ignore_;
}

// A Fortran status on the C side: none where Fortran passed
// MPI_STATUS_IGNORE, else one to convert back.
struct FStatus {
  MPI_Fint *f;
  MPI_Status s;

  explicit FStatus(MPI_Fint *fs) : f(fs) {}
  MPI_Status *c() { return status_ignored(f) ? MPI_STATUS_IGNORE : &s; }
  void back() const {
    if (!status_ignored(f)) PMPI_Status_c2f(&s, f);
  }
};

// The C side of a Fortran request array and its statuses, and back.  On
// the heap for each call, as Open MPI's own Fortran bindings do:
// libcadmpi may be off in an MPI_THREAD_MULTIPLE program, where these are
// called from several threads at once.  A negative count leaves both
// empty and goes to MPI as it is, which reports it.
struct FRequests {
  std::vector<MPI_Request> req;
  std::vector<MPI_Status> st;
  MPI_Status *statuses = MPI_STATUSES_IGNORE;

  FRequests(int n, const MPI_Fint *freq, bool want_statuses) : req(static_cast<size_t>(n > 0 ? n : 0)) {
    for (int i = 0; i < n; i++) req[i] = PMPI_Request_f2c(freq[i]);
    if (want_statuses) {
      st.resize(req.size());
      statuses = st.data();
    }
  }
  // Request i's handle (MPI_REQUEST_NULL once completed and freed) and
  // status j (a completion's, in the order MPI reported them).
  void back(int i, MPI_Fint *freq) const { freq[i] = PMPI_Request_c2f(req[i]); }
  void status_back(int j, MPI_Fint *fst) const {
    if (statuses != MPI_STATUSES_IGNORE) PMPI_Status_c2f(&st[j], fst + j * kStatusInts);
  }
};

// MPI_TEST and MPI_REQUEST_GET_STATUS (test is the C call, which may
// free the request): the flag, the handle as it is now, and a
// completion's status.
template <typename Test>
void test_f(Test test, MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  FStatus st(status);
  int f = 0;
  *ierr = test(&r, &f, st.c());
  if (*ierr != MPI_SUCCESS) return;
  *request = PMPI_Request_c2f(r);
  *flag = f_logical(f);
  if (f) st.back();
}

// The array forms, each for its waiting and its testing member (wait;
// flag is null for the waiting one, which completes when it returns).
// MPI_WAITALL and MPI_TESTALL: MPI_ERR_IN_STATUS means some failed, and
// every request's handle and status says which.
void all_f(bool wait, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr) {
  FRequests c(*count, requests, !statuses_ignored(statuses));
  int f = 1;
  *ierr = wait ? MPI_Waitall(*count, c.req.data(), c.statuses) : MPI_Testall(*count, c.req.data(), &f, c.statuses);
  if (*ierr != MPI_SUCCESS && *ierr != MPI_ERR_IN_STATUS) return;
  if (flag) *flag = f_logical(f);
  if (!f) return;  // nothing completed: MPI changed no request
  for (int i = 0; i < *count; i++) {
    c.back(i, requests);
    c.status_back(i, statuses);
  }
}

// MPI_WAITANY and MPI_TESTANY: Fortran counts the index from 1.
void any_f(bool wait, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
           MPI_Fint *ierr) {
  FRequests c(*count, requests, false);
  FStatus st(status);
  int i = MPI_UNDEFINED, f = 1;
  *ierr = wait ? MPI_Waitany(*count, c.req.data(), &i, st.c()) : MPI_Testany(*count, c.req.data(), &i, &f, st.c());
  if (*ierr != MPI_SUCCESS) return;
  if (flag) *flag = f_logical(f);
  *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
  if (i != MPI_UNDEFINED) c.back(i, requests);
  if (f) st.back();
}

// MPI_WAITSOME and MPI_TESTSOME: outcount completions, their indices
// (from 1) and statuses in that order.
void some_f(bool wait, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
            MPI_Fint *statuses, MPI_Fint *ierr) {
  FRequests c(*incount, requests, !statuses_ignored(statuses));
  std::vector<int> idx(c.req.size());
  int out = 0;
  *ierr = (wait ? MPI_Waitsome : MPI_Testsome)(*incount, c.req.data(), &out, idx.data(), c.statuses);
  if (*ierr != MPI_SUCCESS && *ierr != MPI_ERR_IN_STATUS) return;
  *outcount = out;
  for (int j = 0; j < out && out != MPI_UNDEFINED; j++) {
    indices[j] = idx[j] + 1;
    c.back(idx[j], requests);
    c.status_back(j, statuses);
  }
}

}  // namespace

// Fortran names for a definition: gfortran's (mpif.h, `use mpi`), and for
// the MPI_TEST family the pmpi_ one mpi_f08 calls.
#define FORTRAN_ALIAS(impl, name) extern "C" __typeof__(impl) name __attribute__((alias(#impl)));

extern "C" {

// ------------------------------------------------ life

void ompi_init_f(MPI_Fint *ierr) { *ierr = MPI_Init(nullptr, nullptr); }

void ompi_init_thread_f(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
  int p = 0;
  *ierr = MPI_Init_thread(nullptr, nullptr, *required, &p);
  *provided = p;
}

void ompi_finalize_f(MPI_Fint *ierr) { *ierr = MPI_Finalize(); }

// ------------------------------------------------ completion

void ompi_wait_f(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  FStatus st(status);
  *ierr = MPI_Wait(&r, st.c());
  if (*ierr != MPI_SUCCESS) return;
  *request = PMPI_Request_c2f(r);
  st.back();
}

void ompi_test_f(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr) {
  test_f(MPI_Test, request, flag, status, ierr);
}

void ompi_request_get_status_f(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr) {
  test_f([](MPI_Request *r, int *f, MPI_Status *s) { return MPI_Request_get_status(*r, f, s); }, request, flag,
         status, ierr);
}

void ompi_waitall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr) {
  all_f(true, count, requests, nullptr, statuses, ierr);
}

void ompi_testall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr) {
  all_f(false, count, requests, flag, statuses, ierr);
}

void ompi_waitany_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr) {
  any_f(true, count, requests, index, nullptr, status, ierr);
}

void ompi_testany_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                    MPI_Fint *ierr) {
  any_f(false, count, requests, index, flag, status, ierr);
}

void ompi_waitsome_f(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                     MPI_Fint *statuses, MPI_Fint *ierr) {
  some_f(true, incount, requests, outcount, indices, statuses, ierr);
}

void ompi_testsome_f(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                     MPI_Fint *statuses, MPI_Fint *ierr) {
  some_f(false, incount, requests, outcount, indices, statuses, ierr);
}

void ompi_request_free_f(MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  *ierr = MPI_Request_free(&r);
  if (*ierr == MPI_SUCCESS) *request = PMPI_Request_c2f(r);
}

// ------------------------------------------------ collectives
//
// From the table (collectives.h): each blocking, non-blocking and
// persistent form calls its C entry point with the handles converted.

#define CADMPI_FORTRAN_BLOCKING(Name, name, params, args, fparams, fargs) \
  void ompi_##name##_f(CADMPI_LIST fparams, MPI_Fint *ierr) { *ierr = MPI_##Name(CADMPI_LIST fargs); }
#define CADMPI_FORTRAN_NONBLOCKING(Name, name, params, args, fparams, fargs)            \
  void ompi_i##name##_f(CADMPI_LIST fparams, MPI_Fint *request, MPI_Fint *ierr) {       \
    MPI_Request q;                                                                      \
    f_started(MPI_I##name(CADMPI_LIST fargs, &q), &q, request, ierr);                   \
  }
CADMPI_COLLECTIVES(CADMPI_FORTRAN_BLOCKING)
CADMPI_COLLECTIVES(CADMPI_FORTRAN_NONBLOCKING)

// ------------------------------------------------ persistent collectives
//
// Open MPI 4.1's MPIX_*_INIT (its pcollreq extension: mpif-ext.h,
// mpi_f08_ext), and MPI_START and MPI_STARTALL, which start ours and
// Open MPI's alike (the C entry points tell them apart).

void ompi_start_f(MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request r = PMPI_Request_f2c(*request);
  if (bad_request(r, ierr)) return;
  *ierr = MPI_Start(&r);
}

void ompi_startall_f(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr) {
  FRequests c(*count, requests, false);
  *ierr = MPI_Startall(*count, c.req.data());
}

#if CADMPI_PERSISTENT
#define CADMPI_FORTRAN_PERSISTENT(Name, name, params, args, fparams, fargs)                               \
  void ompix_##name##_init_f(CADMPI_LIST fparams, MPI_Fint *info, MPI_Fint *request, MPI_Fint *ierr) {     \
    MPI_Request q;                                                                                        \
    f_started(MPIX_##Name##_init(CADMPI_LIST fargs, f_info(info), &q), &q, request, ierr);                \
  }
CADMPI_COLLECTIVES(CADMPI_FORTRAN_PERSISTENT)
#endif

}  // extern "C"

FORTRAN_ALIAS(ompi_init_f, mpi_init_)
FORTRAN_ALIAS(ompi_init_thread_f, mpi_init_thread_)
FORTRAN_ALIAS(ompi_finalize_f, mpi_finalize_)
FORTRAN_ALIAS(ompi_wait_f, mpi_wait_)
FORTRAN_ALIAS(ompi_test_f, mpi_test_)
FORTRAN_ALIAS(ompi_test_f, pmpi_test_)
FORTRAN_ALIAS(ompi_waitall_f, mpi_waitall_)
FORTRAN_ALIAS(ompi_testall_f, mpi_testall_)
FORTRAN_ALIAS(ompi_testall_f, pmpi_testall_)
FORTRAN_ALIAS(ompi_waitany_f, mpi_waitany_)
FORTRAN_ALIAS(ompi_testany_f, mpi_testany_)
FORTRAN_ALIAS(ompi_testany_f, pmpi_testany_)
FORTRAN_ALIAS(ompi_waitsome_f, mpi_waitsome_)
FORTRAN_ALIAS(ompi_testsome_f, mpi_testsome_)
FORTRAN_ALIAS(ompi_testsome_f, pmpi_testsome_)
FORTRAN_ALIAS(ompi_request_get_status_f, mpi_request_get_status_)
FORTRAN_ALIAS(ompi_request_get_status_f, pmpi_request_get_status_)
FORTRAN_ALIAS(ompi_request_free_f, mpi_request_free_)
FORTRAN_ALIAS(ompi_start_f, mpi_start_)
FORTRAN_ALIAS(ompi_startall_f, mpi_startall_)
#define CADMPI_FORTRAN_ALIASES(Name, name, params, args, fparams, fargs) \
  FORTRAN_ALIAS(ompi_##name##_f, mpi_##name##_)                          \
  FORTRAN_ALIAS(ompi_i##name##_f, mpi_i##name##_)
CADMPI_COLLECTIVES(CADMPI_FORTRAN_ALIASES)
#if CADMPI_PERSISTENT
#define CADMPI_FORTRAN_PERSISTENT_ALIAS(Name, name, params, args, fparams, fargs) \
  FORTRAN_ALIAS(ompix_##name##_init_f, mpix_##name##_init_)
CADMPI_COLLECTIVES(CADMPI_FORTRAN_PERSISTENT_ALIAS)
#endif
