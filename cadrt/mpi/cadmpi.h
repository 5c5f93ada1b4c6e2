// cadmpi.h - what the files of libcadmpi.so share (not installed).
//
// libcadmpi's files: cadmpi.cpp (start-up and finalisation, the decision
// for each collective and its C entry points, generated from the table
// in collectives.h), datatypes.cpp (MPI datatypes and ops to cadrt's, and
// the staging of data that does not lie in order), requests.cpp (the
// handles of cadrt collectives and the MPI_Wait/Test family, MPI_Start)
// and fortran.cpp (the Fortran entry points).  Everything here is hidden:
// what libcadmpi exports is listed in tests/mpi/cadmpi_symbols.txt.
#ifndef CADMPI_H
#define CADMPI_H

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cadrt/cadrt_mpi.h"

namespace cadmpi __attribute__((visibility("hidden"))) {

// libcadmpi runs (cadrt started on every rank, see start() in cadmpi.cpp).
extern bool g_on;
// Calls through cadrt, and left to MPI (CADMPI_STATS).
extern long g_through, g_fallen;
// CADRT_VERBOSE: say why a call is left to MPI.
extern bool g_verbose;

// Why the last call was declined, set where libcadmpi itself declines it.
// Empty: the decline, if any, was cadrt's, and cadrt_error_message() has it.
extern char g_why[200];

template <typename... A>
bool set_why(const char *fmt, A... a) {
  snprintf(g_why, sizeof g_why, fmt, a...);
  return false;
}

// false, and the reason under CADRT_VERBOSE: a macro, so that without it
// the reason's arguments (a datatype's name asked of MPI) are not even
// evaluated and a declined call costs no more than it did.
#define decline(...) (::cadmpi::g_verbose ? ::cadmpi::set_why(__VA_ARGS__) : false)

// A side of a call whose data cadrt cannot use where it lies (a derived
// datatype with gaps or out of order, a pair type with a gap): cadrt works
// on tmp, which MPI_Pack fills from the program's buffer before the
// collective (in) and MPI_Unpack empties into it after (out).
// MPI_Pack and MPI_Unpack count in int: elements go in pieces of at most
// kPiece bytes.
struct Stage {
  static constexpr size_t kPiece = size_t{1} << 30;
  char *user = nullptr;  // the program's buffer
  size_t count = 0;      // elements of dt there
  size_t size = 0;       // of one, packed
  MPI_Aint extent = 0;
  size_t piece = 0;  // elements in one MPI_Pack
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  bool own_dt = false;  // dt is our dup of the program's derived type (MPI lets it free its own meanwhile)
  bool in = false, out = false;
  std::unique_ptr<char[]> tmp;

  // f(the program's elements, their bytes in tmp, how many, how many bytes)
  // for each piece.
  template <typename F>
  void pieces(F f) {
    for (size_t k = 0; k < count; k += piece) {
      const int n = static_cast<int>(std::min(piece, count - k));
      f(user + static_cast<MPI_Aint>(k) * extent, tmp.get() + k * size, n, static_cast<int>(n * size));
    }
  }
  void pack() {
    pieces([this](char *elems, char *bytes, int n, int nbytes) {
      int pos = 0;
      PMPI_Pack(elems, n, dt, bytes, nbytes, &pos, MPI_COMM_WORLD);
    });
  }
  void unpack() {
    pieces([this](char *elems, char *bytes, int n, int nbytes) {
      int pos = 0;
      PMPI_Unpack(bytes, nbytes, &pos, elems, n, dt, MPI_COMM_WORLD);
    });
  }
};

struct Staging {
  std::vector<Stage> sides;

  Staging() = default;
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  ~Staging() {
    for (Stage &s : sides)
      if (s.own_dt) PMPI_Type_free(&s.dt);
  }
  // Before the collective (every start of a persistent one).
  void pack() {
    for (Stage &s : sides)
      if (s.in) s.pack();
  }
  // After it, when it succeeded.
  void unpack() {
    for (Stage &s : sides)
      if (s.out) s.unpack();
  }
};

// The staging of the call being decided (libcadmpi runs in one thread at
// a time, or not at all): filled by the start_*() functions, then owned by
// the call's request, or dropped when the call falls through to MPI.
extern std::unique_ptr<Staging> g_staging;

// ---- datatypes.cpp

// A datatype's name for a message: MPI's own for a predefined one.
std::string type_name(MPI_Datatype dt);
// count elements of dt at buf, blocks times over: the bytes of one block,
// and where cadrt finds all of them (staged in g_staging if need be).
bool bytes_at(const void *buf, int count, int blocks, MPI_Datatype dt, bool in, bool out, size_t *bytes,
              void **at);
// The cadrt datatype and op of a reduction's predefined MPI ones.
bool elem_of(MPI_Datatype dt, cadrt_datatype *out);
bool op_of(MPI_Op op, cadrt_op *out);

// ---- requests.cpp

// At start-up, once cadrt runs; at MPI_Finalize, before cadrt goes.
void requests_open();
void requests_close();
// A collective started in cadrt: a blocking call waits for it here, a
// non-blocking one gets its handle, a persistent one its inactive handle.
int finish_now(cadrt_request r, const char *fn, MPI_Comm comm);
int wrap(cadrt_request r, const char *fn, MPI_Comm comm, MPI_Request *req);
int wrap_persistent(cadrt_request r, const char *fn, MPI_Comm comm, MPI_Request *req);

}  // namespace cadmpi

#endif
