"""The names libcadmpi.so exports are exactly those of
tests/mpi/cadmpi_symbols.txt: the C and Fortran entry points it takes
over from Open MPI (most generated from one table, cadrt/mpi/collectives.h).
A name missing would leave that call to Open MPI unnoticed; a name added
would take over a call nobody meant it to."""

import subprocess
from pathlib import Path

EXPECTED = Path(__file__).with_name("cadmpi_symbols.txt")


def exported(lib):
    """`TYPE NAME` of each symbol the library defines in its dynamic
    symbol table, sorted."""
    r = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    return sorted(" ".join(line.split()[1:]) for line in r.stdout.splitlines() if line.strip())


def test_exported_symbols_are_the_list(build_dir):
    got = exported(build_dir / "lib" / "libcadmpi.so")
    want = sorted(line for line in EXPECTED.read_text().splitlines() if line and not line.startswith("#"))
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    assert not missing and not extra, f"missing: {missing}\nnot in {EXPECTED.name}: {extra}"
    assert got == want  # (and no name twice)


def test_every_collective_has_its_entry_points():
    """Each collective of the list has its blocking, non-blocking and
    persistent C forms and their Fortran names (ompi_*_f, which mpi_f08
    calls, and gfortran's mpi_*_ for mpif.h and `use mpi`)."""
    names = {line.split()[1] for line in EXPECTED.read_text().splitlines() if line and not line.startswith("#")}
    colls = ["Bcast", "Reduce", "Allreduce", "Reduce_scatter_block", "Gather", "Scatter", "Allgather",
             "Alltoall", "Barrier"]
    for c in colls:
        low = c.lower()
        for n in (f"MPI_{c}", f"MPI_I{low}", f"MPIX_{c}_init", f"ompi_{low}_f", f"ompi_i{low}_f",
                  f"ompix_{low}_init_f", f"mpi_{low}_", f"mpi_i{low}_", f"mpix_{low}_init_"):
            assert n in names, n
