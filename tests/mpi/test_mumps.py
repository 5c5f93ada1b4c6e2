"""MUMPS, unchanged, under libcadmpi.so: the sparse direct solver's own test
programs as Debian builds them for Open MPI (package mumps-test).  Each
solves the same 5 x 5 sparse system, whose solution is 1 2 3 4 5, in one
precision (s, d, c, z): analysis, factorisation and solution distributed
over the ranks.  Their main is Fortran; MUMPS calls MPI_Bcast, MPI_Reduce,
MPI_Allreduce, MPI_Gather, MPI_Alltoall and MPI_Barrier (about 290 of them
per rank here), which libcadmpi sends through cadrt.

Each program runs with Open MPI alone as the reference, then under
libcadmpi.so on each user-space engine with 1 to 4 ranks: it must end
cleanly, print the reference's solution (to the precision's rounding: a
reduction through cadrt may add in another order), and have sent
collectives through cadrt on every rank and left none to MPI."""

import re
from pathlib import Path

import pytest

from mpijob import mpirun, through

MUMPS = Path("/usr/lib/mumps")
PROGRAMS = {"s": "input_simpletest_real", "d": "input_simpletest_real", "c": "input_simpletest_cmplx",
            "z": "input_simpletest_cmplx"}
TOLERANCE = {"s": 1e-5, "c": 1e-5, "d": 1e-12, "z": 1e-12}
ENGINES = ["poll", "thread", "signal"]


def run(build_dir, prec, p, env=None, preload=True):
    return mpirun(build_dir, p, env=env, preload=preload, program=MUMPS / f"{prec}simpletest",
                  stdin=(MUMPS / PROGRAMS[prec]).read_text(), timeout=120)


def solution(out):
    """The solution's real parts, from "Solution is ..." (a complex
    component is printed as (re,im))."""
    m = re.search(r"Solution is(.*)", out)
    assert m, out[-3000:]
    numbers = [float(x) for x in re.findall(r"[-+]?\d+\.\d*(?:[EeDd][-+]?\d+)?", m.group(1).replace("D", "E"))]
    return numbers[::2] if "(" in m.group(1) else numbers


_reference = {}


def reference(build_dir, prec):
    if prec not in _reference:
        r = run(build_dir, prec, 2, preload=False)
        assert r.returncode == 0, r.stdout + r.stderr
        _reference[prec] = solution(r.stdout)
        assert len(_reference[prec]) == 5
    return _reference[prec]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prec", PROGRAMS)
def test_mumps_simpletest(build_dir, prec, engine):
    want = reference(build_dir, prec)
    for p in (1, 2, 3, 4):
        r = run(build_dir, prec, p, {"CADRT_ENGINE": engine, "CADMPI_STATS": "1"})
        assert r.returncode == 0, f"P={p}\n" + r.stdout[-3000:] + r.stderr[-3000:]
        got = solution(r.stdout)
        assert got == pytest.approx(want, rel=TOLERANCE[prec]), f"P={p}: {got} against {want}"
        assert got == pytest.approx([1, 2, 3, 4, 5], rel=100 * TOLERANCE[prec]), f"P={p}: {got}"
        counts = through(r.stderr)
        assert len(counts) == p and all(c > 0 and left == 0 for c, left in counts), f"P={p}\n" + r.stderr[-3000:]
