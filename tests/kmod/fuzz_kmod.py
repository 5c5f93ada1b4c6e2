#!/usr/bin/python3
"""A long run of cad.ko's stateful fuzzer (kcad_check fuzz, see
tests/kmod/kcad_check.c and test_kcad.py): `make fuzz-kmod`.

    fuzz_kmod.py BUILD_DIR SECONDS [SEED]

One boot of the tests' kernel (KERNEL_DEBUG) with the UBSAN build of the
module, SECONDS split evenly between the settings of the module parameter
defer (DEFER_MODES), seeds SEED, SEED+1, ... (default: from the clock,
printed, so a failure can be replayed).  It fails (exit 1) if a case
reports a problem, if the module's counters of pinned pages and live
objects are not back to 0, if it does not unload, or if the kernel log
has a warning, a sanitizer's report, a bug or an oops; it prints what each
case did."""

import sys
import time
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vm import COUNT_AND_UNLOAD, DEFER_MODES, run_cases, with_defer  # noqa: E402
from test_kcad import fuzz_command, kcad_vm  # noqa: E402


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    build = Path(argv[1])
    secs = max(1, int(argv[2]) // len(DEFER_MODES))
    seed0 = int(argv[3]) if len(argv) == 4 else int(time.time()) % 100000
    vm = kcad_vm(build, Path(tempfile.mkdtemp(prefix="cad-fuzz-kmod-")))
    cases = {f"fuzz-defer{mode}": with_defer(defer, fuzz_command(secs, seed0 + i), split)
             for i, (mode, (defer, split)) in enumerate(DEFER_MODES.items())}
    print(f"fuzz-kmod: {secs} s under each of defer {', '.join(DEFER_MODES)}, seeds from {seed0}", flush=True)
    r = run_cases(vm, cases, before="insmod /cad.ko", after=COUNT_AND_UNLOAD,
                  timeout=secs * len(cases) * 2 + 600)
    bad = []
    for name, c in r.cases.items():
        stats = [line for line in c.output.splitlines() if line.startswith("KCAD fuzz:")]
        print(f"{name}: " + (stats[0] if stats else "(no summary)"))
        fails = [line for line in c.output.splitlines() if "KCAD FAIL" in line]
        if c.status != 0 or fails or "KCAD SUMMARY" not in c.output:
            bad.append(f"{name} (exit {c.status}): " + ("; ".join(fails) or c.output[-2000:]))
    if "@@COUNTERS 0 0" not in r.output:
        bad.append("the module's counters are not back to 0: " + r.output[-500:])
    if "@@UNLOADED 0" not in r.output:
        bad.append("the module did not unload")
    bad += [f"kernel log: {line}" for line in r.kernel_problems()]
    if r.exit_code != 0:
        bad.append(f"the VM run did not finish cleanly:\n{r.console[-3000:]}")
    for line in bad:
        print("FAIL " + line)
    print(f"fuzz-kmod: {'FAILED' if bad else 'clean'} in {r.seconds:.0f} s (seeds from {seed0})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
