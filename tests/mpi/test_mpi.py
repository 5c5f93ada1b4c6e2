"""libcadmpi.so under Open MPI's mpirun: an unmodified MPI program
(tests/mpi/mpi_check.c) gets byte-identical results from cadrt and from
Open MPI's own collectives (called through PMPI_ in the same run), for
every collective, several sizes and roots, in place, blocking and not,
on the world, a dup and split halves, with point-to-point requests mixed
into every Wait/Test family -- and the calls libcadmpi does not take fall
through to MPI with the right results."""

import re
import subprocess

import pytest
from pathlib import Path

from mpijob import MPIRUN, clean_env, mpirun, through
from std_algorithms import ALGORITHMS, collective_of


def test_open_mpi_alone(build_dir):
    r = mpirun(build_dir, 2, "--quick", preload=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout


def test_signal_handler_does_not_allocate_under_mpi(build_dir):
    """libcadmpi.so under the signal engine with every transfer
    interrupting, and libcad_nomalloc.so (tests/rt/nomalloc.c) preloaded
    after it: no allocator call in any signal handler while mpi_check runs
    every collective, mixed with point-to-point traffic."""
    lib = build_dir / "lib"
    r = mpirun(build_dir, 3, "--quick", preload=False,
               env={"CADRT_ENGINE": "signal", "CADRT_KICK_MIN": "0",
                    "LD_PRELOAD": f"{lib / 'libcadmpi.so'}:{lib / 'libcad_nomalloc.so'}"})
    assert "called in a signal handler" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    runs = [int(n) for n in re.findall(r"cad_nomalloc: pid \d+: (\d+) signal handler runs", r.stderr)]
    assert len(runs) == 3 and all(runs), r.stderr


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_same_results_as_open_mpi(build_dir, engine, n):
    r = mpirun(build_dir, n, "--quick", env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    counts = through(r.stderr)
    assert len(counts) == n, r.stderr
    # Everything but the planted fall-through went through cadrt: a user
    # op.  (Derived datatypes in the collectives that move data, and
    # alltoall in place, go through cadrt too.)
    for cadrt, mpi in counts:
        assert cadrt > 600 and mpi == 1, r.stderr


@pytest.mark.parametrize("n", [2, 5])
def test_full_sweep(build_dir, n):
    r = mpirun(build_dir, n, env={"CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    counts = through(r.stderr)
    assert len(counts) == n and all(c > 0 for c, _ in counts), r.stderr


def test_fallthrough_reasons_are_told(build_dir):
    r = mpirun(build_dir, 2, "--quick", env={"CADRT_VERBOSE": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    # Each says what: cadrt's own message, or the argument libcadmpi declined.
    assert "MPI_Ialltoall left to MPI" not in r.stderr  # (in place too)
    assert "MPI_Iallreduce left to MPI: a user-defined MPI_Op (MPI_Op_create)" in r.stderr
    assert "MPI_Bcast left to MPI" not in r.stderr and "MPIX_Bcast_init left to MPI" not in r.stderr
    # Fortran's INTEGER, REAL, DOUBLE PRECISION, 2INTEGER and MPI_AINT are
    # reduced by cadrt (mpi_check compares them with Open MPI's).
    assert "is not a type cadrt reduces" not in r.stderr
    assert "without a reason" not in r.stderr


def test_mixed_datatypes_open_mpi_alone(build_dir):
    r = mpirun(build_dir, 3, "--datatypes", preload=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: datatypes ok" in r.stdout


MIXED = [("poll", 3, None), ("thread", 3, None), ("signal", 3, None), ("poll", 4, None), ("thread", 2, None),
         ("signal", 3, 1), ("poll", 4, 2)]


@pytest.mark.parametrize("engine,n,k", MIXED, ids=[f"{e}-P{n}" + (f"-k{k}" if k else "") for e, n, k in MIXED])
def test_ranks_that_describe_the_same_data_differently(build_dir, engine, n, k):
    """bcast, gather, scatter, allgather and alltoall where each rank
    describes the same ints its own way (MPI_INT; a contiguous, a strided
    and a reordering indexed type of 4 MPI_INT), blocking, non-blocking and
    persistent, in place or not, and MPI_SHORT_INT (6 bytes in 8) against a
    resized copy of it: Open MPI's results, gaps untouched, and every call
    through cadrt on every rank (a rank leaving its call to MPI while the
    others went to cadrt would hang: the derived types used to).  But a
    derived datatype in a reduction is left to MPI, which refuses it."""
    env = {"CADRT_ENGINE": engine, "CADMPI_STATS": "1", "CADRT_VERBOSE": "1"}
    if k:
        env["CADRT_RANKS_PER_NODE"] = str(k)
    r = mpirun(build_dir, n, "--datatypes", env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: datatypes ok" in r.stdout, r.stdout + r.stderr
    counts = through(r.stderr)
    assert len(counts) == n and all(c > 100 and mpi == 1 for c, mpi in counts), r.stderr
    assert r.stderr.count("MPI_Allreduce left to MPI: a derived datatype in a reduction") == n, r.stderr


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
def test_failed_persistent_collective(build_dir, engine):
    """A persistent broadcast whose count differs on rank 1, started twice:
    rank 1's MPI_Wait gives MPI_ERR_OTHER, its MPI_Waitall MPI_ERR_IN_STATUS
    with MPI_ERR_OTHER in the status; the handle stays; nobody hangs; then
    the same as MPI_Ibcast (completed by MPI_Wait, by MPI_Waitall: the
    handle freed) and MPI_Bcast; a persistent allreduce works afterwards
    (mpi_check --mismatch)."""
    r = mpirun(build_dir, 3, "--mismatch", env={"CADRT_ENGINE": engine}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: mismatch ok" in r.stdout, r.stdout + r.stderr
    for start in (0, 1):
        assert f"rank 1: start {start}: error as expected" in r.stdout, r.stdout + r.stderr
    for form in ("ibcast + wait", "ibcast + waitall", "bcast"):
        assert f"rank 1: {form}: error as expected" in r.stdout, r.stdout + r.stderr
    assert "cadmpi: MPIX_Bcast_init failed: ranks disagree" in r.stderr, r.stderr


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
def test_persistent_collectives_on_freed_communicators(build_dir, engine):
    """MPIX_Allreduce_init on a dup and MPIX_Bcast_init on a split, both
    communicators freed before the first start: three MPI_Startall /
    MPI_Waitall rounds give Open MPI's results (mpi_check --freed-comm)."""
    r = mpirun(build_dir, 3, "--freed-comm", env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1"}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: freed-comm ok" in r.stdout, r.stdout + r.stderr
    # Both went through cadrt, 3 starts each, on every rank.
    counts = through(r.stderr)
    assert len(counts) == 3 and all(c >= 6 for c, _ in counts), r.stderr


@pytest.mark.parametrize("engine", ["poll", "thread"])
def test_persistent_collectives_left_to_finalize(build_dir, engine):
    """The same, the two persistent requests never freed: MPI_Finalize frees
    them (their cadrt requests and their MPI handles) and returns."""
    r = mpirun(build_dir, 3, "--freed-comm", "--unfreed", env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1"},
               timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: freed-comm ok" in r.stdout and "mpi_check: finalized" in r.stdout, r.stdout + r.stderr
    counts = through(r.stderr)
    assert len(counts) == 3 and all(c >= 6 for c, _ in counts), r.stderr


# mpi_stress (tests/mpi/mpi_stress.c): many collectives in flight at once,
# drawn at random from a seed, completed by each rank in an order of its
# own, against Open MPI's results.  Open MPI 4.1's AVX ops (op/avx) add 8-
# and 16-bit integers with saturation (open-mpi/ompi#8045, "wontfix"): an
# unsigned char sum that overflows gives 255 there and wraps in cadrt, as
# in C and in Open MPI's own base ops, so the reference runs without them
# (seed 3 at 4 ranks draws such sums).
STRESS = [("poll", 2, 1), ("thread", 3, 2), ("signal", 4, 3), ("poll", 5, 4), ("thread", 8, 5),
          ("signal", 3, 6), ("thread", 4, 3)]


@pytest.mark.parametrize("engine,n,seed", STRESS, ids=[f"{e}-P{n}-seed{s}" for e, n, s in STRESS])
def test_many_collectives_in_flight(build_dir, engine, n, seed):
    r = mpirun(build_dir, n, "--seed", str(seed), program="mpi_stress",
               env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1", "OMPI_MCA_op": "^avx"}, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_stress: ok" in r.stdout, r.stdout + r.stderr
    counts = through(r.stderr)
    assert len(counts) == n, r.stderr
    # Nothing is left to MPI (in-place alltoalls included).
    for cadrt, mpi in counts:
        assert cadrt > 400 and mpi == 0, r.stderr


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
def test_many_collectives_in_flight_across_nodes(build_dir, engine):
    """The same with nodes of 2 ranks: MPI point-to-point between them."""
    r = mpirun(build_dir, 4, "--seed", "7", program="mpi_stress",
               env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1", "OMPI_MCA_op": "^avx", "CADRT_RANKS_PER_NODE": "2"},
               timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_stress: ok" in r.stdout, r.stdout + r.stderr
    counts = through(r.stderr)
    assert len(counts) == 4 and all(cadrt > 400 and mpi == 0 for cadrt, mpi in counts), r.stderr


def test_stress_program_against_open_mpi_alone(build_dir):
    """mpi_stress without libcadmpi: Open MPI against itself, the test's
    own check."""
    r = mpirun(build_dir, 3, "--seed", "1", "--rounds", "60", program="mpi_stress", preload=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_stress: ok" in r.stdout


def test_stress_program_usage(build_dir):
    r = mpirun(build_dir, 1, "--bogus", program="mpi_stress", preload=False)
    assert r.returncode != 0 and "usage: mpi_stress" in r.stderr


def test_disabled(build_dir):
    r = mpirun(build_dir, 2, "--quick", env={"CADMPI": "0", "CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert not through(r.stderr)
    assert "left to MPI" not in r.stderr  # turned off on purpose: nothing to tell


def test_cadrt_that_cannot_start_is_told(build_dir):
    """libcadmpi preloaded, but cadrt cannot start (its algorithm library is
    missing): every collective is Open MPI's, with the right results, and
    rank 0 says so once without being asked (an A/B run of copied libraries
    once measured Open MPI against itself this way, silently)."""
    r = mpirun(build_dir, 2, "--quick", env={"CADRT_LIBRARY": "/nonexistent/cad-std.cadlib", "CADMPI_STATS": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    assert r.stderr.count("cadmpi: collectives are left to MPI: loading the algorithm library") == 1, r.stderr
    assert not through(r.stderr)


@pytest.mark.parametrize("setting", [("CADRT_BULK_MAX", "lots"), ("CADMPI", "0")], ids=["bad-setting", "off"])
def test_one_rank_that_differs_leaves_all_to_mpi(build_dir, setting):
    """Rank 1 alone has a cadrt setting that fails its cadrt_init (an error
    before barriers the other ranks wait in would hang the job), or alone
    turns libcadmpi off (it never calls the collective cadrt_init_mpi the
    others wait in): every rank leaves its
    collectives to MPI, with the right results, and the failing rank says
    why, rank 0 where."""
    exe, lib = build_dir / "bin" / "mpi_check", build_dir / "lib" / "libcadmpi.so"
    ctx = lambda n, *extra: ["-n", str(n), "-x", f"LD_PRELOAD={lib}", "-x", "CADMPI_STATS=1", *extra, str(exe),
                             "--quick"]
    cmd = [*MPIRUN, *ctx(1), ":", *ctx(1, "-x", f"{setting[0]}={setting[1]}"), ":", *ctx(1)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    assert not through(r.stderr)
    if setting[0] == "CADRT_BULK_MAX":
        assert "cadmpi: rank 1: cadrt did not start: CADRT_BULK_MAX=lots: not a number of bytes" in r.stderr, r.stderr
        assert r.stderr.count("cadmpi: collectives are left to MPI: cadrt did not start on rank 1") == 1, r.stderr
    else:
        assert "left to MPI" not in r.stderr, r.stderr


DIFFERS = [("CADRT_CMA", "0"), ("CADRT_BULK", "0"), ("CADRT_SPLIT", "0"), ("CADRT_ENGINE", "signal"),
           ("CADRT_BULK_MAX", "1000")]


@pytest.mark.parametrize("setting", DIFFERS, ids=[f"{k}={v}" for k, v in DIFFERS])
def test_one_rank_with_its_own_transport_setting(build_dir, setting):
    """Rank 1 of three alone turns off the single copy, the lanes or the
    split, or runs another engine: settings a rank may hold on its own.
    Every collective still runs through cadrt, with the right results
    (a rank with CADRT_CMA=0 still meets both of the CMA probe's barriers).
    One rank's CADRT_CMA=0 turns the single copy off for the node, and
    rank 0 says why."""
    exe, lib = build_dir / "bin" / "mpi_check", build_dir / "lib" / "libcadmpi.so"
    ctx = lambda *extra: ["-n", "1", "-x", f"LD_PRELOAD={lib}", "-x", "CADMPI_STATS=1", "-x", "CADRT_VERBOSE=1",
                          *extra, str(exe), "--quick"]
    cmd = [*MPIRUN, *ctx(), ":", *ctx("-x", f"{setting[0]}={setting[1]}"), ":", *ctx()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mpi_check: ok" in r.stdout
    counts = through(r.stderr)
    assert len(counts) == 3 and all(t > 0 for t, _ in counts), r.stderr
    assert "did not start" not in r.stderr and "collectives are left to MPI" not in r.stderr, r.stderr
    if setting[0] == "CADRT_CMA":
        assert "cadrt: notice: CADRT_CMA=0 on another rank of this node" in r.stderr, r.stderr
        single = [int(n) for n in re.findall(r"large receives: \d+ through lanes, (\d+) by a single copy", r.stderr)]
        assert len(single) == 3 and not any(single), r.stderr


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
    counts = through(r.stderr)
    assert len(counts) == n and all(cadrt > 300 for cadrt, _ in counts), r.stderr


def forced_rounds():
    """The standard algorithms in rounds of at most one per collective
    (the i-th of each collective in round i): a job forces a round's at
    once, each collective's calls going to its own, as a job that forced
    it alone would."""
    by_coll = {}
    for alg in ALGORITHMS:
        by_coll.setdefault(collective_of(alg), []).append(alg.stem)
    return [{coll: algs[i] for coll, algs in by_coll.items() if i < len(algs)}
            for i in range(max(map(len, by_coll.values())))]


_across_jobs = {}


def across_job(build_dir, alg):
    """The job of alg's round, run once: (the round, the job), which
    names the algorithm each communicator's new calls selected
    (CADRT_EXPLAIN) and each call left to MPI, with why (CADRT_VERBOSE)."""
    i, forced = next((i, r) for i, r in enumerate(forced_rounds()) if alg.stem in r.values())
    if i not in _across_jobs:
        env = {"CADRT_RANKS_PER_NODE": "2", "CADMPI_STATS": "1", "CADRT_EXPLAIN": "1", "CADRT_VERBOSE": "1"}
        env.update({f"CADRT_ALGORITHM_{coll.upper()}": name for coll, name in forced.items()})
        _across_jobs[i] = mpirun(build_dir, 4, "--quick", env=env)
    return forced, _across_jobs[i]


def selected(stderr, coll):
    """(algorithm, why) of each selection CADRT_EXPLAIN=1 reports for coll
    (rank 0 of a communicator, at each new call)."""
    return re.findall(rf"^cadrt: rank 0 of communicator \d+: {coll} .*B\): (\w+), (.*)$", stderr, re.M)


def left_to_mpi(stderr, coll):
    """Why each call of coll (blocking, non-blocking, persistent) was left
    to MPI (CADRT_VERBOSE=1), on every rank, but mpi_check's planted user
    op."""
    names = {f"MPI_{coll.capitalize()}", f"MPI_I{coll}", f"MPIX_{coll.capitalize()}_init"}
    return [why for fn, why in re.findall(r"^cadmpi: (\S+) left to MPI: (.*)$", stderr, re.M)
            if fn in names and why != "a user-defined MPI_Op (MPI_Op_create): MPI runs it"]


def within_a_node(alg):
    """Whether alg runs on one node only (`requires ndomains(node) == 1`)."""
    return re.search(r"^\s*requires\s+ndomains\(node\)\s*==\s*1\s*$", alg.read_text(), re.M) is not None


@pytest.mark.parametrize("alg", ALGORITHMS, ids=lambda p: p.stem)
def test_across_nodes_every_algorithm(build_dir, alg):
    """Each standard algorithm forced, 4 ranks on two nodes of 2 (the
    hierarchical ones see the two nodes); with the algorithms of other
    collectives forced in the same job (forced_rounds).  The forced one
    is what ran: every selection of its collective names it, and no call
    of that collective fell through to Open MPI.  One that runs within a node only applies to none of these
    calls: all of them are left to MPI, saying so."""
    forced, r = across_job(build_dir, alg)
    coll = collective_of(alg)
    assert forced[coll] == alg.stem
    assert r.returncode == 0, f"forced: {forced}\n{r.stdout}{r.stderr}"
    assert "mpi_check: ok" in r.stdout
    counts = through(r.stderr)
    assert len(counts) == 4 and all(c > 300 for c, _ in counts), r.stderr
    setting = f"CADRT_ALGORITHM_{coll.upper()}={alg.stem}"
    chosen, left = selected(r.stderr, coll), left_to_mpi(r.stderr, coll)
    if within_a_node(alg):
        assert not chosen, chosen
        assert left and all(w.startswith(f"{setting} does not apply to {coll} ") and
                            w.endswith("the requirement ndomains(node) == 1 does not hold") for w in left), left
    else:
        assert chosen and set(chosen) == {(alg.stem, setting)}, r.stderr
        assert not left, left


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


# Fortran programs: Open MPI's Fortran bindings call PMPI_ directly, so
# libcadmpi takes MPI_INIT, MPI_FINALIZE, the collectives (persistent ones
# too, with MPI_START and MPI_STARTALL) and the MPI_WAIT family under their
# Fortran names: gfortran's for mpif.h
# (tests/mpi/fcheck.f90, against Open MPI's PMPI_ in the same run) and
# Open MPI's ompi_*_f for mpi_f08 (tests/mpi/fcheck08.f90, against results
# it computes), each built here with mpif90.
FORTRAN = {
    # program: (compiler flags, collectives each rank makes)
    "fcheck": (["-fallow-argument-mismatch"], 41),
    "fcheck08": ([], 39),
}


@pytest.fixture(scope="module")
def fortran(tmp_path_factory):
    out = tmp_path_factory.mktemp("fortran")
    built = {}
    for name, (flags, _) in FORTRAN.items():
        src = Path(__file__).with_name(name + ".f90")
        r = subprocess.run(["mpif90", "-O1", *flags, "-o", str(out / name), str(src)],
                           capture_output=True, text=True, cwd=out)
        assert r.returncode == 0, r.stderr
        built[name] = out / name
    return built


@pytest.mark.parametrize("name", FORTRAN)
def test_fortran_program_alone(build_dir, fortran, name):
    r = mpirun(build_dir, 2, preload=False, program=fortran[name])
    assert r.returncode == 0 and f"{name}: ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("name", FORTRAN)
@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
@pytest.mark.parametrize("n", [2, 3])
def test_fortran_program_through_cadrt(build_dir, fortran, name, engine, n):
    r = mpirun(build_dir, n, env={"CADRT_ENGINE": engine, "CADMPI_STATS": "1"}, program=fortran[name])
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{name}: ok" in r.stdout, r.stdout + r.stderr
    # Every collective of the program, blocking, non-blocking and every
    # start of a persistent one, on every rank, went through cadrt (before
    # the Fortran names were taken: none; before the non-blocking ones and
    # mpi_f08's were: 16 and none; before MPIX_*_INIT and MPI_START were:
    # 33 and 29, and the persistent ones were Open MPI's).
    assert through(r.stderr) == [(FORTRAN[name][1], 0)] * n, r.stderr


@pytest.mark.parametrize("mode", ["wait-invalid", "start-invalid"])
def test_fortran_invalid_request_handle(build_dir, fortran, mode):
    # MPI_WAIT (MPI_START) on a Fortran handle that names no request: MPI's
    # error (fatal here), not a crash (Open MPI alone follows a null
    # pointer).
    # MPI_ERRORS_ARE_FATAL aborts the job with the error code as its exit
    # status: Open MPI's MPI_ERR_REQUEST is 7 (mpi.h); alone it dies with
    # SIGSEGV (139).  The "MPI_ERR_REQUEST: invalid request" text is not
    # asserted: the ranks send it to mpirun as a help message while they
    # abort, and mpirun loses it now and then ("ORTE_ERROR_LOG: Data unpack
    # would read past end of buffer in show_help.c", about 1 run in 6 here).
    r = mpirun(build_dir, 2, mode, program=fortran["fcheck"], timeout=120)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "Segmentation fault" not in r.stdout + r.stderr and "returned" not in r.stdout
