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
from pathlib import Path

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def mpirun(build_dir, n, *args, env=None, preload=True, timeout=300, program="mpi_check"):
    cmd = [*MPIRUN, "-n", str(n)]
    for k, v in (env or {}).items():
        cmd += ["-x", f"{k}={v}"]
    if preload:
        cmd += ["-x", f"LD_PRELOAD={build_dir / 'lib' / 'libcadmpi.so'}"]
    cmd += [str(build_dir / "bin" / program), *args]
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


# Across nodes: CADRT_RANKS_PER_NODE=k makes this machine nodes of k ranks;
# ranks of one node share memory, the others talk by MPI point-to-point
# (cadrt_net.h), eager and rendezvous (70000 elements) both.
ACROSS = [(4, 2), (3, 2), (3, 1), (5, 2)]


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
@pytest.mark.parametrize("n,k", ACROSS, ids=[f"P{n}-k{k}" for n, k in ACROSS])
def test_across_nodes_same_results_as_open_mpi(build_dir, engine, n, k):
    r = mpirun(build_dir, n, "--quick",
               env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1", "CADRT_RANKS_PER_NODE": str(k), "CADRT_VERBOSE": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    on_node = re.findall(r"rank (\d+): (\d+) of the (\d+) ranks are on this node", r.stderr)
    assert sorted(int(q) for q, _, _ in on_node) == list(range(n)), r.stderr
    for q, local, total in on_node:
        assert int(local) == min(k, n - int(q) // k * k) and int(total) == n, r.stderr
    for cadrt, mpi in through(r.stderr):
        assert cadrt > 300, r.stderr


ALGORITHMS = sorted(p for p in (Path(__file__).resolve().parents[2] / "algorithms").glob("*.cad"))


@pytest.mark.parametrize("alg", ALGORITHMS, ids=lambda p: p.stem)
def test_across_nodes_every_algorithm(build_dir, alg):
    """Each standard algorithm forced, 4 ranks on two nodes of 2 (the
    hierarchical ones see the two nodes)."""
    coll = re.search(r"^algorithm\s+\w+\s*:\s*(\w+)", alg.read_text(), re.M).group(1)
    r = mpirun(build_dir, 4, "--quick",
               env={"CADRT_RANKS_PER_NODE": "2", f"CADRT_ALGORITHM_{coll.upper()}": alg.stem, "CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    assert all(c > 300 for c, _ in through(r.stderr)), r.stderr


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
@pytest.mark.parametrize("coll", ["bcast", "alltoall"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_failed_collective_across_nodes(build_dir, engine, coll, k):
    """A mismatched count (rank 1) with ranks on other nodes: rank 1 gets an
    error, nobody hangs, a rank that completes has the right data, and the
    communicator works afterwards (tests/mpi/mpi_fail.c)."""
    r = mpirun(build_dir, 3, coll, preload=False, program="mpi_fail", timeout=120,
               env={"CADRT_ENGINE": engine, "CADRT_RANKS_PER_NODE": str(k), "CADRT_ALGORITHM_BCAST": "bcast_binomial"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_fail: ok" in r.stdout
    assert "rank 1: error as expected" in r.stdout


def test_kernel_engine_is_refused_across_nodes(build_dir):
    r = mpirun(build_dir, 2, "bcast", preload=False, program="mpi_fail", timeout=120,
               env={"CADRT_ENGINE": "kernel", "CADRT_RANKS_PER_NODE": "1"})
    assert r.returncode != 0
    assert "the kernel engine runs jobs on one node" in r.stderr, r.stderr
