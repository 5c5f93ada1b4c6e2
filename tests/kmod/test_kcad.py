"""cad.ko through its own ABI (tests/kmod/kcad_check.c), in one boot:
the table of rejected programs and ioctls, pipelines whose data moves
while the receivers make no system call, a rank killed mid-pipeline,
cancel (and 1000 collectives cancelled before a peer starts them; a
collective cancelled after a rank finished it and restarted its handle),
a stateful fuzzer (random ioctls, images, buffers, forks and kills around
collectives whose data are checked; under every defer setting), a
transfer larger than a pass, 10 000 load/start/wait/free cycles; then
the module's counters of pinned pages and live objects are zero, it
unloads, and the kernel log has no warning, bug or oops."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from vm import COUNT_AND_UNLOAD, DEFER_MODES, KERNEL_DEBUG, cad_vm, run_cases, with_defer

FUZZ_SEED = int(os.environ.get("CAD_FUZZ_SEED", "2718281828"))


def fuzz_command(secs, seed):
    """kcad_check fuzz on every file kcad_vm() gives it."""
    return f"kcad_check fuzz {secs} {seed} /fz/*.img /fz/alg/*/*.cadbc"


CASES = {
    "reject": "kcad_check reject",
    "pipeline-2": "kcad_check pipeline 2 65536 4",
    "pipeline-3-empty": "kcad_check pipeline 3 0 1",
    "pipeline-4": "kcad_check pipeline 4 1000000 16",
    "pipeline-8": "kcad_check pipeline 8 100000 7",
    "kill-4": "kcad_check kill 4 4000000 32",
    "kill-8": "kcad_check kill 8 1000000 8",
    # Every rank killed at once with copies queued or in flight, 20 times:
    # the releases of one group run side by side (the group outlives the
    # member that leaves last until every member's release has ended).
    "exit-2": "kcad_check exit 2 4000000 1 20",
    "exit-4": "kcad_check exit 4 4000000 4 10",
    "cancel": "kcad_check cancel",
    # Random ioctls, mutated images, random buffers, forks and kills from
    # three processes around a schedule of collectives whose data are
    # checked; the same seed every run, so that a failure replays
    # (CAD_FUZZ_SEED sets another; make fuzz-kmod draws new ones).
    # The operators of algorithms/ops/ too, as one-rank programs (/fz/*.img,
    # made by the fixture), intact or with random bytes changed; and the
    # standard library's algorithms (FUZZ_ALGS, /fz/alg/), whose results
    # must be the loopback engine's.
    "fuzz": fuzz_command(20, FUZZ_SEED),
    "cycles": "kcad_check cycles 10000",
    # Buffers in shared file mappings, shared memory; the pinned limit per user.
    "pins": "kcad_check pins",
    # Every reserved or unused field of the image and of the ioctls' structs.
    "reserved": "kcad_check reserved",
    # Pins charged to RLIMIT_MEMLOCK (64 KiB) of uid 1000; root is exempt.
    "memlock": "kcad_check memlock",
    # The same limit with CAD_LOAD_BOUNCE: buffers copied through kernel
    # memory, a collective right, -EFAULT for unmapped buffers, the
    # kernel-memory limit, nothing left.
    "bounce": "kcad_check bounce",
    # A member whose START faults into a FUSE server that never answers
    # holds up no other member's start or death (the distribution's
    # fuse.ko, added by kcad_vm()).
    "stall": "insmod /fuse.ko 2>/dev/null; kcad_check stall",
    # START, CANCEL and FREE only from the process that loaded the program.
    "owner": "kcad_check owner",
    # Joining needs the creator's credentials and user namespace.
    "access": "kcad_check access",
    # Programs, kernel memory and groups per user: uid 1000 refused at
    # each limit, uid 1001 unaffected meanwhile, all given back at exit.
    "userlimits": "kcad_check userlimits",
    # A user-defined reduction of 2^27 element-instructions under a bound
    # of 2^22 a pass (BUDGET_VM_INSNS, cad_run.h): 32 passes, right result.
    "vmbudget": "kcad_check vmbudget 262144 4194304",
    # A program that would copy for minutes holds up nobody for more than
    # a pass, and its process dies within one.
    "busy-read": "kcad_check busy read",
    "busy-pause": "kcad_check busy pause",
    # Parameters out of their range are refused and leave the value as it was.
    "param-bounds": "P=/sys/module/cad/parameters; ! echo 3 > $P/defer && ! echo 0 > $P/max_programs && "
                    "! echo 513 > $P/max_programs && ! echo 0 > $P/max_scratch_mb && "
                    "! echo 2048 > $P/max_scratch_mb && test $(cat $P/max_scratch_mb) = 1024 && "
                    "echo 1 > $P/defer && test $(cat $P/defer) = 1 && "
                    "echo 2 > $P/defer && test $(cat $P/defer) = 2 && test $(cat $P/max_programs) = 512 && "
                    # every writable parameter has bounds
                    "m=$(cat $P/max_pinned_mb) && ! echo 0 > $P/max_pinned_mb && "
                    "! echo 1073741825 > $P/max_pinned_mb && test $(cat $P/max_pinned_mb) = $m && "
                    "t=$(cat $P/max_pinned_total_mb) && test $t -ge 1024 && ! echo 0 > $P/max_pinned_total_mb && "
                    "! echo 1073741825 > $P/max_pinned_total_mb && test $(cat $P/max_pinned_total_mb) = $t && "
                    "! echo 0 > $P/max_image_kb && ! echo 262145 > $P/max_image_kb && "
                    "test $(cat $P/max_image_kb) = 65536 && "
                    "! echo 1073741825 > $P/defer_min && test $(cat $P/defer_min) = 32768 && "
                    "! echo 1073741825 > $P/split_min && test $(cat $P/split_min) = 16384 && "
                    "! echo 0 > $P/max_ranks && ! echo 65537 > $P/max_ranks && test $(cat $P/max_ranks) = 4096 && "
                    "echo 65536 > $P/max_ranks && echo 4096 > $P/max_ranks && "
                    "! echo 0 > $P/max_user_programs && ! echo 1048577 > $P/max_user_programs && "
                    "test $(cat $P/max_user_programs) = 16384 && "
                    "k=$(cat $P/max_user_kmem_mb) && test $k -ge 1024 && ! echo 0 > $P/max_user_kmem_mb && "
                    "! echo 1073741825 > $P/max_user_kmem_mb && test $(cat $P/max_user_kmem_mb) = $k && "
                    "! echo 0 > $P/max_user_groups && ! echo 65537 > $P/max_user_groups && "
                    "test $(cat $P/max_user_groups) = 1024 && "
                    "! echo 1 > $P/programs && ! echo 1 > $P/kmem_bytes && ! echo 1 > $P/users && "
                    "for f in $P/*; do ! echo 4294967295 2>/dev/null > $f || exit 1; done && "
                    "echo 'KCAD PASS param-bounds' && echo 'KCAD SUMMARY passed=1 failed=0'",
}
# The same with each setting of the module parameter defer (the default is
# 2): copies by the caller, by a member asleep in read(), on the CPU of
# one side or split between both -- every transfer, whatever its size.
# "split": see DEFER_MODES.
for _mode, (_defer, _split) in DEFER_MODES.items():
    for _case in ("pipeline-4", "pipeline-8", "kill-4", "kill-8", "exit-4", "cancel", "bounce"):
        CASES[f"{_case}-defer{_mode}"] = with_defer(_defer, CASES[_case], _split)
    CASES[f"cycles-defer{_mode}"] = with_defer(_defer, "kcad_check cycles 2000", _split)
    CASES[f"fuzz-defer{_mode}"] = with_defer(
        _defer, fuzz_command(6, FUZZ_SEED + len(CASES)), _split)
    # One transfer of 136 MiB, more than a pass copies: cut, and finished
    # by the receiver in read() or spinning (the module's work item), by
    # the caller (0), a reader (1) or the side's work item (2, split);
    # "bystander": a third member asleep in read() (with defer=1 the one
    # woken to copy) is killed in the middle of it.
    for _how in ("read", "spin", "bystander"):
        CASES[f"wide-{_how}-defer{_mode}"] = with_defer(_defer, f"kcad_check wide 142606336 {_how}", _split)
    # A 64 MiB transfer cancelled or freed by its receiver, with defer=1
    # while the sender copies it: the buffer must be still once told.
    for _how in ("cancel", "free"):
        CASES[f"inflight-{_how}-defer{_mode}"] = with_defer(_defer, f"kcad_check inflight {_how} 67108864", _split)


# Instances of the standard library the fuzzer runs (cadc compile ARGS):
# every algorithm, 2, 3 and 4 ranks, 0 B to 1.6 MB, segments, a topology,
# MPI_IN_PLACE, integer and floating reductions, non-commutative ones and
# user-defined operators (the kernel's VM).  Floating inputs are small
# integers: sums exact in any order.
FUZZ_ALGS = [
    "bcast_chain_pipeline --ranks 3 --size 100000 --root 1 --param seg=8192",
    "bcast_binomial --ranks 3 --size 4096 --root 2",
    "bcast_scatter_allgather --ranks 3 --size 300001",
    "bcast_linear --ranks 2 --size 65536 --root 1",
    "bcast_hier_pipeline --ranks 3 --size 50000 --root 1 --param seg=4096 "
    "--topology algorithms/topologies/two-node-cyclic.json",
    "reduce_binomial --ranks 3 --size 3000 --root 2 --op sat_add_i16 --ops algorithms/ops/sat_add_i16.c",
    "reduce_binomial --ranks 2 --size 10 --root 1 --dtype f32 --op max --noncommutative",
    "allreduce_recursive_doubling --ranks 3 --size 1000 --dtype f64 --op sum",
    "allreduce_recursive_doubling --ranks 3 --size 999 --dtype i64 --op sum --noncommutative",
    "allreduce_ring --ranks 3 --size 70000 --dtype f64 --op sum --inplace",
    "allreduce_ring --ranks 2 --size 200000 --dtype u64 --op sum",
    "allreduce_rabenseifner --ranks 3 --size 5000 --dtype i32 --op max",
    "allreduce_linear --ranks 3 --size 6000 --dtype f64 --op sum --inplace",
    "allreduce_linear --ranks 2 --size 3000 --dtype i32 --op sum --noncommutative",
    "gather_linear --ranks 3 --size 20000",
    "gather_binomial --ranks 2 --size 777 --root 1",
    "scatter_linear --ranks 3 --size 5000 --root 2",
    "scatter_binomial --ranks 3 --size 3 --root 1",
    "allgather_ring --ranks 3 --size 10000",
    "allgather_recursive_doubling --ranks 2 --size 64",
    "allgather_gather_bcast --ranks 3 --size 1000",
    "alltoall_rotated --ranks 3 --size 50000",
    "alltoall_bruck --ranks 3 --size 300",
    "reduce_scatter_block_ring --ranks 3 --size 4000 --dtype f32 --op sum",
    "reduce_scatter_block_linear --ranks 3 --size 2000 --op affine --ops algorithms/ops/affine.c",
    "barrier_dissemination --ranks 3",
    "bcast_binomial --ranks 3 --size 0",
    # Four ranks: trees of two levels, recursive doubling and halving on
    # a power of two, and the floating user-defined operators (finite
    # inputs: small integers in every 8-byte word) in multi-rank programs.
    "bcast_binomial --ranks 4 --size 10000 --root 3",
    "bcast_chain_pipeline --ranks 4 --size 200000 --root 2 --param seg=16384",
    "reduce_binomial --ranks 4 --size 1600 --root 3 --op complex_mul --ops algorithms/ops/complex_mul.c",
    "allreduce_ring --ranks 4 --size 4000 --op dsum --ops algorithms/ops/dsum.c",
    "allreduce_recursive_doubling --ranks 4 --size 50000 --op vec3_sum --ops algorithms/ops/vec3_sum.c",
    "allreduce_recursive_doubling --ranks 4 --size 4096 --op affine --ops algorithms/ops/affine.c",
    "allreduce_rabenseifner --ranks 4 --size 16000 --op maxloc --ops algorithms/ops/maxloc.c",
    "reduce_scatter_block_ring --ranks 4 --size 4096 --op dsum --ops algorithms/ops/dsum.c",
    "reduce_scatter_block_linear --ranks 4 --size 3000 --dtype i64 --op sum --noncommutative --inplace",
    "gather_binomial --ranks 4 --size 3000 --root 2",
    "scatter_binomial --ranks 4 --size 1000",
    "allgather_recursive_doubling --ranks 4 --size 4000",
    "alltoall_bruck --ranks 4 --size 1000",
    "barrier_dissemination --ranks 4",
]


def fuzz_files(build_dir, work):
    """(host file, path in the VM) of what the fuzz cases load: the
    operators of algorithms/ops/ as one-rank programs (/fz/*.img) and
    FUZZ_ALGS' programs (/fz/alg/I/NAME.RANK.cadbc)."""
    root = Path(__file__).resolve().parents[2]
    ops = root / "algorithms" / "ops"
    files = []
    for src in sorted(ops.glob("*.c")):
        cadop = work / f"{src.stem}.cadop"
        subprocess.run([str(build_dir / "bin" / "cadc"), "op", "compile", str(src), "-o", str(cadop), "-I", str(ops)],
                       check=True)
        for op in json.loads(cadop.read_text())["ops"]:
            image = work / f"{op['name']}.img"
            subprocess.run([str(build_dir / "bin" / "op_tool"), "image", str(cadop), op["name"], "1000", str(image)],
                           check=True)
            files.append((image, f"/fz/{op['name']}.img"))
    for i, spec in enumerate(FUZZ_ALGS):
        name, *args = spec.split()
        out = work / "alg" / str(i)
        subprocess.run([str(build_dir / "bin" / "cadc"), "compile", str(root / "algorithms" / f"{name}.cad"),
                        "-o", str(out), *args], check=True, cwd=root, stdout=subprocess.DEVNULL)
        progs = sorted(out.glob("*.cadbc"))
        assert progs, spec
        files += [(p, f"/fz/alg/{i}/{p.name}") for p in progs]
    return files


def kcad_vm(build_dir, work):
    """The VM of these tests and of `make fuzz-kmod` (fuzz_kmod.py): the
    module built with UBSAN (kmod/cad/cad_ubsan.c), in a kernel booted with
    SLUB's and the page allocator's checks (KERNEL_DEBUG), with kcad_check,
    the fuzzer's files (made in work) and the distribution's fuse.ko."""
    vm = cad_vm(build_dir, module="kmod/ubsan/cad.ko", append=KERNEL_DEBUG)
    vm.add_file(build_dir / "bin" / "kcad_check", "/bin/kcad_check")
    fuse = Path(f"/lib/modules/{vm.version}/kernel/fs/fuse/fuse.ko")
    if fuse.exists():
        vm.add_file(fuse, "/fuse.ko")
    for host, path in fuzz_files(build_dir, work):
        vm.add_file(host, path)
    return vm


@pytest.fixture(scope="module")
def vm_run(build_dir, tmp_path_factory):
    vm = kcad_vm(build_dir, tmp_path_factory.mktemp("fz"))
    return run_cases(vm, CASES, before="insmod /cad.ko", after=COUNT_AND_UNLOAD, timeout=600)


@pytest.mark.parametrize("case", CASES)
def test_case(vm_run, case):
    c = vm_run.cases[case]
    failures = [line for line in c.output.splitlines() if "KCAD FAIL" in line]
    assert c.status == 0 and not failures, f"{c.command}\n{c.output}"
    m = re.search(r"KCAD SUMMARY passed=(\d+) failed=0", c.output)
    assert m and int(m.group(1)) >= 1, c.output


def counter(case, name="DEFERRED"):
    m = re.search(rf"@@{name} (\d+)", case.output)
    assert m, case.output
    return int(m.group(1))


@pytest.mark.parametrize("mode", DEFER_MODES)
def test_deferred_modes_did_defer(vm_run, mode):
    cases = {name: c for name, c in vm_run.cases.items() if name.endswith(f"-defer{mode}")}
    counts = {name: counter(c) for name, c in cases.items()}
    splits = {name: counter(c, "SPLIT") for name, c in cases.items()}
    print(counts, splits)
    if mode == "0":
        assert sum(counts.values()) == 0, counts
        return
    assert sum(counts.values()) > 0, counts
    if mode in ("2", "split"):  # every receiver spins on its own CPU while rank 0 posts
        assert counts[f"pipeline-4-defer{mode}"] > 0, counts
    if mode == "split":
        assert splits["pipeline-4-defersplit"] > 0 and splits["pipeline-8-defersplit"] > 0, splits
    elif mode == "1":
        assert sum(splits.values()) == 0, splits


def test_a_copy_in_flight_delays_the_end(vm_run):
    """With defer=1 the sender, asleep in read(), is woken and copies the
    64 MiB while the receiver cancels: the receiver is told -ECANCELED only
    once the copy is done (all of it arrived), and free waits for it."""
    assert "cancelled after" in vm_run.cases["inflight-cancel-defer1"].output
    for how in ("cancel", "free"):
        assert "data copied" in vm_run.cases[f"inflight-{how}-defer1"].output, vm_run.cases[
            f"inflight-{how}-defer1"].output


def test_the_rejection_table_is_complete(vm_run):
    passed = re.findall(r"KCAD PASS (\S+)", vm_run.cases["reject"].output)
    assert len(passed) >= 50, passed
    for name in ("join-foreign-user", "address-not-mapped", "overlapping-buffers", "unaligned-reduce-buffer",
                 "node-on-unregistered-buffer", "pinned-memory-limit", "too-many-programs", "mmap-writable",
                 "load-first-version-size", "load-short-size"):
        assert name in passed


def test_killed_rank_fails_every_peer_within_a_second(vm_run):
    for case, n in [(f"kill-{p}{d}", p - 1) for p in (4, 8) for d in ("", *(f"-defer{m}" for m in DEFER_MODES))]:
        out = vm_run.cases[case].output
        killed = float(re.search(r"KCAD killing rank 1 at (\S+)", out).group(1))
        ended = re.findall(r"KCAD rank (\d+) ended with (-?\d+) at (\S+)", out)
        assert len(ended) == n, out
        for rank, err, when in ended:
            assert int(err) == -32, out  # -EPIPE
            assert float(when) - killed < 1.0, out


def test_counters_zero_module_unloads_kernel_log_clean(vm_run):
    assert vm_run.exit_code == 0, vm_run.console[-4000:]
    m = re.search(r"@@COUNTERS (\d+) (\d+)", vm_run.output)
    assert m and m.groups() == ("0", "0"), vm_run.output[-2000:]
    assert "@@UNLOADED 0" in vm_run.output
    assert not vm_run.kernel_problems(), "\n".join(vm_run.kernel_problems())


def test_cancel_checks_every_tombstone_case(vm_run):
    """Each cancel case ran its late starts and the cases of a rank that
    has passed the cancelled collective: it restarted its handle once, or
    three times, or skipped the collective (a tombstone that waits for a
    rank that has moved on must not stay until the rank leaves the
    group)."""
    for name, c in vm_run.cases.items():
        if name == "cancel" or name.startswith("cancel-defer"):
            for check in ("cancel-late-starts-end-at-once", "cancel-tombstones-go-once-seen",
                          *(f"cancel-{k}{g}" for k in ("restarted", "passed", "skipped")
                            for g in ("", "-tombstone-goes"))):
                assert re.search(rf"^KCAD PASS {check}\s*$", c.output, re.M), (name, c.output)


def test_the_fuzzer_ran_collectives(vm_run):
    """The fuzzer's own checks passed (each case's) and it did what it is
    there for: many random operations, collectives checked (the standard
    library's algorithms among them), operator programs run.  (On a slow
    or busy machine kcad_check runs on past its seconds, up to three
    times them, until it has done this much: fz_enough.)"""
    for name, c in vm_run.cases.items():
        if not name.startswith("fuzz"):
            continue
        m = re.search(r"KCAD fuzz: seed \d+, (\d+) rounds, (\d+) operations, \d+ collectives started \(\d+ loads\), "
                      r"(\d+) verified.* (\d+) operator programs run \((\d+) images\); "
                      r"(\d+) algorithm runs as the loopback engine's \((\d+) instances, (\d+) restarts\)", c.output)
        assert m, (name, c.output)
        rounds, ops, verified, op_runs, images, alg_runs, algs, restarts = map(int, m.groups())
        assert rounds >= 2 and ops >= 1000 and verified >= 50, (name, c.output)
        assert images >= 6 and op_runs >= 20, (name, c.output)
        assert algs == len(FUZZ_ALGS) and alg_runs >= 20 and restarts >= 20, (name, c.output)


def test_every_reserved_field_is_checked(vm_run):
    """One row per reserved or unused field: the image's (header, section,
    buffer, node, line, operator, VM instruction) and the ioctls' (flags,
    cad_ioc_handle.reserved for TEST, CANCEL and FREE, bytes past each
    struct); a refused FREE leaves the handle loaded."""
    passed = set(re.findall(r"KCAD PASS (\S+)", vm_run.cases["reserved"].output))
    rows = ["image-header.flags", "image-section.reserved", "image-buffer.reserved", "image-node.reserved",
            "image-node.flags-unused", "image-node.peer-unused", "image-line.reserved", "image-user_op.flags",
            "image-vm_insn.b-unused", "image-vm_insn.imm-unused", "ioc_handle.reserved-test",
            "ioc_handle.reserved-cancel", "ioc_handle.reserved-free", "ioc_join.flags", "ioc_load.flags",
            "refused-free-kept-the-handle", "refused-tail-kept-the-handle", "baseline-image-runs",
            *(f"tail-{c}" for c in ("version", "join", "load", "start", "test", "cancel", "free"))]
    assert {f"reserved-{r}" for r in rows} <= passed, sorted({f"reserved-{r}" for r in rows} - passed)


def test_memlock_refusal_names_the_limit_in_the_kernel_log(vm_run):
    """A pin over RLIMIT_MEMLOCK is refused with -ENOMEM (the memlock
    case), and the kernel log says which limit and how to raise it."""
    assert re.search(r"KCAD PASS memlock-refused-and-given-back", vm_run.cases["memlock"].output)
    assert re.search(r"cad: kcad_check\[\d+\] uid 1000: cannot pin \d+ KiB more: it exceeds the 64 KiB "
                     r"RLIMIT_MEMLOCK.*ulimit -l", vm_run.dmesg), vm_run.dmesg[-3000:]


def test_bounce_copies_through_kernel_memory_when_memlock_refuses(vm_run):
    """bounce: at RLIMIT_MEMLOCK 64 KiB a load without CAD_LOAD_BOUNCE is
    refused, one with it copies the buffers through kernel memory and the
    collective (send-only, in-place and receive-only buffers, 8 bytes to
    1 MiB, not page aligned) is right twice, waited for by read() and by
    TEST; unmapped buffers fail with -EFAULT; max_user_kmem_mb refuses;
    the counters are zero after; the log and kernel log say so."""
    out = vm_run.cases["bounce"].output
    for check in ("collective-right", "counted", "faults-and-kmem", "nothing-left"):
        assert re.search(rf"^KCAD PASS bounce-{check}\s*$", out, re.M), (check, out)
    assert re.search(r"RLIMIT_MEMLOCK of the process; copying through kernel memory instead", out), out
    assert re.search(r"cad: kcad_check\[\d+\] uid 1000: buffer \d+: RLIMIT_MEMLOCK refused \d+ KiB; "
                     r"copying through kernel memory instead", vm_run.dmesg), vm_run.dmesg[-3000:]


def test_each_user_limit_refuses_with_its_errno_and_gives_back(vm_run):
    """userlimits: uid 1000 refused its 9th program with EMFILE
    (max_user_programs 8), 2 MiB of scratch with ENOMEM (max_user_kmem_mb
    1), a third group with ENOSPC (max_user_groups 2), while uid 1001
    loaded its 8; the counters (programs, kmem_bytes, groups, users) are
    zero once they exited; the kernel log names each parameter."""
    out = vm_run.cases["userlimits"].output
    for check in ("programs-refused-at-the-limit", "counted-for-the-user", "another-uid-unaffected",
                  "all-given-back", "kmem-refused", "groups-refused", "zero-at-the-end"):
        assert re.search(rf"^KCAD PASS userlimits-{check}\s*$", out, re.M), (check, out)
    for param in ("max_user_programs", "max_user_kmem_mb", "max_user_groups"):
        assert re.search(rf"cad: kcad_check\[\d+\] uid 1000: cannot .* over the limit of \d+ \({param}, a parameter "
                         rf"of cad.ko: raise it with echo N > /sys/module/cad/parameters/{param}\)", vm_run.dmesg), \
            (param, vm_run.dmesg[-3000:])


def test_a_long_user_defined_reduction_takes_several_passes(vm_run):
    """vmbudget: 32768 elements of a 4096-instruction operator, 2^27
    element-instructions, at most 2^22 a pass: 32 passes (31 cut inside
    the reduction, the module's vm_cut), and the sums right."""
    out = vm_run.cases["vmbudget"].output
    m = re.search(r"KCAD vmbudget: 32768 elements x 4096 instructions in (\d+) passes \((\d+) cut\)", out)
    assert m and m.groups() == ("32", "31"), out
    assert re.search(r"^KCAD PASS vmbudget-result-right\s*$", out, re.M), out
