"""The sanitised kernel's checks (make test-kmod-sanitised) are there and
their reports fail the tests: cad_sancheck.ko (tests/kmod/sancheck) makes
one bug of each kind, and vm.py's kernel_problems() must see each report.
Under the installed kernel, only the reports' formats are checked."""

import re

import pytest

from vm import KERNEL_DEBUG, TEST_KERNEL, VM, Result, built_module, run_cases

# A line of each report, as the kernel prints it (lib/list_debug.c,
# kernel/locking/lockdep.c, mm/kasan/report.c, mm/kfence/report.c,
# kernel/sched/core.c, lib/debugobjects.c).
REPORTS = [
    "[   12.345678] BUG: KASAN: slab-out-of-bounds in sc_oob+0x5a/0x80 [cad_sancheck]",
    "[   12.345678] BUG: KASAN: use-after-free in sc_uaf+0x61/0x90 [cad_sancheck]",
    "[   12.345678] BUG: KFENCE: out-of-bounds read in cad_pin+0x1b/0x40 [cad]",
    "[   12.345678] BUG: sleeping function called from invalid context at kernel/time/timer.c:2041",
    "[   12.345678] WARNING: possible circular locking dependency detected",
    "[   12.345678] WARNING: inconsistent lock state",
    "[   12.345678] WARNING: possible recursive locking detected",
    "[   12.345678] BUG: Invalid wait context",
    "[   12.345678] WARNING: suspicious RCU usage",
    "[   12.345678] ODEBUG: free active (active state 0) object type: work_struct hint: cad_work+0x0/0x10",
    "[   12.345678] list_add corruption. prev->next should be next (ffff888003e0a000), but was 0000000000000000.",
    "[   12.345678] kernel BUG at lib/list_debug.c:30!",
]


@pytest.mark.parametrize("line", REPORTS)
def test_kernel_problems_sees_each_report(line):
    r = Result(console="", output="", exit_code=0, dmesg=f"[    1.0] cad: loaded\n{line}\n", seconds=0)
    assert r.kernel_problems() == [line]


def test_kernel_problems_passes_a_clean_log():
    log = "[    0.000000] Linux version 6.1.0\n[    1.0] cad: loaded\n[    2.0] kfence: initialized\n"
    assert Result(console="", output="", exit_code=0, dmesg=log, seconds=0).kernel_problems() == []


# Each bug of cad_sancheck.ko, in this order in one boot, and the line its
# report must have.  Lockdep turns itself off after its first report, and
# after a KASAN report (the kernel is tainted, its locks unreliable): its
# bug comes first.  The kernel prints every KASAN report, not only the
# first, under kasan_multi_shot (vm.py).
BUGS = {
    "none": None,
    "lockorder": "WARNING: possible circular locking dependency detected",
    "sleep": "BUG: sleeping function called from invalid context",
    "oob": "BUG: KASAN: slab-out-of-bounds in ",
    "uaf": "BUG: KASAN: use-after-free in ",
}


@pytest.mark.skipif(not TEST_KERNEL, reason="the sanitised kernel's checks: make test-kmod-sanitised")
def test_sanitised_kernel_reports_each_bug(build_dir):
    vm = VM(append=KERNEL_DEBUG)
    vm.add_file(built_module(build_dir, "kmod/cad_sancheck.ko"), "/cad_sancheck.ko")
    # Each case's part of the kernel log is in its output (dmesg -c).
    cases = {bug: f"dmesg -c > /dev/null; insmod /cad_sancheck.ko bug={bug} || true; dmesg -c"
             for bug in BUGS}
    run = run_cases(vm, cases, timeout=300)
    assert run.exit_code == 0, run.console[-3000:]
    for bug, report in BUGS.items():
        log = run.cases[bug].output
        assert "cad_sancheck: done" in log, f"{bug}:\n{log}"
        problems = Result(console="", output="", exit_code=0, dmesg=log, seconds=0).kernel_problems()
        if report is None:
            assert not problems, f"{bug}:\n{log}"
        else:
            assert any(re.search(re.escape(report), line) for line in problems), f"{bug}:\n{log}"
