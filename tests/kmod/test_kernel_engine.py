"""cadrt's kernel engine on cad.ko, inside the VM: every standard algorithm
for N = 2, 3, 4, 8 ranks under cadrun with CADRT_ENGINE=kernel, the modes
(persistent, outstanding, in place, split), hand-built CADs, mismatched
programs, ranks that differ on the engine, a rank killed mid-collective,
many collectives in flight at once drawn at random (rt_stress), ranks
whose memory may not be pinned (ulimit -l);
then the module's counters are back to zero, it unloads, and the kernel
log is clean.

All of it runs in one boot (software emulation boots in seconds but runs
programs slowly); each case prints its own markers, so a failure names
its command and shows its output."""

import re
import subprocess
from pathlib import Path

import pytest

from std_algorithms import ALGORITHMS, algorithm_result, every_algorithm
from vm import COUNT_AND_UNLOAD, DEFER_MODES, KERNEL_DEBUG, cad_vm, run_cases, scaled, with_defer

ROOT = Path(__file__).resolve().parents[2]
RANKS = [2, 3, 4, 8]
MODES = {
    "persistent": "--persistent --iters 3",
    "outstanding": "--outstanding 4",
    "inplace": "--inplace",
    "split": "--split",
    "all": "--persistent --outstanding 3 --inplace",
    # Completion by cadrt_test calls alone: the kernel engine answers those
    # of a running request from the status page, without entering cadrt.
    "test": "--test --outstanding 3",
    "test-persistent": "--test --persistent --iters 3 --outstanding 2",
    # Each call three times in a row with the same buffers, fresh contents:
    # cadrt starts the request of the call before as it was (no selection,
    # no binding), and the module's loaded program for those addresses.
    "repeat": "--repeat 3",
    "repeat-inplace": "--repeat 3 --inplace",
}
MISMATCH = ["bcast", "allreduce", "gather", "alltoall"]
# The modes and the settings of defer run on 2 and 5 ranks: a pair, and
# more ranks than vCPUs on a size that is no power of two.  3 ranks would
# add no shape that 5 lacks; every algorithm still runs on 3 in the
# matrix, at every root.
MODE_RANKS = (2, 5)
STRESS_RANKS = (2, 3, 5, 8)


def cases():
    out = {}
    # Every algorithm in one job per P, each forced on a communicator of its
    # own (rt_check --algorithms): a job's start would be most of the
    # matrix's time with one job per algorithm.
    for p in RANKS:
        out[f"matrix-{p}"] = f"cadrun -n {p} --timeout {scaled(900)} rt_check --algorithms {every_algorithm()}"
    # The modes and the settings of defer at 2 roots (0 and P - 1): every
    # root of every algorithm is the matrix's, and all 5 roots would double
    # these cases' time.
    for name, args in MODES.items():
        for p in MODE_RANKS:
            out[f"mode-{name}-{p}"] = (
                f"cadrun -n {p} --timeout {scaled(120)} rt_check --coll all --sizes 0,1,7,1000,70000 --roots 2 {args}")
    # Each setting of cad.ko's defer; transfers beyond a slice of a pass
    # (SLICE_BYTES, 1 MiB; 300 000 elements are 1.2 MB of int32) on 2
    # ranks, where they cost least.
    for mode, (defer, split) in DEFER_MODES.items():
        for p in MODE_RANKS:
            sizes = "0,1,7,1000,70000" + (",300000" if p == 2 else "")
            out[f"defer{mode}-{p}"] = with_defer(
                defer, f"cadrun -n {p} --timeout {scaled(120)} rt_check --coll all --sizes {sizes} "
                       "--roots 2 --persistent --outstanding 3", split)
    for p in (2, 3, 5):
        out[f"cad-{p}"] = f"cadrun -n {p} --timeout {scaled(60)} rt_cad"
    for coll in MISMATCH:
        out[f"mismatch-{coll}"] = f"cadrun -n 3 --timeout {scaled(60)} rt_check --mismatch --coll {coll}"
    for p in (2, 3):
        out[f"mismatch-op-{p}"] = (f"cadrun -n {p} --timeout {scaled(60)} rt_check --mismatch --mismatch-op "
                                   "--start-late 1 "
                                   "--coll allreduce")
    # The lanes' measurement at cadrt_init: not made for the kernel engine,
    # which uses no lane (and made for a user-space engine in the same VM).
    for engine in ("kernel", "poll"):
        out[f"measure-{engine}"] = (f"CADRT_ENGINE={engine} CADRT_VERBOSE=1 cadrun -n 2 --timeout {scaled(60)} "
                                    "rt_check "
                                    "--coll alltoall --sizes 100000")
    # Ranks that differ: rank 1 runs the poll engine, the others the kernel
    # engine chosen by auto (they go to a user-space one) or asked for by
    # name (every rank fails, clearly); neither may hang.
    rank1_poll = 'if [ "$CADRT_RANK" = 1 ]; then export CADRT_ENGINE=poll; fi; exec rt_check --coll all --sizes 1,70000'
    out["differ-auto"] = f"unset CADRT_ENGINE; CADRT_VERBOSE=1 cadrun -n 3 --timeout {scaled(60)} sh -c '{rank1_poll}'"
    out["differ-asked"] = f"cadrun -n 3 --timeout {scaled(60)} sh -c '{rank1_poll}'"
    # A child forked by each rank with a collective in flight: every call
    # fails in it (it shares its parent's /dev/cad file and status page);
    # its parent completes the collective.
    out["fork"] = f"cadrun -n 3 --timeout {scaled(60)} rt_check --fork --coll all --sizes 1,70000"
    # Two jobs at once, each its own group of the module (its segment's
    # random key): neither sees the other's ranks or buffers.
    job = "cadrun -n {} --timeout " + str(scaled(120)) + " rt_check --coll all --sizes 1,70000 --outstanding 3"
    out["two-jobs"] = (f"{job.format(2)} > /tmp/job2.out 2>&1 & a=$!; {job.format(3)} > /tmp/job3.out 2>&1; b=$?; "
                       "wait $a; a=$?; cat /tmp/job2.out /tmp/job3.out; echo \"@@JOBS $a $b\"; [ $a = 0 ] && [ $b = 0 ]")
    out["die"] = f"cadrun -n 4 --timeout {scaled(60)} rt_check --die 2"
    out["die-test"] = f"cadrun -n 4 --timeout {scaled(60)} rt_check --die 2 --test"
    out["leave"] = f"cadrun -n 4 --timeout {scaled(60)} rt_check --leave 2"
    out["leave-hard"] = f"cadrun -n 4 --timeout {scaled(60)} rt_check --leave-hard 2"
    out["leave-exec"] = f"cadrun -n 4 --timeout {scaled(60)} rt_check --leave-exec 2"
    # Many collectives in flight at once, drawn at random (rt_stress): on
    # every communicator shape, in every form, completed in each rank's own
    # order; under each setting of defer too.
    for i, p in enumerate(STRESS_RANKS):
        out[f"stress-{p}"] = f"cadrun -n {p} --timeout {scaled(300)} rt_stress --seed {i + 1}"
    for i, (mode, (defer, split)) in enumerate(DEFER_MODES.items()):
        out[f"stress-defer{mode}"] = with_defer(
            defer, f"cadrun -n 3 --timeout {scaled(300)} rt_stress --seed {11 + i} --rounds 80", split)
    # The proof gate (tests/rt/test_proof.py): a library whose rules push
    # algorithms beyond what their proofs cover; only what is proven runs.
    for p in (1, 4):
        out[f"proof-{p}"] = f"CADRT_LIBRARY=/proof.cadlib cadrun -n {p} --timeout {scaled(120)} rt_proof"
    out["proof-strict-4"] = (f"CADRT_PROOF=strict CADRT_LIBRARY=/proof.cadlib cadrun -n 4 --timeout {scaled(120)} "
                             "rt_proof")
    # Memory the ranks may not pin (uid 1000, no CAP_IPC_LOCK, ulimit -l
    # 64): cad.ko copies their buffers through kernel memory, invisibly to
    # the peers, and the collectives come out right, waited for and tested.
    bounce = (f"export CADRT_VERBOSE=1 CADRT_STATS=json && cadrun -n 2 --timeout {scaled(120)} rt_check --coll all "
              f"--sizes 1,1000,70000 --inplace --persistent --iters 2 && cadrun -n 2 --timeout {scaled(120)} rt_check "
              "--coll all --sizes 70000 --test --outstanding 3")
    out["memlock"] = f"chmod 1777 /tmp && su cad -s /bin/sh -c 'ulimit -l 64 && {bounce}'"
    out["many-persistent"] = f"cadrun -n 3 --timeout {scaled(120)} rt_check --many-persistent 700"
    out["many-limit"] = f"cadrun -n 3 --timeout {scaled(60)} rt_check --many 600"
    return out


@pytest.fixture(scope="module")
def vm_run(build_dir, tmp_path_factory):
    # 1 GiB: rt_stress at 8 ranks peaks near 60 MB a rank (its buffers,
    # the references it checks against, and the copies an alltoall in
    # place keeps), 470 MB in all, which the default 512 MB did not hold
    # beside the kernel and the initramfs.
    vm = cad_vm(build_dir, append=KERNEL_DEBUG, memory_mb=1024)
    for program in ("cadrun", "rt_check", "rt_cad", "rt_stress", "rt_proof"):
        vm.add_program(build_dir / "bin" / program)
    lib = tmp_path_factory.mktemp("proof") / "proof.cadlib"
    subprocess.run([str(build_dir / "bin" / "cadc"), "build", str(ROOT / "tests" / "rt" / "proof_lib"), "-o", str(lib)],
                   check=True, capture_output=True, timeout=300)
    vm.add_file(lib, "/proof.cadlib")
    # (a user without privileges, for the memlock case)
    vm.add_text("/etc/passwd", "root:x:0:0::/:/bin/sh\ncad:x:1000:1000::/tmp:/bin/sh\n")
    vm.add_text("/etc/group", "root:x:0:\ncad:x:1000:\n")
    before = "insmod /cad.ko\nexport CADRT_ENGINE=kernel"
    return run_cases(vm, cases(), before=before, after=COUNT_AND_UNLOAD, timeout=1500)


@pytest.mark.parametrize("alg", ALGORITHMS, ids=lambda p: p.stem)
def test_every_algorithm_through_the_kernel_engine(vm_run, alg):
    ran = 0
    for p in RANKS:
        c = vm_run.cases[f"matrix-{p}"]
        result, ran_on = algorithm_result(c.output, alg.stem, f"P={p}: {c.command}")
        if result == "does not apply to this P":  # the algorithm's requires does not hold for P
            continue
        assert result == "ok" and ran_on == "kernel", f"P={p}: {c.command}\n{c.output}"
        ran += 1
    assert ran >= 1


def test_the_matrix_jobs_end_cleanly(vm_run):
    """The matrix's jobs: status 0 after every algorithm (cadrt_finalize
    after 21 communicators, each freed)."""
    for p in RANKS:
        c = vm_run.cases[f"matrix-{p}"]
        assert c.status == 0 and "rt_check: ok" in c.output, f"P={p}: {c.command}\n{c.output}"


@pytest.mark.parametrize("case", [f"stress-{p}" for p in STRESS_RANKS] + [f"stress-defer{m}" for m in DEFER_MODES])
def test_many_collectives_in_flight_through_the_kernel_engine(vm_run, case):
    c = vm_run.cases[case]
    assert c.status == 0 and "rt_stress: ok" in c.output and "engine kernel" in c.output, f"{c.command}\n{c.output}"
    if case.startswith("stress-defer"):
        deferred = int(re.search(r"@@DEFERRED (\d+)", c.output).group(1))
        assert deferred == 0 if case == "stress-defer0" else deferred > 0, c.output


@pytest.mark.parametrize("mode", MODES)
def test_modes_through_the_kernel_engine(vm_run, mode):
    for p in MODE_RANKS:
        c = vm_run.cases[f"mode-{mode}-{p}"]
        assert c.status == 0 and "engine kernel" in c.output, f"{c.command}\n{c.output}"


def test_memory_that_cannot_be_pinned_is_copied_through_the_kernel(vm_run):
    """memlock: two ranks of uid 1000 under ulimit -l 64 run every
    collective (in place, persistent; then completed by cadrt_test) with
    the kernel engine; cad.ko could not pin their buffers and copied them
    through kernel memory, which CADRT_VERBOSE and CADRT_STATS say."""
    c = vm_run.cases["memlock"]
    assert c.status == 0 and c.output.count("rt_check: ok") == 2, f"{c.command}\n{c.output}"
    assert c.output.count("engine kernel") == 2, c.output
    assert re.search(r"cadrt: rank \d+: .* runs unpinned in the kernel: buffer \d+ \(\w+\): pinning \d+ pages "
                     r"\(\d+ KiB\) exceeds the RLIMIT_MEMLOCK of the process; copying through kernel memory instead",
                     c.output), c.output
    bounced = [int(n) for n in re.findall(r'"kernel_bounced":(\d+)', c.output)]
    assert len(bounced) == 4 and all(n > 0 for n in bounced), c.output
    assert re.search(r"cadrt: rank \d+: \d+ programs loaded with buffers cad.ko copies through kernel memory",
                     c.output), c.output


def test_forked_children_do_not_disturb_the_kernel_engine(vm_run):
    c = vm_run.cases["fork"]
    assert c.status == 0 and "engine kernel" in c.output, f"{c.command}\n{c.output}"


def test_two_jobs_at_once_through_the_kernel_engine(vm_run):
    c = vm_run.cases["two-jobs"]
    assert c.status == 0 and "@@JOBS 0 0" in c.output, f"{c.command}\n{c.output}"
    assert c.output.count("rt_check: ok") == 2 and c.output.count("engine kernel") >= 2, c.output


@pytest.mark.parametrize("mode", DEFER_MODES)
def test_deferred_copies_through_the_kernel_engine(vm_run, mode):
    for p in MODE_RANKS:
        c = vm_run.cases[f"defer{mode}-{p}"]
        assert c.status == 0 and "engine kernel" in c.output, f"{c.command}\n{c.output}"

    def counts(name):
        return [int(re.search(rf"@@{name} (\d+)", vm_run.cases[f"defer{mode}-{p}"].output).group(1))
                for p in MODE_RANKS]
    deferred, split = counts("DEFERRED"), counts("SPLIT")
    print(f"deferred transfers, P = {MODE_RANKS}: {deferred}; split: {split}")
    assert sum(deferred) > 0 if mode != "0" else sum(deferred) == 0
    if mode == "split":
        assert sum(split) > 0
    elif mode != "2":
        assert sum(split) == 0


def test_the_kernel_engine_does_not_measure_the_lanes(vm_run):
    """The pair measurement of the bulk lanes at cadrt_init (a few hundred
    microseconds, up to 60 ms when a partner is late) is made for the
    user-space engines only: the kernel engine copies in cad.ko."""
    kernel, poll = vm_run.cases["measure-kernel"], vm_run.cases["measure-poll"]
    assert kernel.status == 0 and "engine kernel" in kernel.output, kernel.output
    assert "lanes measured" not in kernel.output, kernel.output
    assert poll.status == 0 and "engine poll" in poll.output, poll.output
    assert len(re.findall(r"lanes measured (?:faster|slower)", poll.output)) == 2, poll.output


def test_ranks_that_differ_on_the_kernel_engine(vm_run):
    """The ranks of a node run the kernel engine all or none: with rank 1 on
    the poll engine, the ranks whose auto chose the kernel's go to a
    user-space engine and every collective is right; the ranks that asked
    for it by name fail at cadrt_init, every one with the same message,
    and nothing hangs."""
    auto, asked = vm_run.cases["differ-auto"], vm_run.cases["differ-asked"]
    assert auto.status == 0, auto.output
    assert "rt_check: ok" in auto.output and "engine kernel" not in auto.output, auto.output
    assert len(re.findall(r"rank [02]: rank 1 runs a user-space engine: (?:thread|signal), not the kernel's",
                          auto.output)) == 2, auto.output
    assert asked.status != 0 and "rt_check: ok" not in asked.output, asked.output
    why = ("CADRT_ENGINE: rank 0 asked for the kernel engine and rank 1 runs a user-space one: the ranks of a node "
           "run the kernel engine all or none")
    assert why in asked.output, asked.output


def test_hand_built_cads_through_the_kernel_engine(vm_run):
    for p in (2, 3, 5):
        c = vm_run.cases[f"cad-{p}"]
        assert c.status == 0 and "rt_cad: ok" in c.output, f"{c.command}\n{c.output}"


@pytest.mark.parametrize("coll", MISMATCH)
def test_mismatched_programs_fail_every_rank_clearly(vm_run, coll):
    c = vm_run.cases[f"mismatch-{coll}"]
    assert c.status == 0, f"{c.command}\n{c.output}"
    assert "rank 1: error as expected" in c.output, c.output
    assert "do not match" in c.output, c.output


@pytest.mark.parametrize("p", [2, 3])
def test_programs_that_disagree_only_on_the_op_fail(vm_run, p):
    """Rank 1 passes MAX where the others pass SUM, and starts late: every
    transfer has the length its partner expects, so only the fingerprint
    cadrt passes to LOAD tells the runs apart.  Every rank fails, none
    completes with a wrong result."""
    c = vm_run.cases[f"mismatch-op-{p}"]
    assert c.status == 0, f"{c.command}\n{c.output}"
    assert c.output.count("error as expected") == p, c.output
    assert "do not match" in c.output, c.output


@pytest.mark.parametrize("case", ["die", "die-test"])
def test_killed_rank_fails_its_peers_at_once(vm_run, case):
    c = vm_run.cases[case]
    assert c.status == 128 + 9, c.output
    assert re.search(r"cadrun: rank 2 \(pid \d+\) was killed by signal 9", c.output), c.output
    ended = re.findall(r"rank (\d): the allreduce ended: (.*)", c.output)
    assert {r for r, _ in ended} <= {"0", "1", "3"}
    # Rank 2 starts the allreduce, then kills itself: if its start was the
    # last posting, the module ran the whole collective inside that call and
    # every rank has its result; otherwise the peers fail with -EPIPE.
    # (kcad_check kill makes the mid-pipeline death deterministic.)
    for _, why in ended:
        assert "went away" in why or why == "no error", c.output
    assert c.seconds < 10, f"the job took {c.seconds:.1f} s"


def test_more_persistent_collectives_than_the_module_holds(vm_run):
    """700 persistent allreduces, started 8 at a time, three times over:
    the module holds at most 512 programs per process, so cadrt frees the
    programs of those started least recently that are not running, and
    loads them again at their next start (the 513th start must not
    fail)."""
    c = vm_run.cases["many-persistent"]
    assert c.status == 0, c.output
    assert "rt_check: many: 700 persistent allreduces right" in c.output, c.output


def test_more_collectives_at_once_than_the_module_runs_is_a_clear_error(vm_run):
    """600 non-blocking allreduces outstanding at once: the module runs at
    most 512 per process; the 513th fails with the module's words and
    cadrt's (no hang, no oops: the counters test checks the module after)."""
    c = vm_run.cases["many-limit"]
    assert c.status != 0, c.output
    assert re.search(r"many: the kernel refused allreduce_\w+ .*: load: this file has 512 programs loaded, the limit "
                     r"\(max_programs\); the kernel engine runs at most that many collectives at once in a process",
                     c.output), c.output


@pytest.mark.parametrize("case", ["leave", "leave-hard", "leave-exec"])
def test_rank_that_exits_without_finalize_fails_its_peers(vm_run, case):
    """Rank 2 exits with 0 (exit or _exit) after starting the allreduce,
    or runs another program before starting it, without cadrt_finalize:
    the module fails its peers' transfers with it when its file closes (or
    the whole collective ran in the last start), and cadrun says it left
    without cadrt_finalize; then the others' allreduce on a communicator
    without it completes, right."""
    c = vm_run.cases[case]
    assert c.status == 0, c.output
    assert c.output.count("the others' allreduce ended: right") == 3, c.output
    said = "ran another program" if case == "leave-exec" else "exited"
    assert re.search(r"cadrun: rank 2 \(pid \d+\) " + said + " without cadrt_finalize", c.output), c.output
    ended = re.findall(r"rank (\d): the allreduce ended: (.*)", c.output)
    assert {r for r, _ in ended} <= {"0", "1", "3"}
    for _, why in ended:
        assert "went away" in why or "left it without cadrt_finalize" in why or why == "no error", c.output
    assert c.seconds < 10, f"the job took {c.seconds:.1f} s"


def test_module_counters_return_to_zero_and_it_unloads(vm_run):
    assert vm_run.exit_code == 0, vm_run.console[-4000:]
    m = re.search(r"@@COUNTERS (\d+) (\d+)", vm_run.output)
    assert m, vm_run.output[-3000:]
    assert m.groups() == ("0", "0"), f"pinned pages, live objects after the jobs: {m.groups()}"
    assert "@@UNLOADED 0" in vm_run.output
    assert not vm_run.kernel_problems(), "\n".join(vm_run.kernel_problems())
    print(f"{len(vm_run.cases)} jobs in the VM in {vm_run.seconds:.0f} s")


@pytest.mark.parametrize("case", ["proof-1", "proof-4", "proof-strict-4"])
def test_only_what_is_proven_runs_through_the_kernel_engine(vm_run, case):
    c = vm_run.cases[case]
    assert c.status == 0 and "rt_proof: ok" in c.output and "WRONG" not in c.output, f"{c.command}\n{c.output}"
