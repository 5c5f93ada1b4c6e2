"""Standard MPI test programs, unchanged, under libcadmpi.so: ScaLAPACK's
own test suite as Debian builds it for Open MPI (package
scalapack-mpi-test, the programs CTest runs for ScaLAPACK with 4 processes
and its input files).  Their main is Fortran, their collectives come from
BLACS (C) on grid communicators: broadcasts of matrix blocks (derived
datatypes, left to MPI), sums and maxima of INTEGER and DOUBLE PRECISION
(cadrt's), combines with BLACS's own MPI_Ops (MPI's).

Each program runs once with Open MPI alone, as the reference, then under
libcadmpi.so on each user-space engine: it must pass as many tests as the
reference, fail none, and have sent collectives through cadrt on every
rank.  The BLACS tester runs with its standard input, which ends in
BLACS_ABORT: every process must be killed (MPI_Abort) and nothing hang.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpijob import mpirun, through

TESTS = Path("/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests")
DATA = Path("/usr/share/scalapack")

# Drivers (LU, QR, least squares, inverse; real and complex) and the PBLAS
# level 2 and 3 testers.  Left out: xdsep, one of whose cases fails its
# residual check with Open MPI alone; and the Cholesky driver xdllt, which
# deadlocks with Open MPI alone in about half its runs on some machines: in
# pdporfs's condition estimate (pdlacon) the two process columns leave the
# iteration after different counts, so one column waits in pdlacon's pdamax
# while the other has gone on to pdpotrs's globchk.
PROGRAMS = ["xdlu", "xzlu", "xdqr", "xdls", "xdinv", "PBLAS/dpb2tst", "PBLAS/dpb3tst"]
ENGINES = ["poll", "thread", "signal"]

@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The input files, where the programs look for them (the current
    directory)."""
    d = tmp_path_factory.mktemp("scalapack")
    for sub in ("", "BLACS", "PBLAS"):
        for f in (DATA / sub).glob("*.dat"):
            shutil.copy(f, d)
    return d


def run(workdir, program, build_dir, env=None, preload=True):
    """A program of the suite on 4 processes, in the directory of its input."""
    return mpirun(build_dir, 4, env=env, preload=preload, program=TESTS / program, cwd=workdir)


def outcome(out):
    """(passed, failed) from a program's summary."""
    drivers = re.findall(r"(\d+) tests completed and (passed|failed) residual checks", out)
    if drivers:
        passed = sum(int(k) for k, what in drivers if what == "passed")
        return passed, sum(int(k) for k, what in drivers if what == "failed")
    pblas = re.findall(r"^\s*\|\s*P\w+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", out, re.M)
    if pblas:
        return sum(int(p) for _, p, _, _ in pblas), sum(int(f) for _, _, f, _ in pblas)
    blacs = re.findall(r"TESTS:\s+\d+ TESTS;\s+(\d+) PASSED,\s+\d+ SKIPPED,\s+(\d+) FAILED", out)
    return sum(int(p) for p, _ in blacs), sum(int(f) for _, f in blacs)


_reference = {}


def reference(build_dir, workdir, program):
    if program not in _reference:
        r = run(workdir, program, build_dir, preload=False)
        assert r.returncode == 0, r.stdout + r.stderr
        passed, failed = outcome(r.stdout)
        assert passed > 0 and failed == 0, r.stdout
        _reference[program] = passed
    return _reference[program]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("program", PROGRAMS)
def test_scalapack_program(build_dir, workdir, program, engine):
    want = reference(build_dir, workdir, program)
    r = run(workdir, program, build_dir, {"CADRT_ENGINE": engine, "CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert outcome(r.stdout) == (want, 0), r.stdout[-3000:]
    counts = through(r.stderr)
    assert len(counts) == 4 and all(c > 0 for c, _ in counts), r.stderr[-3000:]


def test_blacs_tester_through_cadrt(build_dir, workdir, tmp_path):
    """The BLACS tester without its final BLACS_ABORT test (the input's
    AUX line off), so that it finishes and libcadmpi counts its calls."""
    for f in workdir.iterdir():
        shutil.copy(f, tmp_path)
    bt = (tmp_path / "bt.dat").read_text()
    (tmp_path / "bt.dat").write_text(re.sub(r"'T'(\s+Run AUX\?)", r"'F'\1", bt))
    want = outcome(run(tmp_path, "xCbtest", build_dir, preload=False).stdout)
    assert want[0] > 0 and want[1] == 0
    r = run(tmp_path, "xCbtest", build_dir, {"CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert outcome(r.stdout) == want, r.stdout[-3000:]
    counts = through(r.stderr)
    assert len(counts) == 4 and all(c > 0 for c, _ in counts), r.stderr[-3000:]


@pytest.mark.parametrize("engine", ENGINES)
def test_blacs_tester_ends_in_blacs_abort(build_dir, workdir, engine):
    """The standard input: every test passes, then BLACS_ABORT kills the
    job through MPI_Abort, with cadrt's shared memory in use."""
    r = run(workdir, "xCbtest", build_dir, {"CADRT_ENGINE": engine})
    # (Open MPI's own "MPI_ABORT was invoked" notice is sometimes lost when
    # several processes abort at once: its show_help fails to unpack.)
    assert r.returncode != 0
    assert "all processes should be killed" in r.stdout, r.stdout[-3000:]
    passed, failed = outcome(r.stdout)
    assert passed > 10000 and failed == 0, r.stdout[-3000:]
    # No process of the job outlives it.
    left = subprocess.run(["pgrep", "-f", str(TESTS / "xCbtest")], capture_output=True, text=True).stdout
    assert not left.strip(), left
