// datatypes.cpp - MPI datatypes and ops to cadrt's: what a datatype is
// to cadrt, where the bytes of a call's data lie (staged with MPI_Pack
// where they do not lie in order), and the elements and ops of the
// reductions.
#include <algorithm>
#include <climits>
#include <cstring>
#include <new>

#include "cadmpi.h"

namespace cadmpi {

std::unique_ptr<Staging> g_staging;

// A datatype's name for a message: MPI's own for a predefined one.
std::string type_name(MPI_Datatype dt) {
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  PMPI_Type_get_name(dt, name, &len);
  return len ? std::string(name, static_cast<size_t>(len)) : std::string("a datatype");
}


// ---- Datatypes
//
// MPI asks only that the ranks' type signatures match in the collectives
// that move data: MPI_INT x 4 on one rank may be a contiguous, strided or
// indexed type of 4 MPI_INT on another.  So whether cadrt runs such a call
// may not depend on how a rank describes its data, or the ranks would
// split between cadrt and MPI and hang.  bcast, gather, scatter, allgather
// and alltoall therefore take every datatype: cadrt moves the signature's
// bytes, MPI_Pack's stream (in Open MPI's homogeneous build, the elements'
// bytes in order; bytes_at() checks that it is no longer).  Data that lies in
// the program's buffer as those bytes in order is used there; other data
// goes through a Stage.  (The reductions take predefined types only: MPI
// defines its predefined ops on those, and Open MPI rejects a derived
// datatype in MPI_Reduce and the others with MPI_ERR_OP; so a derived one
// is left to MPI, on every rank.)

namespace {

// What a datatype is to cadrt.
struct Shape {
  size_t size = 0;       // MPI_Type_size
  MPI_Aint extent = 0;   // from one element to the next
  MPI_Aint true_lb = 0;  // where its first byte is, from the buffer
  bool dense = false;    // one element's bytes lie in signature order from true_lb, with no gap
  bool predefined = false;
};

// Takes a datatype apart, with MPI_Type_get_envelope and get_contents, down
// to its predefined leaves: whether one element is dense (Shape).
bool walk(MPI_Datatype dt, bool *dense, int depth) {
  if (depth > 64) return decline("a datatype nested more than 64 constructors deep");
  int ni, na, nd, combiner;
  if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
    return decline("MPI_Type_get_envelope rejects the datatype");
  MPI_Aint lb, extent;
  int size;
  if (combiner == MPI_COMBINER_NAMED) {
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_size(dt, &size);
    *dense = lb == 0 && extent == size;
    return true;
  }
  *dense = false;
  switch (combiner) {  // the constructors that may lay copies of one inner type back to back, in order
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
      break;
    default:  // indexed, struct, subarray, darray: packed (they may be dense, but rarely are)
      return true;
  }
  std::vector<int> ints(static_cast<size_t>(ni));
  std::vector<MPI_Aint> addrs(static_cast<size_t>(na));
  std::vector<MPI_Datatype> types(static_cast<size_t>(nd));
  if (nd != 1 || PMPI_Type_get_contents(dt, ni, na, nd, ints.data(), addrs.data(), types.data()) != MPI_SUCCESS)
    return decline("MPI_Type_get_contents rejects the datatype");
  bool inner = false;
  const bool ok = walk(types[0], &inner, depth + 1);
  PMPI_Type_get_extent(types[0], &lb, &extent);
  PMPI_Type_size(types[0], &size);
  const bool abutting = inner && extent == size;  // inner elements back to back
  switch (combiner) {
    case MPI_COMBINER_CONTIGUOUS:  // count
      *dense = inner && (ints[0] <= 1 || abutting);
      break;
    case MPI_COMBINER_VECTOR:  // count, blocklength, stride (in elements)
      *dense = inner && (ints[0] <= 1 ? ints[1] <= 1 || abutting : abutting && ints[2] == ints[1]);
      break;
    case MPI_COMBINER_HVECTOR:  // count, blocklength; stride (in bytes)
      *dense = inner && (ints[0] <= 1 ? ints[1] <= 1 || abutting : abutting && addrs[0] == ints[1] * extent);
      break;
    default:  // dup, resized: the bounds move, not the data
      *dense = inner;
      break;
  }
  PMPI_Type_get_envelope(types[0], &ni, &na, &nd, &combiner);
  if (combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&types[0]);  // get_contents made a new handle of it
  return ok;
}

bool shape_of(MPI_Datatype dt, Shape *out) {
  // The answers for predefined types, which are never freed, are kept by
  // handle (a derived type is taken apart every time: once freed, its
  // handle may name another type).
  static struct {
    MPI_Datatype dt;
    Shape shape;
  } seen[8];
  static unsigned n_seen;
  // Off (an MPI_THREAD_MULTIPLE program, say), nothing is cadrt's and the
  // kept answers are not touched: several threads may be calling.
  if (!g_on) return decline("libcadmpi is not running");
  if (dt == MPI_DATATYPE_NULL) return decline("the datatype is MPI_DATATYPE_NULL");
  for (unsigned i = 0; i < n_seen; i++)
    if (seen[i].dt == dt) {
      *out = seen[i].shape;
      return true;
    }
  int ni, na, nd, combiner;
  if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
    return decline("MPI_Type_get_envelope rejects the datatype");
  Shape s;
  MPI_Aint lb, true_extent;
  int size;
  PMPI_Type_size(dt, &size);
  PMPI_Type_get_extent(dt, &lb, &s.extent);
  PMPI_Type_get_true_extent(dt, &s.true_lb, &true_extent);
  s.size = static_cast<size_t>(size);
  s.predefined = combiner == MPI_COMBINER_NAMED;
  if (s.predefined)
    s.dense = lb == 0 && s.extent == size;  // what walk() would find, without asking MPI again
  else if (!walk(dt, &s.dense, 0))
    return false;
  if (size == 0) s.dense = true;  // nothing to move
  if (s.predefined && n_seen < sizeof seen / sizeof seen[0]) seen[n_seen++] = {dt, s};
  *out = s;
  return true;
}

}  // namespace


// count elements of dt at buf, blocks times over (a gather's receive
// buffer: block after block, an array of count x blocks elements): the
// bytes of one block, and where cadrt finds all of them.  In place when
// they lie there in order; else in a new Stage of g_staging, packed before
// the collective if `in`, unpacked after it if `out`.
bool bytes_at(const void *buf, int count, int blocks, MPI_Datatype dt, bool in, bool out, size_t *bytes,
              void **at) {
  Shape s;
  if (count < 0) return decline("a negative count (%d)", count);
  if (!shape_of(dt, &s)) return false;
  *bytes = static_cast<size_t>(count) * s.size;
  const size_t n = static_cast<size_t>(count) * static_cast<size_t>(blocks), all = n * s.size;
  if (all == 0 || (s.dense && (n == 1 || s.extent == static_cast<MPI_Aint>(s.size)))) {
    *at = const_cast<char *>(static_cast<const char *>(buf)) + (all ? s.true_lb : 0);
    return true;
  }
  Stage st;
  st.piece = std::min(n, std::max<size_t>(1, Stage::kPiece / s.size));
  if (st.piece * s.size > INT_MAX)
    return decline("one element of %s is %zu bytes: MPI_Pack takes less than 2 GiB", type_name(dt).c_str(), s.size);
  int packed = 0;
  PMPI_Pack_size(static_cast<int>(st.piece), dt, MPI_COMM_WORLD, &packed);
  if (static_cast<size_t>(packed) != st.piece * s.size)
    return decline("MPI packs %zu elements of %s in %d bytes, not in their size (%zu)", st.piece,
                   type_name(dt).c_str(), packed, st.piece * s.size);
  // (No exception through MPI_Bcast and its siblings: staging that cannot
  // be allocated leaves the call to MPI.)
  st.tmp.reset(new (std::nothrow) char[all]);
  if (!st.tmp) return decline("no memory to stage %zu bytes of %s", all, type_name(dt).c_str());
  st.user = const_cast<char *>(static_cast<const char *>(buf));
  st.count = n;
  st.size = s.size;
  st.extent = s.extent;
  st.in = in;
  st.out = out;
  if (s.predefined) {
    st.dt = dt;
  } else {
    PMPI_Type_dup(dt, &st.dt);
    st.own_dt = true;
  }
  *at = st.tmp.get();
  if (!g_staging) g_staging.reset(new Staging);
  g_staging->sides.push_back(std::move(st));
  return true;
}

namespace {


// The cadrt datatype of a predefined MPI one, for reductions, found from
// scratch (elem_of keeps the answers).
bool elem_lookup(MPI_Datatype dt, cadrt_datatype *out) {
  static const struct {
    MPI_Datatype mpi;
    cadrt_datatype cad;
  } table[] = {
      {MPI_SIGNED_CHAR, CADRT_INT8}, {MPI_CHAR, CADRT_INT8}, {MPI_INT8_T, CADRT_INT8},
      {MPI_UNSIGNED_CHAR, CADRT_UINT8}, {MPI_UINT8_T, CADRT_UINT8}, {MPI_BYTE, CADRT_UINT8},
      {MPI_SHORT, CADRT_INT16}, {MPI_INT16_T, CADRT_INT16}, {MPI_UNSIGNED_SHORT, CADRT_UINT16},
      {MPI_UINT16_T, CADRT_UINT16}, {MPI_INT, CADRT_INT32}, {MPI_INT32_T, CADRT_INT32},
      {MPI_UNSIGNED, CADRT_UINT32}, {MPI_UINT32_T, CADRT_UINT32}, {MPI_LONG, CADRT_INT64},
      {MPI_LONG_LONG, CADRT_INT64}, {MPI_INT64_T, CADRT_INT64}, {MPI_UNSIGNED_LONG, CADRT_UINT64},
      {MPI_UNSIGNED_LONG_LONG, CADRT_UINT64}, {MPI_UINT64_T, CADRT_UINT64}, {MPI_FLOAT, CADRT_FLOAT},
      {MPI_DOUBLE, CADRT_DOUBLE}, {MPI_FLOAT_INT, CADRT_FLOAT_INT}, {MPI_DOUBLE_INT, CADRT_DOUBLE_INT},
      {MPI_2INT, CADRT_INT_INT}, {MPI_LONG_INT, CADRT_LONG_INT}, {MPI_SHORT_INT, CADRT_SHORT_INT},
  };
  if (dt == MPI_DATATYPE_NULL) return decline("the datatype is MPI_DATATYPE_NULL");
  for (const auto &e : table)
    if (e.mpi == dt) {
      // The pair types: only where MPI's layout is cadrt's.
      MPI_Aint lb, extent;
      PMPI_Type_get_extent(dt, &lb, &extent);
      if (lb != 0 || static_cast<size_t>(extent) != cadrt_datatype_size(e.cad))
        return decline("%s: MPI lays it out in %ld bytes, cadrt in %zu", type_name(dt).c_str(),
                       static_cast<long>(extent), cadrt_datatype_size(e.cad));
      *out = e.cad;
      return true;
    }
  // Fortran's numeric types and MPI's address-sized integers, by the size
  // this MPI gives them (INTEGER is 4 bytes with gfortran's default, 8
  // under -fdefault-integer-8): MPI defines the same reductions on them
  // as on the C types of their size.  (LOGICAL and COMPLEX are not
  // cadrt's; MPI_2REAL and MPI_2DOUBLE_PRECISION pair two reals, which no
  // cadrt type is.)
  static const struct {
    MPI_Datatype mpi;
    char kind;  // 'i' signed integer, 'f' real, 'p' a pair of INTEGERs
  } fortran[] = {
      {MPI_INTEGER, 'i'},  {MPI_INTEGER1, 'i'},         {MPI_INTEGER2, 'i'}, {MPI_INTEGER4, 'i'},
      {MPI_INTEGER8, 'i'}, {MPI_REAL, 'f'},             {MPI_REAL4, 'f'},    {MPI_REAL8, 'f'},
      {MPI_DOUBLE_PRECISION, 'f'}, {MPI_2INTEGER, 'p'}, {MPI_AINT, 'i'},     {MPI_OFFSET, 'i'},
      {MPI_COUNT, 'i'},
  };
  for (const auto &e : fortran) {
    if (e.mpi != dt) continue;
    int size = 0;
    MPI_Aint lb, extent;
    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &extent);
    if (lb != 0 || extent != size) break;
    cadrt_datatype d = CADRT_USER;
    if (e.kind == 'i')
      d = size == 1 ? CADRT_INT8 : size == 2 ? CADRT_INT16 : size == 4 ? CADRT_INT32 : size == 8 ? CADRT_INT64 : d;
    if (e.kind == 'f') d = size == 4 ? CADRT_FLOAT : size == 8 ? CADRT_DOUBLE : d;
    if (e.kind == 'p') d = size == 8 ? CADRT_INT_INT : d;
    if (d == CADRT_USER) break;
    *out = d;
    return true;
  }
  // Why not: asked of MPI only when it will be told (CADRT_VERBOSE).
  if (!g_verbose) return false;
  int ni, na, nd, combiner;
  if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) == MPI_SUCCESS && combiner != MPI_COMBINER_NAMED)
    return decline("a derived datatype in a reduction: MPI's predefined ops take predefined types");
  return decline("%s is not a type cadrt reduces", type_name(dt).c_str());
}

}  // namespace


bool elem_of(MPI_Datatype dt, cadrt_datatype *out) {
  // Only predefined types are taken, and their handles are never freed,
  // so an answer kept by handle stays right (a refusal is not kept: it is
  // cheap, its reason is wanted under CADRT_VERBOSE, and a derived type's
  // handle may be reused).
  static struct {
    MPI_Datatype dt;
    cadrt_datatype cad;
  } seen[8];
  static unsigned n_seen;
  if (!g_on) return decline("libcadmpi is not running");  // as in named()
  for (unsigned i = 0; i < n_seen; i++)
    if (seen[i].dt == dt) {
      *out = seen[i].cad;
      return true;
    }
  if (!elem_lookup(dt, out)) return false;
  if (n_seen < sizeof seen / sizeof seen[0]) seen[n_seen++] = {dt, *out};
  return true;
}

bool op_of(MPI_Op op, cadrt_op *out) {
  static const struct {
    MPI_Op mpi;
    cadrt_op cad;
  } table[] = {
      {MPI_SUM, CADRT_SUM},   {MPI_PROD, CADRT_PROD}, {MPI_MIN, CADRT_MIN},       {MPI_MAX, CADRT_MAX},
      {MPI_BAND, CADRT_BAND}, {MPI_BOR, CADRT_BOR},   {MPI_BXOR, CADRT_BXOR},     {MPI_LAND, CADRT_LAND},
      {MPI_LOR, CADRT_LOR},   {MPI_LXOR, CADRT_LXOR}, {MPI_MINLOC, CADRT_MINLOC}, {MPI_MAXLOC, CADRT_MAXLOC},
  };
  for (const auto &e : table)
    if (e.mpi == op) {
      *out = e.cad;
      return true;
    }
  if (op == MPI_REPLACE || op == MPI_NO_OP) return decline("MPI_REPLACE and MPI_NO_OP are one-sided ops");
  if (op == MPI_OP_NULL) return decline("the op is MPI_OP_NULL");
  return decline("a user-defined MPI_Op (MPI_Op_create): MPI runs it");
}

}  // namespace cadmpi
