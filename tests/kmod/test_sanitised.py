"""The reports of the kernel's sanitisers and lock checks (KASAN, KFENCE,
lockdep, DEBUG_ATOMIC_SLEEP, debug objects, list debugging) fail the
kernel tests: vm.py's kernel_problems() sees a line of each."""

import pytest

from vm import Result

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

