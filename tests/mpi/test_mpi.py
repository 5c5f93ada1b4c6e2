"""libcadmpi.so under Open MPI's mpirun: an unmodified MPI program
(tests/mpi/mpi_check.c) gets byte-identical results from cadrt and from
Open MPI's own collectives (called through PMPI_ in the same run), for
every collective, several sizes and roots, in place, blocking and not,
on the world, a dup and split halves, with point-to-point requests mixed
into every Wait/Test family -- and the calls libcadmpi does not take fall
through to MPI with the right results."""

import os
import re
import subprocess

import pytest

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def mpirun(build_dir, n, *args, env=None, preload=True, timeout=300):
    cmd = [*MPIRUN, "-n", str(n)]
    for k, v in (env or {}).items():
        cmd += ["-x", f"{k}={v}"]
    if preload:
        cmd += ["-x", f"LD_PRELOAD={build_dir / 'lib' / 'libcadmpi.so'}"]
    cmd += [str(build_dir / "bin" / "mpi_check"), *args]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CADRT_", "CADMPI", "LD_PRELOAD"))}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean)


def through(stderr):
    counts = [tuple(map(int, m)) for m in re.findall(r"(\d+) collectives through cadrt, (\d+) left to MPI", stderr)]
    return counts


def test_open_mpi_alone(build_dir):
    r = mpirun(build_dir, 2, "--quick", preload=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_same_results_as_open_mpi(build_dir, engine, n):
    r = mpirun(build_dir, n, "--quick", env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    counts = through(r.stderr)
    assert len(counts) == n, r.stderr
    # Everything but the planted fall-throughs (alltoall in place, a
    # derived datatype, a user op) went through cadrt.
    for cadrt, mpi in counts:
        assert cadrt > 300 and 2 <= mpi <= 30, r.stderr


@pytest.mark.parametrize("n", [2, 5])
def test_full_sweep(build_dir, n):
    r = mpirun(build_dir, n, env={"CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(c > 0 for c, _ in through(r.stderr)), r.stderr


def test_fallthrough_reasons_are_told(build_dir):
    r = mpirun(build_dir, 2, "--quick", env={"CADRT_VERBOSE": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MPI_Ialltoall left to MPI: cadrt_ialltoall: CADRT_IN_PLACE" in r.stderr
    assert "MPI_Iallreduce left to MPI: a datatype, op or communicator" in r.stderr


def test_disabled(build_dir):
    r = mpirun(build_dir, 2, "--quick", env={"CADMPI": "0", "CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert not through(r.stderr)


def test_thread_multiple_is_left_to_mpi(build_dir):
    r = mpirun(build_dir, 2, "--quick", "--thread-multiple", env={"CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert not through(r.stderr)
